"""Slots: what a slotted memory is about, in which context, and how many values it holds.

A slot key names one fact a later statement can replace:

=====================================  =============================================
``<family>``                           ``user.location``, ``user.preferred_editor``
``<family>@<qualifier>``               ``user.preferred_language@scripting``
``<family>:<value>``                   ``user.languages:french``
``<family>@<qualifier>:<value>``       ``user.skills@work:kubernetes``
=====================================  =============================================

**Cardinality.** A *single-valued* family holds one value per context: a new value in the
same key supersedes the old one ("I live in Berlin" after "I live in Lisbon"). A
*multi-valued* family (languages, allergies, pets, skills, ...) holds many: each value is a
key of its own (``key`` appends it, singular: "peanuts" → ``:peanut``), so "I speak
Spanish" never retires "I speak French". ``MULTI_VALUED`` lists the multi-valued families
(with the other names a model may use for them); every other family, known
(``SINGLE_VALUED``, any ``*.preferred_<x>`` / ``*.favorite_<x>``) or not, is
single-valued, as before keys had contexts. A slot that carries a value part for a family
not known to be single-valued (``user.friends_at_school:anna``) is multi-valued: the caller
said so.

**Contexts.** A qualifier ("for scripting", "at work", "on weekends", "for the new
platform") is part of the key, normalised by ``qualifier_of`` (lowercase, articles,
possessives and prepositions dropped, plurals singular, words joined by ``_``): values in
different contexts are different facts and coexist. A preference family given without a
qualifier takes the context its content names (``context_in``), so a model that files
"Python for scripting" and "Rust for systems programming" under one
``user.preferred_language`` still stores two facts. An unqualified key and a qualified one
of the same family coexist: "I prefer Python" does not retire "I prefer Rust for systems
programming", nor the reverse — a general preference and a scoped one are both true at
once. Two exceptions, both in the write gate: an unqualified statement that asserts a
change ("I've switched to Go") replaces the family's value in another context when that is
the only one there is; and a value retired from the unqualified key stays retired in every
context ("likes Mongo for backends" after MongoDB gave way to PostgreSQL is blocked).

**Negations** (a slot, no value: "I'm no longer allergic to peanuts") retire only the holder
whose value they name (``values.negates``), among the holders their key ``covers``: the same
key; every value of the family when the key has no value part; every context when it has no
qualifier. An extractor that knows the value should still put it in the key
(``key(family, value=...)`` with the candidate's value None); a negation filed under the
family is stored under the key of the value it retired.

Every entry point puts a slot through ``normal`` (the ``Candidate`` of an extractor, the
write path's ``Staged`` item for direct creates and ingest, import's ``Incoming`` record),
so the key a memory is stored under does not depend on where it came from.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from functools import lru_cache

from strata.write.canonical import canonicalize

# Multi-valued families, each with the other names a model or caller may give it.
MULTI_VALUED: dict[str, tuple[str, ...]] = {
    "user.languages": ("user.spoken_languages", "user.languages_spoken"),
    "user.allergies": ("user.allergy", "user.food_allergies"),
    "user.pets": ("user.pet",),
    "user.skills": ("user.skill",),
    "user.hobbies": ("user.hobby",),
    "user.interests": ("user.interest",),
    "user.sports": ("user.sport",),
    "user.instruments": ("user.instrument", "user.musical_instruments"),
    "user.family": ("user.family_members", "user.relatives"),
    "user.children": ("user.child", "user.kids"),
    "user.siblings": ("user.sibling",),
    "user.friends": ("user.friend",),
    "user.people": ("user.contacts", "user.colleagues"),
    "user.vehicles": ("user.vehicle", "user.cars"),
    "user.possessions": ("user.belongings", "user.devices"),
    "user.dietary_restrictions": ("user.dietary_restriction", "user.food_restrictions"),
    "user.medications": ("user.medication",),
    "user.conditions": ("user.medical_conditions", "user.health_conditions"),
    "user.certifications": ("user.certification",),
    "user.projects": ("user.project",),
    "user.goals": ("user.goal",),
}
# Single-valued families the extractors use, besides every preference family
# (``<namespace>.preferred_<x>``, ``<namespace>.favorite_<x>``: ``user.preferred_<category>``
# for the lexicon's categories in strata.write.values). Any other family not in MULTI_VALUED
# is single-valued too; these are the ones a value part cannot make multi-valued.
SINGLE_VALUED = frozenset({
    "user.name", "user.preferred_name", "user.location", "user.employer", "user.occupation",
    "user.age", "user.diet", "user.birthday", "user.timezone", "user.partner", "user.spouse",
    "user.manager", "user.school", "user.major", "user.phone", "user.car", "user.laptop",
    "user.relationship_status",
})

_FAMILY_OF = {alias: family for family, aliases in MULTI_VALUED.items()
              for alias in (family, *aliases)}

# An attribute of anyone: ``user.<attribute>`` for the user, ``person.<who>.<attribute>`` for
# someone in their life, where ``<who>`` is the person's name ("my sister Dana" → ``dana``)
# or, with no name given, their relation to the user in one spelling ("Dad", "my father" →
# ``father``). Each holds one value at a time, so "Dana moved to Boise" retires "Dana lives
# in Portland" and leaves her job, her age and everyone else's city alone.
ATTRIBUTES = frozenset({
    "location", "employer", "occupation", "school", "major", "age", "relationship_status",
    "partner", "manager", "phone", "car", "laptop", "diet", "name",
})
# Other names a model or caller may give an attribute. "hometown" is not here: where someone
# grew up is not where they live.
ATTRIBUTE_ALIASES = {
    "city": "location", "home_city": "location", "residence": "location", "home": "location",
    "lives_in": "location", "current_city": "location",
    "company": "employer", "workplace": "employer", "works_at": "employer",
    "job_title": "occupation", "title": "occupation", "role": "occupation",
    "profession": "occupation", "job": "occupation", "position": "occupation",
    "boss": "manager", "relationship": "relationship_status", "marital_status":
    "relationship_status", "college": "school", "university": "school",
    "mobile": "phone", "cell_phone": "phone", "smartphone": "phone", "mobile_phone": "phone",
    "vehicle": "car", "computer": "laptop",
}
# Relation words in one spelling, so "Dad", "my dad" and "my father" are one person's key.
RELATIONS = {
    "dad": "father", "daddy": "father", "papa": "father", "pop": "father", "pops": "father",
    "mom": "mother", "mum": "mother", "mommy": "mother", "mummy": "mother", "mama": "mother",
    "ma": "mother",
    "grandpa": "grandfather", "granddad": "grandfather", "grandad": "grandfather",
    "gramps": "grandfather", "grandma": "grandmother", "granny": "grandmother",
    "nana": "grandmother", "gran": "grandmother", "grandmom": "grandmother",
    "hubby": "husband", "fiancee": "fiance", "bf": "boyfriend", "gf": "girlfriend",
    "bro": "brother", "sis": "sister", "boss": "manager", "kiddo": "child", "kid": "child",
    "kids": "children", "folks": "parents",
    "stepdad": "stepfather", "stepmom": "stepmother", "mother_in_law": "mother_in_law",
}
_PERSON = re.compile(r"^person\.(?P<who>[^.]+)\.(?P<attr>.+)$")
_USER = re.compile(r"^user\.(?P<attr>[^.]+)$")

_MAX_PART = 120  # characters of a value in a key
_GRAMMAR = re.compile(r"^(?P<family>[^@:]+)(?:@(?P<qualifier>[^:]*))?(?::(?P<value>.*))?$", re.S)
_WORD = re.compile(r"[^\W_]+[+#]*")
_SPACES = re.compile(r"\s+")
# Dropped from a qualifier: they frame a context without naming it.
_FRAME = frozenset(
    "for at on in during when while with by to of from about as within over under whenever "
    "the a an my our your their his her its user i me we they you am is are be being m re s "
    "usually mostly mainly especially only just".split()
)

# Aliases folded into a slot's value, so "Mongo" and "MongoDB" are one value.
VALUE_ALIASES = {
    "mongo": "mongodb", "postgres": "postgresql", "pg": "postgresql", "psql": "postgresql",
    "js": "javascript", "ts": "typescript", "golang": "go", "k8s": "kubernetes",
    "vs code": "vscode", "visual studio code": "vscode", "nvim": "neovim",
}


def normalise_value(value: str | None) -> str | None:
    """A slot value in its stored form: canonical text, aliases folded."""
    if value is None:
        return None
    v = canonicalize(value)
    return VALUE_ALIASES.get(v, v) or None


@lru_cache(maxsize=16384)
def _singular(word: str) -> str:
    """A plural noun's singular ("weekends" → "weekend"); every other word as it is ("-ing"
    forms stay: "scripting" names an activity, not a script)."""
    if not word.isalpha() or not word.endswith("s") or len(word) < 4:
        return word
    import simplemma  # on first use, as in strata.write.lexical

    lemma = simplemma.lemmatize(word, lang="en", low_memory=True).casefold()
    return lemma if lemma != word and word.startswith(lemma[:-1]) else word


def family_of(slot: str) -> str:
    """The canonical family of a slot key (aliases folded, lowercase)."""
    raw = _GRAMMAR.match(slot.strip())
    name = (raw["family"] if raw else slot).strip().casefold()
    name = _SPACES.sub("_", name).replace("favourite", "favorite")
    name = _FAMILY_OF.get(name, name)
    person = _PERSON.match(name)
    if person is not None:
        who = RELATIONS.get(person["who"], person["who"])
        return f"person.{who}.{ATTRIBUTE_ALIASES.get(person['attr'], person['attr'])}"
    user = _USER.match(name)
    if user is not None and user["attr"] in ATTRIBUTE_ALIASES:
        return f"user.{ATTRIBUTE_ALIASES[user['attr']]}"
    return name


def attribute_key(who: str | None, attribute: str) -> str:
    """The key of ``attribute`` of the user (``who`` None) or of the person ``who`` (a name
    or a relation word, any spelling: folded by ``family_of``)."""
    attribute = ATTRIBUTE_ALIASES.get(attribute, attribute)
    if who is None:
        return f"user.{attribute}"
    part = "_".join(_WORD.findall(who.casefold())) or "someone"
    return family_of(f"person.{part}.{attribute}")


def parse(slot: str) -> tuple[str, str | None, str | None]:
    """``(family, qualifier, value)`` of a slot key; the parts it lacks are None. The family
    is canonical; the qualifier and value are as written in the key."""
    m = _GRAMMAR.match(slot.strip())
    if m is None:
        return family_of(slot), None, None
    return family_of(m["family"]), m["qualifier"] or None, m["value"] or None


def qualifier_of(phrase: str | None) -> str | None:
    """The normal form of a context phrase: "for the new platform" → ``new_platform``, "at
    work" → ``work``, "on weekends" → ``weekend``, "for systems programming" →
    ``system_programming``. Idempotent (a normalised qualifier normalises to itself);
    None when nothing names a context."""
    if not phrase:
        return None
    text = unicodedata.normalize("NFKC", phrase).casefold().replace("\u2019", "'")
    text = re.sub(r"'s\b", "", text)
    words = [_singular(w) for w in _WORD.findall(text) if w not in _FRAME]
    return "_".join(words) or None


def value_form(value: str | None) -> str | None:
    """A multi-valued family's value as stored: normalised, plurals singular ("Tree nuts"
    → ``tree nut``), so "peanuts" and "peanut" are one value."""
    v = normalise_value(value)
    if not v:
        return None
    return " ".join(_singular(w) for w in v.split())


def value_part(value: str | None) -> str | None:
    """A value as it appears in a key: ``value_form`` with ``_`` for spaces; a long one is
    cut and suffixed with a hash of the whole, so a key stays short enough to index."""
    form = value_form(value)
    if not form:
        return None
    part = form.replace(" ", "_")
    if len(part) > _MAX_PART:
        digest = hashlib.sha256(part.encode()).hexdigest()[:16]
        part = f"{part[:_MAX_PART - 17]}~{digest}"
    return part


def _preference(family: str) -> bool:
    return family.rsplit(".", 1)[-1].startswith(("preferred_", "favorite_"))


def single_valued(family: str) -> bool:
    """Whether ``family`` is known to hold one value per context."""
    return (family in SINGLE_VALUED or _preference(family)
            or family.rsplit(".", 1)[-1] in ATTRIBUTES
            and bool(_PERSON.match(family) or _USER.match(family)))


def is_multi(slot_or_family: str) -> bool:
    """Whether the family holds many values at once (or the key says so by carrying one,
    for a family not known to be single-valued)."""
    family, _, value = parse(slot_or_family)
    return family in MULTI_VALUED or (value is not None and not single_valued(family))


def key(family: str, *, value: str | None = None, qualifier: str | None = None) -> str:
    """The slot key of ``family`` in the context ``qualifier`` (any phrase: normalised
    here), with ``value`` appended when the family is multi-valued."""
    name = family_of(family)
    out = name
    q = qualifier_of(qualifier)
    if q:
        out += f"@{q}"
    part = value_part(value) if name in MULTI_VALUED else None
    if part:
        out += f":{part}"
    return out


_CONTEXT_START = re.compile(r"\b(for|at|on|in|when|while|during)\s+", re.I)
_CONTEXT_END = re.compile(
    r"[,;:.!?()\[\]\"]|\s(?:and|but|or|because|since|as|than|over|instead|rather|so|which|"
    r"that|who|if|unless|though|although|with|to|now|anymore|every|for|at|on|in|when|while|"
    r"during)\b", re.I)
_NOT_CONTEXT = frozenset(
    "now years year months month weeks week days day ages ever good sure real example instance "
    "its it this that me myself them us him her all least first last times once moment "
    "the_moment a_while a_bit a_long_time the_time_being the_same_time long while "
    "reason reasons".split())
_TIMES = frozenset(
    "morning afternoon evening night winter summer spring autumn fall weekend weekday "
    "free_time spare_time".split())
_DATES = re.compile(
    r"\d|\b(?:january|february|march|april|may|june|july|august|september|october|november|"
    r"december|monday|tuesday|wednesday|thursday|friday|saturday|sunday|today|tomorrow|"
    r"yesterday|tonight)\b", re.I)
_MAX_CONTEXT_WORDS = 4


def context_in(content: str, value: str | None = None) -> str | None:
    """The context a preference's content names, as a qualifier: "The user prefers Python
    for scripting" → ``scripting``; "At work, the user uses a Mac" → ``work``; "drinks
    coffee in the morning" → ``morning``. Not a context: a reason ("for its speed"), a
    duration or date ("for years", "on Monday", "in May 2026"), the value itself ("at
    Acme"), a name after "on"/"at" ("back on Postgres": the value in another spelling), "in"
    with anything but a time ("in Python"), "when"/"while" without an activity.
    None when the content names none."""
    text = unicodedata.normalize("NFKC", content).replace("\u2019", "'")
    named = set((value_part(value) or "").split("_")) - {""}
    for m in _CONTEXT_START.finditer(text):
        word = m.group(1).casefold()
        rest = text[m.end():]
        end = _CONTEXT_END.search(rest)
        phrase = (rest[:end.start()] if end else rest).strip()
        if not phrase or _DATES.search(phrase):
            continue
        if len(phrase.split()) > _MAX_CONTEXT_WORDS:
            continue
        q = qualifier_of(phrase)
        if not q:
            continue
        words = set(q.split("_")) | set((value_part(phrase) or "").split("_"))
        lead = phrase.split()[0]
        if lead.casefold() in _NOT_CONTEXT or q in _NOT_CONTEXT or (named and named <= words):
            continue
        if word in ("on", "at") and lead[:1].isupper():
            continue  # a name: "on Mac", "back on Postgres", "at Acme" say what, not when
        if word == "in" and not (words & _TIMES or q in _TIMES):
            continue
        if word in ("when", "while") and not any(w.endswith("ing") for w in words):
            continue
        return q
    return None


def normal(slot: str | None, value: str | None,
           content: str | None = None) -> tuple[str | None, str | None]:
    """``(slot, value)`` as the write path stores them, from what an entry point was given.

    The family and qualifier are normalised. A preference family (``*.preferred_*``,
    ``*.favorite_*``) given without a qualifier takes the context its ``content`` names
    (``context_in``): a model that files "Python for scripting" and "Rust for systems
    programming" under one ``user.preferred_language`` still gets two facts. For a
    multi-valued family the value is part of the key: given a value, the key is made from
    it (and the value takes the key's form: "Peanuts" → slot ``user.allergies:peanut``,
    value ``peanut``); given none (a negation), the key is kept as given, with or without a
    value part. For a single-valued family a value part is dropped (it becomes the value
    when none was given): one value per context. Idempotent.
    """
    if not slot or not slot.strip():
        return None, value
    family, qualifier, part = parse(slot)
    multi = is_multi(slot)
    q = qualifier_of(qualifier)
    if q is None and content and not multi and _preference(family):
        q = context_in(content, value if value is not None else part)
    base = f"{family}@{q}" if q else family
    if not multi:
        if value is None and part is not None:
            value = part.replace("_", " ")
        return base, value
    if value is not None:
        part = value_part(value)
        return (f"{base}:{part}", value_form(value)) if part else (base, None)
    part = value_part(part.replace("_", " ")) if part else None
    return (f"{base}:{part}" if part else base), None


def context(slot: str) -> str:
    """The key without its value part: family and qualifier."""
    family, qualifier, _ = parse(slot)
    return f"{family}@{qualifier}" if qualifier else family


def general(slot: str) -> str | None:
    """The key without its qualifier (``user.preferred_database@backend`` →
    ``user.preferred_database``); None for a key that has none."""
    family, qualifier, value = parse(slot)
    if qualifier is None:
        return None
    return f"{family}:{value}" if value is not None else family


def covers(negation: str, holder: str) -> bool:
    """Whether a negation filed under ``negation`` (a statement with no value) is about the
    memory holding ``holder``: the same key; a key naming no value covers every value of its
    family in its context ("I'm no longer allergic to peanuts" under ``user.allergies``); a
    key with no qualifier covers its family in every context ("I no longer drink coffee"
    covers ``user.preferred_drink@morning``). Which holder it retires is then decided by
    the value its content names (``values.negates``)."""
    nf, nq, nv = parse(negation)
    hf, hq, hv = parse(holder)
    if nf != hf:
        return False
    if nq is not None and nq != hq:
        return False
    return nv is None or nv == hv


def decides(slot: str | None, value: str | None, holder: str | None) -> bool:
    """Whether the slot rules decide between a statement of (``slot``, ``value``) and an
    active memory holding ``holder`` (the same key; for a negation, a key it covers)."""
    if not slot or not holder:
        return False
    if holder == slot:
        return True
    return value is None and covers(slot, holder)


def distinct_facts(a: str | None, b: str | None) -> bool:
    """Whether two slotted statements of one family are, by their keys, different facts:
    another context, or another value of a multi-valued family. Such a pair coexists: no
    judge may make one supersede, contradict or duplicate the other."""
    if not a or not b or a == b:
        return False
    return parse(a)[0] == parse(b)[0]
