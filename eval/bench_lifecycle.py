"""Maintenance benchmark: a lifecycle pass over a tenant's memories, and audit verification
(full, then incremental) and pruning over a long audit chain.

Starts an embedded PostgreSQL in a temporary directory (or uses STRATA_DATABASE_URL), seeds
memories with INSERT ... SELECT (a realistic mix: due for archival, pinned, recent,
short-term expired and in use, stale candidates) and audit rows whose chain hashes are
computed by the real ``row_hash`` and loaded with binary COPY, then times the core functions
the CLI and the scheduled Lambdas call. Prints one JSON object.
Usage: python eval/bench_lifecycle.py [--memories 100000] [--rows 1000000]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import uuid
from datetime import UTC, datetime, timedelta

from strata.audit import prune, verify_tenant
from strata.audit.chain import GENESIS, row_hash
from strata.auth import create_tenant
from strata.maintenance.lifecycle import run_lifecycle

from harness import scratch_database, timed

# share of the memories, and what a pass does with them
MIX = (
    ("old_weak", 0.40),  # long-term, 400 days old, importance 0.1: archived
    ("old_pinned", 0.10),  # as old and weak, pinned: selected by age, kept
    ("recent", 0.30),  # 10 days old: outside the archival selection
    ("short_expired", 0.10),  # short-term past expiry: expired (archived)
    ("short_used", 0.05),  # short-term, used 5 times: promoted
    ("stale_candidate", 0.05),  # candidate pending 60 days: rejected
)

_SEED_MEMORIES = """
WITH m AS (
    INSERT INTO memories (tenant_id, path, content, canonical, value_hash, kind, status,
                          importance, pinned, tier, expires_at, created_at)
    SELECT %(tenant)s, 'users.bench', 'bench memory ' || %(label)s || ' ' || g,
           'bench memory ' || %(label)s || ' ' || g,
           sha256(('bench memory ' || %(label)s || ' ' || g)::bytea), 'fact',
           %(status)s::memory_status, %(importance)s, %(pinned)s, %(tier)s::memory_tier,
           CASE WHEN %(tier)s = 'short_term'
                THEN %(now)s::timestamptz + %(expires_in)s * interval '1 day' END,
           %(now)s::timestamptz - %(age)s * interval '1 day' - g * interval '1 second'
    FROM generate_series(1, %(n)s) g
    RETURNING id, tenant_id
)
INSERT INTO memory_access (memory_id, tenant_id, access_count, last_accessed_at)
SELECT id, tenant_id, %(uses)s, %(now)s FROM m WHERE %(uses)s > 0
"""

KINDS = {
    "old_weak": dict(status="active", importance=0.1, pinned=False, uses=0, tier="long_term", age=400),
    "old_pinned": dict(status="active", importance=0.1, pinned=True, uses=0, tier="long_term", age=400),
    "recent": dict(status="active", importance=0.5, pinned=False, uses=0, tier="long_term", age=10),
    "short_expired": dict(status="active", importance=0.5, pinned=False, uses=0, tier="short_term",
                          age=3, expires_in=-1),
    "short_used": dict(status="active", importance=0.5, pinned=False, uses=5, tier="short_term",
                       age=3, expires_in=5),
    "stale_candidate": dict(status="candidate", importance=0.5, pinned=False, uses=0,
                            tier="long_term", age=60),
}


def seed_memories(db, tenant_id: uuid.UUID, total: int, now: datetime) -> dict[str, int]:
    counts = {}
    with db.transaction() as cur:
        for name, share in MIX:
            n = int(total * share)
            cur.execute(_SEED_MEMORIES, {"tenant": tenant_id, "n": n, "now": now, "expires_in": 0,
                                         "label": name, **KINDS[name]})
            counts[name] = n
        cur.execute("ANALYZE memories")
    return counts


_AUDIT_COLUMNS = ("tenant_id", "seq", "at", "action", "surface", "operation", "principal_id",
                  "key_id", "memory_ids", "count", "query_len", "outcome", "prev_hash", "row_hash")
_AUDIT_TYPES = ("uuid", "int8", "timestamptz", "text", "text", "text", "uuid", "uuid", "uuid[]",
                "int4", "int4", "text", "bytea", "bytea")


def seed_audit(db, tenant_id: uuid.UUID, rows: int, now: datetime, span_days: int) -> None:
    """A chain of ``rows`` entries spread evenly over ``span_days`` up to ``now``, linked with
    the real row_hash, appended to the tenant's chain (after any existing rows)."""
    principal = uuid.uuid4()
    step = timedelta(days=span_days) / rows
    start = now - timedelta(days=span_days)
    with db.connection() as conn:
        head = conn.execute("SELECT seq, row_hash FROM audit_heads WHERE tenant_id = %s",
                            (tenant_id,)).fetchone()
        first, prev = (head["seq"], bytes(head["row_hash"])) if head else (0, GENESIS)
        with conn.transaction(), conn.cursor() as cur:
            with cur.copy(f"COPY audit_log ({', '.join(_AUDIT_COLUMNS)}) FROM STDIN (FORMAT BINARY)") as copy:
                copy.set_types(_AUDIT_TYPES)
                for i in range(1, rows + 1):
                    row = {"tenant_id": tenant_id, "seq": first + i, "at": start + step * i,
                           "action": "read", "surface": "http", "operation": "memory.search",
                           "principal_id": principal, "key_id": None,
                           "memory_ids": [uuid.UUID(int=i)] if i % 2 else [], "count": i % 10,
                           "query_len": 24, "outcome": "ok", "prev_hash": prev}
                    row["row_hash"] = row_hash(prev, row)
                    copy.write_row([row[c] for c in _AUDIT_COLUMNS])
                    prev = row["row_hash"]
            cur.execute("INSERT INTO audit_heads (tenant_id, seq, row_hash) VALUES (%s, %s, %s)"
                        " ON CONFLICT (tenant_id) DO UPDATE SET seq = EXCLUDED.seq,"
                        " row_hash = EXCLUDED.row_hash", (tenant_id, first + rows, prev))
        conn.execute("ANALYZE audit_log")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--memories", type=int, default=100_000)
    parser.add_argument("--rows", type=int, default=1_000_000, help="audit rows to verify")
    args = parser.parse_args()
    now = datetime.now(UTC)
    with scratch_database() as (db, settings):
        report = run(db, settings, args, now)
    print(json.dumps(report, indent=2))


def run(db, settings, args, now: datetime) -> dict:
    tenant, _ = create_tenant(db, "bench")
    mix = seed_memories(db, tenant.id, args.memories, now)
    dry, dry_s = timed(lambda: run_lifecycle(db, tenant_id=tenant.id, now=now, dry_run=True,
                                             settings=settings))
    real, real_s = timed(lambda: run_lifecycle(db, tenant_id=tenant.id, now=now, settings=settings))
    assert real["ok"] and real["totals"] == dry["totals"], (dry["totals"], real["totals"])
    changed = sum(real["totals"].values())

    with db.transaction() as cur:  # no tenant.create entry: the chain is a year of seeded rows
        chain = cur.execute("INSERT INTO tenants (name) VALUES ('chain') RETURNING id").fetchone()["id"]
    _, seed_s = timed(lambda: seed_audit(db, chain, args.rows, now, span_days=365))
    full, full_s = timed(lambda: verify_tenant(db, chain, full=True))
    assert full["ok"] and full["checked"] == args.rows, full
    seed_audit(db, chain, 1000, now + timedelta(seconds=1), span_days=0)
    inc, inc_s = timed(lambda: verify_tenant(db, chain))
    assert inc["ok"] and inc["checked"] == 1000, inc
    pruned, prune_s = timed(lambda: prune(db, chain, retention_days=90, now=now))
    assert pruned["ok"] and pruned["pruned"] > 0, pruned

    return {
        "benchmark": "bench_lifecycle",
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
        "lifecycle": {
            "memories": sum(mix.values()), "mix": mix,
            "dry_run_s": round(dry_s, 2), "run_s": round(real_s, 2),
            "changed": real["totals"], "batch_size": settings.lifecycle_batch_size,
            "memories_per_s": round(sum(mix.values()) / real_s),
            "changed_per_s": round(changed / real_s),
            "us_per_changed_row": round(real_s / changed * 1e6, 1),
        },
        "audit": {
            "rows": args.rows, "seed_s": round(seed_s, 1),
            "verify_full_s": round(full_s, 2),
            "verify_rows_per_s": round(full["checked"] / full_s),
            "verify_us_per_row": round(full_s / full["checked"] * 1e6, 2),
            "verify_incremental_1000_rows_ms": round(inc_s * 1000, 1),
            "prune": {"retention_days": 90, "pruned": pruned["pruned"], "s": round(prune_s, 2),
                      "rows_per_s": round(pruned["pruned"] / prune_s),
                      "note": "rows older than 90 of 365 days; includes its incremental"
                              " verification (no new rows)"},
        },
    }


if __name__ == "__main__":
    main()
