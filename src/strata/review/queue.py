"""Review of candidates: memories held back because they contradict what is active (a change
back to a retired value, or a model's CONTRADICTS verdict). A person decides: promote, reject
(optionally suppressing the value for good), or merge into an existing memory. Each decision
is recorded as the memory's history (cause ``review.<decision>``, actor = the principal) and
as an edge decided by that principal.

And the tombstones that keep retired values out -- superseded, rejected, forgotten: an owner
of their path lists them (never a value, a hash or a fingerprint) and may lift one, an act
the audit trail records (``tombstone.lift``).
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, Field

from strata.audit import audited
from strata.auth.access import Caller, Level
from strata.db import Database
from strata.foundation.errors import InvalidInput
from strata.memories.models import Memory
from strata.memories.store import decode_cursor, encode_cursor
from strata.write import changes, locks, tombstones
from strata.write.rows import columns, scope


class Contradiction(BaseModel):
    """An active memory the candidate contradicts, as the CONTRADICTS edge records it."""

    target_id: uuid.UUID = Field(description="The memory contradicted.")
    type: Literal["CONTRADICTS"] = Field(description="The edge's type.")
    reason: str | None = Field(description="Why it was judged a contradiction.")
    decided_by: str = Field(description="A rule or a model's name.")
    confidence: float = Field(description="How sure the decision was, 0 to 1.")


class Tombstone(BaseModel):
    """A retired value as its path's owner may see it: never the value, a hash of it or its
    fingerprint."""

    id: uuid.UUID = Field(description="The tombstone's id.")
    path: str = Field(description="It blocks its value in this path's subtree.")
    reason: Literal["superseded", "rejected", "forgotten"] = Field(description=(
        "Why the value was retired."))
    memory_id: uuid.UUID | None = Field(description=(
        "The memory whose value it retired (for `forgotten`, erased)."))
    replaced_by: uuid.UUID | None = Field(description=(
        "For `superseded`: the memory that replaced it."))
    created_at: datetime = Field(description="When the value was retired.")
    until: datetime | None = Field(description=(
        "When it stops (or stopped) blocking: a suppression's end, or when it was lifted."))
    in_force: bool = Field(description="Whether it blocks its value now.")


class ReviewItem(Memory):
    """A candidate held for review, with what it contradicts."""

    contradicts: list[Contradiction] = Field(description=(
        "The memories it contradicts that the key can read."))


def list_candidates(
    db: Database, caller: Caller, *, path: str | None = None, cursor: str | None = None,
    limit: int = 50,
) -> tuple[list[dict[str, Any]], str | None]:
    after = decode_cursor(cursor) if cursor else None
    params = scope(caller, path=path, limit=limit + 1, after_at=after[0] if after else None,
                   after_id=after[1] if after else None)
    with audited(db, caller, "read", "review.list") as event:
        with db.connection() as conn:
            rows = conn.execute(
                f"""
                SELECT {columns('m')},
                  COALESCE((SELECT jsonb_agg(jsonb_build_object(
                      'target_id', r.target_id, 'type', r.type, 'reason', r.reason,
                      'decided_by', r.decided_by, 'confidence', r.confidence))
                    FROM memory_relationships r
                    WHERE r.tenant_id = m.tenant_id AND r.source_id = m.id
                      AND r.type = 'CONTRADICTS'
                      -- as related does: an edge names only memories the caller may read
                      AND EXISTS (SELECT 1 FROM memories t WHERE t.tenant_id = r.tenant_id
                                  AND t.id = r.target_id AND t.path <@ %(readable)s::ltree[])
                  ), '[]') AS contradicts
                FROM memories m
                WHERE m.tenant_id = %(tenant)s AND m.status = 'candidate'
                  AND m.path <@ %(readable)s::ltree[]
                  AND (%(path)s::ltree IS NULL OR m.path <@ %(path)s::ltree)
                  AND (%(after_at)s::timestamptz IS NULL
                       OR (m.created_at, m.id) > (%(after_at)s::timestamptz, %(after_id)s::uuid))
                ORDER BY m.created_at, m.id
                LIMIT %(limit)s
                """,
                params,
            ).fetchall()
        more = len(rows) > limit
        rows = rows[:limit]
        event.count = len(rows)
        event.memory_ids = [r["id"] for r in rows]
    items = [{**Memory.from_row(r).model_dump(), "contradicts": r["contradicts"]} for r in rows]
    next_cursor = encode_cursor(rows[-1]["created_at"], rows[-1]["id"]) if more else None
    return items, next_cursor


def promote(db: Database, caller: Caller, memory_id: uuid.UUID) -> Memory:
    """The change is real: the candidate becomes active and what it contradicts is
    superseded, under the write path's rules for an edit (:func:`strata.write.changes.promote`):
    a value forgotten or suppressed since it was held back is refused."""
    with audited(db, caller, "write", "review.promote") as event:
        event.memory_ids = [memory_id]
        row, retired = locks.retrying(
            db, lambda cur: changes.promote(cur, caller, memory_id),
            cause="review.promote", actor=caller.actor)
        event.memory_ids += retired
        event.count = 1
        return Memory.from_row(row)


def reject(db: Database, caller: Caller, memory_id: uuid.UUID, *, suppress: bool = False,
           until: datetime | None = None) -> Memory:
    """Not true: the candidate is rejected. With ``suppress`` its value is tombstoned, so it
    is blocked wherever it comes back in this scope; with ``until`` too, only until then
    (after it the value may come back, as a candidate for review)."""
    if until is not None and not suppress:
        raise InvalidInput("until applies to a suppression: send suppress true with it",
                           field="until")
    with audited(db, caller, "write", "review.reject") as event:
        event.memory_ids = [memory_id]
        with db.transaction(cause="review.reject", actor=caller.actor) as cur:
            row = changes.reject(cur, caller, memory_id, suppress=suppress, until=until)
        event.count = 1
        return Memory.from_row(row)


def merge(db: Database, caller: Caller, memory_id: uuid.UUID, into: uuid.UUID) -> Memory:
    """The candidate says what an existing memory says: its evidence joins that memory, and
    the candidate is rejected with a DUPLICATE_OF edge."""
    with audited(db, caller, "write", "review.merge") as event:
        event.memory_ids = [memory_id, into]
        with db.transaction(cause="review.merge", actor=caller.actor) as cur:
            row = changes.merge(cur, caller, memory_id, into)
        event.count = 1
        return Memory.from_row(row)


def list_tombstones(
    db: Database, caller: Caller, *, path: str | None = None, reason: str | None = None,
    cursor: str | None = None, limit: int = 50,
) -> tuple[list[Tombstone], str | None]:
    """The tombstones in paths the caller owns (in ``path``'s subtree when given), oldest
    first."""
    after = decode_cursor(cursor) if cursor else None
    with audited(db, caller, "read", "tombstone.list") as event:
        with db.connection() as conn:
            rows = conn.execute(
                f"""
                SELECT {tombstones.TOMBSTONE_COLUMNS} FROM tombstones t
                WHERE t.tenant_id = %(tenant)s AND t.path <@ %(owned)s::ltree[]
                  AND (%(path)s::ltree IS NULL OR t.path <@ %(path)s::ltree)
                  AND (%(reason)s::tombstone_reason IS NULL OR t.reason = %(reason)s)
                  AND (%(after_at)s::timestamptz IS NULL
                       OR (t.created_at, t.id) > (%(after_at)s::timestamptz, %(after_id)s::uuid))
                ORDER BY t.created_at, t.id
                LIMIT %(limit)s
                """,
                {"tenant": caller.tenant_id, "owned": caller.paths(Level.owner), "path": path,
                 "reason": reason, "after_at": after[0] if after else None,
                 "after_id": after[1] if after else None, "limit": limit + 1},
            ).fetchall()
        more = len(rows) > limit
        rows = rows[:limit]
        event.count = len(rows)
    next_cursor = encode_cursor(rows[-1]["created_at"], rows[-1]["id"]) if more else None
    return [Tombstone(**r) for r in rows], next_cursor


def lift_tombstone(db: Database, caller: Caller, tombstone_id: uuid.UUID) -> Tombstone:
    """An owner lifts a tombstone: its value may be stored again from now on (a forgotten
    fact stated anew is a new memory; what was erased stays erased)."""
    with audited(db, caller, "admin", "tombstone.lift") as event:
        with db.transaction(cause="tombstone.lift", actor=caller.actor) as cur:
            row = tombstones.lift_one(cur, caller, tombstone_id)
        event.count = 1
        return Tombstone(**row)
