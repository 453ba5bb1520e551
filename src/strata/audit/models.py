"""What the audit trail's readers answer: an entry of the chain and a verification report
(the rows :func:`strata.audit.chain.list_entries` and the report
:func:`strata.audit.verify.verify_tenant` build, as the HTTP API returns them)."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Literal

from pydantic import BaseModel, Field


class AuditEntry(BaseModel):
    """One entry of the tenant's hash chain. It never holds memory content or query text."""

    seq: int = Field(description="Its place in the tenant's chain, from 1.")
    at: datetime = Field(description="When it was recorded.")
    action: Literal["read", "write", "delete", "admin"] = Field(description="What kind of act.")
    surface: Literal["http", "mcp", "pipeline", "scheduler", "cli"] = Field(description=(
        "Where the act came in."))
    operation: str = Field(description="The operation (`memory.create`, `search`, ...).")
    principal_id: uuid.UUID | None = Field(description="Who acted, when a principal did.")
    key_id: uuid.UUID | None = Field(description="The key used, when one was.")
    memory_ids: list[uuid.UUID] = Field(description="The memories it touched.")
    count: int = Field(description="How many items it read or wrote.")
    query_len: int | None = Field(description="A search's query length (never its text).")
    outcome: str = Field(description="`ok`, or the error code it ended with.")
    row_hash: str = Field(description=(
        "sha256 (hex) of the previous entry's hash and this entry's fields."))


class Anchor(BaseModel):
    """The chain compared with its latest published digest (kept outside the database)."""

    ok: bool | None = Field(description=(
        "Whether the chain agrees with the digest; null when there is none to compare with."))
    reason: str | None = Field(default=None, description="Why there was nothing to compare with.")
    digest: str | None = Field(default=None, description="The digest compared with.")
    published_at: str | None = Field(default=None, description="When it was published.")
    head_seq: int | None = Field(default=None, description="The last entry it vouches for.")


class CheckpointCheck(BaseModel):
    """The verified checkpoint, checked by a full verification."""

    seq: int = Field(description="The entry the checkpoint is at.")
    ok: bool | None = Field(description="Whether that entry still carries the recorded hash.")


class Verification(BaseModel):
    """A full verification of the tenant's chain: ok only if every part held."""

    ok: bool = Field(description="True when no part failed.")
    failed: list[Literal["chain", "checkpoint", "digest", "prune"]] = Field(description=(
        "The parts that failed."))
    problems: list[str] = Field(description="What is wrong, one sentence each.")
    mode: Literal["full", "rolling", "incremental"] = Field(description=(
        "How much was walked; always `full` here."))
    from_seq: int = Field(description="The entry the walk started after.")
    checked: int = Field(description="How many entries were checked.")
    covered: list[str] = Field(description=(
        "The entries walked, as seq ranges (`seq 1..45`); empty when the chain has none."))
    first_bad_seq: int | None = Field(description="The first entry that does not verify.")
    gaps: list[list[int]] = Field(description="Missing ranges of entries, as [first, last].")
    head_seq: int = Field(description="The last entry recorded as the chain's head.")
    complete: bool = Field(description="Whether the walk reached the end of the chain.")
    verified_seq: int = Field(description="The last entry known good.")
    anchor: Anchor = Field(description="The chain against its latest published digest.")
    missed_appends: int = Field(description=(
        "Entries that could not be written (recorded as such): gaps in the trail, not "
        "tampering."))
    checkpoint: CheckpointCheck | None = Field(default=None, description=(
        "The verified checkpoint, when there is one."))
