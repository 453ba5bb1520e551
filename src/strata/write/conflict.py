"""Conflict analysis: how a candidate relates to the existing memories the gate found.

A judge sees the candidate and its neighbours and returns verdicts. The rule judge needs no
model: a slot match with a different value supersedes (a single-valued key; values of a
multi-valued family are keys of their own, :mod:`.slots`); a negation supersedes the holder
whose value it names; the negation of the same statement supersedes; the same statement in
other words (one lexical normal form, :mod:`.lexical`) is a duplicate; a more specific
statement of the same thing refines. Model verdicts count only at confidence >= 0.75, only
for memories the judge was shown, and never make one of two distinct facts of a slot family
(another context, another value of a multi-valued family) supersede, contradict or
duplicate the other. The age guard then keeps an older statement from superseding a newer
one.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Protocol

from strata.write import lexical, slots, topics
from strata.write.canonical import canonicalize
from strata.write.models import Candidate, Neighbour, Verdict
from strata.write.values import negates, normalise_value

MIN_CONFIDENCE = 0.75

_WORD = re.compile(r"[^\W_]+")
# Verdicts that would make one memory retire or absorb another.
_REPLACING = frozenset({"supersedes", "contradicts", "duplicate"})


class ConflictJudge(Protocol):
    name: str

    def judge(self, candidate: Candidate, neighbours: list[Neighbour]) -> list[Verdict]: ...


def _tokens(text: str) -> set[str]:
    return set(_WORD.findall(canonicalize(text)))


def slot_rule_applies(candidate: Candidate, n: Neighbour) -> bool:
    """Whether the slot rules, not a judge, decide between ``candidate`` and ``n``."""
    return n.slot_match or slots.decides(candidate.slot, candidate.value, n.slot)


class RuleJudge:
    name = "rule"

    def judge(self, candidate: Candidate, neighbours: list[Neighbour]) -> list[Verdict]:
        verdicts = []
        value = normalise_value(candidate.value)
        for n in neighbours:
            topical = _topical(candidate, value, n)
            if topical is not None:
                verdicts.append(topical)
                continue
            if candidate.slot and slot_rule_applies(candidate, n):
                if value is None:
                    # A negation ("I no longer use MongoDB") retires only the value it names.
                    if negates(candidate, n.value):
                        verdicts.append(Verdict(
                            target_id=n.id, relation="supersedes", confidence=0.9,
                            reason=f"negates the current value of slot {n.slot}"))
                    continue
                if normalise_value(n.value) == value or (
                        n.slot == candidate.slot and slots.is_multi(candidate.slot)):
                    verdicts.append(Verdict(
                        target_id=n.id, relation="duplicate", confidence=0.95,
                        reason=f"same value of slot {candidate.slot}"))
                elif not slots.is_multi(candidate.slot):
                    verdicts.append(Verdict(
                        target_id=n.id, relation="supersedes", confidence=0.95,
                        reason=f"new value for single-valued slot {n.slot}"))
                continue
            if slots.distinct_facts(candidate.slot, n.slot):
                continue  # another context or value of the family: a fact of its own
            if (not candidate.slot and candidate.asserts_change and n.slot and n.value
                    and negates(candidate.model_copy(update={"slot": n.slot}), n.value)):
                # "We dropped Jira and moved to Linear": a change that names a slot's value
                # as given up retires that holder, whatever slot the new statement has.
                verdicts.append(Verdict(
                    target_id=n.id, relation="supersedes", confidence=0.85,
                    reason=f"gives up the value of slot {n.slot}"))
                continue
            mine_negated = lexical.negated(candidate.content)
            if mine_negated != lexical.negated(n.content) and (
                lexical.without_negation(candidate.content) == lexical.without_negation(n.content)
            ):
                verdicts.append(Verdict(
                    target_id=n.id, relation="supersedes", confidence=0.9,
                    reason="negates the same statement"))
                continue
            if lexical.same_statement(candidate.content, n.content):
                verdicts.append(Verdict(
                    target_id=n.id, relation="duplicate", confidence=0.85,
                    reason="the same statement in other words"))
                continue
            mine, theirs = _tokens(candidate.content), _tokens(n.content)
            if theirs and theirs < mine:
                verdicts.append(Verdict(
                    target_id=n.id, relation="refines", confidence=0.8,
                    reason="adds detail to the same statement"))
        return _ended_again(candidate, verdicts)


def _topical(candidate: Candidate, value: str | None, n: Neighbour) -> Verdict | None:
    """The verdict on a neighbour the gate found by topic (:mod:`.topics`): a later word on
    the same plan (a new date, a place, cancelled, done) supersedes the plan's last one; an
    end supersedes what it names as still so (the write narrows a holder that names more);
    the same end said again is a duplicate."""
    if not n.slot_match:
        return None
    if topics.is_plan(candidate.slot) and topics.is_plan(n.slot):
        if value is not None and normalise_value(n.value) == value:
            return Verdict(target_id=n.id, relation="duplicate", confidence=0.9,
                           reason="the same state of the same plan")
        return Verdict(target_id=n.id, relation="supersedes", confidence=0.9,
                       reason=f"a later word on plan {n.slot}")
    if topics.is_end(candidate.slot) and value is None:
        if n.slot == candidate.slot:
            return Verdict(target_id=n.id, relation="duplicate", confidence=0.9,
                           reason="the same end said again")
        return Verdict(target_id=n.id, relation="supersedes", confidence=0.85,
                       reason="ends what it names")
    return None


def _ended_again(candidate: Candidate, verdicts: list[Verdict]) -> list[Verdict]:
    """An end said again after the state came back ("cancelled Hulu", "signed up for Hulu
    again", "cancelled Hulu"): it retires the state, so it replaces the earlier end rather
    than repeating it."""
    if not topics.is_end(candidate.slot) or not any(
            v.relation == "supersedes" for v in verdicts):
        return verdicts
    return [v.model_copy(update={"relation": "supersedes", "reason": "ends it again"})
            if v.relation == "duplicate" and v.reason == "the same end said again" else v
            for v in verdicts]


def coexisting(candidate: Candidate, verdicts: Sequence[Verdict],
               shown: Sequence[Neighbour]) -> list[Verdict]:
    """``verdicts`` with every supersedes, contradicts or duplicate between distinct facts
    of one slot family (by their keys) turned into coexists: a judge may not make "Python
    for scripting" retire "Rust for systems programming", nor French retire Spanish."""
    by_id = {n.id: n for n in shown}
    out = []
    for v in verdicts:
        n = by_id.get(v.target_id)
        if (n is not None and v.relation in _REPLACING and not slot_rule_applies(candidate, n)
                and slots.distinct_facts(candidate.slot, n.slot)):
            v = v.model_copy(update={
                "relation": "coexists",
                "reason": f"distinct facts of slot family {slots.parse(n.slot)[0]}"})
        out.append(v)
    return out


def admissible(verdicts: Sequence[Verdict], shown: Sequence[Neighbour]) -> list[Verdict]:
    """Drop what does not count: low confidence, or an id the judge was not shown."""
    ids = {n.id for n in shown}
    return [v for v in verdicts if v.confidence >= MIN_CONFIDENCE and v.target_id in ids]


def by_slot(candidate: Candidate, shown: Sequence[Neighbour]) -> list[Neighbour]:
    """The neighbours the slot rules decide about."""
    return [n for n in shown if candidate.slot and slot_rule_applies(candidate, n)]


def judge_candidate(judge: ConflictJudge, candidate: Candidate, shown: list[Neighbour]) -> list[Verdict]:
    """Verdicts for one candidate: a slot match decides by rule, with or without a model;
    the judge sees the other neighbours, and only its admissible verdicts count, none of
    them replacing a distinct fact of the candidate's slot family. A judge failure
    propagates (the caller records it and stores the memory anyway)."""
    ruled = by_slot(candidate, shown)
    others = [n for n in shown if n not in ruled]
    verdicts = RuleJudge().judge(candidate, ruled)
    if others:
        verdicts += coexisting(candidate, admissible(judge.judge(candidate, others), others),
                               others)
    return verdicts


class NoJudge:
    """Judges nothing: after a judge failure only the slot rules still apply."""

    name = "none"

    def judge(self, candidate: Candidate, neighbours: list[Neighbour]) -> list[Verdict]:
        return []
