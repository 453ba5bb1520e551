"""/v1/rules: memory rules, the owner's policy for what is kept under a path (strata.rules)."""

from __future__ import annotations

import uuid

from fastapi import APIRouter

from strata.api.deps import DB, CallerDep
from strata.api.openapi import Items, answers
from strata.fields import ScopePath
from strata.rules import store
from strata.rules.models import Rule, RuleDeleted, RuleIn, RuleVersion

router = APIRouter(prefix="/v1/rules", tags=["rules"])


@router.put("", responses=answers(409), description=(
    "Set the rule at `path` (owner on the path): it replaces the rule there, as its next "
    "version. The most specific rule containing a memory's path decides for it."))
def set_rule(body: RuleIn, db: DB, caller: CallerDep) -> Rule:
    return store.set_rule(db, caller, body)


@router.get("", description="Rules on paths the key reads; `path`: at or under it.")
def list_rules(db: DB, caller: CallerDep, path: ScopePath | None = None) -> Items[Rule]:
    return {"items": store.list_rules(db, caller, path=path)}


@router.get("/{rule_id}")
def get_rule(rule_id: uuid.UUID, db: DB, caller: CallerDep) -> Rule:
    return store.get_rule(db, caller, rule_id)


@router.delete("/{rule_id}", description="Remove a rule (owner on its path); history stays.")
def delete_rule(rule_id: uuid.UUID, db: DB, caller: CallerDep) -> RuleDeleted:
    return RuleDeleted(**store.delete_rule(db, caller, rule_id))


@router.get("/{rule_id}/history", description="Every version of the rule, oldest first.")
def rule_history(rule_id: uuid.UUID, db: DB, caller: CallerDep) -> Items[RuleVersion]:
    return {"items": store.rule_history(db, caller, rule_id)}
