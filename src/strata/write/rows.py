"""How the write path reads the rows it changes, and the scope parameters every statement
carries (tenant, and the caller's readable and writable paths)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from strata.auth.access import Caller, Level

COLUMNS = """id, path::text AS path, name, content, kind::text AS kind, slot, value,
    status::text AS status, origin::text AS origin, importance, confidence, pinned,
    tier::text AS tier, expires_at, valid, recorded_at, version, access_count, last_accessed_at,
    reinforcements, embedding_model, evidence, meta, tags, created_at, updated_at"""


def scope(caller: Caller, **params: Any) -> dict[str, Any]:
    return {
        "tenant": caller.tenant_id,
        "readable": caller.paths(Level.read),
        "writable": caller.paths(Level.write),
        **params,
    }


def evidence_entry(caller: Caller, source: str) -> dict[str, Any]:
    return {
        "source": source,
        "surface": caller.surface,
        "principal_id": str(caller.principal_id) if caller.principal_id else None,
        "at": datetime.now(UTC).isoformat(),
    }
