"""A vector index of its own for every large tenant, so its search never walks another
tenant's graph.

Why. One HNSW index over the whole ``memories`` table holds every tenant's vectors in one
graph. A tenant's search walks that graph and filters by tenant as it goes (pgvector's
iterative scan): the walk crosses other tenants' nodes, and the smaller the tenant's share
of the table, the longer the walk and the lower its recall (a 100k-row tenant of a 1M-row
table: recall@10 0.835 at p95 138 ms; the same rows in an index of their own answer top-10
in ~0.5 ms). Small tenants never had the problem: :mod:`strata.search.hybrid` ranks a scope of at
most a few thousand rows exactly.

What. A partial HNSW index per tenant with at least :data:`MIN_ROWS` memories,
``memories_vec_<tenant hex> ON memories USING hnsw (embedding vector_cosine_ops) WHERE
tenant_id = '<tenant>'``. The planner uses it for a search whose statement says
``tenant_id = <that tenant>`` (search plans every statement for its parameters:
``plan_cache_mode = force_custom_plan``), and the search statement routes a tenant that has
a *valid* one through it (``explain.vector.route = "tenant_index"``). Everything else is as
before: a small scope ranked exactly, a large scope without an index of its own through the
shared HNSW index. Partial indexes were chosen over hash partitions of the table: they need
no change to the table, its keys or its foreign keys, every other statement is unaffected,
and they are built and dropped online.

How they come and go (:func:`reconcile`, run by the lifecycle job, i.e. by the maintenance
schedule on AWS, and by ``strata index``):

- built with ``CREATE INDEX CONCURRENTLY`` (writes go on during the build; nothing is
  locked for its length) for the largest tenants first, at most :data:`MAX_INDEXES` in all
  -- every partial index's predicate is checked when any statement on ``memories`` is
  planned, so their number is kept bounded; tenants beyond it keep the shared index;
- a build interrupted (a Lambda timeout, a lost connection) leaves an invalid index, which
  search never routes to; the next run drops and rebuilds it;
- dropped (``DROP INDEX CONCURRENTLY``) when its tenant is gone or has shrunk below half of
  :data:`MIN_ROWS` (the hysteresis keeps a tenant near the line from flapping).

Migrating an existing store on Aurora without downtime: deploy (the code routes to an index
only once it exists and is valid, so nothing changes), then let the scheduled lifecycle run
(or ``strata index``) build the indexes one tenant at a time, concurrently with traffic. The
shared HNSW index stays: it serves large tenants between crossing :data:`MIN_ROWS` and the
next run. Rolling back is ``DROP INDEX CONCURRENTLY`` of ``memories_vec_*``.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable
from typing import Any

from strata.db import Database

log = logging.getLogger(__name__)

# A tenant with at least this many memories (any status) gets an index of its own. Below it
# the exact route is at most a few ms (eval/bench_search.py: ~1.5 ms for a 1,000-row scope);
# above it an exact scan grows linearly while a tenant's own HNSW walk stays ~1 ms.
MIN_ROWS = 5000
# At most this many per-tenant indexes (the largest tenants first): see the module docstring.
# Each one costs every search's planning ~7 us (101k-row seed: planning p50 1.10 ms with 11
# indexes, 1.70 with 61, 2.46 with 211; docs/guides/operating.md, "Maintenance").
MAX_INDEXES = 200
PREFIX = "memories_vec_"
# Memory for one build. pgvector builds an HNSW graph in maintenance_work_mem and, once the
# graph outgrows it, goes on building on disk, many times slower (PostgreSQL's default is
# 64 MB: a 384-d graph of ~25,000 rows). A build asks for what its tenant's graph needs --
# BUILD_BYTES_PER_ROW plus the vector's 4 bytes a dimension, for every row, with a margin --
# for its own session only, never less than the server's setting and never more than
# BUILD_MEMORY_MAX_MB (a 384-d tenant of ~400,000 rows; beyond it the build goes on disk).
BUILD_BYTES_PER_ROW = 1024  # graph neighbours (m = 16: 32 on layer 0) and element headers
BUILD_MEMORY_MARGIN = 1.25
BUILD_MEMORY_MAX_MB = 1024


# Which way a filtered nearest-rows lookup ranks (search's vector arm, the write gate's
# neighbours): a scope of at most EXACT_SCOPE_SHARE of the table's rows (pg_class.reltuples),
# but never fewer than EXACT_SCOPE_MIN nor more than EXACT_SCOPE_MAX rows, exactly; a larger
# one through an HNSW walk with iterative scans (pgvector 0.8+). Relative because a filtered
# walk loses recall as the scope's share of the graph shrinks, while an exact ranking costs
# the same in any table (strata.search.hybrid, "Vector arm", has the measurements).
EXACT_SCOPE_MIN = 2000
EXACT_SCOPE_MAX = 20_000
EXACT_SCOPE_SHARE = 0.05
# The largest scope ranked exactly, in SQL (parameters: exact_scope_params()).
EXACT_ROWS = """SELECT least(%(exact_max)s, greatest(%(exact_min)s,
                 (c.reltuples * %(exact_share)s)::bigint)) AS n
    FROM pg_class c WHERE c.oid = 'memories'::regclass"""


def exact_scope_params() -> dict[str, Any]:
    """The parameters of :data:`EXACT_ROWS`."""
    return {"exact_min": EXACT_SCOPE_MIN, "exact_max": EXACT_SCOPE_MAX,
            "exact_share": EXACT_SCOPE_SHARE}


def index_name(tenant_id: uuid.UUID) -> str:
    return PREFIX + uuid.UUID(str(tenant_id)).hex


_SIZES = """
SELECT tenant_id, count(*) AS n FROM memories GROUP BY tenant_id
HAVING 2 * count(*) >= %(min_rows)s ORDER BY n DESC, tenant_id
"""

_EXISTING = """
SELECT c.relname AS name, i.indisvalid AS valid
FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
WHERE i.indrelid = 'memories'::regclass AND c.relname LIKE %(pattern)s
"""


def plan(db: Database, *, min_rows: int | None = None, max_indexes: int | None = None
         ) -> dict[str, Any]:
    """What :func:`reconcile` would do now: ``create``, ``rebuild`` (invalid) and ``drop``
    lists of index names, and ``keep``."""
    min_rows = MIN_ROWS if min_rows is None else min_rows
    max_indexes = MAX_INDEXES if max_indexes is None else max_indexes
    with db.connection() as conn:
        sizes = conn.execute(_SIZES, {"min_rows": min_rows}).fetchall()
        existing = {r["name"]: r["valid"] for r in conn.execute(
            _EXISTING, {"pattern": PREFIX.replace("_", r"\_") + "%"}).fetchall()}
    # Above the line: wanted. Between half and the line: kept if it has one (hysteresis).
    wanted = [r for r in sizes if r["n"] >= min_rows]
    holding = [r for r in sizes if r["n"] < min_rows and index_name(r["tenant_id"]) in existing]
    chosen = {index_name(r["tenant_id"]): r["tenant_id"]
              for r in sorted(wanted + holding, key=lambda r: (-r["n"], str(r["tenant_id"])))
              [:max_indexes]}
    return {
        "create": [(name, tid) for name, tid in chosen.items() if name not in existing],
        "rebuild": [(name, tid) for name, tid in chosen.items()
                    if name in existing and not existing[name]],
        "drop": sorted(name for name in existing if name not in chosen),
        "keep": sorted(name for name in chosen if existing.get(name)),
    }


def reconcile(db: Database, *, min_rows: int | None = None, max_indexes: int | None = None,
              dry_run: bool = False, keep_going: Callable[[], bool] | None = None
              ) -> dict[str, Any]:
    """Bring the per-tenant indexes in line with the tenants' sizes (see the module docstring).
    Returns counts and the index names; a failed build is reported, not raised, and is
    retried by the next run (its invalid index is dropped first). ``keep_going`` is asked
    before each build (a Lambda's time budget): the rest waits for the next run."""
    min_rows = MIN_ROWS if min_rows is None else min_rows
    max_indexes = MAX_INDEXES if max_indexes is None else max_indexes
    todo = plan(db, min_rows=min_rows, max_indexes=max_indexes)
    report: dict[str, Any] = {
        "min_rows": min_rows, "max_indexes": max_indexes, "dry_run": dry_run,
        "created": [], "rebuilt": [], "dropped": [], "kept": len(todo["keep"]), "failed": [],
        "complete": True, "build_memory_kb": {},
    }
    if dry_run:
        report.update(created=[n for n, _ in todo["create"]],
                      rebuilt=[n for n, _ in todo["rebuild"]], dropped=todo["drop"])
        return report
    for name in todo["drop"]:
        _drop(db, name)
        report["dropped"].append(name)
    for key, items in (("rebuilt", todo["rebuild"]), ("created", todo["create"])):
        for name, tenant_id in items:
            if keep_going is not None and not keep_going():
                report["complete"] = False
                return report
            try:
                if key == "rebuilt":
                    _drop(db, name)
                report["build_memory_kb"][name] = _build(db, name, tenant_id)
                report[key].append(name)
            except Exception as exc:  # reported, and the next run tries again
                log.warning("per-tenant vector index %s not built: %s", name,
                            type(exc).__name__)
                report["failed"].append(name)
    return report


def _drop(db: Database, name: str) -> None:
    with db.connection() as conn:  # autocommit: CONCURRENTLY cannot run in a transaction
        conn.execute(f'DROP INDEX CONCURRENTLY IF EXISTS "{name}"')


def build_memory_kb(rows: int, dims: int, current_kb: int,
                    cap_mb: int | None = BUILD_MEMORY_MAX_MB) -> int:
    """maintenance_work_mem (kB) for building an HNSW index over ``rows`` vectors of ``dims``
    dimensions: what the graph needs, at least ``current_kb`` (the server's own setting), at
    most ``cap_mb`` (None: no cap; eval/bench_search.py seeds its shared index so)."""
    need = int(rows * (BUILD_BYTES_PER_ROW + 4 * dims) * BUILD_MEMORY_MARGIN) // 1024
    return max(current_kb, need if cap_mb is None else min(need, cap_mb * 1024))


_BUILD_DEADLINE_S = 12 * 3600.0


def _build(db: Database, name: str, tenant_id: uuid.UUID) -> int:
    """Build the tenant's index; returns the maintenance_work_mem (kB) it was built with."""
    tid = uuid.UUID(str(tenant_id))  # a uuid's text is safe to inline; DDL takes no parameters
    # The build runs as long as it needs (statement_timeout 0 below), past a job's per-call
    # deadline; this one only ends a build whose database stopped answering.
    with db.connection(deadline_s=_BUILD_DEADLINE_S) as conn:
        row = conn.execute(
            "SELECT (SELECT count(*) FROM memories WHERE tenant_id = %s) AS rows,"
            " (SELECT atttypmod FROM pg_attribute WHERE attrelid = 'memories'::regclass"
            "   AND attname = 'embedding') AS dims,"
            " (SELECT setting::int FROM pg_settings WHERE name = 'maintenance_work_mem') AS kb",
            (tid,)).fetchone()
        rows, dims, kb = (row[k] for k in ("rows", "dims", "kb")) if isinstance(row, dict) else row
        memory = build_memory_kb(int(rows), max(int(dims), 1), int(kb))
        conn.execute("SET statement_timeout = 0")
        conn.execute(f"SET maintenance_work_mem = '{memory}kB'")
        try:
            conn.execute(
                f'CREATE INDEX CONCURRENTLY IF NOT EXISTS "{name}" ON memories'
                f" USING hnsw (embedding vector_cosine_ops) WHERE tenant_id = '{tid}'::uuid")
        finally:
            conn.execute("RESET statement_timeout")
            conn.execute("RESET maintenance_work_mem")
    return memory
