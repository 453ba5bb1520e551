"""Topic keys: plans matched by what they are about, and ends of states by what they name.

Two slot namespaces any extractor (rule or model) can use, decided here for the gate and the
judge:

**Plans** ``schedule.<words>``: the words that say what is planned, sorted and joined by
``_`` ("the trip to Lisbon" and "our Lisbon trip" are ``schedule.lisbon_trip``). A plan's
value is its state: a date (``2026-10-04``), a place, ``cancelled`` or ``done``, so every
later word on a plan -- moved, cancelled, done -- is a new value of it and supersedes the
last. Two plan keys name one plan when they share a *subject* word (``tokyo``, ``wedding``,
``gre``; not the entry words that only say what kind of plan it is: ``trip``, ``flight``,
``appointment``), unless they name different owners ("my wedding", "my sister's wedding");
a key made of entry words only ("the move", "the trip") names the one plan of that kind
there is, and none when there are several. So "the Tokyo trip got cancelled" retires "my
flight to Tokyo is on July 10", and a trip to Paris never retires a trip to Lisbon.

**Ends** ``ended:<object>`` with no value: a state that ended ("cancelled my Equinox
membership", "we said goodbye to Pepper", "I don't bowl anymore"). It retires the active
memories of the path whose content names the object (every word of it, plurals folded) and
that state something as still so: not an event (a dated happening is history, not a state),
not a statement that is itself negated or an end. A holder that names more than what ended
(the object is one item of a list: "pays for Netflix, Hulu and Max") is not lost: it is
narrowed to the rest ("pays for Netflix and Max"). One end key per object: an extractor
that reads "axed Hulu and Peacock" proposes two ends.
"""

from __future__ import annotations

import calendar
import re

from strata.write import slots

PLAN = "schedule."
ENDED = "ended"

# What kind of plan a key names, not which one: shared alone they prove nothing.
ENTRY_WORDS = frozenset(
    "flight trip appointment appt reservation booking interview surgery exam test class lesson "
    "concert party visit vacation holiday checkup session deadline launch move dinner call "
    "meeting game match race show date plan time slot thing event festival ticket pass "
    "loop round final proposal application paper assignment report thesis essay grant "
    "submission due".split()
)
# Entry words that name no kind at all ("that's the date now"): the one plan there is.
ANY_PLAN = frozenset("date plan thing time".split())
# Whose plan it is, when not the user's: two keys that name different owners are two plans.
OWNER_WORDS = frozenset(
    "mom mum dad mother father sister brother son daughter wife husband partner boyfriend "
    "girlfriend fiance fiancee friend cousin aunt uncle grandma grandpa grandmother "
    "grandfather niece nephew boss kid kids child baby in_law".split()
)
# Values that close a plan: a later date or place may still follow, but a cancelled plan is
# no longer scheduled.
CLOSED = frozenset({"cancelled", "done"})

_DETERMINERS = re.compile(r"^(?:(?:the|a|an|my|our|his|her|their|your)\s+)+", re.I)


def is_plan(slot: str | None) -> bool:
    return bool(slot) and slots.parse(slot)[0].startswith(PLAN)


def is_end(slot: str | None) -> bool:
    return bool(slot) and slots.parse(slot)[0] == ENDED and slots.parse(slot)[2] is not None


def plan_key(words: list[str]) -> str | None:
    """``schedule.<words>`` for the words that say what is planned (any order, repeats
    dropped); None when there are none."""
    kept = sorted({w for w in words if w})
    return f"{PLAN}{'_'.join(kept)}" if kept else None


def end_key(obj: str) -> str | None:
    """``ended:<object>`` for what ended ("Equinox", "the newsletter"); None when the object
    has no word."""
    obj = _DETERMINERS.sub("", obj.strip())
    part = slots.value_part(obj)
    return f"{ENDED}:{part}" if part else None


def _plan_words(slot: str) -> tuple[set[str], set[str], set[str]]:
    words = set(slots.parse(slot)[0].removeprefix(PLAN).split("_")) - {""}
    owners = words & OWNER_WORDS
    kinds = words & ENTRY_WORDS
    return kinds, words - kinds - owners, owners


def same_plan(a: str, b: str) -> bool:
    """Whether plan keys ``a`` and ``b`` name one plan by what they are about (see the module
    docstring). A key of entry words only matches any key of its kind: the gate keeps such a
    match only when it is the one there is."""
    if a == b:
        return True
    ka, sa, oa = _plan_words(a)
    kb, sb, ob = _plan_words(b)
    if oa != ob:
        return False
    if sa and sb:
        return bool(sa & sb)
    if (ka and not sa and ka <= ANY_PLAN) or (kb and not sb and kb <= ANY_PLAN):
        return True
    return bool(ka & kb)


def vague_plan(slot: str) -> bool:
    """A plan key that names only a kind of plan ("the move", "the trip")."""
    _, subjects, _ = _plan_words(slot)
    return not subjects


def names_less(slot: str, than: str) -> bool:
    """Whether plan key ``slot`` names its plan by fewer of its subject words than ``than``
    (``schedule.wedding`` beside ``schedule.siobhan_wedding``; a key of entry words only
    beside any named one): a statement under it says less of what the plan is."""
    _, subjects, _ = _plan_words(slot)
    _, fuller, _ = _plan_words(than)
    return subjects < fuller


# Words that join the words of a plan's name: "flight to Tokyo", "final round with Acme".
_JOINERS = frozenset("to with for at in of".split())


def plan_name(content: str, slot: str) -> str | None:
    """How a plan's statement names the plan: the first run of its key's words in
    ``content`` that holds a subject word ("NSF proposal" in "NSF proposal due on
    2026-10-03", "flight to Tokyo"); None for a key of entry words only, or a content that
    does not say it."""
    kinds, subjects, owners = _plan_words(slot)
    if not subjects:
        return None
    key = kinds | subjects | owners
    run: list[re.Match[str]] = []
    for m in re.finditer(r"[\w'-]+", content):
        word = m.group().casefold()
        if word in key or (run and word in _JOINERS):
            run.append(m)
            continue
        if any(r.group().casefold() in subjects for r in run):
            break
        run = []
    while run and run[-1].group().casefold() in _JOINERS:
        run.pop()
    if not any(r.group().casefold() in subjects for r in run):
        return None
    name = content[run[0].start():run[-1].end()]
    opens = run[0].start() == 0 and name[1:2].islower()  # "Driving test is ...": its capital
    return name[:1].lower() + name[1:] if opens else name


def naming_plan(content: str, name: str) -> str:
    """A word on a plan that did not name it, with the plan's name put in: "it" becomes
    the plan ("It's over, 328" → "The GRE is over, 328"); a statement with another subject
    says which plan after it ("The user submitted with an hour to spare (the NSF
    proposal)")."""
    m = re.match(r"^(?:it|that)(?:'s|\s+is)?\b", content, re.I)
    if m is None:
        return f"{content} (the {name})"
    verb = " is" if m.group().casefold() in ("it's", "that's", "it is", "that is") else ""
    return f"The {name}{verb}{content[m.end():]}"


def end_words(slot: str) -> list[str]:
    """The words of what an end key names (``ended:equinox`` → ``["equinox"]``)."""
    part = slots.parse(slot)[2] or ""
    return [w for w in part.split("_") if w]


def _word_pattern(word: str) -> str:
    stem = word[:-1] if word.endswith("s") and len(word) > 3 else word
    return rf"(?<![\w'-]){re.escape(stem)}(?:s|es|'s)?(?![\w-])"


def names(content: str, words: list[str]) -> bool:
    """Whether ``content`` names every one of ``words`` (case and plural folded)."""
    text = content.casefold()
    return bool(words) and all(re.search(_word_pattern(w), text) for w in words)


def sql_pattern(words: list[str]) -> str | None:
    """A PostgreSQL regular expression that every content naming ``words`` matches (on its
    longest word; ``names`` checks the rest)."""
    if not words:
        return None
    word = max(words, key=len)
    stem = word[:-1] if word.endswith("s") and len(word) > 3 else word
    return rf"\m{re.escape(stem)}"


def ends_state(kind: str, content: str, slot: str | None, negated: bool) -> bool:
    """Whether a memory naming an ended object states it as still so: not a dated event (a
    happening on a day is history; an undated one -- "signed up for Hulu", "started going
    to Equinox" -- is how a state began), not an end or a plan, not already a negation."""
    dated = kind == "event" and (_RENDERED.search(content) or _ANY_ISO.search(content))
    return not dated and not is_end(slot) and not is_plan(slot) and not negated


_WEEKDAY = r"(?:Mon|Tues|Wednes|Thurs|Fri|Satur|Sun)day"
_RENDERED = re.compile(r"\b(?:on (?:" + _WEEKDAY + r" )?\d{4}-\d{2}-\d{2}|in the week of \d{4}-\d{2}-\d{2}|"
                       r"in (?:January|February|March|April|May|June|July|August|September|"
                       r"October|November|December) \d{4})\b")
_ISO = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_ANY_ISO = re.compile(r"\b\d{4}-\d{2}-\d{2}\b|\bin \d{4}\b")


def redated(content: str, old: str | None, new: str | None, said: str) -> str | None:
    """A plan's ``content`` with its date ``old`` (ISO) replaced by ``new`` as ``said``
    renders it ("on 2026-10-04", "in September 2026"); None when either is not a date or
    the content does not carry the old one."""
    if not (old and new and _ISO.match(old) and _ISO.match(new)) or old == new:
        return None
    m = _RENDERED.search(said)
    wanted = m.group() if m and (new in m.group() or new[:4] in m.group()) else f"on {new}"
    day = re.search(rf"\b{_WEEKDAY} {re.escape(new)}", said)
    if day is not None:  # "moved to Monday": the day it was said by, kept
        wanted = f"on {day.group()}"
    year, month, _ = (int(x) for x in old.split("-"))
    for form in (f"on {old}", f"in the week of {old}",
                 f"in {calendar.month_name[month]} {year}"):
        if form in content:
            return content.replace(form, wanted)
    return None


_SEP = r"(?:\s*,\s*(?:and\s+|&\s+|or\s+)?|\s+(?:and|&|or)\s+)"
_TAIL = r"(?:[\w'&.+-]+(?:\s+[\w'&.+-]+){0,2})(?=\s*(?:$|[,.;:!?)]))"


def narrowed(content: str, words: list[str]) -> str | None:
    """``content`` without the object ``words`` name when the object is one item of a list
    ("Netflix, Hulu and Max" → "Netflix and Max"); None when it is not in a list, or is all
    that is left of one: then the whole statement is about what ended."""
    obj = r"\s+".join(re.escape(w) + ("(?:s|es)?" if i == len(words) - 1 else "")
                      for i, w in enumerate(words))
    # After a separator: ", Hulu" / " and Hulu" (the item before it stays).
    m = re.search(rf"{_SEP}(?:(?:the|a|an|my|our|their)\s+)?(?<![\w-]){obj}(?![\w-])", content,
                  re.I)
    if m is not None and re.search(r"[\w)]\s*$", content[:m.start()]):
        before = content[:m.start()]
        if "," in m.group() or re.search(r",\s*[\w'&.+-]+(?:\s+[\w'&.+-]+){0,2}\s*$", before) \
                or re.match(r"\s*(?:$|[,.;:!?)])", content[m.end():]):
            return _tidy(before + content[m.end():])
    # Before a separator: "Hulu, Netflix" / "Hulu and Netflix" with a short item after it.
    m = re.search(rf"(?:\b(?:the|a|an|my|our|their)\s+)?(?<![\w-]){obj}(?![\w-]){_SEP}"
                  rf"(?={_TAIL}|[\w'&.+-]+\s*,)", content, re.I)
    if m is not None:
        return _tidy(content[:m.start()] + content[m.end():])
    return None


def _tidy(text: str) -> str:
    return re.sub(r"\s+,", ",", re.sub(r"\s{2,}", " ", text)).strip()
