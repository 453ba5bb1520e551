"""Corrections of something said earlier in the same conversation.

People fix a slip in passing: "*Venice" after "landing in Vienna", "scratch that, it's 10 mg"
after "20mg", "Shawn with a w" after "Sean", "3 cats" after "3 kids", "X not Y". The value the
correction gives replaces the one it corrects in the candidate that held it, before anything
is stored: the slip is never a memory. Which candidate, and which of its words: the one the
correction names ("not Y"), or else the latest one holding a word of the same shape -- a
number with the same unit, a number before another noun, a name spelled alike.

A correction that finds nothing to correct in the conversation (it corrects the assistant,
or something said in an earlier session) is not one here: the clause goes on through the
statement families as it is.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from difflib import SequenceMatcher

from strata.write.models import Candidate
from strata.write.values import normalize_value

# The forms a correction takes, on a clause with its lead-ins stripped.
_ASTERISK = re.compile(r"^\*\s*(?P<x>[\w'.&-]+(?:\s+[\w'.&-]+){0,2})\b")
_X_NOT_Y = re.compile(
    r"^(?:(?:it's|it\s+is|that's|that\s+is|i\s+meant|make\s+(?:that|it))\s+)?"
    r"(?!(?:i|we|my|our|the|a|an|you|he|she|they|it|that|this)\b)"
    r"(?P<x>[\w'.&-]+(?:\s+[\w'.&-]+){0,1}?)(?:\s+(?:lol|haha|sorry|lmao))?[\s,]+(?:and\s+)?"
    r"not\s+(?P<y>[\w'.&-]+(?:\s+[\w'.&-]+){0,2})$", re.I)
_NOT_Y_X = re.compile(r"^not\s+(?P<y>[\w'.&-]+(?:\s+[\w'.&-]+){0,2}?)[\s,]+(?:but\s+)?"
                      r"(?:it's\s+|it\s+is\s+)?"
                      r"(?!(?:anymore|any\s+more|now|again|either|too|yet|lately|these\s+days|"
                      r"since|for|in|at|on|after|before|because)\b)(?P<x>[\w'.&-]+(?:\s+[\w'.&-]+){0,3})$", re.I)
# After a correction word ("scratch that", "wait", "oops", "actually"): the value alone.
_IT_IS = re.compile(
    r"^(?:(?:it's|it\s+is|that's|that\s+is|i\s+meant|make\s+(?:that|it)|should\s+be|"
    r"should\s+have\s+said)\s+)?(?:definitely\s+|definately\s+|really\s+)?"
    r"(?!(?:i|i'm|i've|we|we're|my|our|you|he|she|they|not|no)\b)(?P<x>[\w'.&-]+(?:\s+[\w'.&-]+){0,2}?)(?:\s+with\s+an?\s+\w\b.*)?$", re.I)
_COUNT = re.compile(r"\d+\s+[a-z]+", re.I)
_SPELLED = re.compile(r"^(?:it's\s+|it\s+is\s+)?(?P<x>[\w'-]+)\s+with\s+an?\s+\w\b", re.I)
_NUMBER = re.compile(r"(?<![\w.])(?P<n>\d+(?:[.,]\d+)?)\s?(?P<unit>[a-z%]+)?\b", re.I)
_NAME = re.compile(r"(?<!^)(?<![.!?]\s)\b(?-i:[A-Z][\w'-]+)")
_REMARK = frozenset("sorry lol haha oops ugh autocorrect typo my bad".split())


@dataclass
class Fix:
    index: int  # which candidate it corrects
    content: str
    value: str | None


def _words(text: str) -> list[str]:
    return re.findall(r"[\w'.&-]+", text)


_SLIP_WORDS = re.compile(
    r"^(?:(?:oops|sorry|wait|no|nope|nah|ugh|omg|oh|actually|ah|lol|my\s+bad|typo|"
    r"scratch\s+that|i\s+meant|correction)[\s,!.:;-]+)+", re.I)


def opening(clause: str) -> str:
    """A clause without the words that announce a fix ("oops, Karla, not Karl" → "Karla,
    not Karl"), which leaves a leading name where it is."""
    return _SLIP_WORDS.sub("", clause.strip()).rstrip(" .!?,;:")


def given_value(text: str, marked: bool) -> tuple[str, str | None] | None:
    """The value a correction gives and the one it names as wrong (or None), when ``text``
    reads as a correction; ``marked`` when a correction word led the clause."""
    for pattern in (_ASTERISK, _X_NOT_Y, _NOT_Y_X, _SPELLED):
        m = pattern.match(text)
        if m is not None:
            return m["x"], m.groupdict().get("y")
    count = _COUNT.fullmatch(text.strip(" .!"))
    if count is not None:  # "3 cats" after "3 kids": a count restated about another noun
        return count.group(), None
    if marked:
        m = _IT_IS.match(text)
        if m is not None and len(_words(m["x"])) <= 3:
            return m["x"], None
    return None


def _similar(a: str, b: str) -> float:
    return SequenceMatcher(None, a.casefold(), b.casefold()).ratio()


def _target_span(content: str, new: str, old: str | None) -> tuple[int, int] | None:
    """Where in ``content`` the value ``new`` replaces sits."""
    if old:
        m = re.search(rf"(?<!\w){re.escape(old)}(?!\w)", content, re.I)
        return m.span() if m else None
    number = _NUMBER.fullmatch(new)
    if number is not None:
        unit = (number["unit"] or "").casefold()
        for m in reversed(list(_NUMBER.finditer(content))):
            theirs = (m["unit"] or "").casefold()
            if m["n"] == number["n"] and theirs != unit and unit and theirs:
                return m.span("unit")  # "3 kids" → "3 cats": the noun was the slip
            if m["n"] != number["n"] and theirs == unit:
                return m.span() if unit else m.span("n")
        return None
    two = re.fullmatch(r"(?P<n>\d+)\s+(?P<noun>[a-z]+)", new, re.I)
    if two is not None:
        m = re.search(rf"\b{two['n']}\s+(?P<noun>[a-z]+)\b", content, re.I)
        return m.span("noun") if m and m["noun"].casefold() != two["noun"].casefold() else None
    best, span = 0.0, None
    for m in _NAME.finditer(content):
        score = _similar(m.group(), new)
        if score > best and m.group().casefold() != new.casefold():
            best, span = score, m.span()
    return span if best >= 0.5 else None


def names_a_slip(text: str) -> bool:
    """Whether ``text`` is a correction in form ("*Venice", "X not Y", "Shawn with a w")
    whatever it corrects: when it corrects nothing in this conversation, it corrects the
    assistant or an earlier session, and is no statement of its own."""
    return any(p.match(text) for p in (_ASTERISK, _X_NOT_Y, _NOT_Y_X, _SPELLED))


def fix(text: str, marked: bool, kept: list[Candidate]) -> Fix | None:
    """The correction ``text`` makes to the latest candidate in ``kept`` it applies to, or
    None when it is no correction or corrects nothing said in this conversation."""
    given = given_value(text, marked)
    if given is None:
        return None
    new, old = given
    new = " ".join(w for w in new.split() if w.casefold() not in _REMARK) or new
    if _NUMBER.fullmatch(new) is None and re.fullmatch(r"\d+\s+[a-z]+", new, re.I) is None:
        if new.isupper() and len(new) > 1:
            new = new.capitalize()  # "LILA" shouted: the name is Lila
    for index in range(len(kept) - 1, -1, -1):
        content = kept[index].content
        span = _target_span(content, new, old)
        if span is None:
            continue
        start, end = span
        replaced = content[start:end]
        if replaced.casefold() == new.casefold():
            return None  # nothing to correct: it already says so
        shown = new if not replaced[:1].isupper() or new[:1].isupper() else new.capitalize()
        content = content[:start] + shown + content[end:]
        value = kept[index].value
        if value is not None and normalize_value(replaced) == normalize_value(value):
            value = normalize_value(new)
        return Fix(index, content, value)
    return None


# "Nashville, Nora." / "tree nuts, Kenji": a value, then the name of the one who got it wrong.
_VOCATIVE = re.compile(r"^(?P<x>[\w'.&-]+(?:\s+[\w'.&-]+){0,2}),\s+(?P<name>(?-i:[A-Z][a-z]+))"
                       r"[\s.!]*$")


@dataclass
class AboutMe:
    """What another speaker said of the one now correcting it: the phrase that led to the
    value ("in ", "allergic to "), the value they gave, and the right one."""

    lead: str
    wrong: str
    right: str


def about_me(sentence: str, speaker: str | None, earlier: str) -> AboutMe | None:
    """A speaker correcting what someone else just said about them: after "Eli's in Atlanta",
    Eli's "Nashville, Nora." says Eli is in Nashville. ``earlier`` is what was said before."""
    if not speaker:
        return None
    m = _VOCATIVE.match(sentence.strip())
    if m is None or m["name"].casefold() == speaker.casefold():
        return None
    said = re.compile(
        rf"\b{re.escape(speaker)}(?:'s|\s+is|\s+are|\s+was)\s+(?P<lead>(?:(?:in|at|from|on|"
        r"allergic\s+to|into|with|a|an|the)\s+)*)(?P<v>[^,.;!?]+?)(?=\s*(?:[,.;!?]|\band\b|\bbut\b|$))",
        re.I)
    found = None
    for found in said.finditer(earlier):
        pass
    if found is None or found["v"].casefold() == m["x"].casefold():
        return None
    return AboutMe(found["lead"], found["v"], m["x"])
