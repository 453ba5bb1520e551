"""Things on the calendar and their changes: "my flight to Tokyo is on April 10", "got a
dentist appointment on Friday at 3pm", then "the airline moved my Tokyo flight to April 14",
"had to move the dentist to Monday".

A dated plan is an event with a slot ``schedule.<what>``, keyed by the content words of what
is planned in any order ("flight to Tokyo" and "Tokyo flight" are ``schedule.flight_tokyo``;
"dentist appointment" and "the dentist" are ``schedule.dentist``) and valued by its date, so
a rescheduling supersedes the old date. The new date of a rescheduling is in the future
whatever the tense of "moved".
"""

from __future__ import annotations

import re
from datetime import datetime

from strata.ingest.dates import DateMatch, find_date, render
from strata.ingest.rules.base import Result, rx
from strata.ingest.rules.person import third_person
from strata.ingest.rules.text import remove_date, squash
from strata.write import slots

# Words that say what kind of entry a plan is, not which one.
_GENERIC = frozenset(
    "appointment appt reservation booking session meeting plan date time slot thing".split()
)
# What kind of entry on a calendar a plan is: only these are keyed (a plain "I'm meeting Sam
# next week" stays a slotless event: a second meeting is not a rescheduling of the first).
_ENTRY = (r"(?:flight|trip|appointment|appt|reservation|booking|interview|surgery|exam|test|"
          r"class|lesson|concert|party|wedding|visit|vacation|holiday|checkup|check-up|session|"
          r"deadline|launch|move|dinner|call|meeting|game|match|race|marathon|show|date|"
          r"dentist|doctor|haircut|vet)")
_PLAN = rx(r"^(?:i|we)\s+(?:have\s+|had\s+)?(?:just\s+)?(?:got|have|booked|scheduled|made|",
           r"set\s+up|planned|arranged|reserved)\s+(?:a|an|my|our|the)\s+",
           r"(?P<what>(?:[\w-]+\s+){0,4}?", _ENTRY, r"(?:\s+[\w-]+){0,3}?)",
           r"(?:\s+(?:on|at|for|in|this|next))?$")
_MY_PLAN = rx(r"^(?:my|our)\s+(?P<what>(?:[\w-]+\s+){0,4}?", _ENTRY, r"(?:\s+[\w-]+){0,3}?)",
              r"\s+(?:is|was|will\s+be)$")
_MOVED = rx(r"^(?:(?:i|we|they|he|she|the\s+\w+|\w+)\s+)?(?:have\s+|had\s+to\s+|had\s+|have\s+to\s+|",
            r"just\s+)?(?:moved|rescheduled|pushed|postponed|bumped|delayed|changed|shifted|",
            r"brought\s+forward|move|reschedule|push|postpone)\s+(?:back\s+)?",
            r"(?P<what>(?:my|our|the|his|her|their)\s+.+?)\s+(?:back\s+)?(?:to|until|till)$")


_TIME_OF_DAY = re.compile(
    r"\s*\b(?:at\s+)?(?:\d{1,2}(?::\d{2})?\s*(?:am|pm|a\.m\.|p\.m\.)|noon|midnight|"
    r"(?:in\s+the\s+)?(?:morning|afternoon|evening|night))\b", re.I)


def schedule_key(what: str) -> str | None:
    """``schedule.<content words in order>`` for what is planned, or None when nothing names
    it."""
    words = [w for w in (slots.qualifier_of(what) or "").split("_") if w and w not in _GENERIC]
    if not words:
        return None
    return f"schedule.{'_'.join(sorted(set(words)))}"


def scheduled(text: str, date: DateMatch | None, at: datetime) -> Result | None:
    """A dated plan, or a plan moved to a new date, in ``text`` (contractions expanded)."""
    if date is None:
        return None
    body = squash(remove_date(text, date))
    bare = squash(_TIME_OF_DAY.sub(" ", body))
    moved = _MOVED.match(bare)
    if moved is not None:
        later = find_date(text, at, "future") or date
        key = schedule_key(moved["what"])
        if key is None:
            return None
        moved_to = re.sub(r"\s+(?:back\s+)?(?:to|until|till)$", "", bare)
        return Result(f"{third_person(moved_to)} to {render(later).removeprefix('on ')}", "event", key,
                      later.when.date().isoformat(), 0.8, True, valid_from=later.when)
    plan = _PLAN.match(bare) or _MY_PLAN.match(bare)
    if plan is None:
        return None
    key = schedule_key(plan["what"])
    if key is None:
        return None
    # What is booked or planned lies ahead: "got an appointment on Friday" is next Friday.
    date = find_date(text, at, "future") or date
    body = re.sub(r"\s+(?:on|at|for|in)$", "", squash(remove_date(text, date)))
    return Result(f"{third_person(body)} {render(date)}", "event", key,
                  date.when.date().isoformat(), 0.8, False, valid_from=date.when)
