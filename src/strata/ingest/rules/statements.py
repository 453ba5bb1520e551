"""Everything else a speaker says about themselves: the family that runs last, when no
specific family (preferences, identity, health, belongings, ...) recognised the clause.

"I started playing acoustic guitar about five years ago", "Painting helps me explore my
identity", "Working on a prototype for aerial surveillance" (the "I" left out) are kept as
they were said, in the third person, slotless, at a lower confidence than a recognised form.
What the screen refuses (``screen.about_speaker``) is not kept: clauses about the listener,
conditionals, pronoun-only objects, and clauses with no first person at all.
"""

from __future__ import annotations

import re

from strata.ingest.dates import guess_tense
from strata.ingest.rules.base import Found
from strata.ingest.rules.person import third_person
from strata.ingest.rules.screen import NEW_THING, STATE_FOR_SPAN, subject_dropped

MIN_WORDS = 4
# Words that carry no content of their own: pronouns, auxiliaries, articles, fillers.
_LIGHT = frozenset("""
i me my mine myself we us our ours ourselves you your yours he him his she her hers it its they
them their theirs this that these those a an the and or but so to of in on at for with about
from by as is am are was were be been being have has had do does did will would shall should can
could may might must not no never just really so very too also still even all some any much
many more most lot lots thing things stuff something anything everything nothing gonna wanna
gotta going get got make made keep kept go went gone come came take took give gave feel felt
think thought know knew want wanted like love one way time now then there here what which who
how when where why if up out over again always ever sure pretty quite kind sort bit
""".split())
MIN_CONTENT_WORDS = 2
# "We got a puppy", "I got a promotion": something gained names itself in one word.
_GAINED = re.compile(r"\b(?:got|adopted|bought|rescued|won|welcomed|landed)\s+(?:a|an|our|my)\s+"
                     r"(?:new\s+)?(?P<noun>[a-z]{3,})\W*$", re.I)
CONFIDENCE = 0.6


def restore_subject(text: str) -> str:
    """Put back the "I" a speaker left out: "Working on X" -> "I am working on X"."""
    if not subject_dropped(text):
        return text
    first = text.split(maxsplit=1)[0].lower()
    text = text[:1].lower() + text[1:]
    if first in ("based", "living", "located"):
        return f"I am {text}"
    if first == "new" and NEW_THING.match(text):
        return f"I have a {text}"
    if first == "been":
        return f"I have {text}"
    if STATE_FOR_SPAN.match(text):
        return f"I have been {text}"
    if first == "gonna":
        return "I am going to" + text[len("gonna"):]
    if first == "wanna":
        return "I want to" + text[len("wanna"):]
    if first.endswith("ing") or first == "looking":
        return f"I am {text}"
    return f"I {text}"


def statement(body: str) -> Found | None:
    """A plain statement about the speaker, or None when it is too short to stand alone."""
    text = restore_subject(body)
    words = re.findall(r"[a-z']+", text.lower())
    content = sum(w not in _LIGHT for w in words)
    gained = _GAINED.search(text)
    enough = 1 if gained and gained["noun"].lower() not in _LIGHT else MIN_CONTENT_WORDS
    if len(words) < MIN_WORDS or content < enough:
        return None
    kind = "event" if guess_tense(text) == "past" else "fact"
    return Found(third_person(text), kind, confidence=CONFIDENCE)
