"""How the write path reads the rows it changes, and the scope parameters every statement
carries (tenant, and the caller's readable and writable paths)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from strata.auth.access import Caller, Level

from strata.write import bookkeeping

_FIELDS = (
    "id", "path::text AS path", "name", "content", "context", "kind::text AS kind", "slot",
    "value", "status::text AS status", "origin::text AS origin", "importance", "confidence",
    "pinned", "tier::text AS tier", "expires_at", "valid", "recorded_at", "version",
    "reinforcements", "embedding_model", "evidence", "meta", "tags", "created_at", "updated_at",
)


def columns(alias: str = "memories") -> str:
    """A memory as the API shows it, from the row ``alias`` of ``memories`` (a SELECT's alias,
    or the table's name in an INSERT's or UPDATE's RETURNING), with its use by search
    (strata.write.bookkeeping)."""
    return ", ".join([f"{alias}.{f}" for f in _FIELDS]
                     + [f"{bookkeeping.count_sql(alias)} AS access_count",
                        f"{bookkeeping.last_sql(alias)} AS last_accessed_at"])


COLUMNS = columns()


def held_text(content: str, context: str | None) -> str:
    """Everything a memory holds: its content, then its context (migration 0022's
    ``strata_memory_text``, which the text arm matches). What a memory rule judges, so a rule
    that keeps something out of the content keeps it out of the context too."""
    return content if context is None else f"{content}\n{context}"


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
