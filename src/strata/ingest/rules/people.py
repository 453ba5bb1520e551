"""Other people, by name: "Bob's birthday is May 4", "Anna is my sister". Facts about the
people in the user's life are kept as facts about them, never as the user's own ("my wife
prefers tea" is not the user's drink preference: the generic statement family keeps it as
"The user's wife prefers tea", slotless)."""

from __future__ import annotations

import re

from strata.ingest.rules.base import Found, Handler, clean_object, is_stop_object, rx, snake
from strata.ingest.rules.person import third_person
from strata.write.values import normalize_value

# A person's name: capitalised words, whatever the pattern's case-folding.
_NAME = r"(?P<who>(?-i:[A-Z][\w'-]+)(?:\s+(?-i:[A-Z][\w'-]+))?)"
_NOT_NAMES = frozenset(
    "i it this that there here what who he she they we you my our his her their its the a an "
    "today tomorrow yesterday monday tuesday wednesday thursday friday saturday sunday".split()
)


def _their(m: re.Match[str], clause: str) -> Found | None:
    who = m["who"]
    if who.split()[0].lower() in _NOT_NAMES:
        return None
    raw, _ = clean_object(m["y"])
    raw = re.sub(r"^(?:now|currently|officially|still|named|called)\s+", "", raw, flags=re.I)
    if is_stop_object(raw) or len(raw.split()) > 8:
        return None
    value = normalize_value(raw)
    if not value:
        return None
    slot = f"person.{snake(who)}.{snake(m['x'])}"
    return Found(third_person(clause), "fact", slot, value, 0.8)


def _relation(m: re.Match[str], clause: str) -> Found | None:
    if m["who"].split()[0].lower() in _NOT_NAMES:
        return None
    return Found(third_person(clause), "fact", confidence=0.8)


# What happened to someone in the user's life, said by name: "Leo started kindergarten this
# week", "Anna got into Oxford". Past tense only: "Tom thinks ..." is an opinion.
_HAPPENED = (r"(?:just\s+|finally\s+|recently\s+)?(?:started|began|finished|graduated|won|got|"
             r"turned|passed|joined|moved|learned|lost|broke|had|took|went|made|married|"
             r"adopted|retired|quit|left|landed|booked|bought|sold|visited|arrived|became)\b")
_NOT_PEOPLE = _NOT_NAMES | frozenset(
    "january february march april may june july august september october november december "
    "mom dad mum mother father everyone everybody someone somebody nobody people nothing "
    "everything something life work school it's that's".split())


def _happened(m: re.Match[str], clause: str) -> Found | None:
    # "You've got this": a pronoun with its verb attached is no name either.
    if m["who"].split()[0].lower().split("'")[0] in _NOT_PEOPLE:
        return None
    return Found(third_person(clause), "event", confidence=0.7)


PATTERNS: list[tuple[re.Pattern[str], Handler]] = [
    (rx(r"^", _NAME, r"\s+", _HAPPENED, r".+$"), _happened),
    # "Bob's birthday is May 4", "Anna's favourite colour is green"
    (rx(r"^", _NAME, r"'s\s+(?P<x>[a-z][a-z -]{0,30}?)\s+(?:is|are)\s+(?P<y>.+)$"), _their),
    # "Anna is my sister", "Tom is our new CTO"
    (rx(r"^", _NAME, r"\s+is\s+(?:my|our)\s+(?P<rel>[a-z][a-z -]{0,30})$"), _relation),
]
