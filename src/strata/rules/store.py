"""Memory rules in the store: set, read, list, delete, history, and the resolution every
entry point uses (``effective``).

A rule is set by an owner of its path and read by anyone who reads it. Each change is one
transaction that writes the rule and its history row; the audit entry carries the rule's id
and a count, never its instructions or patterns.
"""

from __future__ import annotations

import uuid
from typing import Any

import psycopg
from psycopg.types.json import Jsonb

from strata.audit import audited
from strata.auth.access import Caller, Level
from strata.db import Database
from strata.foundation.errors import Conflict, InvalidInput, NotFound
from strata.foundation.paths import validate_path
from strata.rules.models import Rule, RuleIn, RuleVersion

COLUMNS = """id, path::text AS path, capture, exclude_categories, exclude_patterns,
    include_categories, instructions, retention_days, version, created_at, updated_at"""

_UPSERT = f"""
INSERT INTO memory_rules (tenant_id, path, capture, exclude_categories, exclude_patterns,
                          include_categories, instructions, retention_days, created_by)
VALUES (%(tenant)s, %(path)s::ltree, %(capture)s, %(exclude_categories)s, %(exclude_patterns)s,
        %(include_categories)s, %(instructions)s, %(retention_days)s, %(principal)s)
ON CONFLICT (tenant_id, path) DO UPDATE SET
    capture = EXCLUDED.capture, exclude_categories = EXCLUDED.exclude_categories,
    exclude_patterns = EXCLUDED.exclude_patterns,
    include_categories = EXCLUDED.include_categories, instructions = EXCLUDED.instructions,
    retention_days = EXCLUDED.retention_days, version = memory_rules.version + 1,
    updated_at = now()
WHERE %(expected)s::bigint IS NULL OR memory_rules.version = %(expected)s::bigint
RETURNING {COLUMNS}
"""

_HISTORY = """
INSERT INTO memory_rule_history (tenant_id, rule_id, version, operation, snapshot, actor)
VALUES (%(tenant)s, %(id)s, %(version)s, %(operation)s, %(snapshot)s, %(actor)s)
"""

# The effective rule of each path: the deepest rule whose path contains it. One statement
# for a whole batch, so the write path resolves every item at once.
_EFFECTIVE = """
SELECT DISTINCT ON (p.path) p.path AS for_path, r.id, r.path::text AS path, r.capture,
       r.exclude_categories, r.exclude_patterns, r.include_categories, r.instructions,
       r.retention_days, r.version, r.created_at, r.updated_at
FROM unnest(%(paths)s::text[]) AS p(path)
JOIN memory_rules r ON r.tenant_id = %(tenant)s AND p.path::ltree <@ r.path
ORDER BY p.path, nlevel(r.path) DESC
"""


def effective(cur: psycopg.Cursor, tenant_id: uuid.UUID, paths: list[str]) -> dict[str, Rule]:
    """The rule that decides for each path (absent: no rule governs it). No merging up the
    tree: a rule at ``users.alice`` replaces one at ``users`` for everything under it."""
    wanted = sorted(set(paths))
    if not wanted:
        return {}
    rows = cur.execute(_EFFECTIVE, {"tenant": tenant_id, "paths": wanted}).fetchall()
    return {r["for_path"]: Rule.from_row(r) for r in rows}


def effective_for(db: Database, tenant_id: uuid.UUID, path: str) -> Rule | None:
    with db.connection() as conn:
        return effective(conn.cursor(), tenant_id, [path]).get(path)


def _snapshot(rule: Rule) -> Jsonb:
    return Jsonb(rule.model_dump(mode="json"))


def set_rule(db: Database, caller: Caller, body: RuleIn) -> Rule:
    """Create or replace the rule at ``body.path`` (owner there); a new version each time."""
    with audited(db, caller, "admin", "rule.set") as event:
        validate_path(body.path, allow_root=True)
        caller.require(body.path, Level.owner)
        both = set(body.exclude_categories) & set(body.include_categories)
        if both:
            raise InvalidInput(f"a category cannot be both excluded and included "
                               f"({', '.join(sorted(both))})", field="include_categories")
        with db.transaction(cause="rule.set", actor=caller.actor) as cur:
            row = cur.execute(_UPSERT, {
                "tenant": caller.tenant_id, "path": body.path, "capture": body.capture,
                "exclude_categories": body.exclude_categories,
                "exclude_patterns": body.exclude_patterns,
                "include_categories": body.include_categories,
                "instructions": body.instructions, "retention_days": body.retention_days,
                "principal": caller.principal_id, "expected": body.expected_version,
            }).fetchone()
            if row is None:
                current = cur.execute(
                    "SELECT version FROM memory_rules WHERE tenant_id = %s AND path = %s::ltree",
                    (caller.tenant_id, body.path)).fetchone()
                raise Conflict(f"the rule at this path is at version {current['version']}",
                               field="expected_version")
            if body.expected_version is not None and row["version"] == 1 \
                    and body.expected_version != 1:
                raise Conflict("there is no rule at this path to replace",
                               field="expected_version")
            rule = Rule.from_row(row)
            cur.execute(_HISTORY, {"tenant": caller.tenant_id, "id": rule.id,
                                   "version": rule.version, "operation": "set",
                                   "snapshot": _snapshot(rule), "actor": caller.actor})
        event.memory_ids = [rule.id]
        event.count = 1
        return rule


def _visible(cur: psycopg.Cursor, caller: Caller, rule_id: uuid.UUID, *,
             lock: bool = False) -> Rule:
    row = cur.execute(
        f"SELECT {COLUMNS} FROM memory_rules WHERE tenant_id = %s AND id = %s"
        f" AND path <@ %s::ltree[]{' FOR UPDATE' if lock else ''}",
        (caller.tenant_id, rule_id, caller.paths(Level.read))).fetchone()
    if row is None:  # another tenant's, or on a path the caller cannot read
        raise NotFound("rule", rule_id)
    return Rule.from_row(row)


def get_rule(db: Database, caller: Caller, rule_id: uuid.UUID) -> Rule:
    with audited(db, caller, "read", "rule.get") as event:
        event.memory_ids = [rule_id]
        with db.connection() as conn:
            rule = _visible(conn.cursor(), caller, rule_id)
        event.count = 1
        return rule


def list_rules(db: Database, caller: Caller, *, path: str | None = None) -> list[Rule]:
    """Rules on paths the caller reads, in path order; ``path``: at or under it."""
    if path is not None:
        validate_path(path, allow_root=True)
    with audited(db, caller, "read", "rule.list") as event:
        with db.connection() as conn:
            rows = conn.execute(
                f"SELECT {COLUMNS} FROM memory_rules WHERE tenant_id = %(tenant)s"
                " AND path <@ %(readable)s::ltree[]"
                " AND (%(path)s::ltree IS NULL OR path <@ %(path)s::ltree)"
                " ORDER BY path LIMIT 1000",
                {"tenant": caller.tenant_id, "readable": caller.paths(Level.read),
                 "path": path}).fetchall()
        event.count = len(rows)
        return [Rule.from_row(r) for r in rows]


def delete_rule(db: Database, caller: Caller, rule_id: uuid.UUID) -> dict[str, Any]:
    """Remove a rule (owner on its path); its history stays, with a ``delete`` entry."""
    with audited(db, caller, "admin", "rule.delete") as event:
        event.memory_ids = [rule_id]
        with db.transaction(cause="rule.delete", actor=caller.actor) as cur:
            rule = _visible(cur, caller, rule_id, lock=True)
            caller.require(rule.path, Level.owner, field=None)
            cur.execute("DELETE FROM memory_rules WHERE tenant_id = %s AND id = %s",
                        (caller.tenant_id, rule_id))
            cur.execute(_HISTORY, {"tenant": caller.tenant_id, "id": rule.id,
                                   "version": rule.version, "operation": "delete",
                                   "snapshot": _snapshot(rule), "actor": caller.actor})
        event.count = 1
        return {"id": rule_id, "deleted": True, "version": rule.version}


def rule_history(db: Database, caller: Caller, rule_id: uuid.UUID) -> list[RuleVersion]:
    """Every version of a rule, oldest first. Judged by the path it has (or had, when it was
    deleted): the caller must read it there."""
    with audited(db, caller, "read", "rule.history") as event:
        event.memory_ids = [rule_id]
        with db.connection() as conn:
            rows = conn.execute(
                "SELECT version, operation, actor, changed_at, snapshot FROM memory_rule_history"
                " WHERE tenant_id = %s AND rule_id = %s ORDER BY id",
                (caller.tenant_id, rule_id)).fetchall()
        if not rows or not caller.can(rows[-1]["snapshot"]["path"], Level.read):
            raise NotFound("rule", rule_id)
        event.count = len(rows)
        return [RuleVersion(**r) for r in rows]
