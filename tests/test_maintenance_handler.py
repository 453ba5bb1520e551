"""The scheduled maintenance functions (functions/maintenance), invoked with the input an
EventBridge Scheduler schedule sends, end to end into the real database; their CloudWatch
metrics are read back from the embedded-metric-format documents Powertools prints (what
CloudWatch ingests from the log stream: no AWS API is called, so there is nothing for moto
to stand in for)."""

from __future__ import annotations

import json
import sys
import uuid
from datetime import UTC, datetime, timedelta
from functools import partial
from pathlib import Path

import pytest

from strata.db import get_database
from strata.foundation.config import get_settings
from strata.memories import CreateRequest, create_memories

import support
from test_audit_verify import bare_tenant, days_ago, seed, seqs, sql

ROOT = Path(__file__).resolve().parents[1]


Context = partial(support.LambdaContext, "strata-maintenance", remaining_ms=14 * 60_000,
                  request_id="5b1d9a2e-7c3f-4e51-9a0b-2f6d1c8e4a77")


def schedule_input(**extra) -> dict:
    """The Input of a templated Lambda target, with the scheduler's context attributes."""
    return {"scheduled_time": "2026-11-29T03:00:00Z",
            "execution_id": "a1b2c3d4-0000-4000-8000-000000000001", **extra}


@pytest.fixture
def maintenance(db, monkeypatch):
    monkeypatch.setenv("STRATA_DATABASE_URL", db.url)
    monkeypatch.setenv("STRATA_RUNTIME", "aws")
    get_settings.cache_clear()
    get_database.cache_clear()
    yield support.load_module("handler_maintenance", ROOT / "functions" / "maintenance" / "handler.py")
    from strata.foundation import logs

    logs.reset()  # the aws runtime switched strata logs to JSON
    get_database().close()
    get_settings.cache_clear()
    get_database.cache_clear()
    sys.modules.pop("handler_maintenance", None)


def emitted_metrics(capsys) -> dict:
    """Metric values and metadata from the EMF documents printed since the last call."""
    out = {}
    for line in capsys.readouterr().out.splitlines():
        try:
            doc = json.loads(line)
        except ValueError:
            continue
        if isinstance(doc, dict) and "_aws" in doc:
            [directive] = doc["_aws"]["CloudWatchMetrics"]
            assert directive["Namespace"] == "strata" and doc["service"] == "maintenance"
            for m in directive["Metrics"]:  # Powertools writes each value as a list
                [out[m["Name"]]] = doc[m["Name"]]
            out |= {k: v for k, v in doc.items() if k == "broken_tenants"}
    return out


def due_memories(db, tenant, n: int) -> list[uuid.UUID]:
    from strata.auth import authenticate
    from strata.providers import HashingEmbedder

    caller = authenticate(db, tenant.key)
    results = create_memories(db, caller, CreateRequest(memories=[
        {"content": f"Obsolete runbook step number {i} for the {w} cluster", "path": "shared.ops"}
        for i, w in enumerate(["amber", "basalt", "cobalt", "dune", "ember"][:n])]), HashingEmbedder(384))
    ids = [r.id for r in results]
    sql(db, "UPDATE memories SET created_at = now() - interval '400 days', importance = 0.1"
            " WHERE id = ANY(%s)", (ids,))
    return ids


def status_of(db, ids) -> list[str]:
    with db.connection() as conn:
        rows = conn.execute("SELECT id, status::text AS s FROM memories WHERE id = ANY(%s)", (ids,)).fetchall()
    by_id = {r["id"]: r["s"] for r in rows}
    return [by_id[i] for i in ids]


def test_lifecycle_function_archives_and_publishes_counts(maintenance, db, tenant, capsys):
    """Given three memories due for archival, when the schedule invokes the lifecycle
    function, then it returns an ok, complete report, the memories are archived with audit
    entries from the scheduler surface, and LifecycleArchived = 3 is published."""
    ids = due_memories(db, tenant, 3)
    capsys.readouterr()
    report = maintenance.lifecycle(schedule_input(), Context())
    assert (report["ok"], report["complete"], report["totals"]["archived"]) == (True, True, 3)
    json.dumps(report)  # what Lambda returns must serialise
    assert status_of(db, ids) == ["archived"] * 3
    metrics = emitted_metrics(capsys)
    assert (metrics["LifecycleArchived"], metrics["LifecyclePromoted"], metrics["MaintenanceErrors"]) == (3, 0, 0)
    with db.connection() as conn:
        surfaces = {r["surface"] for r in conn.execute(
            "SELECT surface FROM audit_log WHERE operation = 'lifecycle.archive'").fetchall()}
    assert surfaces == {"scheduler"}


def test_lifecycle_function_stops_near_its_timeout_and_the_next_run_resumes(
    maintenance, db, tenant, monkeypatch
):
    """Given three memories due, batches of 2, and an invocation with less than the reserve
    left, when invoked, then it commits one batch and reports incomplete; an invocation with
    time (the next schedule) finishes the rest."""
    monkeypatch.setenv("STRATA_LIFECYCLE_BATCH_SIZE", "2")
    get_settings.cache_clear()
    ids = due_memories(db, tenant, 3)
    first = maintenance.lifecycle(schedule_input(tenant="acme"), Context(remaining_ms=20_000))
    assert (first["complete"], first["totals"]["archived"]) == (False, 2)
    assert sorted(status_of(db, ids)) == ["active", "archived", "archived"]
    second = maintenance.lifecycle(schedule_input(tenant="acme"), Context())
    assert (second["complete"], second["totals"]["archived"]) == (True, 1)
    assert status_of(db, ids) == ["archived"] * 3


def test_audit_verify_function_publishes_a_break(maintenance, db, make_tenant, capsys):
    """Given two tenants with intact chains, when the verify function runs, then
    AuditChainBroken = 0 and the rows are counted; after one tenant's row is edited, a full
    verification returns (does not raise) a report naming the first bad seq and publishes
    AuditChainBroken = 1 with that tenant's id in the metadata."""
    a = make_tenant("alpha")
    make_tenant("beta")
    capsys.readouterr()
    ok = maintenance.audit_verify(schedule_input(), Context())
    assert ok["ok"] is True and ok["complete"] is True
    metrics = emitted_metrics(capsys)
    # each tenant's one row, walked by the incremental run and by the rolling slice
    assert (metrics["AuditChainBroken"], metrics["AuditRowsVerified"]) == (0, 4)
    assert "broken_tenants" not in metrics

    sql(db, "UPDATE audit_log SET outcome = 'forged' WHERE tenant_id = %s AND seq = 1", (a.tenant_id,))
    broken = maintenance.audit_verify(schedule_input(full=True), Context())
    by_name = {t["tenant"]: t for t in broken["tenants"]}
    assert (broken["ok"], by_name["alpha"]["first_bad_seq"], by_name["beta"]["ok"]) == (False, 1, True)
    metrics = emitted_metrics(capsys)
    assert (metrics["AuditChainBroken"], metrics["broken_tenants"]) == (1, [str(a.tenant_id)])


def test_audit_prune_function_prunes_past_the_retention_floor(maintenance, db, monkeypatch, capsys):
    """Given STRATA_AUDIT_RETENTION_DAYS=7 and entries 200 and 30 days old, when the prune
    function runs, then only the 200-day entry goes (the floor is 90 days), the chain
    verifies, and AuditRowsPruned = 1 is published."""
    monkeypatch.setenv("STRATA_AUDIT_RETENTION_DAYS", "7")
    get_settings.cache_clear()
    t = bare_tenant(db)
    seed(db, t, days_ago(200, 30))
    capsys.readouterr()
    report = maintenance.audit_prune(schedule_input(), Context())
    [r] = report["tenants"]
    assert (report["ok"], r["retention_days"], r["floored"], r["pruned"]) == (True, 90, True, 1)
    assert seqs(db, t) == [2, 3]  # 3: the prune's own entry
    metrics = emitted_metrics(capsys)
    assert (metrics["AuditRowsPruned"], metrics["AuditChainBroken"]) == (1, 0)
    assert datetime.fromisoformat(r["cutoff"]) < datetime.now(UTC) - timedelta(days=89)


def test_audit_digest_function_signs_with_kms_into_the_locked_bucket(maintenance, db, make_tenant,
                                                                      monkeypatch, capsys):
    """Given the stack's digest bucket (Object Lock, compliance) and KMS signing key, under moto
    When the digest function (every minute) runs, then every tenant gets one signed digest
    and AuditDigestsPublished counts them; a second run with no new entries touches no
    tenant, and one after a new entry publishes that tenant's alone
    And when a tenant's tail is then deleted with its head moved back, the daily verify
    function (which reads the same bucket and verifies with KMS) reports that tenant broken
    by its digest, and the other (control) ok."""
    import boto3
    from moto import mock_aws

    with mock_aws():
        monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
        s3 = boto3.client("s3", region_name="us-east-1")
        s3.create_bucket(Bucket="stack-audit-digests", ObjectLockEnabledForBucket=True)
        s3.put_object_lock_configuration(Bucket="stack-audit-digests", ObjectLockConfiguration={
            "ObjectLockEnabled": "Enabled",
            "Rule": {"DefaultRetention": {"Mode": "COMPLIANCE", "Days": 365}}})
        key = boto3.client("kms", region_name="us-east-1").create_key(
            KeySpec="ECC_NIST_P256", KeyUsage="SIGN_VERIFY")["KeyMetadata"]["Arn"]
        monkeypatch.setenv("STRATA_AUDIT_DIGEST_BUCKET", "stack-audit-digests")
        monkeypatch.setenv("STRATA_AUDIT_DIGEST_KEY_ID", key)
        get_settings.cache_clear()
        a, b = make_tenant("alpha"), make_tenant("beta")
        for tk in (a, b):
            seed(db, tk.tenant_id, days_ago(3, 2, 1))
        capsys.readouterr()
        report = maintenance.audit_digest(schedule_input(), Context())
        assert report["ok"] and all(t["published"] for t in report["tenants"]), report
        assert emitted_metrics(capsys)["AuditDigestsPublished"] == 2
        objects = s3.list_objects_v2(Bucket="stack-audit-digests")["Contents"]
        assert sorted(o["Key"].split("/")[1] for o in objects) == sorted([str(a.tenant_id), str(b.tenant_id)])
        # A run with no new entries touches no tenant (it runs every minute); one entry
        # more for beta and the next run publishes beta's digest alone.
        again = maintenance.audit_digest(schedule_input(), Context())
        assert (again["ok"], again["tenants"]) == (True, []), again
        assert emitted_metrics(capsys)["AuditDigestsPublished"] == 0
        seed(db, b.tenant_id, days_ago(0.5))
        grown = maintenance.audit_digest(schedule_input(), Context())
        assert [(t["tenant"], t["published"]) for t in grown["tenants"]] == [("beta", True)], grown
        assert emitted_metrics(capsys)["AuditDigestsPublished"] == 1

        with db.transaction() as cur:
            cur.execute("DELETE FROM audit_log WHERE tenant_id = %s AND seq >= 3", (a.tenant_id,))
            cur.execute("UPDATE audit_heads SET seq = 2, row_hash = (SELECT row_hash FROM audit_log"
                        " WHERE tenant_id = %s AND seq = 2) WHERE tenant_id = %s", (a.tenant_id, a.tenant_id))
        verified = maintenance.audit_verify(schedule_input(), Context())
        by_name = {t["tenant"]: t for t in verified["tenants"]}
        assert (by_name["alpha"]["ok"], by_name["beta"]["ok"]) == (False, True)
        assert "digest" in by_name["alpha"]["failed"], by_name["alpha"]
        assert emitted_metrics(capsys)["broken_tenants"] == [str(a.tenant_id)]
