"""What a question asks about: the attribute (and whose) a search query names.

The write path files a fact about someone under a key naming the attribute
(``user.occupation``, ``user.location``, ``person.dana.location``, ``user.pets:biscuit``:
:mod:`strata.write.slots`). A question names the same attribute in other words: "what does
the user do for a living" asks for ``occupation``, "where is Dana based these days" for
Dana's ``location``. A lexical embedder cannot bridge the two ("job" is not in "The user is
a receptionist at a dental clinic"), and a memory sharing the question's incidental words
wins. :func:`asked` reads the question with a small table of general vocabulary
(:data:`ATTRIBUTE_WORDS`) and :func:`answers` tells whether a memory's slot is a value of
what it asks, so :func:`strata.search.ranking.fuse` can raise it (see :mod:`strata.search.ranking`,
"Asked attribute").

Whose attribute: a name in the question ("how old is Leo") or a relation word after a
possessive ("the user's sister", "my boss") names a person, whose key is
``person.<who>.<attribute>``; a question naming nobody asks about the user. A relation
word names the person's key only when no name was given at the time ("Dad moved to Tampa"
→ ``person.father.location``); "my sister Dana" is keyed by the name, which a question
about "the user's sister" cannot know, so it is not raised (nothing is lowered either).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from strata.write.slots import RELATIONS, family_of

# Question words -> the attributes (slot attribute names, as strata.write.slots keys them:
# single-valued attributes and multi-valued families) a question holding them asks about.
# General vocabulary of each attribute: its name, its usual verbs, its common synonyms.
ATTRIBUTE_WORDS: tuple[tuple[str, frozenset[str]], ...] = tuple(
    (pattern, frozenset(attrs.split())) for pattern, attrs in (
        (r"jobs?|work|works|working|profession|occupation|career|for\s+a\s+living|role|"
         r"title|position", "occupation employer"),
        (r"company|employer|employed|firm|workplace", "employer"),
        # "lives with" asks who, not where; "for a living" asks for a job
        (r"(?:live|lives|(?<!\ba\s)living)(?!\s+with)|based|reside|resides|located|city|town|"
         r"home|moved|move|neighbou?rhood", "location"),
        (r"manager|boss|supervisor|reports?", "manager"),
        (r"car|cars|drive|drives|driving|vehicle", "car vehicles"),
        (r"laptop|computer", "laptop"),
        (r"phone", "phone"),
        (r"diet|eat|eats|eating|vegetarian|vegan", "diet dietary_restrictions"),
        (r"pets?|dogs?|cats?|puppy|kitten", "pets"),
        (r"partner|married|marry|dating|seeing|spouse|husband|wife|boyfriend|"
         r"girlfriend|relationship|single", "partner spouse relationship_status"),
        (r"age|old", "age"),
        (r"school|college|university|uni|study|studies|studying|major|attend|attends|"
         r"grade", "school major"),
        (r"languages?|speak|speaks|speaking", "languages"),
        (r"allergic|allergy|allergies", "allergies"),
        (r"medications?|medicines?|meds|prescriptions?|pills?", "medications"),
        (r"instruments?|play|plays|playing", "instruments sports"),
        (r"hobby|hobbies", "hobbies"),
        (r"sports?", "sports"),
        (r"children|child|kids?|sons?|daughters?", "children"),
        (r"name|called", "name"),
        (r"birthday|born", "birthday"),
        (r"time\s*zone|timezone", "timezone"),
        (r"therapist", "therapist"),
    ))
_ATTRIBUTES = tuple((re.compile(rf"\b(?:{p})\b", re.I), attrs) for p, attrs in ATTRIBUTE_WORDS)

# Relation words that name a person after a possessive ("the user's sister", "my dad").
RELATION_WORDS = frozenset(RELATIONS) | frozenset(RELATIONS.values()) | frozenset(
    "sister brother mother father son daughter wife husband partner friend cousin aunt uncle "
    "niece nephew roommate flatmate neighbor neighbour coworker colleague grandson "
    "granddaughter fiance boyfriend girlfriend manager therapist doctor".split())
# Relation words that are themselves an attribute of the user: "who is the user's manager"
# asks for ``user.manager``, not about the manager.
ROLE_ATTRIBUTES = {role: frozenset(attrs.split()) for role, attrs in (
    ("manager", "manager"), ("therapist", "therapist"), ("partner", "partner spouse"),
    ("husband", "spouse partner"), ("wife", "spouse partner"), ("boyfriend", "partner"),
    ("girlfriend", "partner"), ("fiance", "partner"), ("son", "children"),
    ("daughter", "children"), ("child", "children"), ("children", "children"))}
_POSSESSED = re.compile(r"\b(?:user's|my|their|his|her|our)\s+(?:best\s+|older\s+|younger\s+|"
                        r"little\s+|big\s+)?([a-z]+)", re.I)
# A capitalised word not at the question's start: a name. Words that open a question or
# name the user are not.
_NAME = re.compile(r"(?<=\s)([A-Z][a-z]+)\b")
_NOT_NAMES = frozenset("I The User What Who Where When Which How Is Does Did Do Are".split())


@dataclass(frozen=True)
class Asked:
    """The attributes a question asks about, and whose: ``who`` empty is the user."""

    attributes: frozenset[str]
    who: frozenset[str]

    def __bool__(self) -> bool:
        return bool(self.attributes)


def asked(query: str) -> Asked:
    """The attributes ``query`` asks about (:data:`ATTRIBUTE_WORDS`) and the people it names."""
    attributes = frozenset(a for pattern, attrs in _ATTRIBUTES if pattern.search(query)
                           for a in attrs)
    if not attributes:
        return Asked(frozenset(), frozenset())
    return Asked(attributes, _people(query))


def _people(query: str) -> frozenset[str]:
    """The people ``query`` names, as a key names them: names, and relation words after a
    possessive in one spelling ("my dad" -> ``father``)."""
    names = {m.casefold() for m in _NAME.findall(query) if m not in _NOT_NAMES}
    relations = {RELATIONS.get(w, w) for w in (m.casefold() for m in _POSSESSED.findall(query))
                 if w in RELATION_WORDS}
    return frozenset(names | relations)


def answers(slot: str | None, question: Asked) -> str | None:
    """The attribute of ``question`` that the memory keyed ``slot`` holds a value of (its
    person the one asked about), or None."""
    if not slot or not question:
        return None
    parts = family_of(slot).split(".")
    if parts[0] == "user" and len(parts) == 2 and _the_users(parts[1], question.who):
        attribute = parts[1]
    elif parts[0] == "person" and len(parts) == 3 and parts[1] in question.who:
        attribute = parts[2]
    else:
        return None
    return attribute if attribute in question.attributes else None


def _the_users(attribute: str, who: frozenset[str]) -> bool:
    """Whether a question about ``who`` asks for the user's ``attribute``: it names nobody,
    or only the role that attribute is ("the user's manager" for ``user.manager``)."""
    return all(attribute in ROLE_ATTRIBUTES.get(w, ()) for w in who)
