"""Health: allergies and intolerances. Multi-valued: each allergen is its own slot key
(``strata.write.slots``), so "I'm allergic to peanuts" and "I have a peanut allergy" are one
fact, a new allergy never retires another, and "I'm no longer allergic to shellfish" retires
only shellfish."""

from __future__ import annotations

import re

from strata.ingest.rules.base import VAGUE, A, I, Found, Handler, clean_object, is_stop_object, rx
from strata.ingest.rules.person import third_person
from strata.write import slots

_CUT = re.compile(r"\s+(?:and|but|which|that|because|since|so|too|as\s+well)\b|,", re.I)


def _allergy(confidence: float, change: bool = False) -> Handler:
    def handle(m: re.Match[str], clause: str) -> Found | str | None:
        raw, _ = clean_object(m["v"])
        if is_stop_object(raw):
            return VAGUE
        allergen = _CUT.split(raw)[0]
        if re.search(r"\s(?:and|or)\s|,", raw):
            # Several at once ("peanuts and shellfish"): the statement, slotless.
            return Found(third_person(clause), "fact", None, None, confidence, change=change)
        key = slots.key("user.allergies", value=allergen)
        value = slots.parse(key)[2]
        return Found(third_person(clause), "fact", key, value, confidence, change=change)

    return handle


def _no_longer_allergic(m: re.Match[str], clause: str) -> Found | None:
    raw, _ = clean_object(m["v"])
    key = slots.key("user.allergies", value=_CUT.split(raw)[0])
    return Found(third_person(clause), "fact", key, None, 0.85, change=True)


PATTERNS: list[tuple[re.Pattern[str], Handler]] = [
    (rx(I, r"am\s+", A, r"(?:no\s+longer|not)\s+allergic\s+to\s+(?P<v>.+?)",
        r"(?:\s+any\s?more)?$"), _no_longer_allergic),
    (rx(I, r"am\s+", A, r"(?:severely\s+|mildly\s+|deathly\s+)?allergic\s+to\s+(?P<v>.+)$"),
     _allergy(0.85)),
    (rx(I, A, r"have\s+(?:a|an)\s+(?:severe\s+|mild\s+|bad\s+)?(?P<v>.+?)\s+allergy$"),
     _allergy(0.85)),
    (rx(I, r"am\s+", A, r"(?P<v>lactose|gluten)[- ]intolerant$"), _allergy(0.85)),
]
