"""Memories made from other memories: a reflection (``llm_derived``, DERIVED_FROM edges to
its evidence) and a consolidation (CONSOLIDATES edges to the originals it supersedes).

Both are written here, under the write path's rules for a new value (locks, tombstones, one
active holder), in the caller's transaction. What keeps them honest afterwards is not here:
the evidence cascade is a trigger on ``memories`` (migration 0019), which every retirement
passes whatever its entry point; forget erases what the cascade retired
(:func:`derived_from`, called by :func:`strata.write.changes.forget`).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import psycopg

from strata.auth.access import Caller, Level
from strata.foundation.errors import Conflict, InvalidInput, NotFound
from strata.write import locks
from strata.write.apply import Staged, _Writer, add_edge, retire
from strata.write.canonical import canonicalize, value_hash
from strata.write.derived import derived_from  # noqa: F401  (re-exported)
from strata.write.rows import COLUMNS, evidence_entry, scope

DERIVED_EDGES = ("DERIVED_FROM", "CONSOLIDATES")

# A memory made from others (an llm_derived one, or any with derivation edges of its own,
# such as a consolidation the caller wrote) is never the source of another: derivations do
# not chain, so the cascade of migration 0019 -- one step, from evidence to what was made
# from it -- covers every memory that rests on a retired one.
_DERIVED_SOURCES = """
SELECT m.id FROM memories m
WHERE m.tenant_id = %(tenant)s AND m.id = ANY(%(ids)s)
  AND (m.origin = 'llm_derived' OR EXISTS (
      SELECT 1 FROM memory_relationships r
      WHERE r.tenant_id = m.tenant_id AND r.source_id = m.id
        AND r.type IN ('DERIVED_FROM', 'CONSOLIDATES')))
"""

NOT_DERIVED = """NOT EXISTS (
      SELECT 1 FROM memory_relationships d
      WHERE d.tenant_id = memories.tenant_id AND d.source_id = memories.id
        AND d.type IN ('DERIVED_FROM', 'CONSOLIDATES'))"""


def refuse_derived(cur: psycopg.Cursor, tenant_id: uuid.UUID, ids: list[uuid.UUID], *,
                   field: str) -> None:
    """``Conflict`` naming the first of ``ids`` that was made from other memories."""
    derived = {r["id"] for r in cur.execute(
        _DERIVED_SOURCES, {"tenant": tenant_id, "ids": ids}).fetchall()}
    for i, one in enumerate(ids):
        if one in derived:
            raise Conflict(f"memory {one} was derived from other memories: a derived memory "
                           "is never the source of another", field=f"{field}[{i}]"
                           if field.endswith("ids") else field)


@dataclass
class Derived:
    """A memory to make from others."""

    path: str
    content: str
    kind: str
    origin: str  # llm_derived when a model wrote it; user_stated when a caller did
    sources: list[uuid.UUID]
    relation: str  # DERIVED_FROM or CONSOLIDATES
    embedding: Any
    model: str
    decided_by: str
    reason: str


def lock_sources(cur: psycopg.Cursor, caller: Caller, ids: list[uuid.UUID], *, field: str,
                 level: Level) -> list[dict[str, Any]]:
    """The source memories, locked in id order (so two derivations over one memory decide
    one after the other): ``NotFound`` for one the caller cannot read, ``Forbidden`` below
    ``level``, ``Conflict`` for one that is not active."""
    rows = {r["id"]: r for r in cur.execute(
        f"SELECT {COLUMNS} FROM memories WHERE tenant_id = %(tenant)s AND id = ANY(%(ids)s)"
        " ORDER BY id FOR UPDATE", scope(caller, ids=sorted(set(ids)))).fetchall()}
    out = []
    for i, memory_id in enumerate(ids):
        row = rows.get(memory_id)
        where = f"{field}[{i}]"
        if row is None or not caller.can(row["path"], Level.read):
            raise NotFound("memory", memory_id, field=where)
        caller.require(row["path"], level, field=where)
        if row["status"] != "active":
            raise Conflict(f"memory {memory_id} is {row['status']}, not active", field=where)
        out.append(row)
    return out


def write_derived(cur: psycopg.Cursor, caller: Caller, d: Derived, *,
                  supersede: bool) -> dict[str, Any]:
    """Insert the derived memory (active) with an edge to each source; with ``supersede``
    (a consolidation) the sources are superseded by it first -- before the CONSOLIDATES
    edges exist, so the cascade does not retire the memory that replaced them."""
    from strata.write.changes import _check_tombstones, _place

    caller.require(d.path, Level.write, field="path")
    canonical = canonicalize(d.content)
    if not canonical:
        raise InvalidInput("content has no words", field="content")
    new_hash = value_hash(canonical)
    locks.hold(cur, {locks.value_key(caller.tenant_id, d.path, new_hash)})
    new_id = uuid.uuid4()
    # A forgotten or rejected value stays out, as on every entry point.
    _check_tombstones(cur, caller, new_id, d.path, canonical, None, None, None, None,
                      field="content")
    status = _by_rule(cur, caller.tenant_id, d, supersede=supersede)
    now = datetime.now(UTC)
    if supersede:
        for source in d.sources:
            retire(cur, caller.tenant_id, source, new_id, until=now, confidence=1.0,
                   reason=d.reason, decided_by=d.decided_by)
    _place(cur, caller, new_id, d.path, None, None, new_hash, field="content")
    item = Staged(idx=0, path=d.path, content=d.content, canonical=canonical,
                  value_hash=new_hash, kind=d.kind, slot=None, value=None, valid_from=now,
                  confidence=1.0, evidence=[evidence_entry(caller, d.relation.lower())],
                  embedding=d.embedding, gate=None, verdicts=None, origin=d.origin,
                  asserted_at=now)
    item.slot = item.value = None  # a derived memory holds no slot of its sources
    _Writer(cur, caller.tenant_id, d.model, now).insert(item, status, memory_id=new_id)
    for source in d.sources:
        add_edge(cur, caller.tenant_id, new_id, source, d.relation, 1.0, None, d.decided_by)
    return cur.execute(f"SELECT {COLUMNS} FROM memories WHERE id = %s", (new_id,)).fetchone()


def _by_rule(cur: psycopg.Cursor, tenant_id: uuid.UUID, d: Derived, *, supersede: bool) -> str:
    """The memory rule of the path (strata.write.policy) decides for a derived memory as for
    any new one: excluded or capture off refuses it (``Conflict`` naming the rule); review
    only holds a reflection as a candidate, and refuses a consolidation (it would supersede
    its originals with a memory nobody has reviewed)."""
    from strata.write import policy

    decision = policy.decide(cur, tenant_id, [(d.path, d.content)])[0]
    if decision is None or decision.action == "keep":
        return "active"
    if decision.action == "hold" and not supersede:
        return "candidate"
    raise Conflict(decision.reason, field="content", rule_id=str(decision.rule_id))


__all__ = ["DERIVED_EDGES", "NOT_DERIVED", "Derived", "refuse_derived", "derived_from", "lock_sources", "write_derived"]
