"""Shapes that flow through ingestion: request, candidates, step payloads, receipts.

Steps pass only ids (``StepPayload``); everything else lives in PostgreSQL, so a step can run
in-process locally or as a Step Functions task with a payload far under 256 KB.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from strata.foundation.fields import TIER_TTL_SCHEMA, Content, Flag, MemoryPath, Tier, Ttl, tier_ttl
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

    role: Role = Field(description=(
        "Who says it; memories come from `user` messages, the others give them context."))
    content: Content = Field(description="What was said.")
    at: Instant | None = Field(default=None, description=(
        "When it was said; orders statements (a later one wins) and anchors relative dates "
        "(\"last month\"). Defaults to the time of the request."))
    id: Text | None = Field(default=None, max_length=200, description=(
        "The message's id in the caller's system, kept as evidence."))
    # Who is speaking, when known (OpenAI's ``name``): a memory about this speaker names them
    # ("Caroline went to ...") rather than "the user", so a question by name matches it.
    name: Text | None = Field(default=None, min_length=1, max_length=100, description=(
        "Who is speaking, when known: memories about them then name them (\"Caroline went "
        "to ...\") rather than \"the user\"."))

    _content = field_validator("content")(_content_ok)


class IngestRequest(BaseModel):
    model_config = ConfigDict(extra="forbid", json_schema_extra={**TIER_TTL_SCHEMA, "examples": [{
        "path": "users.alice",
        "messages": [
            {"role": "user", "content": "I moved to Lisbon last month, and I prefer tea now.",
             "at": "2026-03-02T09:00:00Z"},
            {"role": "assistant", "content": "Noted: Lisbon, and tea."},
        ],
        "wait": True,
        "idempotency_key": "conversation-8812-turn-4"}]})

    path: MemoryPath | None = Field(default=None, description=(
        "Where the memories go; defaults to the key's default path."))
    messages: list[Message] = Field(min_length=1, max_length=1000, description=(
        "The conversation, in order: 1 to 1000 messages."))
    wait: Flag = Field(default=False, description=(  # JSON's boolean (strata.foundation.fields says why)
        "Process the conversation within the request and answer the finished receipt (200), "
        "instead of answering 202 at once."))
    idempotency_key: Text | None = Field(default=None, min_length=1, max_length=200, description=(
        "Sent again with the same key, the request answers the first one's receipt and "
        "writes nothing."))
    # Where the memories this ingest creates land; short_term for ``ttl`` seconds.
    tier: Tier = Field(default="long_term", description=(
        "Where the memories this ingest creates land: `long_term`, or `short_term`, which "
        "expires after `ttl` seconds."))
    # Ttl: JSON's number (strata.foundation.fields). Seconds; short_term only, and then required.
    ttl: Ttl | None = Field(default=None, validate_default=True, description=(
        "Seconds a short-term memory lives, 60 to 366 days' worth: required with `short_term`, "
        "refused (422) with `long_term`."))

    @field_validator("ttl")
    @classmethod
    def _ttl(cls, value: int | None, info) -> int | None:
        tier_ttl(info.data.get("tier", "long_term"), value)
        return value




# Why a user clause became no memory. The rule extractor accounts for every clause of every
# user message; a model extractor for every user message it took nothing from.
NotKeptReason = Literal[
    "question", "hypothetical", "reported", "past", "other_person", "small_talk", "secret",
    "vague", "no_statement", "duplicate", "model_skipped", "too_long", "correction",
]


class NotKept(BaseModel):
    """A user clause that became no candidate. ``text`` is the clause as written, except for
    a secret, whose text is never kept anywhere (``None``)."""

    message: int = Field(ge=0, description="The index of the message it is in.")
    reason: NotKeptReason = Field(description="Why it became no memory.")
    text: str | None = Field(default=None, max_length=500, description=(
        "The clause as written; null for a secret, whose text is never kept."))


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
    """What became of one ingest request."""

    id: uuid.UUID = Field(description="The receipt's id (`GET /v1/ingest/{receipt_id}`).")
    path: str = Field(description="Where the memories go.")
    status: ReceiptStatus = Field(description=(
        "`queued` or `running` while it is processed; then `wrote` (memories written), "
        "`meaningful_no_write` (nothing worth a new memory), or a failure: `llm_failed`, "
        "`embed_failed`, `db_write_failed` (nothing half written)."))
    extractor: str | None = Field(description="The extractor that read the conversation.")
    items: list[ItemOutcome] = Field(description="What became of each candidate memory.")
    not_kept: list[NotKept] = Field(default_factory=list, description=(
        "The user's clauses that became no candidate, and why."))
    counts: dict[str, int] = Field(description="How many candidates had each outcome.")
    timings: dict[str, float] = Field(description="Milliseconds per pipeline step.")
    notes: list[str] = Field(description="What the pipeline wants said (a degraded step, ...).")
    error: str | None = Field(description="Why it failed, for a failed status.")
    idempotency_key: str | None = Field(description="The request's idempotency key.")
    execution_id: str | None = Field(description=(
        "The Step Functions execution that processes it, on AWS."))
    created_at: datetime = Field(description="When the request was received.")
    updated_at: datetime = Field(description="When the receipt last changed.")

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
