"""The search statement as it was before issue 17's latency work (commit 3ec8c3b), kept
verbatim as the reference the current statement must agree with, row for row and score for
score (tests/search/test_search_equivalence.py). Built from the same filter fragments as
strata.search.hybrid, and the same expression for a memory's lexemes (content and context since
migration 0022), so only the statement's own shape is frozen here."""

from strata.search.hybrid import (  # noqa: F401 (the frozen text names them)
    _ACCESS, _FILTERS, _OWN_INDEX, _QUERY_TERMS, HNSW_EF_SEARCH, LEXEMES,
)

# As it was: strata.search.hybrid now sizes it by the tenant's index (64 below 20,000 rows, which
# every tenant of the equivalence test is).
OWN_INDEX_EF_SEARCH = 64

_SEARCH = f"""
WITH corpus AS (  -- BM25's N: what the caller may read, counted up to a cap
    SELECT count(*)::float8 AS n
    FROM (SELECT 1 FROM memories m
          WHERE %(use_txt)s AND {_ACCESS.format(a="m")} LIMIT %(stat_cap)s) s
),
cand AS (  -- the text arm's candidates (see "Text arm" above)
    (SELECT m.id FROM memories m
     WHERE %(use_txt)s
       AND {LEXEMES} @@ %(two_lexemes)s::tsquery
       AND {_FILTERS}
     LIMIT %(two_cap)s)
    UNION
    (SELECT m.id FROM memories m
     WHERE %(use_txt)s
       AND {LEXEMES} @@ %(any_lexeme)s::tsquery
       AND {_FILTERS}
     LIMIT %(one_cap)s)
),
exact_rows AS (  -- the largest scope ranked exactly (see "Vector arm" above)
    SELECT least(%(exact_max)s, greatest(%(exact_min)s,
                 (c.reltuples * %(exact_share)s)::bigint)) AS n
    FROM pg_class c WHERE c.oid = 'memories'::regclass
),
own_index AS (  -- a valid HNSW index of the tenant's own (strata.db.vector_index), as the
                -- transaction's first statement found it (_prelude)
    SELECT %(use_vec)s AND %(iterative)s AND %(has_own_index)s AS yes
),
scope AS (  -- rank exactly: without iterative scans, or over at most exact_rows rows and
            -- without an index of the tenant's own
    SELECT NOT %(iterative)s
           OR (NOT (SELECT yes FROM own_index) AND count(*) <= (SELECT n FROM exact_rows))
             AS small
    FROM (SELECT 1 FROM memories m
          WHERE %(use_vec)s AND %(iterative)s AND NOT (SELECT yes FROM own_index)
            AND m.tenant_id = %(tenant)s
            AND (m.status = ANY(%(statuses)s::memory_status[]) OR %(any_status)s)
          LIMIT (SELECT n FROM exact_rows) + 1) s
),
vec AS (
    -- One branch runs (the other's one-time filter is false): exact (an ORDER BY no index
    -- matches), or the index-usable distance (HNSW). See "Vector arm" above.
    SELECT v.id, rank() OVER (ORDER BY v.dist) AS rank
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
),
pooled AS (  -- the candidates of both arms, so each gets both scores
    SELECT m.id, m.fts, m.path FROM (SELECT id FROM cand UNION SELECT id FROM vec) p
    JOIN memories m ON m.id = p.id
    WHERE %(use_txt)s
),
hits AS (
    -- One pass over their lexemes: every (memory, query lexeme) it holds, with the term
    -- frequency; and a query word its path names ("caroline" of conv.c26.caroline, "alice"
    -- of users.alice) counts once where the content does not hold it ("The user moved to
    -- Porto", extracted from Caroline's messages and filed under her path).
    SELECT p.id, u.lexeme, coalesce(array_length(u.positions, 1), 1)::float8 AS tf,
           length(p.fts)::float8 AS len
    FROM pooled p, unnest(p.fts) AS u
    WHERE u.lexeme = ANY(%(lexemes)s::text[])
    UNION ALL
    SELECT p.id, l.lexeme, 1::float8, length(p.fts)::float8
    FROM pooled p,
         unnest(tsvector_to_array(to_tsvector('english', replace(p.path::text, '.', ' '))))
           AS l(lexeme)
    WHERE l.lexeme = ANY(%(lexemes)s::text[])
      AND NOT l.lexeme = ANY(tsvector_to_array(p.fts))
),
idf AS (  -- document frequency among the matches (every match below the caps)
    SELECT h.lexeme, count(*)::float8 AS df,
           ln(1 + (greatest(c.n, count(*)) - count(*) + 0.5) / (count(*) + 0.5)) AS idf
    FROM hits h, corpus c GROUP BY h.lexeme, c.n
),
bm25 AS (  -- see strata.search.ranking, "Lexical score"
    SELECT h.id, sum(i.idf * h.tf * (%(k1)s + 1)
                     / (h.tf + %(k1)s * (1 - %(b)s + %(b)s * h.len / a.avglen))) AS bm25
    FROM hits h JOIN idf i USING (lexeme),
         (SELECT greatest(avg(len), 1) AS avglen
          FROM (SELECT DISTINCT id, len FROM hits) d) a
    GROUP BY h.id
),
txt AS (
    SELECT t.id, rank() OVER (ORDER BY t.bm25 DESC) AS rank, t.bm25
    FROM (SELECT b.id, b.bm25 FROM bm25 b JOIN cand c ON c.id = b.id
          ORDER BY b.bm25 DESC, b.id LIMIT %(depth)s) t
),
windows AS (
    SELECT tstzrange(w.lo, w.hi) AS r
    FROM unnest(%(win_lo)s::timestamptz[], %(win_hi)s::timestamptz[]) AS w(lo, hi)
),
pool AS (SELECT id FROM vec UNION SELECT id FROM txt)
-- Every candidate with both arms' scores: strata.search.ranking.fuse orders them.
SELECT m.id, m.content, m.context, m.path::text AS path, m.kind::text AS kind,
       m.status::text AS status,
       m.origin::text AS origin,
       lower(m.valid) AS valid_from, upper(m.valid) AS valid_to, m.tags, m.importance,
       m.confidence, m.value_hash, vec.rank AS vec_rank, txt.rank AS txt_rank,
       CASE WHEN %(use_vec)s THEN 1 - (m.embedding <=> %(vec)s::vector) END AS cosine,
       CASE WHEN %(use_txt)s THEN coalesce(bm25.bm25, 0) END AS bm25,
       CASE WHEN EXISTS (SELECT 1 FROM windows w WHERE lower(m.valid) <@ w.r) THEN 'starts'
            WHEN EXISTS (SELECT 1 FROM windows w WHERE m.valid && w.r) THEN 'overlaps'
       END AS window_match,
       (SELECT sum(coalesce(i.idf, ln(1 + (c.n + 0.5) / 0.5)))  -- a word nothing holds
        FROM unnest(%(lexemes)s::text[]) AS l LEFT JOIN idf i ON i.lexeme = l, corpus c)
         AS idf_sum,
       (SELECT small FROM scope) AS vec_exact, (SELECT yes FROM own_index) AS own_index
FROM pool p JOIN memories m ON m.id = p.id
LEFT JOIN vec ON vec.id = p.id LEFT JOIN txt ON txt.id = p.id LEFT JOIN bm25 ON bm25.id = p.id
ORDER BY m.id
"""


def prelude(iterative: bool) -> str:
    """The search transaction's settings and the query's terms, in one statement.

    ``plan_cache_mode = force_custom_plan``: every search is planned for its own parameters
    -- the text arm's match queries and the tenant are what the planner needs to pick the
    tenant-keyed text index and a tenant's own vector index, and a generic plan (which
    psycopg's prepared statements invite after a few executions) cannot know them. On
    pgvector 0.8+, the iterative scan and ``HNSW_EF_SEARCH`` (``OWN_INDEX_EF_SEARCH`` when
    the tenant has a valid index of its own; ``has_own_index`` tells the statement which,
    so the catalog is asked once)."""
    if not iterative:
        return ("SELECT set_config('plan_cache_mode', 'force_custom_plan', true) AS plan_mode,"
                f" false AS has_own_index, t.* FROM ({_QUERY_TERMS}) t")
    return ("SELECT set_config('plan_cache_mode', 'force_custom_plan', true) AS plan_mode,"
            " set_config('hnsw.iterative_scan', 'relaxed_order', true) AS iterative_scan,"
            f" set_config('hnsw.ef_search', CASE WHEN o.yes THEN '{OWN_INDEX_EF_SEARCH}'"
            f" ELSE '{HNSW_EF_SEARCH}' END, true) AS ef_search, o.yes AS has_own_index, t.*"
            f" FROM (SELECT EXISTS ({_OWN_INDEX}) AS yes) o, ({_QUERY_TERMS}) t")


def rows(conn, params: dict, *, any_lexeme: str | None = None) -> list[dict]:
    """The reference's candidate rows for ``params`` (as strata.search.hybrid._search_params builds
    them, with ``iterative`` set), in one transaction like the original. ``any_lexeme``: the
    one-lexeme match query instead of the prelude's (every query word)."""
    # The query's terms as strata.search.hybrid reads them; with no lexeme common its rare ones
    # are every one: the one-lexeme match as it was.
    params = {**params, "common": []}
    with conn.transaction():
        terms = conn.execute(prelude(params["iterative"]), params).fetchone()
        params.update({k: terms[k] for k in ("lexemes", "two_lexemes", "has_own_index")},
                      any_lexeme=terms["any_rare"])
        if any_lexeme is not None:
            params["any_lexeme"] = any_lexeme
        return conn.execute(_SEARCH, params).fetchall()
