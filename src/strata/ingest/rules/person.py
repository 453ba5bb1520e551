"""Third-person rewriting: "I've switched to Postgres" -> "The user has switched to Postgres".
The extractor then puts the speaker's name in place of "the user" when it is known
(``named``)."""

from __future__ import annotations

import re

from strata.ingest.rules.text import ADVERBS, is_past, squash
from strata.write.slots import attribute_key, parse

_MODALS = frozenset("can cannot could will would shall should may might must".split())
_NOT_VERBS = frozenset(
    "and or but nor too also myself alone then so as at in on to for with the a an not no "
    "who that which when if".split()
)

_PRONOUNS = re.compile(
    rf"\b(?:(?P<i>i)(?![./'\-]\w)\b(?P<adv>(?:\s+(?:{ADVERBS}))*)(?:\s+(?P<verb>[a-z]+)\b)?"
    rf"|(?P<we>we)\b(?P<wadv>(?:\s+(?:{ADVERBS}))*)(?:\s+(?P<wverb>[a-z]+)\b)?"
    r"|(?P<my>my|our)\b|(?P<me>me|us)\b|(?P<mine>mine|ours)\b|(?P<myself>myself|ourselves)\b)",
    re.I,
)


def _third_singular(verb: str) -> str:
    low = verb.lower()
    special = {"am": "is", "are": "is", "have": "has", "do": "does", "go": "goes", "be": "is",
               "were": "was"}
    if low in special:
        return special[low]
    if low in _MODALS or low in _NOT_VERBS or is_past(low) or low.endswith("ing"):
        return verb
    if re.search(r"(?:s|sh|ch|x|z|o)$", low):
        return verb + "es"
    if re.search(r"[^aeiou]y$", low):
        return verb[:-1] + "ies"
    return verb + "s"


def _plural(verb: str) -> str:
    return {"am": "are", "was": "were", "is": "are", "has": "have"}.get(verb.lower(), verb)


def third_person(text: str) -> str:
    """``text`` (contractions expanded) about the user in the third person: the first
    reference is "the user"/"the user's", later ones "they"/"their"/"them"."""
    seen = False

    def subject() -> str:
        nonlocal seen
        word = "they" if seen else "the user"
        seen = True
        return word

    def swap(m: re.Match[str]) -> str:
        nonlocal seen
        if m["i"] is not None or m["we"] is not None:
            singular = m["i"] is not None and not seen
            if m["i"] is not None:
                who = subject()
            else:
                who = "they" if seen else "the user and others"
            seen = True
            adv = m["adv"] if m["i"] is not None else m["wadv"]
            verb = m["verb"] if m["i"] is not None else m["wverb"]
            if verb is None:
                return who + (adv or "")
            verb = _third_singular(verb) if singular else _plural(verb)
            return f"{who}{adv or ''} {verb}"
        if m["my"] is not None:
            word = "their" if seen else "the user's"
            seen = True
            return word
        if m["me"] is not None:
            if m["me"] == "US":  # the country
                return m["me"]
            word = "them" if seen else "the user"
            seen = True
            return word
        if m["mine"] is not None:
            return "theirs" if seen else "the user's"
        return "themselves"

    out = _PRONOUNS.sub(swap, text)
    out = squash(out)
    return out[:1].upper() + out[1:]


_THE_USER = re.compile(r"\bthe user\b", re.I)


def named(content: str, name: str | None) -> str:
    """``content`` with the speaker's name for "the user", when the name is known."""
    if not name:
        return content
    return _THE_USER.sub(name, content)


# A value that stands for whoever said the statement ("I'll take the bins": the speaker).
SPEAKER = "<speaker>"


def speaker_value(value: str | None, name: str | None) -> str | None:
    """``value`` with the speaker's name (or ``user``) for ``SPEAKER``: who does a chore is
    a value two housemates can take from each other."""
    if value != SPEAKER:
        return value
    return name.casefold() if name else "user"


def speaker_slot(slot: str | None, name: str | None) -> str | None:
    """``slot`` as the named speaker's own: when two people talk in one conversation, "I
    work at Figma" said by Jon is Jon's employer (``person.jon.employer``), not the one
    user's, so it never supersedes what Priya said about herself."""
    if not slot or not name or not slot.startswith("user."):
        return slot
    family, qualifier, value = parse(slot)
    if family.count(".") != 1:
        return slot
    out = attribute_key(name, family.split(".", 1)[1])
    if qualifier:
        out += f"@{qualifier}"
    if value:
        out += f":{value}"
    return out
