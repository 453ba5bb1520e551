"""Hybrid retrieval: a vector arm and a full-text arm fused by reciprocal rank fusion, in one
statement with every filter (tenant, the caller's readable paths, status, kinds, tags, meta
containment, valid time) inside it -- never applied after LIMIT. Graph expansion runs in the
same statement, over the ranked hits.

Ranking
    ``score = rrf + time_window_boost``. ``rrf`` sums ``1 / (RRF_K + rank)`` over the arms
    that found the memory (``mode`` picks the arms: ``hybrid`` both, ``vector`` or
    ``keyword`` one). The full-text arm ORs the query's lexemes (a plain AND of every lexeme
    of a natural question matches almost nothing) and ranks matches with ``ts_rank``
    (term frequency). ``ts_rank_cd`` (cover density) was measured worse and slower here:
    LoCoMo (2 conversations, local embedder) hybrid recall_all@5 0.511 -> 0.515 on
    observations and 0.398 -> 0.424 on turns with ``ts_rank``, the golden set unchanged,
    and the text arm ~30 % cheaper -- its cost is one rank per matching row, so a broad
    query over a large tenant pays for every row that shares a lexeme with it. There is no
    score floor: whatever the arms find is ranked.

    Time-window boost: when the query names a time ("last week", "in May 2023",
    "yesterday"; resolved by :func:`strata.ingest.dates.find_dates` against ``now``), each
    expression becomes a window (its day, ISO week, month or year; "since X" is open-ended).
    A memory whose valid range *starts* inside a window (it became true then) gets
    ``TIME_BOOST_START = 0.5 / (RRF_K + 1)``; one that only *overlaps* a window (it was
    already true then) gets ``TIME_BOOST_OVERLAP = 0.25 / (RRF_K + 1)``. At most half of a
    top rank in one arm, so a time word reorders close candidates but never lifts a memory
    neither arm found (the boost applies to fused candidates only).

    Decay and age never enter the score. Importance, then confidence, then the content hash
    (``value_hash``: stable, so the same corpus always ranks the same way -- evaluations are
    reproducible), then id break exact ties. They are ORDER BY keys only: they never change
    the order of two different scores. Exact ties are common: each arm ranks with ``rank()``,
    so equal distances or equal text scores share a rank instead of being split by id.

Vector arm
    Reads ``memories`` directly with every filter in its WHERE and ranks by cosine distance.
    Which way it ranks is decided inside the statement, not by the planner's estimate: the
    ``scope`` CTE counts the tenant's rows in the requested statuses, stopping one past the
    exact limit -- ``EXACT_SCOPE_SHARE`` (5 %) of the table's rows (``pg_class.reltuples``),
    but at least ``EXACT_SCOPE_MIN`` (2,000) and at most ``EXACT_SCOPE_MAX`` (20,000); an
    index-only scan, ~0.2 us a row. A scope within the limit is ranked exactly (an ORDER BY
    no index matches: a bitmap scan on the tenant and a top-N sort, recall 1.0, ~1.5 ms for
    1,000 rows); a larger one through HNSW. Each branch sits under a one-time filter, so
    only one runs. Why relative: a filtered HNSW walk loses recall as the tenant's share of
    the table shrinks (a 10,000-row tenant: recall@10 0.99 in a 101k-row table, 0.83 in a
    1M-row one), while an exact scan costs the same in both. Left to itself the planner sent
    a 1,000-row tenant of a 101k-row table to HNSW for some query shapes (0.875).

    A plain HNSW scan under a tenant filter keeps only the ``hnsw.ef_search`` nearest rows
    of the *whole table* and then filters, so it returns too few rows (0 of 50 measured at
    a 10 % tenant). On pgvector >= 0.8 the statement therefore runs with ``SET LOCAL
    hnsw.iterative_scan = relaxed_order`` and ``hnsw.ef_search = HNSW_EF_SEARCH`` (checked
    once per Database; the arm re-sorts its rows by distance, which relaxed order needs).
    On pgvector 0.7 (no iterative scans) every scope is ranked exactly -- correct, and
    slower for large scopes. The result's ``explain.vector.exact`` says which way it ranked.

    Measured with ``eval/bench_search.py`` (10 tenants x 10k + one 1k tenant, 384 dims):
    recall@10 of the arm 0.99 at the 10 % tenant (HNSW) and 1.0 at the 1 % tenant (exact).
    At 10x that (10 x 100k + a 10k tenant, 1M rows) the 1 % tenant is exact (1.0, vector
    p50 15 ms; through HNSW it was 0.705 at 113 ms) and the 100k tenant's HNSW walk gets
    ~0.83 at ef_search 200 (0.88 at 400, 0.96 at 1000, at 1.6x the latency): the synthetic
    clusters are noisy and a filtered graph walk misses some of them. Tables that large
    want the index split by tenant (hash partitions with an HNSW index each, or partial
    indexes for the largest tenants): not built yet.

Text arm
    Matches through ``memories_tenant_text_idx`` (migration 0007), a GIN index whose keys
    are the content's lexemes prefixed with the tenant id, so a search decodes only its
    own tenant's posting lists (the plain index on ``fts`` held one list per lexeme for the
    whole table, and decoding other tenants' matches was most of the arm's time). Its
    candidates are every row sharing at least two lexemes with the query (up to
    ``TEXT_TWO_LEXEME_CAP``) plus up to ``TEXT_ONE_LEXEME_CAP`` rows sharing one; they are
    ranked with ``ts_rank`` on ``fts``. Below the caps this is exactly "rank every row that
    matches any lexeme". Above them -- a broad query over a large tenant, where thousands
    of rows share a common word -- the rows sharing a single lexeme are a sample in index
    order: the weakest text evidence, whose ts_rank is mostly tied anyway, and the vector
    arm still ranks the whole scope. Measured on eval/bench_search.py's 10 % tenant
    (interleaved A/B under load): the text arm ~45 % cheaper, hybrid ~35 %, the same top 10;
    on the 1 % tenant hybrid p50 16.1 -> 8.8 ms.

Statuses
    ``active`` only by default. ``include: ["candidates"]`` adds ``candidate``;
    ``include: ["history"]`` adds ``superseded`` and ``archived``. ``rejected`` memories are
    never returned: a reviewer decided they are not true. Forgotten memories no longer exist.

Graph expansion (``expand: true``)
    Memories linked to a ranked hit by a REFINES, COEXISTS or DERIVED_FROM edge, in either
    direction, are appended after the ranked hits with ``expanded: true``, the edge type and
    the hit they came from (the best-ranked one when several link to it). The linked memory
    passes the same tenant, readable-path, ``paths``, status (``include``) and ``valid_at``
    filters as a hit -- never through or into a retired memory, never outside what the caller
    may read -- but not ``kinds``/``tags``/``meta``, which select hits, not their context.
    At most ``limit`` expansions are added (so a response holds at most ``2 * limit``
    results), in the order of the hit they came from; a memory that is itself a hit is not
    repeated. Expanded results carry ``score = 0`` (they are not ranked).

Access bookkeeping
    ``access_count + 1`` and ``last_accessed_at`` for every returned result, recorded in
    :data:`ACCESS_LOG`, an in-process bounded queue that a daemon thread writes in batches
    after the response -- never a write on the query's path. Migration 0004 keeps these
    updates out of ``memory_history``.
"""

from __future__ import annotations

import atexit
import logging
import threading
import uuid
import weakref
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any, Literal

from psycopg.types.json import Jsonb
from pydantic import BaseModel, ConfigDict, Field

from strata.audit import audited
from strata.auth.access import Caller, Level
from strata.db import Database
from strata.ingest import dates
from strata.write.bookkeeping import TOUCH as _TOUCH
from strata.fields import Flag, Integer, MemoryPath
from strata.memories.models import Instant, Kind, Meta, Tag, Text
from strata.paths import validate_path
from strata.providers import Embedder

log = logging.getLogger(__name__)

RRF_K = 60
ARM_DEPTH = 50  # candidates each arm contributes before fusion
TEXT_TWO_LEXEME_CAP = 1000  # text-arm candidates sharing two or more lexemes with the query
TEXT_ONE_LEXEME_CAP = 200  # ... and sharing at least one (see "Text arm")
TIME_BOOST_START = 0.5 / (RRF_K + 1)  # valid range starts inside a named time window
TIME_BOOST_OVERLAP = 0.25 / (RRF_K + 1)  # valid range only overlaps it
EXPAND_EDGES = ("REFINES", "COEXISTS", "DERIVED_FROM")
TIE_BREAKERS = ["importance", "confidence", "value_hash", "id"]

Mode = Literal["hybrid", "vector", "keyword"]
Include = Literal["candidates", "history"]
INCLUDE_STATUSES: dict[str, tuple[str, ...]] = {
    "candidates": ("candidate",),
    "history": ("superseded", "archived"),
}


def rrf(*ranks: int | None, k: int = RRF_K) -> float:
    """Reciprocal rank fusion of 1-based ranks; an arm that did not find the item adds 0."""
    return sum(1.0 / (k + r) for r in ranks if r is not None)


class SearchRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    query: Text = Field(min_length=1, max_length=4000)
    paths: list[MemoryPath] | None = Field(default=None, max_length=50)
    kinds: list[Kind] | None = None
    tags: list[Tag] | None = Field(default=None, max_length=32)
    meta: Meta | None = None
    # Integer, Flag: JSON's numbers and booleans (strata.fields says why).
    limit: Integer = Field(default=10, ge=1, le=100)
    valid_at: Instant | None = None
    include: list[Include] = Field(default_factory=list, max_length=2)
    mode: Mode = "hybrid"
    expand: Flag = False
    explain: Flag = False


class SearchResult(BaseModel):
    id: uuid.UUID
    content: str
    path: str
    kind: str
    status: str
    score: float
    valid_from: datetime
    valid_to: datetime | None
    tags: list[str]
    importance: float
    confidence: float
    expanded: bool = False
    expanded_from: uuid.UUID | None = None
    edge: str | None = None
    explain: dict[str, Any] | None = None


# --------------------------------------------------------------------------------------
# Time windows named by the query
# --------------------------------------------------------------------------------------


def time_windows(query: str, now: datetime) -> list[dict[str, Any]]:
    """The windows the query's date expressions name: ``[{"text", "from", "to"}]`` with
    ``to`` exclusive (``None`` = open-ended, for "since ...")."""
    now = now if now.tzinfo is not None else now.replace(tzinfo=UTC)
    windows = []
    for m in dates.find_dates(query, now, dates.guess_tense(query)):
        start = m.when
        if m.granularity == "instant":
            start = datetime.combine(start.date(), datetime.min.time(), tzinfo=start.tzinfo)
        if m.granularity in ("instant", "day"):
            end: datetime | None = start + timedelta(days=1)
        elif m.granularity == "week":
            end = start + timedelta(weeks=1)
        elif m.granularity == "month":
            nxt = dates.add_months(start.date(), 1)
            end = datetime.combine(nxt, datetime.min.time(), tzinfo=start.tzinfo)
        else:
            end = start.replace(year=start.year + 1)
        if m.text.lower().startswith("since"):
            end = None
        windows.append({"text": m.text, "from": start, "to": end})
    return windows


# --------------------------------------------------------------------------------------
# The statement
# --------------------------------------------------------------------------------------

# What a returned memory must satisfy, for a hit (alias m) and for an expansion (alias o).
_ACCESS = """{a}.tenant_id = %(tenant)s
      AND ({a}.status = ANY(%(statuses)s::memory_status[]) OR %(any_status)s)
      AND {a}.path <@ %(readable)s::ltree[]
      AND (%(paths)s::ltree[] IS NULL OR {a}.path <@ %(paths)s::ltree[])
      AND (%(valid_at)s::timestamptz IS NULL OR {a}.valid @> %(valid_at)s::timestamptz)"""

# The selection filters of a hit (beyond _ACCESS), in each arm's WHERE.
_FILTERS = _ACCESS.format(a="m") + """
      AND (%(kinds)s::memory_kind[] IS NULL OR m.kind = ANY(%(kinds)s::memory_kind[]))
      AND (%(tags)s::text[] IS NULL OR m.tags @> %(tags)s::text[])
      AND (%(meta)s::jsonb IS NULL OR m.meta @> %(meta)s::jsonb)"""

_SEARCH = f"""
WITH lx AS (
    SELECT ARRAY(SELECT l FROM unnest(tsvector_to_array(to_tsvector('english', %(text)s))) AS l)
           AS l
),
q AS (  -- the query's lexemes: OR-ed for ranking; keyed by tenant, alone and in pairs, to match
    SELECT array_to_string(ARRAY(SELECT quote_literal(l) FROM unnest(lx.l) AS l), ' | ')::tsquery
             AS tsq,
           array_to_string(ARRAY(SELECT quote_literal(%(tenant)s::text || ':' || l)
                                 FROM unnest(lx.l) AS l), ' | ')::tsquery AS any_lexeme,
           NULLIF(array_to_string(ARRAY(
               SELECT quote_literal(%(tenant)s::text || ':' || a) || ' & '
                      || quote_literal(%(tenant)s::text || ':' || b)
               FROM unnest(lx.l) WITH ORDINALITY AS x(a, i),
                    unnest(lx.l) WITH ORDINALITY AS y(b, j) WHERE i < j), ' | '), '')::tsquery
             AS two_lexemes
    FROM lx
),
cand AS (  -- the text arm's candidates (see "Text arm" above)
    (SELECT m.id FROM memories m, q
     WHERE %(use_txt)s AND q.two_lexemes IS NOT NULL
       AND strata_tenant_lexemes(m.tenant_id, m.content) @@ q.two_lexemes AND {_FILTERS}
     LIMIT %(two_cap)s)
    UNION
    (SELECT m.id FROM memories m, q
     WHERE %(use_txt)s AND strata_tenant_lexemes(m.tenant_id, m.content) @@ q.any_lexeme
       AND {_FILTERS}
     LIMIT %(one_cap)s)
),
exact_rows AS (  -- the largest scope ranked exactly (see "Vector arm" above)
    SELECT least(%(exact_max)s, greatest(%(exact_min)s,
                 (c.reltuples * %(exact_share)s)::bigint)) AS n
    FROM pg_class c WHERE c.oid = 'memories'::regclass
),
scope AS (  -- rank exactly: without iterative scans, or over at most exact_rows rows
    SELECT NOT %(iterative)s OR count(*) <= (SELECT n FROM exact_rows) AS small
    FROM (SELECT 1 FROM memories m
          WHERE %(use_vec)s AND %(iterative)s AND m.tenant_id = %(tenant)s
            AND (m.status = ANY(%(statuses)s::memory_status[]) OR %(any_status)s)
          LIMIT (SELECT n FROM exact_rows) + 1) s
),
vec AS (
    -- One branch runs (the other's one-time filter is false): exact (an ORDER BY no index
    -- matches), or the index-usable distance (HNSW). See "Vector arm" above.
    SELECT v.id, rank() OVER (ORDER BY v.dist) AS rank, 1 - v.dist AS score
    FROM (
        (SELECT m.id, m.embedding <=> %(vec)s::vector AS dist
         FROM memories m
         WHERE %(use_vec)s AND (SELECT small FROM scope) AND m.embedding IS NOT NULL
           AND {_FILTERS}
         ORDER BY (m.embedding <=> %(vec)s::vector) + 0 LIMIT %(depth)s)
        UNION ALL
        (SELECT m.id, m.embedding <=> %(vec)s::vector AS dist
         FROM memories m
         WHERE %(use_vec)s AND NOT (SELECT small FROM scope) AND m.embedding IS NOT NULL
           AND {_FILTERS}
         ORDER BY m.embedding <=> %(vec)s::vector LIMIT %(depth)s)
    ) v
    ORDER BY v.dist, v.id
),
txt AS (
    -- The rank function runs once per matching row (the outer query ranks only the top).
    SELECT t.id, rank() OVER (ORDER BY t.tr DESC) AS rank, t.tr AS score
    FROM (
        SELECT c.id, ts_rank(m.fts, q.tsq) AS tr
        FROM cand c JOIN memories m ON m.id = c.id, q
        ORDER BY tr DESC, c.id LIMIT %(depth)s
    ) t
),
fused AS (
    SELECT COALESCE(vec.id, txt.id) AS id, vec.rank AS vec_rank, vec.score AS vec_score,
           txt.rank AS txt_rank, txt.score AS txt_score,
           COALESCE(1.0::float8 / (%(k)s + vec.rank), 0)
             + COALESCE(1.0::float8 / (%(k)s + txt.rank), 0) AS rrf
    FROM vec FULL OUTER JOIN txt ON vec.id = txt.id
),
windows AS (
    SELECT tstzrange(w.lo, w.hi) AS r
    FROM unnest(%(win_lo)s::timestamptz[], %(win_hi)s::timestamptz[]) AS w(lo, hi)
),
scored AS (
    SELECT f.*, m.importance, m.confidence, m.value_hash,
           CASE WHEN EXISTS (SELECT 1 FROM windows w WHERE lower(m.valid) <@ w.r) THEN 'starts'
                WHEN EXISTS (SELECT 1 FROM windows w WHERE m.valid && w.r) THEN 'overlaps'
           END AS window_match
    FROM fused f JOIN memories m ON m.id = f.id
),
boosted AS (
    SELECT s.*, CASE s.window_match WHEN 'starts' THEN %(boost_start)s::float8
                                    WHEN 'overlaps' THEN %(boost_overlap)s::float8
                                    ELSE 0::float8 END AS time_boost
    FROM scored s
),
ranked AS (
    SELECT b.*, b.rrf + b.time_boost AS score,
           row_number() OVER (ORDER BY b.rrf + b.time_boost DESC, b.importance DESC,
                                       b.confidence DESC, b.value_hash, b.id) AS pos
    FROM boosted b
    ORDER BY pos LIMIT %(limit)s
),
linked AS (
    SELECT DISTINCT ON (o.id) o.id, r.id AS from_id, r.pos, e.type::text AS edge
    FROM ranked r
    JOIN memory_relationships e
      ON e.tenant_id = %(tenant)s AND (e.source_id = r.id OR e.target_id = r.id)
     AND e.type = ANY(%(edges)s::relationship_type[])
    JOIN memories o
      ON o.id = CASE WHEN e.source_id = r.id THEN e.target_id ELSE e.source_id END
    WHERE %(expand)s AND {_ACCESS.format(a="o")}
      AND o.id NOT IN (SELECT id FROM ranked)
    ORDER BY o.id, r.pos, e.type
),
expanded AS (
    SELECT * FROM linked ORDER BY pos, edge, id LIMIT %(limit)s
),
out AS (
    SELECT r.id, r.pos, 0 AS grp, NULL::uuid AS from_id, NULL::text AS edge, r.vec_rank,
           r.vec_score, r.txt_rank, r.txt_score, r.rrf, r.time_boost, r.window_match, r.score
    FROM ranked r
    UNION ALL
    SELECT x.id, x.pos, 1, x.from_id, x.edge, NULL, NULL, NULL, NULL, NULL, NULL, NULL, 0
    FROM expanded x
)
SELECT m.id, m.content, m.path::text AS path, m.kind::text AS kind, m.status::text AS status,
       lower(m.valid) AS valid_from, upper(m.valid) AS valid_to, m.tags, m.importance,
       m.confidence, o.grp, o.from_id, o.edge, o.vec_rank, o.vec_score, o.txt_rank,
       o.txt_score, o.rrf, o.time_boost, o.window_match, o.score,
       (SELECT small FROM scope) AS vec_exact
FROM out o JOIN memories m ON m.id = o.id
ORDER BY o.grp, o.pos, o.edge, m.id
"""

# Candidates per iterative-scan batch. Measured on eval/bench_search.py's 10 % tenant (10k
# rows of 101k; interleaved, rotating which setting runs first): 100 -> recall@10 0.991,
# 200 -> 0.992 at the same p50 (11 ms for the statement); 40 -> 0.984. At 100k rows per
# tenant (1M rows) recall falls to ~0.78 whatever the setting: see the module docstring.
HNSW_EF_SEARCH = 200
# A scope (the tenant's rows in the requested statuses) of at most EXACT_SCOPE_SHARE of the
# table, but never fewer than EXACT_SCOPE_MIN nor more than EXACT_SCOPE_MAX rows, is ranked
# exactly, whatever the planner estimates: see "Vector arm".
EXACT_SCOPE_MIN = 2000
EXACT_SCOPE_MAX = 20_000
EXACT_SCOPE_SHARE = 0.05
_HNSW_SETTINGS = (
    "SELECT set_config('hnsw.iterative_scan', 'relaxed_order', true),"
    f" set_config('hnsw.ef_search', '{HNSW_EF_SEARCH}', true)"
)
_ITERATIVE_SCAN: "weakref.WeakKeyDictionary[Database, bool]" = weakref.WeakKeyDictionary()


def _iterative_scan(db: Database, conn: Any) -> bool:
    """Whether the database's pgvector supports ``hnsw.iterative_scan`` (0.8+); asked once
    per Database."""
    known = _ITERATIVE_SCAN.get(db.owner)  # a view with a shorter timeout is the same database
    if known is None:
        row = conn.execute(
            "SELECT coalesce(string_to_array(extversion, '.')::int[] >= '{0,8}'::int[], false)"
            " AS ok FROM pg_extension WHERE extname = 'vector'").fetchone()
        known = bool(row and (row["ok"] if isinstance(row, dict) else row[0]))
        _ITERATIVE_SCAN[db.owner] = known
    return known


def statuses_for(include: Sequence[str]) -> list[str]:
    out = ["active"]
    for name in include:
        out += [s for s in INCLUDE_STATUSES[name] if s not in out]
    return out


def search(
    db: Database,
    caller: Caller,
    req: SearchRequest,
    embedder: Embedder,
    *,
    now: datetime | None = None,
    access_log: "AccessLog | None" = None,
    ignore_status: bool = False,
) -> list[SearchResult]:
    """Rank what ``caller`` may read for ``req``.

    Keyword-only (not reachable from HTTP): ``now`` resolves the query's date expressions
    (default: the current time, UTC); ``access_log`` receives the returned ids (default
    :data:`ACCESS_LOG`); ``ignore_status`` drops the status filter -- it exists only so the
    golden evaluation can prove its leak check discriminates, and must never be wired to a
    request field.
    """
    with audited(db, caller, "read", "memory.search") as event:
        event.query_len = len(req.query)
        for i, p in enumerate(req.paths or []):
            validate_path(p, field=f"paths[{i}]")
        now = now or datetime.now(UTC)
        windows = time_windows(req.query, now)
        use_vec = req.mode in ("hybrid", "vector")
        vec = embedder.embed([req.query])[0] if use_vec else None
        params = {
            "tenant": caller.tenant_id, "readable": caller.paths(Level.read), "vec": vec,
            "text": req.query, "paths": req.paths, "kinds": req.kinds, "tags": req.tags,
            "meta": _jsonb(req.meta), "valid_at": req.valid_at,
            "statuses": statuses_for(req.include), "any_status": ignore_status,
            "use_vec": use_vec, "use_txt": req.mode in ("hybrid", "keyword"),
            "depth": max(ARM_DEPTH, req.limit), "k": RRF_K, "limit": req.limit,
            "two_cap": TEXT_TWO_LEXEME_CAP, "one_cap": TEXT_ONE_LEXEME_CAP,
            "win_lo": [w["from"] for w in windows], "win_hi": [w["to"] for w in windows],
            "boost_start": TIME_BOOST_START, "boost_overlap": TIME_BOOST_OVERLAP,
            "expand": req.expand, "edges": list(EXPAND_EDGES), "exact_min": EXACT_SCOPE_MIN,
            "exact_max": EXACT_SCOPE_MAX, "exact_share": EXACT_SCOPE_SHARE,
        }
        with db.connection() as conn:
            params["iterative"] = use_vec and _iterative_scan(db, conn)
            with conn.transaction():  # SET LOCAL scope: this statement only
                if params["iterative"]:
                    conn.execute(_HNSW_SETTINGS)
                rows = conn.execute(_SEARCH, params).fetchall()
        results = [_result(r, req, windows) for r in rows]
        event.count = len(results)
        event.memory_ids = [r.id for r in results]
    (access_log or ACCESS_LOG).record(db, caller.tenant_id, [r.id for r in results])
    return results


def _jsonb(value: dict[str, Any] | None) -> Jsonb | None:
    return None if value is None else Jsonb(value)


def _result(r: dict[str, Any], req: SearchRequest, windows: list[dict[str, Any]]) -> SearchResult:
    expanded = r["grp"] == 1
    explain = None
    if req.explain:
        if expanded:
            explain = {"expanded": {"from": r["from_id"], "edge": r["edge"]}}
        else:
            boosts: dict[str, Any] = {}
            if windows:
                boosts["time_window"] = {
                    "value": float(r["time_boost"]),
                    "match": r["window_match"],  # starts | overlaps | None
                    "windows": [{"text": w["text"], "from": w["from"], "to": w["to"]}
                                for w in windows],
                }
            explain = {
                "mode": req.mode,
                "vector": {"rank": r["vec_rank"], "score": r["vec_score"],
                           "exact": bool(r["vec_exact"]) if req.mode != "keyword" else None},
                "text": {"rank": r["txt_rank"], "score": r["txt_score"]},
                "rrf": float(r["rrf"]), "rrf_k": RRF_K, "boosts": boosts,
                "score": float(r["score"]), "tie_breakers": TIE_BREAKERS,
            }
    return SearchResult(
        id=r["id"], content=r["content"], path=r["path"], kind=r["kind"], status=r["status"],
        score=float(r["score"]), valid_from=r["valid_from"], valid_to=r["valid_to"],
        tags=r["tags"], importance=r["importance"], confidence=r["confidence"],
        expanded=expanded, expanded_from=r["from_id"], edge=r["edge"], explain=explain,
    )


# --------------------------------------------------------------------------------------
# Access bookkeeping, off the query path
# --------------------------------------------------------------------------------------



class AccessLog:
    """Access bookkeeping for returned search results, written after the response.

    ``record`` only touches memory (a dict coalescing repeat hits per memory: count and
    latest time) and wakes a daemon thread, which writes pending entries in batches of
    ``batch`` with one UPDATE each, at most every ``interval`` seconds (sooner once a batch
    is full). The queue is bounded by ``max_pending`` distinct memories; beyond it new
    entries are dropped and counted (``dropped``) -- bookkeeping is best effort and never
    slows or fails a search. Rows locked by another transaction are skipped and retried on
    the next flush (up to ``retries`` times; a memory deleted meanwhile ends there).

    ``flush()`` writes everything pending synchronously (tests, shutdown); it waits for a
    flush in progress. At interpreter exit pending entries are flushed once. On Lambda the
    thread is frozen between invocations and resumes with the next one; entries pending
    when a container is recycled are lost (access counts are advisory, not audited).

    Updates change only ``access_count`` and ``last_accessed_at``: no version bump (a
    client's ``If-Match`` stays valid), no ``updated_at``, and no history row
    (migration 0004_access_bookkeeping).
    """

    def __init__(self, *, interval: float = 1.0, batch: int = 500, max_pending: int = 20_000,
                 retries: int = 3, autostart: bool = True) -> None:
        self.interval = interval
        self.batch = batch
        self.max_pending = max_pending
        self.retries = retries
        self.autostart = autostart
        self.dropped = 0
        self.written = 0
        self._pending: dict[tuple[int, uuid.UUID, uuid.UUID], list[Any]] = {}
        self._dbs: dict[int, Database] = {}
        self._lock = threading.Lock()
        self._flushing = threading.Lock()
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None

    def record(self, db: Database, tenant_id: uuid.UUID, ids: Sequence[uuid.UUID]) -> None:
        if not ids:
            return
        at = datetime.now(UTC)
        with self._lock:
            self._dbs[id(db)] = db
            for mid in ids:
                key = (id(db), tenant_id, mid)
                entry = self._pending.get(key)
                if entry is not None:
                    entry[0] += 1
                    entry[1] = at
                elif len(self._pending) >= self.max_pending:
                    self.dropped += 1
                else:
                    self._pending[key] = [1, at, 0]
            full = len(self._pending) >= self.batch
        if self.autostart:
            self._ensure_thread()
            if full:
                self._wake.set()

    def pending(self) -> int:
        with self._lock:
            return len(self._pending)

    def flush(self) -> int:
        """Write everything pending now; the number of memories updated."""
        with self._flushing:
            with self._lock:
                pending, self._pending = self._pending, {}
                dbs = dict(self._dbs)
            written = 0
            by_db: dict[int, list[tuple[uuid.UUID, uuid.UUID, list[Any]]]] = {}
            for (db_key, tenant, mid), entry in pending.items():
                by_db.setdefault(db_key, []).append((tenant, mid, entry))
            for db_key, items in by_db.items():
                for i in range(0, len(items), self.batch):
                    written += self._write(dbs[db_key], db_key, items[i:i + self.batch])
            with self._lock:
                live = {k[0] for k in self._pending}
                self._dbs = {k: v for k, v in self._dbs.items() if k in live}
            self.written += written
            return written

    def _write(self, db: Database, db_key: int, items: list) -> int:
        # A Database closed meanwhile must not be reopened by bookkeeping.
        if not db.is_open:
            self.dropped += len(items)
            return 0
        try:
            with db.pool.connection(timeout=5.0) as conn:
                done = {r[0] if not isinstance(r, dict) else r["id"] for r in conn.execute(_TOUCH, {
                    "tenants": [t for t, _, _ in items], "ids": [m for _, m, _ in items],
                    "counts": [e[0] for _, _, e in items], "ats": [e[1] for _, _, e in items],
                }).fetchall()}
        except Exception:
            log.warning("access bookkeeping write failed; %d entries dropped", len(items),
                        exc_info=True)
            self.dropped += len(items)
            return 0
        retry = [(t, m, e) for t, m, e in items if m not in done]
        with self._lock:
            for tenant, mid, entry in retry:
                if entry[2] >= self.retries:
                    self.dropped += 1
                    continue
                key = (db_key, tenant, mid)
                current = self._pending.get(key)
                if current is None:
                    self._pending[key] = [entry[0], entry[1], entry[2] + 1]
                    self._dbs[db_key] = db
                else:
                    current[0] += entry[0]
                    current[1] = max(current[1], entry[1])
        return len(done)

    def _ensure_thread(self) -> None:
        if self._thread is not None and self._thread.is_alive():
            return
        with self._lock:
            if self._thread is not None and self._thread.is_alive():
                return
            self._thread = threading.Thread(target=self._run, name="strata-access-log",
                                            daemon=True)
            self._thread.start()

    def _run(self) -> None:
        while True:
            self._wake.wait(self.interval)
            self._wake.clear()
            if not self.pending():
                continue
            try:
                self.flush()
            except Exception:  # never let the thread die
                log.warning("access bookkeeping flush failed", exc_info=True)


ACCESS_LOG = AccessLog()


@atexit.register
def _flush_at_exit() -> None:
    try:
        if ACCESS_LOG.pending():
            ACCESS_LOG.flush()
    except Exception:
        pass
