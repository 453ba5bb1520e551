"""The shapes of webhooks: pydantic and the standard library only."""

from __future__ import annotations

import uuid
from datetime import datetime

from pydantic import BaseModel, ConfigDict, Field

from strata.events.models import EventType
from strata.events.targets import URL_PATTERN
from strata.foundation.fields import ScopePath

__all__ = ["Delivery", "Replay", "Webhook", "WebhookIn", "WebhookSecret"]


class WebhookIn(BaseModel):
    """A webhook to register."""

    model_config = ConfigDict(extra="forbid", json_schema_extra={"examples": [
        {"url": "https://hooks.example.com/strata", "paths": ["users.alice"]},
        {"url": "https://hooks.example.com/erasures", "paths": ["users"],
         "types": ["forgotten", "deleted"]},
    ]})

    url: str = Field(max_length=2048, json_schema_extra={"pattern": URL_PATTERN}, description=(
        "Where deliveries are POSTed: an http(s) URL whose host resolves to public "
        "addresses only (422 naming `url` otherwise)."))
    paths: list[ScopePath] = Field(min_length=1, max_length=20, description=(
        "The events of memories under these paths are delivered (`\"\"`: the whole "
        "tenant); the key must own each."))
    types: list[EventType] | None = Field(default=None, min_length=1, description=(
        "Only events of these types; absent: every type."))


class Webhook(BaseModel):
    """A registered webhook and where its deliveries stand. Its secret is never shown here."""

    id: uuid.UUID = Field(description="The webhook's id.")
    url: str = Field(description="Where deliveries are POSTed.")
    paths: list[str] = Field(description="The paths whose events it receives.")
    types: list[EventType] | None = Field(description="The types it receives; null: all.")
    created_at: datetime = Field(description="When it was registered.")
    after: str = Field(description=(
        "The cursor of the last event delivered (a 2xx answer); the next delivery is the "
        "first matching event after it."))
    failures: int = Field(description="Failed deliveries in a row (0 after a success).")
    next_attempt_at: datetime = Field(description="When the dispatcher next tries it.")
    disabled_at: datetime | None = Field(description=(
        "When it was disabled after repeated failures; null while it is enabled. A replay "
        "enables it again."))
    disabled_reason: str | None = Field(description="Why it was disabled.")


class WebhookSecret(Webhook):
    """A webhook with its signing secret: answered once, at registration or rotation."""

    secret: str = Field(description=(
        "The Standard Webhooks signing secret (`whsec_` + base64): verify each delivery's "
        "`webhook-signature` with it. Shown only now; rotate to get a new one."))


class Replay(BaseModel):
    """Where to deliver from again."""

    model_config = ConfigDict(extra="forbid", json_schema_extra={"examples": [{"after": "0"}]})

    after: str = Field(pattern=r"^[0-9]{1,19}$", description=(
        "Deliver again every matching event after this cursor (`0`: from the oldest kept)."))


class Delivery(BaseModel):
    """One attempt to deliver an event."""

    seq: str = Field(description="The cursor of the event sent.")
    attempt: int = Field(description="Which attempt at this event it was (1 is the first).")
    status: int | None = Field(description="The receiver's HTTP status; null if none answered.")
    ok: bool = Field(description="True when the receiver answered 2xx.")
    error: str | None = Field(description="Why it failed (no body is kept).")
    duration_ms: int = Field(description="How long the attempt took.")
    at: datetime = Field(description="When it was made.")
