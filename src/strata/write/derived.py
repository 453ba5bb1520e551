"""What was made from a memory (reflections, consolidations): the read :func:`strata.write.
changes.forget` needs to erase them with it. Apart from :mod:`strata.write.derive`, which writes
them and imports the write path, so the write path can ask without an import cycle."""

from __future__ import annotations

import uuid
from typing import Any

import psycopg

# Live ones where they live; deleted ones where they last lived, unless already erased.
_DERIVED_FROM = """
SELECT r.source_id AS id, COALESCE(m.path, h.path)::text AS path
FROM memory_relationships r
LEFT JOIN memories m ON m.tenant_id = r.tenant_id AND m.id = r.source_id
LEFT JOIN LATERAL (
    SELECT path, erased FROM memory_history
    WHERE tenant_id = r.tenant_id AND memory_id = r.source_id ORDER BY id DESC LIMIT 1
) h ON m.id IS NULL
WHERE r.tenant_id = %(tenant)s AND r.target_id = %(id)s
  AND r.type IN ('DERIVED_FROM', 'CONSOLIDATES')
  AND (m.id IS NOT NULL OR (h.path IS NOT NULL AND NOT h.erased))
ORDER BY r.source_id
"""


def derived_from(cur: psycopg.Cursor, tenant_id: uuid.UUID,
                 memory_id: uuid.UUID) -> list[dict[str, Any]]:
    """Every memory made from ``memory_id`` (any status, deleted ones too, unless already
    erased): what may carry its content."""
    return cur.execute(_DERIVED_FROM, {"tenant": tenant_id, "id": memory_id}).fetchall()
