"""Field types every layer shares (kinds, statuses, storable text, instants): the bottom of
the package, importing nothing of strata's, so the write path, the direct API's shapes and
the ingest shapes can all use them."""

from __future__ import annotations

import math
import re
from datetime import UTC, datetime, timedelta
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BeforeValidator, Field, Strict, StrictBool

Kind = Literal[
    "fact", "preference", "event", "instruction", "strategy",
    "assumption", "failure", "reflection", "summary",
]
Status = Literal["candidate", "active", "superseded", "archived", "rejected"]
OnConflict = Literal["error", "replace", "ignore"]
# Where a new memory lands: long-term, or short-term for ``ttl`` seconds (the lifecycle job
# expires it then, or promotes it to long-term, same id, once it is used often enough).
Tier = Literal["short_term", "long_term"]
TTL_MAX_S = 366 * 24 * 3600


# Seconds a short-term memory lives (bounds inside the type: see Integer below).
Ttl = Annotated[int, Field(ge=60, le=TTL_MAX_S), BeforeValidator(lambda v: _json_number(v))]
# A nullable property's "given, and not null" in a conditional or a oneOf branch. Said without
# a type: ReDoc merges the branch into the property's own `anyOf [T, null]` and warns
# ("Incompatible types in allOf") at every branch that restates a type.
NOT_NULL: dict = {"not": {"type": "null"}}
# The pairing tier_ttl enforces, as JSON Schema states it (a model's json_schema_extra), so a
# client or a generator reading the document sends what is accepted.
TIER_TTL_SCHEMA = {
    "if": {"required": ["tier"], "properties": {"tier": {"const": "short_term"}}},
    "then": {"required": ["ttl"], "properties": {"ttl": NOT_NULL}},
    "else": {"properties": {"ttl": {"not": {"type": "integer"}}}},
}


def tier_ttl(tier: str, ttl: int | None) -> None:
    """A short-term write names its time to live; a long-term one has none."""
    if tier == "short_term" and ttl is None:
        raise ValueError("ttl (seconds) is required with tier short_term")
    if tier == "long_term" and ttl is not None:
        raise ValueError("ttl applies to tier short_term only")

MAX_CONTENT_BYTES = 32 * 1024


# Numbers and booleans of a request as JSON (and the schema) has them. FastAPI validates a
# parsed body in pydantic's lax mode, which would read "5" as 5, false as 0 and 0 as false;
# JSON Schema's integer does include 5.0, which lax mode reads as 5 (and 5.5 not at all).
def _json_number(value: Any) -> Any:
    if isinstance(value, (str, bool)):
        raise ValueError("must be a number")
    return value


def _real(value: float) -> float:
    # PostgreSQL's real cannot hold what rounds to 0 in 4 bytes but is not 0 ("underflow"):
    # below its smallest normal value, a share is 0.
    return 0.0 if abs(value) < 1.17549435e-38 else value


Flag = StrictBool
# Bounds go before the validator, inside the type: given outside (``Field(ge=1)`` on an
# optional field), pydantic writes them into the schema as keywords JSON Schema lacks (``ge``).
Integer = Annotated[int, BeforeValidator(_json_number)]
# A row's version: the columns that hold it are PostgreSQL integers, so a larger number names no
# version that can exist -- a 422 naming the field rather than a comparison the database refuses.
VERSION_MAX = 2**31 - 1
Version = Annotated[int, Field(ge=1, le=VERSION_MAX), BeforeValidator(_json_number)]
# A short-term memory's time to live, in seconds. The bounds sit on the number itself: on a
# field typed `Integer | None`, pydantic cannot place them in the schema (it wrote `ge`/`le`,
# which JSON Schema does not know, so the document said nothing of them).
Ttl = Annotated[int, Field(ge=60, le=TTL_MAX_S), BeforeValidator(_json_number)]
Fraction = Annotated[float, Strict(), Field(ge=0, le=1), AfterValidator(_real)]


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


# What the API's schema says of text (a pattern: no NUL), for clients and schemathesis;
# ``storable`` is what refuses it.
NO_NUL = r"^[^\x00]*$"
Text = Annotated[str, AfterValidator(storable), Field(json_schema_extra={"pattern": NO_NUL})]
Tag = Annotated[Text, Field(min_length=1, max_length=64)]

# A path (``users.alice``): dot-separated ltree labels. strata.foundation.paths validates paths with this
# pattern, where the caller is known (a scope may be the tenant root, ""); these types put it
# in the API's schema.
PATH_LABEL = r"[A-Za-z0-9_-]{1,255}"
PATH_PATTERN = rf"^{PATH_LABEL}(\.{PATH_LABEL})*$"
ROOT_OR_PATH_PATTERN = rf"^({PATH_LABEL}(\.{PATH_LABEL})*)?$"
MAX_PATH_LEN = 1024
MemoryPath = Annotated[str, Field(
    json_schema_extra={"pattern": PATH_PATTERN, "maxLength": MAX_PATH_LEN})]
ScopePath = Annotated[str, Field(
    json_schema_extra={"pattern": ROOT_OR_PATH_PATTERN, "maxLength": MAX_PATH_LEN})]
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
_PG_MAX_OFFSET = timedelta(hours=16)
LATEST = datetime(9000, 1, 1, tzinfo=UTC)


def _utc_if_naive(value: datetime) -> datetime:
    """A timestamp without an offset is UTC, so it compares with stored (aware) ones; its
    year, as written, must lie between ``EARLIEST`` and ``LATEST``'s (as the schema's pattern
    says; its offset moves it a day at most)."""
    value = value.replace(tzinfo=UTC) if value.tzinfo is None else value
    if not EARLIEST.year <= value.year < LATEST.year:
        raise ValueError("must be between the years 100 and 9000")
    if abs(value.utcoffset()) >= _PG_MAX_OFFSET:
        # RFC 3339 (the schema's date-time) allows offsets to ±23:59, PostgreSQL reads them to
        # ±15:59 ("time zone displacement out of range"), and no place uses one beyond: the
        # instant is kept, in UTC. A real offset stays, for what is local to it ("today").
        value = value.astimezone(UTC)
    return value


def _not_a_number(value: Any) -> Any:
    """An instant is a date and time, as the schema's ``date-time`` says: pydantic would also
    read a number, or a string of one (``0.5``, ``"1700000000"``), as seconds since 1970."""
    if isinstance(value, (int, float)) or (
            isinstance(value, str) and _TIMESTAMP.fullmatch(value.strip())):
        raise ValueError("must be a date and time (ISO 8601), not a number")
    return value


_TIMESTAMP = re.compile(r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?")
YEARS_PATTERN = r"^(0[1-9][0-9]{2}|[1-8][0-9]{3})-"  # 0100-8999
Instant = Annotated[datetime, BeforeValidator(_not_a_number), AfterValidator(_utc_if_naive),
                    Field(json_schema_extra={"pattern": YEARS_PATTERN})]


# What str.isspace() calls whitespace (what strip() removes), as a regex character class.
SPACE_CLASS = (r"\t\n\x0b\x0c\r\x1c-\x1f \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f"
               r"\u205f\u3000")
# Content as the schema states it: something besides whitespace, and no NUL. ``_content_ok``
# refuses the rest too (unpaired surrogates, over MAX_CONTENT_BYTES of UTF-8).
CONTENT_PATTERN = rf"^[^\x00]*[^\x00{SPACE_CLASS}][^\x00]*$"
Content = Annotated[str, Field(json_schema_extra={"minLength": 1, "pattern": CONTENT_PATTERN})]
# What strata.write.canonical reduces to nothing, alone or in any run (whitespace, the edge
# punctuation it strips, and what NFKC folds into those): a memory needs one character besides
# these ("content has no words" otherwise). tests/test_schemathesis.py holds it to canonicalize.
WORDLESS_CLASS = (
    r"\x09-\x0d\x1c-\x22\x27\x2c\x2e\x3a-\x3b\x3f\x60\x85\xa0\u037e\u1680\u1fef\u2000-\u200a"
    r"\u2018-\u2019\u201c-\u201d\u2024-\u2026\u2028-\u2029\u202f\u203c\u2047-\u2049\u205f\u3000"
    r"\ufe10\ufe13-\ufe16\ufe19\ufe30\ufe50\ufe52\ufe54-\ufe57\uff01-\uff02\uff07\uff0c\uff0e"
    r"\uff1a-\uff1b\uff1f\uff40")
MEMORY_CONTENT_PATTERN = rf"^[^\x00]*[^\x00{WORDLESS_CLASS}][^\x00]*$"
MemoryContent = Annotated[str, Field(
    json_schema_extra={"minLength": 1, "pattern": MEMORY_CONTENT_PATTERN})]


def _content_ok(value: str) -> str:
    storable(value)
    if not value.strip():
        raise ValueError("content must not be empty")
    if len(value.encode()) > MAX_CONTENT_BYTES:
        raise ValueError(f"content is over {MAX_CONTENT_BYTES} bytes")
    return value


