"""CloudFormation custom resource: apply the database migrations on Create and Update, then
create the first tenant.

The database sits in private subnets, so nobody can run ``strata tenants create`` against it
after ``sam deploy``: when the tenant ``default`` does not exist, this creates it and writes
its owner key to the secret STRATA_ADMIN_KEY_SECRET_ARN names. An existing ``default`` is
left alone and the secret untouched, so later deploys never rotate or overwrite the key.

Delete is a no-op: the schema lives as long as the cluster. The response never carries an
exception message (a connection error can name hosts and users) nor the key; the log stream
has details, never the key.
"""

from __future__ import annotations

from strata.foundation import coldstart

coldstart.begin()  # the collector stays off until init is done: strata.foundation.coldstart

import json
import logging
import time
import urllib.request

import psycopg
from aws_lambda_powertools import Metrics, Tracer
from aws_lambda_powertools.metrics import MetricUnit

from strata.auth import create_tenant, delete_tenant
from strata.db import get_database
from strata.db.migrate import migrate_database
from strata.foundation import aws, logs
from strata.foundation.config import get_settings
from strata.foundation.errors import Conflict

log = logging.getLogger("strata.migrate")
# MigrationsApplied: how many this deploy applied (0 on a deploy without schema changes).
metrics = Metrics(namespace="strata")
# botocore patched: the admin key secret write shows in the trace (once per deploy; cold start
# does not matter here). Its arguments, the key among them, are not recorded.
tracer = Tracer(patch_modules=("botocore",))

# A fresh RDS Proxy accepts connections only once its target has registered, which can
# lag the stack resources by minutes; keep retrying while the invocation has time left.
RETRY_SECONDS = 15
RESERVE_MS = 60_000
PHYSICAL_ID = "strata-db-migrations"
FIRST_TENANT = "default"


@logs.lambda_context("RequestId")
@metrics.log_metrics(capture_cold_start_metric=True)
@tracer.capture_lambda_handler(capture_response=False)
def handler(event, context):
    status, reason, data = "SUCCESS", "nothing to do", {}
    try:
        if event["RequestType"] in ("Create", "Update"):
            applied = _migrate(context)
            _check_stored_vectors()
            metrics.add_metric(name="MigrationsApplied", unit=MetricUnit.Count, value=len(applied))
            created = _bootstrap()
            reason = f"applied {len(applied)} migration(s)"
            if created:
                reason += f"; created tenant {FIRST_TENANT}"
            data = {"Applied": ",".join(applied), "TenantCreated": str(created).lower()}
    except StoredVectorsDiffer as exc:
        log.error("stored vectors do not match the configured embedder", extra={"detail": str(exc)})
        status, reason = "FAILED", str(exc)
    except Exception as exc:
        log.exception("migration failed")
        status = "FAILED"
        reason = f"{type(exc).__name__}; see log stream {context.log_stream_name}"
    log.info("answering", extra={"request_type": event["RequestType"], "status": status})
    _respond(event, status, reason, data)


def _migrate(context) -> list[str]:
    while True:
        try:
            return migrate_database()
        except psycopg.OperationalError:
            if context.get_remaining_time_in_millis() < RESERVE_MS + RETRY_SECONDS * 1000:
                raise
            log.warning("database not reachable yet", extra={"retry_in_s": RETRY_SECONDS})
            time.sleep(RETRY_SECONDS)


class StoredVectorsDiffer(Exception):
    """The stored vectors were made at another dimension, or by another model, than this
    deploy configures. Its message (numbers and model names only) is the deploy's failure
    reason: failing here rolls the stack back to the configuration that made them, where
    letting it through would leave every API function refusing the schema (a dimension) or
    search ranking a query from one model against vectors of another (a model)."""


def _check_stored_vectors() -> None:
    from strata.db.migrate import stored_embedding_dim
    from strata.providers import get_embedder
    from strata.providers.store_embedder import stored_models

    settings = get_settings()
    db = get_database()
    with db.connection() as conn:
        stored_dim = stored_embedding_dim(conn)
    if stored_dim != settings.embedding_dim:
        raise StoredVectorsDiffer(
            f"the database stores {stored_dim}-dimensional vectors but this deploy sets "
            f"EmbeddingDim={settings.embedding_dim}: deploy with EmbeddingDim={stored_dim} and "
            "the embedder that made them, or reindex first (docs/deploy.md)")
    model = get_embedder(settings).model
    stored = stored_models(db)
    if stored is None:
        log.warning("stored vectors not counted (a large store): embedder change not checked")
        return
    others = sorted(m for m in stored if m != model)
    if others:
        raise StoredVectorsDiffer(
            f"{sum(stored[m] for m in others)} stored memory vectors were embedded by "
            f"{', '.join(others)}, not by {model}: deploy with the Embedder and "
            "EmbeddingModelId that made them, or reindex first (docs/deploy.md)")


def _bootstrap() -> bool:
    """Create the first tenant and store its owner key; False when it exists (or no secret
    is configured)."""
    secret_arn = get_settings().admin_key_secret_arn
    if not secret_arn:
        return False
    db = get_database()
    try:
        # The unique name makes this the existence check too: two deploys racing create one.
        tenant, key = create_tenant(db, FIRST_TENANT)
    except Conflict:
        log.info("first tenant exists; its key secret is left as it is")
        return False
    try:
        _secrets().put_secret_value(SecretId=secret_arn, SecretString=key.key)
    except Exception:
        # A key nobody can read would leave a tenant nobody can use and, since it exists, the
        # next deploy would not try again: undo it, so the retry starts clean.
        delete_tenant(db, tenant.id, cause="tenant.bootstrap_rollback", actor="deploy")
        raise
    log.info("first tenant created; its owner key is in the admin key secret",
             extra={"tenant_id": str(tenant.id)})
    return True


def _secrets():
    return aws.client("secretsmanager")


def _respond(event, status: str, reason: str, data: dict) -> None:
    body = json.dumps(
        {
            "Status": status,
            "Reason": reason,
            "PhysicalResourceId": event.get("PhysicalResourceId", PHYSICAL_ID),
            "StackId": event["StackId"],
            "RequestId": event["RequestId"],
            "LogicalResourceId": event["LogicalResourceId"],
            "Data": data,
        }
    ).encode()
    # The pre-signed S3 URL expects no Content-Type; the VPC reaches it through the S3 gateway
    # endpoint in template.yaml.
    request = urllib.request.Request(
        event["ResponseURL"], data=body, method="PUT", headers={"Content-Type": ""}
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        log.info("cloudformation response sent", extra={"http_status": response.status})


coldstart.end()
