"""The rule extractor and its date resolver: pure functions, no database, no model.

Tables per pattern group give the expected (kind, slot, value, asserts_change[, valid_from]);
every exclusion (questions, hypotheticals, reported speech, assistant messages, small talk)
sits in a conversation with a real statement whose candidate must still come out, so an
extractor that returns nothing cannot pass.

``NOW`` is Wednesday 2026-05-13 15:00 UTC throughout.
"""

from __future__ import annotations

import re
from datetime import UTC, date, datetime, timedelta, timezone

import pytest

from strata.ingest.dates import add_months, find_date, guess_tense, render, resolve
from strata.ingest.models import Candidate, Extraction, Message
from strata.ingest.rules import (
    RuleExtractor,
    extract_message,
    negates,
    normalize_value,
    preference_slot,
    third_person,
)

NOW = datetime(2026, 5, 13, 15, 0, tzinfo=UTC)
assert NOW.strftime("%A") == "Wednesday"


def day(y: int, m: int, d: int) -> datetime:
    return datetime(y, m, d, tzinfo=UTC)


def only(text: str, at: datetime = NOW) -> Candidate:
    found = extract_message(text, at)
    assert len(found) == 1, f"{text!r} gave {[c.content for c in found]}"
    return found[0]


def extract(*messages: tuple[str, str], now: datetime = NOW) -> Extraction:
    return RuleExtractor().extract([Message(role=r, content=c) for r, c in messages], now)


# ======================================================================================
# dates.py
# ======================================================================================

# (expression, tense, expected, granularity)
RELATIVE = [
    ("today", None, NOW, "instant"),
    ("tonight", None, NOW, "instant"),
    ("this morning", "past", NOW, "instant"),
    ("yesterday", None, day(2026, 5, 12), "day"),
    ("last night", "past", day(2026, 5, 12), "day"),
    ("tomorrow", None, day(2026, 5, 14), "day"),
    ("the day before yesterday", None, day(2026, 5, 11), "day"),
    ("the day after tomorrow", None, day(2026, 5, 15), "day"),
    ("last week", None, day(2026, 5, 4), "week"),
    ("this week", None, day(2026, 5, 11), "week"),
    ("next week", None, day(2026, 5, 18), "week"),
    ("last month", None, day(2026, 4, 1), "month"),
    ("next month", None, day(2026, 6, 1), "month"),
    ("last year", None, day(2025, 1, 1), "year"),
    ("next year", None, day(2027, 1, 1), "year"),
    ("3 days ago", None, day(2026, 5, 10), "day"),
    ("a day ago", None, day(2026, 5, 12), "day"),
    ("a couple of days ago", None, day(2026, 5, 11), "day"),
    ("2 weeks ago", None, day(2026, 4, 29), "day"),
    ("two months ago", None, day(2026, 3, 13), "day"),
    ("a year ago", None, day(2025, 5, 13), "day"),
    ("in 5 days", None, day(2026, 5, 18), "day"),
    ("in a week", None, day(2026, 5, 20), "day"),
    ("in two weeks' time", None, day(2026, 5, 27), "day"),
    ("in 3 months", None, day(2026, 8, 13), "day"),
    ("10 days from now", None, day(2026, 5, 23), "day"),
    ("since last week", "past", day(2026, 5, 4), "week"),
    ("last weekend", "past", day(2026, 5, 9), "day"),
    ("this weekend", None, day(2026, 5, 16), "day"),
    ("next weekend", None, day(2026, 5, 23), "day"),
    ("over the weekend", "past", day(2026, 5, 9), "day"),
    ("at the weekend", "future", day(2026, 5, 16), "day"),
]

# Weekdays from Wednesday 13 May: "last" strictly before today, "next" the coming one
# strictly after today, bare/"on" by tense, "this" by tense with today included.
WEEKDAYS = [
    ("last Monday", None, day(2026, 5, 11)),
    ("last Wednesday", None, day(2026, 5, 6)),
    ("last Friday", None, day(2026, 5, 8)),
    ("next Friday", None, day(2026, 5, 15)),
    ("next Monday", None, day(2026, 5, 18)),
    ("next Wednesday", None, day(2026, 5, 20)),
    ("on Monday", "future", day(2026, 5, 18)),
    ("on Monday", None, day(2026, 5, 18)),
    ("on Monday", "past", day(2026, 5, 11)),
    ("Friday", "future", day(2026, 5, 15)),
    ("Friday", "past", day(2026, 5, 8)),
    ("on Wednesday", "future", day(2026, 5, 20)),
    ("on Wednesday", "past", day(2026, 5, 6)),
    ("this Wednesday", "future", NOW.replace(hour=0)),
    ("this Wednesday", "past", NOW.replace(hour=0)),
    ("this Friday", "future", day(2026, 5, 15)),
    ("this coming Tuesday", None, day(2026, 5, 19)),
    ("since Monday", "past", day(2026, 5, 11)),
]

CALENDAR = [
    ("2024-03-05", None, day(2024, 3, 5), "day"),
    ("on 2024-03-05", None, day(2024, 3, 5), "day"),
    ("May 2023", None, day(2023, 5, 1), "month"),
    ("in May 2023", None, day(2023, 5, 1), "month"),
    ("Sept 2021", None, day(2021, 9, 1), "month"),
    ("March 5, 2023", None, day(2023, 3, 5), "day"),
    ("March 5th 2023", None, day(2023, 3, 5), "day"),
    ("5 March 2023", None, day(2023, 3, 5), "day"),
    ("on the 5th of March", "past", day(2026, 3, 5), "day"),
    # Without a year: past tense takes the latest on/before today, else the next on/after.
    ("May 5", "past", day(2026, 5, 5), "day"),
    ("May 5", "future", day(2027, 5, 5), "day"),
    ("May 20", None, day(2026, 5, 20), "day"),
    ("Dec 24", "past", day(2025, 12, 24), "day"),
    ("in May", None, day(2026, 5, 1), "month"),
    ("in March", "past", day(2026, 3, 1), "month"),
    ("in March", "future", day(2027, 3, 1), "month"),
    ("in August", "past", day(2025, 8, 1), "month"),
    ("last May", None, day(2025, 5, 1), "month"),
    ("next May", None, day(2027, 5, 1), "month"),
    ("in 2023", None, day(2023, 1, 1), "year"),
]


@pytest.mark.parametrize(("expr", "tense", "expected", "granularity"), RELATIVE + CALENDAR)
def test_date_expressions_resolve_against_the_message_time(expr, tense, expected, granularity):
    match = find_date(expr, NOW, tense)
    assert match is not None, expr
    assert (match.start, match.end) == (0, len(expr)), f"{expr!r} matched {match.text!r}"
    assert match.when == expected
    assert match.granularity == granularity
    assert resolve(expr, NOW, tense) == expected


@pytest.mark.parametrize(("expr", "tense", "expected"), WEEKDAYS)
def test_weekdays_pick_the_previous_or_the_coming_one(expr, tense, expected):
    assert resolve(expr, NOW, tense) == expected


@pytest.mark.parametrize("expr", [
    "may", "in may", "I may go", "February 30, 2026", "2026-13-01", "the other day", "recently",
    "Mondays", "soon",
])
def test_what_is_not_a_date(expr):
    # Given text that is not (or not validly) a date; the control below is a real one.
    assert resolve(expr, NOW) is None
    assert find_date(f"{expr} and yesterday", NOW).text == "yesterday"


def test_a_date_is_found_inside_a_sentence_with_its_preposition():
    text = "I moved in yesterday and on 2024-03-05 we met"
    match = find_date(text, NOW)
    # "moved in" keeps its "in": only since/by/from join a relative word.
    assert match.text == "yesterday"
    assert match.when == day(2026, 5, 12)
    second = find_date(text[match.end:], NOW)
    assert second.text == "on 2024-03-05"


def test_the_leftmost_longest_expression_wins():
    match = find_date("On March 5, 2023 I started; later in May", NOW)
    assert match.text == "On March 5, 2023"
    assert match.when == day(2023, 3, 5)


def test_a_naive_now_is_utc_and_an_offset_is_kept():
    assert resolve("yesterday", datetime(2026, 5, 13, 15)) == day(2026, 5, 12)
    berlin = timezone(timedelta(hours=2))
    local = datetime(2026, 5, 14, 0, 30, tzinfo=berlin)  # already Thursday in Berlin
    assert resolve("yesterday", local) == datetime(2026, 5, 13, tzinfo=berlin)


def test_months_are_clamped():
    assert add_months(date(2026, 3, 31), -1) == date(2026, 2, 28)
    assert add_months(date(2024, 1, 31), 1) == date(2024, 2, 29)
    assert add_months(date(2026, 1, 15), -13) == date(2024, 12, 15)
    assert resolve("a month ago", datetime(2026, 3, 31, tzinfo=UTC)) == day(2026, 2, 28)


@pytest.mark.parametrize(("text", "tense"), [
    ("I met Sam", "past"),
    ("I started a new job", "past"),
    ("I've finished the report", "past"),
    ("I was in Rome", "past"),
    ("I'm meeting Sam", "future"),
    ("we're flying to Rome", "future"),
    ("I will call him", "future"),
    ("I'll call him", "future"),
    ("I am going to Rome", "future"),
    ("I have a dentist appointment", None),
    ("I really need a break", None),
    ("the meeting was moved", "past"),
])
def test_guess_tense(text, tense):
    assert guess_tense(text) == tense


@pytest.mark.parametrize(("expr", "phrase"), [
    ("tomorrow", "on 2026-05-14"),
    ("today", "on 2026-05-13"),
    ("next week", "in the week of 2026-05-18"),
    ("May 2023", "in May 2023"),
    ("in 2023", "in 2023"),
])
def test_render_is_absolute(expr, phrase):
    assert render(find_date(expr, NOW)) == phrase


# ======================================================================================
# extract_rules.py — pattern groups
# ======================================================================================

# (text, kind, slot, value, asserts_change)
PREFERENCES = [
    ("I prefer PostgreSQL", "preference", "user.preferred_database", "postgresql", False),
    ("I prefer Postgres over Mongo", "preference", "user.preferred_database", "postgresql", False),
    ("i prefer pg", "preference", "user.preferred_database", "postgresql", False),
    ("I really like Python", "preference", "user.preferred_language", "python", False),
    ("I love TypeScript", "preference", "user.preferred_language", "typescript", False),
    ("I enjoy JS", "preference", "user.preferred_language", "javascript", False),
    ("I use Go for services", "preference", "user.preferred_language@service", "go", False),
    ("I use vim for Python", "preference", "user.preferred_editor@python", "vim", False),
    ("I'm using VS Code", "preference", "user.preferred_editor", "vscode", False),
    ("I've been using nvim", "preference", "user.preferred_editor", "neovim", False),
    ("I use a Mac", "preference", "user.preferred_os", "macos", False),
    ("We deploy everything on AWS. I use Google Cloud at home", "preference",
     "user.preferred_cloud@home", "gcp", False),
    ("I always drink coffee in the morning", "preference", "user.preferred_drink@morning", "coffee",
     False),
    ("I'd prefer tea", "preference", "user.preferred_drink", "tea", False),
    ("my favourite colour is blue", "preference", "user.favorite_colour", "blue", False),
    ("My favorite color is blue", "preference", "user.favorite_colour", "blue", False),
    ("My favorite editor is Sublime", "preference", "user.preferred_editor", "sublime text", False),
    ("My favourite database is Foo DB", "preference", "user.preferred_database", "foo db", False),
    ("Rust is my favourite language", "preference", "user.preferred_language", "rust", False),
    # Unknown or several things: a preference without a slot.
    ("I prefer dark mode", "preference", None, None, False),
    ("I love Python and Rust", "preference", None, None, False),
    ("I like to go hiking", "preference", None, None, False),
    ("I'm a big fan of jazz", "preference", None, None, False),
    ("My favourite movies are Alien and Heat", "preference", None, None, False),
    ("I like vitamin C", "preference", None, None, False),
    # Changes of preference.
    ("I've switched to PostgreSQL", "preference", "user.preferred_database", "postgresql", True),
    ("I switched from MySQL to SQLite", "preference", "user.preferred_database", "sqlite", True),
    ("I moved to Emacs", "preference", "user.preferred_editor", "emacs", True),
    ("I've gone back to MongoDB", "preference", "user.preferred_database", "mongodb", True),
    ("I'm back on Postgres", "preference", "user.preferred_database", "postgresql", True),
    ("I now use neovim", "preference", "user.preferred_editor", "neovim", True),
    ("I use Windows now", "preference", "user.preferred_os", "windows", True),
    ("I started using Firefox", "preference", "user.preferred_browser", "firefox", True),
]


@pytest.mark.parametrize(("text", "kind", "slot", "value", "change"), PREFERENCES)
def test_preferences(text, kind, slot, value, change):
    c = extract_message(text, NOW)[-1]
    assert (c.kind, c.slot, c.value, c.asserts_change) == (kind, slot, value, change)
    assert c.valid_from == NOW
    assert 0.7 <= c.confidence <= 0.9


FACTS = [
    ("My name is Sam", "user.name", "sam", False),
    ("I'm called Sam Lee", "user.name", "sam lee", False),
    ("I live in Berlin", "user.location", "berlin", False),
    ("I'm based in London with my family", "user.location", "london", False),
    ("I moved to Lisbon", "user.location", "lisbon", True),
    ("I work at Acme Corp as a designer", "user.employer", "acme corp", False),
    ("I work for Globex", "user.employer", "globex", False),
    ("i'm a data scientist", "user.occupation", "data scientist", False),
    ("I work as a nurse", "user.occupation", "nurse", False),
    ("I'm 34 years old", "user.age", "34", False),
    ("I'm thirty-two", "user.age", "32", False),
    ("I just turned 40", "user.age", "40", True),
    ("I'm a vegetarian", "user.diet", "vegetarian", False),
    ("My email is sam@example.com", "user.email", "sam@example.com", False),
    ("My wife's name is Anna", "user.wife_name", "anna", False),
    ("my home town is Leeds", "user.home_town", "leeds", False),
    ("my birthday is May 3", "user.birthday", "may 3", False),
    # Multi-valued: each value its own key, or (several at once, or no value) no slot.
    ("I'm allergic to peanuts", "user.allergies:peanut", "peanut", False),
    ("I speak French", "user.languages:french", "french", False),
    ("I have a dog named Rex", None, None, False),
    ("I have two kids", None, None, False),
]


@pytest.mark.parametrize(("text", "slot", "value", "change"), FACTS)
def test_facts_about_oneself(text, slot, value, change):
    c = only(text)
    assert (c.kind, c.slot, c.value, c.asserts_change) == ("fact", slot, value, change)
    assert c.valid_from == NOW


def test_a_role_at_an_employer_is_two_facts():
    role, employer = extract_message("I'm a software engineer at Google", NOW)
    assert (role.slot, role.value) == ("user.occupation", "software engineer")
    assert (employer.slot, employer.value) == ("user.employer", "google")
    assert "Google" not in role.content and "Google" in employer.content
    # Control: a role at something that is not a name stays one fact.
    [nurse] = extract_message("I'm a nurse at the local hospital", NOW)
    assert (nurse.slot, nurse.value) == ("user.occupation", "nurse")


def test_call_me_is_a_name_preference():
    c = only("You can call me Sam")
    assert (c.kind, c.slot, c.value) == ("preference", "user.preferred_name", "sam")
    assert c.content == "The user wants to be called Sam"


# (text, valid_from, content)
EVENTS = [
    ("I have a dentist appointment tomorrow", day(2026, 5, 14),
     "The user has a dentist appointment on 2026-05-14"),
    ("I'm flying to Paris next week", day(2026, 5, 18),
     "The user is flying to Paris in the week of 2026-05-18"),
    ("yesterday I met Sam", day(2026, 5, 12), "The user met Sam on 2026-05-12"),
    ("Last week I started a new job", day(2026, 5, 4),
     "The user started a new job in the week of 2026-05-04"),
    ("On Monday I have a meeting with Sam", day(2026, 5, 18),
     "The user has a meeting with Sam on 2026-05-18"),
    ("On Monday I met Sam", day(2026, 5, 11), "The user met Sam on 2026-05-11"),
    ("on 2024-03-05 I adopted a cat", day(2024, 3, 5), "The user adopted a cat on 2024-03-05"),
    ("In May 2023 I ran my first marathon", day(2023, 5, 1),
     "The user ran their first marathon in May 2023"),
    ("Three days ago I sold my car", day(2026, 5, 10), "The user sold their car on 2026-05-10"),
    ("We're flying to Rome on Friday", day(2026, 5, 15),
     "The user and others are flying to Rome on 2026-05-15"),
    ("My sister visits next Tuesday", day(2026, 5, 19), "The user's sister visits on 2026-05-19"),
    ("My flight is tomorrow", day(2026, 5, 14), "The user's flight is on 2026-05-14"),
    ("I have an appointment with Dr. Smith tomorrow", day(2026, 5, 14),
     "The user has an appointment with Dr. Smith on 2026-05-14"),
]


@pytest.mark.parametrize(("text", "when", "content"), EVENTS)
def test_events_are_dated_from_the_message_time(text, when, content):
    c = only(text)
    assert (c.kind, c.asserts_change) == ("event", False)
    # An entry on the calendar is keyed by what it is, valued by its day (plans.py), so a
    # rescheduling supersedes it; other events are slotless.
    if c.slot is not None:
        assert c.slot.startswith("schedule.") and c.value == when.date().isoformat()
    assert c.valid_from == when
    assert c.content == content


@pytest.mark.parametrize(("first", "then", "slot", "day_"), [
    ("my flight to Tokyo is on July 10", "ugh, the airline moved my Tokyo flight to July 14",
     "schedule.flight_tokyo", date(2026, 7, 14)),
    ("got a dentist appointment on Friday at 3pm", "had to move the dentist to Monday morning",
     "schedule.dentist", date(2026, 5, 18)),
    ("our team dinner is on June 3", "we pushed the team dinner back to June 10",
     "schedule.dinner_team", date(2026, 6, 10)),
])
def test_a_rescheduled_plan_keeps_its_key_and_takes_the_new_day(first, then, slot, day_):
    [planned] = extract_message(first, NOW)
    [moved] = extract_message(then, NOW + timedelta(days=1))
    assert planned.slot == moved.slot == slot
    assert moved.asserts_change and moved.value == day_.isoformat()
    assert moved.valid_from.date() == day_
    # Control: a plain meeting is not an entry to reschedule.
    [meeting] = extract_message("I met Sam for lunch yesterday", NOW)
    assert meeting.slot is None


def test_relative_dates_use_the_message_time_not_now():
    sent = datetime(2026, 1, 2, 9, 0, tzinfo=UTC)  # a Friday
    result = RuleExtractor().extract(
        [Message(role="user", content="Yesterday I met Sam", at=sent)], NOW,
    )
    [c] = result.memories
    assert c.valid_from == day(2026, 1, 1)
    assert c.content == "The user met Sam on 2026-01-01"


def test_a_dated_slot_statement_takes_the_date_as_valid_from():
    c = only("Last week, I switched to PostgreSQL")
    assert (c.slot, c.value, c.asserts_change) == ("user.preferred_database", "postgresql", True)
    assert c.valid_from == day(2026, 5, 4)
    assert c.content == "The user switched to PostgreSQL"
    moved = only("in May 2023 I moved to Berlin")
    assert (moved.kind, moved.slot, moved.value) == ("fact", "user.location", "berlin")
    assert moved.valid_from == day(2023, 5, 1)


# (text, content)
INSTRUCTIONS = [
    ("Always answer in French", "Always answer in French"),
    ("Please never use emojis.", "Never use emojis"),
    ("Don't ever call me Bob", "Don't ever call me Bob"),
    ("Please don't use bullet points", "Don't use bullet points"),
    ("Do not use tables in answers", "Do not use tables in answers"),
    ("From now on, reply in English", "From now on, reply in English"),
    ("I want you to always cite sources", "Always cite sources"),
    ("Remember to never schedule meetings on Friday", "Never schedule meetings on Friday"),
    ("If you are unsure, always ask me", None),  # conditional sentence: not mined
]


@pytest.mark.parametrize(("text", "content"), INSTRUCTIONS)
def test_instructions_stay_imperative(text, content):
    found = extract_message(f"{text}. I prefer tea", NOW)
    # Control: the statement after it is always there.
    assert found[-1].slot == "user.preferred_drink"
    instructions = [c for c in found if c.kind == "instruction"]
    if content is None:
        assert instructions == []
        return
    [c] = instructions
    assert (c.content, c.valid_from) == (content, NOW)
    # The language to answer in is the one slot an instruction holds (a later one replaces it).
    language = re.search(r"\bin (English|French|German|Spanish)\b", content)
    if language and not re.search(r"\b(?:never|don't|do not)\b", content, re.I):
        assert (c.slot, c.value) == ("agent.reply_language", language[1].lower())
    else:
        assert (c.slot, c.value) == (None, None)


# (text, kind, slot, value)
CORRECTIONS = [
    ("Actually, I prefer Rust", "preference", "user.preferred_language", "rust"),
    ("actually I use emacs", "preference", "user.preferred_editor", "emacs"),
    ("I actually prefer tea", "preference", "user.preferred_drink", "tea"),
    ("Correction: I live in Munich", "fact", "user.location", "munich"),
    ("No, I live in Munich", "fact", "user.location", "munich"),
    ("Scratch that, I prefer vim", "preference", "user.preferred_editor", "vim"),
    ("Sorry, I meant I work at Initech", "fact", "user.employer", "initech"),
    ("I changed my mind. I prefer tea", "preference", "user.preferred_drink", "tea"),
    ("I've changed my mind, I use Linux", "preference", "user.preferred_os", "linux"),
    ("I used to prefer MongoDB but now I use PostgreSQL", "preference",
     "user.preferred_database", "postgresql"),
    ("From now on I prefer green tea", "preference", "user.preferred_drink", "green tea"),
]


@pytest.mark.parametrize(("text", "kind", "slot", "value"), CORRECTIONS)
def test_corrections_assert_a_change(text, kind, slot, value):
    c = only(text)
    assert (c.kind, c.slot, c.value, c.asserts_change) == (kind, slot, value, True)


# Negations: the positive statement's slot, value None, asserts_change, content negated.
NEGATIONS = [
    ("I no longer use MongoDB", "preference", "user.preferred_database",
     "The user no longer uses MongoDB", "mongodb"),
    ("I don't use Mongo anymore", "preference", "user.preferred_database",
     "The user does not use Mongo anymore", "mongodb"),
    ("I don't like coffee anymore", "preference", "user.preferred_drink",
     "The user does not like coffee anymore", "coffee"),
    ("Not MongoDB anymore", "preference", "user.preferred_database",
     "The user no longer uses MongoDB", "mongodb"),
    ("I stopped using Postgres", "preference", "user.preferred_database",
     "The user stopped using Postgres", "postgresql"),
    ("I gave up coffee", "preference", "user.preferred_drink", "The user gave up coffee", "coffee"),
    ("I no longer live in Berlin", "fact", "user.location",
     "The user no longer lives in Berlin", "berlin"),
    ("I don't work at Acme anymore", "fact", "user.employer",
     "The user does not work at Acme anymore", "acme"),
    ("I'm not a student anymore", "fact", "user.occupation",
     "The user is not a student anymore", "student"),
    # Not a value the lexicon knows: the end of what it names (strata.write.topics).
    ("I no longer use Jira", "preference", "ended:jira", "The user no longer uses Jira", "jira"),
]


@pytest.mark.parametrize(("text", "kind", "slot", "content", "negated"), NEGATIONS)
def test_negations_name_the_slot_without_a_value(text, kind, slot, content, negated):
    c = only(text)
    assert (c.kind, c.slot, c.value, c.asserts_change) == (kind, slot, None, True)
    assert c.content == content
    if negated is not None:
        assert negates(c, negated)
        assert negates(c, negated.upper())
    # A negation retires only the value it names.
    assert not negates(c, "postgresql" if negated != "postgresql" else "mongodb")


def test_negates_needs_a_negation_with_a_slot_and_no_value():
    positive = only("I prefer MongoDB")
    assert not negates(positive, "mongodb")
    slotless = only("I don't like Jira")
    assert not negates(slotless, "jira")
    aliased = only("I no longer use Postgres")
    assert negates(aliased, "postgresql")
    assert negates(aliased, "pg")


@pytest.mark.parametrize("text", ["I don't like tea", "I hate Java", "I can't stand Windows"])
def test_plain_dislikes_have_no_slot(text):
    # Without "anymore"/"no longer" nothing changed: a slotless preference that cannot retire
    # the slot's current holder.
    c = only(text)
    assert (c.kind, c.slot, c.value, c.asserts_change) == ("preference", None, None, False)


# ======================================================================================
# What is not mined — each beside a statement that is
# ======================================================================================

NOT_MINED = [
    "Do I like Python?",
    "do i like python",
    "I prefer MongoDB, right?",
    "Which database do I use?",
    "If I liked Rust, I'd use it",
    "Suppose I switched to Rust",
    "What if I moved to Emacs",
    "I would use Rust if it had a GC",
    "I wish I used Linux",
    "Hypothetically, I prefer Java",
    "I used to prefer MongoDB",
    "Back when I said I prefer MongoDB I was young",
    "When I was a kid I loved Java",
    "I said I prefer MongoDB",
    "Last year I said I prefer MongoDB",
    "You said I prefer MongoDB",
    "He said \"I prefer MongoDB.\"",
    "> I prefer MongoDB",
    "```\nI prefer MongoDB\n```",
    "my wife prefers MongoDB",
    "My colleagues use MongoDB",
    "I like it",
    "I prefer your first option",
    "I like the second approach",
    "I'm using your suggestion",
    "I'm tired today",
    "The weather was nice yesterday",
    "Thanks, that looks great",
    "Never mind",
    "Don't worry about it",
    "My problem is that the build fails",
    "My code is broken",
    "My name is not important",
]

# Said about oneself, so kept since issue 15 — but slotless: none of them names a value that
# could retire the current holder of a slot (the home, the employer, the language).
KEPT_SLOTLESS = [
    "I'm thinking about switching to Rust",
    "I live in an apartment",
    "I work from home",
    "I quit my job",
]


@pytest.mark.parametrize("text", KEPT_SLOTLESS)
def test_statements_kept_without_a_slot(text):
    result = extract(("user", text), ("user", "I live in Berlin"))
    first, berlin = result.memories
    assert first.evidence == [0] and first.slot is None and first.value is None
    assert not first.asserts_change
    assert (berlin.slot, berlin.value) == ("user.location", "berlin")


@pytest.mark.parametrize("text", NOT_MINED)
def test_not_mined_while_a_real_statement_is(text):
    result = extract(("user", text), ("user", "I live in Berlin"))
    contents = [c.content for c in result.memories]
    assert contents == ["The user lives in Berlin"], contents
    assert result.memories[0].evidence == [1]


def test_only_user_messages_are_mined():
    result = extract(
        ("system", "The user prefers MongoDB."),
        ("assistant", "I prefer Rust. I live in Paris. Always answer in French."),
        ("tool", "I use vim"),
        ("user", "I've switched to PostgreSQL"),
    )
    [c] = result.memories
    assert (c.slot, c.value, c.evidence) == ("user.preferred_database", "postgresql", [3])


def test_one_message_yields_one_candidate_per_clause():
    found = extract_message(
        "Hi! My name is Sam and I live in Berlin. I prefer tea, I hate coffee. "
        "Yesterday I adopted a cat. Always answer in German.", NOW,
    )
    assert [(c.kind, c.slot, c.value) for c in found] == [
        ("fact", "user.name", "sam"),
        ("fact", "user.location", "berlin"),
        ("preference", "user.preferred_drink", "tea"),
        ("preference", None, None),
        ("event", None, None),
        ("instruction", "agent.reply_language", "german"),
    ]
    assert [c.content for c in found] == [
        "The user's name is Sam",
        "The user lives in Berlin",
        "The user prefers tea",
        "The user hates coffee",
        "The user adopted a cat on 2026-05-12",
        "Always answer in German",
    ]


def test_a_change_marker_flags_the_rest_of_the_message_only():
    result = extract(
        ("user", "I changed my mind. I prefer tea."),
        ("user", "I prefer Python."),
    )
    tea, python = result.memories
    assert (tea.value, tea.asserts_change) == ("tea", True)
    assert (python.value, python.asserts_change) == ("python", False)


def test_only_a_correction_word_standing_alone_carries_to_what_follows():
    # "No thanks" and "sorry" are politeness, not corrections.
    for text in ("No thanks. I prefer tea.", "Sorry for the delay. I prefer tea."):
        assert only(text).asserts_change is False, text
    assert only("Actually. I prefer tea.").asserts_change is True
    assert only("Scratch that, I prefer tea.").asserts_change is True


@pytest.mark.parametrize(("text", "content"), [
    ("I never work on Fridays", "The user never works on Fridays"),
    ("I usually go to the gym on Monday", "The user usually goes to the gym on Monday"),
])
def test_habits_are_slotless_facts_that_keep_their_day_words(text, content):
    c = only(text)
    assert (c.kind, c.slot, c.value, c.valid_from, c.content) == ("fact", None, None, NOW, content)


def test_hedges_lower_confidence():
    plain = only("I prefer Go")
    hedged = only("I think I prefer Go")
    assert (hedged.slot, hedged.value) == (plain.slot, plain.value)
    assert hedged.confidence < plain.confidence
    assert hedged.confidence < 0.75


def test_a_qualifier_set_off_by_a_comma_stays_in_the_content():
    c = only("For backends, I prefer Mongo")
    # ... and keys the slot: a preference for backends coexists with one for analytics.
    assert (c.slot, c.value) == ("user.preferred_database@backend", "mongodb")
    assert c.content == "For backends, the user prefers Mongo"


# ======================================================================================
# The issue's scenario
# ======================================================================================


def test_issue_scenario_preference_change_and_back():
    t0 = datetime(2026, 3, 1, 10, tzinfo=UTC)
    messages = [
        Message(role="user", content="I prefer MongoDB", at=t0),
        Message(role="assistant", content="Got it, MongoDB.", at=t0),
        Message(role="user", content="I've switched to PostgreSQL", at=t0 + timedelta(weeks=3)),
        Message(role="user", content="Back when I said I prefer MongoDB I was young",
                at=t0 + timedelta(weeks=4)),
        Message(role="user", content="I prefer MongoDB", at=t0 + timedelta(weeks=5)),
        Message(role="user", content="I've gone back to MongoDB", at=t0 + timedelta(weeks=6)),
    ]
    got = RuleExtractor().extract(messages, NOW).memories
    assert [(c.evidence, c.slot, c.value, c.asserts_change, c.valid_from) for c in got] == [
        ([0], "user.preferred_database", "mongodb", False, t0),
        ([2], "user.preferred_database", "postgresql", True, t0 + timedelta(weeks=3)),
        # [3] — the mention in passing is reported past speech: nothing extracted.
        # [4] — a plain repetition is extracted as stated; the gate's tombstone blocks it.
        ([4], "user.preferred_database", "mongodb", False, t0 + timedelta(weeks=5)),
        # [5] — an explicit change back: asserts_change, so the gate holds it for review.
        ([5], "user.preferred_database", "mongodb", True, t0 + timedelta(weeks=6)),
    ]
    assert [c.content for c in got] == [
        "The user prefers MongoDB",
        "The user has switched to PostgreSQL",
        "The user prefers MongoDB",
        "The user has gone back to MongoDB",
    ]


# ======================================================================================
# Helpers and contracts
# ======================================================================================


@pytest.mark.parametrize(("raw", "value"), [
    ("Postgres", "postgresql"), ("pg", "postgresql"), ("MONGO", "mongodb"), ("js", "javascript"),
    ("golang", "go"), ("VS Code", "vscode"), ("nvim", "neovim"), ("the Netherlands", "netherlands"),
    ("  Acme  Corp. ", "acme corp"), (None, None), ("", None),
])
def test_normalize_value_folds_aliases(raw, value):
    assert normalize_value(raw) == value


def test_emitted_values_are_already_in_the_gates_normal_form():
    from strata.write.gate import normalise_value

    values = {c.value for text, *_ in PREFERENCES + [(t, None) for t, *_ in FACTS]
              for c in extract_message(text, NOW) if c.value}
    assert "postgresql" in values
    assert {v for v in values if normalise_value(v) != v} == set()


@pytest.mark.parametrize(("obj", "slot", "value"), [
    ("PostgreSQL", "user.preferred_database", "postgresql"),
    ("Mongo for backends", "user.preferred_database", "mongodb"),
    ("Go", "user.preferred_language", "go"),
    ("to go hiking", None, None),
    ("Python and Rust", None, None),
    ("the edge case", None, None),
    ("tea with milk", "user.preferred_drink", "tea"),
])
def test_preference_slot(obj, slot, value):
    assert preference_slot(obj) == (slot, value)


@pytest.mark.parametrize(("text", "out"), [
    ("I prefer tea", "The user prefers tea"),
    ("I have switched to PostgreSQL", "The user has switched to PostgreSQL"),
    ("I am allergic to nuts", "The user is allergic to nuts"),
    ("I do not use vim anymore", "The user does not use vim anymore"),
    ("I really watch a lot of films", "The user really watches a lot of films"),
    ("I study at night", "The user studies at night"),
    ("my sister and I went to Rome", "The user's sister and they went to Rome"),
    ("I met my boss and he gave me a raise", "The user met their boss and he gave them a raise"),
    ("I will call my mom", "The user will call their mom"),
    ("we sell to US customers", "The user and others sell to US customers"),
])
def test_third_person(text, out):
    assert third_person(text) == out


def test_extraction_is_deterministic():
    texts = [
        "I prefer MongoDB and I live in Berlin. Yesterday I met Sam at the cafe, it was fun!",
        "Could you help me write a function that parses dates? Thanks, that looks great.",
        "Always answer in French. Actually, I've switched to PostgreSQL last week.",
    ] * 334
    messages = [Message(role="user", content=t) for t in texts]
    first = RuleExtractor().extract(messages, NOW)
    second = RuleExtractor().extract(messages, NOW)
    assert first == second
    assert len(first.memories) == 334 * 5
    # Its speed is measured by eval/locomo_extract.py (seconds for 5,882 turns), not here:
    # no timing thresholds in unit tests.
