"""Scheduled maintenance (EventBridge Scheduler -> Lambda): lifecycle, audit verify, audit
digests, audit prune.

One module, four entry points (``handler.lifecycle``, ``handler.audit_verify`` (daily:
incremental plus a slice of the rolling full walk, against the latest digest),
``handler.audit_digest`` (every minute: the verified head of each chain that grew, signed
by KMS, into the Object Lock bucket) and ``handler.audit_prune``). The schedule's ``Input`` is a JSON object; every key is optional:
``tenant`` (name or id; default every tenant), ``dry_run`` (lifecycle, prune), ``full``
(verify), and ``scheduled_time`` / ``execution_id`` (the ``<aws.scheduler.scheduled-time>``
and ``<aws.scheduler.execution-id>`` context attributes, logged for tracing).

Each job stops starting batches when less than ``RESERVE_MS`` of the invocation is left and
reports ``complete: false``; the next scheduled run resumes (unfinished tenants first).
Metrics go out as CloudWatch embedded metric format (Powertools Metrics, namespace
``strata``, dimension ``service=maintenance``): ``AuditChainBroken`` (tenants whose chain did
not verify; the alarm's metric, published as 0 when all verify) with the broken tenants' ids
in the entry's metadata, ``AuditRowsVerified``, ``AuditDigestsPublished``, ``AuditRowsPruned``, ``Lifecycle<Step>``
counts, and ``MaintenanceErrors`` (tenants whose job raised). A broken chain is a finding,
not a failed invocation: the handler returns its report rather than raising, so the
scheduler does not retry it; an error escaping the core does raise.
"""

from __future__ import annotations

from strata.foundation import coldstart

coldstart.begin()  # the collector stays off until init is done: strata.foundation.coldstart

import logging
from datetime import UTC, datetime

from aws_lambda_powertools import Metrics, Tracer
from aws_lambda_powertools.metrics import MetricUnit

from strata.audit import digests, prune, publish_digest, verify_tenant
from strata.audit.maintenance import for_each_tenant
from strata.auth import find_tenant
from strata.db import get_database
from strata.foundation import logs
from strata.foundation.config import get_settings
from strata.maintenance.lifecycle import run_lifecycle

RESERVE_MS = 60_000  # left for the batch in flight, the report and the metrics flush
# The digest job runs every minute: it starts no tenant after this, so runs do not overlap
# (its reserved concurrency is 1) and what is left goes first in the next run.
DIGEST_BUDGET_MS = 45_000
log = logging.getLogger("strata.maintenance")
metrics = Metrics(namespace="strata", service="maintenance")
# Nothing patched (as in every function without AWS calls to follow); reports stay out of traces.
tracer = Tracer(auto_patch=False)


def _setup(event: dict, context, job: str, budget_ms: int | None = None):
    started = context.get_remaining_time_in_millis()
    settings = get_settings()
    log.info("maintenance started", extra={
        "job": job, "scheduled_time": event.get("scheduled_time"),
        "execution_id": event.get("execution_id")})
    db = get_database()
    tenant_id = find_tenant(db, event["tenant"]).id if event.get("tenant") else None

    def keep_going() -> bool:
        left = context.get_remaining_time_in_millis()
        return left > RESERVE_MS and (budget_ms is None or started - left < budget_ms)

    return settings, db, tenant_id, keep_going


def _finish(job: str, report: dict) -> dict:
    errors = [t["tenant_id"] for t in report["tenants"] if "error" in t]
    metrics.add_metric(name="MaintenanceErrors", unit=MetricUnit.Count, value=len(errors))
    log.info("maintenance finished", extra={
        "job": job, "ok": report["ok"], "complete": report["complete"],
        "tenants": len(report["tenants"]), "failed_tenants": errors})
    return report


def _chain_breaks(report: dict) -> None:
    broken = [t["tenant_id"] for t in report["tenants"] if not t["ok"] and "error" not in t]
    metrics.add_metric(name="AuditChainBroken", unit=MetricUnit.Count, value=len(broken))
    if broken:
        metrics.add_metadata(key="broken_tenants", value=broken)
        log.error("audit chain broken", extra={"tenant_ids": broken})


@logs.lambda_context("execution_id")
@metrics.log_metrics(capture_cold_start_metric=True)
@tracer.capture_lambda_handler(capture_response=False)
def lifecycle(event, context):
    settings, db, tenant_id, keep_going = _setup(event, context, "lifecycle")
    report = run_lifecycle(db, tenant_id=tenant_id, dry_run=bool(event.get("dry_run")),
                           settings=settings, keep_going=keep_going, surface="scheduler")
    if not report["dry_run"]:
        for step, count in report["totals"].items():
            name = "Lifecycle" + step.title().replace("_", "")
            metrics.add_metric(name=name, unit=MetricUnit.Count, value=count)
    return _finish("lifecycle", report)


@logs.lambda_context("execution_id")
@metrics.log_metrics(capture_cold_start_metric=True)
@tracer.capture_lambda_handler(capture_response=False)
def audit_verify(event, context):
    settings, db, tenant_id, keep_going = _setup(event, context, "audit_verify")
    full, store = bool(event.get("full")), digests.from_settings(settings)
    report = for_each_tenant(
        db, "audit_verify",
        lambda tid: verify_tenant(db, tid, full=full, rolling=not full, digests=store,
                                  keep_going=keep_going,
                                  full_verify_days=settings.audit_full_verify_days),
        tenant_id=tenant_id, keep_going=keep_going)
    _chain_breaks(report)
    metrics.add_metric(name="AuditRowsVerified", unit=MetricUnit.Count,
                       value=sum(t.get("checked", 0) for t in report["tenants"]))
    return _finish("audit_verify", report)


@logs.lambda_context("execution_id")
@metrics.log_metrics(capture_cold_start_metric=True)
@tracer.capture_lambda_handler(capture_response=False)
def audit_digest(event, context):
    settings, db, tenant_id, keep_going = _setup(event, context, "audit_digest",
                                                 budget_ms=DIGEST_BUDGET_MS)
    store = digests.from_settings(settings)
    if store is None:  # the stack always sets the bucket; a copy without one says so loudly
        raise RuntimeError("STRATA_AUDIT_DIGEST_BUCKET is not set: no digest can be published")
    report = for_each_tenant(
        db, "audit_digest", lambda tid: publish_digest(db, tid, store, keep_going=keep_going),
        tenant_id=tenant_id, keep_going=keep_going, grown=True)
    _chain_breaks(report)
    metrics.add_metric(name="AuditDigestsPublished", unit=MetricUnit.Count,
                       value=sum(bool(t.get("published")) for t in report["tenants"]))
    return _finish("audit_digest", report)


@logs.lambda_context("execution_id")
@metrics.log_metrics(capture_cold_start_metric=True)
@tracer.capture_lambda_handler(capture_response=False)
def audit_prune(event, context):
    settings, db, tenant_id, keep_going = _setup(event, context, "audit_prune")
    dry_run, now = bool(event.get("dry_run")), datetime.now(UTC)
    report = for_each_tenant(
        db, "audit_prune",
        lambda tid: prune(db, tid, retention_days=settings.audit_retention_days, now=now,
                          dry_run=dry_run, keep_going=keep_going, surface="scheduler"),
        tenant_id=tenant_id, keep_going=keep_going, record=not dry_run)
    _chain_breaks(report)
    if not dry_run:
        metrics.add_metric(name="AuditRowsPruned", unit=MetricUnit.Count,
                           value=sum(t.get("pruned", 0) for t in report["tenants"]))
    return _finish("audit_prune", report)


coldstart.end()
