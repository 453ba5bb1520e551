"""How search orders what its two arms found: pure functions and every weight, in one place.

The statement in :mod:`strata.search.hybrid` returns the candidates of both arms (the vector arm's
nearest ``ARM_DEPTH`` of the ``VECTOR_FETCH`` rows its ranking fetched, and the text arm's
best ``ARM_DEPTH`` by BM25), each with *both* raw scores -- the cosine similarity to the
query and the BM25 score -- plus the statistics below. :func:`fuse` turns them into one
order. The evaluation harnesses import these functions and :data:`DEFAULT`
(``eval/tune_fusion.py`` sweeps :class:`FusionParams` through the same :func:`fuse`);
nothing else keeps a copy of a weight.

Lexical score (BM25, computed in SQL with :data:`BM25_K1` and :data:`BM25_B`)
    ``sum over query lexemes l in the memory: idf(l) * tf * (k1 + 1) / (tf + k1 * (1 - b + b *
    len / avglen))`` with ``idf(l) = ln(1 + (N - df + 0.5) / (df + 0.5))``. ``N`` counts the
    memories the caller may read in the requested statuses and paths, stopping at
    :data:`BM25_STAT_CAP` (a scope found at the cap is not counted again for a minute:
    :mod:`strata.search.hybrid`, "Text arm"); ``df`` counts the text arm's candidates holding ``l`` -- every
    readable row that shares a lexeme with the query, up to the arm's caps (see
    :mod:`strata.search.hybrid`, "Text arm") -- so both count only rows the caller may read (a score
    must not reveal others), and the arm's cost follows what matches, not the scope's size.
    ``len`` is the memory's number of distinct lexemes and ``avglen`` its mean over the
    candidates. A query word the memory's *path* names counts as a term the memory holds
    (``tf`` 1) when its content does not: ingest files what a speaker said under the speaker's
    path in the speaker's voice ("The user moved to Porto" under ``conv.c26.caroline``), so
    "where did Caroline move" finds it by name. Replaces ``ts_rank``, which has no term
    rarity: a question's common words ("like", "think") weighed as much as the one rare word
    that names what it asks about.

Fusion (:func:`fuse`)
    Each arm's score is normalised: the cosine min-max over the candidates (the best 1, the
    worst 0); BM25 over the query's total idf (``text_by_idf``: how much of the query's
    information the memory holds, 0..1), or over the best candidate's. The fused score
    is ``w * vector + (1 - w) * text`` with a per-query vector weight ``w`` (:func:`vector_weight`):

    - ``vector_weight`` to start with;
    - minus ``by_text_strength * (strength - 0.5)``, where ``strength`` is the best BM25 score
      over the query's total idf (clamped to 0..1; a query word no memory holds counts with
      the largest idf): ~1 when one memory holds every informative word of the query, low
      when the best text match holds only common ones, or only the name in "where does
      Alice live";
    - plus ``by_vector_top * (top cosine - vector_top_mid)``: a query the embedder places close
      to some memory trusts the embedder more;
    - minus ``identifier_shift`` when the query holds an identifier (a token with a digit:
      "INC-4417", "v2.3.1", "flight 2231"), which embedders blur and exact lexemes pin;
    - clamped to ``[min_weight, 1 - min_weight]``.

    RRF (equal weights, k = 60) was measured and replaced: it cannot tell a strong arm from a
    weak one, and on LoCoMo turns mode keyword-only beat it by 4.8 points. Numbers in
    :data:`DEFAULT`'s comment and docs/benchmarks/retrieval.md.

    A time-window boost (see :func:`strata.search.hybrid.time_windows`) is then added: ``time_start``
    when the memory's valid range starts inside a window the query names, ``time_overlap`` when
    it only overlaps one. Decay and age never enter the score. Ties break on when each was
    said (the later first; for a question about the present, see "Later statements"),
    importance, confidence, the content hash and id (:data:`TIE_BREAKERS`), so the same
    corpus always ranks the same way.

Later statements (:func:`later_first`)
    A question about what holds now ("what time is the standup", "which gym does Nora go
    to") is answered by the latest of the statements on it: "the standup moved to 10:15"
    after "the standup is at 9:30 on Mondays". The write path supersedes what it
    recognises; what it does not leaves two active memories that the fused score cannot tell
    apart by their words (both hold the question's one telling word), so an embedder's
    preference -- for the lexical ``hash`` one, little more than the shorter text -- decided.
    So, after fusion: a memory whose telling query words (those some but not every memory
    the caller may read holds: not "user" under a user's path, where everything is said as
    "The user ...") are all held by a statement said later yields its place to that
    statement, which moves up to just before it -- when at most ``later_group`` (2)
    candidates hold those words: a statement and its restatement. Words more memories hold
    name a subject ("Project Heron", a person), not one fact, and its memories keep the fused
    order. Not for a question about the past (:func:`asks_about_past`: "when did", "what
    was", "has she visited"), where the latest statement is not the answer, and not in
    vector mode (no words). Nothing is lowered for its age: a memory moves only behind a later
    statement of its own words. The cost: two different facts that share the question's one
    telling word and nothing else of it swap when the later is ranked below ("route53 dns":
    an incident about a DNS record before the note that DNS is in Route 53); without the
    group bound and the past-question check, LoCoMo's questions about past events lost
    their evidence to later mentions of the same words.

Ended states
    A memory whose validity has already ended -- a state told as over ("I ran the 400 in
    high school", "my childhood dog was Rex", "I lived in Berlin for three years") -- does
    not answer a question about what holds now unless nothing that still holds does: its
    fused score loses ``ended_penalty`` for such a question (not for one about the past,
    nor in vector mode); and a later statement that has ended is not moved up before an
    earlier one of the same words (above): it is not the latest word on what holds now.

Asked attribute
    A question that names an attribute of someone ("what does the user do for a living",
    "where is Dana based") is answered by the memory the write path filed under that
    attribute's key (``user.occupation``, ``person.dana.location``), whose words need not
    be the question's: "The user is a receptionist at a dental clinic" holds no "job", and
    with a lexical embedder "The user's job hunt is a mess" wins on words.
    :func:`strata.search.asked.asked` reads the attribute and the person from the question (a
    small table of general vocabulary), and a candidate whose slot holds it
    (:func:`strata.search.asked.answers`) gains ``asked_attribute`` (1.0: above every fused score
    without it, so the keyed answer comes first and the fused order decides among keyed
    ones and among the rest). Not for a memory that has ended, when the question is about
    the present (see "Ended states"), nor in vector mode. Memories without a slot (most of
    LoCoMo's) are untouched.

Relevance (:func:`calibrated`)
    The fused score orders one query's candidates; it is not comparable across queries (the
    vector part is min-max normalised, so some candidate always gets 1), and its scale is
    nobody's: with the ``local`` embedder a query's results scored ~0.01 whether they answered
    it or not. A result's ``score`` is instead the probability that it is relevant -- on
    LoCoMo, that it cites an evidence turn of the question -- from what search already knows
    of it (:class:`ScoreInputs`), as four features (:func:`score_features`, each 0..1): the
    raw cosine, the text score over the query's total idf (how much of the query's
    information the memory holds), and its *match* -- the mean of those two -- discounted by
    its place: ``match / rank`` and ``match * (1 + margin)``, the margin being its fused
    score less the query's best (-1..0). Not the query's vector weight: that is the
    ranking's device, and it can put 95 % on a text arm that found nothing ("which
    database" against "The user prefers MongoDB": no shared word), which scored the right
    answer ~0.01 (measured with the query's weight in the match, the held-out figures were
    a point lower too). A first place
    counts only as much as the match is good: every question of LoCoMo has its answer in the
    store, so a first result there is usually relevant, but the first result of a question
    nothing answers is not. The score is ``1 / (1 + exp(-(intercept + sum(coefficient *
    feature))))``, one :class:`Calibration` per embedder (:data:`CALIBRATIONS`: a ``hash``
    cosine and a ``local`` one mean different things), fitted by eval/score_calibration.py on
    LoCoMo's tuning conversations -- their own questions, and each asked the other's, which
    nothing in it answers -- and checked on the held-out ones (docs/relevance.md has the
    figures). Every coefficient is positive, so the score rises with the cosine, the text
    score, the fused score and the rank.

    The probability is at prior odds of 1.5:1 for relevance, not at the share of a store's
    results that are relevant (LoCoMo's is about 1:10, and it belongs to the corpus and the
    question, not to a result): ``min_score`` 0.5 drops a result when missing a relevant one
    costs 1.5 times what showing an irrelevant one does. On held-out LoCoMo (local
    embedder), 0.5 keeps 83 % of the relevant results, drops 72 % of the others and 99 % of
    the results of questions nothing answers. The probability at a base rate ``b`` is the logistic of ``logit +
    ln(b / (1 - b)) - ln 1.5``.

    The score is computed once the order is final (the rank is an input) and never changes
    it: it replaces the number shown and what ``min_score`` compares with. ``explain.relevance``
    carries the features, each coefficient's contribution, the logit and the score -- the
    same :class:`Scored` the result's ``score`` is. The time boost and an asked attribute
    enter only through the fused score (the margin and the rank).
"""

from __future__ import annotations

import math
import re
import uuid
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from strata.search.asked import answers, asked

# Candidates each arm hands the fusion, and how many rows the vector arm's ranking fetches
# before it keeps its best ARM_DEPTH of them. At 30 candidates LoCoMo's tuning split and the
# golden set score as at 50 and a search costs less, but an HNSW walk that stops at 30 rows
# loses recall through the shared index (a large tenant before its own index is built). So
# the walk fetches VECTOR_FETCH rows (an exact ranking the same: its best 30 are its best 30
# either way) and the arm keeps the nearest ARM_DEPTH of them. eval/bench_arm_depth.py
# measures it; docs/benchmarks/retrieval.md, "How deep each arm goes", has the figures.
ARM_DEPTH = 30
VECTOR_FETCH = 50
BM25_K1 = 1.2
BM25_B = 0.3  # length normalisation: weak, memories are short (docs/benchmarks/retrieval.md)
# N stops counting here (see "Lexical score"): counting costs ~0.6 us a row (3.5 ms at 5,000
# on eval/bench_search.py's 10k-row tenant); past it a tenant's idf values keep their order.
BM25_STAT_CAP = 2000
# said_at (the later first) for a question about the present only (see "Later statements")
TIE_BREAKERS = ["said_at", "importance", "confidence", "value_hash", "id"]

_IDENTIFIER = re.compile(r"\b(?=[\w.-]*\d)[\w][\w.-]*\b")
# A question about the past: a past auxiliary or time word ("when did", "what was", "a year
# ago"), or a perfect ("has ... moved", "have ... seen").
_PAST = re.compile(r"\b(?:did|was|were|had|ago|yesterday|last|used\s+to)\b", re.I)
_PERFECT = re.compile(r"\b(?:has|have|hasn't|haven't)\b(?:\W+\w+){0,5}?\W+(?:\w+ed|been|gone|"
                      r"done|seen|made|taken|given|had|got|gotten|known|met|begun|read|heard|"
                      r"found|left|bought|brought|thought|taught|won|lost|written|run)\b", re.I)


@dataclass(frozen=True)
class FusionParams:
    """The fusion's weights. :data:`DEFAULT` is what search uses."""

    vector_weight: float = 0.3
    by_text_strength: float = 0.2
    by_vector_top: float = 1.0
    vector_top_mid: float = 0.65
    # Not tuned (LoCoMo questions rarely hold one): the golden set's identifier queries.
    identifier_shift: float = 0.15
    min_weight: float = 0.05
    time_start: float = 0.1
    time_overlap: float = 0.05
    # Text normalisation: BM25 over the query's total idf (True: how much of the query's
    # information a memory holds, 0..1) or over the best candidate's BM25 (False).
    text_by_idf: bool = True
    # A memory never ranks above a later statement holding every telling query word it
    # holds, when at most ``later_group`` candidates hold them all (see "Later statements").
    later_first: bool = True
    later_group: int = 2
    # Taken off the fused score of a memory that has stopped being true, for a question
    # about the present (see "Ended states").
    ended_penalty: float = 0.5
    # Added to the fused score of a memory whose slot holds the attribute the question asks
    # about (see "Asked attribute"): above any fused score, so a keyed answer comes first.
    asked_attribute: float = 1.0


# Chosen by eval/tune_fusion.py on LoCoMo conversations 26 and 30 only (local embedder, 384
# points; the other eight were not looked at while choosing): mean hybrid recall_all@5 of the
# two modes 0.5455 on the tuning split. The split's plateau is wide (its best point, 0.5585,
# is three questions of 231 better); this point of it also keeps the golden leak set's
# hybrid MRR at 1.000 with the local embedder (the best point: 0.986; the best with
# text_by_idf: 0.992). All ten conversations, one run: observations 0.534, turns 0.536 (RRF
# over ts_rank: 0.503, 0.426). Swept again once memories carried their context (migration
# 0022; eval/locomo_eval.py stores each turn with the one before it, each observation with the
# exchanges it cites): this point scores 0.6147 on the tuning split, the best 0.6212 (1.5
# questions of 231, trading observations for turns), so it stays.
# docs/benchmarks/retrieval.md has the tables.
DEFAULT = FusionParams()


@dataclass
class Candidate:
    """One memory either arm found, with both arms' raw scores (``None``: that arm did not run,
    or the memory has no embedding)."""

    id: uuid.UUID
    vec_rank: int | None
    cosine: float | None
    txt_rank: int | None
    bm25: float | None
    window_match: str | None = None  # "starts" | "overlaps" | None
    importance: float = 0.5
    confidence: float = 0.5
    value_hash: bytes = b""  # sha256 of the canonical content: a stable last tie-breaker
    row: dict[str, Any] = field(default_factory=dict, repr=False)
    said_at: datetime | None = None  # when it was said (asserted_at, else recorded_at)
    terms: frozenset[str] = frozenset()  # the query's lexemes it holds (content, context, path)
    ended: bool = False  # its validity has an end, already past: a state told as over
    slot: str | None = None  # the key it is filed under (strata.write.slots), if any


@dataclass
class Ranked:
    candidate: Candidate
    score: float
    vector: float  # normalised vector score, 0..1
    text: float  # normalised text score, 0..1
    time_boost: float
    text_by_idf: float = 0.0  # BM25 over the query's total idf, 0..1, whatever ranked
    # The score: the probability that it is relevant, comparable across queries, and how it
    # was made (see "Relevance"); set once the order is final.
    relevance: float = 0.0
    scored: Scored | None = None
    # The earlier statement this one was moved up before (see "Later statements"), if any.
    before: uuid.UUID | None = None
    # The attribute the question asks about that its slot holds (see "Asked attribute").
    attribute: str | None = None
    attribute_boost: float = 0.0


@dataclass
class Fused:
    ranked: list[Ranked]
    weight: float  # the vector arm's weight for this query
    strength: float | None  # best BM25 over the query's idf sum, 0..1
    top_cosine: float | None


def has_identifier(query: str) -> bool:
    return bool(_IDENTIFIER.search(query))


def asks_about_past(query: str) -> bool:
    """Whether the question asks what happened or held at some time ("when did", "what was",
    "has she ever visited") rather than what holds now (see "Later statements")."""
    return bool(_PAST.search(query) or _PERFECT.search(query))


def text_strength(best_bm25: float | None, idf_sum: float | None) -> float | None:
    """How much of the query's information the best text match holds, 0..1."""
    if not best_bm25 or not idf_sum:
        return None if best_bm25 is None else 0.0
    return max(0.0, min(1.0, best_bm25 / idf_sum))


def vector_weight(*, strength: float | None, top_cosine: float | None, identifier: bool,
                  params: FusionParams = DEFAULT) -> float:
    """The vector arm's share of the fused score for one query (see "Fusion")."""
    w = params.vector_weight
    if strength is not None:
        w -= params.by_text_strength * (strength - 0.5)
    if top_cosine is not None:
        w += params.by_vector_top * (top_cosine - params.vector_top_mid)
    if identifier:
        w -= params.identifier_shift
    return max(params.min_weight, min(1.0 - params.min_weight, w))


def _minmax(values: list[float | None]) -> list[float]:
    present = [v for v in values if v is not None]
    if not present:
        return [0.0] * len(values)
    lo, hi = min(present), max(present)
    if hi - lo <= 1e-12:
        return [1.0 if v is not None else 0.0 for v in values]
    return [(v - lo) / (hi - lo) if v is not None else 0.0 for v in values]


def _by_max(values: list[float | None]) -> list[float]:
    hi = max((v for v in values if v is not None), default=0.0)
    if hi <= 0:
        return [0.0] * len(values)
    return [max(0.0, v) / hi if v is not None else 0.0 for v in values]


def _by_idf(values: list[float | None], idf_sum: float) -> list[float]:
    return [min(1.0, max(0.0, v / idf_sum)) if v is not None else 0.0 for v in values]


@dataclass(frozen=True)
class ScoreInputs:
    """What search knows of one result when it scores it (see "Relevance")."""

    cosine: float | None  # raw cosine to the query (None: no vector arm, or no embedding)
    text: float  # BM25 over the query's total idf, 0..1
    fused: float  # the score that ranked it (boosts included)
    best: float  # the best fused score of the query
    rank: int  # its place in the final order, 1-based


@dataclass(frozen=True)
class Calibration:
    """A logistic function from :func:`score_features` to the probability that a result is
    relevant, fitted for one embedder by eval/score_calibration.py."""

    name: str
    intercept: float
    coefficients: tuple[tuple[str, float], ...]


@dataclass(frozen=True)
class Scored:
    """A result's score and how it was made: ``score = 1 / (1 + exp(-logit))``, ``logit =
    intercept + sum(contributions)``, each contribution a coefficient times its feature."""

    calibration: str
    features: dict[str, float]
    contributions: dict[str, float]
    intercept: float
    logit: float
    score: float

    def explain(self) -> dict[str, Any]:
        return {"calibration": self.calibration, "features": self.features,
                "contributions": self.contributions, "intercept": self.intercept,
                "logit": self.logit, "score": self.score}


# The score's features (see "Relevance").
FEATURES = ("cosine", "text", "rank_match", "margin_match")

# Fitted by eval/score_calibration.py --fit on LoCoMo's tuning conversations (26, 30),
# observations mode, hybrid top 10, at prior odds 1.5; refit with the same command after a
# change to the fusion, to a feature, or to an embedder, and paste its ``fit``. Held-out
# figures: docs/relevance.md.
CALIBRATIONS = {
    "local": Calibration("local", -3.6899, (("cosine", 2.8764), ("text", 0.9404),
                                             ("rank_match", 3.4952), ("margin_match", 2.5947))),
    "hash": Calibration("hash", -2.3044, (("cosine", 0.8777), ("text", 2.341),
                                           ("rank_match", 2.9715), ("margin_match", 2.6469))),
}


def calibration_for(embedder_model: str) -> Calibration:
    """The calibration fitted for this embedder (its ``model``: ``local:...``,
    ``strata-hash-v1-384``). Providers with no LoCoMo fit of their own (openai, bedrock) take
    the ``local`` one: a trained sentence embedder's cosines are the nearest kind."""
    return CALIBRATIONS["hash"] if embedder_model.startswith("strata-hash") else CALIBRATIONS["local"]


def score_inputs(hit: Ranked, fused: Fused, rank: int, best: float | None = None) -> ScoreInputs:
    """What search knows of ``hit`` at ``rank`` of ``fused`` (``best``: the query's best fused
    score, when the caller has it)."""
    if best is None:
        best = max((r.score for r in fused.ranked), default=hit.score)
    return ScoreInputs(cosine=hit.candidate.cosine, text=hit.text_by_idf, fused=hit.score,
                       best=best, rank=rank)


def score_features(x: ScoreInputs) -> dict[str, float]:
    """The features of :data:`FEATURES`, each 0..1 and each rising with the cosine, the text
    score, the fused score and the rank (see "Relevance")."""
    cosine = 0.0 if x.cosine is None else max(0.0, min(1.0, x.cosine))
    text = max(0.0, min(1.0, x.text))
    match = (cosine + text) / 2
    return {
        "cosine": cosine,
        "text": text,
        "rank_match": match / max(1, x.rank),
        "margin_match": match * (1.0 + max(-1.0, min(0.0, x.fused - x.best))),
    }


def calibrated(x: ScoreInputs, calibration: Calibration) -> Scored:
    """The probability that the result is relevant, and its parts (see "Relevance")."""
    features = score_features(x)
    contributions = {n: c * features[n] for n, c in calibration.coefficients}
    logit = calibration.intercept + sum(contributions.values())
    # 1 / (1 + e^-z), written for either sign of z so neither side overflows
    score = 1.0 / (1.0 + math.exp(-logit)) if logit >= 0 else math.exp(logit) / (1.0 + math.exp(logit))
    return Scored(calibration.name, features, contributions, calibration.intercept, logit, score)


def fuse(candidates: list[Candidate], *, mode: str, query: str, idf_sum: float | None,
         params: FusionParams = DEFAULT, telling: frozenset[str] | None = None,
         calibration: Calibration | None = None) -> Fused:
    """Order ``candidates`` (best first) for a ``mode`` search (hybrid, vector, keyword), and
    score each (its ``relevance``) by ``calibration`` (default: the ``local`` embedder's).
    ``telling``: the query's lexemes some but not every memory the caller may read holds
    (see "Later statements"; without them, or in vector mode, the fused score alone
    orders)."""
    cos = [c.cosine for c in candidates]
    bm = [c.bm25 if c.bm25 else None for c in candidates]
    vec_n = _minmax(cos)
    txt_n = _by_idf(bm, idf_sum) if params.text_by_idf and idf_sum else _by_max(bm)
    top_cos = max((v for v in cos if v is not None), default=None)
    strength = text_strength(max((v for v in bm if v is not None), default=0.0)
                             if mode != "vector" else None, idf_sum)
    if mode == "vector":
        w = 1.0
    elif mode == "keyword":
        w = 0.0
    else:
        w = vector_weight(strength=strength, top_cosine=top_cos,
                          identifier=has_identifier(query), params=params)
    boost = {"starts": params.time_start, "overlaps": params.time_overlap}
    # A question about the present: ties go to the later statement, later statements of the
    # same words come first (see "Later statements"), and what has ended goes lower (see
    # "Ended states").
    present = params.later_first and mode != "vector" and not asks_about_past(query)
    # The text part of relevance is over the query's idf whatever normalised it for ranking.
    txt_abs = _by_idf(bm, idf_sum) if idf_sum else [0.0] * len(candidates)
    question = asked(query) if mode != "vector" else None
    ranked = []
    for c, v, t, ta in zip(candidates, vec_n, txt_n, txt_abs, strict=True):
        b = boost.get(c.window_match or "", 0.0)
        over = present and c.ended
        ended = params.ended_penalty if over else 0.0
        # the attribute asked about, when its slot holds it (see "Asked attribute")
        attribute = answers(c.slot, question) if question and not over else None
        a = params.asked_attribute if attribute else 0.0
        ranked.append(Ranked(c, w * v + (1.0 - w) * t + b + a - ended, v, t, b, ta,
                             attribute=attribute, attribute_boost=a))
    ranked.sort(key=lambda r: (-r.score, -_said(r.candidate) if present else 0.0,
                               -r.candidate.importance, -r.candidate.confidence,
                               r.candidate.value_hash, str(r.candidate.id)))
    if present and telling:
        ranked = later_first(ranked, telling, group=params.later_group)
    fused = Fused(ranked, w, strength, top_cos)
    # Scored after the order is final (a feature is the rank), and never reordering it.
    cal = calibration or CALIBRATIONS["local"]
    best = max((r.score for r in ranked), default=0.0)
    for rank, r in enumerate(ranked, 1):
        r.scored = calibrated(score_inputs(r, fused, rank, best), cal)
        r.relevance = r.scored.score
    return fused


def _said(c: Candidate) -> float:
    return c.said_at.timestamp() if c.said_at is not None else float("-inf")




def later_first(ranked: list[Ranked], telling: frozenset[str], *,
                group: int = DEFAULT.later_group) -> list[Ranked]:
    """``ranked`` (in fused order) with each memory's later statements -- those holding every
    telling query word it holds, when at most ``group`` candidates hold them all -- moved up
    to just before it, the latest first (see "Later statements")."""
    words = [r.candidate.terms & telling for r in ranked]
    said = [_said(r.candidate) for r in ranked]
    later: list[list[int]] = [[] for _ in ranked]  # in fused order
    for i, held in enumerate(words):
        if not held:
            continue
        holders = [j for j, other in enumerate(words) if held <= other]
        if len(holders) <= group:
            later[i] = [j for j in holders if said[j] > said[i] and not ranked[j].candidate.ended]
    if not any(later):
        return ranked
    out: list[Ranked] = []
    placed = [False] * len(ranked)

    def place(i: int) -> None:
        # Depth-first: a memory's later statements go first, theirs before them; the
        # relation only points to strictly later statements, so it has no cycle, and its
        # depth is at most ``group``.
        if placed[i]:
            return
        placed[i] = True
        for j in later[i]:
            if not placed[j]:
                ranked[j].before = ranked[i].candidate.id
            place(j)
        out.append(ranked[i])

    for i in range(len(ranked)):
        place(i)
    return out
