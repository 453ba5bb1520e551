"""CloudFormation custom resource: apply the database migrations on Create and Update.

Delete is a no-op: the schema lives as long as the cluster. The response never carries an
exception message (a connection error can name hosts and users); the log stream has details.
"""

from __future__ import annotations

import json
import time
import urllib.request

import psycopg
from aws_lambda_powertools import Logger

from strata.db.migrate import migrate_database

log = Logger()

# A fresh RDS Proxy accepts connections only once its target has registered, which can
# lag the stack resources by minutes; keep retrying while the invocation has time left.
RETRY_SECONDS = 15
RESERVE_MS = 60_000
PHYSICAL_ID = "strata-db-migrations"


def handler(event, context):
    status, reason, data = "SUCCESS", "nothing to do", {}
    try:
        if event["RequestType"] in ("Create", "Update"):
            applied = _migrate(context)
            reason = f"applied {len(applied)} migration(s)"
            data = {"Applied": ",".join(applied)}
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
