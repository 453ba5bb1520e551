"""Preferences and their changes: "I prefer X", "I like/love/use X", "my favourite Y is X",
"I'm a big fan of X", "I've switched to X", "I'm back on X", "now I use X". A known term
(``strata.write.values.LEXICON``) decides the slot ``user.preferred_<category>``, whichever
verb introduced it; "I moved to X" is a preference change for a term and a move for a place."""

from __future__ import annotations

import re

from strata.ingest.rules.base import (
    VAGUE, HAVE, A, I, Found, Handler, clean_object, head, is_stop_object, preference_slot, rx, snake,
    value_of,
)
from strata.ingest.rules.identity import PLACE_CUT
from strata.ingest.rules.person import third_person
from strata.ingest.rules.text import squash
from strata.write import slots
from strata.write.values import CATEGORY_NOUNS, normalize_value

_FAVOURITE = r"my\s+(?:all[- ]time\s+|absolute\s+)?(?:favou?rite|fave?)"


def _preference(confidence: float, change: bool = False, need_term: bool = False) -> Handler:
    def handle(m: re.Match[str], clause: str) -> Found | None:
        obj, tail_change = clean_object(m["obj"])
        if is_stop_object(obj) or is_stop_object(head(obj)):
            return VAGUE
        slot, value = preference_slot(obj)
        if slot is None and (need_term or len(obj.split()) > 12):
            return None
        return Found(third_person(clause), "preference", slot, value, confidence,
                      change=change or tail_change)

    return handle


def _moved(m: re.Match[str], clause: str) -> Found | None:
    obj, _ = clean_object(m["obj"])
    if is_stop_object(obj):
        return VAGUE
    slot, value = preference_slot(obj)
    if slot is not None:
        return Found(third_person(clause), "preference", slot, value, 0.85, change=True)
    if m["verb"].lower() in ("moved", "relocated"):
        place = value_of(obj, PLACE_CUT)
        if place and not re.match(r"^(?:a|an)\s", obj, re.I):
            return Found(third_person(clause), "fact", "user.location", place, 0.85, change=True)
        return None
    return Found(third_person(clause), "preference", None, None, 0.75, change=True)


def _favourite(m: re.Match[str], clause: str) -> Found | None:
    obj, _ = clean_object(m["obj"])
    if is_stop_object(obj):
        return VAGUE
    noun = squash((m.groupdict().get("noun") or "").lower())
    slot, value = preference_slot(obj)
    if slot is None and noun in CATEGORY_NOUNS:
        slot, value = f"user.preferred_{CATEGORY_NOUNS[noun]}", normalize_value(head(obj))
    elif slot is None and noun and not (noun.endswith("s") and not noun.endswith("ss")):
        slot, value = f"user.favorite_{snake(noun)}", normalize_value(obj)
    return Found(third_person(clause), "preference", slot, value if slot else None, 0.85)


# Devices and places a context is named by: "my home machine" is the context "home".
_DEVICE = re.compile(r"\b(?:machine|computer|laptop|pc|desktop|setup|box|rig|phone|device|"
                     r"workstation|server)s?\b", re.I)


def _switched_in(m: re.Match[str], clause: str) -> Found | str | None:
    """"I switched my home machine to Windows": a preference change in the context named."""
    obj, _ = clean_object(m["obj"])
    if is_stop_object(obj):
        return VAGUE
    slot, value = preference_slot(obj)
    context = squash(_DEVICE.sub(" ", m["ctx"]))
    if slot is None or not context:
        return None
    return Found(third_person(clause), "preference", slots.key(slot, qualifier=context), value,
                 0.85, change=True)


CHANGES: list[tuple[re.Pattern[str], Handler]] = [
    (rx(I, HAVE, A, r"(?:switched|changed|moved|migrated)\s+(?:my|our|the)\s+",
        r"(?P<ctx>[\w-]+(?:\s+[\w-]+){0,2}?)\s+(?:over\s+)?(?:from\s+.+?\s+)?to\s+(?P<obj>.+)$"),
     _switched_in),
    # changes of preference
    (rx(I, HAVE, A, r"(?:gone|went|come|came|moved|switched|changed|returned)\s+back\s+",
         r"(?:to|over\s+to)\s+(?P<obj>.+)$"), _preference(0.85, change=True)),
    (rx(I, HAVE, A, r"switched\s+(?:back\s+|over\s+)?(?:from\s+.+?\s+)?to\s+(?P<obj>.+)$"),
     _preference(0.85, change=True)),
    (rx(I, r"am\s+", A, r"back\s+(?:on|to|with|using)\s+(?P<obj>.+)$"),
     _preference(0.8, change=True, need_term=True)),
    (rx(I, HAVE, A, r"(?P<verb>moved|migrated|relocated|changed)\s+(?:over\s+)?",
         r"(?:from\s+.+?\s+)?to\s+(?P<obj>.+)$"), _moved),
    (rx(I, HAVE, A, r"(?:started|begun|began)\s+(?:using|drinking)\s+(?P<obj>.+)$"),
     _preference(0.8, change=True)),
    (rx(I, r"(?:am\s+)?", A, r"now\s+", A,
         r"(?:use|using|prefer|like|love|drink|drinking|on)\s+(?P<obj>.+)$"),
     _preference(0.85, change=True)),
]

PATTERNS: list[tuple[re.Pattern[str], Handler]] = [
    (rx(I, r"am\s+", A, r"(?:a|an)\s+(?:big|huge|great|massive)?\s*fan\s+of\s+(?P<obj>.+)$"),
     _preference(0.75)),
    # preferences
    (rx(r"^", _FAVOURITE, r"\s+(?P<noun>[a-z][a-z -]{0,30}?)\s+",
         r"(?:is|are|has\s+to\s+be|would\s+be)\s+(?P<obj>.+)$"), _favourite),
    (rx(r"^(?P<obj>.+?)\s+(?:is|are)\s+(?:definitely\s+|probably\s+)?", _FAVOURITE,
         r"(?:\s+(?P<noun>[a-z][a-z -]{0,30}))?$"), _favourite),
    (rx(I, A, r"prefer\s+(?P<obj>.+)$"), _preference(0.85)),
    (rx(I, r"(?:am|have\s+been)\s+", A, r"on\s+(?P<obj>.+)$"), _preference(0.75, need_term=True)),
    (rx(I, r"(?:will\s+|am\s+going\s+to\s+|am\s+gonna\s+)?", A, r"(?:stick|stay)\s+with\s+",
        r"(?P<obj>.+)$"), _preference(0.8)),
    (rx(I, r"would\s+", A, r"(?:prefer|rather\s+(?:use|have|drink))\s+(?P<obj>.+)$"),
     _preference(0.7)),
    (rx(I, A, r"(?:like|love|enjoy|adore)\s+(?P<obj>.+)$"), _preference(0.75)),
    (rx(I, A, r"(?:use|drink)\s+(?P<obj>.+)$"), _preference(0.75)),
    (rx(I, r"(?:am|have\s+been)\s+", A, r"(?:using|drinking)\s+(?P<obj>.+)$"),
     _preference(0.75)),
]
