"""Search shapes: the request ``POST /v1/search`` and MCP ``recall`` take, and its answer.

Wire shapes, like :mod:`strata.memories.models`: pydantic and :mod:`strata.fields` only, so
the Python client uses these classes without the server's dependencies; :mod:`strata.search`
runs them.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from strata.fields import Flag, Fraction, Instant, Integer, Kind, MemoryPath, Meta, Tag, Text

Mode = Literal["hybrid", "vector", "keyword"]
Include = Literal["candidates", "history"]


class SearchRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    query: Text = Field(min_length=1, max_length=4000)
    paths: list[MemoryPath] | None = Field(default=None, max_length=50)
    kinds: list[Kind] | None = None
    tags: list[Tag] | None = Field(default=None, max_length=32)
    meta: Meta | None = None
    # Integer, Flag: JSON's numbers and booleans (strata.fields says why).
    limit: Integer = Field(default=10, ge=1, le=100)
    valid_at: Instant | None = None
    include: list[Include] = Field(default_factory=list, max_length=2)
    mode: Mode = "hybrid"
    expand: Flag = False
    explain: Flag = False
    # Fraction: JSON's number, 0..1 (strata.fields).
    min_score: Fraction | None = Field(default=None, description=(
        "Only results whose `score` (relevance, 0..1) is at least this. Applied before "
        "`limit`: up to `limit` results that clear it."))
    exclude_derived: Flag = Field(default=False, description=(
        "Leave out memories a model derived (origin `llm_derived`: reflections, and "
        "consolidations the model wrote), from the hits and from graph expansion."))
    why_not: list[uuid.UUID] | None = Field(default=None, max_length=20, description=(
        "Memory ids to diagnose: for each, whether it was returned, or why not -- its status, "
        "its validity, a filter (paths, kinds, tags, meta), min_score, or its rank below "
        "`limit`. An id this key cannot read answers exactly as an id that does not exist."))


class SearchResult(BaseModel):
    id: uuid.UUID
    content: str
    path: str
    kind: str
    status: str
    # user_stated, llm_derived (a reflection or a model-written consolidation), imported,
    # system: a derived memory is marked as such wherever it is returned.
    origin: str
    # How well the memory matches the query, 0..1 and comparable across queries
    # (strata.ranking, "Relevance"); results come in `rank` order, which the fused score sets
    # (explain.score), so a lower-ranked result may score higher. 0 for an expansion.
    score: float
    rank: int | None = None  # 1-based position in the fused ranking; None for an expansion
    valid_from: datetime
    valid_to: datetime | None
    tags: list[str]
    importance: float
    confidence: float
    expanded: bool = False
    expanded_from: uuid.UUID | None = None
    edge: str | None = None
    explain: dict[str, Any] | None = None


class WhyNot(BaseModel):
    """Why a memory named in ``why_not`` is or is not among the results."""

    id: uuid.UUID
    returned: bool
    rank: int | None = Field(default=None, description=(
        "Its place in the fused ranking (1 = best), when either arm found it."))
    reasons: list[Literal["not_visible", "status", "validity", "paths", "kinds", "tags", "meta",
                          "origin", "min_score", "below_limit", "not_found_by_arms"]] = Field(
        description="Empty when returned; `not_visible` alone for an id this key cannot read "
                    "or that does not exist.")
    message: str


class SearchResponse(BaseModel):
    results: list[SearchResult]
    why_not: list[WhyNot] | None = Field(
        default=None, description="One entry per id in the request's `why_not`, in its order.")
