"""History, restore, forget (erasure) and relationships of one memory."""

from __future__ import annotations

import uuid
from typing import Any

from strata.audit import audited
from strata.auth.access import Caller, Level
from strata.db import Database
from strata.foundation.errors import NotFound
from strata.memories.models import HistoryEntry, Memory
from strata.providers import Embedder
from strata.write import changes, locks
from strata.write import gate as gating
from strata.write.changes import ERASED_FIELDS
from strata.write.rows import scope

__all__ = ["ERASED_FIELDS", "forget", "history", "related", "restore"]


def history(db: Database, caller: Caller, memory_id: uuid.UUID) -> list[HistoryEntry]:
    """Prior states, oldest first, that lived where the caller can read. Visible only when
    the memory can be read where it is now (or, deleted, where it last was): a memory moved
    out of the caller's reach answers 404 like one that never existed."""
    with audited(db, caller, "read", "memory.history") as event:
        event.memory_ids = [memory_id]
        with db.connection() as conn:
            where = conn.execute(
                "SELECT COALESCE("
                " (SELECT path::text FROM memories WHERE tenant_id = %(tenant)s AND id = %(id)s),"
                " (SELECT path::text FROM memory_history WHERE tenant_id = %(tenant)s"
                "  AND memory_id = %(id)s ORDER BY id DESC LIMIT 1)) AS path",
                scope(caller, id=memory_id),
            ).fetchone()
            if where["path"] is None or not caller.can(where["path"], Level.read):
                raise NotFound("memory", memory_id)
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
        event.count = len(rows)
        return [HistoryEntry(**r) for r in rows]


def restore(
    db: Database, caller: Caller, memory_id: uuid.UUID, embedder: Embedder,
    *, version: int | None = None, settings=None,
) -> Memory:
    """Bring a deleted memory back with its id, or roll a live one back to ``version``,
    through the write path's rules for an edit: a value retired since (forgotten, rejected)
    does not come back through restore either."""
    from strata.foundation.config import get_settings

    thresholds = gating.bands(settings or get_settings(), embedder.model)
    with audited(db, caller, "write", "memory.restore") as event:
        event.memory_ids = [memory_id]
        row = locks.retrying(db, lambda cur: changes.restore(
            cur, caller, memory_id, version=version, embed=lambda text: embedder.embed([text])[0],
            model=embedder.model, thresholds=thresholds),
            cause="memory.restore", actor=caller.actor)
        event.count = 1
        return Memory.from_row(row)


def forget(db: Database, caller: Caller, memory_id: uuid.UUID) -> dict[str, Any]:
    """Erasure (see :func:`strata.write.changes.forget`). Forgetting twice answers the same
    as once, so an erasure request can be retried."""
    with audited(db, caller, "delete", "memory.forget") as event:
        event.memory_ids = [memory_id]
        with db.transaction(cause="memory.forget", actor=caller.actor) as cur:
            erased = changes.forget(cur, caller, memory_id)
        event.memory_ids += erased["also_forgotten"]
        event.count = 1 + len(erased["also_forgotten"])
        return {"id": memory_id, "forgotten": True, **erased}


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
