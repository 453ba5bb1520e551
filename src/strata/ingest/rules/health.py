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


def _result(m: re.Match[str], clause: str) -> Found:
    if not re.match(r"^my\b", clause, re.I):
        # "A1C came back ..." keeps its capitals; "Bloodwork came back ..." is lowered.
        first = clause.split(maxsplit=1)[0]
        clause = "my " + (clause[:1].lower() + clause[1:] if first[1:].isalpha() and
                          first[1:].islower() else clause)
    return Found(third_person(clause), "fact", None, None, 0.75)


PATTERNS: list[tuple[re.Pattern[str], Handler]] = [
    # "A1C came back 5.4", "my LDL came back at 210", "bloodwork came back normal": a test's
    # result, the user's when no one else is named
    (rx(r"^(?:my\s+)?(?!(?:the|a|an|it|he|she|they|we|you|this|that|his|her|their)\b)",
        r"[\w/-]+(?:\s+[\w/-]+){0,2}?\s+(?:results?\s+|levels?\s+|numbers?\s+|panel\s+)?",
        r"(?:came|has\s+come)\s+back\s+(?:at\s+|as\s+)?(?:\d[\d.,/]*(?!\s*(?:min|minutes?|",
        r"hours?|hrs?|days?|weeks?|months?|years?|times)\b)|normal|high|low|elevated|positive|",
        r"negative|clear|clean|fine|good|great|perfect)\b.*$"), _result),
    (rx(I, r"am\s+", A, r"(?:no\s+longer|not)\s+allergic\s+to\s+(?P<v>.+?)",
        r"(?:\s+any\s?more)?$"), _no_longer_allergic),
    (rx(I, r"am\s+", A, r"(?:severely\s+|mildly\s+|deathly\s+)?allergic\s+to\s+(?P<v>.+)$"),
     _allergy(0.85)),
    (rx(I, A, r"have\s+(?:a|an)\s+(?:severe\s+|mild\s+|bad\s+)?(?P<v>.+?)\s+allergy$"),
     _allergy(0.85)),
    (rx(I, r"am\s+", A, r"(?P<v>lactose|gluten)[- ]intolerant$"), _allergy(0.85)),
]
