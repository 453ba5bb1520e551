"""Decisions and choices, the user's or their team's: "we decided to use Kubernetes for the
new platform", "we went with MySQL", "I chose the blue one", and their reversal ("we're
switching the project back to Postgres"). A known term (``LEXICON``) gives a single-valued
slot ``team.<category>``, keyed by the "for ..." context when there is one, so a later
choice in the same context supersedes the earlier one and other contexts keep theirs.

Who in a household does which chore ("I'll take the bins on Tuesdays", "I'm doing the dishes
now", "I took over the bathroom") is a choice of the same kind: keyed by the chore
(``household.chore@<chore>``) and valued by who said it, so a swap between housemates
supersedes the earlier share."""

from __future__ import annotations

import re

from strata.ingest.rules.base import (
    HAVE, A, Found, Handler, clean_object, is_stop_object, preference_slot, rx,
)
from strata.ingest.rules.person import SPEAKER, third_person
from strata.write import slots
from strata.write.values import normalize_value

_WE = r"^(?:i|we|the\s+team|our\s+team)\s+"
_FOR = re.compile(r"\s+(?:for|on|in)\s+(?P<q>(?:the|our|my|this|a)\s+.+|\w+(?:\s+\w+)?)$", re.I)


def _decision(change: bool) -> Handler:
    def handle(m: re.Match[str], clause: str) -> Found | None:
        obj, tail_change = clean_object(m["obj"])
        if is_stop_object(obj):
            return None
        qualifier = None
        q = _FOR.search(obj)
        if q is not None:
            qualifier = slots.qualifier_of(q["q"])
            obj = obj[:q.start()]
        slot, value = preference_slot(obj)
        if slot is not None:
            slot = slots.key("team." + slot.removeprefix("user.preferred_"), qualifier=qualifier)
        elif qualifier is not None and len(obj.split()) <= 3:
            # A tool the lexicon does not know, chosen for something: "Jira for tickets".
            slot, value = slots.key("team.tool", qualifier=qualifier), normalize_value(obj)
        return Found(third_person(clause), "fact", slot, value, 0.8, change=change or tail_change)

    return handle


# Chores a household shares out (general vocabulary, not one household's).
_CHORE = (r"(?:bins?|trash|garbage|rubbish|recycling|compost|dishes|washing[\s-]up|laundry|",
          r"bathrooms?|toilets?|kitchen|vacuuming|hoovering|mopping|dusting|cooking|groceries|",
          r"grocery\s+run|food\s+shop(?:ping)?|lawn|mowing|gardening|litter(?:\s+box)?|",
          r"dog\s+walks?|ironing|floors)")
_CHORES = rx(r"^(?:(?:then|so|and|ok|okay)\s+)?i\s+(?:will\s+|am\s+|now\s+|usually\s+|",
             r"always\s+|just\s+)*(?P<verb>take|do|doing|handle|handling|cover|covering|",
             r"took\s+over|take\s+over|taking\s+over|on|take\s+care\s+of|taking\s+care\s+of)\s+",
             r"(?:the\s+|all\s+the\s+)?(?P<chore>", *_CHORE, r")\b(?P<rest>.*)$")


def _chore(m: re.Match[str], clause: str) -> Found | None:
    """One housemate's chore: the speaker's name (or the user) is its value."""
    change = bool(re.search(r"\bover\b|\bnow\b|\binstead\b", m["verb"] + m["rest"], re.I))
    return Found(third_person(clause), "fact", slots.key("household.chore", qualifier=m["chore"]),
                 SPEAKER, 0.8, change=change)


PATTERNS: list[tuple[re.Pattern[str], Handler]] = [
    (_CHORES, _chore),
    # a replacement: "we dropped Jira and moved to Linear", "I ditched Notion for Obsidian"
    (rx(_WE, HAVE, A, r"(?:dropped|ditched|replaced|abandoned|got\s+rid\s+of)\s+(?P<old>.+?)\s+",
        r"(?:and\s+(?:moved|switched|went|changed|migrated)\s+(?:over\s+)?to|for|with|",
        r"in\s+favou?r\s+of)\s+(?P<obj>.+)$"), _decision(True)),
    (rx(_WE, HAVE, A, r"(?:decided|agreed|chose|opted)\s+(?:to\s+(?:use|go\s+with|adopt|",
        r"move\s+to|switch\s+to)|on|for)\s+(?P<obj>.+)$"), _decision(False)),
    (rx(_WE, HAVE, A, r"(?:went\s+with|are\s+going\s+with|will\s+go\s+with|picked|",
        r"settled\s+on|selected)\s+(?P<obj>.+)$"), _decision(False)),
    (rx(_WE, r"(?:are|have|will)?\s*", A, r"(?:switching|switched|moving|moved|migrating|",
        r"migrated|changing|changed|going\s+back|went\s+back|reverting|reverted)\s+",
        r"(?:(?:the|our)\s+[\w-]+(?:\s+[\w-]+)?\s+)?(?:back\s+)?(?:over\s+)?to\s+(?P<obj>.+)$"),
     _decision(True)),
]
