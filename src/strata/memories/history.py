"""History, restore, forget (erasure) and relationships of one memory."""

from __future__ import annotations

import uuid
from typing import Any

from psycopg.types.json import Jsonb

from strata.audit import audited
from strata.auth.access import Caller, Level
from strata.db import Database
from strata.errors import Conflict, Gone, NotFound, Suppressed
from strata.write.canonical import canonicalize, slot_value_hash
from strata.memories.models import HistoryEntry, Memory
from strata.memories.store import COLUMNS, evidence_entry, scope
from strata.write.tombstones import find_tombstone
from strata.providers import Embedder

# What forget strips from history: everything that could carry the content. Hashes, ids,
# path, kind and timestamps stay, so the record of *that* something was erased survives.
ERASED_FIELDS = ("content", "canonical", "value", "evidence", "meta", "tags", "name")


def history(db: Database, caller: Caller, memory_id: uuid.UUID) -> list[HistoryEntry]:
    """Prior states, oldest first. Visible when the memory (or its last state) is readable."""
    with audited(db, caller, "read", "memory.history") as event:
        event.memory_ids = [memory_id]
        with db.connection() as conn:
            rows = conn.execute(
                """
                SELECT version, operation, cause, actor, operation_id, changed_at, erased,
                       row_data - 'tenant_id' AS snapshot
                FROM memory_history
                WHERE tenant_id = %(tenant)s AND memory_id = %(id)s
                  AND path <@ %(readable)s::ltree[]
                ORDER BY id
                """,
                scope(caller, id=memory_id),
            ).fetchall()
            if not rows:
                live = conn.execute(
                    "SELECT 1 FROM memories WHERE tenant_id = %(tenant)s AND id = %(id)s"
                    " AND path <@ %(readable)s::ltree[]",
                    scope(caller, id=memory_id),
                ).fetchone()
                if live is None:
                    raise NotFound("memory", memory_id)
        event.count = len(rows)
        return [HistoryEntry(**r) for r in rows]


_RESTORE_INSERT = f"""
INSERT INTO memories (id, tenant_id, path, name, content, canonical, value_hash, kind, slot,
    value, status, origin, importance, confidence, pinned, access_count, last_accessed_at,
    reinforcements, tier, expires_at, valid, recorded_at, embedding, embedding_model, version,
    evidence, meta, tags, created_at, updated_at)
SELECT r.id, r.tenant_id, r.path, r.name, r.content, r.canonical, r.value_hash, r.kind, r.slot,
    r.value, r.status, r.origin, r.importance, r.confidence, r.pinned, r.access_count,
    r.last_accessed_at, r.reinforcements, r.tier, r.expires_at, r.valid, r.recorded_at,
    %(embedding)s, %(model)s, %(version)s, r.evidence || %(evidence)s, r.meta, r.tags,
    r.created_at, now()
FROM jsonb_populate_record(NULL::memories, %(row)s) r
RETURNING {COLUMNS}
"""

_RESTORE_UPDATE = f"""
UPDATE memories m SET
    path = r.path, name = r.name, content = r.content, canonical = r.canonical,
    value_hash = r.value_hash, kind = r.kind, slot = r.slot, value = r.value, status = r.status,
    importance = r.importance, confidence = r.confidence, pinned = r.pinned, tier = r.tier,
    expires_at = r.expires_at, valid = r.valid, meta = r.meta, tags = r.tags,
    embedding = %(embedding)s, embedding_model = %(model)s,
    evidence = m.evidence || %(evidence)s, version = m.version + 1, updated_at = now()
FROM jsonb_populate_record(NULL::memories, %(row)s) r
WHERE m.id = %(id)s
RETURNING {", ".join("m." + c.strip() for c in COLUMNS.split(","))}
"""


def restore(
    db: Database, caller: Caller, memory_id: uuid.UUID, embedder: Embedder,
    *, version: int | None = None,
) -> Memory:
    """Bring a deleted memory back with its id, or roll a live one back to ``version``.

    The restored state is checked against tombstones like any write: a value retired since
    (forgotten, rejected) does not come back through restore either.
    """
    with audited(db, caller, "write", "memory.restore") as event:
        event.memory_ids = [memory_id]
        with db.transaction(cause="memory.restore", actor=caller.actor) as cur:
            live = cur.execute(
                "SELECT id, path::text AS path, version FROM memories"
                " WHERE tenant_id = %(tenant)s AND id = %(id)s AND path <@ %(readable)s::ltree[]"
                " FOR UPDATE",
                scope(caller, id=memory_id),
            ).fetchone()
            if live is None and version is None:
                wanted = "operation = 'delete'"
            elif version is not None:
                wanted = "version = %(version)s"
            else:
                raise Conflict("the memory exists: name the version to restore", field="version")
            snap = cur.execute(
                "SELECT row_data, erased, version FROM memory_history"
                " WHERE tenant_id = %(tenant)s AND memory_id = %(id)s"
                f" AND path <@ %(readable)s::ltree[] AND {wanted} ORDER BY id DESC LIMIT 1",
                scope(caller, id=memory_id, version=version),
            ).fetchone()
            if snap is None:
                raise NotFound("memory" if live is None else "version", memory_id,
                               field=None if live is None else "version")
            if snap["erased"]:
                raise Gone("this memory was forgotten: its content is erased")
            data = snap["row_data"]
            caller.require(data["path"], Level.write)
            if live is not None:
                caller.require(live["path"], Level.write)
            tomb = find_tombstone(
                cur, caller.tenant_id, data["path"], canonicalize(data["content"]), data.get("slot")
            )
            if tomb is not None:
                raise Suppressed(tomb["id"], tomb["reason"], field="version")
            params = {
                "row": Jsonb(data), "id": memory_id,
                "embedding": embedder.embed([data["content"]])[0], "model": embedder.model,
                "evidence": Jsonb([evidence_entry(caller, "restore")]),
            }
            if live is None:
                # Above every version the memory ever had (not just the restored one), so a
                # writer still holding an old version cannot compare-and-set against it.
                params["version"] = cur.execute(
                    "SELECT max(version) + 1 AS v FROM memory_history"
                    " WHERE tenant_id = %(tenant)s AND memory_id = %(id)s",
                    scope(caller, id=memory_id),
                ).fetchone()["v"]
                row = cur.execute(_RESTORE_INSERT, params).fetchone()
            else:
                row = cur.execute(_RESTORE_UPDATE, params).fetchone()
        event.count = 1
        return Memory.from_row(row)


def forget(db: Database, caller: Caller, memory_id: uuid.UUID) -> dict[str, Any]:
    """Erasure: the row goes, its history keeps only hashes, and every value it ever held is
    tombstoned (hashes only, no embedding) so it cannot be created again in this scope.

    A deleted memory can be forgotten too (its content still sits in history), and
    forgetting twice answers the same as once, so an erasure request can be retried."""
    with audited(db, caller, "delete", "memory.forget") as event:
        event.memory_ids = [memory_id]
        params = scope(caller, id=memory_id)
        with db.transaction(cause="memory.forget", actor=caller.actor) as cur:
            row = cur.execute(
                "SELECT path::text AS path, false AS erased FROM memories"
                " WHERE tenant_id = %(tenant)s AND id = %(id)s AND path <@ %(readable)s::ltree[]"
                " FOR UPDATE",
                params,
            ).fetchone() or cur.execute(
                "SELECT path::text AS path, erased FROM memory_history"
                " WHERE tenant_id = %(tenant)s AND memory_id = %(id)s"
                " AND path <@ %(readable)s::ltree[] ORDER BY id DESC LIMIT 1 FOR UPDATE",
                params,
            ).fetchone()
            if row is None:
                raise NotFound("memory", memory_id)
            caller.require(row["path"], Level.write)
            if row["erased"]:
                tombstones = [t["id"] for t in cur.execute(
                    "SELECT id FROM tombstones WHERE tenant_id = %(tenant)s AND memory_id = %(id)s"
                    " AND reason = 'forgotten' ORDER BY created_at, id",
                    params,
                ).fetchall()]
            else:
                tombstones = _erase(cur, caller, memory_id, row["path"])
        event.count = 1
        return {"id": memory_id, "forgotten": True, "tombstone_ids": tombstones}


def _erase(cur, caller: Caller, memory_id: uuid.UUID, path: str) -> list[uuid.UUID]:
    values = cur.execute(
        """
        SELECT value_hash, slot, value FROM memories WHERE id = %(id)s
        UNION
        SELECT decode(substr(row_data->>'value_hash', 3), 'hex'),
               row_data->>'slot', row_data->>'value'
        FROM memory_history WHERE tenant_id = %(tenant)s AND memory_id = %(id)s
        """,
        {"id": memory_id, "tenant": caller.tenant_id},
    ).fetchall()
    tombstones = [
        cur.execute(
            "INSERT INTO tombstones (tenant_id, path, slot, slot_value_hash, value_hash,"
            " reason, memory_id) VALUES (%s, %s::ltree, %s, %s, %s, 'forgotten', %s)"
            " RETURNING id",
            (caller.tenant_id, path, v["slot"], slot_value_hash(v["value"]),
             bytes(v["value_hash"]), memory_id),
        ).fetchone()["id"]
        for v in values
    ]
    cur.execute("DELETE FROM memories WHERE id = %s", (memory_id,))
    # Edges keep their type and who decided, but a reason may quote the erased content.
    cur.execute(
        "UPDATE memory_relationships SET reason = NULL"
        " WHERE tenant_id = %(tenant)s AND (source_id = %(id)s OR target_id = %(id)s)",
        {"tenant": caller.tenant_id, "id": memory_id},
    )
    cur.execute(
        "UPDATE memory_history SET erased = true, row_data = row_data - %(fields)s::text[]"
        " WHERE tenant_id = %(tenant)s AND memory_id = %(id)s",
        {"fields": list(ERASED_FIELDS), "tenant": caller.tenant_id, "id": memory_id},
    )
    return tombstones


def related(db: Database, caller: Caller, memory_id: uuid.UUID) -> list[dict[str, Any]]:
    """Edges from and to this memory whose other end the caller can also read."""
    with audited(db, caller, "read", "memory.related") as event:
        event.memory_ids = [memory_id]
        with db.connection() as conn:
            if conn.execute(
                "SELECT 1 FROM memories WHERE tenant_id = %(tenant)s AND id = %(id)s"
                " AND path <@ %(readable)s::ltree[]",
                scope(caller, id=memory_id),
            ).fetchone() is None:
                raise NotFound("memory", memory_id)
            rows = conn.execute(
                """
                SELECT r.id, r.type::text AS type, r.source_id, r.target_id, r.confidence,
                       r.reason, r.decided_by, r.created_at,
                       CASE WHEN r.source_id = %(id)s THEN 'outgoing' ELSE 'incoming' END AS direction,
                       o.id AS other_id, o.status::text AS other_status
                FROM memory_relationships r
                JOIN memories o ON o.id = CASE WHEN r.source_id = %(id)s THEN r.target_id
                                               ELSE r.source_id END
                WHERE r.tenant_id = %(tenant)s AND (r.source_id = %(id)s OR r.target_id = %(id)s)
                  AND o.tenant_id = %(tenant)s AND o.path <@ %(readable)s::ltree[]
                ORDER BY r.created_at, r.id
                """,
                scope(caller, id=memory_id),
            ).fetchall()
        event.count = len(rows)
        return rows
