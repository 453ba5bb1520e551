"""Why a key holds the access it holds at a path: the diagnosis behind ``effective_access``.

A key's own level at a path is the lesser of what its principal's grants give there (the
best grant covering the path) and what its ceiling allows there (the best ceiling entry
covering it; no ceiling: no clamp) -- ``key_own_access`` (migration 0010) pairs each grant with
each ceiling entry whose paths nest, and a pair covers a path exactly when both of its entries
do, so its best pair is that lesser of two bests. A key minted through the API is clamped by
its parent's level the same way, up the chain, so the effective level is the least of the own
levels along the chain; a key that is revoked or expired, held by a disabled principal, or
below such a key has none.

:func:`explain` reads the key, its chain and their principals' grants, and names the entry
that decides: the chain step and the grant or ceiling entry whose level is the effective one
(the key's own entries first, so "clamped by its ceiling" wins over a parent that allows the
same), or what is missing (no grant covers the path, no ceiling entry does, a dead link).
tests/test_access_explain.py holds the result to ``effective_access`` on generated chains.

Owners only, and only entries that bear on the path: a grant or ceiling entry on an unrelated
subtree is not listed, so a subtree owner learns nothing about the rest of the tenant.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any, Literal

from pydantic import BaseModel, Field

from strata.audit import audited
from strata.auth.access import Caller, Level
from strata.db import Database
from strata.foundation.errors import NotFound
from strata.foundation.paths import is_within, validate_path

__all__ = ["AccessExplanation", "explain"]

LevelName = Literal["read", "write", "owner"]


class Entry(BaseModel):
    """A grant or a ceiling entry."""

    path: str = Field(description="The entry's path; its subtree is covered ('' = root).")
    level: LevelName = Field(description="The level it gives there.")


class Step(BaseModel):
    """One key of the chain, the asked key first, then the key that minted it, and so on."""

    key_id: uuid.UUID = Field(description="The key.")
    name: str | None = Field(description="Its name, when given.")
    principal_id: uuid.UUID = Field(description="Who it acts for.")
    principal: str = Field(description="That principal's name.")
    live: bool = Field(description="Unrevoked, unexpired, and its principal enabled.")
    dead_because: str | None = Field(
        default=None, description="revoked, expired or principal_disabled; None when live.")
    grants: list[Entry] = Field(description="The principal's grants covering the path.")
    ceiling: list[Entry] | None = Field(description=(
        "The key's ceiling entries covering the path; None: the key has no ceiling (its "
        "principal's grants are its access)."))
    level: LevelName | None = Field(description="This key's own level at the path.")


class Decision(BaseModel):
    """What decides the key's level at the path."""

    key_id: uuid.UUID | None = Field(description="The chain step that decides.")
    source: Literal["grant", "ceiling", "no_grant", "no_ceiling_entry", "dead_key"] = Field(
        description=("A grant or a ceiling entry whose level is the effective one, or what "
                     "is missing: no grant, no ceiling entry, a dead key in the chain."))
    entry: Entry | None = Field(default=None, description="The deciding grant or ceiling entry.")
    message: str = Field(description="The decision in a sentence.")


class AccessExplanation(BaseModel):
    """A key's effective level at a path and the entry that decides it."""

    key_id: uuid.UUID = Field(description="The key asked about.")
    path: str = Field(description="The path asked about.")
    level: LevelName | None = Field(description="Effective level at the path; None: no access.")
    decided_by: Decision = Field(description="What decides that level.")
    chain: list[Step] = Field(description="The key, then each key that minted it.")


_CHAIN = """
WITH RECURSIVE chain (depth, id) AS (
    SELECT 0, k.id FROM api_keys k WHERE k.id = %(key)s AND k.tenant_id = %(tenant)s
  UNION
    SELECT c.depth + 1, k.parent_id FROM chain c JOIN api_keys k ON k.id = c.id
    WHERE k.parent_id IS NOT NULL AND c.depth < 64
)
SELECT c.depth, k.id, k.name, k.principal_id, p.name AS principal, k.ceiling,
       k.revoked_at, k.expires_at, p.disabled_at,
       COALESCE((SELECT jsonb_agg(jsonb_build_object('path', g.path::text, 'level', g.level))
                 FROM grants g WHERE g.tenant_id = k.tenant_id
                   AND g.principal_id = k.principal_id), '[]') AS grants
FROM chain c JOIN api_keys k ON k.id = c.id
JOIN principals p ON p.id = k.principal_id AND p.tenant_id = k.tenant_id
ORDER BY c.depth
"""


def _best(entries: list[Entry], path: str) -> Entry | None:
    covering = [e for e in entries if is_within(path, e.path)]
    return max(covering, key=lambda e: (Level[e.level], len(e.path)), default=None)


def _dead(row: dict[str, Any], now: datetime) -> str | None:
    if row["revoked_at"] is not None:
        return "revoked"
    if row["expires_at"] is not None and row["expires_at"] <= now:
        return "expired"
    if row["disabled_at"] is not None:
        return "principal_disabled"
    return None


def explain(db: Database, caller: Caller, key_id: uuid.UUID, path: str) -> AccessExplanation:
    """The effective level of ``key_id`` at ``path`` and what decides it. The caller must own
    ``path``; a key of another tenant is ``NotFound``."""
    validate_path(path, field="path", allow_root=True)
    with audited(db, caller, "admin", "access.explain"):
        caller.require(path, Level.owner)
        with db.connection() as conn:
            rows = conn.execute(_CHAIN, {"key": key_id, "tenant": caller.tenant_id}).fetchall()
        if not rows:
            raise NotFound("key", key_id, field="key_id")
        now = datetime.now(UTC)
        steps: list[Step] = []
        level: Level | None = None
        decision: Decision | None = None
        for row in rows:
            grants = [Entry(**g) for g in row["grants"] if _nests(g["path"], path)]
            ceiling = None if row["ceiling"] is None else [
                Entry(**c) for c in row["ceiling"] if _nests(c["path"], path)]
            grant = _best(grants, path)
            cap = None if ceiling is None else _best(ceiling, path)
            dead = _dead(row, now)
            own: Level | None = None
            if not dead and grant is not None and (ceiling is None or cap is not None):
                own = Level[grant.level] if cap is None else min(Level[grant.level],
                                                                 Level[cap.level])
            steps.append(Step(key_id=row["id"], name=row["name"], principal_id=row["principal_id"],
                              principal=row["principal"], live=dead is None, dead_because=dead,
                              grants=grants, ceiling=ceiling, level=own.name if own else None))
            why = _why(row, dead, grant, ceiling, cap)
            if own is None:  # this link holds nothing at the path: neither does the key
                level, decision = None, why
                break
            if decision is None or own < level:  # the key's own entries win a tie
                level, decision = own, why
        if rows[-1]["depth"] >= 64:  # a chain that never reaches a top (a cycle) holds nothing
            level = None
            decision = Decision(key_id=rows[-1]["id"], source="dead_key",
                                message="the key's chain of minting keys does not end")
        return AccessExplanation(key_id=key_id, path=path, level=level.name if level else None,
                                 decided_by=decision, chain=steps)


def _nests(a: str, b: str) -> bool:
    return is_within(a, b) or is_within(b, a)


def _why(row, dead, grant, ceiling, cap) -> Decision:
    key = row["id"]
    if dead:
        return Decision(key_id=key, source="dead_key",
                        message=f"key {key} is {dead.replace('_', ' ')}: no access")
    if grant is None:
        return Decision(key_id=key, source="no_grant",
                        message="no grant of the key's principal covers the path")
    if ceiling is not None and cap is None:
        return Decision(key_id=key, source="no_ceiling_entry",
                        message="the key's ceiling has no entry covering the path")
    if cap is not None and Level[cap.level] < Level[grant.level]:
        return Decision(key_id=key, source="ceiling", entry=cap,
                        message=f"clamped to {cap.level} by the ceiling entry on "
                                f"'{cap.path}' (its grant allows {grant.level})")
    return Decision(key_id=key, source="grant", entry=grant,
                    message=f"{grant.level} from the grant on '{grant.path}'")
