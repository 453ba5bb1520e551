"""/v1/rules: memory rules, the owner's policy for what is kept under a path (strata.rules)."""

from __future__ import annotations

import uuid

from typing import Annotated

from fastapi import APIRouter, Path, Query

from strata.api.deps import DB, CallerDep
from strata.api.openapi import Items, answers
from strata.foundation.fields import ScopePath
from strata.rules import store
from strata.rules.models import Rule, RuleDeleted, RuleIn, RuleVersion

router = APIRouter(prefix="/v1/rules", tags=["rules"])

RuleId = Annotated[uuid.UUID, Path(description="The rule's id.")]


@router.put("", operation_id="setRule", responses=answers(409))
def set_rule(body: RuleIn, db: DB, caller: CallerDep) -> Rule:
    """Set the memory rule at a path.

    Owner on the path. It replaces the rule there, as its next version (`expected_version`
    makes it a compare-and-set: 409 when stale). The most specific rule containing a
    memory's path decides for it; every write that a rule decides names it (`rule_id`)."""
    return store.set_rule(db, caller, body)


@router.get("", operation_id="listRules")
def list_rules(
    db: DB, caller: CallerDep,
    path: Annotated[ScopePath | None, Query(description=(
        "Only rules at this path or under it ('' = the tenant root)."))] = None,
) -> Items[Rule]:
    """List memory rules.

    The rules on paths this key can read; with `path`, those at or under it."""
    return {"items": store.list_rules(db, caller, path=path)}


@router.get("/{rule_id}", operation_id="getRule")
def get_rule(rule_id: RuleId, db: DB, caller: CallerDep) -> Rule:
    """Read a memory rule.

    404 when this key cannot read the rule's path, as when there is no such rule."""
    return store.get_rule(db, caller, rule_id)


@router.delete("/{rule_id}", operation_id="deleteRule")
def delete_rule(rule_id: RuleId, db: DB, caller: CallerDep) -> RuleDeleted:
    """Remove a memory rule.

    Owner on its path. Memories it decided stay as they are; its history stays readable."""
    return RuleDeleted(**store.delete_rule(db, caller, rule_id))


@router.get("/{rule_id}/history", operation_id="getRuleHistory")
def rule_history(rule_id: RuleId, db: DB, caller: CallerDep) -> Items[RuleVersion]:
    """A memory rule's history.

    Every version of the rule, and its removal, oldest first."""
    return {"items": store.rule_history(db, caller, rule_id)}
