"""Conflict analysis: how a candidate relates to the existing memories the gate found.

A judge sees the candidate and its neighbours and returns verdicts. The rule judge needs no
model: a slot match with a different value supersedes; the negation of the same statement
supersedes; a more specific statement of the same thing refines. Model verdicts count only
at confidence >= 0.75 and only for memories the judge was shown. The age guard then keeps an
older statement from superseding a newer one.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Protocol

from strata.write.models import Candidate, Neighbour, Verdict
from strata.write.values import negates, normalise_value
from strata.write.canonical import canonicalize

MIN_CONFIDENCE = 0.75

_NEGATION = re.compile(
    r"\b(no longer|not anymore|anymore|don't|do not|doesn't|does not|never|stopped|quit|"
    r"isn't|is not|not)\b"
)
_WORD = re.compile(r"[^\W_]+")
# Words that carry no meaning for "is this the same statement": a paraphrase may add or
# drop them freely.
_FILLER = frozenset(
    "i me my user user's the a an in on at of to for is am are was be really very just so "
    "and also too now".split()
)


class ConflictJudge(Protocol):
    name: str

    def judge(self, candidate: Candidate, neighbours: list[Neighbour]) -> list[Verdict]: ...


def _tokens(text: str) -> set[str]:
    return set(_WORD.findall(canonicalize(text)))


def _negated(text: str) -> bool:
    return bool(_NEGATION.search(canonicalize(text)))


def _without_negation(text: str) -> set[str]:
    return _tokens(_NEGATION.sub(" ", canonicalize(text))) - {"i", "user", "the", "a", "an"}


class RuleJudge:
    name = "rule"

    def judge(self, candidate: Candidate, neighbours: list[Neighbour]) -> list[Verdict]:
        verdicts = []
        value = normalise_value(candidate.value)
        for n in neighbours:
            if candidate.slot and n.slot == candidate.slot:
                if value is None:
                    # A negation ("I no longer use MongoDB") retires only the value it names.
                    if negates(candidate, n.value):
                        verdicts.append(Verdict(
                            target_id=n.id, relation="supersedes", confidence=0.9,
                            reason=f"negates the current value of slot {candidate.slot}"))
                    continue
                if normalise_value(n.value) == value:
                    verdicts.append(Verdict(
                        target_id=n.id, relation="duplicate", confidence=0.95,
                        reason=f"same value of slot {candidate.slot}"))
                else:
                    verdicts.append(Verdict(
                        target_id=n.id, relation="supersedes", confidence=0.95,
                        reason=f"new value for single-valued slot {candidate.slot}"))
                continue
            if _negated(candidate.content) != _negated(n.content) and (
                _without_negation(candidate.content) == _without_negation(n.content)
            ):
                verdicts.append(Verdict(
                    target_id=n.id, relation="supersedes", confidence=0.9,
                    reason="negates the same statement"))
                continue
            mine, theirs = _tokens(candidate.content), _tokens(n.content)
            core_mine, core_theirs = mine - _FILLER, theirs - _FILLER
            if core_mine and core_mine == core_theirs:
                verdicts.append(Verdict(
                    target_id=n.id, relation="duplicate", confidence=0.85,
                    reason="the same statement in other words"))
                continue
            if theirs and theirs < mine:
                verdicts.append(Verdict(
                    target_id=n.id, relation="refines", confidence=0.8,
                    reason="adds detail to the same statement"))
        return verdicts


def admissible(verdicts: Sequence[Verdict], shown: Sequence[Neighbour]) -> list[Verdict]:
    """Drop what does not count: low confidence, or an id the judge was not shown."""
    ids = {n.id for n in shown}
    return [v for v in verdicts if v.confidence >= MIN_CONFIDENCE and v.target_id in ids]


def judge_candidate(judge: ConflictJudge, candidate: Candidate, shown: list[Neighbour]) -> list[Verdict]:
    """Verdicts for one candidate: a slot match decides by rule, with or without a model;
    the judge sees the other neighbours, and only its admissible verdicts count. A judge
    failure propagates (the caller records it and stores the memory anyway)."""
    by_slot = [n for n in shown if candidate.slot and n.slot == candidate.slot]
    others = [n for n in shown if n not in by_slot]
    verdicts = RuleJudge().judge(candidate, by_slot)
    if others:
        verdicts += admissible(judge.judge(candidate, others), others)
    return verdicts


class NoJudge:
    """Judges nothing: after a judge failure only the slot rules still apply."""

    name = "none"

    def judge(self, candidate: Candidate, neighbours: list[Neighbour]) -> list[Verdict]:
        return []
