"""The feed: a tenant's events after a cursor, where the key reads (see :mod:`strata.events`)."""

from __future__ import annotations

from strata.audit import audited
from strata.auth import Caller
from strata.db import Database
from strata.events.models import Event
from strata.paths import validate_path
from strata.write.rows import scope

__all__ = ["list_events"]


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
