"""Shapes that flow through ingestion: request, candidates, step payloads, receipts.

Steps pass only ids (``StepPayload``); everything else lives in PostgreSQL, so a step can run
in-process locally or as a Step Functions task with a payload far under 256 KB.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from strata.fields import TIER_TTL_SCHEMA, Content, Flag, MemoryPath, Tier, Ttl, tier_ttl
from strata.memories.models import Instant, Text, _content_ok
from strata.write.models import Candidate, ItemOutcome, Neighbour, Outcome, Relation, Verdict

Role = Literal["user", "assistant", "system", "tool"]
ReceiptStatus = Literal[
    "queued", "running", "wrote", "meaningful_no_write", "llm_failed", "embed_failed",
    "db_write_failed",
]
TERMINAL = frozenset({"wrote", "meaningful_no_write", "llm_failed", "embed_failed", "db_write_failed"})


class Message(BaseModel):
    model_config = ConfigDict(extra="forbid")

    role: Role
    content: Content
    at: Instant | None = None
    id: Text | None = Field(default=None, max_length=200)
    # Who is speaking, when known (OpenAI's ``name``): a memory about this speaker names them
    # ("Caroline went to ...") rather than "the user", so a question by name matches it.
    name: Text | None = Field(default=None, min_length=1, max_length=100)

    _content = field_validator("content")(_content_ok)


class IngestRequest(BaseModel):
    model_config = ConfigDict(extra="forbid", json_schema_extra=TIER_TTL_SCHEMA)

    path: MemoryPath | None = None
    messages: list[Message] = Field(min_length=1, max_length=1000)
    wait: Flag = False  # JSON's boolean, not 0 or "true" (strata.fields says why)
    idempotency_key: Text | None = Field(default=None, min_length=1, max_length=200)
    # Where the memories this ingest creates land; short_term for ``ttl`` seconds.
    tier: Tier = "long_term"
    ttl: Ttl | None = Field(default=None, validate_default=True)

    @field_validator("ttl")
    @classmethod
    def _ttl(cls, value: int | None, info) -> int | None:
        tier_ttl(info.data.get("tier", "long_term"), value)
        return value




# Why a user clause became no memory. The rule extractor accounts for every clause of every
# user message; a model extractor for every user message it took nothing from.
NotKeptReason = Literal[
    "question", "hypothetical", "reported", "past", "other_person", "small_talk", "secret",
    "vague", "no_statement", "duplicate", "model_skipped", "too_long",
]


class NotKept(BaseModel):
    """A user clause that became no candidate. ``text`` is the clause as written, except for
    a secret, whose text is never kept anywhere (``None``)."""

    message: int = Field(ge=0)
    reason: NotKeptReason
    text: str | None = Field(default=None, max_length=500)


class Extraction(BaseModel):
    """What an extractor returns (and what the model's structured output must parse into)."""

    memories: list[Candidate] = Field(default_factory=list)
    not_kept: list[NotKept] = Field(default_factory=list)




class StepPayload(BaseModel):
    """What moves between steps (and between Step Functions states): ids only."""

    model_config = ConfigDict(extra="ignore")

    receipt_id: uuid.UUID
    tenant_id: uuid.UUID
    status: str | None = None




class Receipt(BaseModel):
    id: uuid.UUID
    path: str
    status: ReceiptStatus
    extractor: str | None
    items: list[ItemOutcome]
    not_kept: list[NotKept] = Field(default_factory=list)
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
            items=row["items"], not_kept=row.get("not_kept") or [], counts=row["counts"],
            timings=row["timings"],
            notes=row["notes"], error=row["error"], idempotency_key=row["idempotency_key"],
            execution_id=row["execution_id"], created_at=row["created_at"],
            updated_at=row["updated_at"],
        )

__all__ = ["Candidate", "Extraction", "IngestRequest", "ItemOutcome", "Message", "Neighbour", "NotKept",
           "Outcome", "Receipt", "Relation", "Role", "StepPayload", "TERMINAL", "Verdict"]
