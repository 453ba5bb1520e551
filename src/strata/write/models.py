"""Shapes the write path takes and returns: a proposed memory (``Candidate``), what a judge
is shown (``Neighbour``) and says (``Verdict``), and each item's outcome."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Literal

from pydantic import BaseModel, Field, model_validator

from strata.foundation.fields import Kind, Text
from strata.write import slots

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

    @model_validator(mode="after")
    def _slot_key(self) -> "Candidate":
        # The one slot normalisation of the write path (strata.write.slots.normal): a model
        # that files "french" then "spanish" under user.languages gets two keys, not a
        # supersession; a context its content names keys a preference.
        self.slot, self.value = slots.normal(self.slot, self.value, self.content)
        return self


class Verdict(BaseModel):
    """A judge's decision about a candidate and one existing memory it was shown."""

    target_id: uuid.UUID
    relation: Relation
    confidence: float = Field(ge=0, le=1)
    reason: str = Field(max_length=500)
    decided_by: str = "rule"


class ItemOutcome(BaseModel):
    """What became of one candidate memory of an ingested conversation."""

    content_hash: str = Field(description=(
        "sha256 of the candidate's canonical form; for one refused as `forgotten`, a hash "
        "keyed with the tenant's fingerprint key instead, which confirms no guess of it."))
    outcome: Outcome = Field(description=(
        "`created`, `reinforced` (a paraphrase of a stored memory), `merged`, "
        "`superseded_existing` (it replaced what it contradicts), `stored_as_superseded` (an "
        "older statement kept as history), `blocked` (a retired value, or a memory rule: see "
        "`rule_id`), `candidate` (held for review) or `skipped`."))
    reason: str | None = Field(default=None, description="Why, when the outcome needs a reason.")
    memory_id: uuid.UUID | None = Field(default=None, description=(
        "The memory written or matched."))
    related_ids: list[uuid.UUID] = Field(default_factory=list, description=(
        "The memories it superseded, refined or contradicts."))
    version: int | None = Field(default=None, description=(  # of memory_id, after this write
        "The version of `memory_id` after this write."))
    tier: Literal["short_term", "long_term"] | None = Field(default=None, description=(
        "Where `memory_id` is now: `short_term` or `long_term`."))
    # Absent rather than null: a client, or a link-following fuzzer, never reads a null as a
    # rule to fetch.
    rule_id: uuid.UUID | None = Field(default=None, exclude_if=lambda v: v is None, description=(
        "The memory rule that decided this item, if one did; absent otherwise."))
    tombstone_id: uuid.UUID | None = Field(default=None, exclude_if=lambda v: v is None,
                                           description=(
        "For `blocked` by a retired value (reason `forgotten`, `tombstoned: ...`): the "
        "tombstone that refused it; absent otherwise."))


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
    valid_from_explicit: bool = False  # its start was given, not only when it was said
    # The gate found it as a holder the candidate's slot rules decide about (the same key,
    # a key a negation covers, or the one other context an unqualified change replaces).
    slot_match: bool = False
