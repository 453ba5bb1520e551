"""What "it", "that", "he" and "she" stand for, so what is stored stands alone.

"ceremonial vs culinary matcha, which is worth it? it's pretty much all I drink now": the
"it" is the matcha. A statement that opens with a pronoun takes its referent from what the
user said just before (earlier in the message, or their previous message): for "it"/"that"/
"this", the last named thing (a term the lexicon knows, or something the user called theirs:
"my phone"); for "he"/"she", the last person named (a capitalised name, or a relation: "my
sister"). With no referent in sight, ``resolve`` says so (None) and the extractor keeps the
statement as said: in a long conversation the referent is often in the other speaker's turn.
"""

from __future__ import annotations

import re

from strata.write.values import lexicon_terms

# A statement's opening pronoun, in the third-person content the extractor writes.
_OPENING = re.compile(
    r"^(?P<pronoun>it|that|this|he|she)(?P<verb>'s|\s+is|\s+was|\s+has|\s+had|\s+will|"
    r"\s+(?!(?:is|was|has|had|will)\b)[a-z]+s\b|\s+[a-z]+ed\b)?(?=\s)", re.I)
RELATIONS = frozenset("""
dad mom mum father mother brother sister husband wife son daughter boss manager friend
boyfriend girlfriend partner fiance fiancee grandpa grandma grandfather grandmother uncle aunt
cousin kid baby doctor therapist coworker colleague roommate neighbor neighbour landlord
teacher coach dog cat puppy kitten stepdad stepmom nephew niece
""".split())
_THINGS = re.compile(r"\bmy\s+(?:(?:new|old|little|current|favorite|favourite)\s+)?"
                     r"(?P<noun>[a-z][a-z-]{2,})\b", re.I)
_NAME = re.compile(r"(?<=[a-z,;:]\s)(?-i:[A-Z][a-z]+)(?:\s+(?-i:[A-Z][a-z]+))?")
_NOT_NAMES = frozenset("""
I I'm I've I'd I'll Im Monday Tuesday Wednesday Thursday Friday Saturday Sunday January
February March April May June July August September October November December The A An
My Our It That This Thanks Thank Yes No Ok Okay Lol Omg
""".split())
_NOT_THINGS = RELATIONS | frozenset("""
own way life time day week month year mind head heart brain god goodness bad fault turn
""".split())


def _last_thing(text: str) -> str | None:
    found: list[tuple[int, str]] = []
    for term in lexicon_terms(text):
        found.append((term.start, text[term.start:term.end]))
    for m in _THINGS.finditer(text):
        if m["noun"].casefold() not in _NOT_THINGS:
            found.append((m.start(), f"the user's {m['noun']}"))
    return max(found)[1] if found else None


# A name said to its bearer ("Wow, John!", "Thanks Maria.", "Yeah Dana, ..."): the listener,
# whom "he" or "she" never stands for.
_CALLED_BEFORE = re.compile(
    r"(?:^|[,!.?;]|\b(?:hey|hi|hello|thanks|thank\s+you|yeah|yes|yep|wow|oh|congrats|"
    r"congratulations|sorry|well|ok|okay|aw+|no|nope|sure|totally|definitely))\s*,?\s*$", re.I)
_CALLED_AFTER = re.compile(r"\s*[!,.?;]")


def _addressed(text: str, m: re.Match[str]) -> bool:
    """Whether the name ``m`` found in ``text`` is a vocative: set off by punctuation after
    it, and by punctuation, the start or a greeting before it."""
    return bool(_CALLED_AFTER.match(text, m.end()) and _CALLED_BEFORE.search(text[:m.start()]))


def _last_person(text: str) -> str | None:
    found: list[tuple[int, str]] = []
    for m in _NAME.finditer(text):
        if m.group().split()[0] not in _NOT_NAMES and not _addressed(text, m):
            found.append((m.start(), m.group()))
    for m in _THINGS.finditer(text):
        if m["noun"].casefold() in RELATIONS:
            found.append((m.start(), f"the user's {m['noun']}"))
    return max(found)[1] if found else None


def opens_with_pronoun(text: str) -> bool:
    """Whether ``text`` opens with a pronoun that ``resolve`` would replace."""
    return _OPENING.match(text) is not None


_SUBJECT = re.compile(r"^(?P<pronoun>he|she)(?P<be>'s)?\s+(?=[a-z])", re.I)


def person_subject(clause: str, before: str) -> str | None:
    """A clause that opens with "he" or "she", with the person it stands for in its place, in
    the user's words ("she moved to Denver" → "my sister moved to Denver", "Dana moved to
    Denver"); None when it opens otherwise or nobody was named."""
    m = _SUBJECT.match(clause)
    if m is None:
        return None
    who = _last_person(before)
    if who is None:
        return None
    who = "my " + who.removeprefix("the user's ") if who.startswith("the user's ") else who
    rest = clause[m.end():]
    if m["be"]:
        rest = ("has " if re.match(r"been\b", rest) else "is ") + rest
    return f"{who} {rest}"


def resolve(content: str, before: str) -> str | None:
    """``content`` with its opening pronoun replaced by what it stands for in ``before``
    (what the user said just before); ``content`` itself when it opens with none; None when
    it opens with one and nothing before names what it stands for."""
    m = _OPENING.match(content)
    if m is None:
        return content
    pronoun = m["pronoun"].casefold()
    who = _last_person(before) if pronoun in ("he", "she") else _last_thing(before)
    if who is None:
        return None
    verb = (m["verb"] or "").strip()
    verb = {"'s": "is"}.get(verb, verb)
    if verb == "is" and re.match(r"\s+been\b", content[m.end():]):
        verb = "has"  # "he's been" is "he has been"
    head = who[:1].upper() + who[1:]
    return f"{head}{' ' + verb if verb else ''}{content[m.end():]}"
