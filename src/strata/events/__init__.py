"""Memory changes as events: the feed over the transactional outbox (migration 0025).

The write path's triggers append one event per change to a memory, in the transaction of
the change, numbered per tenant in commit order (``seq``). The feed reads a tenant's events
after a cursor (the last ``seq`` seen), only those at paths the key can read -- the filter
every read of memories uses, and none of a memory that lives now where the key cannot read
-- so a consumer resumes where it stopped and misses nothing
that committed. Events carry no content: a consumer reads the memory through the API with
its own key, so access rules and forgets apply to what it reads.

Retention: events older than ``STRATA_EVENT_RETENTION_DAYS`` (default 30) are pruned by the
lifecycle job; a cursor older than that resumes at the oldest event kept.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Literal, get_args

from pydantic import BaseModel, Field

from strata.audit import audited
from strata.auth import Caller
from strata.db import Database
from strata.paths import validate_path
from strata.write.rows import scope

__all__ = ["Event", "EventType", "TYPES", "list_events"]

EventType = Literal["created", "reinforced", "updated", "superseded", "held_for_review",
                    "promoted", "rejected", "deleted", "restored", "forgotten", "expired",
                    "derived_retired"]
TYPES: tuple[str, ...] = get_args(EventType)


class Event(BaseModel):
    """One change to a memory, as the outbox recorded it. Never its content."""

    cursor: str = Field(description=(
        "The event's place in the tenant's commit order: pass as `after` to read what "
        "committed after it."))
    type: EventType = Field(description=(
        "What changed: `created`, `reinforced` (said again), `updated`, `superseded` (a newer "
        "memory replaced it: `related`), `held_for_review` (a candidate), `promoted` (a "
        "candidate accepted, or short-term made long-term), `rejected`, `deleted`, "
        "`restored`, `forgotten` (erased with its history), `expired` (archived or removed "
        "by the lifecycle job), `derived_retired` (what it was made from changed or went)."))
    memory_id: uuid.UUID = Field(description="The memory that changed.")
    path: str = Field(description="The memory's path after the change (before, if it went).")
    version: int = Field(description=(
        "The memory's version after the change (its last version, if it went)."))
    status: str | None = Field(description=(
        "The memory's status after the change; null when the memory is gone."))
    cause: str | None = Field(description=(
        "The operation that made the change (`memory.create`, `ingest.persist`, "
        "`review.promote`, `lifecycle.expire`, ...)."))
    actor: str | None = Field(description=(
        "Who made it: the principal and surface, or `system:<job>`."))
    operation_id: uuid.UUID | None = Field(description=(
        "The transaction's operation: the events of one operation share it (a forget and "
        "what it forgot with it)."))
    related: list[uuid.UUID] = Field(description=(
        "The other memories involved: for `superseded`, the memory that replaced it."))
    at: datetime = Field(description="When the change was made.")


_FEED = """
SELECT seq, type, memory_id, path::text AS path, version, status, cause, actor,
       operation_id, related, at
FROM events
WHERE tenant_id = %(tenant)s AND seq > %(after)s AND path <@ %(readable)s::ltree[]
  AND (%(path)s::ltree IS NULL OR path <@ %(path)s::ltree)
  AND (%(types)s::text[] IS NULL OR type = ANY(%(types)s::text[]))
  -- A memory moved since to a path the key cannot read: its id is no longer the key's to see.
  AND NOT EXISTS (SELECT 1 FROM memories m WHERE m.tenant_id = %(tenant)s
                  AND m.id = events.memory_id AND NOT m.path <@ %(readable)s::ltree[])
ORDER BY seq
LIMIT %(limit)s
"""

def list_events(
    db: Database, caller: Caller, *, after: int = 0, path: str | None = None,
    types: list[str] | None = None, limit: int = 100,
) -> tuple[list[Event], str]:
    """The events after ``after`` the caller may read, in commit order, and the cursor to
    resume from (the last event returned, or ``after`` when there was none)."""
    if path is not None:
        validate_path(path)
    params = scope(caller, after=after, path=path, types=types, limit=limit)
    with audited(db, caller, "read", "event.list") as audit:
        with db.connection() as conn:
            rows = conn.execute(_FEED, params).fetchall()
        items = [Event(cursor=str(r["seq"]), **{k: v for k, v in r.items() if k != "seq"})
                 for r in rows]
        audit.count = len(items)
        audit.memory_ids = list(dict.fromkeys(e.memory_id for e in items))
    return items, items[-1].cursor if items else str(after)
