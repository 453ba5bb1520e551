"""Shapes that flow through ingestion: request, candidates, step payloads, receipts.

Steps pass only ids (``StepPayload``); everything else lives in PostgreSQL, so a step can run
in-process locally or as a Step Functions task with a payload far under 256 KB.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from strata.memories.models import Instant, Kind, Text, _content_ok

Role = Literal["user", "assistant", "system", "tool"]
ReceiptStatus = Literal[
    "queued", "running", "wrote", "meaningful_no_write", "llm_failed", "embed_failed",
    "db_write_failed",
]
TERMINAL = frozenset({"wrote", "meaningful_no_write", "llm_failed", "embed_failed", "db_write_failed"})
Outcome = Literal[
    "created", "reinforced", "merged", "superseded_existing", "stored_as_superseded", "blocked",
    "candidate", "skipped",
]
Relation = Literal["supersedes", "refines", "coexists", "contradicts", "duplicate"]


class Message(BaseModel):
    model_config = ConfigDict(extra="forbid")

    role: Role
    content: str
    at: Instant | None = None
    id: Text | None = Field(default=None, max_length=200)

    _content = field_validator("content")(_content_ok)


class IngestRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    path: str | None = None
    messages: list[Message] = Field(min_length=1, max_length=1000)
    wait: bool = False
    idempotency_key: Text | None = Field(default=None, min_length=1, max_length=200)


class Candidate(BaseModel):
    """One memory an extractor proposes. ``evidence`` holds message indexes (and ids)."""

    content: Text = Field(min_length=1, max_length=4000)
    kind: Kind = "fact"
    slot: str | None = Field(default=None, max_length=200)
    value: str | None = Field(default=None, max_length=500)
    valid_from: datetime | None = None
    confidence: float = Field(default=0.8, ge=0, le=1)
    asserts_change: bool = False
    evidence: list[int] = Field(default_factory=list)


class Extraction(BaseModel):
    """What an extractor returns (and what the model's structured output must parse into)."""

    memories: list[Candidate] = Field(default_factory=list)


class Verdict(BaseModel):
    """A judge's decision about a candidate and one existing memory it was shown."""

    target_id: uuid.UUID
    relation: Relation
    confidence: float = Field(ge=0, le=1)
    reason: str = Field(max_length=500)
    decided_by: str = "rule"


class StepPayload(BaseModel):
    """What moves between steps (and between Step Functions states): ids only."""

    model_config = ConfigDict(extra="ignore")

    receipt_id: uuid.UUID
    tenant_id: uuid.UUID
    status: str | None = None


class ItemOutcome(BaseModel):
    content_hash: str
    outcome: Outcome
    reason: str | None = None
    memory_id: uuid.UUID | None = None
    related_ids: list[uuid.UUID] = Field(default_factory=list)
    version: int | None = None  # of memory_id, after this write


class Receipt(BaseModel):
    id: uuid.UUID
    path: str
    status: ReceiptStatus
    extractor: str | None
    items: list[ItemOutcome]
    counts: dict[str, int]
    timings: dict[str, float]
    notes: list[str]
    error: str | None
    idempotency_key: str | None
    execution_id: str | None
    created_at: datetime
    updated_at: datetime

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> "Receipt":
        return cls(
            id=row["id"], path=row["path"], status=row["status"], extractor=row["extractor"],
            items=row["items"], counts=row["counts"], timings=row["timings"],
            notes=row["notes"], error=row["error"], idempotency_key=row["idempotency_key"],
            execution_id=row["execution_id"], created_at=row["created_at"],
            updated_at=row["updated_at"],
        )


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
