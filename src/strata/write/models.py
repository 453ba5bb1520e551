"""Shapes the write path takes and returns: a proposed memory (``Candidate``), what a judge
is shown (``Neighbour``) and says (``Verdict``), and each item's outcome."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Literal

from pydantic import BaseModel, Field

from strata.fields import Kind, Text

Outcome = Literal[
    "created", "reinforced", "merged", "superseded_existing", "stored_as_superseded", "blocked",
    "candidate", "skipped",
]
Relation = Literal["supersedes", "refines", "coexists", "contradicts", "duplicate"]


class Candidate(BaseModel):
    """One memory an extractor proposes. ``evidence`` holds message indexes (and ids)."""

    content: Text = Field(min_length=1, max_length=4000)
    kind: Kind = "fact"
    slot: str | None = Field(default=None, max_length=200)
    value: str | None = Field(default=None, max_length=500)
    valid_from: datetime | None = None
    # Set when the statement is about a state that has ended ("I lived in Munich in 2024").
    valid_to: datetime | None = None
    confidence: float = Field(default=0.8, ge=0, le=1)
    asserts_change: bool = False
    evidence: list[int] = Field(default_factory=list)


class Verdict(BaseModel):
    """A judge's decision about a candidate and one existing memory it was shown."""

    target_id: uuid.UUID
    relation: Relation
    confidence: float = Field(ge=0, le=1)
    reason: str = Field(max_length=500)
    decided_by: str = "rule"


class ItemOutcome(BaseModel):
    content_hash: str
    outcome: Outcome
    reason: str | None = None
    memory_id: uuid.UUID | None = None
    related_ids: list[uuid.UUID] = Field(default_factory=list)
    version: int | None = None  # of memory_id, after this write


class Neighbour(BaseModel):
    """An existing active memory a candidate is compared with (what a judge is shown)."""

    id: uuid.UUID
    content: str
    kind: str
    slot: str | None = None
    value: str | None = None
    valid_from: datetime
    recorded_at: datetime
    similarity: float
    asserted_at: datetime | None = None  # when it was said (None: recorded_at)
