"""One validated settings object, built from ``STRATA_*`` variables on first use and cached.

Nothing reads the environment at import time: tests and warm Lambda containers both rely on
``get_settings.cache_clear()`` picking up a changed environment.

A plain pydantic model reads its own environment (:meth:`Settings._environment`) rather than
pydantic-settings: every field here is a scalar that pydantic's lax mode parses from a string,
and pydantic-settings (with python-dotenv) cost every Lambda function 15-20 ms of cold start
for sources strata does not use (dotenv files, JSON-decoded complex values, secrets dirs).
"""

from __future__ import annotations

import os
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationInfo,
    field_validator,
    model_validator,
)

ENV_PREFIX = "STRATA_"


class Settings(BaseModel):
    model_config = ConfigDict(extra="ignore", validate_default=True)

    runtime: Literal["local", "aws"] = "local"
    home: Path = Path(".strata")
    host: str = "127.0.0.1"
    port: int = 8080

    # Local and any self-hosted PostgreSQL: a full URL. Unset locally means the embedded server.
    database_url: str | None = None
    # AWS: the RDS Proxy endpoint plus the Aurora-managed secret (read through Powertools).
    db_host: str | None = None
    db_port: int = 5432
    db_name: str = "strata"
    db_secret_arn: str | None = None
    # AWS: sign in to RDS Proxy with a fresh IAM token per new connection (rds-db:connect)
    # instead of the secret's password; TLS is then required. The user is db_user, or the
    # secret's username when db_user is unset.
    db_iam_auth: bool = False
    db_user: str | None = None
    # Reads that may run on a replica (search; see strata.db.routing): a full URL, or on AWS
    # the RDS Proxy's read-only endpoint (same credentials as db_host). Unset: every read on
    # the writer. A principal's reads stay on the writer this long after its last write.
    read_database_url: str | None = None
    db_read_host: str | None = None
    read_after_write_s: float = Field(default=5.0, ge=0, le=3600)
    pool_min: int = 0
    pool_max: int = 8
    # How long a checkout waits for a pooled connection. Requests (the API, MCP) wait
    # briefly and answer 503 unavailable with Retry-After when the database is down or
    # saturated; jobs (CLI commands, maintenance, migrations, the state machine's steps)
    # wait longer.
    pool_timeout_s: float = Field(default=2.0, gt=0, le=60)
    pool_job_timeout_s: float = Field(default=30.0, gt=0, le=900)
    # Deadlines for database work (strata.db.deadline): a request's database calls, all
    # together, may take this long, or it answers 503 unavailable with Retry-After and its
    # connection is cut and discarded -- whatever the database does, frozen included.
    # Readiness has its own, shorter budget; a job's calls (CLI, maintenance, the pipeline's
    # steps) each get the job deadline. Connecting gives up after db_connect_timeout_s
    # (libpq's floor is 2 s).
    db_request_deadline_s: float = Field(default=2.5, gt=0, le=300)
    # A batch write's budget grows by this much per item (500 items: 25 s more).
    db_request_deadline_per_item_s: float = Field(default=0.05, ge=0, le=10)
    db_readiness_deadline_s: float = Field(default=1.5, gt=0, le=60)
    db_job_deadline_s: float = Field(default=900.0, gt=0, le=86_400)
    db_connect_timeout_s: int = Field(default=2, ge=2, le=60)

    # The embedder (strata.providers.embedders): "hash" (lexical, needs nothing), "openai"
    # (any OpenAI-compatible /embeddings endpoint), "bedrock" (Amazon Titan Text Embeddings
    # v2), "local" (all-MiniLM-L6-v2 on CPU, extra `strata[local]`). None (unset): the
    # store's own, recorded in the database (strata.providers.store_embedder); a new local store gets
    # "local" when it is installed, else "hash".
    embedder: Literal["hash", "openai", "bedrock", "local"] | None = None
    # The vector columns' dimension, and the dimension asked of the model. Changing it for an
    # existing database takes `strata reindex`.
    embedding_dim: int = Field(default=384, ge=16, le=4000)
    # None = the provider's default (openai: text-embedding-3-small, bedrock:
    # amazon.titan-embed-text-v2:0, local: all-MiniLM-L6-v2).
    embedding_model: str | None = None
    # Texts per provider call (openai: one request per batch; local: the encode batch).
    embedding_batch_size: int = Field(default=128, ge=1, le=2048)
    embedding_timeout_s: float = Field(default=30.0, gt=0)
    embedding_max_retries: int = Field(default=4, ge=0, le=10)
    # openai: the endpoint (None = the client's default, api.openai.com) and its key.
    embedding_base_url: str | None = None
    embedding_api_key: str | None = None
    embedding_api_key_secret_arn: str | None = None
    # openai: send `dimensions` (text-embedding-3 and other Matryoshka models). Turn off for
    # models that refuse it; the answer's length is checked against embedding_dim either way.
    embedding_send_dimensions: bool = True
    # bedrock: the region (None = the AWS default chain) and concurrent InvokeModel calls
    # (Titan embeds one text per call).
    bedrock_region: str | None = None
    bedrock_concurrency: int = Field(default=4, ge=1, le=32)

    # Model-backed extraction, conflict judging and reflection. "openai": any
    # OpenAI-compatible endpoint (llm_base_url + llm_model, a key if it needs one); "bedrock":
    # Bedrock Converse in bedrock_region (llm_model is the model id or inference profile, no
    # key: the function's role); "none": the rule-based extractor and judge. Unset: "openai"
    # when a base URL and a model are set, else "none" (how deployments chose before the
    # setting existed). Declared after what it needs, so its validator can check them.
    llm_base_url: str | None = None
    llm_model: str | None = None
    llm_api_key: str | None = None
    llm_api_key_secret_arn: str | None = None
    llm_provider: Literal["none", "openai", "bedrock"] | None = None
    # bedrock: how the answer tool is forced. "any" (the default) forces the one tool on
    # Claude 3+, Mistral Large and Nova; "tool" names it (Claude 3+ and Nova); "auto" is for
    # models that refuse both (Meta Llama, Cohere): the tool is offered and a JSON text
    # answer is read as well.
    llm_tool_choice: Literal["any", "tool", "auto"] = "any"
    llm_timeout_s: float = Field(default=30.0, gt=0)
    llm_max_retries: int = Field(default=2, ge=0, le=10)
    # When the model fails or answers garbage: fall back to the rule extractor ("rule"), or
    # mark the receipt llm_failed and write nothing ("fail").
    llm_fallback: Literal["rule", "fail"] = "rule"

    # Similarity bands for write resolution. None = the calibrated default for the embedder
    # (see strata.write.gate.BANDS and eval/calibrate_bands.py).
    reinforce_threshold: float | None = Field(default=None, gt=0, le=1)
    conflict_threshold: float | None = Field(default=None, gt=0, le=1)

    @property
    def llm_backend(self) -> Literal["none", "openai", "bedrock"]:
        """The model provider in use: ``llm_provider``, or inferred when it is unset."""
        if self.llm_provider is not None:
            return self.llm_provider
        return "openai" if self.llm_base_url and self.llm_model else "none"

    @property
    def llm_configured(self) -> bool:
        return self.llm_backend != "none"

    @field_validator("llm_provider")
    @classmethod
    def _llm_provider_complete(cls, provider: str | None, info: ValidationInfo) -> str | None:
        """A provider chosen explicitly must have what it needs: failing here names the
        missing variable, where a lazily built client would fail on the first conversation.
        A field validator, not a model one: its error shows only this field's value, never
        the other settings (keys, database URLs)."""
        needs = {"openai": ("llm_base_url", "llm_model"), "bedrock": ("llm_model",)}
        for field in needs.get(provider or "none", ()):
            if not info.data.get(field):
                raise ValueError(
                    f"{ENV_PREFIX}{field.upper()} is required when "
                    f"{ENV_PREFIX}LLM_PROVIDER={provider}"
                )
        return provider

    # AWS: the ingest state machine; unset = the pipeline runs in-process.
    ingest_state_machine_arn: str | None = None
    # AWS: the secret the deploy-time bootstrap writes the `default` tenant's owner key to,
    # once, when it creates that tenant; unset = the migration creates no tenant.
    admin_key_secret_arn: str | None = None

    max_content_bytes: int = 32 * 1024
    max_batch: int = 500
    # A request body's bound (413 payload_too_large past it, before it is parsed): the 6 MB
    # a Lambda function takes in a synchronous invocation, so the local server and the
    # deployed API refuse the same bodies.
    max_body_bytes: int = Field(default=6_000_000, ge=64 * 1024, le=100_000_000)
    log_level: str = "INFO"

    # Local rate limits (strata.api.ratelimit; on AWS API Gateway throttles instead): token
    # buckets of `burst` requests refilled at `per_s` a second, per API key and per source
    # address, and a much smaller one per address that each 401 takes from; answered 429
    # with Retry-After. The key and address defaults sit above what one machine's clients
    # get through the server on loopback (~300 keyed requests/s here), so only runaway loops
    # on a fast host meet them; lower them for a server others can reach. The failed-auth
    # budget is the one that bites: a key-guessing loop is slowed after 200 401s.
    rate_limit: bool = True
    rate_limit_key_per_s: float = Field(default=500, gt=0)
    rate_limit_key_burst: int = Field(default=5000, ge=1)
    rate_limit_address_per_s: float = Field(default=1000, gt=0)
    rate_limit_address_burst: int = Field(default=10_000, ge=1)
    rate_limit_auth_failures_per_s: float = Field(default=2, gt=0)
    rate_limit_auth_failures_burst: int = Field(default=200, ge=1)
    # Origins browsers may call the local API from, comma-separated ("*": any); empty: no
    # CORS. On AWS the template's CorsAllowedOrigins parameter does this at API Gateway.
    cors_origins: str = ""

    # Lifecycle (strata.maintenance.lifecycle). A memory is archived when its strength (importance,
    # decayed by kind since last use, lifted by use) falls below the threshold and it is
    # older than the minimum age -- never when pinned or important (>= 0.8).
    lifecycle_archive_threshold: float = Field(default=0.1, ge=0, le=1)
    lifecycle_archive_min_age_days: float = Field(default=90, ge=0)
    # What happens to a short-term memory past expires_at: archived (restorable by version,
    # kept in the table) or deleted (its last state stays in history; restore brings it back).
    lifecycle_short_term_expiry: Literal["archive", "delete"] = "archive"
    # Uses (search hits) that promote a short-term memory to long-term.
    lifecycle_promote_access_count: int = Field(default=3, ge=1)
    # Candidates waiting for review longer than this are expired to rejected (no tombstone).
    lifecycle_candidate_max_age_days: float = Field(default=30, gt=0)
    lifecycle_batch_size: int = Field(default=500, ge=1, le=10_000)
    # Retention windows, both floored at 90 days (a smaller value is raised and reported).
    # Audit entries: strata audit prune. History: unbounded (None) unless set.
    audit_retention_days: int = Field(default=365, ge=1)
    history_retention_days: int | None = Field(default=None, ge=1)
    # The event outbox (strata.events): a feed, pruned by the lifecycle job after this many
    # days; a consumer further behind resumes at the oldest event kept.
    event_retention_days: int = Field(default=30, ge=1)
    # Webhooks (strata.events.webhooks): a URL resolving to a loopback, link-local, private
    # or otherwise non-public address is refused unless this is set (a local setup only).
    webhooks_allow_private: bool = False
    # A failed delivery is retried after base * 2^(failures - 1) seconds (at most an hour);
    # after this many failures in a row the webhook is disabled until replayed.
    webhook_backoff_base_s: float = Field(default=5.0, ge=0)
    webhook_max_failures: int = Field(default=10, ge=1)
    webhook_timeout_s: float = Field(default=10.0, gt=0)
    # On AWS: the EventBridge bus the drain function puts every event on (template.yaml).
    event_bus_name: str | None = None
    # Audit digests (strata.audit.digests): the chain heads, published outside the database.
    # On AWS an Object Lock bucket and a KMS signing key; locally $STRATA_HOME/audit-digests.
    audit_digest_bucket: str | None = None
    audit_digest_key_id: str | None = None
    # How often `strata dev` looks for chains that grew and publishes their digests (on AWS
    # the schedule does, every minute): a tenant's unanchored tail is at most about this old.
    # A chain that did not grow costs nothing and gets no new digest.
    audit_digest_interval_minutes: float = Field(default=1, gt=0)
    # The scheduled verification re-walks every retained row within this many daily runs.
    audit_full_verify_days: int = Field(default=7, ge=1, le=31)

    @model_validator(mode="before")
    @classmethod
    def _environment(cls, values: Any) -> Any:
        """Each field not passed in comes from ``STRATA_<FIELD>`` (the name in any case), as
        the string pydantic converts in lax mode ("5432" -> 5432, "true" -> True); an invalid
        value fails validation naming the field. Arguments win over the environment."""
        if not isinstance(values, dict):
            return values
        prefix = len(ENV_PREFIX)
        env = {
            name[prefix:].lower(): value
            for name, value in os.environ.items()
            if name.upper().startswith(ENV_PREFIX) and name[prefix:].lower() in cls.model_fields
        }
        return {**env, **values}

    @property
    def pgdata(self) -> Path:
        return self.home / "pgdata"

    @property
    def admin_key_file(self) -> Path:
        return self.home / "admin.key"


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    return Settings()
