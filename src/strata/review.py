"""Review of candidates: memories held back because they contradict what is active (a change
back to a retired value, or a model's CONTRADICTS verdict). A person decides: promote, reject
(optionally suppressing the value for good), or merge into an existing memory. Each decision
is recorded as the memory's history (cause ``review.<decision>``, actor = the principal) and
as an edge decided by that principal.
"""

from __future__ import annotations

import uuid
from typing import Any

import psycopg
from psycopg.types.json import Jsonb

from strata.audit import audited
from strata.auth.access import Caller, Level
from strata.db import Database
from strata.errors import Conflict, NotFound
from strata.write.apply import retire
from strata.write.canonical import slot_value_hash
from strata.memories.models import Memory
from strata.memories.store import COLUMNS, encode_cursor, decode_cursor, evidence_entry, scope


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
                SELECT {COLUMNS},
                  COALESCE((SELECT jsonb_agg(jsonb_build_object(
                      'target_id', r.target_id, 'type', r.type, 'reason', r.reason,
                      'decided_by', r.decided_by, 'confidence', r.confidence))
                    FROM memory_relationships r
                    WHERE r.tenant_id = m.tenant_id AND r.source_id = m.id
                      AND r.type = 'CONTRADICTS'), '[]') AS contradicts
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


def _lock_candidate(cur: psycopg.Cursor, caller: Caller, memory_id: uuid.UUID) -> dict[str, Any]:
    row = cur.execute(
        "SELECT id, path::text AS path, status::text AS status, slot, value, value_hash,"
        " embedding, lower(valid) AS valid_from FROM memories"
        " WHERE tenant_id = %(tenant)s AND id = %(id)s AND path <@ %(readable)s::ltree[]"
        " FOR UPDATE",
        scope(caller, id=memory_id),
    ).fetchone()
    if row is None:
        raise NotFound("memory", memory_id)
    caller.require(row["path"], Level.write)
    if row["status"] != "candidate":
        raise Conflict(f"memory is {row['status']}, not a candidate for review", field="id")
    return row


def _read(cur: psycopg.Cursor, memory_id: uuid.UUID) -> Memory:
    return Memory.from_row(cur.execute(f"SELECT {COLUMNS} FROM memories WHERE id = %s",
                                       (memory_id,)).fetchone())


def promote(db: Database, caller: Caller, memory_id: uuid.UUID) -> Memory:
    """The change is real: the candidate becomes active, what it contradicts is superseded
    (and its value tombstoned), and the tombstone that held the candidate back stops
    blocking its value."""
    with audited(db, caller, "write", "review.promote") as event:
        event.memory_ids = [memory_id]
        with db.transaction(cause="review.promote", actor=caller.actor) as cur:
            cand = _lock_candidate(cur, caller, memory_id)
            cur.execute(
                "UPDATE memories SET status = 'active', version = version + 1, updated_at = now(),"
                " evidence = evidence || %s WHERE id = %s",
                (Jsonb([evidence_entry(caller, "review.promote")]), memory_id),
            )
            contradicted = cur.execute(
                "SELECT r.target_id FROM memory_relationships r JOIN memories m"
                " ON m.id = r.target_id AND m.tenant_id = r.tenant_id"
                " WHERE r.tenant_id = %(tenant)s AND r.source_id = %(id)s"
                "   AND r.type = 'CONTRADICTS' AND m.path <@ %(writable)s::ltree[]",
                scope(caller, id=memory_id),
            ).fetchall()
            retired = [
                t["target_id"] for t in contradicted
                if retire(cur, caller.tenant_id, t["target_id"], memory_id,
                          until=cand["valid_from"], confidence=1.0, reason="promoted on review",
                          decided_by=caller.actor)
            ]
            # The retired value this candidate brings back no longer blocks (forgotten ones
            # never reach review).
            cur.execute(
                "UPDATE tombstones SET until = now()"
                " WHERE tenant_id = %(tenant)s AND reason IN ('superseded', 'rejected')"
                "   AND (until IS NULL OR until > now()) AND %(path)s::ltree <@ path"
                "   AND (value_hash = %(hash)s OR (slot = %(slot)s AND slot_value_hash = %(slot_hash)s))",
                {"tenant": caller.tenant_id, "path": cand["path"], "hash": bytes(cand["value_hash"]),
                 "slot": cand["slot"], "slot_hash": slot_value_hash(cand["value"])},
            )
            event.memory_ids += retired
            event.count = 1
            return _read(cur, memory_id)


def reject(db: Database, caller: Caller, memory_id: uuid.UUID, *, suppress: bool = False) -> Memory:
    """Not true: the candidate is rejected. With ``suppress`` its value is tombstoned, so it
    is blocked wherever it comes back in this scope."""
    with audited(db, caller, "write", "review.reject") as event:
        event.memory_ids = [memory_id]
        with db.transaction(cause="review.reject", actor=caller.actor) as cur:
            cand = _lock_candidate(cur, caller, memory_id)
            cur.execute(
                "UPDATE memories SET status = 'rejected', version = version + 1, updated_at = now(),"
                " valid = tstzrange(lower(valid), GREATEST(lower(valid) + interval '1 microsecond', now()))"
                " WHERE id = %s",
                (memory_id,),
            )
            if suppress:
                cur.execute(
                    "INSERT INTO tombstones (tenant_id, path, slot, slot_value_hash, value_hash,"
                    " reason, memory_id, embedding) VALUES (%s, %s::ltree, %s, %s, %s, 'rejected',"
                    " %s, %s)",
                    (caller.tenant_id, cand["path"], cand["slot"], slot_value_hash(cand["value"]),
                     bytes(cand["value_hash"]), memory_id, cand["embedding"]),
                )
            event.count = 1
            return _read(cur, memory_id)


def merge(db: Database, caller: Caller, memory_id: uuid.UUID, into: uuid.UUID) -> Memory:
    """The candidate says what an existing memory says: its evidence joins that memory, and
    the candidate is rejected with a DUPLICATE_OF edge."""
    with audited(db, caller, "write", "review.merge") as event:
        event.memory_ids = [memory_id, into]
        with db.transaction(cause="review.merge", actor=caller.actor) as cur:
            _lock_candidate(cur, caller, memory_id)
            target = cur.execute(
                "SELECT id, path::text AS path FROM memories WHERE tenant_id = %(tenant)s"
                " AND id = %(into)s AND status = 'active' AND path <@ %(readable)s::ltree[]"
                " FOR UPDATE",
                scope(caller, into=into),
            ).fetchone()
            if target is None:
                raise NotFound("memory", into, field="into")
            caller.require(target["path"], Level.write, field="into")
            cur.execute(
                "UPDATE memories t SET evidence = t.evidence || c.evidence || %s,"
                " reinforcements = t.reinforcements + 1, version = t.version + 1, updated_at = now()"
                " FROM memories c WHERE t.id = %s AND c.id = %s",
                (Jsonb([evidence_entry(caller, "review.merge")]), into, memory_id),
            )
            cur.execute(
                "UPDATE memories SET status = 'rejected', version = version + 1, updated_at = now()"
                " WHERE id = %s",
                (memory_id,),
            )
            cur.execute(
                "INSERT INTO memory_relationships (tenant_id, source_id, target_id, type,"
                " confidence, reason, decided_by) VALUES (%s, %s, %s, 'DUPLICATE_OF', 1.0,"
                " 'merged on review', %s) ON CONFLICT DO NOTHING",
                (caller.tenant_id, memory_id, into, caller.actor),
            )
            event.count = 1
            return _read(cur, into)
