"""One Task of the ingest state machine (infra/statemachines/ingest.asl.json).

The event names the step and carries ids only: ``{"step", "receipt_id", "tenant_id"}``; the
answer is ``{"receipt_id", "tenant_id", "status"}``. ``"fail"`` is the Catch path: it records
the failed step's error *name* on the receipt (the state machine never passes the message).
"""

from __future__ import annotations

from strata.foundation import coldstart

coldstart.begin()  # the collector stays off until init is done: strata.foundation.coldstart

import uuid

from aws_lambda_powertools import Metrics, Tracer
from aws_lambda_powertools.metrics import MetricUnit

from strata.db import get_database
from strata.foundation import logs
from strata.foundation.config import get_settings
from strata.ingest.pipeline import STEPS, IngestRuntime, record_failure, run_step
from strata.providers.store_embedder import resolve

# Nothing patched: X-Ray's httpx patch (the model calls) replaces httpx.Client, and only on
# Lambda, where tracing is on: the tests would never run what production runs.
tracer = Tracer(auto_patch=False)
# IngestStepFailed counts receipts the state machine's Catch path closed.
metrics = Metrics(namespace="strata")
_runtime: IngestRuntime | None = None


def runtime() -> IngestRuntime:
    """Built once per container: the pool, embedder and model clients outlive invocations."""
    global _runtime
    if _runtime is None:
        settings, db = get_settings(), get_database()
        # The store's embedder (a configured other one, on a store with vectors, is refused,
        # as the API refuses it): what the API searches with is what this step writes with.
        _runtime = IngestRuntime(db, resolve(db, settings, strict=True).embedder, settings)
    return _runtime


# Answers are ids and a status, but the rule holds for every handler: no response in a trace.
@logs.lambda_context("receipt_id")
@metrics.log_metrics(capture_cold_start_metric=True)
@tracer.capture_lambda_handler(capture_response=False)
def handler(event, context):
    step = event["step"]
    ids = {"receipt_id": event["receipt_id"], "tenant_id": event["tenant_id"]}
    if step == "fail":
        record_failure(runtime().db, uuid.UUID(ids["receipt_id"]), str(event.get("error") or ""))
        metrics.add_metric(name="IngestStepFailed", unit=MetricUnit.Count, value=1)
        return ids
    if step not in STEPS:
        raise ValueError(f"unknown ingest step {step!r}")
    return run_step(runtime(), step, ids)


coldstart.end()
