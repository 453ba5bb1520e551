"""Date expressions in English text, resolved against the time the message was written.

Pure functions (``re`` + ``datetime``): no clock is read, so the same message always resolves
to the same instant. ``now`` is the message time; a naive ``now`` is taken as UTC, and results
carry ``now``'s timezone.

What resolves to what (``now`` = Wednesday 2026-05-13 15:00):

- same-day words — ``today``, ``tonight``, ``this morning/afternoon/evening`` — resolve to
  ``now`` itself (granularity ``instant``). Start of day would make a statement predate the
  message it was said in, and the conflict step's age guard would then rank it older than an
  earlier message of the same day.
- ``yesterday``, ``last night``, ``tomorrow``, ``the day before yesterday``, ``the day after
  tomorrow``, ``N days/weeks/months/years ago``, ``in N days/weeks/...``, ``N days from now``
  → midnight of that day (``day``). Months are clamped (Mar 31 minus a month is Feb 28).
- ``last/this/next week`` → Monday of that ISO week (``week``); ``last/this/next weekend``
  → Saturday of that ISO week (``day``); ``over/on/at the weekend`` → the previous Saturday
  for past tense, the coming one otherwise.
- ``last/this/next month`` → the 1st (``month``); ``last/this/next year`` → Jan 1 (``year``).
- Weekdays: ``last Monday`` = the most recent Monday strictly before today; ``next Monday``
  = the first Monday strictly after today (the coming one, not "the one of next week");
  ``on Monday`` / bare ``Monday`` = ``last`` for past tense, ``next`` otherwise; ``this
  Monday`` = the same, but today counts.
- ``May 2023`` → 2023-05-01 (``month``); ``May 5(, 2023)``, ``5 May (2023)``, ``the 5th of
  May`` and ISO ``2023-05-05`` → that day (``day``). Without a year: past tense takes the
  latest such date on or before today, otherwise the next on or after today. ``in May`` /
  ``last May`` / ``next May`` work the same way by month; the bare month name ``May`` must be
  capitalised (it is also a verb). ``in 2023`` → Jan 1 (``year``).

Tense (``guess_tense``) is a heuristic on the first verb after "I"/"we": ``was``, ``did``,
``had``/``have`` + participle, ``-ed`` and common irregular pasts are past; ``will``,
``going to``, ``am/are ...ing`` are future; anything else is ``None`` (treated as future).
A leading preposition (``on``, ``in``, ``since``, ``by``, ``during``, ``from``) is part of
the match, so removing the match from a sentence leaves no dangling "on".
"""

from __future__ import annotations

import calendar
import re
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from collections.abc import Callable
from typing import Literal

Tense = Literal["past", "future"]
Granularity = Literal["instant", "day", "week", "month", "year"]


@dataclass(frozen=True)
class DateMatch:
    start: int
    end: int
    text: str
    when: datetime
    granularity: Granularity


MONTHS = {
    "january": 1, "february": 2, "march": 3, "april": 4, "may": 5, "june": 6, "july": 7,
    "august": 8, "september": 9, "october": 10, "november": 11, "december": 12,
    "jan": 1, "feb": 2, "mar": 3, "apr": 4, "jun": 6, "jul": 7, "aug": 8, "sep": 9,
    "sept": 9, "oct": 10, "nov": 11, "dec": 12,
}
WEEKDAYS = {
    "monday": 0, "tuesday": 1, "wednesday": 2, "thursday": 3, "friday": 4, "saturday": 5,
    "sunday": 6,
}
_NUMBER_WORDS = {
    "a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
    "seven": 7, "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12,
    "a couple of": 2, "couple of": 2, "a few": 3, "few": 3,
}

_MONTH = r"(?P<mon>" + "|".join(sorted(MONTHS, key=len, reverse=True)) + r")"
_FULL_MONTH = r"(?P<mon>" + "|".join(list(MONTHS)[:12]) + r")"
_WEEKDAY = r"(?P<wd>" + "|".join(WEEKDAYS) + r")"
_NUM = r"(?P<n>\d{1,3}|a couple of|couple of|a few|few|" + "|".join(
    w for w in _NUMBER_WORDS if " " not in w and w != "few") + r")"
_UNIT = r"(?P<u>day|week|month|year)s?"
_ORDINAL = r"(?:st|nd|rd|th)?"
_YEAR = r"(?:,?\s+(?P<y>\d{4})\b)?"
# Prepositions taken into a match: any of them before a calendar date, only the ones that
# keep their meaning before a relative word ("since yesterday", not the "in" of "moved in").
_PREFIX_CALENDAR = re.compile(r"\b(?:on|in|since|by|during|from)\s+(?:the\s+)?$", re.I)
_PREFIX_RELATIVE = re.compile(r"\b(?:since|by|from)\s+$", re.I)

PAST_IRREGULAR = frozenset(
    "was were had did went met saw got came took made bought ate drank flew drove left began "
    "ran spent sold told said thought found gave knew lost paid wrote won sat slept spoke "
    "stood taught understood woke wore became broke brought built caught chose fell felt "
    "fought forgot grew heard held hid kept led lent lit meant rode rang rose sang sank sent "
    "shot swam threw tore quit gone been done seen begun eaten taken given known written "
    "driven flown spoken broken chosen forgotten".split()
)
_SKIP = frozenset(
    "also really still just actually finally recently already then once first never always "
    "usually often not no longer".split()
)


def _aware(now: datetime) -> datetime:
    return now if now.tzinfo is not None else now.replace(tzinfo=UTC)


def _midnight(day: date, now: datetime) -> datetime:
    return datetime.combine(day, time(0), tzinfo=now.tzinfo)


def add_months(day: date, months: int) -> date:
    index = day.year * 12 + (day.month - 1) + months
    year, month = divmod(index, 12)
    month += 1
    return date(year, month, min(day.day, calendar.monthrange(year, month)[1]))


def _number(text: str) -> int:
    text = text.lower()
    return int(text) if text.isdigit() else _NUMBER_WORDS[text]


def _shift(today: date, n: int, unit: str) -> date:
    unit = unit.lower()
    if unit == "day":
        return today + timedelta(days=n)
    if unit == "week":
        return today + timedelta(weeks=n)
    if unit == "month":
        return add_months(today, n)
    return add_months(today, 12 * n)


def _weekday(today: date, target: int, mode: str) -> date:
    """``mode``: ``before`` (strictly), ``after`` (strictly), ``on_or_before``, ``on_or_after``."""
    if mode in ("before", "on_or_before"):
        back = (today.weekday() - target) % 7
        if back == 0 and mode == "before":
            back = 7
        return today - timedelta(days=back)
    ahead = (target - today.weekday()) % 7
    if ahead == 0 and mode == "after":
        ahead = 7
    return today + timedelta(days=ahead)


def _monday(day: date) -> date:
    return day - timedelta(days=day.weekday())


def _month_day(
    today: date, month: int, day: int, year: int | None, tense: Tense | None,
) -> date | None:
    try:
        if year is not None:
            return date(year, month, day)
        this_year = date(today.year, month, day)
    except ValueError:
        # Feb 29 in a common year, or a day the month does not have.
        return None
    if tense == "past":
        return this_year if this_year <= today else this_year.replace(year=today.year - 1)
    return this_year if this_year >= today else this_year.replace(year=today.year + 1)


def _month(today: date, month: int, mod: str, tense: Tense | None) -> date:
    mod = mod.lower()
    if mod == "last":
        year = today.year if month < today.month else today.year - 1
    elif mod == "next":
        year = today.year if month > today.month else today.year + 1
    elif mod == "this":
        year = today.year
    elif tense == "past":
        year = today.year if month <= today.month else today.year - 1
    else:
        year = today.year if month >= today.month else today.year + 1
    return date(year, month, 1)


Resolved = tuple[datetime, Granularity] | None
_Resolver = Callable[[re.Match[str], datetime, "Tense | None"], Resolved]


def _iso(m: re.Match[str], now: datetime, tense: Tense | None) -> Resolved:
    try:
        return _midnight(date(int(m["y"]), int(m["m"]), int(m["d"])), now), "day"
    except ValueError:
        return None


def _mdy(m: re.Match[str], now: datetime, tense: Tense | None) -> Resolved:
    year = int(m["y"]) if m["y"] else None
    day = _month_day(now.date(), MONTHS[m["mon"].lower()], int(m["d"]), year, tense)
    return (_midnight(day, now), "day") if day else None


def _month_year(m: re.Match[str], now: datetime, tense: Tense | None) -> Resolved:
    return _midnight(date(int(m["y"]), MONTHS[m["mon"].lower()], 1), now), "month"


def _bare_month(m: re.Match[str], now: datetime, tense: Tense | None) -> Resolved:
    if m["mon"].lower() == "may" and m["mon"] != "May":
        return None
    return _midnight(_month(now.date(), MONTHS[m["mon"].lower()], m["mod"], tense), now), "month"


def _capital_month(m: re.Match[str], now: datetime, tense: Tense | None) -> Resolved:
    # Only capitalised, and never "May" or "March" (also a verb and a name): "the move is
    # September now".
    name = m["mon"].lower()
    if not m["mon"][:1].isupper() or name in ("may", "march"):
        return None
    if name in ("april", "june", "august") and m.string[:m.start()].rstrip().endswith("is"):
        return None  # "her name is June"
    return _midnight(_month(now.date(), MONTHS[m["mon"].lower()], "", tense), now), "month"


def _day_of_month(m: re.Match[str], now: datetime, tense: Tense | None) -> Resolved:
    # "the 29th": the next such day (the last, in the past tense), this month or the next.
    today, wanted = now.date(), int(m["d"])
    for step in ((0, -1, -2) if tense == "past" else (0, 1, 2)):
        first = add_months(today.replace(day=1), step)
        try:
            day = first.replace(day=wanted)
        except ValueError:
            continue
        if (day <= today) if tense == "past" else (day >= today):
            return _midnight(day, now), "day"
    return None


def _year(m: re.Match[str], now: datetime, tense: Tense | None) -> Resolved:
    return _midnight(date(int(m["y"]), 1, 1), now), "year"


def _same_day(m: re.Match[str], now: datetime, tense: Tense | None) -> Resolved:
    return now, "instant"


def _days(offset: int) -> _Resolver:
    def resolve(m: re.Match[str], now: datetime, tense: Tense | None) -> Resolved:
        return _midnight(now.date() + timedelta(days=offset), now), "day"

    return resolve


def _relative_period(m: re.Match[str], now: datetime, tense: Tense | None) -> Resolved:
    step = {"last": -1, "this": 0, "next": 1}[m["mod"].lower()]
    today = now.date()
    unit = m["u"].lower()
    if unit == "week":
        return _midnight(_monday(today) + timedelta(weeks=step), now), "week"
    if unit == "weekend":
        return _midnight(_monday(today) + timedelta(weeks=step, days=5), now), "day"
    if unit == "month":
        return _midnight(add_months(today.replace(day=1), step), now), "month"
    return _midnight(date(today.year + step, 1, 1), now), "year"


def _the_weekend(m: re.Match[str], now: datetime, tense: Tense | None) -> Resolved:
    mode = "before" if tense == "past" else "after"
    return _midnight(_weekday(now.date(), 5, mode), now), "day"


def _ago(m: re.Match[str], now: datetime, tense: Tense | None) -> Resolved:
    return _midnight(_shift(now.date(), -_number(m["n"]), m["u"]), now), "day"


def _ahead(m: re.Match[str], now: datetime, tense: Tense | None) -> Resolved:
    return _midnight(_shift(now.date(), _number(m["n"]), m["u"]), now), "day"


def _weekday_expr(m: re.Match[str], now: datetime, tense: Tense | None) -> Resolved:
    mod = " ".join((m["mod"] or "").lower().split())
    target = WEEKDAYS[m["wd"].lower()]
    if mod == "last":
        mode = "before"
    elif mod in ("next", "this coming", "coming"):
        mode = "after"
    elif mod == "this":
        mode = "on_or_before" if tense == "past" else "on_or_after"
    else:
        mode = "before" if tense == "past" else "after"
    return _midnight(_weekday(now.date(), target, mode), now), "day"


_C, _R = _PREFIX_CALENDAR, _PREFIX_RELATIVE
# A weekday before what recurs on it ("the Saturday morning slot", "my Tuesday class").
_NOT_A_STANDING_SLOT = (r"(?!(?:\s+(?:morning|afternoon|evening|night))?\s+"
                        r"(?:slot|shift|class|classes|session|sessions|league|practice|lesson|"
                        r"lessons|group)\b)")
_PATTERNS: list[tuple[re.Pattern[str], _Resolver, re.Pattern[str] | None]] = [
    (re.compile(r"\b(?P<y>\d{4})-(?P<m>\d{1,2})-(?P<d>\d{1,2})\b"), _iso, _C),
    (re.compile(rf"\b{_MONTH}\.?\s+(?P<d>\d{{1,2}}){_ORDINAL}\b{_YEAR}", re.I), _mdy, _C),
    (re.compile(rf"\b(?:the\s+)?(?P<d>\d{{1,2}}){_ORDINAL}\s+(?:of\s+)?{_MONTH}\b\.?{_YEAR}", re.I),
     _mdy, _C),
    (re.compile(rf"\b{_MONTH}\.?,?\s+(?P<y>\d{{4}})\b", re.I), _month_year, _C),
    (re.compile(rf"\b(?P<mod>in|last|next|this|since)\s+{_FULL_MONTH}\b", re.I), _bare_month, None),
    (re.compile(r"\b(?:in|since|during)\s+(?P<y>(?:19|20)\d{2})\b", re.I), _year, None),
    # "the move is September now", "pushed to October": a month named alone after a verb.
    (re.compile(rf"(?:(?<=\bis\s)|(?<=\bto\s)|(?<=\buntil\s)|(?<=\btill\s)){_FULL_MONTH}\b"
                r"(?!\s+\d)", re.I), _capital_month, None),
    # "on the 29th", "bumped me to the 11th": a day of the month named alone.
    (re.compile(r"(?:\bon\s+|(?<=\bto\s)|(?<=\bis\s)|(?<=\buntil\s)|(?<=\bfor\s))"
                r"the\s+(?P<d>[12]?\d|3[01])(?:st|nd|rd|th)\b(?!\s+(?:floor|place|time|try|"
                r"attempt|grade|round|century|street|st|avenue|ave|row|pick|edition|generation|"
                r"percentile|birthday|anniversary|year|week|month|day|hole|inning|lap|step))"
                r"(?!\s+(?:of\s+)?(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec))", re.I),
     _day_of_month, None),
    (re.compile(r"\b(?:the\s+)?day\s+before\s+yesterday\b", re.I), _days(-2), _R),
    (re.compile(r"\b(?:the\s+)?day\s+after\s+tomorrow\b", re.I), _days(2), _R),
    (re.compile(r"\b(?:yesterday|last\s+night)\b", re.I), _days(-1), _R),
    (re.compile(r"\btomorrow\b", re.I), _days(1), _R),
    (re.compile(r"\b(?:today|tonight|this\s+(?:morning|afternoon|evening))\b", re.I), _same_day,
     _R),
    (re.compile(r"\b(?P<mod>last|this|next)\s+(?P<u>week|weekend|month|year)\b", re.I),
     _relative_period, _R),
    (re.compile(r"\b(?:over|on|at|during)\s+the\s+weekend\b", re.I), _the_weekend, None),
    (re.compile(rf"\b{_NUM}\s+{_UNIT}\s+ago\b", re.I), _ago, _R),
    (re.compile(rf"\bin\s+{_NUM}\s+{_UNIT}(?:'?\s+time)?\b", re.I), _ahead, None),
    (re.compile(rf"\b{_NUM}\s+{_UNIT}\s+from\s+now\b", re.I), _ahead, None),
    # "every Saturday", "Thursday evenings", "the Saturday morning slot" are a habit or a
    # standing slot, not a date.
    (re.compile(rf"(?<!every\s)\b(?:(?P<mod>last|next|this\s+coming|this|coming|on|since|by)\s+)?{_WEEKDAY}\b"
                rf"(?!\s+(?:mornings|afternoons|evenings|nights)\b){_NOT_A_STANDING_SLOT}",
                re.I), _weekday_expr, None),
]


def find_dates(text: str, now: datetime, tense: Tense | None = None) -> list[DateMatch]:
    """Every date expression in ``text``, left to right, longest first where they overlap."""
    now = _aware(now)
    found: list[DateMatch] = []
    for pattern, resolver, prefixes in _PATTERNS:
        for m in pattern.finditer(text):
            resolved = resolver(m, now, tense)
            if resolved is None:
                continue
            start = m.start()
            prefix = prefixes.search(text, 0, start) if prefixes is not None else None
            if prefix is not None:
                start = prefix.start()
            found.append(DateMatch(start, m.end(), text[start:m.end()], *resolved))
    found.sort(key=lambda d: (d.start, -(d.end - d.start)))
    chosen: list[DateMatch] = []
    for d in found:
        if not chosen or d.start >= chosen[-1].end:
            chosen.append(d)
    return chosen


def find_date(text: str, now: datetime, tense: Tense | None = None) -> DateMatch | None:
    """The first date expression in ``text``, or ``None``."""
    dates = find_dates(text, now, tense)
    return dates[0] if dates else None


def resolve(expression: str, now: datetime, tense: Tense | None = None) -> datetime | None:
    """``expression`` as a whole (surrounding spaces and punctuation aside), or ``None``."""
    expression = expression.strip(" \t.,;:!?")
    match = find_date(expression, now, tense)
    if match is None or match.start != 0 or match.end != len(expression):
        return None
    return match.when


def render(match: DateMatch) -> str:
    """An absolute phrase for ``match`` that can stand in a sentence: "on 2026-05-14"."""
    when = match.when
    if match.granularity == "week":
        return f"in the week of {when.date().isoformat()}"
    if match.granularity == "month":
        return f"in {calendar.month_name[when.month]} {when.year}"
    if match.granularity == "year":
        return f"in {when.year}"
    return f"on {when.date().isoformat()}"


_SUBJECT = re.compile(r"\b(?:i|we)(?:'m|'re|'ve|'ll|'d)?\b", re.I)
_WORD = re.compile(r"[a-z']+")
_FUTURE_WORDS = re.compile(
    r"\b(?:will|shall|gonna|going\s+to|'ll|tomorrow|next|plan(?:ning)?\s+to)\b", re.I,
)
_PAST_WORDS = re.compile(r"\b(?:yesterday|ago|last|was|were|did|had)\b", re.I)


def _is_past_form(word: str) -> bool:
    return word in PAST_IRREGULAR or (word.endswith("ed") and not word.endswith("eed"))


def guess_tense(text: str) -> Tense | None:
    """Past, future or unknown, from the first verb after "I"/"we" (see the module doc)."""
    for subject in _SUBJECT.finditer(text):
        contraction = subject.group().lower().partition("'")[2]
        words = _WORD.findall(text[subject.end():].lower())
        if contraction == "ll":
            return "future"
        if contraction in ("m", "re"):
            words = ["am", *words]
        elif contraction == "ve":
            words = ["have", *words]
        elif contraction == "d":
            words = ["would", *words]
        words = [w for w in words if w not in _SKIP][:3]
        if not words:
            continue
        first = words[0]
        rest = words[1] if len(words) > 1 else ""
        if first in ("will", "shall", "gonna") or (first in ("am", "are") and rest == "going"):
            return "future"
        if first in ("am", "are", "is") and rest.endswith("ing"):
            return "future"
        if first in ("have", "has") and _is_past_form(rest):
            return "past"
        if first in ("was", "were", "did", "had") or _is_past_form(first):
            return "past"
        if first in ("would", "could", "should", "might", "may", "must", "can"):
            return None
        return None
    if _PAST_WORDS.search(text):
        return "past"
    if _FUTURE_WORDS.search(text):
        return "future"
    return None


__all__ = [
    "DateMatch", "Granularity", "Tense", "add_months", "find_date", "find_dates",
    "guess_tense", "render", "resolve",
]
