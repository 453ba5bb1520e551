"""The fusion (strata.search.ranking) as a pure function, explored with generated candidate sets; and
BM25 in the real statement: term rarity counts, and its statistics see only what the caller
may read."""

from __future__ import annotations

import math
import uuid
from dataclasses import replace

from hypothesis import given, settings
from hypothesis import strategies as st

from strata.search.ranking import (
    CALIBRATIONS, DEFAULT, FEATURES, Candidate, FusionParams, ScoreInputs, calibrated,
    calibration_for, fuse, has_identifier, vector_weight,
)

scores = st.one_of(st.none(), st.floats(min_value=-1.0, max_value=1.0, allow_nan=False))
bm25s = st.one_of(st.none(), st.floats(min_value=0.0, max_value=40.0, allow_nan=False))


@st.composite
def candidate_sets(draw) -> list[Candidate]:
    n = draw(st.integers(min_value=0, max_value=30))
    return [Candidate(id=uuid.UUID(int=i + 1), vec_rank=None, cosine=draw(scores), txt_rank=None,
                      bm25=draw(bm25s),
                      window_match=draw(st.sampled_from([None, "starts", "overlaps"])),
                      importance=draw(st.floats(0, 1)), confidence=draw(st.floats(0, 1)),
                      value_hash=i.to_bytes(4, "big")) for i in range(n)]


params = st.builds(FusionParams, vector_weight=st.floats(0, 1), by_text_strength=st.floats(0, 1),
                   by_vector_top=st.floats(0, 2), identifier_shift=st.floats(0, 0.5),
                   time_start=st.floats(0, 0.3), time_overlap=st.floats(0, 0.3))
queries = st.sampled_from(["what does Alice prefer", "incident INC-4417", "flight 2231 gate",
                           "where did we go last week"])


@settings(max_examples=300, deadline=None)
@given(candidate_sets(), st.sampled_from(["hybrid", "vector", "keyword"]), queries, params,
       st.one_of(st.none(), st.floats(0.01, 60)))
def test_fusion_orders_every_candidate_by_a_bounded_score(cands, mode, query, p, idf_sum):
    """Whatever the arms return: every candidate comes back exactly once, best first; arm
    scores are normalised to 0..1; the weight stays inside its clamp; the score is the
    weighted arms plus the time boost; a candidate at least as good in both arms and in time
    never scores below another."""
    fused = fuse(cands, mode=mode, query=query, idf_sum=idf_sum, params=p)
    assert sorted(r.candidate.id for r in fused.ranked) == sorted(c.id for c in cands)
    got = [r.score for r in fused.ranked]
    assert got == sorted(got, reverse=True)
    w = fused.weight
    if mode == "vector":
        assert w == 1.0
    elif mode == "keyword":
        assert w == 0.0
    else:
        assert p.min_weight <= w <= 1 - p.min_weight
    boost = {"starts": p.time_start, "overlaps": p.time_overlap}
    for r in fused.ranked:
        assert 0.0 <= r.vector <= 1.0 and 0.0 <= r.text <= 1.0
        assert r.time_boost == boost.get(r.candidate.window_match or "", 0.0)
        assert abs(r.score - (w * r.vector + (1 - w) * r.text + r.time_boost)) < 1e-9
    for a in fused.ranked:
        for b in fused.ranked:
            if a.vector >= b.vector and a.text >= b.text and a.time_boost >= b.time_boost:
                assert a.score >= b.score - 1e-12


@settings(max_examples=300, deadline=None)
@given(candidate_sets(), candidate_sets(), st.sampled_from(["vector", "keyword"]), queries,
       params, st.one_of(st.none(), st.floats(0.01, 60)))
def test_match_features_are_bounded_and_independent_of_what_else_was_found(
        cands, others, mode, query, p, idf_sum):
    """The score's cosine and text features stay in 0..1 and are the clamped cosine and BM25
    over the query's idf, whatever the candidate's neighbours; the time boost never enters
    them. Control: the fused score of the same candidate does change with neighbours
    (min-max), which is why the score is not made from it alone."""
    others = [Candidate(**{**o.__dict__, "id": uuid.UUID(int=10_000 + i)})
              for i, o in enumerate(others)]

    def features(cs):
        return {r.candidate.id: r.scored.features
                for r in fuse(cs, mode=mode, query=query, idf_sum=idf_sum, params=p).ranked}

    alone, crowd = features(cands), features(cands + others)
    for c in cands:
        for name in ("cosine", "text"):
            assert 0.0 <= alone[c.id][name] <= 1.0
            assert alone[c.id][name] == crowd[c.id][name]
        cosine = 0.0 if c.cosine is None else max(0.0, min(1.0, c.cosine))
        text = min(1.0, (c.bm25 or 0.0) / idf_sum) if idf_sum else 0.0
        assert alone[c.id]["cosine"] == cosine
        assert abs(alone[c.id]["text"] - text) < 1e-12


def test_fused_score_depends_on_neighbours_the_cosine_feature_does_not():
    """The control of the property above, on one fixed case."""
    a = Candidate(uuid.UUID(int=1), 1, 0.5, None, None)
    b = Candidate(uuid.UUID(int=2), 2, 0.2, None, None)
    alone = fuse([a], mode="vector", query="q", idf_sum=None).ranked[0]
    pair = {r.candidate.id: r for r in fuse([a, b], mode="vector", query="q", idf_sum=None).ranked}
    assert alone.score == pair[a.id].score == 1.0  # min-max: the best is 1 either way
    assert pair[b.id].score == 0.0 and pair[b.id].scored.features["cosine"] == 0.2
    assert alone.scored.features["cosine"] == pair[a.id].scored.features["cosine"] == 0.5


calibrations = st.sampled_from(sorted(CALIBRATIONS.values(), key=lambda c: c.name))


@settings(max_examples=200, deadline=None)
@given(candidate_sets(), st.sampled_from(["hybrid", "vector", "keyword"]), queries,
       st.one_of(st.none(), st.floats(0.01, 60)), calibrations)
def test_score_is_a_probability_made_as_explained_and_never_reorders(cands, mode, query,
                                                                      idf_sum, cal):
    """Whatever the candidates: each result's score is in 0..1 and is exactly the logistic of
    its explained parts (intercept plus each coefficient times its feature); the order is
    the fused order whichever calibration scores it (control: the two calibrations give
    different scores for some result)."""
    fused = fuse(cands, mode=mode, query=query, idf_sum=idf_sum, calibration=cal)
    other = next(c for c in CALIBRATIONS.values() if c.name != cal.name)
    again = fuse(cands, mode=mode, query=query, idf_sum=idf_sum, calibration=other)
    assert [r.candidate.id for r in fused.ranked] == [r.candidate.id for r in again.ranked]
    coef = dict(cal.coefficients)
    for rank, r in enumerate(fused.ranked, 1):
        s = r.scored
        assert 0.0 <= r.relevance <= 1.0 and r.relevance == s.score
        assert s.features["rank_match"] == (s.features["cosine"] + s.features["text"]) / 2 / rank
        assert s.contributions == {n: coef[n] * s.features[n] for n in FEATURES}
        assert math.isclose(s.logit, cal.intercept + sum(s.contributions.values()),
                            abs_tol=1e-12)
        assert math.isclose(s.score, 1.0 / (1.0 + math.exp(-s.logit)), rel_tol=1e-12)
    if fused.ranked:
        assert any(a.relevance != b.relevance
                   for a, b in zip(fused.ranked, again.ranked, strict=True))


unit = st.floats(0.0, 1.0)


@settings(max_examples=300, deadline=None)
@given(calibrations, st.one_of(st.none(), st.floats(-1.0, 1.0)), unit,
       st.floats(-2.0, 0.0), st.integers(1, 50),
       st.sampled_from(["cosine", "text", "fused", "rank"]), st.floats(0.0, 1.0))
def test_score_rises_with_each_input(cal, cosine, text, margin, rank, which, step):
    """Each calibration's score never falls when one input gets better -- the cosine, the text
    score, the fused score (nearer the query's best) or the rank (nearer the first) -- the
    rest held; and it stays in 0..1."""
    assert all(c > 0 for _, c in cal.coefficients)
    base = ScoreInputs(cosine=cosine, text=text, fused=margin, best=0.0, rank=rank)
    better = {
        "cosine": replace(base, cosine=min(1.0, (cosine or 0.0) + step)),
        "text": replace(base, text=min(1.0, text + step)),
        "fused": replace(base, fused=min(0.0, margin + step)),
        "rank": replace(base, rank=max(1, rank - int(step * 10))),
    }[which]
    low, high = calibrated(base, cal).score, calibrated(better, cal).score
    assert 0.0 <= low <= high <= 1.0


def test_calibration_belongs_to_the_embedder():
    """The hash embedder's model gets the hash calibration; the local one, and a provider with
    no fit of its own, the local one."""
    assert calibration_for("strata-hash-v1-384").name == "hash"
    assert calibration_for("local:all-MiniLM-L6-v2:384").name == "local"
    assert calibration_for("openai:text-embedding-3-small:1536").name == "local"
    assert CALIBRATIONS["hash"] != CALIBRATIONS["local"]


def test_single_arm_modes_order_by_that_arm_and_ties_break_stably():
    """vector mode orders by cosine, keyword by BM25 (a memory without a lexeme match last);
    equal scores fall back to importance, then confidence, then the content hash."""
    a, b, c = (uuid.UUID(int=i) for i in (1, 2, 3))
    cands = [Candidate(a, 1, 0.9, None, 0.0, importance=0.1, value_hash=b"a"),
             Candidate(b, 2, 0.5, 1, 7.0, importance=0.9, value_hash=b"b"),
             Candidate(c, 3, 0.5, 2, 3.0, importance=0.1, value_hash=b"c")]
    order = lambda mode: [r.candidate.id for r in fuse(cands, mode=mode, query="q",  # noqa: E731
                                                          idf_sum=7.0).ranked]
    assert order("vector") == [a, b, c]  # b and c tie on cosine: importance decides
    assert order("keyword") == [b, c, a]


def test_the_query_shape_moves_the_weight():
    """A strong text match, or an identifier in the query, gives the text arm more weight; a
    close embedding match gives the vector arm more."""
    base = vector_weight(strength=0.5, top_cosine=DEFAULT.vector_top_mid, identifier=False)
    assert base == DEFAULT.vector_weight
    assert vector_weight(strength=1.0, top_cosine=DEFAULT.vector_top_mid, identifier=False) < base
    assert vector_weight(strength=0.5, top_cosine=0.9, identifier=False) > base
    assert vector_weight(strength=0.5, top_cosine=DEFAULT.vector_top_mid, identifier=True) < base
    assert has_identifier("incident INC-4417") and has_identifier("release v2.3.1")
    assert not has_identifier("what does Alice prefer")


# --------------------------------------------------------------------------------------
# BM25 in the statement
# --------------------------------------------------------------------------------------


def _create(client, headers, memories: list[dict]) -> list[str]:
    r = client.post("/v1/memories", headers=headers, json={"memories": memories})
    assert r.status_code == 200, r.text
    return [x["id"] for x in r.json()["results"]]


def _search(client, headers, query: str, **extra) -> list[dict]:
    r = client.post("/v1/search", headers=headers,
                    json={"query": query, "mode": "keyword", "explain": True, **extra})
    assert r.status_code == 200, r.text
    return r.json()["results"]


def test_a_rare_word_outweighs_a_common_one(client, tenant):
    """Given many memories about coffee and one about a quokka
    When searching "coffee quokka" by keyword
    Then the quokka memory ranks above every coffee one (ts_rank, without term rarity, tied
    them), and the coffee memories still come back (control)."""
    h = tenant.headers
    common = [{"content": f"Coffee order number {i} was brewed strong", "path": "shared.cafe"}
              for i in range(30)]
    ids = _create(client, h, common + [{"content": "A quokka visited the garden",
                                        "path": "shared.cafe"}])
    results = _search(client, h, "coffee quokka", limit=20)
    assert results[0]["id"] == ids[-1]
    assert results[0]["explain"]["text"]["score"] > results[1]["explain"]["text"]["score"]
    assert {r["id"] for r in results[1:]} <= set(ids[:-1]) and len(results) == 20


def test_bm25_statistics_count_only_what_the_caller_may_read(client, tenant, db):
    """Given one memory in users.alice and a key clamped to users.alice
    When bob's path fills with memories sharing its words
    Then the clamped key's text score for alice's memory does not move (the statistics never
    count rows it cannot read), while the owner's does (control)."""
    from strata.auth import Caller, create_key

    h = tenant.headers
    _create(client, h, [{"content": "Alice keeps bonsai trees on the balcony",
                         "path": "users.alice"}])
    key = create_key(db, Caller.system(tenant.tenant_id), principal_id=tenant.principal_id,
                     ceiling=[{"path": "users.alice", "level": "read"}]).key
    alice = {"Authorization": f"Bearer {key}"}

    def score(headers) -> float:
        return _search(client, headers, "bonsai balcony")[0]["explain"]["text"]["score"]

    before_alice, before_owner = score(alice), score(h)
    _create(client, h, [{"content": f"Bob waters bonsai number {i} on the balcony",
                         "path": "users.bob"} for i in range(25)])
    assert score(alice) == before_alice
    assert score(h) < before_owner


def test_a_name_in_the_path_counts_when_the_content_says_the_user(client, tenant):
    """Given what each speaker said, extracted as "The user ..." and filed under the speaker's
    path (as ingest files it)
    When asking about one speaker by name
    Then that speaker's memory ranks first (the path names them), and asking about the
    other ranks the other's first (control); the name adds to the text score without being
    in the content."""
    h = tenant.headers
    caroline, melanie = _create(client, h, [
        {"content": "The user moved to Porto last spring", "path": "conv.c1.caroline"},
        {"content": "The user moved to Lisbon last spring", "path": "conv.c1.melanie"},
    ])
    for name, first, second in (("Caroline", caroline, melanie), ("Melanie", melanie, caroline)):
        results = _search(client, h, f"Where did {name} move last spring?")
        assert [r["id"] for r in results] == [first, second]
        assert results[0]["explain"]["text"]["score"] > results[1]["explain"]["text"]["score"]


# --------------------------------------------------------------------------------------
# Later statements (strata.search.ranking.later_first)
# --------------------------------------------------------------------------------------

WORDS = ("standup", "dentist", "recital", "user", "nora")


@st.composite
def stated_sets(draw) -> tuple[list[Candidate], frozenset[str]]:
    """Candidates holding subsets of a few query words, said at distinct or equal times, and
    the telling words (some words every memory holds are not)."""
    from datetime import UTC, datetime, timedelta

    n = draw(st.integers(min_value=0, max_value=12))
    t0 = datetime(2026, 1, 1, tzinfo=UTC)
    cands = [Candidate(id=uuid.UUID(int=i + 1), vec_rank=None, cosine=draw(scores),
                       txt_rank=None, bm25=draw(bm25s), value_hash=i.to_bytes(4, "big"),
                       said_at=t0 + timedelta(days=draw(st.integers(0, 5))),
                       terms=frozenset(draw(st.sets(st.sampled_from(WORDS), max_size=3))))
             for i in range(n)]
    return cands, frozenset(draw(st.sets(st.sampled_from(WORDS))))


@settings(max_examples=300, deadline=None)
@given(stated_sets(), st.sampled_from(["hybrid", "keyword"]), st.integers(1, 4))
def test_a_memory_follows_its_later_restatement_and_nothing_else_moves(drawn, mode, group):
    """Whatever the candidates: each comes back once; a memory whose telling words a later
    statement holds -- at most ``group`` candidates holding them -- ranks below it; and
    two memories neither of which is bound to the other's later restatements keep the
    fused order. Control: with no telling words, the order is the fused score's (ties to the
    later statement)."""
    cands, telling = drawn
    p = FusionParams(later_group=group)
    fused = fuse(cands, mode=mode, query="where is the standup now", idf_sum=5.0, params=p,
                 telling=telling).ranked
    plain = fuse(cands, mode=mode, query="where is the standup now", idf_sum=5.0, params=p,
                 telling=frozenset()).ranked
    assert sorted(r.candidate.id for r in fused) == sorted(c.id for c in cands)
    assert [(-r.score, -r.candidate.said_at.timestamp()) for r in plain] == sorted(
        (-r.score, -r.candidate.said_at.timestamp()) for r in plain)
    pos = {r.candidate.id: i for i, r in enumerate(fused)}
    words = {c.id: c.terms & telling for c in cands}
    moved = set()
    for a in cands:
        holders = [b for b in cands if words[a.id] and words[a.id] <= words[b.id]]
        if len(holders) > group:
            continue
        for b in holders:
            if b.said_at > a.said_at:
                assert pos[b.id] < pos[a.id]
                moved |= {a.id, b.id}
    rest = [r.candidate.id for r in plain if r.candidate.id not in moved]
    assert sorted(rest, key=pos.get) == rest
    if not moved:
        assert [r.candidate.id for r in fused] == [r.candidate.id for r in plain]


def test_a_later_restatement_takes_the_earlier_ones_place_and_past_questions_keep_order():
    """Fused order A (said first), C, B (said last, holding A's word): B moves to just
    before A, C stays where it was relative to A; a question about the past, vector mode
    and a word every memory holds keep the fused order (the controls)."""
    from datetime import UTC, datetime

    from strata.search.ranking import asks_about_past

    a, b, c = (uuid.UUID(int=i) for i in (1, 2, 3))
    day = lambda d: datetime(2026, 1, d, tzinfo=UTC)  # noqa: E731
    cands = [Candidate(a, 1, 0.9, 1, 3.0, said_at=day(1), terms=frozenset({"standup"})),
             Candidate(c, 2, 0.7, 2, 2.0, said_at=day(2), terms=frozenset({"user"})),
             Candidate(b, 3, 0.2, 3, 1.0, said_at=day(3), terms=frozenset({"standup", "user"}))]
    telling = frozenset({"standup"})

    def order(query: str, mode: str = "hybrid", words: frozenset | None = None) -> list:
        return [r.candidate.id for r in fuse(cands, mode=mode, query=query, idf_sum=3.0,
                                             telling=telling if words is None else words
                                             ).ranked]

    assert order("where is the standup") == [b, a, c]
    assert order("where was the standup") == [a, c, b]
    assert order("where is the standup", mode="vector") == [a, c, b]
    assert order("where is the standup", words=frozenset({"nora"})) == [a, c, b]
    for q in ("When did Nora move?", "What was the user's job?", "Where has Kai worked?",
              "How long has she had the dog?", "what did we decide last week"):
        assert asks_about_past(q), q
    for q in ("Where does Nora live now?", "Is the user still vegan?", "What pets does Kai "
              "have?", "who is the user's dentist"):
        assert not asks_about_past(q), q
