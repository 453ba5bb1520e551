"""Gate and conflict analysis in one call, for writes that skip extraction (direct create,
import): the same decisions the pipeline's gate and conflict steps make, inside the caller's
transaction."""

from __future__ import annotations

import logging
import uuid

import psycopg

from strata.write import gate as gating
from strata.write.conflict import NoJudge, RuleJudge, judge_candidate
from strata.write.models import Candidate
from strata.write.apply import Staged

log = logging.getLogger(__name__)


def resolve(
    cur: psycopg.Cursor, tenant_id: uuid.UUID, items: list[Staged],
    thresholds: tuple[float, float], judge=None,
) -> None:
    """Fill each item's gate decision, neighbours and verdicts (merged items are skipped)."""
    live = [i for i in items if not (i.gate and i.gate.get("action") == "merged")]
    if not live:
        return
    inputs = [
        gating.GateInput(i.idx, i.path, i.canonical, i.slot, i.value, False, i.embedding)
        for i in live
    ]
    judge = judge or RuleJudge()
    decisions = gating.decide(cur, tenant_id, inputs, thresholds)
    for item, decision in zip(live, decisions, strict=True):
        if item.name is not None and decision.action == "reinforce":
            decision = gating.GateDecision("new")  # a named memory is its own row
        item.gate = decision.to_json()
    judged = [i for i in live if i.gate["action"] == "judge"]
    shown_all = gating.load_neighbours_many(cur, tenant_id, [i.gate for i in judged])
    for item, shown in zip(judged, shown_all, strict=True):
        item.neighbours = {n.id: n for n in shown}
        candidate = Candidate(content=item.content, kind=item.kind, slot=item.slot,
                              value=item.value, valid_from=item.valid_from)
        try:
            item.verdicts = judge_candidate(judge, candidate, shown)
        except Exception:  # conflict analysis failing never loses the memory
            log.warning("conflict analysis failed on a direct write")
            item.verdicts = judge_candidate(NoJudge(), candidate, shown)
        if item.name is not None:
            item.verdicts = [v for v in item.verdicts if v.relation != "duplicate"]
