"""A state in the words a question about it uses: "Dana lives in Boise", "The user works at
Stripe". A clause that implies a state without naming it ("Dana's officially a Boise
resident", "just started at Stripe") is stored with the state said first and what was said
after it, so a search for where Dana lives or where the user works finds it."""

from __future__ import annotations

import re
from dataclasses import dataclass

from strata.ingest.rules.person import third_person


# A relation to the user, in any of its spellings: who "my ..." names.
KIN = (
    r"(?:(?:step|half[- ]?)?(?:dad|daddy|father|papa|pops?|mom|mum|mommy|mummy|mother|mama|"
    r"brother|bro|sister|sis|sibling|son|daughter|kid|kiddo|child|baby|twin)|"
    r"grand(?:pa|ma|dad|mom|father|mother|son|daughter|kid|child)|gran|gramps|granny|nana|"
    r"parents|grandparents|folks|kids|children|twins|in-laws|"
    r"wife|husband|hubby|partner|spouse|fianc[eé]e?|boyfriend|girlfriend|bf|gf|"
    r"uncle|aunt|auntie|cousin|niece|nephew|(?:mother|father|brother|sister|son|daughter)"
    r"[- ]in[- ]law|(?:best\s+|close\s+|old\s+|good\s+)?friend|bestie|roommate|flatmate|"
    r"neighbou?r|coworker|co-worker|colleague|manager|boss|supervisor|mentor|"
    r"dog|cat|puppy|pup|kitten|horse)"
)


@dataclass(frozen=True)
class Subject:
    who: str | None  # None: the user; else a name or a relation word in one spelling
    said: str        # as it was said, in the third person: "The user's sister Dana"


def _possessive(said: str) -> str:
    return said + "'" if said.endswith("s") else said + "'s"


_STATE_WORDS = {
    "manager": re.compile(r"\b(?:manager|boss|supervisor)\b", re.I),
    "partner": re.compile(r"\b(?:wife|husband|partner|girlfriend|boyfriend|fianc\w*|spouse)\b",
                          re.I),
    "car": re.compile(r"\b(?:drives?|car)\b", re.I),
    "phone": re.compile(r"\bphone\b", re.I),
    "laptop": re.compile(r"\blaptop\b", re.I),
    "location": re.compile(r"\b(?:lives?|living|resides?|based|home)\b", re.I),
    "employer": re.compile(r"\b(?:works?|working|job|employed|employer)\b", re.I),
    "occupation": re.compile(r"\b(?:works?\s+as|working\s+as|job|title|teach(?:es)?|"
                             r"is\s+(?:a|an|the|now)|"
                             r"(?:has|'s)\s+been\s+(?:a|an)|became)\b", re.I),
    "school": re.compile(r"\b(?:go(?:es)?\s+to|attends?|studies|school)\b", re.I),
    "age": re.compile(r"\b(?:years?\s+old|turned|is\s+\w+\s*$)\b", re.I),
    "relationship_status": re.compile(r"\b(?:engaged|married|divorced|separated)\b", re.I),
    "pregnancy": re.compile(r"\b(?:pregnant|expecting|gave\s+birth|had\s+(?:a|the)\s+baby)\b",
                            re.I),
}


_MANY = frozenset({"parents", "grandparents", "children", "twins", "in_laws", "folks"})


def state_of(s: Subject, attribute: str, value: str) -> str:
    """The state in the words a question about it uses: "Dana lives in Boise"."""
    who, whose = s.said, _possessive(s.said)
    many = s.who in _MANY
    live, work, go, be = ("live", "work", "go", "are") if many else ("lives", "works", "goes", "is")
    return {
        "location": f"{who} {live} in {value}",
        "employer": f"{who} {work} at {value}",
        "occupation": f"{who} {be} retired" if value == "retired" else f"{whose} job is {value}",
        "school": f"{who} {go} to {value}",
        "major": f"{whose} major is {value}",
        "age": f"{who} {be} {value} years old",
        "relationship_status": f"{who} {be} {value}",
        "pregnancy": f"{who} {be} pregnant" if value == "pregnant" else f"{who} had the baby",
        "baby": f"{whose} baby is named {value}",
        "manager": f"{whose} manager is {value}",
        "partner": f"{whose} partner is {value}",
        "phone": f"{whose} phone is {_article(value)} {value}",
        "car": f"{whose} car is {_article(value)} {value}",
        "laptop": f"{whose} laptop is {_article(value)} {value}",
    }[attribute]


def _article(value: str) -> str:
    return "an" if value[:1].lower() in "aeiou" else "a"


USER = Subject(None, "The user")


def content_of(s: Subject, attribute: str, shown: str, clause: str, plain: bool) -> str:
    """What was said in the third person; when it does not name the state in a question's
    words, the state first and what was said after it."""
    said = third_person(clause)
    words = _STATE_WORDS.get(attribute)
    if plain and words is not None and words.search(said):
        return said
    if said.startswith("The user"):
        said = "t" + said[1:]
    return f"{state_of(s, attribute, shown)} ({said})"
