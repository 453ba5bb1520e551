"""The shapes the client sends and returns: the server's own pydantic models, plus the few
answers the server builds as plain dicts (pages, edges, delete/forget results), and
``Remembered``, what ``remember`` answers on every surface (:mod:`strata.ingest.remember`).

The server's shape modules (``strata.memories.models``, ``strata.ingest.models``,
``strata.search.models``) import pydantic and the standard library only, so these are the
very classes the server validates with, in a client-only install too.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, ConfigDict, Field

from strata.events.models import Event
from strata.ingest.models import IngestRequest, ItemOutcome, Message, NotKept, Receipt
from strata.ingest.remember import Remembered, RememberedItem
from strata.memories.models import (
    CreateRequest,
    HistoryEntry,
    Memory,
    MemoryIn,
    MemoryPatch,
    WriteResult,
)
from strata.rules.models import Rule, RuleDeleted, RuleIn, RuleVersion
from strata.search.models import SearchRequest, SearchResult

T = TypeVar("T")


class Page(BaseModel, Generic[T]):
    """One page of a list; pass ``next_cursor`` back as ``cursor`` for the next."""

    items: list[T]
    next_cursor: str | None = None


class Relationship(BaseModel):
    """An edge from or to a memory (``GET /v1/memories/{id}/related``)."""

    model_config = ConfigDict(extra="allow")

    id: uuid.UUID
    type: str
    source_id: uuid.UUID
    target_id: uuid.UUID
    confidence: float
    reason: str | None = None
    decided_by: str
    created_at: datetime
    direction: str
    other_id: uuid.UUID
    other_status: str


class ReviewItem(Memory):
    """A candidate held for review, with the edges that say what it contradicts."""

    contradicts: list[dict[str, Any]] = Field(default_factory=list)


class Deleted(BaseModel):
    id: uuid.UUID
    deleted: bool
    version: int


class Forgotten(BaseModel):
    id: uuid.UUID
    forgotten: bool
    tombstone_ids: list[uuid.UUID]
    # Other memories that held a forgotten value in its scope, erased with it.
    also_forgotten: list[uuid.UUID] = []


class PathCount(BaseModel):
    """One path holding memories the key can read (``GET /v1/paths``), with its number of
    memories per status (memories at exactly this path)."""

    path: str
    counts: dict[str, int]
    total: int


class Health(BaseModel):
    model_config = ConfigDict(extra="allow")

    status: str


__all__ = [
    "CreateRequest", "Deleted", "Event", "Forgotten", "Health", "HistoryEntry", "IngestRequest",
    "ItemOutcome", "Memory", "MemoryIn", "MemoryPatch", "Message", "NotKept", "Page", "PathCount", "Receipt",
    "Relationship", "Remembered", "RememberedItem", "ReviewItem", "Rule", "RuleDeleted",
    "RuleIn", "RuleVersion", "SearchRequest", "SearchResult", "WriteResult",
]
