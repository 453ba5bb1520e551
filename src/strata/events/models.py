"""The shape of an event: pydantic and the standard library only, so the client loads it
without the server's dependencies."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Literal, get_args

from pydantic import BaseModel, Field

__all__ = ["Event", "EventType", "TYPES"]

EventType = Literal["created", "reinforced", "updated", "superseded", "held_for_review",
                    "promoted", "rejected", "deleted", "restored", "forgotten", "expired",
                    "derived_retired"]
TYPES: tuple[str, ...] = get_args(EventType)


class Event(BaseModel):
    """One change to a memory, as the outbox recorded it. Never its content."""

    cursor: str = Field(description=(
        "The event's place in the tenant's commit order: pass as `after` to read what "
        "committed after it."))
    type: EventType = Field(description=(
        "What changed: `created`, `reinforced` (said again), `updated`, `superseded` (a newer "
        "memory replaced it: `related`), `held_for_review` (a candidate), `promoted` (a "
        "candidate accepted, or short-term made long-term), `rejected`, `deleted`, "
        "`restored`, `forgotten` (erased with its history), `expired` (archived or removed "
        "by the lifecycle job), `derived_retired` (what it was made from changed or went)."))
    memory_id: uuid.UUID = Field(description="The memory that changed.")
    path: str = Field(description="The memory's path after the change (before, if it went).")
    version: int = Field(description=(
        "The memory's version after the change (its last version, if it went)."))
    status: str | None = Field(description=(
        "The memory's status after the change; null when the memory is gone."))
    cause: str | None = Field(description=(
        "The operation that made the change (`memory.create`, `ingest.persist`, "
        "`review.promote`, `lifecycle.expire`, ...)."))
    actor: str | None = Field(description=(
        "Who made it: the principal and surface, or `system:<job>`."))
    operation_id: uuid.UUID | None = Field(description=(
        "The transaction's operation: the events of one operation share it (a forget and "
        "what it forgot with it)."))
    related: list[uuid.UUID] = Field(description=(
        "The other memories involved: for `superseded`, the memory that replaced it."))
    at: datetime = Field(description="When the change was made.")
