"""The lifecycle job on a real PostgreSQL with a controllable clock: every rule with its
control, dry runs, history causes, bounded resumable batches, concurrency, and that decay
never reaches search ranking."""

from __future__ import annotations

import json
import math
import os
import random
import subprocess
import sys
import threading
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from strata import audit
from strata.foundation.config import Settings
from strata.foundation.errors import VersionConflict
from strata.maintenance.lifecycle import run_lifecycle
from strata.memories import CreateRequest, MemoryPatch, create_memories, restore, update_memory
from strata.search.hybrid import AccessLog, SearchRequest, search
from strata.write import bookkeeping
from strata.write import decay
from strata.write.canonical import canonicalize, value_hash

NOW = datetime.now(UTC).replace(microsecond=0)
STRATA = [sys.executable, "-m", "strata.cli"]
WORDS = ("amber basalt cobalt dune ember fjord glacier harbor iris juniper kelp lagoon meadow "
         "nebula orchid prairie quartz reef sierra tundra umber valley willow yarrow zephyr").split()


def settings(**overrides) -> Settings:
    return Settings(embedding_dim=384, home=Path("/nonexistent-strata-home"), **overrides)


def words(n: int, seed: int) -> str:
    rng = random.Random(seed)
    return " ".join(rng.sample(WORDS, n))


def make(db, caller, embedder, *contents: str, path: str = "users.alice") -> list[uuid.UUID]:
    req = CreateRequest(memories=[{"content": c, "path": path} for c in contents])
    results = create_memories(db, caller, req, embedder)
    assert [r.status for r in results] == ["inserted"] * len(contents), results
    return [r.id for r in results]


def age(db, memory_id, *, created_days: float, **columns) -> None:
    """Set a memory's clock-dependent columns relative to NOW (created_at, and e.g.
    expires_at as ``expires_days``), and its use by search (``access_count``, and
    last_accessed_at as ``accessed_days``: memory_access, as search's bookkeeping writes it)."""
    sets = {"created_at": NOW - timedelta(days=created_days)}
    used = {"n": columns.pop("access_count", 0), "at": None}
    if "accessed_days" in columns:
        used["at"] = NOW - timedelta(days=columns.pop("accessed_days"))
    if "expires_days" in columns:
        sets["expires_at"] = NOW + timedelta(days=columns.pop("expires_days"))
    sets |= columns
    assignments = ", ".join(f"{k} = %({k})s" for k in sets)
    with db.transaction(cause="test.setup") as cur:
        cur.execute(f"UPDATE memories SET {assignments} WHERE id = %(id)s", {**sets, "id": memory_id})
        if used["n"]:
            cur.execute("INSERT INTO memory_access (memory_id, tenant_id, access_count,"
                        " last_accessed_at) SELECT id, tenant_id, %(n)s, coalesce(%(at)s, now())"
                        " FROM memories WHERE id = %(id)s", {**used, "id": memory_id})


def row(db, memory_id) -> dict | None:
    with db.connection() as conn:
        return conn.execute("SELECT status::text AS status, tier::text AS tier, expires_at, version,"
                            " importance, pinned FROM memories WHERE id = %s", (memory_id,)).fetchone()


def lifecycle_history(db, memory_id) -> list[dict]:
    with db.connection() as conn:
        return conn.execute(
            "SELECT operation, cause, actor, operation_id, version FROM memory_history"
            " WHERE memory_id = %s AND cause LIKE 'lifecycle.%%' ORDER BY id", (memory_id,)).fetchall()


def run(db, **kw) -> dict:
    kw.setdefault("settings", settings())
    kw.setdefault("now", NOW)
    report = run_lifecycle(db, **kw)
    assert report["ok"], report
    return report


# --------------------------------------------------------------------------------------
# strength
# --------------------------------------------------------------------------------------


def test_strength_formula_kind_importance_and_use():
    """strength = importance * e^(-lambda_eff * days) * (1 + 0.2 * uses), lambda by kind per
    30 days, slowed by importance."""
    t0 = datetime(2026, 1, 1, tzinfo=UTC)

    def s(kind="fact", importance=0.5, uses=0, days=90.0):
        return decay.strength(kind=kind, importance=importance, access_count=uses,
                              last_used=t0, now=t0 + timedelta(days=days))

    assert s(days=0) == 0.5
    assert math.isclose(s(), 0.5 * math.exp(-0.16 / 30 * (1 - 0.4) * 90))
    assert s(kind="failure") < s(kind="assumption") < s(kind="fact") < s(kind="strategy") < s(kind="preference")
    # importance slows decay: relative to its start, an important memory keeps more
    assert s(importance=0.9) / 0.9 > s(importance=0.1) / 0.1
    assert math.isclose(s(uses=5), 2 * s())
    assert s(days=-3) == 0.5  # a use after "now" (clock skew) does not lift above the start


def test_strength_in_sql_matches_the_python_formula(db, tenant, caller_for, embedder):
    """The SQL expression the archival job filters on equals decay.strength on a grid of
    kinds, importances, ages and uses."""
    caller = caller_for(tenant.key)
    grid = [(k, imp, days, uses) for k in ("fact", "failure", "preference", "event")
            for imp in (0.0, 0.3, 0.79) for days in (0, 45.5, 400) for uses in (0, 7)]
    ids = make(db, caller, embedder, *[words(6, i) for i in range(len(grid))])
    for mid, (kind, imp, days, uses) in zip(ids, grid):
        age(db, mid, created_days=days + 1, accessed_days=days, kind=kind, importance=imp,
            access_count=uses)
    with db.connection() as conn:
        got = conn.execute(f"SELECT m.id, {decay.strength_sql('m')} AS s, m.importance, m.kind::text"
                           f" AS kind, {bookkeeping.count_sql('m')} AS access_count,"
                           f" {bookkeeping.last_sql('m')} AS last_accessed_at, m.created_at"
                           " FROM memories m"
                           " WHERE m.id = ANY(%(ids)s)", {**decay.sql_params(NOW), "ids": ids}).fetchall()
    assert len(got) == len(grid)
    for r in got:
        want = decay.strength(kind=r["kind"], importance=r["importance"], access_count=r["access_count"],
                              last_used=r["last_accessed_at"] or r["created_at"], now=NOW)
        # importance is a real (float4) column: SQL widens 0.3 to 0.30000001..., Python reads 0.3
        assert math.isclose(r["s"], want, rel_tol=1e-6), r


# --------------------------------------------------------------------------------------
# archival
# --------------------------------------------------------------------------------------


def test_weak_old_memory_is_archived_and_pinned_recent_young_twins_stay(db, tenant, caller_for, embedder):
    """Given five memories of importance 0.3, never used, created 400 days ago -- one plain,
    one pinned, one used 2 days ago, one short-term (lives by its expiry) -- and one of
    importance 0.05 created 60 days ago (younger than 90), all of which but the recently
    used have a strength below the threshold
    When the lifecycle runs
    Then only the plain one is archived, with history cause lifecycle.archive, actor
    system:lifecycle, the run id as operation id and a version bump; the others stay active
    and untouched."""
    caller = caller_for(tenant.key)
    plain, pinned, used, young, short = make(db, caller, embedder, *[words(6, i) for i in range(5)])
    for mid in (plain, pinned, used, short):
        age(db, mid, created_days=400, importance=0.3)
    age(db, pinned, created_days=400, pinned=True)
    age(db, used, created_days=400, accessed_days=2, access_count=1)
    age(db, young, created_days=60, importance=0.05)
    age(db, short, created_days=400, tier="short_term", expires_days=30)
    threshold = settings().lifecycle_archive_threshold
    for importance, days in ((0.3, 400), (0.05, 60)):  # exclusions are not about strength
        assert decay.strength(kind="fact", importance=importance, access_count=0,
                              last_used=NOW - timedelta(days=days), now=NOW) < threshold
    before = {m: row(db, m)["version"] for m in (plain, pinned, used, young, short)}

    report = run(db)
    assert report["totals"]["archived"] == 1
    assert row(db, plain)["status"] == "archived" and row(db, plain)["version"] == before[plain] + 1
    [h] = lifecycle_history(db, plain)
    assert (h["cause"], h["actor"], str(h["operation_id"]), h["version"]) == (
        "lifecycle.archive", "system:lifecycle", report["run_id"], before[plain])
    for m in (pinned, used, young, short):
        assert (row(db, m)["status"], row(db, m)["version"]) == ("active", before[m])
        assert lifecycle_history(db, m) == []


def test_importance_at_08_exempts_from_archival(db, tenant, caller_for, embedder):
    """Given a threshold so high that every non-exempt old memory is archived, when the
    lifecycle runs, then importance 0.85 stays active while its 0.79 twin is archived."""
    caller = caller_for(tenant.key)
    high, low = make(db, caller, embedder, words(6, 1), words(6, 2))
    age(db, high, created_days=200, importance=0.85)
    age(db, low, created_days=200, importance=0.79)
    run(db, settings=settings(lifecycle_archive_threshold=0.99))
    assert (row(db, high)["status"], row(db, low)["status"]) == ("active", "archived")


def test_archived_memory_leaves_search_and_is_restorable(db, tenant, caller_for, embedder):
    """Given a weak old memory found by search, when it is archived, then search no longer
    returns it (its active neighbour still is: control) and restoring its pre-archive version
    brings it back into search with the same id."""
    caller = caller_for(tenant.key)
    weak, other = make(db, caller, embedder, "The quokka observatory opens at dawn",
                       "The quokka sanctuary feeds at noon")
    age(db, weak, created_days=400, importance=0.2)
    req = SearchRequest(query="quokka observatory dawn")
    found = lambda: [r.id for r in search(db, caller, req, embedder, access_log=AccessLog(autostart=False))]  # noqa: E731
    assert weak in found()
    version = row(db, weak)["version"]
    run(db)
    assert weak not in found() and other in found()
    restored = restore(db, caller, weak, embedder, version=version)
    assert (restored.id, restored.status) == (weak, "active")
    assert weak in found()


# --------------------------------------------------------------------------------------
# short-term expiry and promotion
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["archive", "delete"])
def test_short_term_expiry_and_promotion(db, tenant, caller_for, embedder, mode):
    """Given four short-term memories: one past expires_at, one not yet (control), one past
    expiry but used 3 times, one past expiry and pinned
    When the lifecycle runs (expiry by archive, or by delete)
    Then the expired one is archived (or deleted, its last state in history with cause
    lifecycle.expire, and restorable); the unexpired stays short-term and active; the used
    and the pinned ones are promoted -- same id, tier long_term, expiry cleared, active."""
    caller = caller_for(tenant.key)
    expired, fresh, used, pinned = make(db, caller, embedder, *[words(6, 10 + i) for i in range(4)])
    for mid, exp in ((expired, -1), (fresh, 2), (used, -1), (pinned, -1)):
        age(db, mid, created_days=5, tier="short_term", expires_days=exp)
    age(db, used, created_days=5, access_count=3)
    age(db, pinned, created_days=5, pinned=True)

    report = run(db, settings=settings(lifecycle_short_term_expiry=mode))
    assert (report["totals"]["expired"], report["totals"]["promoted"]) == (1, 2)
    if mode == "archive":
        assert (row(db, expired)["status"], row(db, expired)["tier"]) == ("archived", "short_term")
        assert [h["operation"] for h in lifecycle_history(db, expired)] == ["update"]
    else:
        assert row(db, expired) is None
        assert [(h["operation"], h["cause"]) for h in lifecycle_history(db, expired)] == [
            ("delete", "lifecycle.expire")]
        assert restore(db, caller, expired, embedder).id == expired
    assert (row(db, fresh)["status"], row(db, fresh)["tier"]) == ("active", "short_term")
    for mid in (used, pinned):
        r = row(db, mid)
        assert (r["status"], r["tier"], r["expires_at"]) == ("active", "long_term", None)
        assert [h["cause"] for h in lifecycle_history(db, mid)] == ["lifecycle.promote"]


# --------------------------------------------------------------------------------------
# candidates and tombstones
# --------------------------------------------------------------------------------------


def tombstone_count(db, tenant_id) -> int:
    with db.connection() as conn:
        return conn.execute("SELECT count(*) AS n FROM tombstones WHERE tenant_id = %s",
                            (tenant_id,)).fetchone()["n"]


def test_stale_candidates_are_rejected_without_a_tombstone(db, tenant, caller_for, embedder):
    """Given a candidate pending 40 days and one pending 5 days (control), with a 30-day
    limit, when the lifecycle runs, then the old one is rejected (cause
    lifecycle.candidate_expire) and no tombstone is written; the young one stays a candidate."""
    caller = caller_for(tenant.key)
    old, young = make(db, caller, embedder, words(6, 20), words(6, 21))
    age(db, old, created_days=40, status="candidate")
    age(db, young, created_days=5, status="candidate")
    tombs = tombstone_count(db, tenant.tenant_id)
    report = run(db)
    assert report["totals"]["candidates_rejected"] == 1
    assert (row(db, old)["status"], row(db, young)["status"]) == ("rejected", "candidate")
    assert [h["cause"] for h in lifecycle_history(db, old)] == ["lifecycle.candidate_expire"]
    assert tombstone_count(db, tenant.tenant_id) == tombs


def test_tombstone_past_until_is_swept_and_stops_blocking(db, tenant, caller_for, embedder):
    """Given two tombstoned values, one until yesterday and one until next month, when the
    lifecycle runs, then the expired tombstone is deleted and its value can be written again,
    while the other stays and still blocks its value (control)."""
    caller = caller_for(tenant.key)
    gone, kept = "The vault code is amber", "The vault code is cobalt"
    with db.transaction() as cur:
        for content, until in ((gone, NOW - timedelta(days=1)), (kept, NOW + timedelta(days=30))):
            cur.execute("INSERT INTO tombstones (tenant_id, path, value_hash, reason, until)"
                        " VALUES (%s, 'users', %s, 'rejected', %s)",
                        (tenant.tenant_id, value_hash(canonicalize(content)), until))
    report = run(db)
    assert report["totals"]["tombstones_expired"] == 1 and tombstone_count(db, tenant.tenant_id) == 1
    results = create_memories(db, caller, CreateRequest(memories=[
        {"content": gone, "path": "users.alice"}, {"content": kept, "path": "users.bob"}]), embedder)
    assert [r.status for r in results] == ["inserted", "blocked"]


# --------------------------------------------------------------------------------------
# dry run, audit, budget
# --------------------------------------------------------------------------------------


def scenario(db, caller, embedder, tenant_id) -> dict[str, uuid.UUID]:
    """One memory per rule, each due."""
    ids = dict(zip(("archive", "expire", "promote", "candidate"),
                   make(db, caller, embedder, *[words(6, 30 + i) for i in range(4)])))
    age(db, ids["archive"], created_days=400, importance=0.2)
    age(db, ids["expire"], created_days=3, tier="short_term", expires_days=-1)
    age(db, ids["promote"], created_days=3, tier="short_term", expires_days=5, access_count=4)
    age(db, ids["candidate"], created_days=45, status="candidate")
    with db.transaction() as cur:
        cur.execute("INSERT INTO tombstones (tenant_id, path, value_hash, reason, until)"
                    " VALUES (%s, 'users', '\\x01', 'superseded', %s)", (tenant_id, NOW - timedelta(hours=1)))
    return ids


def snapshot(db, tenant_id) -> list:
    with db.connection() as conn:
        return [
            conn.execute("SELECT id, version, status, tier FROM memories WHERE tenant_id = %s"
                         " ORDER BY id", (tenant_id,)).fetchall(),
            conn.execute("SELECT count(*) FROM memory_history WHERE tenant_id = %s", (tenant_id,)).fetchone(),
            conn.execute("SELECT count(*) FROM tombstones WHERE tenant_id = %s", (tenant_id,)).fetchone(),
            conn.execute("SELECT count(*) FROM audit_log WHERE tenant_id = %s", (tenant_id,)).fetchone(),
            conn.execute("SELECT count(*) FROM maintenance_state").fetchone(),
        ]


def test_dry_run_reports_what_a_run_then_does_and_changes_nothing(db, tenant, caller_for, embedder):
    """Given one memory due for each rule and an expired tombstone, when a dry run runs, then
    it reports one of each (with the ids) and memories, history, tombstones, audit and job
    state are exactly as before; the real run then does exactly what was reported."""
    caller = caller_for(tenant.key)
    ids = scenario(db, caller, embedder, tenant.tenant_id)
    before = snapshot(db, tenant.tenant_id)
    dry = run(db, dry_run=True)
    want = {"promoted": 1, "expired": 1, "candidates_rejected": 1, "archived": 1, "tombstones_expired": 1}
    assert {k: dry["totals"][k] for k in want} == want and dry["dry_run"] is True
    sample = dry["tenants"][0]["sample_ids"]
    assert (sample["archived"], sample["expired"], sample["promoted"]) == (
        [str(ids["archive"])], [str(ids["expire"])], [str(ids["promote"])])
    assert snapshot(db, tenant.tenant_id) == before
    real = run(db)
    assert {k: real["totals"][k] for k in want} == want
    assert snapshot(db, tenant.tenant_id) != before  # control: the snapshot sees changes


def test_each_batch_is_audited_and_the_chain_verifies(db, tenant, caller_for, embedder):
    """A run appends one audit entry per batch (action, lifecycle operation, the memory ids,
    count; surface as given) and no content; the chain still verifies."""
    caller = caller_for(tenant.key)
    ids = scenario(db, caller, embedder, tenant.tenant_id)
    run(db, surface="scheduler")
    with db.connection() as conn:
        rows = conn.execute("SELECT operation, action, surface, memory_ids, count FROM audit_log"
                            " WHERE tenant_id = %s AND operation LIKE 'lifecycle.%%' ORDER BY seq",
                            (tenant.tenant_id,)).fetchall()
    assert [(r["operation"], r["action"], r["memory_ids"], r["count"]) for r in rows] == [
        ("lifecycle.promote", "write", [ids["promote"]], 1),
        ("lifecycle.expire", "write", [ids["expire"]], 1),
        ("lifecycle.candidate_expire", "write", [ids["candidate"]], 1),
        ("lifecycle.archive", "write", [ids["archive"]], 1),
        ("lifecycle.tombstone_expire", "delete", [], 1),
    ]
    assert {r["surface"] for r in rows} == {"scheduler"}
    assert audit.verify(db, tenant.tenant_id)["ok"]


def test_a_run_out_of_budget_resumes_where_it_stopped(db, tenant, caller_for, embedder):
    """Given 7 memories due for archival, batches of 2 and a budget of one batch per run,
    when the lifecycle runs repeatedly, then each run archives 2 and reports incomplete until
    the last; each memory is archived exactly once."""
    caller = caller_for(tenant.key)
    ids = make(db, caller, embedder, *[words(6, 40 + i) for i in range(7)])
    for mid in ids:
        age(db, mid, created_days=300, importance=0.1)
    progress = []
    for _ in range(4):
        budget = iter([False])
        report = run(db, settings=settings(lifecycle_batch_size=2), keep_going=lambda: next(budget, False))
        progress.append((report["totals"]["archived"], report["complete"]))
    assert progress == [(2, False), (2, False), (2, False), (1, True)]
    assert all(len(lifecycle_history(db, m)) == 1 for m in ids)


def test_tenants_left_unfinished_come_first_next_time(db, make_tenant, caller_for, embedder):
    """Given two tenants, when a run's budget stops it after the first tenant, then the next
    run starts with the other one."""
    make_tenant("alpha"), make_tenant("beta")
    budget = iter([False])
    first = run(db, keep_going=lambda: next(budget))
    assert ([t["tenant"] for t in first["tenants"]], first["complete"]) == (["alpha"], False)
    second = run(db)
    assert [t["tenant"] for t in second["tenants"]] == ["beta", "alpha"]


# --------------------------------------------------------------------------------------
# history retention
# --------------------------------------------------------------------------------------


def test_history_retention_is_floored_at_90_days_and_forgotten_history_stays_content_free(
    db, tenant, caller_for, embedder
):
    """Given history rows changed 120, 95 and 30 days ago, and a forgotten memory whose
    history is recent
    When the lifecycle runs without a history window, nothing is pruned (control); with a
    7-day window, it is raised to 90 (reported), the 120- and 95-day rows go and the 30-day
    row stays; the forgotten memory's rows stay erased, with no content."""
    from strata.memories import forget

    caller = caller_for(tenant.key)
    kept, secret = make(db, caller, embedder, words(6, 50), "The locker is number 31-7-19")
    for days in (120, 95, 30):
        with db.transaction(cause="test.edit") as cur:
            cur.execute("UPDATE memories SET importance = importance / 2, version = version + 1"
                        " WHERE id = %s", (kept,))
            cur.execute("UPDATE memory_history SET changed_at = %s WHERE id = (SELECT max(id)"
                        " FROM memory_history WHERE memory_id = %s)", (NOW - timedelta(days=days), kept))
    update_memory(db, caller, secret, MemoryPatch(expected_version=1, importance=0.9), embedder)
    forget(db, caller, secret)

    def history_of(mid):
        with db.connection() as conn:
            return conn.execute("SELECT changed_at, erased, row_data FROM memory_history"
                                " WHERE memory_id = %s ORDER BY id", (mid,)).fetchall()

    assert "history_pruned" not in run(db)["tenants"][0] and len(history_of(kept)) == 3
    report = run(db, settings=settings(history_retention_days=7))
    assert report["rules"]["history"] == {"retention_days": 90, "requested_days": 7, "floored": True}
    assert report["totals"]["history_pruned"] == 2
    assert [(NOW - h["changed_at"]).days for h in history_of(kept)] == [30]
    erased = history_of(secret)
    assert erased and all(h["erased"] for h in erased)
    assert "31-7-19" not in json.dumps([h["row_data"] for h in erased])
    assert all("content" not in h["row_data"] for h in erased)


# --------------------------------------------------------------------------------------
# decay never enters ranking
# --------------------------------------------------------------------------------------


def test_decay_does_not_reorder_search(db, tenant, caller_for, embedder):
    """Given three memories matching a query in a known order, where the best match is by far
    the weakest (never used, 80 days old) and the worst the strongest (used 40 times
    yesterday)
    When the lifecycle runs (nothing is old enough to archive)
    Then the search order is exactly what it was, although ordering by strength would
    reverse it (control)."""
    caller = caller_for(tenant.key)
    best, mid, worst = make(db, caller, embedder, "The heron telescope points north at dusk",
                            "The heron telescope needs a new lens", "A heron nests by the lake")
    age(db, best, created_days=80)
    age(db, mid, created_days=80, accessed_days=20, access_count=5)
    age(db, worst, created_days=80, accessed_days=1, access_count=40)
    req = SearchRequest(query="heron telescope north dusk")

    def order():
        return [r.id for r in search(db, caller, req, embedder, now=NOW, access_log=AccessLog(autostart=False))]

    before = order()
    assert before == [best, mid, worst]
    with db.connection() as conn:
        strengths = {r["id"]: r["s"] for r in conn.execute(
            f"SELECT m.id, {decay.strength_sql('m')} AS s FROM memories m WHERE m.id = ANY(%(ids)s)",
            {**decay.sql_params(NOW), "ids": before}).fetchall()}
    assert sorted(before, key=strengths.get) == before  # by strength: weakest first
    report = run(db, now=NOW + timedelta(days=5))
    assert report["totals"]["archived"] == 0
    assert order() == before


# --------------------------------------------------------------------------------------
# concurrency
# --------------------------------------------------------------------------------------


def test_two_runs_at_once_change_each_memory_once_and_lose_no_user_edit(db, tenant, caller_for, embedder):
    """Given 60 memories due for archival and 20 of them being made important (0.95) by a
    user at the same time (compare-and-set, retried on a version conflict)
    When two lifecycle runs (batches of 5) race each other and the user
    Then every memory was changed by the lifecycle at most once (one history row each), the
    runs' counts add up to the archived memories, every user edit is in the final row, no
    memory the user edited before the run saw it was archived from a stale read (each
    archived memory's archive history row shows the importance it had), and every version
    equals 1 + its history rows."""
    caller = caller_for(tenant.key)
    ids = make(db, caller, embedder, *[f"{words(5, 60 + i)} item {i}" for i in range(60)])
    for mid in ids:
        age(db, mid, created_days=300, importance=0.1)
    edited = ids[::3]
    start = threading.Barrier(3)
    reports: list[dict] = []
    s = settings(lifecycle_batch_size=5)

    def lifecycle():
        start.wait()
        reports.append(run_lifecycle(db, settings=s, now=NOW))

    def user():
        start.wait()
        for mid in edited:
            while True:
                version = row(db, mid)["version"]
                try:
                    update_memory(db, caller, mid, MemoryPatch(expected_version=version, importance=0.95),
                                  embedder)
                    break
                except VersionConflict:
                    continue

    threads = [threading.Thread(target=f) for f in (lifecycle, lifecycle, user)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(120)
    assert not any(th.is_alive() for th in threads)
    assert len(reports) == 2 and all(r["ok"] for r in reports)

    archived = [m for m in ids if row(db, m)["status"] == "archived"]
    assert sum(r["totals"]["archived"] for r in reports) == len(archived) >= 60 - len(edited)
    with db.connection() as conn:
        for mid in ids:
            hist = conn.execute("SELECT cause, row_data FROM memory_history WHERE memory_id = %s"
                                " AND cause IS DISTINCT FROM 'test.setup' ORDER BY id", (mid,)).fetchall()
            archives = [h for h in hist if h["cause"] == "lifecycle.archive"]
            assert len(archives) == (mid in archived)
            for h in archives:  # the rule held on the row it changed
                assert h["row_data"]["importance"] < 0.8
            r = row(db, mid)
            assert r["version"] == 1 + len(hist)  # the setup edit moved no version
            if mid in edited:
                assert math.isclose(r["importance"], 0.95, rel_tol=1e-6)
    assert all(row(db, m)["status"] == "active" for m in ids if m not in archived)
    assert all(m in edited for m in ids if m not in archived)


def test_a_row_held_by_a_user_transaction_is_skipped_not_overwritten(db, tenant, caller_for, embedder):
    """Given two memories due for archival, one of them locked by an uncommitted user edit
    that makes it important
    When the lifecycle runs meanwhile
    Then it does not wait, archives the other one (control) and skips the held one; once the
    edit commits, the edit is there and the next run leaves it active."""
    import psycopg

    caller = caller_for(tenant.key)
    held, free = make(db, caller, embedder, words(6, 70), words(6, 71))
    for mid in (held, free):
        age(db, mid, created_days=300, importance=0.1)
    user = psycopg.connect(db.url)
    try:
        user.execute("UPDATE memories SET importance = 0.95, version = version + 1 WHERE id = %s", (held,))
        result: dict = {}
        t = threading.Thread(target=lambda: result.update(run(db)))
        t.start()
        t.join(60)
        assert not t.is_alive(), "the lifecycle waited on a row a user holds"
        assert result["totals"]["archived"] == 1
        assert row(db, free)["status"] == "archived"
        user.commit()
    finally:
        user.close()
    assert (row(db, held)["status"], round(row(db, held)["importance"], 2)) == ("active", 0.95)
    assert run(db)["totals"]["archived"] == 0
    assert row(db, held)["status"] == "active"


# --------------------------------------------------------------------------------------
# CLI
# --------------------------------------------------------------------------------------


def test_cli_lifecycle_run_dry_run_then_run(db, tenant, caller_for, embedder):
    """`strata lifecycle run --tenant acme --dry-run` prints the report and changes nothing;
    without --dry-run it archives, exit 0 both times."""
    caller = caller_for(tenant.key)
    [weak] = make(db, caller, embedder, words(6, 80))
    age(db, weak, created_days=4000, importance=0.05)
    env = {k: v for k, v in os.environ.items() if not k.startswith("STRATA_")}
    env["STRATA_DATABASE_URL"] = db.url
    outs = []
    for extra in (["--dry-run"], []):
        proc = subprocess.run(STRATA + ["lifecycle", "run", "--tenant", "acme", *extra], env=env,
                              capture_output=True, text=True, timeout=60)
        assert proc.returncode == 0, proc.stderr
        outs.append(json.loads(proc.stdout))
        if extra:
            assert row(db, weak)["status"] == "active"
    assert [o["totals"]["archived"] for o in outs] == [1, 1] and outs[0]["dry_run"] is True
    assert row(db, weak)["status"] == "archived"


def test_cli_lifecycle_progress_bar_on_a_terminal_only(db, tenant, caller_for, embedder):
    """The progress bar goes to stderr when it is a terminal (a pty here) and nowhere when
    it is piped; stdout carries the same JSON report either way."""
    import fcntl
    import pty
    import select
    import struct
    import termios

    caller = caller_for(tenant.key)
    make(db, caller, embedder, words(7, 80))
    env = {k: v for k, v in os.environ.items() if not k.startswith("STRATA_")}
    env["STRATA_DATABASE_URL"] = db.url
    cmd = STRATA + ["lifecycle", "run", "--tenant", "acme", "--dry-run"]

    piped = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=60)
    assert piped.returncode == 0, piped.stderr
    assert "lifecycle" not in piped.stderr

    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0))  # 0x0 draws nothing
    drawn = b""
    try:
        proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=slave, text=True)
        while True:  # drain the pty while the command runs (its buffer is small)
            ready, _, _ = select.select([master], [], [], 0.1)
            if ready:
                drawn += os.read(master, 65536)
            elif proc.poll() is not None:
                break
        out = proc.stdout.read()
    finally:
        os.close(slave)
        os.close(master)
    assert proc.returncode == 0
    assert b"lifecycle" in drawn
    assert json.loads(out)["dry_run"] is True
    assert json.loads(piped.stdout)["dry_run"] is True


def test_cli_index_run_builds_a_large_tenants_own_index(db, tenant, caller_for, embedder):
    """`strata index run --min-rows N --dry-run` names the index a tenant of N memories would
    get and builds nothing; without --dry-run it builds it (exit 0 both times), and a second
    run keeps it."""
    from strata.db import vector_index

    caller = caller_for(tenant.key)
    make(db, caller, embedder, words(8, 80), words(9, 80), words(10, 80))
    env = {k: v for k, v in os.environ.items() if not k.startswith("STRATA_")}
    env["STRATA_DATABASE_URL"] = db.url
    name = vector_index.index_name(tenant.tenant_id)

    def index_exists() -> bool:
        with db.connection() as conn:
            return conn.execute("SELECT to_regclass(%s) IS NOT NULL AS ok", (name,)).fetchone()["ok"]

    outs = []
    for extra in (["--dry-run"], [], []):
        proc = subprocess.run(STRATA + ["index", "run", "--min-rows", "3", *extra], env=env,
                              capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, proc.stderr
        outs.append(json.loads(proc.stdout))
        if extra:
            assert not index_exists()
    assert [o["created"] for o in outs] == [[name], [name], []]
    assert outs[2]["kept"] == 1 and index_exists()


def test_build_memory_fits_the_graph_within_bounds():
    """build_memory_kb, over generated sizes: never below the server's own setting, never above
    BUILD_MEMORY_MAX_MB, growing with rows and dimensions; uncapped (``cap_mb=None``) never
    less than capped and equal to it whenever the cap does not bind; a 100,000-row 384-d
    tenant's graph gets more than PostgreSQL's 64 MB default (control: a 1,000-row one keeps
    the default), a 1M-row graph uncapped more than the cap."""
    from hypothesis import given, settings as hsettings, strategies as st

    from strata.db import vector_index as vi

    cap = vi.BUILD_MEMORY_MAX_MB * 1024

    @hsettings(max_examples=300, deadline=None)
    @given(st.integers(0, 5_000_000), st.integers(0, 5_000_000), st.integers(1, 4000),
           st.integers(1024, 4 * cap))
    def check(rows, more, dims, current):
        kb = vi.build_memory_kb(rows, dims, current)
        assert kb >= current and (kb <= cap or kb == current)
        assert vi.build_memory_kb(rows + more, dims, current) >= kb
        assert vi.build_memory_kb(rows, dims + 1, current) >= kb
        free = vi.build_memory_kb(rows, dims, current, cap_mb=None)
        assert free >= kb and (free == kb or kb == max(current, cap))

    check()
    assert vi.build_memory_kb(100_000, 384, 65536) > 65536
    assert vi.build_memory_kb(1_000, 384, 65536) == 65536
    assert vi.build_memory_kb(1_000_000, 384, 65536, cap_mb=None) > cap


def test_an_index_build_asks_for_its_memory_and_gives_it_back(db, tenant, caller_for, embedder,
                                                             monkeypatch):
    """Given a tenant over the per-tenant threshold, whose graph is made to need more than the
    server's maintenance_work_mem (a row is priced at 40 MB)
    When reconcile builds its index
    Then the report names the maintenance_work_mem it was built with (what build_memory_kb
    gives for the tenant's rows, 384 dimensions and the server's setting), the index exists
    and is valid, and every pooled connection afterwards has the server's setting again (the
    build's SET does not leak into search or writes)."""
    from strata.db import vector_index

    caller = caller_for(tenant.key)
    make(db, caller, embedder, words(8, 81), words(9, 81), words(10, 81))
    name = vector_index.index_name(tenant.tenant_id)
    monkeypatch.setattr(vector_index, "BUILD_BYTES_PER_ROW", 40 * 1024 * 1024)
    with db.connection() as conn:
        server_kb = int(conn.execute("SELECT setting FROM pg_settings"
                                     " WHERE name = 'maintenance_work_mem'").fetchone()["setting"])
    report = vector_index.reconcile(db, min_rows=3)
    assert report["created"] == [name], report
    assert report["build_memory_kb"] == {name: vector_index.build_memory_kb(3, 384, server_kb)}
    assert report["build_memory_kb"][name] > server_kb  # control: the build asked for more
    with db.connection() as conn:
        valid = conn.execute("SELECT i.indisvalid FROM pg_index i JOIN pg_class c"
                             " ON c.oid = i.indexrelid WHERE c.relname = %s", (name,)).fetchone()
        assert valid is not None and valid["indisvalid"]
    conns = []
    try:  # every connection of the pool: the build's may be any of them
        for _ in range(db.pool.max_size):
            cm = db.connection()
            conns.append(cm)
            c = cm.__enter__()
            kb = int(c.execute("SELECT setting FROM pg_settings"
                               " WHERE name = 'maintenance_work_mem'").fetchone()["setting"])
            assert kb == server_kb
    finally:
        for cm in reversed(conns):
            cm.__exit__(None, None, None)


def test_events_older_than_their_retention_are_pruned_and_newer_ones_kept(
    db, tenant, caller_for, embedder
):
    """Given a memory edited twice, its events dated 40 and 10 days ago and today's kept
    When the lifecycle runs with the default 30-day event retention, after a dry run
    Then the dry run counts the 40-day events and removes nothing; the run removes exactly
    them, and the newer events stay (the control)."""
    caller = caller_for(tenant.key)
    kept, _ = make(db, caller, embedder, words(6, 50), "The bike is red")
    for _ in range(2):
        with db.transaction(cause="test.edit") as cur:
            cur.execute("UPDATE memories SET importance = importance / 2, version = version + 1"
                        " WHERE id = %s", (kept,))
    with db.connection() as conn:
        ids = [r["id"] for r in conn.execute(
            "SELECT id FROM events WHERE memory_id = %s ORDER BY seq", (kept,)).fetchall()]
        assert len(ids) == 3
        for eid, days in zip(ids, (40, 40, 10)):
            conn.execute("UPDATE events SET at = %s WHERE id = %s", (NOW - timedelta(days=days), eid))

    def left():
        with db.connection() as conn:
            return [r["id"] for r in conn.execute(
                "SELECT id FROM events WHERE tenant_id = %s ORDER BY seq",
                (tenant.tenant_id,)).fetchall()]

    before = left()
    assert set(ids) <= set(before)
    assert run(db, dry_run=True)["totals"]["events_pruned"] >= 2 and left() == before
    report = run(db)
    assert report["totals"]["events_pruned"] >= 2
    assert report["rules"]["event_retention_days"] == 30
    assert ids[2] in left() and not set(ids[:2]) & set(left())
