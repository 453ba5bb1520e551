"""Memory shapes: what callers send and what they get back (shared by HTTP, MCP and the client).

Wire shapes: this module imports pydantic and :mod:`strata.fields` only, because the Python
client uses these very classes without the server's dependencies (tests/test_client_install.py
holds it to that). Rules that need more than the JSON, such as refusing a secret
(detect-secrets), are the write path's: :mod:`strata.memories.store` applies them.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator

from strata.fields import (  # noqa: F401  (re-exported: the shapes' field types)
    MAX_CONTENT_BYTES, TIER_TTL_SCHEMA, Flag, Fraction, Instant, Kind, MemoryContent,
    MemoryPath, Meta, OnConflict, Status, Tag, Text, Tier, Ttl, Version, _content_ok, storable,
    tier_ttl,
)


class MemoryIn(BaseModel):
    """One memory to create."""

    model_config = ConfigDict(extra="forbid", json_schema_extra=TIER_TTL_SCHEMA)

    content: MemoryContent
    path: MemoryPath | None = None
    kind: Kind = "fact"
    slot: Text | None = Field(default=None, min_length=1, max_length=200)
    # The slot's normalised value (``postgresql`` for slot ``user.preferred_database``);
    # defaults to the content when a slot is given without one.
    value: Text | None = Field(default=None, min_length=1, max_length=500)
    valid_from: Instant | None = None
    # Fraction, Version, Flag: JSON's numbers and booleans, in every request shape (fields.py).
    importance: Fraction | None = None
    tags: list[Tag] = Field(default_factory=list, max_length=32)
    meta: Meta = Field(default_factory=dict)
    name: Text | None = Field(default=None, min_length=1, max_length=200)
    tier: Tier = "long_term"
    # Integer: JSON's number (strata.fields). Seconds; short_term only, and then required.
    ttl: Ttl | None = Field(default=None, validate_default=True)

    @field_validator("ttl")
    @classmethod
    def _ttl(cls, value: int | None, info: ValidationInfo) -> int | None:
        tier_ttl(info.data.get("tier", "long_term"), value)
        return value

    _content = field_validator("content")(_content_ok)


class CreateRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    memories: list[MemoryIn] = Field(min_length=1, max_length=500)
    on_conflict: OnConflict = "error"


class MemoryPatch(BaseModel):
    """Fields a PATCH may change; absent fields stay as they are."""

    model_config = ConfigDict(extra="forbid")

    expected_version: Version | None = None
    content: MemoryContent | None = None
    path: MemoryPath | None = None
    kind: Kind | None = None
    slot: Text | None = Field(default=None, min_length=1, max_length=200)
    # The slot's value; derived from the new content when the content changes without one.
    value: Text | None = Field(default=None, min_length=1, max_length=500)
    importance: Fraction | None = None
    confidence: Fraction | None = None
    pinned: Flag | None = None
    tags: list[Tag] | None = Field(default=None, max_length=32)
    meta: Meta | None = None
    valid_from: Instant | None = None
    valid_to: Instant | None = None

    @field_validator("content")
    @classmethod
    def _content(cls, value: str | None) -> str | None:
        return None if value is None else _content_ok(value)


class Memory(BaseModel):
    id: uuid.UUID
    path: str
    name: str | None
    content: str
    kind: Kind
    slot: str | None
    value: str | None
    status: Status
    origin: str
    importance: float
    confidence: float
    pinned: bool
    tier: str
    expires_at: datetime | None
    valid_from: datetime
    valid_to: datetime | None
    recorded_at: datetime
    version: int
    access_count: int
    last_accessed_at: datetime | None
    reinforcements: int
    embedding_model: str | None
    evidence: list[Any]
    meta: dict[str, Any]
    tags: list[str]
    created_at: datetime
    updated_at: datetime

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> "Memory":
        valid = row["valid"]
        return cls(
            id=row["id"], path=row["path"], name=row["name"], content=row["content"],
            kind=row["kind"], slot=row["slot"], value=row["value"], status=row["status"],
            origin=row["origin"], importance=row["importance"], confidence=row["confidence"],
            pinned=row["pinned"], tier=row["tier"], expires_at=row["expires_at"],
            valid_from=valid.lower, valid_to=valid.upper, recorded_at=row["recorded_at"],
            version=row["version"], access_count=row["access_count"],
            last_accessed_at=row["last_accessed_at"], reinforcements=row["reinforcements"],
            embedding_model=row["embedding_model"], evidence=row["evidence"], meta=row["meta"],
            tags=row["tags"], created_at=row["created_at"], updated_at=row["updated_at"],
        )


class WriteResult(BaseModel):
    id: uuid.UUID | None
    status: Literal["inserted", "updated", "skipped", "reinforced", "superseded_existing", "blocked"]
    reason: str | None = None
    tombstone_id: uuid.UUID | None = None
    version: int | None = None
    tier: Tier | None = None  # where the memory landed (short_term or long_term)


class HistoryEntry(BaseModel):
    version: int
    operation: Literal["update", "delete"]
    cause: str | None
    actor: str | None
    operation_id: uuid.UUID | None
    changed_at: datetime
    erased: bool
    snapshot: dict[str, Any]
