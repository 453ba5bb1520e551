"""The text arm's one-lexeme sample and common lexemes (issue 17): a lexeme the table's
statistics count in at least ``COMMON_LEXEME_ROWS`` of the tenant's rows is sampled only
while fewer than the arm's depth of rows share two query words -- its postings are then not
read at all -- and every other match is what it was (tests/search/test_search_equivalence.py holds
the statement to the reference when no lexeme is common)."""

from __future__ import annotations

import random
import uuid

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import search_reference
import support
from strata.auth import Caller
from strata.auth.keys import authenticate, create_key
from strata.search import hybrid as S
from strata.search.hybrid import SearchRequest

WORDS = "coffee tea chess guitar lisbon porto dentist budget zebra".split()
FILLER = "the user said likes about with and".split()


def _insert(db, embedder, tenant_id: uuid.UUID, contents: list[str]) -> None:
    vectors = embedder.embed(contents)
    with db.transaction() as cur:
        for content, vec in zip(contents, vectors):
            cur.execute(
                "INSERT INTO memories (tenant_id, path, content, canonical, value_hash, kind,"
                " status, embedding, embedding_model) VALUES (%s, 'users.alice', %s, %s,"
                " sha256(convert_to(%s, 'UTF8')), 'fact', 'active', %s, 'hashing')",
                (tenant_id, content, content.lower(), content.lower(), vec))


@pytest.fixture
def corpus(db, embedder, make_tenant):
    """Mine: 'coffee' in most rows, 'tea' with it in some, rare words in a few; the other
    tenant: 'chess' in every row (common there, not in mine)."""
    rng = random.Random(3)
    mine, other = make_tenant("mine"), make_tenant("other")
    rows = []
    for i in range(600):
        words = ["coffee"] if i % 5 else []
        words += ["tea"] if i % 3 == 0 else []
        words += [rng.choice(WORDS[2:])] if rng.random() < 0.3 else []
        words += rng.sample(FILLER, 3)
        rng.shuffle(words)
        rows.append(" ".join(words) + f" (m{i})")
    _insert(db, embedder, mine.tenant_id, rows)
    _insert(db, embedder, other.tenant_id, [f"chess club night {i}" for i in range(400)])
    with db.connection() as conn:
        conn.execute("ANALYZE memories")
    return mine


def test_common_lexemes_come_from_the_statistics_per_tenant(db, corpus, monkeypatch):
    """'coffe' (in ~480 of mine's rows) is common at a threshold of 150 and 'tea' (200
    rows) too, only 'coffe' at 300; the other tenant's 'chess' (400 rows) never is mine; at
    a threshold above every count nothing is common. A key that may read only part of the
    tenant gets none (control: the owner's key, the same tenant and threshold)."""
    owner = authenticate(db, corpus.key)
    clamped = authenticate(db, create_key(
        db, Caller.system(corpus.tenant_id), principal_id=corpus.principal_id,
        ceiling=[{"path": "users.alice", "level": "read"}]).key)
    with db.connection() as conn:
        monkeypatch.setattr(S, "COMMON_LEXEME_ROWS", 150)
        common = S.common_lexemes(db, conn, owner)
        assert {"coffe", "tea"} <= set(common)
        assert "chess" not in common and "zebra" not in common
        assert S.common_lexemes(db, conn, clamped) == []
        monkeypatch.setattr(S, "COMMON_LEXEME_ROWS", 300)
        assert "coffe" in S.common_lexemes(db, conn, owner)
        assert "tea" not in S.common_lexemes(db, conn, owner)
        monkeypatch.setattr(S, "COMMON_LEXEME_ROWS", 10**9)
        assert S.common_lexemes(db, conn, owner) == []


def _plan(db, params: dict) -> dict:
    """The statement's EXPLAIN ANALYZE (JSON) for ``params`` (after the prelude)."""
    with db.connection() as conn:
        return support.search_plan(conn, params)


def _scans_of(node: dict, literal: str) -> list[dict]:
    """The plan's index scans whose condition is the tsquery ``literal``."""
    found = [node] if literal in str(node.get("Index Cond", "")) else []
    for child in node.get("Plans", []):
        found += _scans_of(child, literal)
    return found


def _tsquery(scan: dict) -> str:
    """The tsquery an index scan matches (the right side of its condition's @@)."""
    return scan["Index Cond"].rsplit("@@", 1)[1]


def _params(db, embedder, caller, query: str, common: list[str], *, mode: str = "keyword",
            iterative: bool = False, **caps) -> dict:
    params, _ = S._search_params(caller, SearchRequest(query=query, mode=mode), embedder,
                                 now=None, ignore_status=False)
    params.update(caps, common=sorted(common), iterative=iterative)
    if "depth" in caps:  # search_reference's vector arm fetched its depth
        params["vec_fetch"] = caps["depth"]
    return params


def test_a_common_lexeme_is_not_read_once_pairs_fill_the_depth(db, embedder, corpus):
    """"coffee tea": 160 rows hold both. With 'coffe' common and a depth of 50 its postings
    are never read (the scan's loops: 0); with a depth above the pairs found they are (control:
    the same scan, found by its condition); with nothing common 'coffe' is a rare word."""
    caller = authenticate(db, corpus.key)
    literal = f"{corpus.tenant_id}:coffe"

    def loops(common, depth):
        params = _params(db, embedder, caller, "coffee tea", common, depth=depth,
                         one_cap=10**6)  # the rare word's rows would fill the default cap
        plan = _plan(db, params)
        # any_common holds only 'coffe' when it is common: a scan of that one lexeme
        scans = [s for s in _scans_of(plan, literal) if "&" not in _tsquery(s)
                 and "|" not in _tsquery(s)]
        return [s["Actual Loops"] for s in scans], params

    skipped, params = loops(["coffe"], 50)
    assert params["any_common"] is not None and skipped and set(skipped) == {0}
    read, _ = loops(["coffe"], 500)
    assert read and min(read) >= 1
    params = _params(db, embedder, caller, "coffee tea", [], depth=50)
    with db.connection() as conn:  # control: nothing common, 'coffe' is sampled as rare
        terms = conn.execute(S._prelude(False), params).fetchone()
    assert terms["any_common"] is None and literal in terms["any_rare"]


SETTINGS = settings(max_examples=60, deadline=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture])


@SETTINGS
@given(words=st.lists(st.sampled_from(["coffee", "tea", "coffee", "tea"] + WORDS[2:] + FILLER),
                      min_size=1, max_size=4),
       common=st.sets(st.sampled_from(["coffe", "tea", "chess", "zebra", "guitar"])),
       depth=st.sampled_from([7, 50, 1000]), one_cap=st.sampled_from([3, 200, 10**6]),
       two_cap=st.sampled_from([5, 1000]))
@example(words=["coffee", "tea"], common={"coffe"}, depth=50, one_cap=10**6, two_cap=1000)
@example(words=["tea", "coffee"], common={"tea"}, depth=7, one_cap=200, two_cap=1000)
def test_the_text_arm_keeps_pairs_rare_words_and_common_ones_only_when_short(
        db, embedder, corpus, words, common, depth, one_cap, two_cap):
    """For generated queries and common sets, the rows and scores are the reference's
    (every match scored up to the caps, in heap order) with the one-lexeme match narrowed to
    what the arm samples: the rare words when the arm's depth of rows hold two words (a
    common word's rows left out, so they count in no document frequency either), else every
    word -- exactly so where the one-lexeme cap does not cut (where it does, rare words'
    rows come first, and every ranked row holds a query word)."""
    _agrees(db, embedder, authenticate(db, corpus.key), words, common, depth=depth,
            one_cap=one_cap, two_cap=two_cap)


@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(words=st.lists(st.sampled_from(["coffee", "tea", "coffee", "tea"] + WORDS[2:] + FILLER),
                      min_size=1, max_size=4),
       common=st.sets(st.sampled_from(["coffe", "tea", "chess", "zebra"])),
       depth=st.sampled_from([7, 50]), one_cap=st.sampled_from([3, 10**6]))
@example(words=["coffee", "tea"], common={"coffe"}, depth=50, one_cap=10**6)
def test_hybrid_searches_through_the_tenants_own_index_agree_too(
        db, embedder, corpus, words, common, depth, one_cap):
    """The same in hybrid mode through the tenant's own HNSW index (the route whose walk
    hands its rows to the BM25 pass); control: the rows say they took that route."""
    from strata.db import vector_index

    name = vector_index.index_name(corpus.tenant_id)
    with db.connection() as conn:
        built = conn.execute("SELECT 1 FROM pg_class WHERE relname = %s", (name,)).fetchone()
    if not built:
        vector_index._build(db, name, corpus.tenant_id)
    got = _agrees(db, embedder, authenticate(db, corpus.key), words, common, depth=depth,
                  one_cap=one_cap, two_cap=1000, mode="hybrid", iterative=True)
    assert got and all(r["own_index"] for r in got)


def _agrees(db, embedder, caller, words, common, *, mode="keyword", iterative=False,
            **caps) -> list[dict]:
    params = _params(db, embedder, caller, " ".join(words), common, mode=mode,
                     iterative=iterative, **caps)
    depth, one_cap, two_cap = caps["depth"], caps["one_cap"], caps["two_cap"]
    with db.connection() as conn:
        got, _ = S._rows(conn, params)  # params gain the prelude's terms
        pairs = conn.execute(
            "SELECT count(*) AS n FROM memories m WHERE m.tenant_id = %(tenant)s"
            " AND " + S.LEXEMES + " @@ %(two)s::tsquery",
            {"tenant": caller.tenant_id, "two": params["two_lexemes"]}).fetchone()["n"]
        skips = min(pairs, two_cap) >= depth and params["any_common"] is not None
        narrowed = (params["any_rare"] or "" if skips
                    else " | ".join(q for q in (params["any_rare"], params["any_common"]) if q))
        if skips or one_cap == 10**6:
            # no word to match: a lexeme no tenant's keys hold (theirs start with its id)
            expected = search_reference.rows(conn, params, any_lexeme=narrowed or "'-:-'")
            assert sorted(map(_key, got)) == sorted(map(_key, expected))
            return got
        held = {r["id"]: set(r["held"]) for r in conn.execute(
            "SELECT m.id, ARRAY(SELECT l FROM unnest(tsvector_to_array(m.fts)) AS l"
            " WHERE l = ANY(%(lexemes)s::text[])) AS held FROM memories m"
            " WHERE m.id = ANY(%(ids)s::uuid[])",
            {"lexemes": params["lexemes"], "ids": [r["id"] for r in got]}).fetchall()}
    ranked = [r for r in got if r["txt_rank"] is not None]
    assert all(held[r["id"]] for r in ranked)  # each a match of a query word
    return got


def _key(row: dict) -> tuple:
    return (row["id"], row["txt_rank"], row["bm25"], row["vec_rank"])


def test_every_statement_variant_is_valid_sql(db, embedder, corpus):
    """Each of the search statement's variants (route x text arm x time words x common
    lexemes) plans with a request's parameters -- the routes the tests above do not run
    included; control: the variants with a common lexeme read ``any_common``."""
    caller = authenticate(db, corpus.key)
    params, _ = S._search_params(caller, SearchRequest(query="coffee tea last week"), embedder,
                                 now=None, ignore_status=False)
    params.update(common=["coffe"], iterative=True)
    assert params["win_lo"]  # "last week" names a window
    with db.connection() as conn:
        terms = conn.execute(S._prelude(False), params).fetchone()
        params.update({k: terms[k] for k in ("lexemes", "any_rare", "any_common",
                                              "two_lexemes", "has_own_index")})
        for key, statement in S._SEARCHES.items():
            assert ("%(any_common)s" in statement) is key[3]
            plan = conn.execute("EXPLAIN " + statement, params).fetchall()
            assert plan, key
    assert len(S._SEARCHES) == 4 * 2 * 2 + 3 * 2  # text variants x2; no route without an arm
