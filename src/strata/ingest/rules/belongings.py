"""What the user has and does: pets and family, the vehicles they drive, things they own,
languages they speak, instruments they play. Multi-valued: each value is its own slot key
(``strata.write.slots``), so a second dog or a second language never retires the first,
while "I no longer speak French" retires only French."""

from __future__ import annotations

import re

from strata.ingest.rules.base import (
    VAGUE, A, I, Found, Handler, clean_object, is_stop_object, rx,
)
from strata.ingest.rules.identity import fact
from strata.ingest.rules.person import third_person
from strata.write import slots
from strata.write.values import normalize_value

_PETS_AND_FAMILY = (
    r"(?:\w+\s+)?(?:dogs?|cats?|pupp(?:y|ies)|kittens?|rabbits?|hamsters?|parrots?|birds?|"
    r"fish|horses?|turtles?|snakes?|guinea\s+pigs?|bunn(?:y|ies)|ferrets?|lizards?|"
    r"kids?|children|child|sons?|daughters?|"
    r"brothers?|sisters?|siblings?|grandchildren|grandkids?|twins)"
)
_A_FEW = r"(?:a|an|one|two|three|four|five|\d+|my|our)"
_CUT = re.compile(r"\s+(?:and|but|which|that|because|since|for|to|with|every|on|at|in)\b|,",
                  re.I)
_ONE = re.compile(r"\s+(?:and|or|&)\s+|,\s*", re.I)


def _each(family: str, confidence: float = 0.85, article: bool = True) -> Handler:
    """A multi-valued fact: one value named ("French", "a Volvo"); several ("French and
    Spanish") keep the statement slotless."""

    def handle(m: re.Match[str], clause: str) -> Found | None:
        raw, _ = clean_object(m["v"])
        if is_stop_object(raw):
            return None
        head = _CUT.split(raw)[0]
        if _ONE.search(raw.split(" to ")[0]) and len(_ONE.split(head)) > 1:
            return Found(third_person(clause), "fact", None, None, confidence)
        if article:
            head = re.sub(r"^(?:a|an|the|my|our|one)\s+", "", head, flags=re.I)
        value = normalize_value(head)
        if not value or len(value.split()) > 4:
            return None
        return Found(third_person(clause), "fact", slots.key(family, value=value), value,
                     confidence)

    return handle


def _car(m: re.Match[str], clause: str) -> Found | None:
    raw, _ = clean_object(m["v"])
    if is_stop_object(raw):
        return None
    head = re.sub(r"^(?:a|an|the|my|our)\s+", "", _CUT.split(raw)[0], flags=re.I)
    if _ONE.search(head):
        return Found(third_person(clause), "fact", None, None, 0.85)
    value = normalize_value(head)
    if not value or len(value.split()) > 4:
        return None
    return Found(third_person(clause), "fact", "user.car", value, 0.85)


_LANGUAGES = frozenset("""
english spanish french german italian portuguese dutch swedish norwegian danish finnish polish
czech slovak hungarian romanian greek turkish russian ukrainian arabic hebrew persian farsi hindi
urdu bengali punjabi tamil telugu mandarin cantonese chinese japanese korean vietnamese thai
indonesian malay tagalog swahili latin catalan basque welsh irish icelandic croatian serbian
bulgarian estonian latvian lithuanian asl
""".split())


def _learning(m: re.Match[str], clause: str) -> Found | str | None:
    raw, _ = clean_object(m["v"])
    if is_stop_object(raw):
        return VAGUE
    head = _CUT.split(raw)[0]
    family = "user.languages" if head.lower() in _LANGUAGES else "user.skills"
    value = normalize_value(head)
    if not value or len(value.split()) > 4:
        return None
    return Found(third_person(clause), "fact", slots.key(family, value=value), value, 0.8)


def _starting_language(m: re.Match[str], clause: str) -> Found | None:
    """"I want to start Korean", "I took up Italian": to start a language is to learn it, and
    the memory says so, which is what a question about what the user is learning asks."""
    language = m["lang"].lower()
    if language not in _LANGUAGES:
        return None
    said = clause[:m.start("lang")] + "learning " + clause[m.start("lang"):]
    return Found(third_person(said), "fact", slots.key("user.languages", value=language),
                 language, 0.75)


_PET = (r"(?:dog|cat|puppy|kitten|rabbit|bunny|hamster|parrot|bird|horse|pony|turtle|tortoise|"
        r"snake|guinea\s+pig|gecko|lizard|ferret|chinchilla|rat|mouse|goldfish)")


def _named_pet(m: re.Match[str], clause: str) -> Found:
    """"my cat Olive needs her litter done": what is said of the pet, and that the speaker
    has it -- the appositive names a pet of theirs, which a question about their pets asks."""
    kind = re.sub(r"\s+", " ", m["kind"].lower())
    name = normalize_value(m["name"])
    has = Found(f"The user has a pet {kind} named {m['name']}", "fact",
                slots.key("user.pets", value=name), name, 0.8)
    return Found(third_person(clause), "fact", confidence=0.7, also=[has])


PATTERNS: list[tuple[re.Pattern[str], Handler]] = [
    # "my dog Pickles needs two walks a day" (not "my dog Pickles is ...": a copula is the
    # pet's attribute, read elsewhere)
    (rx(r"^my\s+(?:(?:old|new|little|senior|rescue|baby)\s+)?(?P<kind>", _PET, r")\s+",
        r"(?P<name>(?-i:[A-Z])[\w-]+)\s+(?!(?:is|was|and|or|who|named|called)\b)\w+.*$"),
     _named_pet),
    # "we got a puppy", "we have two kids": a household's pets and children are the user's.
    (rx(r"^(?:i|we)\s+", A, r"(?:have\s+got|have|got)\s+", _A_FEW, r"\s+(?P<v>",
        _PETS_AND_FAMILY,
        r")(?:[,\s]+(?:(?:named|called)\s+)?.+)?$"), fact(None, 0.8)),
    (rx(I, r"am\s+", A, r"(?:pretty\s+|really\s+|quite\s+|very\s+|super\s+|fairly\s+)?",
        r"(?:good|great|skilled|proficient|experienced|an\s+expert|a\s+pro)\s+(?:at|in|with)\s+",
        r"(?P<v>.+)$"), _learning),
    (rx(I, A, r"(?:(?:want|plan|hope|am\s+going|would\s+like)\s+to\s+|am\s+|have\s+)?",
        r"(?:start|started|starting|begin|began|begun|beginning|take\s+up|took\s+up|",
        r"taking\s+up|taken\s+up)\s+(?P<lang>[a-z]+)\b(?![\w-]*\s+(?:class|food|drama|show))"),
     _starting_language),
    (rx(I, r"(?:am|have\s+been)\s+", A, r"(?:learning|teaching\s+myself|studying|",
        r"picking\s+up)\s+(?!to\b)(?P<v>.+)$"), _learning),
    # The car one drives is one value (a new one replaces it: ``user.car``); what one rides
    # (a bike, a scooter) may be several.
    (rx(I, A, r"drive\s+(?P<v>(?:a|an|the|my)\s+.+)$"), _car),
    (rx(I, A, r"ride\s+(?P<v>(?:a|an|the|my)\s+.+)$"), _each("user.vehicles")),
    (rx(I, A, r"(?:own|have\s+got|have)\s+(?P<v>(?:a|an)\s+(?:\w+\s+){0,3}?",
        r"(?:car|bike|bicycle|motorbike|motorcycle|scooter|truck|van|boat|house|flat|apartment|",
        r"cabin|piano|guitar|camera|drone|tesla|volvo|bmw|audi|toyota|honda|ford)s?)\b.*$"),
     _each("user.possessions")),
    (rx(I, A, r"(?:speak|am\s+fluent\s+in|am\s+learning|can\s+speak)\s+(?P<v>.+)$"),
     _each("user.languages", article=False)),
    (rx(I, A, r"(?:play|can\s+play|am\s+learning\s+to\s+play)\s+(?P<v>(?:the\s+)?",
        r"(?:piano|guitar|violin|cello|drums|bass|flute|saxophone|sax|trumpet|ukulele|harp|",
        r"clarinet|keyboard|trombone|viola|banjo|harmonica|acoustic\s+guitar|electric\s+guitar))",
        r"\b.*$"), _each("user.instruments")),
]
