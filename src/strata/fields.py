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
# A memory's meta is filters and small annotations, not a document store: 64 KB of JSON.
MAX_META_BYTES = 64 * 1024


def _meta_ok(value: dict[str, Any]) -> dict[str, Any]:
    storable(value)
    import json

    size = len(json.dumps(value, ensure_ascii=False, default=str).encode())
    if size > MAX_META_BYTES:
        raise ValueError(f"meta is over {MAX_META_BYTES} bytes of JSON")
    return value


Meta = Annotated[dict[str, Any], AfterValidator(_meta_ok)]


# Instants strata accepts: PostgreSQL stores far more, but a date a century from either end
# of Python's calendar leaves room for the arithmetic done on it ("last week", the end of a
# named year, validity ranges). Year 1 or 9999 used to fail deep in the pipeline.
EARLIEST = datetime(100, 1, 1, tzinfo=UTC)
LATEST = datetime(9000, 1, 1, tzinfo=UTC)


def _utc_if_naive(value: datetime) -> datetime:
    """A timestamp without an offset is UTC, so it compares with stored (aware) ones; it
    must lie between ``EARLIEST`` and ``LATEST``."""
    value = value.replace(tzinfo=UTC) if value.tzinfo is None else value
    if not EARLIEST <= value < LATEST:
        raise ValueError("must be between the years 100 and 9000")
    return value


Instant = Annotated[datetime, AfterValidator(_utc_if_naive)]


def _content_ok(value: str) -> str:
    storable(value)
    if not value.strip():
        raise ValueError("content must not be empty")
    if len(value.encode()) > MAX_CONTENT_BYTES:
        raise ValueError(f"content is over {MAX_CONTENT_BYTES} bytes")
    return value


