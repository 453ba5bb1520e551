"""One validated settings object, built from ``STRATA_*`` variables on first use and cached.

Nothing reads the environment at import time: tests and warm Lambda containers both rely on
``get_settings.cache_clear()`` picking up a changed environment.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Literal

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="STRATA_", extra="ignore")

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
    pool_min: int = 0
    pool_max: int = 8

    embedder: Literal["hash"] = "hash"
    embedding_dim: int = Field(default=384, ge=16, le=4000)

    # Model-backed extraction and conflict judging (any OpenAI-compatible endpoint). Without
    # a base URL/model the rule-based extractor and judge run: no key needed.
    llm_base_url: str | None = None
    llm_model: str | None = None
    llm_api_key: str | None = None
    llm_api_key_secret_arn: str | None = None
    llm_timeout_s: float = Field(default=30.0, gt=0)
    llm_max_retries: int = Field(default=2, ge=0, le=10)
    # When the model fails or answers garbage: fall back to the rule extractor ("rule"), or
    # mark the receipt llm_failed and write nothing ("fail").
    llm_fallback: Literal["rule", "fail"] = "rule"

    # Similarity bands for write resolution. None = the calibrated default for the embedder
    # (see strata.ingest.gate.BANDS and eval/calibrate_bands.py).
    reinforce_threshold: float | None = Field(default=None, gt=0, le=1)
    conflict_threshold: float | None = Field(default=None, gt=0, le=1)

    @property
    def llm_configured(self) -> bool:
        return bool(self.llm_base_url and self.llm_model)

    # AWS: the ingest state machine; unset = the pipeline runs in-process.
    ingest_state_machine_arn: str | None = None

    max_content_bytes: int = 32 * 1024
    max_batch: int = 500
    log_level: str = "INFO"

    @property
    def pgdata(self) -> Path:
        return self.home / "pgdata"

    @property
    def admin_key_file(self) -> Path:
        return self.home / "admin.key"


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    return Settings()
