"""Scheduled audit verification (incremental from a checkpoint, full on demand) and audit
retention (prune with a 90-day floor and a checkpoint) on a real PostgreSQL."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import uuid
from datetime import UTC, datetime, timedelta

import pytest

from strata import audit
from strata.audit.chain import GENESIS, row_hash

STRATA = [sys.executable, "-m", "strata.cli"]
NOW = datetime.now(UTC).replace(microsecond=0)


# --------------------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------------------


def bare_tenant(db, name: str = "acme") -> uuid.UUID:
    """A tenant without the tenant.create entry, so its chain is only what a test seeds."""
    with db.transaction() as cur:
        return cur.execute("INSERT INTO tenants (name) VALUES (%s) RETURNING id", (name,)).fetchone()["id"]


def seed(db, tenant_id: uuid.UUID, ats: list[datetime]) -> None:
    """Append correctly linked rows at the given times (the real row_hash), moving the head."""
    with db.transaction() as cur:
        head = cur.execute("SELECT seq, row_hash FROM audit_heads WHERE tenant_id = %s FOR UPDATE",
                           (tenant_id,)).fetchone()
        seq, prev = (head["seq"], bytes(head["row_hash"])) if head else (0, GENESIS)
        for i, at in enumerate(ats):
            seq += 1
            row = {"tenant_id": tenant_id, "seq": seq, "at": at, "action": "read", "surface": "cli",
                   "operation": "test.seed", "principal_id": None, "key_id": None,
                   "memory_ids": [], "count": i, "query_len": None, "outcome": "ok",
                   "prev_hash": prev}
            row["row_hash"] = row_hash(prev, row)
            cols = list(row)
            cur.execute(f"INSERT INTO audit_log ({', '.join(cols)}) VALUES ({', '.join(['%s'] * len(cols))})",
                        [row[c] for c in cols])
            prev = row["row_hash"]
        cur.execute("INSERT INTO audit_heads (tenant_id, seq, row_hash) VALUES (%s, %s, %s)"
                    " ON CONFLICT (tenant_id) DO UPDATE SET seq = EXCLUDED.seq, row_hash = EXCLUDED.row_hash",
                    (tenant_id, seq, prev))


def days_ago(*days: float) -> list[datetime]:
    return [NOW - timedelta(days=d) for d in days]


def seqs(db, tenant_id) -> list[int]:
    with db.connection() as conn:
        return [r["seq"] for r in conn.execute(
            "SELECT seq FROM audit_log WHERE tenant_id = %s ORDER BY seq", (tenant_id,)).fetchall()]


def checkpoint(db, tenant_id, kind: str) -> dict | None:
    with db.connection() as conn:
        return conn.execute("SELECT seq, row_hash FROM audit_checkpoints WHERE tenant_id = %s"
                            " AND kind = %s", (tenant_id, kind)).fetchone()


def sql(db, statement: str, params=None) -> None:
    with db.transaction() as cur:
        cur.execute(statement, params)


def cli(db, *args: str, **env: str) -> tuple[int, dict]:
    environ = {k: v for k, v in os.environ.items() if not k.startswith("STRATA_")}
    environ |= {"STRATA_DATABASE_URL": db.url, **env}
    proc = subprocess.run(STRATA + list(args), env=environ, capture_output=True, text=True, timeout=60)
    assert proc.stdout.strip(), proc.stderr
    return proc.returncode, json.loads(proc.stdout)


# --------------------------------------------------------------------------------------
# incremental verification
# --------------------------------------------------------------------------------------


def test_incremental_verify_checks_only_rows_since_the_checkpoint(db):
    """Given a 10-row chain verified once (checkpoint at 10), when 3 rows are appended and
    verify runs again, then it starts at 10, checks 3 rows, is ok and moves the checkpoint to
    13; a full run (control) checks all 13."""
    t = bare_tenant(db)
    seed(db, t, days_ago(*range(10, 0, -1)))
    first = audit.verify_tenant(db, t)
    assert (first["ok"], first["checked"], first["from_seq"], first["verified_seq"]) == (True, 10, 0, 10)
    assert checkpoint(db, t, "verified")["seq"] == 10
    seed(db, t, [NOW] * 3)
    again = audit.verify_tenant(db, t)
    assert (again["ok"], again["mode"], again["from_seq"], again["checked"], again["head_seq"]) == (
        True, "incremental", 10, 3, 13)
    assert again["verified_seq"] == checkpoint(db, t, "verified")["seq"] == 13
    full = audit.verify_tenant(db, t, full=True)
    assert (full["ok"], full["from_seq"], full["checked"], full["checkpoint"]) == (
        True, 0, 13, {"seq": 13, "ok": True})


def _swap(db, tenant_id, a: int, b: int) -> None:
    with db.transaction() as cur:
        for old, new in ((a, -1), (b, a), (-1, b)):
            cur.execute("UPDATE audit_log SET seq = %s WHERE tenant_id = %s AND seq = %s",
                        (new, tenant_id, old))


TAMPERS = {  # rows 6..10 were appended after the checkpoint at 5
    "edited": (lambda db, t: sql(db, "UPDATE audit_log SET outcome = 'denied' WHERE tenant_id = %s"
                                     " AND seq = 7", (t,)), 7, []),
    "deleted": (lambda db, t: sql(db, "DELETE FROM audit_log WHERE tenant_id = %s AND seq = 8", (t,)),
                8, [[8, 8]]),
    "reordered": (lambda db, t: _swap(db, t, 6, 7), 6, []),
    "tail_deleted": (lambda db, t: sql(db, "DELETE FROM audit_log WHERE tenant_id = %s AND seq >= 9",
                                       (t,)), 9, [[9, 10]]),
}


@pytest.mark.parametrize("case", list(TAMPERS))
def test_incremental_verify_names_the_first_bad_seq_and_keeps_reporting_it(db, case):
    """Given a chain checkpointed at 5 and 5 rows appended since, when one of those is edited,
    deleted, or two are swapped, then incremental verify reports the first bad seq (and the
    gap), the checkpoint stops just before it, and the next run reports the same break; an
    untouched twin tenant (control) verifies."""
    t, twin = bare_tenant(db), bare_tenant(db, "twin")
    for tenant in (t, twin):
        seed(db, tenant, days_ago(5, 4, 3, 2, 1))
        assert audit.verify_tenant(db, tenant)["verified_seq"] == 5
        seed(db, tenant, [NOW] * 5)
    tamper, first_bad, gaps = TAMPERS[case]
    tamper(db, t)
    for start in (5, first_bad - 1):  # the first run checkpoints the good rows before the break
        report = audit.verify_tenant(db, t)
        assert (report["ok"], report["first_bad_seq"], report["gaps"], report["from_seq"]) == (
            False, first_bad, gaps, start)
        assert checkpoint(db, t, "verified")["seq"] == report["verified_seq"] == first_bad - 1
    control = audit.verify_tenant(db, twin)
    assert (control["ok"], control["checked"], control["verified_seq"]) == (True, 5, 10)


def test_full_verify_catches_an_edit_behind_the_checkpoint_and_a_reforged_chain(db):
    """Given a chain verified up to its head (checkpoint at 6)
    When row 3 is edited, then incremental verify (which trusts the checked prefix) looks at
    no row, while --full names seq 3.
    When instead every row is re-linked from row 3 and the head moved to match (an attacker
    who knows the algorithm), then the links all verify and --full fails only at the
    checkpoint (the one part that failed), whose recorded hash the forged row 6 no longer
    carries."""
    t = bare_tenant(db)
    seed(db, t, days_ago(6, 5, 4, 3, 2, 1))
    assert audit.verify_tenant(db, t)["verified_seq"] == 6
    sql(db, "UPDATE audit_log SET count = 99 WHERE tenant_id = %s AND seq = 3", (t,))
    assert audit.verify_tenant(db, t)["checked"] == 0
    full = audit.verify_tenant(db, t, full=True)
    assert (full["ok"], full["first_bad_seq"]) == (False, 3)

    with db.connection() as conn:
        rows = conn.execute("SELECT * FROM audit_log WHERE tenant_id = %s ORDER BY seq", (t,)).fetchall()
    prev = bytes(rows[1]["row_hash"])
    with db.transaction() as cur:
        for row in rows[2:]:
            new = row_hash(prev, row)
            cur.execute("UPDATE audit_log SET prev_hash = %s, row_hash = %s WHERE tenant_id = %s"
                        " AND seq = %s", (prev, new, t, row["seq"]))
            prev = new
        cur.execute("UPDATE audit_heads SET row_hash = %s WHERE tenant_id = %s", (prev, t))
    forged = audit.verify(db, t)  # the forged chain links up: only the checkpoint is off
    assert (forged["ok"], forged["failed"]) == (False, ["checkpoint"]), forged
    full = audit.verify_tenant(db, t, full=True)
    assert (full["ok"], full["first_bad_seq"], full["checkpoint"]) == (False, 6, {"seq": 6, "ok": False})


def test_verify_in_bounded_batches_resumes_from_its_checkpoint(db):
    """Given 10 rows, batches of 3 and a budget of one batch per run, when verify runs until
    complete, then each run checks 3 rows more (complete false until the end), the
    checkpoint advances 3, 6, 9, 10, and the last run compares with the head."""
    t = bare_tenant(db)
    seed(db, t, days_ago(*range(10, 0, -1)))
    progress = []
    for _ in range(4):
        budget = iter([False])
        r = audit.verify_tenant(db, t, batch=3, keep_going=lambda: next(budget))
        progress.append((r["ok"], r["checked"], r["complete"], r["verified_seq"]))
    assert progress == [(True, 3, False, 3), (True, 3, False, 6), (True, 3, False, 9), (True, 1, True, 10)]


def test_verify_ignores_a_concurrent_checkpoint_moving_backwards(db):
    """The verified checkpoint only moves forward: an older verification finishing late does
    not pull it back."""
    t = bare_tenant(db)
    seed(db, t, days_ago(3, 2, 1))
    assert audit.verify_tenant(db, t)["verified_seq"] == 3
    with db.connection() as conn:
        conn.execute("INSERT INTO audit_checkpoints (tenant_id, kind, seq, row_hash) VALUES"
                     " (%s, 'verified', 1, '\\x00') ON CONFLICT (tenant_id, kind) DO UPDATE"
                     " SET seq = EXCLUDED.seq WHERE audit_checkpoints.seq < EXCLUDED.seq", (t,))
    assert checkpoint(db, t, "verified")["seq"] == 3


# --------------------------------------------------------------------------------------
# retention
# --------------------------------------------------------------------------------------


def test_prune_with_a_7_day_setting_still_keeps_90_days_and_the_chain_verifies(db, client, make_tenant):
    """Given entries 200, 150, 100, 91, 89, 30 and 1 days old
    When pruned with a 7-day retention
    Then the window is raised to 90 (the report says so), the four entries older than 90
    days are gone and the 89-day one (control) stays; the pruned checkpoint holds seq 4 and
    its hash; full and incremental verification (and the API's) are ok; the prune itself
    is in the chain."""
    t = bare_tenant(db)
    seed(db, t, days_ago(200, 150, 100, 91, 89, 30, 1))
    with db.connection() as conn:
        fourth = bytes(conn.execute("SELECT row_hash FROM audit_log WHERE tenant_id = %s AND seq = 4",
                                    (t,)).fetchone()["row_hash"])
    report = audit.prune(db, t, retention_days=7, now=NOW)
    assert (report["ok"], report["retention_days"], report["requested_days"], report["floored"]) == (
        True, 90, 7, True)
    assert (report["pruned"], report["pruned_to_seq"], report["complete"]) == (4, 4, True)
    assert seqs(db, t) == [5, 6, 7, 8]  # 8: the audit.prune entry
    cp = checkpoint(db, t, "pruned")
    assert (cp["seq"], bytes(cp["row_hash"])) == (4, fourth)
    with db.connection() as conn:
        last = conn.execute("SELECT operation, action, count FROM audit_log WHERE tenant_id = %s"
                            " AND seq = 8", (t,)).fetchone()
    assert last == {"operation": "audit.prune", "action": "delete", "count": 4}
    check = audit.verify(db, t)
    assert {k: check[k] for k in ("ok", "failed", "checked", "first_bad_seq", "gaps", "head_seq")} == {
        "ok": True, "failed": [], "checked": 4, "first_bad_seq": None, "gaps": [], "head_seq": 8}
    inc = audit.verify_tenant(db, t)  # the prune verified up to 7 before it pruned
    assert (inc["ok"], inc["from_seq"], inc["checked"]) == (True, 7, 1)
    assert audit.verify_tenant(db, t, full=True)["ok"] is True

    again = audit.prune(db, t, retention_days=7, now=NOW)  # idempotent
    assert (again["ok"], again["pruned"]) == (True, 0)


def test_prune_after_prune_deletes_only_the_next_prefix_and_a_break_after_prune_is_found(db):
    """Given a chain pruned once, when 31 days pass and it is pruned again,
    then only entries that crossed the window go and it still verifies; an edit after the
    checkpoint is then reported by seq."""
    t = bare_tenant(db)
    seed(db, t, days_ago(120, 100, 80, 60, 40, 20))
    assert audit.prune(db, t, retention_days=90, now=NOW)["pruned"] == 2
    second = audit.prune(db, t, retention_days=90, now=NOW + timedelta(days=31))
    assert (second["ok"], second["pruned"], second["pruned_to_seq"]) == (True, 2, 4)
    assert seqs(db, t)[0] == 5 and audit.verify(db, t)["ok"]
    sql(db, "UPDATE audit_log SET outcome = 'x' WHERE tenant_id = %s AND seq = 6", (t,))
    assert audit.verify(db, t)["first_bad_seq"] == 6


def test_prune_leaves_a_broken_chain_whole(db):
    """Given old entries with a break (row 2 edited), when pruned, then the report is not ok,
    names the break, and nothing is deleted; the untampered twin (control) is pruned."""
    t, twin = bare_tenant(db), bare_tenant(db, "twin")
    for tenant in (t, twin):
        seed(db, tenant, days_ago(300, 200, 100, 1))
    sql(db, "UPDATE audit_log SET count = 7 WHERE tenant_id = %s AND seq = 2", (t,))
    report = audit.prune(db, t, retention_days=90, now=NOW)
    assert (report["ok"], report["pruned"], report["verify"]["first_bad_seq"]) == (False, 0, 2)
    assert seqs(db, t) == [1, 2, 3, 4] and checkpoint(db, t, "pruned") is None
    assert audit.prune(db, twin, retention_days=90, now=NOW)["pruned"] == 3


def test_prune_dry_run_reports_and_deletes_nothing(db):
    t = bare_tenant(db)
    seed(db, t, days_ago(300, 200, 100, 1))
    dry = audit.prune(db, t, retention_days=90, now=NOW, dry_run=True)
    assert (dry["ok"], dry["dry_run"], dry["pruned"], dry["pruned_to_seq"]) == (True, True, 3, 3)
    assert seqs(db, t) == [1, 2, 3, 4] and checkpoint(db, t, "pruned") is None
    assert audit.prune(db, t, retention_days=90, now=NOW)["pruned"] == 3  # control: the real one


def test_prune_in_bounded_batches_resumes(db):
    """Given 10 old entries, batches of 3 and a budget of one batch per run, then each run
    prunes a consistent prefix (the chain verifies after every run) until all 10 are gone."""
    t = bare_tenant(db)
    seed(db, t, days_ago(*range(200, 190, -1)) + days_ago(1))
    done = []
    for _ in range(4):
        budget = iter([False])
        r = audit.prune(db, t, retention_days=90, now=NOW, batch=3, keep_going=lambda: next(budget, False))
        done.append((r["pruned"], r["complete"]))
        assert audit.verify(db, t)["ok"]
    assert done[:3] == [(3, False), (3, False), (3, False)] and done[3] == (1, True)
    assert checkpoint(db, t, "pruned")["seq"] == 10


def test_two_prunes_at_once_delete_each_row_once(db):
    """Given 60 old entries, when two prunes run at once in batches of 5, then together they
    pruned exactly 60, both report ok, and the chain verifies from the checkpoint."""
    t = bare_tenant(db)
    seed(db, t, days_ago(*[200 - i / 10 for i in range(60)]) + days_ago(1))
    start, results = threading.Barrier(2), []

    def work():
        start.wait()
        results.append(audit.prune(db, t, retention_days=90, now=NOW, batch=5))

    threads = [threading.Thread(target=work) for _ in range(2)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(60)
    assert all(r["ok"] for r in results) and sum(r["pruned"] for r in results) == 60
    assert checkpoint(db, t, "pruned")["seq"] == 60
    assert audit.verify(db, t)["ok"]


# --------------------------------------------------------------------------------------
# CLI
# --------------------------------------------------------------------------------------


def test_cli_prune_floors_the_setting_and_verify_then_exits_zero(db):
    """Given STRATA_AUDIT_RETENTION_DAYS=7 and entries 200 and 10 days old, when `strata audit
    prune` runs, then it reports the 90-day floor and prunes only the old entry; `strata audit
    verify` then exits 0 over every retained row, and after an edit behind its own checkpoint
    exits 1."""
    t = bare_tenant(db)
    seed(db, t, days_ago(200, 10))
    code, out = cli(db, "audit", "prune", "--dry-run", STRATA_AUDIT_RETENTION_DAYS="7")
    assert (code, out["tenants"][0]["pruned"]) == (0, 1) and seqs(db, t) == [1, 2]
    code, out = cli(db, "audit", "prune", STRATA_AUDIT_RETENTION_DAYS="7")
    [r] = out["tenants"]
    assert (code, out["ok"], r["tenant"], r["retention_days"], r["floored"], r["pruned"]) == (
        0, True, "acme", 90, True, 1)
    code, out = cli(db, "audit", "verify")  # every retained row: the kept one and the prune entry
    assert (code, out["ok"], out["tenants"][0]["covered"]) == (0, True, ["seq 2..3"])
    sql(db, "UPDATE audit_log SET outcome = 'x' WHERE tenant_id = %s AND seq = 2", (t,))
    code, out = cli(db, "audit", "verify")
    assert (code, out["ok"], out["tenants"][0]["first_bad_seq"]) == (1, False, 2)


# --------------------------------------------------------------------------------------
# digests, as `strata dev` publishes them
# --------------------------------------------------------------------------------------


def test_a_tenant_made_after_the_server_started_is_anchored_within_the_interval(db, settings, tmp_path):
    """Given `strata dev`'s digest loop running (its interval shortened from a minute), when
    a tenant that did not exist at its start gets its first entries, then its first digest is
    published by the next round, holding its head; a round with nothing new publishes
    nothing more (control: the loop is not simply writing a digest every round)."""
    import time

    from strata.cli.main import _publish_digests_every

    settings = settings.model_copy(update={"home": tmp_path, "audit_digest_interval_minutes": 0.005})
    digests = audit.digests.from_settings(settings)
    stop = _publish_digests_every(db, settings)
    try:
        time.sleep(0.5)  # the loop's first round has run over an empty database
        t = bare_tenant(db, "late")
        assert digests.store.names(t) == []
        seed(db, t, days_ago(0.2, 0.1))
        deadline = time.monotonic() + 30
        while not digests.store.names(t) and time.monotonic() < deadline:
            time.sleep(0.1)
        [name] = digests.store.names(t)
        assert digests.read(name).head_seq == 2
        time.sleep(1.0)  # several rounds, nothing appended
        assert digests.store.names(t) == [name]
    finally:
        stop.set()
