"""The feed: a tenant's events after a cursor, where the key reads (see :mod:`strata.events`)."""

from __future__ import annotations

from strata.audit import audited
from strata.auth import Caller
from strata.db import Database
from strata.events.models import Event
from strata.foundation.paths import validate_path
from strata.write.rows import scope

__all__ = ["list_events"]


# The page and the tenant's head, in one statement so in one snapshot: every event at or
# below that head is visible to it (seq is given at commit, in commit order). A page that is
# not full therefore holds every readable event up to the head, and the cursor may move to
# the head: a key that reads little does not rescan the same unreadable events on every poll.
_FEED = """
WITH page AS (
    SELECT seq, type, memory_id, path::text AS path, version, status, cause, actor,
           operation_id, related, at
    FROM events
    WHERE tenant_id = %(tenant)s AND seq > %(after)s AND path <@ %(readable)s::ltree[]
      AND (%(path)s::ltree IS NULL OR path <@ %(path)s::ltree)
      AND (%(types)s::text[] IS NULL OR type = ANY(%(types)s::text[]))
      -- A memory moved since to a path the key cannot read: its id is no longer the key's.
      AND NOT EXISTS (SELECT 1 FROM memories m WHERE m.tenant_id = %(tenant)s
                      AND m.id = events.memory_id AND NOT m.path <@ %(readable)s::ltree[])
    ORDER BY seq
    LIMIT %(limit)s
)
SELECT (SELECT seq FROM event_heads WHERE tenant_id = %(tenant)s) AS head,
       COALESCE((SELECT json_agg(page ORDER BY seq) FROM page), '[]') AS items
"""


def list_events(
    db: Database, caller: Caller, *, after: int = 0, path: str | None = None,
    types: list[str] | None = None, limit: int = 100,
) -> tuple[list[Event], str]:
    """The events after ``after`` the caller may read, in commit order, and the cursor to
    resume from: the last event returned on a full page, else the tenant's head (nothing
    readable committed up to it is left unread), never below ``after``."""
    if path is not None:
        validate_path(path)
    params = scope(caller, after=after, path=path, types=types, limit=limit)
    with audited(db, caller, "read", "event.list") as audit:
        with db.connection() as conn:
            row = conn.execute(_FEED, params).fetchone()
        items = [Event(cursor=str(r.pop("seq")), **r) for r in row["items"]]
        audit.count = len(items)
        audit.memory_ids = list(dict.fromkeys(e.memory_id for e in items))
    if len(items) == limit:
        return items, items[-1].cursor
    return items, str(max(after, row["head"] or 0))
