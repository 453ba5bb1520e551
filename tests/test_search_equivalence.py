"""The search statement, rewritten for latency (issue 17), returns exactly what it returned
before: the same candidate rows with the same raw scores (cosine, bm25, idf_sum), ranks,
window matches and route flags, for generated queries, filters and arm caps, on every route
(exact, a tenant's own HNSW index, pgvector 0.7's exact-only path). The reference is the
statement as it was, frozen in tests/search_reference.py."""

from __future__ import annotations

import hashlib
import random
import uuid
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import search_reference
from strata import search as S, vector_index
from strata.auth.keys import authenticate
from strata.search import SearchRequest

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


def canonical(rows: list[dict]) -> list[tuple]:
    """Every column of every row, exactly -- but ``idf_sum``, which the reference summed in
    whichever order its join produced the query's words (the plan's choice, so its last bit
    varied with the planner's estimates); the statement now sums in the query's word order.
    It must agree to 1e-12 (compared in ``assert_same``)."""
    return sorted(tuple(sorted((k, v) for k, v in r.items() if k != "idf_sum")) for r in rows)


def assert_same(db, embedder, caller, body: dict, cap: dict, *, iterative: bool,
                ignore_status: bool = False) -> list[dict]:
    req = SearchRequest(**{k: v for k, v in body.items() if v is not None}, limit=10)
    params, _ = S._search_params(caller, req, embedder, now=NOW, ignore_status=ignore_status)
    params.update(cap, iterative=iterative and params["use_vec"])
    with db.connection() as conn:
        expected = search_reference.rows(conn, params)
        got, _ = S._rows(conn, dict(params))
    assert canonical(got) == canonical(expected)
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
    (strata.search._parse_once); control: the uncached path is what would run without it."""
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
