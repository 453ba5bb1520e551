"""The paths a caller can read, with how many memories of each status lie at each: what a
person browsing a store sees as its tree (the console's left pane)."""

from __future__ import annotations

from pydantic import BaseModel, Field

from strata.audit import audited
from strata.auth.access import Caller
from strata.db import Database
from strata.foundation.paths import validate_path
from strata.write.rows import scope


class PathCount(BaseModel):
    """One path that holds memories the caller can read, and how many of each status."""

    path: str = Field(description="The path.")
    counts: dict[str, int] = Field(description="Memories at exactly this path, per status.")
    total: int = Field(description="All of them, whatever their status.")


# Grouped inside the statement, after the readable-paths filter: a path the key cannot read
# is never counted, so it never appears, not even as a zero.
_COUNTS = """
SELECT path::text AS path, jsonb_object_agg(status, n) AS counts, sum(n)::bigint AS total
FROM (
    SELECT path, status::text AS status, count(*) AS n
    FROM memories
    WHERE tenant_id = %(tenant)s AND path <@ %(readable)s::ltree[]
      AND (%(path)s::ltree IS NULL OR path <@ %(path)s::ltree)
      AND (%(after)s::ltree IS NULL OR path > %(after)s::ltree)
    GROUP BY path, status
) per_status
GROUP BY path
ORDER BY path
LIMIT %(limit)s
"""


def path_counts(
    db: Database, caller: Caller, *, path: str | None = None, after: str | None = None,
    limit: int = 500,
) -> tuple[list[PathCount], str | None]:
    """Readable paths (under ``path``, after ``after`` in ltree order) with their counts per
    status; the second value is the cursor of the next page (the last path), or None."""
    if path is not None:
        validate_path(path)
    if after is not None:
        validate_path(after, field="cursor")
    with audited(db, caller, "read", "paths.list") as event:
        with db.connection() as conn:
            rows = conn.execute(_COUNTS, scope(caller, path=path, after=after,
                                               limit=limit + 1)).fetchall()
        more = len(rows) > limit
        rows = rows[:limit]
        event.count = len(rows)
    items = [PathCount(path=r["path"], counts=r["counts"], total=r["total"]) for r in rows]
    return items, (rows[-1]["path"] if more else None)

