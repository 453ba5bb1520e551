"""Negations and dislikes. "I no longer use MongoDB", "not MongoDB anymore", "I stopped
drinking coffee": the slot the positive statement would have, no value, a change — it
retires only the holder whose value it names (``strata.write.values.negates``). "I don't like
tea" or "I hate Java" are slotless dislikes: they retire nothing."""

from __future__ import annotations

import re

from strata.ingest.rules.base import (
    VAGUE, ANYMORE, A, I, Found, Handler, clean_object, head, is_stop_object, preference_slot,
    rx,
)
from strata.ingest.rules.identity import is_role
from strata.ingest.rules.person import third_person
from strata.ingest.rules.text import squash
from strata.write import topics

_NEG_VERB = (
    r"use|using|like|love|enjoy|prefer|drink|drinking|eat|eating|live\s+in|living\s+in|"
    r"work\s+(?:at|for)|working\s+(?:at|for)|a|an|into|on"
)


_NO_MORE = re.compile(r"^no\s+more\s+", re.I)
# "no more for me", "no more of that": nothing named, only who or how much.
_NO_OBJECT = re.compile(r"^(?:for|of|than|to|please|thanks)\b", re.I)


def _no_more_said(clause: str) -> str:
    """"no more espressos" as a statement of the speaker's: "I have no more espressos" would
    misread it, "no more X for me" is what it means."""
    if not _NO_MORE.match(clause) or re.search(r"\bfor\s+me$", clause, re.I):
        return clause
    return f"{clause} for me"


def _negation(m: re.Match[str], clause: str) -> Found | None:
    verb = squash(m.groupdict().get("verb") or "use").lower()
    obj, _ = clean_object(m["obj"])
    if is_stop_object(obj) or _NO_OBJECT.match(obj):
        return VAGUE
    slot: str | None
    if verb.startswith("liv"):
        slot = "user.location"
    elif verb.startswith("work"):
        slot = "user.employer"
    elif verb in ("a", "an"):
        slot = "user.occupation" if is_role(obj) else None
    else:
        slot, _ = preference_slot(obj)
        if slot is None and m.groupdict().get("verb") is None and not _NO_MORE.match(clause):
            return None
        if slot is None:
            # Not a preference the lexicon knows ("stopped using Jira", "no more espressos"):
            # the end of what it names (strata.write.topics), which retires what says it is
            # still so.
            return Found(third_person(_no_more_said(clause)), "preference",
                         topics.end_key(head(obj)), None, 0.8, change=True)
    kind = "fact" if slot in ("user.location", "user.employer", "user.occupation") else "preference"
    content = third_person(clause)
    if not re.match(r"^(?:the\s+user|they)\b", content, re.I):
        verb = "drinks" if slot == "user.preferred_drink" else "uses"
        content = f"The user no longer {verb} {obj}"
    return Found(content, kind, slot, None, 0.8, change=True)


def _dislike(m: re.Match[str], clause: str) -> Found | None:
    obj, _ = clean_object(m["obj"])
    if is_stop_object(obj):
        return VAGUE
    return Found(third_person(clause), "preference", None, None, 0.75)


PATTERNS: list[tuple[re.Pattern[str], Handler]] = [
    # negations that assert a change
    (rx(I, r"(?:am\s+)?", A, r"no\s+longer\s+(?P<verb>", _NEG_VERB, r")\s+(?P<obj>.+)$"),
     _negation),
    (rx(I, A, r"do\s+not\s+(?P<verb>use|like|love|enjoy|prefer|drink|eat|live\s+in|",
         r"work\s+(?:at|for))\s+(?P<obj>.+?)", ANYMORE), _negation),
    (rx(I, r"am\s+", A, r"not\s+(?P<verb>using|drinking|living\s+in|working\s+(?:at|for)|",
         r"a|an|into|on)\s+(?P<obj>.+?)", ANYMORE), _negation),
    (rx(I, r"(?:have\s+)?", A, r"(?:stopped|quit|given\s+up|gave\s+up)\s+",
         r"(?:(?P<verb>using|drinking|eating|working\s+(?:at|for))\s+)?(?P<obj>.+)$"), _negation),
    (rx(r"^(?:i\s+am\s+)?not\s+(?:into\s+|using\s+|on\s+|a\s+fan\s+of\s+)?",
         r"(?P<obj>(?:\S+\s+){0,3}?\S+)", ANYMORE), _negation),
    (rx(r"^no\s+more\s+(?P<obj>(?:\S+\s+){0,3}?\S+?)(?:\s+for\s+me)?$"), _negation),
    # plain dislikes: no change, no slot
    (rx(I, A, r"(?:do\s+not|cannot|can\s+not)\s+(?:really\s+)?",
         r"(?:like|stand|bear|enjoy|use|drink|eat)\s+(?P<obj>.+)$"), _dislike),
    (rx(I, A, r"(?:hate|dislike|detest|loathe|avoid)\s+(?P<obj>.+)$"), _dislike),
]
