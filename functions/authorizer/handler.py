"""The HTTP API's Lambda authorizer (payload format 2.0, simple responses).

API Gateway sends the request's ``Authorization`` header; the answer is
``{"isAuthorized": true, "context": {...}}`` with the tenant, principal, key and effective
access the API functions rebuild their caller from (``strata.api.authorizer.caller_from_context``),
or ``{"isAuthorized": false}``. Everything that goes wrong denies: a database outage is one
log line and a 403, never a trace to the client. Logs carry decision codes and ids, never the
key.

Only Powertools' Logger, Tracer and Metrics and the standard library load at import: the database
stack is imported by the first lookup the cache cannot answer.
"""

from __future__ import annotations

from strata.foundation import coldstart

coldstart.begin()  # the collector stays off until init is done: strata.foundation.coldstart

from aws_lambda_powertools import Logger, Metrics, Tracer
from aws_lambda_powertools.logging import correlation_paths
from aws_lambda_powertools.metrics import MetricUnit

from strata.api.authorizer import Decision, get_resolver

log = Logger()
# Nothing patched: patching is eager (botocore alone adds about 0.1 s to every cold start).
tracer = Tracer(auto_patch=False)
# AuthorizerDenied counts refused requests by reason (a spike: a leaked or revoked key in use).
metrics = Metrics(namespace="strata")


def _authorization(event: dict) -> str | None:
    # HTTP API lowercases header names; a hand-built or test event may not.
    for name, value in (event.get("headers") or {}).items():
        if name.lower() == "authorization":
            return value
    return None


def _database():
    from strata.db import get_database

    return get_database()


# The answer names the tenant, principal and paths: never copied into the trace.
@log.inject_lambda_context(correlation_id_path=correlation_paths.API_GATEWAY_HTTP, clear_state=True)
@metrics.log_metrics(capture_cold_start_metric=True)
@tracer.capture_lambda_handler(capture_response=False)
def handler(event: dict, context) -> dict:
    try:
        decision = get_resolver().resolve(_authorization(event), _database)
    except Exception as exc:
        # Misconfiguration, the secret out of reach, a bug: fail closed. The trace stays in
        # the log stream (it names no key); the client sees API Gateway's 403.
        log.exception("authorizer failed; denying", extra={"error_type": type(exc).__name__})
        decision = Decision(False, "error")
    if not decision.authorized:
        metrics.add_dimension(name="reason", value=decision.reason)
        metrics.add_metric(name="AuthorizerDenied", unit=MetricUnit.Count, value=1)
    if decision.reason == "error":
        return decision.response()
    if decision.reason == "unavailable":
        log.error("database unavailable; denying", extra={"error_type": decision.error})
    elif decision.authorized:
        log.debug("authorized", extra={"tenant_id": decision.context["tenant_id"],
                                       "key_id": decision.context["key_id"],
                                       "cached": decision.cached})
    else:
        log.info("denied", extra={"reason": decision.reason, "cached": decision.cached})
    return decision.response()


coldstart.end()
