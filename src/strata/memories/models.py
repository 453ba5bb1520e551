"""Memory shapes: what callers send and what they get back (shared by HTTP, MCP and the client).

Wire shapes: this module imports pydantic and :mod:`strata.foundation.fields` only, because the Python
client uses these very classes without the server's dependencies (tests/test_client_install.py
holds it to that). Rules that need more than the JSON, such as refusing a secret
(detect-secrets), are the write path's: :mod:`strata.memories.store` applies them.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator

from strata.foundation.fields import (  # noqa: F401  (re-exported: the shapes' field types)
    CONTENT_PATTERN, MAX_CONTENT_BYTES, TIER_TTL_SCHEMA, Flag, Fraction, Instant, Kind, MemoryContent,
    MemoryPath, Meta, OnConflict, Status, Tag, Text, Tier, Ttl, Version, _content_ok, storable,
    tier_ttl,
)


# A memory's context (migration 0022): at most this many characters.
MAX_CONTEXT_CHARS = 8000
# Not blank, as _context_ok refuses it: the schema says so with the pattern whitespace-only
# content has (whitespace as str.isspace() counts it, \x1e too), so a generator reading the
# document does not send what is refused.
MemoryContext = Annotated[Text, Field(min_length=1, max_length=MAX_CONTEXT_CHARS,
                                      json_schema_extra={"pattern": CONTENT_PATTERN})]
CONTEXT_DOC = (
    "What situates the statement, when it does not say it itself: the message it answers "
    "(\"How long have you been married?\" for \"5 years already!\"), the passage it was "
    "taken from. Search's text arm matches its words with the content's; it is never part "
    "of the content -- not of its value, its duplicate check or its embedding. At most "
    f"{MAX_CONTEXT_CHARS} characters, and no secret.")


def _context_ok(value: str | None) -> str | None:
    if value is not None and not value.strip():
        raise ValueError("context must not be blank (leave it out for none)")
    return value


class MemoryIn(BaseModel):
    """One memory to create."""

    model_config = ConfigDict(extra="forbid", json_schema_extra=TIER_TTL_SCHEMA)

    content: MemoryContent = Field(description=(
        "The statement to remember, as it should be read back: at most 32 KB, with a word in "
        "it, and no secret (a key, token or password is refused)."))
    context: MemoryContext | None = Field(default=None, description=CONTEXT_DOC)
    path: MemoryPath | None = Field(default=None, description=(
        "Where it lives (`users.alice`, `shared.project_x`): dot-separated labels. Defaults "
        "to the key's default path."))
    kind: Kind = Field(default="fact", description="What sort of statement it is.")
    slot: Text | None = Field(default=None, min_length=1, max_length=200, description=(
        "What the memory is about, when it holds one value of something "
        "(`user.preferred_database`): a new value of the same slot supersedes the old one."))
    value: Text | None = Field(default=None, min_length=1, max_length=500, description=(
        "The slot's normalised value (`postgresql` for slot `user.preferred_database`); "
        "defaults to the content when a slot is given without one."))
    valid_from: Instant | None = Field(default=None, description=(
        "When the statement became true in the world; defaults to now."))
    # Fraction, Version, Flag: JSON's numbers and booleans, in every request shape (fields.py).
    importance: Fraction | None = Field(default=None, description=(
        "How much it matters, 0 to 1; 0.5 when absent."))
    tags: list[Tag] = Field(default_factory=list, max_length=32, description=(
        "Labels to filter by (search's and list's `tags`)."))
    meta: Meta = Field(default_factory=dict, description=(
        "A JSON object of small annotations, at most 64 KB; search filters on it by "
        "containment."))
    name: Text | None = Field(default=None, min_length=1, max_length=200, description=(
        "A name unique within its path: creating a memory under a name that exists is "
        "resolved by `on_conflict`."))
    tier: Tier = Field(default="long_term", description=(
        "Where it lands: `long_term`, or `short_term`, which expires after `ttl` seconds."))
    # Ttl: JSON's number (strata.foundation.fields). Seconds; short_term only, and then required.
    ttl: Ttl | None = Field(default=None, validate_default=True, description=(
        "Seconds a short-term memory lives, 60 to 366 days' worth: required with `short_term`, "
        "refused (422) with `long_term`."))

    @field_validator("ttl")
    @classmethod
    def _ttl(cls, value: int | None, info: ValidationInfo) -> int | None:
        tier_ttl(info.data.get("tier", "long_term"), value)
        return value

    _content = field_validator("content")(_content_ok)
    _context = field_validator("context")(_context_ok)


class CreateRequest(BaseModel):
    model_config = ConfigDict(extra="forbid", json_schema_extra={"examples": [{
        "memories": [
            {"content": "Alice prefers PostgreSQL for new services", "path": "users.alice",
             "kind": "preference", "slot": "user.preferred_database", "value": "postgresql",
             "tags": ["databases"], "name": "preferred-database"},
            {"content": "The staging cluster runs in eu-west-1", "path": "shared.infra"},
        ],
        "on_conflict": "error"}]})

    memories: list[MemoryIn] = Field(min_length=1, max_length=500, description=(
        "The memories to create, 1 to 500; each is answered in `results`, in this order."))
    on_conflict: OnConflict = Field(default="error", description=(
        "What a memory whose `name` exists in its path does: `error` refuses the whole "
        "request (409), `ignore` skips it (`skipped`), `replace` edits the stored one as a "
        "PATCH would (`updated`)."))


class MemoryPatch(BaseModel):
    """Fields a PATCH may change; absent fields stay as they are."""

    model_config = ConfigDict(extra="forbid", json_schema_extra={"examples": [
        {"expected_version": 3, "content": "Alice prefers PostgreSQL 17 for new services",
         "tags": ["databases", "postgresql"]}]})

    expected_version: Version | None = Field(default=None, description=(
        "The version this change is made to (or send `If-Match`); 412 when the memory has "
        "moved on."))
    content: MemoryContent | None = Field(default=None, description=(
        "The new statement (re-embedded; no secret)."))
    context: MemoryContext | None = Field(default=None, description=(
        "The new context (null: none); see create's `context`."))
    path: MemoryPath | None = Field(default=None, description="Move the memory to this path.")
    kind: Kind | None = Field(default=None, description="The new kind.")
    slot: Text | None = Field(default=None, min_length=1, max_length=200, description=(
        "The new slot: what the memory is about."))
    # The slot's value; derived from the new content when the content changes without one.
    value: Text | None = Field(default=None, min_length=1, max_length=500, description=(
        "The slot's new value; derived from the new content when the content changes "
        "without one."))
    importance: Fraction | None = Field(default=None, description="How much it matters, 0 to 1.")
    confidence: Fraction | None = Field(default=None, description=(
        "How sure strata is that it holds, 0 to 1."))
    pinned: Flag | None = Field(default=None, description=(
        "Pinned memories are never archived by decay."))
    tags: list[Tag] | None = Field(default=None, max_length=32, description=(
        "The new tags (replacing the old ones)."))
    meta: Meta | None = Field(default=None, description="The new meta object (replacing the old one).")
    valid_from: Instant | None = Field(default=None, description=(
        "When the statement became true in the world."))
    valid_to: Instant | None = Field(default=None, description=(
        "When it stopped being true; after `valid_from`."))

    @field_validator("content")
    @classmethod
    def _content(cls, value: str | None) -> str | None:
        return None if value is None else _content_ok(value)

    _context = field_validator("context")(_context_ok)


class Memory(BaseModel):
    """A memory as stored, with its status and version."""

    id: uuid.UUID = Field(description="The memory's id.")
    path: str = Field(description="Where it lives.")
    name: str | None = Field(description="Its name, unique within its path, when given.")
    content: str = Field(description="The statement.")
    context: str | None = Field(default=None, description=(
        "What situates it (the message it answers, the passage it came from), when given: "
        "searched with the content, never part of it."))
    kind: Kind = Field(description="What sort of statement it is.")
    slot: str | None = Field(description="What it is about, when it holds one value of something.")
    value: str | None = Field(description="The slot's normalised value.")
    status: Status = Field(description=(
        "`active` (current truth, what search returns), `candidate` (held for review), "
        "`superseded` (replaced by a newer statement), `archived` (decayed) or `rejected`."))
    origin: str = Field(description=(
        "How strata learned it: `user_stated`, `llm_derived`, `imported` or `system`."))
    importance: float = Field(description="How much it matters, 0 to 1.")
    confidence: float = Field(description="How sure strata is that it holds, 0 to 1.")
    pinned: bool = Field(description="Pinned memories are never archived by decay.")
    tier: str = Field(description="`long_term`, or `short_term` with an `expires_at`.")
    expires_at: datetime | None = Field(description="When a short-term memory expires.")
    valid_from: datetime = Field(description="When the statement became true in the world.")
    valid_to: datetime | None = Field(description=(
        "When it stopped being true (set when it is superseded); null while it holds."))
    recorded_at: datetime = Field(description="When strata learned it.")
    version: int = Field(description=(
        "Bumped on every change; name it to change the memory (`expected_version`, `If-Match`)."))
    access_count: int = Field(description="How often search returned it.")
    last_accessed_at: datetime | None = Field(description="When search last returned it.")
    reinforcements: int = Field(description="How often it was stated again (a paraphrase).")
    embedding_model: str | None = Field(description="The embedder its vector was made with.")
    evidence: list[Any] = Field(description=(
        "Where it came from: source conversations, message ids and timestamps."))
    meta: dict[str, Any] = Field(description="Its meta object.")
    tags: list[str] = Field(description="Its tags.")
    created_at: datetime = Field(description="When the row was created.")
    updated_at: datetime = Field(description="When the row last changed.")

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> "Memory":
        valid = row["valid"]
        return cls(
            id=row["id"], path=row["path"], name=row["name"], content=row["content"],
            context=row.get("context"),
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
    """What became of one memory of a create request."""

    id: uuid.UUID | None = Field(description=(
        "The memory written, matched or named; null when there is none."))
    status: Literal["inserted", "updated", "skipped", "reinforced", "superseded_existing",
                    "held", "blocked"] = Field(description=(
        "`inserted` (new; kept as history when the write path says so), `updated` (a named "
        "one edited, on_conflict `replace`), `skipped` (on_conflict `ignore`), `reinforced` "
        "(a paraphrase of a stored memory), `superseded_existing` (it replaced a memory it "
        "contradicts), `held` (stored as a candidate for review, not active: a memory rule's "
        "review_only capture, or a change back to a retired value) or `blocked` (nothing "
        "stored: a retired value, see `tombstone_id`, or a memory rule, see `rule_id`)."))
    reason: str | None = Field(default=None, description="Why, when the status needs a reason.")
    # Absent rather than null (as rule_id): a link-following client never reads a null as a
    # tombstone to lift.
    tombstone_id: uuid.UUID | None = Field(default=None, exclude_if=lambda v: v is None,
                                           description=(
        "The tombstone of the retired value that blocked it; absent otherwise."))
    version: int | None = Field(default=None, description="The memory's version after this write.")
    tier: Tier | None = Field(default=None, description=(
        "Where the memory landed: `short_term` or `long_term`."))
    rule_id: uuid.UUID | None = Field(default=None, exclude_if=lambda v: v is None, description=(
        "The memory rule that decided this result (blocked, held, or kept by an include); "
        "absent when no rule did."))


class HistoryEntry(BaseModel):
    """A prior state of a memory: what it was before one change."""

    version: int = Field(description="The version this snapshot was.")
    operation: Literal["update", "delete"] = Field(description="The change that ended it.")
    cause: str | None = Field(description=(
        "What made the change (`memory.update`, `ingest.persist`, `review.merge`, ...)."))
    actor: str | None = Field(description="Who made it (a principal, the pipeline, ...).")
    operation_id: uuid.UUID | None = Field(description="The operation the change belonged to.")
    changed_at: datetime = Field(description="When the change was made.")
    erased: bool = Field(description=(
        "True when the memory was forgotten: the snapshot keeps no content, only hashes."))
    snapshot: dict[str, Any] = Field(description="The memory's row before the change.")


class Deleted(BaseModel):
    """The answer to a delete: the memory is gone, its history kept (restore reads it)."""

    id: uuid.UUID = Field(description="The memory deleted.")
    deleted: Literal[True] = Field(description="Always true.")
    version: int = Field(description="The version it had when it was deleted.")


class Forgotten(BaseModel):
    """The answer to a forget: the content is erased everywhere, its value tombstoned."""

    id: uuid.UUID = Field(description="The memory forgotten.")
    forgotten: Literal[True] = Field(description="Always true (forgetting again answers the same).")
    tombstone_ids: list[uuid.UUID] = Field(description=(
        "The tombstones that keep the forgotten value from coming back."))
    also_forgotten: list[uuid.UUID] = Field(description=(
        "Other memories of the scope that held the same value, forgotten with it."))


class Relationship(BaseModel):
    """An edge between this memory and another that the key can also read."""

    id: uuid.UUID = Field(description="The edge's id.")
    type: Literal["SUPERSEDES", "REFINES", "COEXISTS", "CONTRADICTS", "CONSOLIDATES",
                  "DERIVED_FROM", "DUPLICATE_OF"] = Field(description=(
        "How the source relates to the target."))
    source_id: uuid.UUID = Field(description="The memory the edge goes from.")
    target_id: uuid.UUID = Field(description="The memory the edge goes to.")
    confidence: float = Field(description="How sure the decision was, 0 to 1.")
    reason: str | None = Field(description="Why it was decided, when recorded.")
    decided_by: str = Field(description="A rule, a model's name or a principal.")
    created_at: datetime = Field(description="When the edge was made.")
    direction: Literal["outgoing", "incoming"] = Field(description=(
        "`outgoing` when this memory is the source, `incoming` when it is the target."))
    other_id: uuid.UUID = Field(description="The memory at the other end.")
    other_status: Status = Field(description="That memory's status.")
