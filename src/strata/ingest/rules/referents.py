"""What "it", "that", "he" and "she" stand for, so what is stored stands alone.

"ceremonial vs culinary matcha, which is worth it? it's pretty much all I drink now": the
"it" is the matcha. A statement that opens with a pronoun takes its referent from what the
user said just before (earlier in the message, or their previous message): for "it"/"that"/
"this", the last named thing (a term the lexicon knows, or something the user called theirs:
"my phone"); for "he"/"she", the last person named (a capitalised name, or a relation: "my
sister"). With no referent in sight, ``resolve`` says so (None) and the extractor keeps the
statement as said: in a long conversation the referent is often in the other speaker's turn.
A newborn announced by name and weight right after a birth ("Kim's little one showed up!
Theo, 7lb 2oz") takes the parent the same way (``newborn``).
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


# A relation word said as a name: "Dad's birthday party", "grandma's room".
_KIN_NAME = re.compile(r"\b(?<!\bmy\s)(?<!\bour\s)(?<!\bthe\s)(?<!\bhis\s)(?<!\bher\s)"
                       r"(?:dad|mom|mum|grandpa|grandma|granny|nana|gramps|papa|mama)\b", re.I)
# A capitalised word where a place goes: "in Reno", "near Boise" (but "at Lou's place"); after
# "to", a two-word name is a place or an organisation ("moved her to Hillside Academy").
_PLACE_BEFORE = re.compile(r"\b(?:in|at|near|into|from|outside|around|across|throughout)\s+$",
                           re.I)
_TO_BEFORE = re.compile(r"\bto\s+$", re.I)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


# Someone named as an owner or a subject, wherever in a sentence (a sentence's first word
# included): "Kim's little one", "OMG Kim's", "Kim had the baby".
_OWNER = re.compile(r"(?-i:\b[A-Z][a-z]+)(?='s\b|\s+(?:is|was|has|had|gave|got)\b)")
_NOT_OWNERS = _NOT_NAMES | frozenset(
    "He She There Here What Who Where How When Why Let Sure Honestly Also Just So Well Anyway "
    "Yeah Everything Nothing Something Everyone Someone Today Tomorrow Yesterday".split())


def _people(sentence: str) -> list[tuple[int, str]]:
    """Who ``sentence`` names, where: a capitalised name not in a place's position, a
    relation said as a name, or one the user calls theirs ("my sister")."""
    found: list[tuple[int, str]] = []
    for m in _NAME.finditer(sentence):
        place = (_PLACE_BEFORE.search(sentence[:m.start()])
                 or " " in m.group() and _TO_BEFORE.search(sentence[:m.start()])) and not (
            sentence.startswith("'s", m.end()))
        if m.group().split()[0] not in _NOT_NAMES and not place and not _addressed(sentence, m):
            found.append((m.start(), m.group()))
    for m in _OWNER.finditer(sentence):
        if m.group() not in _NOT_OWNERS and all(start != m.start() for start, _ in found):
            found.append((m.start(), m.group()))
    for m in _KIN_NAME.finditer(sentence):
        found.append((m.start(), m.group()))
    for m in _THINGS.finditer(sentence):
        if m["noun"].casefold() in RELATIONS:
            found.append((m.start(), f"the user's {m['noun']}"))
    return sorted(found)


def _last_person(text: str) -> str | None:
    """The person "he" or "she" stands for: of the last sentence that names anyone, the one
    named first, as the subject is named first and a pronoun most often continues it
    ("grandma's room at Lou's place is ready. she's thrilled": grandma)."""
    for sentence in reversed(_SENTENCE_END.split(text)):
        found = _people(sentence)
        if found:
            return found[0][1]
    return None


def opens_with_pronoun(text: str) -> bool:
    """Whether ``text`` opens with a pronoun that ``resolve`` would replace."""
    return _OPENING.match(text) is not None


def _last_named(before: str) -> str | None:
    """The person named last in ``before``, in the user's own words ("the user's sister" →
    "my sister", "Dana" → "Dana"); None when nobody was named."""
    who = _last_person(before)
    if who is None:
        return None
    return "my " + who.removeprefix("the user's ") if who.startswith("the user's ") else who


_SUBJECT = re.compile(r"^(?P<pronoun>he|she)(?P<be>'s)?\s+(?=[a-z0-9])", re.I)


def person_subject(clause: str, before: str) -> str | None:
    """A clause that opens with "he" or "she", with the person it stands for in its place, in
    the user's words ("she moved to Denver" → "my sister moved to Denver", "Dana moved to
    Denver"); None when it opens otherwise or nobody was named."""
    m = _SUBJECT.match(clause)
    who = _last_named(before) if m is not None else None
    if who is None:
        return None
    rest = clause[m.end():]
    if m["be"]:
        rest = ("has " if re.match(r"been\b", rest) else "is ") + rest
    return f"{who} {rest}"


# A newborn announced as births are, by name and weight: "Theo, 7lb 2oz", "Lily (3.1 kg)".
_NEWBORN = re.compile(r"^(?P<name>(?-i:[A-Z][a-z]+))\s*[,:(-]\s*\d+(?:\.\d+)?\s*"
                      r"(?:lbs?|pounds?|kg|kilos?)\b", re.I)
_BIRTH = re.compile(r"\b(?:baby|babies|born|birth|newborn|delivered|labou?r|arrived|showed\s+up|"
                    r"little\s+(?:guy|girl|boy|one|man|lady))\b", re.I)


def newborn(clause: str, before: str) -> str | None:
    """A baby's name told the way a birth is announced, right after the birth, as the baby of
    the person the user just named ("Kim's little one showed up! Theo, 7lb 2oz" → "Kim's
    baby is named Theo"); None for any other clause, or with no birth or nobody named
    before."""
    m = _NEWBORN.match(clause)
    last = _SENTENCE_END.split(before)[-1]
    who = _last_named(before) if m is not None and _BIRTH.search(last) else None
    if who is None or m["name"] == who:
        return None
    return f"{who}'s baby is named {m['name']}"


# "report to him", "work under her" (not "her own", "her new ...": a possessive)
_OBJECT = re.compile(r"\b(?P<prep>to|with|for|under)\s+(?P<pronoun>him|her)\b"
                     r"(?!\s+(?:own|new|old)\b)", re.I)


def person_object(clause: str, before: str) -> str | None:
    """A clause whose "him" or "her" follows a preposition, with the person it stands for
    in its place ("I report to him now" → "I report to Luis now", after "... with Luis
    today."); None when there is none or nobody was named."""
    m = _OBJECT.search(clause)
    who = _last_named(before) if m is not None else None
    if who is None:
        return None
    return f"{clause[:m.start('pronoun')]}{who}{clause[m.end('pronoun'):]}"


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


# "we adopted a kitten!!! her name's Miso": the name of someone just introduced ("a kitten",
# "a new puppy", "a baby girl"), said in a clause of its own.
_NAME_GIVEN = re.compile(r"^(?:and\s+)?(?:his|her|its|their)\s+name(?:'s|\s+is)\s+"
                         r"(?P<name>(?-i:[A-Z][\w'-]*)(?:\s+(?-i:[A-Z][\w'-]*))?)", re.I)
_ANIMATE = RELATIONS | frozenset("""
baby girl boy rabbit bunny hamster parrot bird horse pony turtle tortoise lizard snake
ferret goat chicken hen rescue pup
""".split())
_INTRODUCED = re.compile(r"\b(?:a|an)\s+(?P<np>[\w-]+(?:\s+[\w-]+){0,2})", re.I)


def name_given(clause: str) -> str | None:
    """The name in "her name's Miso" / "his name is Leo", or None."""
    m = _NAME_GIVEN.match(clause.strip())
    return m["name"] if m is not None and m["name"] not in _NOT_NAMES else None


def with_name(content: str, name: str) -> str | None:
    """``content`` with "named <name>" after the last someone it introduces ("The user
    adopted a kitten" → "The user adopted a kitten named Miso"); None when it introduces
    nobody, or already names them."""
    ends = [m.start("np") + w.end() for m in _INTRODUCED.finditer(content)
            for w in re.finditer(r"[\w-]+", m["np"]) if w.group().casefold() in _ANIMATE]
    if not ends or re.search(r"\b(?:named|called)\b", content[ends[-1]:], re.I):
        return None
    return f"{content[:ends[-1]]} named {name}{content[ends[-1]:]}"
