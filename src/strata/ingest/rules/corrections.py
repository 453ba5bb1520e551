"""Corrections: of something said earlier in the conversation, or stored from an earlier one.

A short correction of the last slotted statement ("actually it's Porto, not Lisbon"; "no,
Lyon" after the assistant's "You live in Paris, right?") is a new value of its slot
(``of_last_statement``): the write path supersedes.

People fix a slip in passing: "*Venice" after "landing in Vienna", "scratch that, it's 10 mg"
after "20mg", "Shawn with a w" after "Sean", "3 cats" after "3 kids", "X not Y". The value the
correction gives replaces the one it corrects in the candidate that held it, before anything
is stored: the slip is never a memory. Which candidate, and which of its words: the one the
correction names ("not Y"), or else the latest one holding a word of the same shape -- a
number with the same unit, a number before another noun, a name spelled alike.

A correction that finds nothing to correct in the conversation may put right what an
earlier session stored (``restated``): "I gave you the wrong date before -- it's May 21st"
after "my birthday is May 12". Its target is a stored memory with a slot, found by the value
the correction names as wrong, by a word of the same shape (a date, a number with its
unit), or by the frame the message names (the "allergy" of "my allergy panel came back"
names the ``user.allergies`` family). The memory restated with the right value takes the
stored one's place. A bare count putting right a count the user gave in words nothing kept
("3 cats" after a request for "a flat with 3 kids") is what they have (``recounted``). A
correction that finds nothing at all (it corrects the assistant) goes on through the
statement families as it is.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from difflib import SequenceMatcher

from strata.ingest.dates import MONTHS
from strata.ingest.rules.base import Result, is_stop_object
from strata.ingest.rules.text import strip_leads
from strata.write import slots
from strata.write.models import Candidate
from strata.write.values import CATEGORY, lexicon_terms, normalize_value

# The forms a correction takes, on a clause with its lead-ins stripped.
_ASTERISK = re.compile(r"^\*\s*(?P<x>[\w'.&-]+(?:\s+[\w'.&-]+){0,2})\b")
_X_NOT_Y = re.compile(
    r"^(?:(?:it's|its|it\s+is|that's|that\s+is|i\s+meant|make\s+(?:that|it))\s+)?"
    r"(?!(?:i|we|my|our|the|a|an|you|he|she|they|it|that|this)\b)"
    r"(?P<x>[\w'.&-]+(?:\s+[\w'.&-]+){0,1}?)(?:\s+(?:lol|haha|sorry|lmao))?[\s,]+(?:and\s+)?"
    r"not\s+(?P<y>[\w'.&-]+(?:\s+[\w'.&-]+){0,2})$", re.I)
_NOT_Y_X = re.compile(r"^not\s+(?P<y>[\w'.&-]+(?:\s+[\w'.&-]+){0,2}?)[\s,]+(?:but\s+)?"
                      r"(?:it's\s+|it\s+is\s+)?"
                      r"(?!(?:anymore|any\s+more|now|again|either|too|yet|lately|these\s+days|"
                      r"since|for|in|at|on|after|before|because)\b)(?P<x>[\w'.&-]+(?:\s+[\w'.&-]+){0,3})$", re.I)
# The rest of a cleft sentence: "it's pecans [that] I react to", "it's Meta I'm interviewing
# with" -- the value is what comes before it.
_CLEFT = (r"\s+(?:that\s+|who\s+)?(?:i|we)(?:'m|'re|\s+am|\s+are)?\s+[a-z]+"
          r"(?:\s+(?:to|with|for|about|of|at|in|on|from))?")
# After a correction word ("scratch that", "wait", "oops", "actually"): the value alone.
_IT_IS = re.compile(
    r"^(?:(?:it's|its|it\s+is|that's|that\s+is|i\s+meant|make\s+(?:that|it)|should\s+be|"
    r"should\s+have\s+said)\s+)?(?:definitely\s+|definately\s+|really\s+)?"
    r"(?!(?:i|i'm|i've|we|we're|my|our|you|he|she|they|not|no)\b)(?P<x>[\w'.&-]+(?:\s+[\w'.&-]+){0,2}?)"
    r"(?:\s+with\s+an?\s+\w{1,2}\b.*|" + _CLEFT + r")?$", re.I)
# "the rent is 1540, not what I said": the wrong value pointed at, not named; the value is
# what the frame before it gives.
_NOT_WHAT_I_SAID = re.compile(
    r"[\s,]+(?:and\s+)?not\s+what\s+i\s+(?:said|told\s+you|wrote|typed|put|gave\s+you)"
    r"(?:\s+(?:before|earlier|last\s+time|at\s+first))?$", re.I)
_FRAMED = re.compile(r"^(?:(?:the|my|our)\s+[\w'-]+(?:\s+[\w'-]+)?\s+(?:is|was|are|were)\s+)?"
                     r"(?P<x>[\w'.&-]+(?:\s+[\w'.&-]+){0,2})$", re.I)
_COUNT = re.compile(r"\d+\s+[a-z]+", re.I)
# "Shawn with a w", "its Stephan with a ph": a name and the letters that tell it apart.
_SPELLED = re.compile(r"^(?:it's\s+|its\s+|it\s+is\s+)?(?P<x>[\w'-]+)\s+with\s+an?\s+\w{1,2}\b",
                      re.I)
_NUMBER = re.compile(r"(?<![\w.])(?P<n>\d+(?:[.,]\d+)?)\s?(?P<unit>[a-z%]+)?\b", re.I)
_MONTH_DAY = re.compile(r"\b(?P<mon>" + "|".join(sorted(MONTHS, key=len, reverse=True)) +
                        r")\.?\s+(?P<day>\d{1,2})(?:st|nd|rd|th)?\b", re.I)
_DAY = re.compile(r"(?:the\s+)?(?P<day>\d{1,2})(?:st|nd|rd|th)", re.I)
_NAME = re.compile(r"(?<!^)(?<![.!?]\s)\b(?-i:[A-Z][\w'-]+)")
_REMARK = frozenset("sorry lol haha oops ugh autocorrect typo my bad lmao".split())


@dataclass
class Fix:
    index: int  # which candidate it corrects
    content: str
    value: str | None


def _words(text: str) -> list[str]:
    return re.findall(r"[\w'.&-]+", text)


_SLIP_WORDS = re.compile(
    r"^(?:(?:oops|sorry|wait|no|nope|nah|ugh|omg|oh|actually|ah|lol|my\s+bad|typo|auto-?correct|"
    r"scratch\s+that|i\s+meant|correction)[\s,!.:;-]+)+", re.I)


def opening(clause: str) -> str:
    """A clause without the words that announce a fix ("oops, Karla, not Karl" → "Karla,
    not Karl"), which leaves a leading name where it is."""
    return _SLIP_WORDS.sub("", clause.strip()).rstrip(" .!?,;:")


def given_value(text: str, marked: bool) -> tuple[str, str | None] | None:
    """The value a correction gives and the one it names as wrong (or None), when ``text``
    reads as a correction; ``marked`` when a correction word led the clause."""
    unnamed = _NOT_WHAT_I_SAID.search(text)
    if unnamed is not None:
        m = _FRAMED.match(text[:unnamed.start()].strip())
        return None if m is None else (m["x"], None)
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
    if _MONTH_DAY.fullmatch(new) or _DAY.fullmatch(new):
        return _date_span(content, new)
    number = _NUMBER.fullmatch(new)
    if number is not None:
        unit = (number["unit"] or "").casefold()
        for m in reversed(list(_NUMBER.finditer(content))):
            theirs = (m["unit"] or "").casefold()
            if m["n"] == number["n"] and theirs != unit and unit and theirs:
                return m.span()  # "3 kids" → "3 cats": the noun was the slip
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


def _date_span(content: str, new: str) -> tuple[int, int] | None:
    """Where ``content`` gives the date ``new`` puts right: the whole date for a month and a
    day ("May 21st" for "May 12"), the day alone for a day ("the 21st")."""
    whole = _MONTH_DAY.fullmatch(new)
    day = int((whole or _DAY.fullmatch(new))["day"])
    for m in reversed(list(_MONTH_DAY.finditer(content))):
        if int(m["day"]) != day or (whole and whole["mon"][:3].casefold() != m["mon"][:3].casefold()):
            return m.span() if whole else m.span("day")
    return None


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
    new = _cleaned(new)
    for index in range(len(kept) - 1, -1, -1):
        span = _target_span(kept[index].content, new, old)
        if span is None:
            continue
        fixed = _put_right(kept[index], span, new)
        return None if fixed is None else Fix(index, *fixed)
    return None


def _cleaned(new: str) -> str:
    """The value a correction gives without the remarks around it ("Venice sorry" → Venice),
    a shouted name in its usual case ("LILA" → Lila)."""
    new = " ".join(w for w in new.split() if w.casefold() not in _REMARK) or new
    new = re.sub(r"^the\s+(?=\d)", "", new, flags=re.I)  # "the 21st": the day
    if _NUMBER.fullmatch(new) is None and re.fullmatch(r"\d+\s+[a-z]+", new, re.I) is None:
        if new.isupper() and len(new) > 1:
            new = new.capitalize()
    return new


def _put_right(said: Candidate, span: tuple[int, int], new: str) -> tuple[str, str | None] | None:
    """``said``'s content with ``new`` at ``span``, and its value then; None when it already
    says so."""
    start, end = span
    content = said.content
    replaced = content[start:end]
    if replaced.casefold() == new.casefold():
        return None
    shown = new if not replaced[:1].isupper() or new[:1].isupper() else new.capitalize()
    value = said.value
    held = None if value is None else span_of(normalize_value(value), content)
    if held is not None and held[0] <= start and end <= held[1]:
        # The value, or a part of it ("May 12" → "May 21st" by "the 21st"), was the slip.
        value = normalize_value(content[held[0]:start] + shown + content[end:held[1]])
    return content[:start] + shown + content[end:], value


def restated(text: str, marked: bool, message: str, stored: list[Candidate]) -> list[Candidate]:
    """What an earlier session stored, put right by ``text``: the latest memory of
    ``stored`` (slotted, oldest first) the correction applies to, restated with the right
    value and keyed to take its place; nothing when it applies to none. Only a correction
    in form that names the wrong value, or one a correction word announced ("I had it wrong
    --", "actually"), reaches back: a bare "3 cats" corrects only this conversation.
    ``message`` is the whole message, whose words may name the frame ("my allergy ...")."""
    given = given_value(text, marked)
    if given is None or (given[1] is None and not marked) or not _a_value(given[0]):
        return []
    new, old = _cleaned(given[0]), given[1]
    for memory in reversed(stored):
        if not memory.slot or not memory.value:
            continue
        span = _target_span(memory.content, new, old)
        if span is None and old is None and _frames(message, memory.slot):
            span = span_of(memory.value, memory.content)
        fixed = None if span is None else _put_right(memory, span, new)
        if fixed is None or fixed[1] == memory.value:
            continue  # it corrects a word that is not the memory's value: not this one
        return _taking_place(memory, *fixed, memory.content[span[0]:span[1]])
    return []


def recounted(text: str, said: str) -> str | None:
    """What the user has, when a bare count ("3 cats") puts right a count they gave of
    something they have in words nothing kept ("a schedule for a flat with 3 kids", asked
    for, not stated): "I have 3 cats". None otherwise."""
    count = _COUNT.fullmatch(text.strip(" .!"))
    if count is None:
        return None
    n, noun = count.group().split(None, 1)
    had = re.search(rf"\b(?:with|have|has|got|own)\s+{n}\s+(?P<noun>[a-z]+)\b", said, re.I)
    if had is None or had["noun"].casefold() == noun.casefold():
        return None
    return f"I have {count.group()}"


_PREPOSITION = re.compile(r"^(?:on|in|at|to|for|with|about|from|of|by|over|into)\b", re.I)


def _a_value(given: str) -> bool:
    """Whether what follows a correction word is a value ("pecans", "May 21st"), not the
    rest of a sentence ("update on my allergies", "actually that's fine")."""
    return not is_stop_object(given) and _PREPOSITION.match(given) is None


def _taking_place(memory: Candidate, content: str, value: str | None,
                  wrong: str) -> list[Candidate]:
    """The memory put right, keyed to retire the stored one: a single-valued slot's new
    value supersedes by its key; a value of a multi-valued family is a key of its own, so
    the wrong one is retracted too ("allergic to pecans, not walnuts" negates the walnut
    key) and the write path retires only it."""
    right = Candidate(content=content, kind=memory.kind, slot=memory.slot, value=value,
                      confidence=0.85, asserts_change=True)
    if not slots.is_multi(memory.slot):
        return [right]
    retraction = Candidate(content=f"{content}, not {wrong}", kind=memory.kind,
                           slot=memory.slot, value=None, confidence=0.85, asserts_change=True)
    return [right, retraction]


def span_of(value: str, content: str) -> tuple[int, int] | None:
    """Where ``content`` names ``value``, aliases folded ("VS Code" for ``vscode``,
    "walnuts" for ``walnut``)."""
    words = list(re.finditer(r"[\w+#.'-]+", content))
    for size in (3, 2, 1):
        for i in range(len(words) - size + 1):
            start, end = words[i].start(), words[i + size - 1].end()
            if normalize_value(content[start:end]) in (value, f"{value}s", f"{value}es"):
                return start, end  # a keyed value is kept singular: "walnuts" → walnut
    return None


def _frames(message: str, slot: str) -> bool:
    """Whether ``message`` names the attribute ``slot`` keys ("my allergy panel" names
    ``user.allergies``; "birthday" names ``user.birthday``)."""
    attribute = slots.parse(slot)[0].rsplit(".", 1)[-1]
    wanted = [_stem(w) for w in re.split(r"[_\W]+", attribute) if len(w) >= 4]
    return any(w.startswith(stem) for w in re.findall(r"[a-z]+", message.casefold())
               for stem in wanted)


def _stem(word: str) -> str:
    """A word without its plural or adjective ending: "allergies", "allergy" and
    "allergist" all start with "allerg"."""
    return re.sub(r"(?:ies|y|s)$", "", word.casefold())


# The last slotted statement put right by a short correction (``extract.Thread``).
_ELLIPSIS = re.compile(
    r"^(?:(?:it|that)\s+is|it's|that's|i\s+meant|i\s+mean|make\s+(?:that|it))?\s*"
    r"(?!(?:i|i'm|i've|we|we're|my|our|you|he|she|they)\b)(?P<x>[\w'.&-]+(?:\s+[\w'.&-]+){0,2}?)(?:[\s,]+(?:and\s+)?not\s+(?P<y>[\w'.&-]+"
    r"(?:\s+[\w'.&-]+){0,2}))?$", re.I)


def of_last_statement(clause: str, antecedent: Result | None) -> Result | None:
    """A short correction of the last slotted statement: "actually it's Porto, not Lisbon"
    or, after "You live in Paris, right?", "no, Lyon"."""
    if antecedent is None or not antecedent.slot or not antecedent.value:
        return None
    lead = strip_leads(clause)
    m = _ELLIPSIS.match(lead.text)
    if m is None or not (lead.change or m["y"]) or is_stop_object(m["x"]):
        return None
    # A value, not a remark: a name ("Lyon"), a number, or a known term ("Postgres") — and of
    # the kind the slot holds: "actually, Emacs" corrects an editor, never a city.
    terms = {CATEGORY[t.canonical] for t in lexicon_terms(m["x"])}
    family = slots.parse(antecedent.slot)[0]
    wanted = family.split(".preferred_", 1)[1] if ".preferred_" in family else None
    if wanted is not None and wanted not in terms:
        return None
    if wanted is None and (terms or not (m["x"][:1].isupper() or m["x"][:1].isdigit())):
        return None
    if m["y"] is not None and normalize_value(m["y"]) != antecedent.value:
        return None
    old = span_of(antecedent.value, antecedent.content)
    if old is None or normalize_value(m["x"]) == antecedent.value:
        return None
    content = antecedent.content[:old[0]] + m["x"] + antecedent.content[old[1]:]
    return Result(content, antecedent.kind, antecedent.slot, normalize_value(m["x"]),
                  antecedent.confidence, True, valid_from=antecedent.valid_from)


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
