"""Tombstones: retired values, keyed on scope and (slot + value hash, or value hash)."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any

import psycopg

from strata.write.canonical import slot_value_hash, value_hash

_TOMBSTONES_SQL = """
SELECT DISTINCT ON (i.ord) i.ord, t.id, t.reason::text AS reason
FROM unnest(%(paths)s::ltree[], %(hashes)s::bytea[], %(slots)s::text[], %(slot_hashes)s::bytea[])
     WITH ORDINALITY AS i(path, hash, slot, slot_hash, ord)
JOIN tombstones t ON t.tenant_id = %(tenant)s AND i.path <@ t.path
 AND (t.until IS NULL OR t.until > now())
 AND (t.value_hash = i.hash
      OR (i.slot IS NOT NULL AND t.slot = i.slot AND t.slot_value_hash = i.slot_hash))
ORDER BY i.ord, t.reason DESC, t.created_at DESC  -- forgotten, rejected, superseded
"""


def find_tombstones(
    cur: psycopg.Cursor, tenant_id: uuid.UUID,
    values: Sequence[tuple[str, str, str | None, str | None]],
) -> dict[int, dict[str, Any]]:
    """Tombstones retiring each (path, canonical, slot, value), keyed by input index; one
    statement for a whole batch."""
    if not values:
        return {}
    rows = cur.execute(
        _TOMBSTONES_SQL,
        {
            "tenant": tenant_id,
            "paths": [v[0] for v in values],
            "hashes": [value_hash(v[1]) for v in values],
            "slots": [v[2] for v in values],
            "slot_hashes": [slot_value_hash(v[3]) for v in values],
        },
    ).fetchall()
    return {r["ord"] - 1: r for r in rows}


def find_tombstone(
    cur: psycopg.Cursor, tenant_id: uuid.UUID, path: str, canonical: str, slot: str | None,
    value: str | None = None,
) -> dict[str, Any] | None:
    """The tombstone (if any) that retires this value in this scope."""
    return find_tombstones(cur, tenant_id, [(path, canonical, slot, value)]).get(0)
