"""What every statement family shares: the object of a verb (cleaned of fillers, its head,
pronoun objects refused), the lexicon slot it names, numbers, and ``Found`` — what a family's
handler returns for a clause it recognises."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime

from strata.ingest.rules.text import ADVERBS, squash
from strata.write.values import (
    _ALIAS_RE, _NOUN_SPELLING, ALIASES, CATEGORY, lexicon_terms, normalize_value,
)


# Adverbs allowed between "I" and a positive verb: not the negating ones.
POSITIVE_ADVERBS = "|".join(
    a for a in ADVERBS.split("|") if a not in ("no\\s+longer", "not", "never")
)
A = rf"(?:(?:{POSITIVE_ADVERBS})\s+)*"
TRAILING = re.compile(
    r"(?:[\s,]+(?:any\s?more|any\s+longer|these\s+days|nowadays|now|for\s+now|at\s+the\s+moment|"
    r"currently|too|as\s+well|instead|again|actually|though|personally|honestly|a\s+lot|"
    r"very\s+much|so\s+much|the\s+most|mostly|exclusively|really|daily|every\s+day|lately|"
    r"full[- ]time|myself|by\s+far|for\s+good|from\s+now\s+on|rn|atm|tbh|lol|haha|fwiw|"
    r"finally|already|yet|so\s+far))+$", re.I,
)
CHANGE_TAIL = re.compile(r"\b(?:now|instead|for\s+good|these\s+days)\s*$", re.I)
CUT = re.compile(
    r"\s+(?:over|to|rather\s+than|instead\s+of|than|vs\.?|versus|for|because|since|as|when|"
    r"with|in|on|at|but|so|which|that|where|while|if|from|by|via|and\s+not|every|during)\b|[,(]",
    re.I,
)
STOP_OBJECTS = re.compile(
    r"^(?:it|that|this|these|those|them|him|her|you|yours|your\b.*|you\b.*|it\b.*|this\s+one|"
    r"that\s+one|one|both|either|neither|the\s+(?:idea|first|second|third|last|other|former|"
    r"latter|same|one|option|approach|suggestion|answer|plan|version)\b.*|option\b.*|"
    r"what\s+you\b.*|how\s+you\b.*|the\s+way\s+you\b.*|track|a\s+lot|so|too|lots|"
    r"everything|nothing|something|anything|all\s+of\s+(?:it|them)|"
    r"(?:a|an|the)\s+(?:bit|little|lot)\b.*)$", re.I,
)


def clean_object(obj: str) -> tuple[str, bool]:
    """The object without trailing fillers, and whether a filler marked a change ("now")."""
    obj = squash(obj)
    change = bool(CHANGE_TAIL.search(obj))
    return squash(TRAILING.sub("", obj)), change


def head(obj: str) -> str:
    m = CUT.search(obj)
    return squash(obj[:m.start()] if m else obj)


def is_stop_object(obj: str) -> bool:
    return not obj or bool(STOP_OBJECTS.match(squash(obj)))


def preference_slot(obj: str) -> tuple[str | None, str | None]:
    """``(user.preferred_<category>, canonical term)`` when the object's head names exactly
    one lexicon term, else ``(None, None)``."""
    if re.match(r"^to\s", obj, re.I):
        return None, None
    obj_head = head(obj)
    canonicals = {t.canonical for t in lexicon_terms(obj_head)}
    mentioned = {ALIASES[m.group().lower()] for m in _ALIAS_RE.finditer(obj_head)}
    if len(canonicals) != 1 or len(mentioned) > 1:
        # Nothing known, or several things named at once ("Python and Rust"): no single value.
        return None, None
    canonical = canonicals.pop()
    return f"user.preferred_{CATEGORY[canonical]}", canonical


@dataclass
class Found:
    content: str
    kind: str
    slot: str | None = None
    value: str | None = None
    confidence: float = 0.8
    change: bool = False
    # More facts in the same clause, each its own memory: "I'm a data engineer at Acme" is an
    # occupation and an employer, so leaving Acme retires one and not the other.
    also: list["Found"] = field(default_factory=list)


@dataclass
class Result(Found):
    valid_from: datetime | None = None
    valid_to: datetime | None = None  # a state the user says has ended


# A handler returns what it found, None (not this family's after all: the next one is tried)
# or VAGUE (this family's form, but about nothing in particular: "I like it", "my code is
# broken" — the clause is not kept).
VAGUE = "vague"
Handler = Callable[[re.Match[str], str], "Found | str | None"]


def snake(text: str) -> str:
    text = re.sub(r"'s\b", "", text.lower())
    words = [_NOUN_SPELLING.get(w, w) for w in re.findall(r"[a-z0-9]+", text)]
    return "_".join(words)


def value_of(text: str, cut: re.Pattern[str] | None = None) -> str | None:
    text, _ = clean_object(text)
    if cut is not None:
        m = cut.search(text)
        text = text[:m.start()] if m else text
    return normalize_value(text)


_NUMBER_WORDS = {
    w: i for i, w in enumerate(
        "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen "
        "fifteen sixteen seventeen eighteen nineteen".split())
}
_TENS = {
    w: 10 * (i + 2)
    for i, w in enumerate("twenty thirty forty fifty sixty seventy eighty ninety".split())
}
_UNITS = "|".join(list(_NUMBER_WORDS)[1:10])
NUMBER = rf"\d{{1,3}}|(?:{'|'.join(_TENS)})(?:[\s-](?:{_UNITS}))?|{'|'.join(_NUMBER_WORDS)}"


def parse_number(text: str) -> int:
    text = text.lower()
    if text.isdigit():
        return int(text)
    parts = re.split(r"[\s-]+", text)
    total = _TENS.get(parts[0], _NUMBER_WORDS.get(parts[0], 0))
    return total + (_NUMBER_WORDS.get(parts[1], 0) if len(parts) > 1 else 0)



def rx(*parts: str) -> re.Pattern[str]:
    return re.compile("".join(parts), re.I)


# Pattern pieces: a clause opening "I ...", "... anymore" at its end, an optional "have".
I = r"^i\s+"
ANYMORE = r"\s+(?:any\s?more|any\s+longer)$"
HAVE = r"(?:have\s+|had\s+)?"
