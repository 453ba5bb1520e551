"""Field types every layer shares (kinds, statuses, storable text, instants): the bottom of
the package, importing nothing of strata's, so the write path, the direct API's shapes and
the ingest shapes can all use them."""

from __future__ import annotations

import math
from datetime import UTC, datetime
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, Field

Kind = Literal[
    "fact", "preference", "event", "instruction", "strategy",
    "assumption", "failure", "reflection", "summary",
]
Status = Literal["candidate", "active", "superseded", "archived", "rejected"]
OnConflict = Literal["error", "replace", "ignore"]

MAX_CONTENT_BYTES = 32 * 1024


def storable(value: Any) -> Any:
    """PostgreSQL text and jsonb cannot hold NUL, unpaired surrogates (not UTF-8) or
    NaN/Infinity (not JSON): refuse them here, where the field is known."""
    if isinstance(value, str):
        if "\x00" in value:
            raise ValueError("text must not contain NUL characters")
        try:
            value.encode()
        except UnicodeEncodeError:
            raise ValueError("text must be valid Unicode (no unpaired surrogates)") from None
    elif isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError("numbers must be finite")
    elif isinstance(value, dict):
        for k, v in value.items():
            storable(k)
            storable(v)
    elif isinstance(value, list):
        for v in value:
            storable(v)
    return value


Text = Annotated[str, AfterValidator(storable)]
Tag = Annotated[Text, Field(min_length=1, max_length=64)]
Meta = Annotated[dict[str, Any], AfterValidator(storable)]


def _utc_if_naive(value: datetime) -> datetime:
    """A timestamp without an offset is UTC, so it compares with stored (aware) ones."""
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value


Instant = Annotated[datetime, AfterValidator(_utc_if_naive)]


def _content_ok(value: str) -> str:
    storable(value)
    if not value.strip():
        raise ValueError("content must not be empty")
    if len(value.encode()) > MAX_CONTENT_BYTES:
        raise ValueError(f"content is over {MAX_CONTENT_BYTES} bytes")
    return value


