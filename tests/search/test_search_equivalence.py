"""The search statement, rewritten for latency (issue 17), returns exactly what it returned
before: the same candidate rows with the same raw scores (cosine, bm25, idf_sum), ranks,
window matches and route flags, for generated queries, filters and arm caps, on every route
(exact, a tenant's own HNSW index, pgvector 0.7's exact-only path). The reference is the
statement as it was, frozen in tests/search/search_reference.py."""

from __future__ import annotations

import contextlib
import hashlib
import random
import uuid
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import search_reference
import support
from strata.auth.keys import authenticate
from strata.db import vector_index
from strata.search import hybrid as S
from strata.search.hybrid import SearchRequest

NOW = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
WORDS = ("postgres deploy region python budget travel flight dentist birthday sister manager "
         "release incident latency customer invoice coffee tea running guitar chess lisbon "
         "boston alice caroline ops notes team weekly").split()
FILLER = "the user says told about with from and prefers likes usually".split()
PATHS = ("users.alice", "users.bob", "conv.c26.caroline", "shared.ops", "shared.team.notes")
STATUSES = ("active",) * 6 + ("candidate", "superseded", "archived", "rejected")
KINDS = ("fact", "preference", "event")
TAGS = ("work", "home", "health")


def seed(db, embedder, tenant_id: uuid.UUID, n: int, rng: random.Random) -> None:
    """``n`` memories straight into the table (search reads the table; the write path is
    not what is tested): words from a small vocabulary so queries share lexemes with many
    rows, repeated words (term frequency), every status, kind, some tags, meta, origins and
    validity ranges, a few without an embedding."""
    rows = []
    for i in range(n):
        words = [rng.choice(WORDS) if rng.random() < 0.5 else rng.choice(FILLER)
                 for _ in range(rng.randint(3, 14))]
        content = " ".join(words).capitalize() + f" (m{i})"
        start = NOW - timedelta(days=rng.randint(0, 60))
        end = start + timedelta(days=rng.randint(1, 30)) if rng.random() < 0.2 else None
        rows.append((
            tenant_id, rng.choice(PATHS), content, content.lower(),
            hashlib.sha256(content.lower().encode()).digest(), rng.choice(KINDS),
            rng.choice(STATUSES), "llm_derived" if rng.random() < 0.2 else "user_stated",
            [t for t in TAGS if rng.random() < 0.3],
            '{"project": "%s"}' % rng.choice(("apollo", "zeus")),
            round(rng.random(), 2), start, end))
    vectors = embedder.embed([r[2] for r in rows])
    with db.transaction() as cur:
        for r, vec in zip(rows, vectors):
            no_vec = r[2].endswith("7)")  # about one in ten without an embedding
            cur.execute(
                "INSERT INTO memories (tenant_id, path, content, canonical, value_hash, kind,"
                " status, origin, tags, meta, importance, valid, embedding, embedding_model)"
                " VALUES (%s, %s::ltree, %s, %s, %s, %s::memory_kind, %s::memory_status,"
                " %s::memory_origin, %s, %s::jsonb, %s, tstzrange(%s, %s), %s, %s)",
                (*r, None if no_vec else vec, None if no_vec else "hashing"))
    with db.connection() as conn:
        conn.execute("ANALYZE memories")


@pytest.fixture
def corpus(db, embedder, make_tenant):
    """Two tenants of the same shape (the other one's rows must never appear)."""
    rng = random.Random(17)
    mine, other = make_tenant("mine"), make_tenant("other")
    seed(db, embedder, mine.tenant_id, 400, rng)
    seed(db, embedder, other.tenant_id, 200, rng)
    return mine


queries = st.builds(
    lambda words, date: " ".join(words) + (f" {date}" if date else ""),
    st.lists(st.sampled_from(WORDS + FILLER + ["zebra", "m17", "caroline's", "alice"]),
             min_size=1, max_size=6),
    st.sampled_from([None, None, "last week", "yesterday", "in February 2026"]))

requests = st.fixed_dictionaries({
    "query": queries,
    "mode": st.sampled_from(["hybrid", "hybrid", "vector", "keyword"]),
    "kinds": st.one_of(st.none(), st.lists(st.sampled_from(KINDS), min_size=1, max_size=2,
                                           unique=True)),
    "tags": st.one_of(st.none(), st.lists(st.sampled_from(TAGS), min_size=1, max_size=1)),
    "paths": st.one_of(st.none(), st.lists(st.sampled_from(["users", "conv", "shared.ops"]),
                                           min_size=1, max_size=2, unique=True)),
    "include": st.lists(st.sampled_from(["candidates", "history"]), max_size=2, unique=True),
    "meta": st.sampled_from([None, {"project": "apollo"}]),
    "exclude_derived": st.booleans(),
    "valid_at": st.sampled_from([None, NOW - timedelta(days=10)]),
})
# The arms' caps and depth, small enough that they cut (the text arm's sample in heap order,
# the corpus count, each arm's top rows), and the production values.
caps = st.fixed_dictionaries({
    "two_cap": st.sampled_from([S.TEXT_TWO_LEXEME_CAP, 5, 1]),
    "one_cap": st.sampled_from([S.TEXT_ONE_LEXEME_CAP, 4, 0]),
    "stat_cap": st.sampled_from([2000, 30]),
    "depth": st.sampled_from([50, 7]),
})


# Columns the statement gained after the reference (strata.search.ranking, "Later statements"):
# checked against the reference's own scores in ``assert_same``; and the memory's slot, read
# as stored (strata.search.ranking, "Asked attribute").
ADDED = ("said_at", "terms", "telling", "slot")


def canonical(rows: list[dict]) -> list[tuple]:
    """Every column of every row, exactly -- but ``idf_sum``, which the reference summed in
    whichever order its join produced the query's words (the plan's choice, so its last bit
    varied with the planner's estimates); the statement now sums in the query's word order.
    It must agree to 1e-12 (compared in ``assert_same``)."""
    return sorted(tuple(sorted((k, v) for k, v in r.items()
                               if k not in ("idf_sum", "corpus_n", *ADDED)))
                  for r in rows)


def assert_added_columns_agree(rows: list[dict], lexemes: list[str]) -> None:
    """A row holds query terms exactly when it has a BM25 score, and they are query lexemes;
    every row carries the same telling lexemes, query lexemes some row holds; ``said_at`` is
    set."""
    telling = {tuple(sorted(r["telling"] or [])) for r in rows}
    assert len(telling) <= 1
    for r in rows:
        assert r["said_at"] is not None
        terms = r["terms"] or []
        assert bool(terms) == bool(r["bm25"]), r
        assert set(terms) <= set(lexemes)
        assert set(r["telling"] or []) <= set(lexemes)


def assert_same(db, embedder, caller, body: dict, cap: dict, *, iterative: bool,
                ignore_status: bool = False) -> list[dict]:
    req = SearchRequest(**{k: v for k, v in body.items() if v is not None}, limit=10)
    params, _ = S._search_params(caller, req, embedder, now=NOW, ignore_status=ignore_status)
    params.update(cap, iterative=iterative and params["use_vec"])
    params["vec_fetch"] = params["depth"]  # the reference's vector arm fetched its depth
    with db.connection() as conn:
        expected = search_reference.rows(conn, params)
        ran = dict(params)  # gains the prelude's terms
        got, _ = S._rows(conn, ran)
    assert canonical(got) == canonical(expected)
    assert_added_columns_agree(got, ran["lexemes"])
    sums = {r["idf_sum"] for r in got} | {r["idf_sum"] for r in expected}
    assert len(sums) <= 2 and (None not in sums or sums == {None})
    if len(sums) == 2:
        a, b = sums
        assert abs(a - b) <= 1e-12 * max(abs(a), abs(b))
    return got


SETTINGS = settings(max_examples=60, deadline=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture])


@SETTINGS
@given(body=requests, cap=caps, iterative=st.booleans())
def test_statement_returns_what_the_reference_returned(db, embedder, corpus, body, cap,
                                                       iterative):
    """Exact route (a small tenant, no index of its own), with and without iterative scans
    (pgvector 0.7 ranks exactly): row for row, score for score."""
    assert_same(db, embedder, authenticate(db, corpus.key), body, cap, iterative=iterative)


@pytest.mark.parametrize("own_index", [False, True])
def test_statement_agrees_on_both_routes_and_without_status(db, embedder, corpus, own_index):
    """The exact route and the tenant_index one (a partial HNSW index of the tenant's own),
    and ``ignore_status``; control: the statements take that route and find rows."""
    if own_index:
        vector_index._build(db, vector_index.index_name(corpus.tenant_id), corpus.tenant_id)
    caller = authenticate(db, corpus.key)
    rng = random.Random(5)
    seen_rows = 0
    for i in range(40):
        body = {"query": " ".join(rng.sample(WORDS, rng.randint(1, 4))),
                "mode": rng.choice(["hybrid", "vector", "keyword"]),
                "include": rng.sample(["candidates", "history"], rng.randint(0, 2))}
        cap = {"two_cap": rng.choice([1000, 3]), "one_cap": rng.choice([200, 2]),
               "stat_cap": rng.choice([2000, 25]), "depth": rng.choice([50, 6])}
        got = assert_same(db, embedder, caller, body, cap, iterative=True,
                          ignore_status=i % 5 == 0)
        if got and body["mode"] != "keyword":
            assert got[0]["own_index"] is own_index and got[0]["vec_exact"] is not own_index
        seen_rows += len(got)
    assert seen_rows > 100


def _vector_rows(conn, params: dict, depth: int, fetch: int) -> list[tuple]:
    """The vector arm's candidates at ``depth``, its ranking fetching ``fetch`` rows: (rank,
    id), nearest first."""
    rows, _ = S._rows(conn, {**params, "depth": depth, "vec_fetch": fetch})
    return sorted((r["vec_rank"], str(r["id"])) for r in rows if r["vec_rank"] is not None)



@pytest.mark.parametrize("own_index", [False, True])
def test_the_vector_arm_keeps_the_nearest_depth_of_what_it_fetched(db, embedder, corpus,
                                                                    own_index):
    """The vector arm's ranking fetches ``vec_fetch`` rows (ranking.VECTOR_FETCH: an HNSW walk
    stopped at fewer loses recall) and hands the fusion the nearest ``depth`` of them: for
    generated queries and filters, exactly and walking the tenant's own index, the arm's
    candidates at (depth, fetch) are the first ``depth`` of its candidates at (fetch,
    fetch), in the same order, and the walk returned ``fetch`` rows. Control: the cut
    removes rows (the fetch found more than the depth) in most searches."""
    if own_index:
        vector_index._build(db, vector_index.index_name(corpus.tenant_id), corpus.tenant_id)
    caller = authenticate(db, corpus.key)
    rng = random.Random(23 + own_index)
    cut = 0
    # a table this small is cheapest to scan and sort: the own index is walked only
    # when the planner is steered to it, as it is for a large tenant
    with db.connection() as conn, (support.prefer_an_index(conn) if own_index
                                    else contextlib.nullcontext()):
        for _ in range(30):
            body = {"query": " ".join(rng.sample(WORDS + FILLER, rng.randint(1, 5))),
                    "mode": rng.choice(["hybrid", "vector"]),
                    "include": rng.sample(["candidates", "history"], rng.randint(0, 2)),
                    "kinds": rng.choice([None, [rng.choice(KINDS)]]),
                    "paths": rng.choice([None, ["users"], ["shared"]])}
            req = SearchRequest(**{k: v for k, v in body.items() if v is not None}, limit=5)
            params, _ = S._search_params(caller, req, embedder, now=NOW, ignore_status=False)
            params.update(iterative=True)
            depth, fetch = rng.choice([(5, 12), (8, 40), (20, 50)])
            kept = _vector_rows(conn, params, depth, fetch)
            fetched = _vector_rows(conn, params, fetch, fetch)
            assert [i for _, i in kept] == [i for _, i in fetched][:depth]
            assert [r for r, _ in kept] == [r for r, _ in fetched][:depth]
            cut += len(fetched) > len(kept) == depth
            if own_index:
                name = vector_index.index_name(corpus.tenant_id)
                walked = support.rows_read(support.search_plan(conn, {
                    **params, "depth": depth, "vec_fetch": fetch}), name.__eq__)
                assert walked == len(fetched) and walked > depth, (walked, len(fetched))
    assert cut >= 20


def test_path_words_count_once_where_the_content_lacks_them(db, embedder, corpus):
    """A query naming a path ("caroline" of conv.c26.caroline) scores those rows through the
    path branch of the BM25 pass; the rewritten pass (one lexeme list per distinct path)
    agrees with the reference, and the branch is exercised (control: some row scores > 0
    without holding the word)."""
    caller = authenticate(db, corpus.key)
    body = {"query": "caroline notes budget", "mode": "keyword"}
    got = assert_same(db, embedder, caller, body, {}, iterative=True)
    lacking = [r for r in got if r["path"] == "conv.c26.caroline"
               and "caroline" not in r["content"].lower() and r["bm25"] > 0]
    assert lacking, "no row scored by its path alone"


def test_the_statement_is_not_parsed_again_on_every_search(db, embedder, corpus, monkeypatch):
    """psycopg's placeholder parse of the (long) search statement is cached
    (strata.search.hybrid._parse_once); control: the uncached path is what would run without it."""
    from psycopg import _queries

    parsed: list[bytes] = []
    uncached = _queries._query2pg_nocache

    def spy(query, encoding):
        parsed.append(query)
        return uncached(query, encoding)

    monkeypatch.setattr(_queries, "_query2pg_nocache", spy)
    caller = authenticate(db, corpus.key)
    for _ in range(3):
        S.candidates(db, caller, SearchRequest(query="budget travel notes"), embedder, now=NOW)
    assert not [q for q in parsed if b"path_terms" in q]
    monkeypatch.setattr(_queries, "MAX_CACHED_STATEMENT_LENGTH", 4096)
    S.candidates(db, caller, SearchRequest(query="budget travel notes"), embedder, now=NOW)
    assert [q for q in parsed if b"path_terms" in q]


# --------------------------------------------------------------------------------------
# BM25's N, remembered for a scope whose count reached the cap (strata.search.hybrid._corpus_at_cap)
# --------------------------------------------------------------------------------------

def _corpus_n(db, embedder, caller, req: SearchRequest) -> float:
    found = S.candidates(db, caller, req, embedder, now=NOW)
    assert found.candidates, "nothing found: no row says what N was"
    return found.candidates[0].row["corpus_n"]


def _retire_all_but(db, tenant_id: uuid.UUID, keep: int) -> int:
    """Archive every active row of the tenant but ``keep`` of those holding "budget"; the
    active rows left."""
    with db.transaction() as cur:
        cur.execute(
            "UPDATE memories SET status = 'archived' WHERE tenant_id = %(t)s AND status = 'active'"
            " AND id NOT IN (SELECT id FROM memories WHERE tenant_id = %(t)s AND status = 'active'"
            " AND content ILIKE '%%budget%%' ORDER BY id LIMIT %(keep)s)",
            {"t": tenant_id, "keep": keep})
        return cur.execute("SELECT count(*) AS n FROM memories WHERE tenant_id = %s"
                           " AND status = 'active'", (tenant_id,)).fetchone()["n"]


@pytest.mark.parametrize("ttl", [60.0, 0.0])
def test_a_scope_at_the_cap_is_not_counted_again_while_remembered(db, embedder, corpus,
                                                                  monkeypatch, ttl):
    """A count that reaches the cap is remembered for the TTL: the scope shrunk below the cap
    keeps N at the cap meanwhile; control (TTL 0): the same search counts the rows left. A
    narrower scope (``paths``) is its own: counted."""
    monkeypatch.setattr(S.ranking, "BM25_STAT_CAP", 30)
    monkeypatch.setattr(S, "CORPUS_AT_CAP_TTL", ttl)
    S._CORPUS_AT_CAP.pop(db.owner, None)
    caller = authenticate(db, corpus.key)
    req = SearchRequest(query="budget travel", mode="keyword")
    assert _corpus_n(db, embedder, caller, req) == 30  # counted: ~240 active rows
    left = _retire_all_but(db, corpus.tenant_id, 5)
    assert left == 5
    assert _corpus_n(db, embedder, caller, req) == (30 if ttl else left)
    narrower = SearchRequest(query="budget travel", mode="keyword", paths=["users", "conv",
                                                                          "shared"])
    assert _corpus_n(db, embedder, caller, narrower) == left


@pytest.mark.parametrize("below", ["cap", "valid_at"])
def test_a_scope_below_the_cap_or_at_an_instant_is_counted_every_time(
        db, embedder, corpus, monkeypatch, below):
    """Nothing is remembered for a scope whose count stayed below the cap, nor for one at
    ``valid_at`` (a scope per instant): after rows are retired, the next search's N is the
    rows left. Control: before, N was larger (the cap, for ``valid_at``)."""
    cap = 2000 if below == "cap" else 30
    monkeypatch.setattr(S.ranking, "BM25_STAT_CAP", cap)
    S._CORPUS_AT_CAP.pop(db.owner, None)
    caller = authenticate(db, corpus.key)
    req = SearchRequest(query="budget travel", mode="hybrid",
                        valid_at=NOW if below == "valid_at" else None)
    before = _corpus_n(db, embedder, caller, req)
    assert before == (cap if below == "valid_at" else before) and 30 <= before < 2000
    left = _retire_all_but(db, corpus.tenant_id, 5)
    assert _corpus_n(db, embedder, caller, req) <= left < before


def _subplan(node: dict, name: str) -> dict | None:
    if node.get("Subplan Name") == name:
        return node
    for child in node.get("Plans", []):
        found = _subplan(child, name)
        if found is not None:
            return found
    return None


def _scans(node: dict) -> list[str]:
    return ([node["Node Type"]] if "Scan" in node["Node Type"] else []) + [
        s for child in node.get("Plans", []) for s in _scans(child)]


@SETTINGS
@given(body=requests, stat_cap=st.sampled_from([30, 2000]))
def test_remembering_the_cap_changes_no_row_and_skips_the_count(db, embedder, corpus, body,
                                                                stat_cap):
    """For generated requests: a search remembers its scope exactly when the count reached
    the cap (and no ``valid_at``); run again from memory it returns every row and score the
    counted one did, and its plan has no scan under the corpus count -- control: the counted
    plan scans."""
    S._CORPUS_AT_CAP.pop(db.owner, None)
    caller = authenticate(db, corpus.key)
    req = SearchRequest(**{k: v for k, v in body.items() if v is not None}, limit=10)
    previous, S.ranking.BM25_STAT_CAP = S.ranking.BM25_STAT_CAP, stat_cap
    try:
        found = S.candidates(db, caller, req, embedder, now=NOW)
        params, _ = S._search_params(caller, req, embedder, now=NOW, ignore_status=False)
    finally:
        S.ranking.BM25_STAT_CAP = previous
    params["iterative"] = True
    counted = [c.row for c in found.candidates]
    if not params["use_txt"] or not counted:
        assert not S._corpus_at_cap(db, params)  # vector mode counts nothing
        return
    n = counted[0]["corpus_n"]
    assert S._corpus_at_cap(db, params) is (n >= stat_cap and params["valid_at"] is None)
    if not S._corpus_at_cap(db, params):
        return
    plans = {}
    with db.connection() as conn:
        remembered, _ = S._rows(conn, dict(params, corpus_at_cap=True))
        for at_cap in (False, True):
            p = dict(params, corpus_at_cap=at_cap)
            with conn.transaction():
                terms = conn.execute(S._prelude(True), p).fetchone()
                p.update({k: terms[k] for k in ("lexemes", "any_rare", "any_common",
                                                 "two_lexemes", "has_own_index")})
                plan = conn.execute("EXPLAIN (FORMAT JSON) " + S._statement(p), p).fetchone()
            plans[at_cap] = _subplan(next(iter(plan.values()))[0]["Plan"], "CTE corpus")
    assert sorted(map(str, remembered)) == sorted(map(str, counted))
    assert _scans(plans[False]) and not _scans(plans[True])
