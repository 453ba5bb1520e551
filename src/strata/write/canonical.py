"""Canonical form of a memory's text: the key for exact duplicates and tombstones.

Independent of ``kind`` (extractors label differently): case, Unicode compatibility forms,
whitespace and trailing punctuation do not make a different value.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata

_SPACE = re.compile(r"\s+")
_EDGE = ".!?;:,\"'`“”‘’ "


def canonicalize(text: str) -> str:
    text = unicodedata.normalize("NFKC", text).casefold()
    return _SPACE.sub(" ", text).strip(_EDGE)


def value_hash(canonical: str) -> bytes:
    return hashlib.sha256(canonical.encode()).digest()


def slot_value_hash(value: str | None) -> bytes | None:
    return value_hash(canonicalize(value)) if value else None
