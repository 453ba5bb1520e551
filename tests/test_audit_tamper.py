"""The tamper suite: every way of rewriting a tenant's audit trail in the database is found.

A chain of 45 rows: rows 1-30 anchored by a first digest, 31-40 by a second (the verified
checkpoint is at 40), 41-45 appended since (after the checkpoint, not yet in a digest). An
attacker with full write access to the database -- rows, head and checkpoints, not the
digests -- then edits, deletes, swaps or renumbers a row before or after the checkpoint,
truncates the tail with or without fixing the head, re-forges the chain from a row with its
head, or rewrites a checkpoint. Each tamper must be found

- by the scheduled path within its window: ``audit_full_verify_days`` daily runs of the
  rolling verification (bounded slices that resume), with the hourly digest job running
  in between (it must never anchor the tampered chain and so launder it);
- by the full verification the API (``POST /v1/audit/verify``) and the CLI
  (``strata audit verify --full``) run, which reports ``ok: false`` naming what failed.

Property-based over (tamper, row); the explicit cases run through the API and the CLI too.
What cannot be found, by design of any anchoring (CloudTrail's included): rows appended
after the latest digest can be truncated or re-forged with the head before the next digest
is published (an hour on AWS). Those draws stay out of the strategy, on purpose and only
those: every tamper of an anchored row, and every tamper that breaks a link, is in.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings as hsettings, strategies as st

from strata import audit
from strata.api.app import create_app
from strata.audit.chain import row_hash
from strata.audit.digests import Digests, FileStore, HmacSigner, KmsSigner, S3Store
from strata.foundation.config import Settings
from tests.test_audit_verify import days_ago, seed

FIRST, SECOND, HEAD = 30, 40, 45  # digest 1 at 30, digest 2 and the checkpoint at 40
DAYS = 7
ROLLING_ROWS = 8  # rows per daily slice: 45 rows take 6 runs, within the week


def sql(db, statement: str, params=()) -> None:
    with db.transaction() as cur:
        cur.execute(statement, params)


def stored(db, t, seq: int) -> bytes:
    with db.connection() as conn:
        return bytes(conn.execute("SELECT row_hash FROM audit_log WHERE tenant_id = %s AND seq = %s",
                                  (t, seq)).fetchone()["row_hash"])


def build_chain(db, digests: Digests, t: uuid.UUID) -> None:
    """Rows 1..45 on top of whatever the tenant holds, anchored at 30 and 40."""
    with db.connection() as conn:
        base = conn.execute("SELECT COALESCE(max(seq), 0) AS n FROM audit_log WHERE tenant_id = %s",
                            (t,)).fetchone()["n"]
    assert base == 0 or base == 1  # a bare tenant, or one holding its tenant.create
    seed(db, t, days_ago(*[50 - i for i in range(FIRST - base)]))
    assert audit.publish_digest(db, t, digests)["published"] is True
    seed(db, t, days_ago(*[20 - i for i in range(SECOND - FIRST)]))
    assert audit.publish_digest(db, t, digests)["published"] is True
    seed(db, t, days_ago(*[5 - i / 2 for i in range(HEAD - SECOND)]))


# --------------------------------------------------------------------------- tampers


def _relink(db, t, start: int) -> None:
    """Re-compute every link from ``start`` with the real algorithm and move the head: an
    attacker who knows how the chain is built."""
    with db.connection() as conn:
        rows = conn.execute("SELECT * FROM audit_log WHERE tenant_id = %s AND seq >= %s ORDER BY seq",
                            (t, start)).fetchall()
        prev_row = conn.execute("SELECT row_hash FROM audit_log WHERE tenant_id = %s AND seq < %s"
                                " ORDER BY seq DESC LIMIT 1", (t, start)).fetchone()
    prev = bytes(prev_row["row_hash"]) if prev_row else b"\x00" * 32
    with db.transaction() as cur:
        for row in rows:
            new = row_hash(prev, row)
            cur.execute("UPDATE audit_log SET prev_hash = %s, row_hash = %s WHERE tenant_id = %s"
                        " AND seq = %s", (prev, new, t, row["seq"]))
            prev = new
        cur.execute("UPDATE audit_heads SET seq = %s, row_hash = %s WHERE tenant_id = %s",
                    (rows[-1]["seq"] if rows else start - 1, prev, t))


def edit(db, t, k):
    sql(db, "UPDATE audit_log SET count = count + 1000 WHERE tenant_id = %s AND seq = %s", (t, k))


def delete(db, t, k):
    sql(db, "DELETE FROM audit_log WHERE tenant_id = %s AND seq = %s", (t, k))


def swap(db, t, k):
    """Rows k and k+1 change places (each keeps its stored hashes)."""
    with db.transaction() as cur:
        cur.execute("UPDATE audit_log SET seq = -1 WHERE tenant_id = %s AND seq = %s", (t, k))
        cur.execute("UPDATE audit_log SET seq = %s WHERE tenant_id = %s AND seq = %s", (k, t, k + 1))
        cur.execute("UPDATE audit_log SET seq = %s WHERE tenant_id = %s AND seq = -1", (k + 1, t))


def renumber(db, t, k):
    """Rows k.. move one seq up (two steps: the primary key is checked per row)."""
    with db.transaction() as cur:
        cur.execute("UPDATE audit_log SET seq = -(seq + 1) WHERE tenant_id = %s AND seq >= %s", (t, k))
        cur.execute("UPDATE audit_log SET seq = -seq WHERE tenant_id = %s AND seq < 0", (t,))


def truncate(db, t, k):
    sql(db, "DELETE FROM audit_log WHERE tenant_id = %s AND seq >= %s", (t, k))


def truncate_fixing_head(db, t, k):
    last = stored(db, t, k - 1)
    with db.transaction() as cur:
        cur.execute("DELETE FROM audit_log WHERE tenant_id = %s AND seq >= %s", (t, k))
        cur.execute("UPDATE audit_heads SET seq = %s, row_hash = %s WHERE tenant_id = %s", (k - 1, last, t))


def reforge(db, t, k):
    """Row k edited, every link from it recomputed and the head moved to match."""
    edit(db, t, k)
    _relink(db, t, k)


def reforge_with_checkpoint(db, t, k):
    """As reforge, and the verified checkpoint rewritten to the forged row's hash."""
    reforge(db, t, k)
    sql(db, "UPDATE audit_checkpoints SET row_hash = %s WHERE tenant_id = %s AND kind = 'verified'",
        (stored(db, t, SECOND), t))


def rewrite_checkpoint(db, t, k):
    """The verified checkpoint holds a hash no row has."""
    sql(db, "UPDATE audit_checkpoints SET row_hash = %s WHERE tenant_id = %s AND kind = 'verified'",
        (hashlib.sha256(b"forged").digest(), t))


def skip_with_checkpoint(db, t, k):
    """Row k edited, and the verified checkpoint moved to the head so no incremental run looks."""
    edit(db, t, k)
    sql(db, "UPDATE audit_checkpoints SET seq = %s, row_hash = %s WHERE tenant_id = %s AND kind = 'verified'",
        (HEAD, stored(db, t, HEAD), t))


def forge_prune(db, t, k):
    """Rows 1..k deleted behind a prune checkpoint written to match: a prune nobody ran."""
    last = stored(db, t, k)
    with db.transaction() as cur:
        cur.execute("DELETE FROM audit_log WHERE tenant_id = %s AND seq <= %s", (t, k))
        cur.execute("INSERT INTO audit_checkpoints (tenant_id, kind, seq, row_hash) VALUES (%s, 'pruned', %s, %s)"
                    " ON CONFLICT (tenant_id, kind) DO UPDATE SET seq = EXCLUDED.seq, row_hash = EXCLUDED.row_hash",
                    (t, k, last))


# (tamper, the rows it may be aimed at): anchored rows for the link-preserving ones.
TAMPERS: dict[str, tuple[Callable, range]] = {
    "edit": (edit, range(1, HEAD + 1)),
    "delete": (delete, range(1, HEAD)),  # deleting the last row is truncate(45)
    "swap": (swap, range(1, HEAD)),
    "renumber": (renumber, range(1, HEAD + 1)),
    "truncate": (truncate, range(2, HEAD + 1)),
    "truncate_fixing_head": (truncate_fixing_head, range(2, SECOND + 1)),
    "reforge": (reforge, range(1, SECOND + 1)),
    "reforge_with_checkpoint": (reforge_with_checkpoint, range(1, SECOND + 1)),
    "rewrite_checkpoint": (rewrite_checkpoint, range(1, 2)),
    "skip_with_checkpoint": (skip_with_checkpoint, range(1, HEAD + 1)),
    "forge_prune": (forge_prune, range(1, HEAD)),
}


def scheduled_finds(db, t, digests: Digests) -> int | None:
    """The day (1-based) on which the daily verification reports the tamper, or None when a
    week of runs (each followed by the hourly digest job) never does."""
    for day in range(1, DAYS + 1):
        report = audit.verify_tenant(db, t, rolling=True, digests=digests, batch=5,
                                     rolling_rows=ROLLING_ROWS, full_verify_days=DAYS)
        if not report["ok"]:
            assert report["failed"] and report["problems"], report
            return day
        audit.publish_digest(db, t, digests)  # hourly, all day: it must not launder the tamper
    return None


@pytest.fixture
def local_digests(tmp_path) -> Digests:
    return Digests(FileStore(tmp_path / "audit-digests"), HmacSigner(tmp_path / "audit-digests.key"))


def bare(db) -> uuid.UUID:
    with db.transaction() as cur:
        return cur.execute("INSERT INTO tenants (name) VALUES (%s) RETURNING id",
                           (f"t{uuid.uuid4().hex[:12]}",)).fetchone()["id"]


# --------------------------------------------------------------------------- properties


def test_the_untampered_chain_verifies_on_every_path(db, local_digests):
    """Control: the same chain, untouched, is ok on every scheduled run and in full, and the
    digest job keeps publishing (the checks are not simply failing everything)."""
    t = bare(db)
    build_chain(db, local_digests, t)
    assert scheduled_finds(db, t, local_digests) is None
    full = audit.verify(db, t, digests=local_digests)
    assert (full["ok"], full["failed"], full["checked"], full["anchor"]["ok"]) == (True, [], HEAD, True)
    assert full["anchor"]["head_seq"] == HEAD  # the digest job anchored the new rows


@hsettings(max_examples=60, deadline=None, derandomize=True,
           suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_every_tamper_is_found_by_the_schedule_within_a_week_and_by_full_verification(db, local_digests, data):
    kind = data.draw(st.sampled_from(sorted(TAMPERS)), label="tamper")
    tamper, rows = TAMPERS[kind]
    k = data.draw(st.sampled_from(rows), label="row")
    t = bare(db)
    build_chain(db, local_digests, t)
    assert audit.verify(db, t, digests=local_digests)["ok"] is True  # control, per example
    tamper(db, t, k)
    full = audit.verify(db, t, digests=local_digests)
    assert full["ok"] is False and full["failed"], (kind, k, full)
    day = scheduled_finds(db, t, local_digests)
    assert day is not None and day <= DAYS, (kind, k)


# --------------------------------------------------------------------------- API and CLI

EXPLICIT = [("edit", 10), ("edit", 43), ("delete", 10), ("delete", 43), ("swap", 10),
            ("swap", 42), ("renumber", 10), ("renumber", 43), ("truncate", 44),
            ("truncate", 38), ("truncate_fixing_head", 38), ("reforge", 5), ("reforge", 35),
            ("reforge_with_checkpoint", 35), ("rewrite_checkpoint", 1),
            ("skip_with_checkpoint", 43), ("forge_prune", 12), ("forge_prune", 42)]


@pytest.fixture
def home_settings(tmp_path, settings) -> Settings:
    return settings.model_copy(update={"home": tmp_path})


@pytest.fixture
def home_client(db, embedder, home_settings):
    from fastapi.testclient import TestClient

    with TestClient(create_app(db=db, embedder=embedder, settings=home_settings)) as c:
        yield c


def cli_verify(db, home: Path, tenant: str, *flags: str) -> tuple[int, dict]:
    environ = {k: v for k, v in os.environ.items() if not k.startswith("STRATA_")}
    environ |= {"STRATA_DATABASE_URL": db.url, "STRATA_HOME": str(home)}
    proc = subprocess.run([sys.executable, "-m", "strata.cli", "audit", "verify", *flags,
                           "--tenant", tenant], env=environ, capture_output=True, text=True, timeout=120)
    assert proc.stdout.strip(), proc.stderr
    return proc.returncode, json.loads(proc.stdout)


@pytest.mark.parametrize(("kind", "k"), EXPLICIT, ids=[f"{k}-{r}" for k, r in EXPLICIT])
def test_the_api_and_the_cli_report_one_failed_verdict_naming_the_part(
        db, make_tenant, home_settings, home_client, kind, k):
    """Given a tenant whose digests live in its STRATA_HOME, when its chain is tampered with,
    then POST /v1/audit/verify and the bare `strata audit verify` both say ok false, exit 1,
    and name the failed parts; before the tamper (control) both say ok. (The bare command
    walks everything: the edits behind its own checkpoint included.)"""
    tk = make_tenant()
    digests = audit.digests.from_settings(home_settings)
    build_chain(db, digests, tk.tenant_id)
    before = home_client.post("/v1/audit/verify", headers=tk.headers).json()
    assert (before["ok"], before["failed"], before["anchor"]["ok"]) == (True, [], True), before
    code, report = cli_verify(db, home_settings.home, str(tk.tenant_id))
    assert (code, report["ok"]) == (0, True), report

    TAMPERS[kind][0](db, tk.tenant_id, k)
    api = home_client.post("/v1/audit/verify", headers=tk.headers)
    assert api.status_code == 200
    found = api.json()
    assert found["ok"] is False and found["failed"] and found["problems"], found
    code, report = cli_verify(db, home_settings.home, str(tk.tenant_id))
    [tenant_report] = report["tenants"]
    assert (code, report["ok"], tenant_report["ok"]) == (1, False, False), report
    assert tenant_report["failed"] == found["failed"]


def test_the_bare_verify_walks_what_an_earlier_verify_vouched_for_and_says_what_it_covered(
        db, make_tenant, home_settings):
    """Given a chain a verify has already vouched for (its checkpoint at the head), when an
    entry behind that checkpoint is edited, then the bare `strata audit verify` finds it
    exactly as `--full` does, naming the rows it covered; `--incremental`, which by design
    starts at the checkpoint, checks nothing and exits 3 saying so, never 0 as a pass.
    Control: before the edit the bare and full commands pass, covering every row."""
    tk = make_tenant()
    tenant = str(tk.tenant_id)
    build_chain(db, audit.digests.from_settings(home_settings), tk.tenant_id)
    head = audit.verify(db, tk.tenant_id)["head_seq"]
    code, before = cli_verify(db, home_settings.home, tenant)
    [t] = before["tenants"]
    assert (code, t["ok"], t["mode"], t["checked"], t["covered"]) == (0, True, "full", head, [f"seq 1..{head}"])

    edit(db, tk.tenant_id, 5)
    code, nothing = cli_verify(db, home_settings.home, tenant, "--incremental")
    [t] = nothing["tenants"]
    assert (code, t["checked"], t["covered"]) == (3, 0, []), nothing
    assert "no row was checked" in nothing["note"]
    verdicts = []
    for flags in ((), ("--full",)):
        code, report = cli_verify(db, home_settings.home, tenant, *flags)
        [t] = report["tenants"]
        assert (code, report["ok"], t["covered"]) == (1, False, [f"seq 1..{head}"]), (flags, report)
        verdicts.append((t["failed"], t["problems"], t["first_bad_seq"]))
    assert verdicts[0] == verdicts[1] and verdicts[0][2] == 5, verdicts


def test_a_truncation_the_head_was_moved_for_is_named_against_the_digest(db, local_digests):
    """The reproduction: the tail deleted and the head moved back to the new last row. The
    chain is self-consistent (its part holds); the digest names the head behind it, and the
    verified checkpoint its missing row."""
    t = bare(db)
    build_chain(db, local_digests, t)
    truncate_fixing_head(db, t, 39)
    report = audit.verify(db, t, digests=local_digests)
    assert (report["ok"], report["failed"]) == (False, ["checkpoint", "digest"]), report
    assert any("behind the digest" in p for p in report["problems"])
    assert "seq 40, where the verified checkpoint is, is missing" in report["problems"]
    refused = audit.publish_digest(db, t, local_digests)  # the digest job does not anchor it
    assert (refused["ok"], refused["published"]) == (False, False)


def test_a_digest_edited_in_its_store_is_not_trusted(db, tmp_path, local_digests):
    """A digest whose body was changed after signing fails the digest part; so does one
    signed by another key (a store copied between deployments)."""
    t = bare(db)
    build_chain(db, local_digests, t)
    [*_, last] = local_digests.store.names(t)
    path = tmp_path / "audit-digests" / last
    doc = json.loads(path.read_bytes())
    doc["digest"]["head"]["seq"] = 1
    path.chmod(0o644)
    path.write_text(json.dumps(doc))
    report = audit.verify(db, t, digests=local_digests)
    assert (report["ok"], report["failed"]) == (False, ["digest"]), report
    other = Digests(local_digests.store, HmacSigner(tmp_path / "another.key"))
    assert audit.verify(db, t, digests=other)["failed"] == ["digest"]


# --------------------------------------------------------------------------- AWS


def test_on_aws_digests_are_kms_signed_object_locked_and_tampers_are_found(db):
    """The same anchoring on S3 with Object Lock (compliance) and a KMS ECDSA key, under moto:
    a digest cannot be overwritten or deleted, verifies with KMS, and a re-forged chain with
    its head and checkpoint is found against it -- and only against it (without the digest
    the same chain verifies); the untouched twin (control) verifies."""
    import boto3
    from moto import mock_aws

    with mock_aws():
        s3 = boto3.client("s3", region_name="us-east-1")
        s3.create_bucket(Bucket="strata-digests", ObjectLockEnabledForBucket=True)
        s3.put_object_lock_configuration(Bucket="strata-digests", ObjectLockConfiguration={
            "ObjectLockEnabled": "Enabled",
            "Rule": {"DefaultRetention": {"Mode": "COMPLIANCE", "Days": 90}}})
        kms = boto3.client("kms", region_name="us-east-1")
        key = kms.create_key(KeySpec="ECC_NIST_P256", KeyUsage="SIGN_VERIFY")["KeyMetadata"]["Arn"]
        digests = Digests(S3Store("strata-digests", retention_days=90, client=s3),
                          KmsSigner(key, client=kms))
        t, twin = bare(db), bare(db)
        for tenant in (t, twin):
            build_chain(db, digests, tenant)
        [first, second] = digests.store.names(t)
        with pytest.raises(FileExistsError):
            digests.store.put(second, b"{}")
        version = s3.head_object(Bucket="strata-digests", Key="audit-digests/" + second)
        assert version["ObjectLockMode"] == "COMPLIANCE"
        with pytest.raises(s3.exceptions.ClientError):
            s3.delete_object(Bucket="strata-digests", Key="audit-digests/" + second,
                             VersionId=version["VersionId"])
        reforge_with_checkpoint(db, t, 20)  # chain, head and checkpoint all agree: only S3 knows
        report = audit.verify(db, t, digests=digests)
        assert (report["ok"], report["failed"]) == (False, ["digest"]), report
        assert audit.verify(db, t)["ok"] is True  # control: without the digest it would pass
        assert audit.verify(db, twin, digests=digests)["ok"] is True
