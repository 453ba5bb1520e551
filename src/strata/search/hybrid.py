"""Hybrid retrieval: a vector arm and a full-text (BM25) arm, in one statement with every
filter (tenant, the caller's readable paths, status, kinds, tags, meta: equality and
comparisons, strata.search.meta_filter; valid time)
inside it -- never applied after LIMIT. The statement returns both arms' candidates with both
raw scores; :func:`strata.search.ranking.fuse` orders them (a per-query weighted sum of the
normalised arm scores, plus a time-window boost), and the top ``limit`` are the results.
Graph expansion, when asked for, is a second statement over those hits.

Ranking
    See :mod:`strata.search.ranking`: BM25, the fusion and its per-query weight, the time-window boost,
    the tie-breakers, and every constant with the benchmark that chose it. ``mode`` picks the
    arms: ``hybrid`` both, ``vector`` or ``keyword`` one (then the fused score is that arm's,
    normalised). Results come in the fused order (``rank``); each one's ``score`` is its
    *relevance*: the probability that it is relevant, fitted per embedder (comparable across
    queries: see "Relevance" there). ``explain.relevance`` shows how it was made (features,
    each coefficient's contribution, the logit) and ``explain.score`` is the same number;
    ``explain.rank_score`` is the fused score that ranked it. ``min_score`` drops results
    whose score is below it before ``limit`` applies; without it there is no floor: whatever
    the arms find is ranked.

    Time windows: when the query names a time ("last week", "in May 2023", "yesterday";
    resolved by :func:`strata.ingest.dates.find_dates` against ``now``), each expression
    becomes a window (its day, ISO week, month or year; "since X" is open-ended). The
    statement says for each candidate whether its valid range *starts* inside a window (it
    became true then) or only *overlaps* one (it was already true then); the boost applies
    to candidates only, so a time word reorders what the arms found but never lifts a memory
    neither arm found.

Vector arm
    Reads ``memories`` directly with every filter in its WHERE and ranks by cosine distance.
    Which way it ranks is decided inside the statement, not by the planner's estimate. A
    tenant with a valid HNSW index of its own (:mod:`strata.db.vector_index`, built for large
    tenants by the lifecycle job) is ranked through it (``route: tenant_index``): the walk
    never crosses another tenant's graph. Otherwise the
    ``scope`` CTE counts the tenant's rows in the requested statuses, stopping one past the
    exact limit -- ``vector_index.EXACT_SCOPE_SHARE`` (5 %) of the table's rows
    (``pg_class.reltuples``), but at least ``EXACT_SCOPE_MIN`` (2,000) and at most
    ``EXACT_SCOPE_MAX`` (20,000); an
    index-only scan, ~0.2 us a row. A scope within the limit is ranked exactly (an ORDER BY
    no index matches: a bitmap scan on the tenant and a top-N sort, recall 1.0, ~1.5 ms for
    1,000 rows); a larger one through HNSW. Each branch sits under a one-time filter, so
    only one runs; a route known before the statement is sent (a tenant index, or pgvector
    0.7's exact ranking) gets a statement with its branch alone (``_statement``), so the
    planner does not plan the others. Why relative: a filtered HNSW walk loses recall as the tenant's share of
    the table shrinks (a 10,000-row tenant: recall@10 0.99 in a 101k-row table, 0.83 in a
    1M-row one), while an exact scan costs the same in both. Left to itself the planner sent
    a 1,000-row tenant of a 101k-row table to HNSW for some query shapes (0.875).

    A plain HNSW scan under a tenant filter keeps only the ``hnsw.ef_search`` nearest rows
    of the *whole table* and then filters, so it returns too few rows (0 of 50 measured at
    a 10 % tenant). On pgvector >= 0.8 the statement therefore runs with ``SET LOCAL
    hnsw.iterative_scan = relaxed_order`` and ``hnsw.ef_search = HNSW_EF_SEARCH`` (checked
    once per Database; the arm re-sorts its rows by distance, which relaxed order needs).
    On pgvector 0.7 (no iterative scans) every scope is ranked exactly -- correct, and
    slower for large scopes. The result's ``explain.vector.route`` (``exact``,
    ``tenant_index``, ``shared_index``) says which way it ranked.

    A filtered walk of the shared graph misses some of a large tenant's rows, which is why
    large tenants get an index of their own; the recall and latency of each route are in
    docs/benchmarks/performance.md ("Measurements behind the search statement").

Text arm
    Matches through ``memories_tenant_text_idx`` (migrations 0007, 0022), a GIN index whose
    keys are the lexemes of ``fts`` -- the content's and the context's -- prefixed with the
    tenant id (``LEXEMES``), so a search decodes only its own tenant's posting lists (the
    plain index on ``fts`` held one list per lexeme for the whole table, and decoding other
    tenants' matches was most of the arm's time). Its
    candidates are every row sharing at least two lexemes with the query (up to
    ``TEXT_TWO_LEXEME_CAP``) plus up to ``TEXT_ONE_LEXEME_CAP`` rows sharing one. Each match
    is a scan of that index alone, fenced (``OFFSET 0``) from the filters, which apply to its
    rows: planned together, the planner ANDed the match with a bitmap of the tenant's every
    active row (~8,000 entries at a 10k-row tenant; half the arm's time) that the
    tenant-keyed lexemes already imply. The arm keeps the ``fts`` and path of the rows it
    read, so the BM25 pass reads from the table only the vector arm's other rows (none when
    the arm walks the tenant's own index: that walk hands over its rows' too). They are
    scored with BM25 (:mod:`strata.search.ranking`) in one pass over their lexemes (each row's
    ``fts`` cut to the query's lexemes by ``setweight``/``ts_filter``, then unnested; a
    query word a row's path names is looked up once per distinct path), which also yields
    each lexeme's document frequency; the statement takes the query's lexemes and match
    queries as constants (``_QUERY_TERMS``, one round trip before it) so the planner sees
    the words, and ``plan_cache_mode`` is forced to custom plans for the search transaction
    (no parallel workers nor JIT either: see ``_PLAIN_EXECUTION``). Below the caps this is
    exactly "score every row that matches any lexeme". Above them -- a broad query over a large
    tenant, where thousands of rows share a common word -- the rows sharing a single lexeme
    are a sample in heap order: the weakest text evidence, and the vector arm still ranks
    the whole scope.

    Common lexemes. A GIN bitmap cannot stop early: sampling 200 rows of a word in 20,000
    of them decodes all 20,000 postings. A lexeme the table's statistics count in at least
    ``COMMON_LEXEME_ROWS`` of the tenant's rows (:func:`common_lexemes`, from ANALYZE's most
    common elements of the text index) is *common*; the one-lexeme sample takes the rare
    lexemes' rows first, and a common lexeme's only while fewer than the arm's depth of rows
    share two query lexemes -- behind a one-time filter, so otherwise its postings are not
    read. Only for a caller that may read the whole tenant (the statistics count all of
    it; a narrower key's sample must not depend on rows it may not read). A row holding
    only a common word scores below one holding it and another word (at the same length
    and term frequency), so once the depth is filled by those, a heap-order sample of its
    rows mostly moved the document frequencies: skipping common lexemes' postings saves
    time at large tenants without moving the top ten (measured in the benchmarks page).

    BM25's N (the scope's rows, counted up to ``ranking.BM25_STAT_CAP``): a scope whose
    count reached the cap has N = the cap, however many more rows it holds, so once a count
    says so the process remembers it per scope (tenant, the key's readable paths, ``paths``,
    statuses) for ``CORPUS_AT_CAP_TTL`` seconds and the statement does not count
    (:func:`_corpus_at_cap`): counting is a scan of the cap's number of index entries, a
    measurable share of every search of a large tenant. A smaller scope is counted every time -- cheaply, and its N moves with every
    write -- and so is one at ``valid_at`` (a scope per instant). A scope that shrinks below
    the cap keeps N at the cap until its entry expires: idf values that differ by less than
    the rows deleted, for at most that long.

    Round trips: a search is two (settings and terms with BEGIN; the statement with
    COMMIT); on the writer the second also reads the tenant's audit head, so the search's
    audit entry is one more (:func:`strata.audit.append`; a head moved meanwhile costs the
    usual retry). psycopg keeps the statement's placeholder parse (``_parse_once``).
    tests/search/test_search_equivalence.py holds the statement to the one before, frozen in
    tests/search/search_reference.py, so a rewrite for speed keeps the same rows and scores.

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
    after the response -- never a write on the query's path -- into ``memory_access``
    (:mod:`strata.write.bookkeeping`, migration 0021), never into ``memories``: a search
    rewrites no memory's page, so it leaves the visibility map that the next searches'
    index-only scans rely on as it was. Only a memory's first count locks its row (the
    foreign key's key-share lock); a memory counted before changes its bookkeeping row
    alone. Locking it on every count had rewritten the tuple's header, so every returned
    memory's page was dirtied and logged -- in full, the first time after each checkpoint
    (the WAL and latency it cost are in the benchmarks page).
"""

from __future__ import annotations

import atexit
import logging
import threading
import time
import uuid
import weakref
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from psycopg.types.json import Jsonb
from pydantic import BaseModel, ConfigDict

from strata.audit import audited
from strata.audit.chain import HEAD as _AUDIT_HEAD
from strata.auth.access import Caller, Level
from strata.db import vector_index
from strata.db import Database
from strata.db.routing import Reads
from strata.db.vector import exact_distance
from strata.foundation.errors import Unavailable
from strata.foundation.paths import validate_path
from strata.ingest import dates
from strata.providers import Embedder
from strata.search import meta_filter, ranking
from strata.search.models import (  # noqa: F401 (re-exported)
    Include, Mode, SearchRequest, SearchResponse, SearchResult, WhyNot,
)
from strata.write.bookkeeping import TOUCH as _TOUCH

log = logging.getLogger(__name__)
# One bookkeeping batch may take this long against the database before its connection is cut.
_BOOKKEEPING_DEADLINE_S = 30.0

TEXT_TWO_LEXEME_CAP = 1000  # text-arm candidates sharing two or more lexemes with the query
TEXT_ONE_LEXEME_CAP = 200  # ... and sharing at least one (see "Text arm")
# A lexeme of the tenant's with at least this many rows in the text index (by the table's
# statistics) is *common*: the one-lexeme sample draws from it only when fewer than the arm's
# depth of rows share two lexemes with the query (see "Text arm"). Measured with
# eval/bench_text_sample.py; LEXEME_STATS_TTL: how long a process keeps the statistics.
COMMON_LEXEME_ROWS = 5000
LEXEME_STATS_TTL = 300.0
# BM25's N for a scope whose count reached ``ranking.BM25_STAT_CAP`` is the cap: a process
# remembers that for this long, and the statement then does not count (see "Text arm").
CORPUS_AT_CAP_TTL = 60.0
EXPAND_EDGES = ("REFINES", "COEXISTS", "DERIVED_FROM")

INCLUDE_STATUSES: dict[str, tuple[str, ...]] = {
    "candidates": ("candidate",),
    "history": ("superseded", "archived"),
}


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

# What a returned memory must satisfy, for a hit (alias m) and for an expansion (alias o), and
# the selection filters of a hit beyond them: each check named, so the statement's WHERE and
# the ``why_not`` diagnosis (_WHY_NOT) are built from the same list and cannot drift apart.
_ACCESS_CHECKS = (
    ("status", "({a}.status = ANY(%(statuses)s::memory_status[]) OR %(any_status)s)"),
    ("access", "{a}.path <@ %(readable)s::ltree[]"),
    ("paths", "(%(paths)s::ltree[] IS NULL OR {a}.path <@ %(paths)s::ltree[])"),
    ("validity", "(%(valid_at)s::timestamptz IS NULL OR {a}.valid @> %(valid_at)s::timestamptz)"),
)
_FILTER_CHECKS = (
    ("kinds", "(%(kinds)s::memory_kind[] IS NULL OR m.kind = ANY(%(kinds)s::memory_kind[]))"),
    ("tags", "(%(tags)s::text[] IS NULL OR m.tags @> %(tags)s::text[])"),
    ("meta", "(%(meta)s::jsonb IS NULL OR m.meta @> %(meta)s::jsonb)"),
    ("meta", "(%(meta_ops)s::jsonb IS NULL OR " + meta_filter.CONDITIONS_SQL + ")"),
    ("origin", "(NOT %(exclude_derived)s OR m.origin <> 'llm_derived')"),
)
_ACCESS = "{a}.tenant_id = %(tenant)s\n      AND " + "\n      AND ".join(
    sql for _, sql in _ACCESS_CHECKS)
_FILTERS = _ACCESS.format(a="m") + "".join(f"\n      AND {sql}" for _, sql in _FILTER_CHECKS)

# For each memory named in ``why_not``: which checks it fails (NULL: not readable or no such
# memory, which look the same). Nothing else about an unreadable row leaves the statement.
_WHY_NOT = "SELECT m.id, m.path <@ %(readable)s::ltree[] AS readable, m.status::text, " + ", ".join(
    f"{sql.format(a='m')} AS ok_{i}" for i, (_, sql) in enumerate(
        _ACCESS_CHECKS + _FILTER_CHECKS)) + """
FROM memories m WHERE m.tenant_id = %(tenant)s AND m.id = ANY(%(why_ids)s::uuid[])"""
_CHECK_NAMES = [name for name, _ in _ACCESS_CHECKS + _FILTER_CHECKS]

# Whether the tenant has a valid HNSW index of its own (strata.db.vector_index).
_OWN_INDEX = """SELECT c.reltuples FROM pg_class c JOIN pg_index i ON i.indexrelid = c.oid
                WHERE c.relname = %(own_index)s AND i.indrelid = 'memories'::regclass
                  AND i.indisvalid"""

# The query's lexemes, and the text arm's match queries keyed by tenant (any one lexeme; any
# two). Built before the statement and passed to it as constants, so the planner sees the
# actual query words: an expression it could not see was planned as a per-row filter that
# recomputes every row's lexemes (~12 ms for 419 rows instead of 0.1 ms through the index).
_QUERY_TERMS = """
WITH lx AS (
    SELECT ARRAY(SELECT l FROM unnest(tsvector_to_array(to_tsvector('english', %(text)s))) AS l)
           AS l
)
SELECT lx.l AS lexemes,
       NULLIF(array_to_string(ARRAY(SELECT quote_literal(%(tenant)s::text || ':' || l)
                                    FROM unnest(lx.l) AS l
                                    WHERE NOT l = ANY(%(common)s::text[])), ' | '), '')
         AS any_rare,
       NULLIF(array_to_string(ARRAY(SELECT quote_literal(%(tenant)s::text || ':' || l)
                                    FROM unnest(lx.l) AS l
                                    WHERE l = ANY(%(common)s::text[])), ' | '), '')
         AS any_common,
       NULLIF(array_to_string(ARRAY(
           SELECT quote_literal(%(tenant)s::text || ':' || a) || ' & '
                  || quote_literal(%(tenant)s::text || ':' || b)
           FROM unnest(lx.l) WITH ORDINALITY AS x(a, i),
                unnest(lx.l) WITH ORDINALITY AS y(b, j) WHERE i < j), ' | '), '') AS two_lexemes
FROM lx
"""

# The search statement, assembled from these fragments per variant (``_statement``): the
# mode, whether the query names a time, and the vector arm's route are all known in Python
# before the statement is sent (the route once the prelude has said whether the tenant has
# an index of its own), so a branch that cannot run is left out rather than put under a
# one-time filter -- the planner plans every branch it is given, run or not. Measured on
# eval/bench_search.py's 10k-row tenant with its own index (interleaved, 60 queries): a
# hybrid search planned in ~1.1 ms instead of ~1.4 ms (the exact branch, the scope count
# and the window checks no longer beside the HNSW walk), a vector-only one in ~0.4 ms
# instead of ~1.0 ms. Each variant returns the rows and columns the single statement did
# (tests/search/test_search_equivalence.py).

# The text arm's matches (see "Text arm" above), with BM25's N.
_CORPUS = f"""
corpus AS (  -- BM25's N: what the caller may read, counted up to a cap -- unless the process
             -- knows the count reaches it (_corpus_at_cap): a constant, planned away
    SELECT CASE WHEN %(corpus_at_cap)s THEN %(stat_cap)s::float8 ELSE (
        SELECT count(*)::float8
        FROM (SELECT 1 FROM memories m WHERE {_ACCESS.format(a="m")} LIMIT %(stat_cap)s) s)
    END AS n
),"""


# A memory's lexemes as the tenant-keyed text index holds them: its fts (content and context,
# migration 0022), each lexeme prefixed with the tenant id. The match must say it exactly so
# for the planner to use the index.
LEXEMES = "strata_keyed_lexemes(m.tenant_id, m.fts)"


def _match(tsquery: str, guard: str = "") -> str:
    """The rows matching ``tsquery`` (a parameter) through the tenant-keyed text index, with
    what BM25 reads. OFFSET 0 keeps the match a scan of that index alone, the filters applied
    to its rows: planned as one query the planner ANDed that bitmap with one of the tenant's
    every active row (~8,000 entries, half the arm's time), which the tenant-keyed lexemes
    already imply. Rows come in heap order either way. ``guard``: a one-time condition."""
    return f"""SELECT m.id, m.fts, m.path
            FROM (SELECT * FROM memories m
                  WHERE {guard}{LEXEMES} @@ {tsquery}
                  OFFSET 0) m
            WHERE {_FILTERS}"""


# The text arm's candidates (materialized: ~0.15 ms less planning), with BM25's N. Without a
# common lexeme in the query the one-lexeme sample is one match (every query lexeme is rare);
# with one, the rare lexemes' rows come first, and a common lexeme's only while fewer than the
# arm's depth of rows share two (a one-time filter: its postings are not even read). Two
# variants, so a query without a common lexeme plans no branch it cannot run (~0.2 ms).
_TWO = f"""{_match("%(two_lexemes)s::tsquery")}
    LIMIT %(two_cap)s"""
_CAND = "\ncand AS (SELECT DISTINCT ON (c.id) c.id, c.fts, c.path FROM cand_rows c),"
_TEXT_MATCHES = {
    False: _CORPUS + f"""
cand_rows AS MATERIALIZED (
    ({_TWO})
    UNION ALL
    ({_match("%(any_rare)s::tsquery")}
     LIMIT %(one_cap)s)
),""" + _CAND,
    True: _CORPUS + f"""
cand_two AS MATERIALIZED (  -- sharing two lexemes with the query
    {_TWO}
),
cand_rows AS MATERIALIZED (
    SELECT * FROM cand_two
    UNION ALL
    (SELECT o.id, o.fts, o.path
     FROM (({_match("%(any_rare)s::tsquery")})
           UNION ALL
           ({_match("%(any_common)s::tsquery",
                    guard="(SELECT count(*) FROM cand_two) < %(depth)s AND ")})) o
     LIMIT %(one_cap)s)
),""" + _CAND,
}

# The vector arm's two ways of ranking (see "Vector arm" above): exact (an ORDER BY no index
# matches), or the index-usable distance (HNSW). ``{when}``: the route's one-time filter;
# ``{carry}``: the columns the HNSW walk hands the BM25 pass (``_VEC_CARRIED``), if any.
_VEC_EXACT = f"""
        (SELECT m.id, m.embedding <=> %(vec)s::vector AS dist
         FROM memories m
         WHERE {{when}}m.embedding IS NOT NULL
           AND {_FILTERS}
         ORDER BY {exact_distance("m.embedding", "%(vec)s::vector")} LIMIT %(vec_fetch)s)"""
_VEC_HNSW = f"""
        (SELECT m.id, m.embedding <=> %(vec)s::vector AS dist{{carry}}
         FROM memories m
         WHERE {{when}}m.embedding IS NOT NULL
           AND {_FILTERS}
         ORDER BY m.embedding <=> %(vec)s::vector LIMIT %(vec_fetch)s)"""


def _vec_arm(branches: str, carry: str = "") -> str:
    """The arm's nearest ``depth`` of the ``vec_fetch`` rows its ranking fetched (an HNSW
    walk that stops early loses recall: ``ranking.VECTOR_FETCH``). Sorted by ``dist + 0``:
    the planner takes an HNSW scan's rows as sorted by distance, which under
    ``relaxed_order`` they are only roughly, and would cut them with an incremental sort
    that stops reading after the first ``depth`` (pgvector's README re-sorts the same way)."""
    return f"""
vec AS (
    SELECT v.id, rank() OVER (ORDER BY v.dist) AS rank{carry}
    FROM (SELECT * FROM ({branches}
          ) f ORDER BY f.dist + 0, f.id LIMIT %(depth)s) v
),"""


# The vector arm's rows for the BM25 pass (its rows the text arm did not read): read from the
# table by id, or carried by the arm. Only the HNSW walk carries them: it reads each row
# anyway, and saves a scan of the table to plan and its index lookups (~0.1 ms at the
# 10k-row tenant); an exact ranking would copy them into its sort for every row of the scope.
_VEC_READ = """SELECT m.id, m.fts, m.path FROM (SELECT DISTINCT id FROM vec) v
    JOIN memories m ON m.id = v.id"""
_VEC_CARRIED = "SELECT DISTINCT ON (v.id) v.id, v.fts, v.path FROM vec v"

# By route: the vector arm's CTEs, its rows for the BM25 pass, and the result's route flags
# (vec_exact, own_index).
_VEC_ROUTES = {
    # no vector arm (keyword mode)
    None: ("\nvec AS (SELECT NULL::uuid AS id, NULL::bigint AS rank WHERE false),",
           _VEC_READ, "true", "false"),
    # pgvector 0.7: no iterative scans, every scope ranked exactly
    "exact": (_vec_arm(_VEC_EXACT.format(when="")), _VEC_READ, "true", "false"),
    # through the tenant's own index (strata.db.vector_index), as the prelude found it
    "tenant_index": (_vec_arm(_VEC_HNSW.format(when="", carry=", m.fts, m.path"),
                              carry=", v.fts, v.path"), _VEC_CARRIED, "false", "true"),
    # decided by the scope: exactly if it holds at most exact_rows rows, else through HNSW
    "scope": ("""
exact_rows AS (  -- the largest scope ranked exactly
    """ + vector_index.EXACT_ROWS + """
),
scope AS (
    SELECT count(*) <= (SELECT n FROM exact_rows) AS small
    FROM (SELECT 1 FROM memories m
          WHERE m.tenant_id = %(tenant)s
            AND (m.status = ANY(%(statuses)s::memory_status[]) OR %(any_status)s)
          LIMIT (SELECT n FROM exact_rows) + 1) s
),""" + _vec_arm(
        # One branch runs: the other's one-time filter is false.
        _VEC_EXACT.format(when="(SELECT small FROM scope) AND ")
        + "\n        UNION ALL"
        + _VEC_HNSW.format(when="NOT (SELECT small FROM scope) AND ", carry="")),
        _VEC_READ, "(SELECT small FROM scope)", "false"),
}

# The text arm's scores: BM25 over the candidates of both arms (see "Text arm" above).
_POOLED = """
pooled AS (  -- the candidates of both arms, so each gets both scores: the text arm's
            -- rows as it read them, the vector arm's others (_VEC_READ or _VEC_CARRIED)
    SELECT c.id, c.fts, c.path FROM cand c
    UNION ALL
    {vec_rows}
    WHERE v.id NOT IN (SELECT id FROM cand)
),"""
_TEXT_SCORES = """
path_terms AS MATERIALIZED (  -- per distinct path (a few dozen among hundreds of rows)
                             -- naming a query lexeme: those lexemes, in its lexemes' order
    SELECT t.path, t.lexemes
    FROM (SELECT d.path, ARRAY(
                     SELECT l
                     FROM unnest(tsvector_to_array(
                              to_tsvector('english', replace(d.path::text, '.', ' ')))) AS l
                     WHERE l = ANY(%(lexemes)s::text[])) AS lexemes
          FROM (SELECT DISTINCT p.path FROM pooled p) d) t
    WHERE cardinality(t.lexemes) > 0
),
hits AS (
    -- One pass over their lexemes: every (memory, query lexeme) it holds, with the term
    -- frequency; and a query word its path names ("caroline" of conv.c26.caroline, "alice"
    -- of users.alice) counts once where the content does not hold it ("The user moved to
    -- Porto", extracted from Caroline's messages and filed under her path).
    -- The query's lexemes of fts: marked (weight A) and kept, one unnest row each, instead
    -- of unnesting every lexeme of every row and filtering. fts is to_tsvector's: every
    -- lexeme has positions, all of weight D, so the kept positions are all of them.
    SELECT p.id, u.lexeme, coalesce(array_length(u.positions, 1), 1)::float8 AS tf,
           length(p.fts)::float8 AS len
    FROM pooled p, unnest(ts_filter(setweight(p.fts, 'A', %(lexemes)s::text[]), '{a}')) AS u
    UNION ALL
    SELECT p.id, l.lexeme, 1::float8, length(p.fts)::float8
    FROM pooled p JOIN path_terms t ON t.path = p.path, unnest(t.lexemes) AS l(lexeme)
    WHERE NOT l.lexeme = ANY(tsvector_to_array(p.fts))
),
idf AS (  -- document frequency among the matches (every match below the caps)
    SELECT h.lexeme, count(*)::float8 AS df,
           ln(1 + (greatest(c.n, count(*)) - count(*) + 0.5) / (count(*) + 0.5)) AS idf
    FROM hits h, corpus c GROUP BY h.lexeme, c.n
),
bm25 AS (  -- see strata.search.ranking, "Lexical score"; terms: the query's lexemes it holds
    SELECT h.id, sum(i.idf * h.tf * (%(k1)s + 1)
                     / (h.tf + %(k1)s * (1 - %(b)s + %(b)s * h.len / a.avglen))) AS bm25,
           array_agg(h.lexeme) AS terms  -- unordered: a sorted input would reorder the sum
    FROM hits h JOIN idf i USING (lexeme),
         (SELECT greatest(avg(len), 1) AS avglen
          FROM (SELECT DISTINCT id, len FROM hits) d) a
    GROUP BY h.id
),
txt AS (
    SELECT t.id, rank() OVER (ORDER BY t.bm25 DESC) AS rank, t.bm25
    FROM (SELECT b.id, b.bm25 FROM bm25 b JOIN cand c ON c.id = b.id
          ORDER BY b.bm25 DESC, b.id LIMIT %(depth)s) t
),"""

# Without a text arm (vector mode): no candidates, no scores; BM25's N is 0 (each query word
# then counts as df 0 in idf_sum, as when nothing matches).
_NO_TEXT = """
corpus AS (SELECT 0::float8 AS n),
idf AS (SELECT NULL::text AS lexeme, NULL::float8 AS df, NULL::float8 AS idf WHERE false),
bm25 AS (SELECT NULL::uuid AS id, NULL::float8 AS bm25, NULL::text[] AS terms WHERE false),
txt AS (SELECT NULL::uuid AS id, NULL::bigint AS rank WHERE false),"""

# Whether each candidate's valid range starts in or overlaps a window the query names
# (without one: NULL, and no two checks per candidate).
_WINDOWS = """
windows AS (
    SELECT tstzrange(w.lo, w.hi) AS r
    FROM unnest(%(win_lo)s::timestamptz[], %(win_hi)s::timestamptz[]) AS w(lo, hi)
),"""
_WINDOW_MATCH = """CASE
           WHEN EXISTS (SELECT 1 FROM windows w WHERE lower(m.valid) <@ w.r) THEN 'starts'
           WHEN EXISTS (SELECT 1 FROM windows w WHERE m.valid && w.r) THEN 'overlaps'
       END"""

_RESULT = """
pool AS MATERIALIZED (SELECT id FROM vec UNION SELECT id FROM txt)
-- Every candidate with both arms' scores: strata.search.ranking.fuse orders them.
SELECT m.id, m.content, m.context, m.path::text AS path, m.kind::text AS kind,
       m.status::text AS status,
       m.origin::text AS origin,
       lower(m.valid) AS valid_from, upper(m.valid) AS valid_to, m.tags, m.importance,
       m.confidence, m.value_hash, m.slot, vec.rank AS vec_rank, txt.rank AS txt_rank,
       CASE WHEN %(use_vec)s THEN 1 - (m.embedding <=> %(vec)s::vector) END AS cosine,
       CASE WHEN %(use_txt)s THEN coalesce(bm25.bm25, 0) END AS bm25,
       {window_match} AS window_match,
       -- a word nothing holds counts as df 0; summed in the query's word order (in a join's
       -- order, the last bit of the sum was the plan's choice)
       (SELECT sum(coalesce(i.idf, ln(1 + (c.n + 0.5) / 0.5)) ORDER BY l.pos)
        FROM unnest(%(lexemes)s::text[]) WITH ORDINALITY AS l(lexeme, pos)
             LEFT JOIN idf i ON i.lexeme = l.lexeme, corpus c)
         AS idf_sum,
       (SELECT n FROM corpus) AS corpus_n,
       -- for strata.search.ranking's "Later statements": when it was said, the query's lexemes it
       -- holds, and those some but not every readable memory holds (the same for every row)
       coalesce(m.asserted_at, m.recorded_at) AS said_at, bm25.terms AS terms,
       ARRAY(SELECT i.lexeme FROM idf i, corpus c WHERE i.df < c.n) AS telling,
       {vec_exact} AS vec_exact, {own_index} AS own_index
FROM pool p JOIN memories m ON m.id = p.id
LEFT JOIN vec ON vec.id = p.id LEFT JOIN txt ON txt.id = p.id LEFT JOIN bm25 ON bm25.id = p.id
ORDER BY m.id
"""


def _assemble(route: str | None, use_txt: bool, windows: bool, common: bool = False) -> str:
    vec_ctes, vec_rows, vec_exact, own_index = _VEC_ROUTES[route]
    text_scores = _POOLED.format(vec_rows=vec_rows) + _TEXT_SCORES
    ctes = ((_TEXT_MATCHES[common] if use_txt else "") + vec_ctes
            + (text_scores if use_txt else _NO_TEXT) + (_WINDOWS if windows else ""))
    return "WITH" + ctes + _RESULT.format(
        window_match=_WINDOW_MATCH if windows else "NULL::text",
        vec_exact=vec_exact, own_index=own_index)


# Every variant, built once: (route, use_txt, windows, common) -> statement (every mode has
# an arm; ``common``: the query has a common lexeme, which only the text arm reads).
_SEARCHES = {(route, use_txt, windows, common): _assemble(route, use_txt, windows, common)
             for route in _VEC_ROUTES for use_txt in (True, False) for windows in (True, False)
             for common in ((False, True) if use_txt else (False,))
             if route is not None or use_txt}


def _statement(params: dict[str, Any]) -> str:
    """The variant for ``params`` (after the prelude: ``has_own_index``, ``any_common``). The
    route is the one the single statement's one-time filters chose: none without a vector
    arm, exact without iterative scans, the tenant's own index when it has one, else the
    scope's."""
    route = (None if not params["use_vec"] else "exact" if not params["iterative"]
             else "tenant_index" if params["has_own_index"] else "scope")
    use_txt = params["use_txt"]
    return _SEARCHES[route, use_txt, bool(params["win_lo"]),
                     use_txt and params["any_common"] is not None]


# Graph expansion over the ranked hits (``expand: true``; see "Graph expansion" above).
_EXPAND = f"""
WITH ranked AS (
    SELECT h.id, h.pos FROM unnest(%(hits)s::uuid[]) WITH ORDINALITY AS h(id, pos)
),
linked AS (
    SELECT DISTINCT ON (o.id) o.id, r.id AS from_id, r.pos, e.type::text AS edge
    FROM ranked r
    JOIN memory_relationships e
      ON e.tenant_id = %(tenant)s AND (e.source_id = r.id OR e.target_id = r.id)
     AND e.type = ANY(%(edges)s::relationship_type[])
    JOIN memories o
      ON o.id = CASE WHEN e.source_id = r.id THEN e.target_id ELSE e.source_id END
    WHERE {_ACCESS.format(a="o")}
      AND o.id NOT IN (SELECT id FROM ranked)
      AND (NOT %(exclude_derived)s OR o.origin <> 'llm_derived')
    ORDER BY o.id, r.pos, e.type
)
SELECT m.id, m.content, m.context, m.path::text AS path, m.kind::text AS kind,
       m.status::text AS status,
       m.origin::text AS origin,
       lower(m.valid) AS valid_from, upper(m.valid) AS valid_to, m.tags, m.importance,
       m.confidence, x.from_id, x.edge
FROM (SELECT * FROM linked ORDER BY pos, edge, id LIMIT %(limit)s) x
JOIN memories m ON m.id = x.id
ORDER BY x.pos, x.edge, m.id
"""


def _parse_once(*statements: str) -> None:
    """psycopg turns a statement's ``%(name)s`` placeholders into ``$n`` on every execute
    and keeps the result only for statements up to ``MAX_CACHED_STATEMENT_LENGTH`` bytes
    (4 KiB). The search statements are up to ~13 KiB: re-parsing one cost 0.4-0.7 ms of every
    search (a regex over the text, measured on eval/bench_search.py's machine). Raise the
    limit to cover these statements; psycopg's cache is an LRU of 128 entries, so a longer
    statement of other code costs memory only while it is in use."""
    from psycopg import _queries

    longest = max(len(s.encode()) for s in statements)
    if getattr(_queries, "MAX_CACHED_STATEMENT_LENGTH", longest) < longest:
        _queries.MAX_CACHED_STATEMENT_LENGTH = longest


# Candidates per iterative-scan batch through the shared index: the recall of a 10 % tenant
# stops rising past 200 at the same latency, and a tenant too small a share of the table for
# any setting to help gets an index of its own (strata.db.vector_index).
HNSW_EF_SEARCH = 200
# ... and through a tenant's own index, whose graph holds only that tenant's rows: by the
# index's size (its pg_class.reltuples), the first of these (at least so many rows,
# ef_search) that applies, largest first. A small tenant's index finds its true ten at 64; a
# 100k-row one needs 400 to come close, at no cost in latency that could be measured.
# Between the two sizes measured, the step at 20,000 rows is a judgement, not a measurement.
# eval/bench_search.py measures both; docs/benchmarks/performance.md has the figures.
OWN_INDEX_EF_SEARCH = ((50_000, 400), (20_000, 200), (0, 64))


def own_index_ef_search(rows: float) -> int:
    """ef_search for a walk through a tenant's own index of ``rows`` rows (the smallest
    step's for an unknown size: reltuples is -1 for a relation never counted)."""
    return next((ef for least, ef in OWN_INDEX_EF_SEARCH if rows >= least),
                OWN_INDEX_EF_SEARCH[-1][1])


# The same choice in SQL, over the index's reltuples (``o.rows``) in the prelude.
_OWN_INDEX_EF_SQL = "CASE " + " ".join(
    f"WHEN o.rows >= {least} THEN '{ef}'" for least, ef in OWN_INDEX_EF_SEARCH[:-1]
) + f" ELSE '{OWN_INDEX_EF_SEARCH[-1][1]}' END"


# No parallel workers for the search transaction: a Gather under the text arm's LIMIT would
# return its rows in whichever order the workers produce them (the arm's sample is "the
# first rows in heap order"), and on a request's path a worker's start-up costs more than
# it saves. The planner chose one for broad matches once the text arm was fenced (OFFSET 0).
# No JIT compilation either: a server built with LLVM compiles every statement whose
# estimated cost passes ``jit_above_cost`` (100,000 by default, with ``jit`` on since
# PostgreSQL 12), and the search's estimate is dominated by its text matches, which the
# planner prices as if uncapped and, for a lexeme the statistics do not list, by a default
# share of the whole table: ~286,000 for every query of the 10k-row tenant of
# eval/bench_search.py's 1M rows (~84,000 at its 100k-row tenant, 37,000-75,000 at 101k
# rows). Compiling takes tens of milliseconds; the statement returns a few hundred rows.
# (The embedded server has no LLVM: there the setting changes nothing.)
_PLAIN_EXECUTION = ("set_config('max_parallel_workers_per_gather', '0', true) AS no_parallel,"
                    " set_config('jit', 'off', true) AS no_jit")


def _prelude(iterative: bool) -> str:
    """The search transaction's settings and the query's terms, in one statement.

    ``plan_cache_mode = force_custom_plan``: every search is planned for its own parameters
    -- the text arm's match queries and the tenant are what the planner needs to pick the
    tenant-keyed text index and a tenant's own vector index, and a generic plan (which
    psycopg's prepared statements invite after a few executions) cannot know them. No
    parallel workers and no JIT (``_PLAIN_EXECUTION``). On pgvector 0.8+, the iterative scan
    and ``HNSW_EF_SEARCH`` (by ``OWN_INDEX_EF_SEARCH`` and the index's size when the tenant has a
    valid index of its own; ``has_own_index`` picks the statement's variant, ``_statement``,
    so the catalog is asked once)."""
    if not iterative:
        return ("SELECT set_config('plan_cache_mode', 'force_custom_plan', true) AS plan_mode,"
                f" {_PLAIN_EXECUTION}, false AS has_own_index, t.* FROM ({_QUERY_TERMS}) t")
    return ("SELECT set_config('plan_cache_mode', 'force_custom_plan', true) AS plan_mode,"
            f" {_PLAIN_EXECUTION},"
            " set_config('hnsw.iterative_scan', 'relaxed_order', true) AS iterative_scan,"
            f" set_config('hnsw.ef_search', CASE WHEN o.rows IS NOT NULL THEN"
            f" {_OWN_INDEX_EF_SQL} ELSE '{HNSW_EF_SEARCH}' END, true) AS ef_search,"
            " o.rows IS NOT NULL AS has_own_index, t.*"
            f" FROM (SELECT ({_OWN_INDEX}) AS rows) o, ({_QUERY_TERMS}) t")


_parse_once(*_SEARCHES.values(), _EXPAND, _prelude(True), _prelude(False))

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


# The text index's most common elements (``tenant:lexeme``, migration 0007) with the rows
# each is estimated to be in (its frequency times the table's rows): what ANALYZE saw.
_LEXEME_STATS = """
SELECT split_part(x.e, ':', 1) AS tenant, substr(x.e, strpos(x.e, ':') + 1) AS lexeme,
       x.f * greatest(c.reltuples, 0) AS rows
FROM pg_class c, pg_class i JOIN pg_namespace n ON n.oid = i.relnamespace, pg_stats s,
     unnest(s.most_common_elems::text::text[], s.most_common_elem_freqs) AS x(e, f)
WHERE c.oid = 'memories'::regclass AND i.oid = 'memories_tenant_text_idx'::regclass
  AND s.schemaname = n.nspname AND s.tablename = i.relname AND x.e IS NOT NULL
  AND x.f * greatest(c.reltuples, 0) >= %(least)s
"""
# The smallest count kept: COMMON_LEXEME_ROWS may be set lower than it was when the statistics
# were read (eval/bench_text_sample.py varies it), never below this.
_LEXEME_STATS_LEAST = 100

_LEXEME_ROWS: "weakref.WeakKeyDictionary[Database, tuple[float, dict[str, dict[str, float]]]]" = (
    weakref.WeakKeyDictionary())
_LEXEME_ROWS_LOCK = threading.Lock()


def common_lexemes(db: Database, conn: Any, caller: Caller) -> list[str]:
    """The caller's tenant's lexemes in at least ``COMMON_LEXEME_ROWS`` rows of the text
    index, by the table's statistics (``pg_stats.most_common_elems`` of
    ``memories_tenant_text_idx``), read through ``conn`` at most once per
    ``LEXEME_STATS_TTL`` seconds per Database -- for a caller that may read the whole tenant
    only, else none: the statistics count every row of the tenant, and which rows a narrower
    key's search samples must not depend on rows it may not read.

    The statistics keep the table's most frequent elements, whoever's they are (up to ten
    times ``default_statistics_target`` of them, by a sample of the table): a lexeme they do
    not list was seen less often than those they do, and is sampled as a rare one. That
    errs on the side of the arm's cost as it was, never of its recall."""
    if not caller.can("", Level.read):
        return []
    now = time.monotonic()
    cached = _LEXEME_ROWS.get(db.owner)
    if cached is None or cached[0] <= now:
        with _LEXEME_ROWS_LOCK:
            cached = _LEXEME_ROWS.get(db.owner)
            if cached is None or cached[0] <= now:
                by_tenant: dict[str, dict[str, float]] = {}
                for r in conn.execute(_LEXEME_STATS, {"least": _LEXEME_STATS_LEAST}).fetchall():
                    by_tenant.setdefault(r["tenant"], {})[r["lexeme"]] = float(r["rows"])
                cached = (now + LEXEME_STATS_TTL, by_tenant)
                _LEXEME_ROWS[db.owner] = cached
    mine = cached[1].get(str(caller.tenant_id), {})
    return sorted(lexeme for lexeme, rows in mine.items() if rows >= COMMON_LEXEME_ROWS)


# Per Database: the scopes whose BM25 count reached the cap, with when that stops being
# believed (monotonic seconds). Bounded: past _CORPUS_AT_CAP_MAX entries the expired go, and
# if none has, all of them (each is then counted once more).
_CORPUS_AT_CAP: "weakref.WeakKeyDictionary[Database, dict[tuple, float]]" = (
    weakref.WeakKeyDictionary())
_CORPUS_AT_CAP_MAX = 10_000


def _corpus_key(params: dict[str, Any]) -> tuple | None:
    """What ``corpus`` counts, as a key (None at ``valid_at``: a scope per instant asked
    about, never remembered)."""
    if params["valid_at"] is not None:
        return None
    return (params["tenant"], tuple(params["readable"]),
            None if params["paths"] is None else tuple(params["paths"]),
            tuple(params["statuses"]), params["any_status"], params["stat_cap"])


def _corpus_at_cap(db: Database, params: dict[str, Any]) -> bool:
    """Whether the scope of ``params`` is known to hold at least ``stat_cap`` rows: its BM25
    N is then the cap, uncounted (see "Text arm")."""
    key, known = _corpus_key(params), _CORPUS_AT_CAP.get(db.owner)
    return key is not None and known is not None and known.get(key, 0.0) > time.monotonic()


def _remember_corpus_at_cap(db: Database, params: dict[str, Any]) -> None:
    """A count of the scope of ``params`` just reached ``stat_cap``: believe it for
    ``CORPUS_AT_CAP_TTL`` seconds."""
    key = _corpus_key(params)
    if key is None:
        return
    now = time.monotonic()
    known = _CORPUS_AT_CAP.get(db.owner)
    if known is None:
        known = _CORPUS_AT_CAP.setdefault(db.owner, {})
    if len(known) >= _CORPUS_AT_CAP_MAX:
        for k in [k for k, until in list(known.items()) if until <= now] or list(known):
            known.pop(k, None)
    known[key] = now + CORPUS_AT_CAP_TTL


def statuses_for(include: Sequence[str]) -> list[str]:
    out = ["active"]
    for name in include:
        out += [s for s in INCLUDE_STATUSES[name] if s not in out]
    return out


def search(db: Database, caller: Caller, req: SearchRequest, embedder: Embedder,
           **options: Any) -> list[SearchResult]:
    """Rank what ``caller`` may read for ``req``: the results of :func:`run`."""
    return run(db, caller, req, embedder, **options).results


def run(
    db: Database,
    caller: Caller,
    req: SearchRequest,
    embedder: Embedder,
    *,
    now: datetime | None = None,
    access_log: "AccessLog | None" = None,
    ignore_status: bool = False,
    params: ranking.FusionParams | None = None,
    reads: Reads | None = None,
) -> SearchResponse:
    """Rank what ``caller`` may read for ``req``, and diagnose ``req.why_not``.

    Keyword-only (not reachable from HTTP): ``now`` resolves the query's date expressions
    (default: the current time, UTC); ``access_log`` receives the returned ids (default
    :data:`ACCESS_LOG`); ``ignore_status`` drops the status filter -- it exists only so the
    golden evaluation can prove its leak check discriminates, and must never be wired to a
    request field; ``params`` are the fusion's weights (eval/tune_fusion.py varies them);
    ``reads`` may send the ranking statement to a replica (:mod:`strata.db.routing`). The
    audit entry and access bookkeeping always go to ``db``, the writer.
    """
    with audited(db, caller, "read", "memory.search") as event:
        event.query_len = len(req.query)
        source, read_from = reads.database(caller) if reads is not None else (db, "writer")
        try:
            found = candidates(source, caller, req, embedder, now=now,
                               ignore_status=ignore_status, audit_head=source is db)
        except Unavailable:
            if source is db:
                raise
            log.warning("replica unavailable; search runs on the writer")
            found, read_from = candidates(db, caller, req, embedder, now=now,
                                          ignore_status=ignore_status, audit_head=True), "writer"
        found.read_from = read_from
        event.head = found.audit_head  # read beside the statement: the entry's one round trip
        fused = ranking.fuse(found.candidates, mode=req.mode, query=req.query,
                             idf_sum=found.idf_sum, params=params or ranking.DEFAULT,
                             telling=found.telling,
                             calibration=ranking.calibration_for(embedder.model))
        hits = [(rank, h) for rank, h in enumerate(fused.ranked, 1)
                if req.min_score is None or h.relevance >= req.min_score][:req.limit]
        results = [_result(h, rank, fused, found, req) for rank, h in hits]
        if req.expand and hits:
            results += _expand(db, caller, req, [h.candidate.id for _, h in hits],
                               ignore_status=ignore_status)
        event.count = len(results)
        event.memory_ids = [r.id for r in results]
        why = None
        if req.why_not:
            why = _why_not(db, caller, req, fused, {r.id for r in results},
                           ignore_status=ignore_status)
    (access_log or ACCESS_LOG).record(db, caller.tenant_id, [r.id for r in results])
    return SearchResponse(results=results, why_not=why)


def _why_not(db: Database, caller: Caller, req: SearchRequest, fused: ranking.Fused,
             returned: set[uuid.UUID], *, ignore_status: bool) -> list[WhyNot]:
    """For each id of ``req.why_not``: returned, or the checks it fails (evaluated by
    _WHY_NOT, from the statement's own conditions), else its place in the ranking."""
    meta, meta_ops = meta_filter.split(req.meta)
    params = {**_access_params(caller, req, ignore_status), "kinds": req.kinds,
              "tags": req.tags, "meta": _jsonb(meta),
              "meta_ops": Jsonb(meta_ops) if meta_ops else None, "why_ids": req.why_not}
    with db.connection() as conn:
        rows = {r["id"]: r for r in conn.execute(_WHY_NOT, params).fetchall()}
    ranks = {h.candidate.id: (i, h) for i, h in enumerate(fused.ranked, 1)}
    out = []
    for mid in req.why_not:
        row = rows.get(mid)
        if row is None or not row["readable"]:
            out.append(WhyNot(id=mid, returned=False, reasons=["not_visible"], message=(
                "no memory this key can read has this id")))
            continue
        rank, hit = ranks.get(mid, (None, None))
        if mid in returned:
            out.append(WhyNot(id=mid, returned=True, rank=rank, reasons=[],
                              message=f"returned, ranked {_ordinal(rank)}"))
            continue
        failed = list(dict.fromkeys(
            name for i, name in enumerate(_CHECK_NAMES) if not row[f"ok_{i}"]))
        if failed:
            said = {"status": f"its status is {row['status']}",
                    "validity": "it was not valid at valid_at", "paths": "outside `paths`",
                    "kinds": "its kind is not in `kinds`", "tags": "it lacks a tag of `tags`",
                    "meta": "its meta does not match `meta`",
                    "origin": "it is derived (llm_derived) and exclude_derived is set"}
            out.append(WhyNot(id=mid, returned=False, reasons=failed, message="excluded: " +
                              "; ".join(said[f] for f in failed)))
        elif hit is None:
            out.append(WhyNot(id=mid, returned=False, reasons=["not_found_by_arms"], message=(
                f"passes every filter, but neither arm ranked it among its best "
                f"{max(ranking.ARM_DEPTH, req.limit)}")))
        elif req.min_score is not None and hit.relevance < req.min_score:
            out.append(WhyNot(id=mid, returned=False, rank=rank, reasons=["min_score"],
                              message=f"its score {hit.relevance:.3f} is below min_score"))
        else:
            out.append(WhyNot(id=mid, returned=False, rank=rank, reasons=["below_limit"],
                              message=f"ranked {_ordinal(rank)}, below limit {req.limit}"))
    return out


def _ordinal(n: int | None) -> str:
    if n is None:
        return "-"
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


class Found(BaseModel):
    """What both arms found for one request, before fusion."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    candidates: list[ranking.Candidate]
    idf_sum: float | None
    # the query's lexemes some but not every memory the caller may read holds (ranking,
    # "Later statements")
    telling: frozenset[str] = frozenset()
    vec_route: str | None  # exact | tenant_index | shared_index (None: no vector arm)
    windows: list[dict[str, Any]]
    read_from: str = "writer"  # writer | replica (strata.db.routing)
    audit_head: tuple[int, bytes] | None = None  # the tenant's audit head (strata.audit.HEAD)


def candidates(db: Database, caller: Caller, req: SearchRequest, embedder: Embedder, *,
               now: datetime | None = None, ignore_status: bool = False,
               audit_head: bool = False) -> Found:
    """Every memory either arm finds for ``req`` (at most ``ARM_DEPTH`` each, or ``limit`` if
    larger), with both raw scores: the input of :func:`strata.search.ranking.fuse`. Not audited on its
    own: :func:`search` is the entry point. ``audit_head``: also read the tenant's audit head
    (``Found.audit_head``) in the statement's round trip, for the search's audit entry when
    ``db`` is where it goes."""
    params, windows = _search_params(caller, req, embedder, now=now,
                                     ignore_status=ignore_status)
    use_vec = params["use_vec"]
    with db.connection() as conn:
        params["iterative"] = use_vec and _iterative_scan(db, conn)
        if params["use_txt"]:
            params["common"] = common_lexemes(db, conn, caller)
            params["corpus_at_cap"] = _corpus_at_cap(db, params)
        rows, head = _rows(conn, params, audit_head=audit_head)
    moment = now or datetime.now(UTC)
    found = [ranking.Candidate(
        id=r["id"], vec_rank=r["vec_rank"], txt_rank=r["txt_rank"],
        cosine=None if r["cosine"] is None else float(r["cosine"]),
        bm25=None if r["bm25"] is None else float(r["bm25"]),
        window_match=r["window_match"], importance=r["importance"],
        confidence=r["confidence"], value_hash=bytes(r["value_hash"]), row=r,
        said_at=r["said_at"], terms=frozenset(r["terms"] or ()),
        ended=r["valid_to"] is not None and r["valid_to"] <= moment, slot=r["slot"])
        for r in rows]
    first = rows[0] if rows else {}
    if first and not params["corpus_at_cap"] and first["corpus_n"] >= params["stat_cap"]:
        _remember_corpus_at_cap(db, params)
    route = None
    if use_vec and first:
        route = ("exact" if first["vec_exact"] else
                 "tenant_index" if first["own_index"] else "shared_index")
    return Found(candidates=found,
                 idf_sum=None if first.get("idf_sum") is None else float(first["idf_sum"]),
                 telling=frozenset(first.get("telling") or ()),
                 vec_route=route, windows=windows,
                 audit_head=None if head is None else (head["seq"], bytes(head["row_hash"])))


def _search_params(caller: Caller, req: SearchRequest, embedder: Embedder, *,
                   now: datetime | None, ignore_status: bool
                   ) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The statement's parameters for ``req`` (without ``iterative``, which the connection's
    database decides), and the query's time windows."""
    for i, p in enumerate(req.paths or []):
        validate_path(p, field=f"paths[{i}]")
    meta, meta_ops = meta_filter.split(req.meta)
    now = now or datetime.now(UTC)
    windows = time_windows(req.query, now)
    use_vec = req.mode in ("hybrid", "vector")
    vec = embedder.embed([req.query])[0] if use_vec else None
    params = {
        **_access_params(caller, req, ignore_status), "vec": vec, "text": req.query,
        "kinds": req.kinds, "tags": req.tags, "meta": _jsonb(meta),
        "meta_ops": Jsonb(meta_ops) if meta_ops else None,
        "use_vec": use_vec, "use_txt": req.mode in ("hybrid", "keyword"),
        "depth": max(ranking.ARM_DEPTH, req.limit),
        "vec_fetch": max(ranking.VECTOR_FETCH, ranking.ARM_DEPTH, req.limit),
        "stat_cap": ranking.BM25_STAT_CAP,
        "k1": ranking.BM25_K1, "b": ranking.BM25_B,
        "two_cap": TEXT_TWO_LEXEME_CAP, "one_cap": TEXT_ONE_LEXEME_CAP,
        "win_lo": [w["from"] for w in windows], "win_hi": [w["to"] for w in windows],
        **vector_index.exact_scope_params(),
        "own_index": vector_index.index_name(caller.tenant_id),
        "common": [],  # the tenant's common lexemes: candidates() reads them (common_lexemes)
        "corpus_at_cap": False,  # N known to be the cap: candidates() asks (_corpus_at_cap)
    }
    return params, windows


def _rows(conn: Any, params: dict[str, Any], *, audit_head: bool = False
          ) -> tuple[list[dict[str, Any]], dict[str, Any] | None]:
    """Both arms' candidates: the prelude (settings, the query's terms) and the statement,
    in one transaction, and (``audit_head``) the tenant's audit head as that transaction
    saw it. ``params`` gains the prelude's terms."""
    # One transaction (the settings are SET LOCAL: this search only), pipelined: two round
    # trips, BEGIN with the first statement and COMMIT with the second (its rows are read
    # once the pipeline has synced).
    with conn.pipeline():
        with conn.transaction():
            terms = conn.execute(_prelude(params["iterative"]), params).fetchone()
            params.update({k: terms[k] for k in ("lexemes", "any_rare", "any_common",
                                                  "two_lexemes", "has_own_index")})
            cur = conn.execute(_statement(params), params)
            head = (conn.cursor().execute(_AUDIT_HEAD, {"tenant_id": params["tenant"]})
                    if audit_head else None)
    return cur.fetchall(), None if head is None else head.fetchone()


def _access_params(caller: Caller, req: SearchRequest, ignore_status: bool) -> dict[str, Any]:
    """The parameters of ``_ACCESS``: what a returned memory must satisfy."""
    return {"tenant": caller.tenant_id, "readable": caller.paths(Level.read),
            "paths": req.paths, "valid_at": req.valid_at,
            "statuses": statuses_for(req.include), "any_status": ignore_status,
            "exclude_derived": req.exclude_derived}


def _expand(db: Database, caller: Caller, req: SearchRequest, hits: list[uuid.UUID], *,
            ignore_status: bool) -> list[SearchResult]:
    with db.connection() as conn:
        rows = conn.execute(_EXPAND, {
            **_access_params(caller, req, ignore_status), "hits": hits,
            "edges": list(EXPAND_EDGES), "limit": req.limit}).fetchall()
    return [SearchResult(
        id=r["id"], content=r["content"], context=r["context"], path=r["path"], kind=r["kind"],
        status=r["status"],
        origin=r["origin"], score=0.0, valid_from=r["valid_from"], valid_to=r["valid_to"], tags=r["tags"],
        importance=r["importance"], confidence=r["confidence"], expanded=True,
        expanded_from=r["from_id"], edge=r["edge"],
        explain={"expanded": {"from": r["from_id"], "edge": r["edge"]}} if req.explain else None,
    ) for r in rows]


def _jsonb(value: dict[str, Any] | None) -> Jsonb | None:
    return None if value is None else Jsonb(value)


def _result(hit: ranking.Ranked, rank: int, fused: ranking.Fused, found: Found,
            req: SearchRequest) -> SearchResult:
    c, r = hit.candidate, hit.candidate.row
    explain = None
    if req.explain:
        boosts: dict[str, Any] = {}
        if found.windows:
            boosts["time_window"] = {
                "value": hit.time_boost,
                "match": c.window_match,  # starts | overlaps | None
                "windows": [{"text": w["text"], "from": w["from"], "to": w["to"]}
                            for w in found.windows],
            }
        if hit.attribute:
            # the slot holds the attribute the question asks about (strata.search.ranking, "Asked
            # attribute"); the slot itself is not shown: its value part is memory content
            boosts["asked_attribute"] = {"value": hit.attribute_boost,
                                         "attribute": hit.attribute}
        explain = {
            "mode": req.mode,
            "vector": {"rank": c.vec_rank, "score": c.cosine, "normalized": hit.vector,
                       "exact": found.vec_route == "exact" if found.vec_route else None,
                       "route": found.vec_route},
            "text": {"rank": c.txt_rank, "score": c.bm25, "normalized": hit.text,
                     "idf_sum": found.idf_sum},
            "fusion": {"vector_weight": fused.weight,
                       "text_strength": fused.strength, "top_cosine": fused.top_cosine},
            "boosts": boosts,
            # the fused score that ranked it; the ``score`` shown is the relevance below
            "rank_score": hit.score, "tie_breakers": ranking.TIE_BREAKERS,
            "relevance": hit.scored.explain() if hit.scored else None,
            "score": hit.relevance,
            # moved up before this earlier statement of the same words (strata.search.ranking,
            # "Later statements"), whatever the scores say
            "later_than": hit.before,
            "read_from": found.read_from,
        }
    return SearchResult(
        id=c.id, content=r["content"], context=r["context"], path=r["path"], kind=r["kind"],
        status=r["status"],
        origin=r["origin"], score=hit.relevance, rank=rank, valid_from=r["valid_from"], valid_to=r["valid_to"],
        tags=r["tags"], importance=r["importance"], confidence=r["confidence"],
        explain=explain,
    )


# --------------------------------------------------------------------------------------
# Access bookkeeping, off the query path
# --------------------------------------------------------------------------------------



class AccessLog:
    """Access bookkeeping for returned search results, written after the response.

    ``record`` only touches memory (a dict coalescing repeat hits per memory: count and
    latest time) and wakes a daemon thread, which writes pending entries in batches of
    ``batch`` with one upsert each, at most every ``interval`` seconds (sooner once a batch
    is full). The queue is bounded by ``max_pending`` distinct memories; beyond it new
    entries are dropped and counted (``dropped``) -- bookkeeping is best effort and never
    slows or fails a search. Rows locked by another transaction are skipped and retried on
    the next flush (up to ``retries`` times; a memory deleted meanwhile ends there).

    ``flush()`` writes everything pending synchronously (tests, shutdown); it waits for a
    flush in progress. At interpreter exit pending entries are flushed once. On Lambda the
    thread is frozen between invocations and resumes with the next one; entries pending
    when a container is recycled are lost (access counts are advisory, not audited).

    Writes go to ``memory_access`` only (:mod:`strata.write.bookkeeping`): a memory's row,
    its version (a client's ``If-Match`` stays valid), ``updated_at`` and history are never
    touched.
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
            # Bounded like any database call (strata.db.deadline): a frozen server costs
            # this batch, not a pooled connection held until it thaws.
            with db.connection(deadline_s=_BOOKKEEPING_DEADLINE_S) as conn:
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
