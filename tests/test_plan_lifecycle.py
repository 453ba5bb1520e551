"""Plans with a lifecycle and ends of states, end to end through POST /v1/ingest on a real
database (rule extractor, rule judge): a later word on a plan -- moved, cancelled, done --
retires the plan it names and no other; an end retires what it names as still so, and a
statement naming more than what ended keeps the rest.

Phrasings are generated from templates crossing plans, references to them ("the trip to
Lisbon" / "the Lisbon trip"), verbs and dates, and ends crossing verbs and objects. Every
case has a control: another plan, or another object, that must stay.
"""

from __future__ import annotations

import itertools
from datetime import UTC, date, datetime, timedelta

import pytest

from talk import active_items as active
from talk import holding, say

T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)


# (what is planned as first said, a later reference to it, the place or subject it names)
PLANS = [
    ("I booked a trip to {x} on {d}", "the {x} trip", ["Lisbon", "Osaka"]),
    ("my flight to {x} is on {d}", "our {x} flight", ["Denver", "Porto"]),
    ("I have a {x} exam on {d}", "the {x} exam", ["chemistry", "statistics"]),
]
MOVES = ["we pushed {ref} to {d}", "they moved {ref} to {d}", "I had to postpone {ref} to {d}",
         "{ref} got pushed to {d}", "{ref} was moved to {d}", "{ref} is {d} now"]
CANCELS = ["{Ref} got cancelled", "{Ref} is off", "we called off {ref}"]
DAYS = [date(2026, 5, 20), date(2026, 6, 3)]


def _plan_cases(verbs: list[str]):
    for (first, ref, subjects), verb in itertools.product(PLANS, verbs):
        x, other = subjects
        yield first, ref, x, other, verb


def _said(template: str, **words: str) -> str:
    return template.format(**words)


@pytest.mark.parametrize(("first", "ref", "x", "other", "verb"),
                         list(_plan_cases(MOVES))[::2])
def test_a_moved_plan_takes_its_new_date_and_another_plan_stays(
        client, tenant, first, ref, x, other, verb):
    """Given two plans of one kind (one about X, one about Y)
    When the user says X's plan moved to a new day, naming it another way
    Then the only active word on X is the new day, and Y's plan is untouched."""
    h = tenant.headers
    old, new = DAYS
    say(client, h, _said(first, x=x, d=old.strftime("%B %-d")),
        _said(first, x=other, d=old.strftime("%B %-d")), at=T0)
    receipt = say(client, h, _said(verb, ref=ref.format(x=x), d=new.strftime("%B %-d")),
                  at=T0 + timedelta(days=3))
    assert [i["outcome"] for i in receipt["items"]] == ["superseded_existing"], receipt
    now = active(client, h)
    assert holding(now, x, new.isoformat()), now
    assert not holding(now, x, old.isoformat()), now
    # Control: the other plan keeps its day.
    assert holding(now, other, old.isoformat()), now


@pytest.mark.parametrize(("first", "ref", "x", "other", "verb"),
                         list(_plan_cases(CANCELS))[1::2])
def test_a_cancelled_plan_is_retired_and_another_plan_stays(
        client, tenant, first, ref, x, other, verb):
    """Given two plans of one kind
    When the user says one of them is cancelled (or off, or called off)
    Then that plan's date is no longer active, the cancellation is, and the other plan
    keeps its date."""
    h = tenant.headers
    day = DAYS[0]
    say(client, h, _said(first, x=x, d=day.strftime("%B %-d")),
        _said(first, x=other, d=day.strftime("%B %-d")), at=T0)
    phrase = ref.format(x=x)
    say(client, h, _said(verb, ref=phrase, Ref=phrase[:1].upper() + phrase[1:]),
        at=T0 + timedelta(days=3))
    now = active(client, h)
    assert not holding(now, x, day.isoformat()), now
    assert holding(now, x), now
    assert holding(now, other, day.isoformat()), now


@pytest.mark.parametrize(("subject", "other"), [("chemistry", "statistics"),
                                                 ("bar", "driving")])
@pytest.mark.parametrize("verb", ["I finally took the {x} exam", "I passed the {x} exam"])
def test_a_done_plan_is_retired_and_another_stays(client, tenant, subject, other, verb):
    """Given two exams on the calendar
    When the user says one is done
    Then the done one holds no date any more and the other keeps its day."""
    h = tenant.headers
    day = DAYS[1]
    say(client, h, f"I have a {subject} exam on {day:%B %-d}",
        f"I have a {other} exam on {day:%B %-d}", at=T0)
    say(client, h, verb.format(x=subject), at=T0 + timedelta(days=100))
    now = active(client, h)
    assert not holding(now, subject, day.isoformat()), now
    assert holding(now, subject), now
    assert holding(now, other, day.isoformat()), now


ENDS = ["I cancelled {x}", "I axed {x}", "I'm done with {x}", "I quit {x}"]
SERVICES = [("Hulu", "Netflix", "Spotify"), ("Peacock", "Max", "Audible")]


@pytest.mark.parametrize("verb", ENDS)
@pytest.mark.parametrize(("ended", "kept", "also"), SERVICES)
def test_an_end_narrows_a_list_and_keeps_the_rest(client, tenant, verb, ended, kept, also):
    """Given one statement naming three subscriptions
    When the user ends one of them
    Then no active memory says the user still pays for it, the end is active, and the
    other two are still held."""
    h = tenant.headers
    say(client, h, f"I pay for {kept}, {ended} and {also}", at=T0)
    say(client, h, verb.format(x=ended), at=T0 + timedelta(days=30))
    now = active(client, h)
    assert not [c for c in holding(now, ended) if "pays" in c], now
    assert holding(now, ended), now
    # Control: what did not end is still held.
    assert holding(now, kept, also), now


@pytest.mark.parametrize(("ended", "kept", "also"), SERVICES)
def test_a_narrowed_statement_is_embedded_as_it_now_reads(client, tenant, db, embedder, ended,
                                                          kept, also):
    """A narrowed holder's vector is its new wording's, not the old one's (control: the two
    wordings' vectors differ, so the check can fail)."""
    h = tenant.headers
    say(client, h, f"I pay for {kept}, {ended} and {also}", at=T0)
    before = holding(active(client, h), kept, also)
    say(client, h, f"I cancelled {ended}", at=T0 + timedelta(days=30))
    narrowed = [m for m in active(client, h) if kept in m["content"] and also in m["content"]]
    assert len(narrowed) == 1 and ended not in narrowed[0]["content"], narrowed
    with db.connection() as conn:
        stored = conn.execute("SELECT embedding FROM memories WHERE id = %s",
                              (narrowed[0]["id"],)).fetchone()["embedding"]
    now_reads, once_read = embedder.embed([narrowed[0]["content"], before[0]])
    assert list(now_reads) != list(once_read)
    assert [round(float(x), 5) for x in stored] == [round(float(x), 5) for x in now_reads]


@pytest.mark.parametrize(("holder", "end", "word"), [
    ("I volunteer at the {x} every week", "I had to step back from the {x}", "volunteers"),
    ("I have a membership at {x}", "I cancelled my {x} membership", "membership at"),
    ("I play in the {x} on Tuesdays", "I gave up the {x}", "plays"),
    ("I play in the {x} on Tuesdays", "I'm not in the {x} anymore", "plays"),
    ("I volunteer at the {x} every week", "I no longer volunteer at the {x}", "every week"),
])
@pytest.mark.parametrize(("x", "other"), [("Harbor League", "Chess Club"),
                                          ("Riverside Club", "Quiz Team")])
def test_an_end_retires_what_it_names_and_only_that(client, tenant, holder, end, word, x,
                                                    other):
    """Given two states naming different things
    When the user says one of them ended
    Then the statement naming it is retired, the end is stored, and the other stays."""
    h = tenant.headers
    say(client, h, holder.format(x=x), holder.format(x=other), at=T0)
    say(client, h, end.format(x=x), at=T0 + timedelta(days=30))
    now = active(client, h)
    assert not holding(now, word, x), now
    assert holding(now, x), now
    assert holding(now, word, other), now


@pytest.mark.parametrize(("holder", "x", "later"), [
    ("our {x} is on {d}", "wedding", "the venue double-booked us, the only day left was {d2}, "
                                     "so that's the date now"),
    ("my {x} is on {d}", "graduation party", "they only had {d2} open, so that's the new date"),
])
def test_a_new_date_that_names_no_plan_revises_the_one_plan_there_is(client, tenant, holder, x,
                                                                     later):
    """Given one dated plan
    When the user gives a new date without naming the plan ("so that's the date now")
    Then the plan's own statement now carries the new date (it still says what the plan
    is), the old date is held nowhere, and the plan is not lost."""
    h = tenant.headers
    old, new = DAYS
    say(client, h, holder.format(x=x, d=f"{old:%B %-d}"), at=T0)
    say(client, h, later.format(d2=f"{new:%B %-d}"), at=T0 + timedelta(days=5))
    now = active(client, h)
    assert holding(now, x, new.isoformat()), now
    assert not holding(now, old.isoformat()), now


def test_a_new_date_naming_no_plan_revises_none_of_several(client, tenant):
    """Given two dated plans
    When a new date names neither
    Then both keep their dates (which one moved is not said)."""
    h = tenant.headers
    old, new = DAYS
    say(client, h, f"our wedding is on {old:%B %-d}", f"my flight to Porto is on {old:%B %-d}",
        at=T0)
    say(client, h, f"the only day left was {new:%B %-d}, so that's the date now",
        at=T0 + timedelta(days=5))
    now = active(client, h)
    assert holding(now, "wedding", old.isoformat()) and holding(now, "Porto", old.isoformat())


def test_plan_keys_meet_by_subject_and_keep_owners_and_kinds_apart():
    """Plan keys (strata.write.topics) name one plan when they share a subject word, a key
    of kind words only meets its kind, and different owners never meet."""
    from strata.write import topics

    assert topics.same_plan("schedule.tokyo_trip", "schedule.flight_tokyo")
    assert topics.same_plan("schedule.move", "schedule.move_seattle")
    assert topics.same_plan("schedule.date", "schedule.wedding")
    # Controls: other subjects, other owners, other kinds.
    assert not topics.same_plan("schedule.lisbon_trip", "schedule.paris_trip")
    assert not topics.same_plan("schedule.sister_wedding", "schedule.wedding")
    assert not topics.same_plan("schedule.exam", "schedule.flight")


@pytest.mark.parametrize(("items", "ended"), [
    (["Netflix", "Hulu", "Max"], "Hulu"), (["Netflix", "Hulu", "Max"], "Netflix"),
    (["Netflix", "Hulu", "Max"], "Max"), (["piano", "violin"], "piano"),
    (["piano", "violin"], "violin"),
])
def test_a_list_loses_only_what_ended(items, ended):
    from strata.write import topics

    listed = ", ".join(items[:-1]) + f" and {items[-1]}"
    rest = topics.narrowed(f"The user pays for {listed}", [ended.lower()])
    assert rest is not None and ended not in rest
    assert all(i in rest for i in items if i != ended)
    # Control: a statement about the object alone is not narrowed (it is retired whole).
    assert topics.narrowed(f"The user pays for {ended}", [ended.lower()]) is None


@pytest.mark.parametrize("end", ["we said goodbye to {x}", "we lost {x} last week",
                                 "{x} passed away", "we had to put {x} down"])
@pytest.mark.parametrize(("x", "other"), [("Pepper", "Miso"), ("Biscuit", "Juniper")])
def test_a_pet_that_died_is_retired_and_the_other_pet_stays(client, tenant, end, x, other):
    """Given two pets
    When the user says one died (in any of several ways)
    Then no active memory says the user still has it, the death is stored, and the other
    pet stays."""
    h = tenant.headers
    say(client, h, f"my cat {x} is 12 years old", f"my cat {other} is 3 years old", at=T0)
    say(client, h, end.format(x=x), at=T0 + timedelta(days=40))
    now = active(client, h)
    assert not holding(now, x, "12 years"), now
    assert holding(now, x), now
    assert holding(now, other, "3 years"), now


@pytest.mark.parametrize(("going", "cancel"), [
    ("we're flying to {x} on {d}", "the {x} trip got cancelled"),
    ("I'm heading to {x} on {d}", "we're not going to {x} anymore"),
])
def test_a_trip_told_by_where_it_goes_is_cancelled_by_name(client, tenant, going, cancel):
    """Given two trips, each told by where it goes
    When one is cancelled by name
    Then it holds no date, and the other trip keeps its date."""
    h = tenant.headers
    day = DAYS[0]
    say(client, h, going.format(x="Rome", d=f"{day:%B %-d}"),
        going.format(x="Oslo", d=f"{day:%B %-d}"), at=T0)
    say(client, h, cancel.format(x="Rome"), at=T0 + timedelta(days=2))
    now = active(client, h)
    assert not holding(now, "Rome", day.isoformat()), now
    assert holding(now, "Rome"), now
    assert holding(now, "Oslo", day.isoformat()), now


@pytest.mark.parametrize(("place", "other"), [("Denver", "Tucson"), ("Boise", "Omaha")])
def test_a_plan_moved_twice_by_its_kind_holds_only_the_last_date(client, tenant, place, other):
    """Given a move to a place and a trip to another
    When the move is moved twice, each time named only as "the move"
    Then the move holds the last month only, and the trip keeps its month."""
    h = tenant.headers
    say(client, h, f"we're moving to {place} in July", f"we're flying to {other} in July",
        at=T0)
    say(client, h, "the move is September now", at=T0 + timedelta(days=10))
    say(client, h, "ugh, the move is October now", at=T0 + timedelta(days=20))
    now = active(client, h)
    moving = [c for c in holding(now) if "move" in c.lower() or "moving" in c.lower()]
    assert moving and all("July" not in c and "September" not in c for c in moving), now
    assert any("October" in c for c in moving), now
    assert holding(now, other, "July"), now


@pytest.mark.parametrize("x", ["Hulu", "Audible"])
def test_an_end_said_again_after_the_state_came_back_retires_it_again(client, tenant, x):
    """Given a subscription ended, then taken up again
    When the user ends it again
    Then nothing active says the user subscribes to it, one end is active, and another
    subscription stays."""
    h = tenant.headers
    say(client, h, f"I subscribe to {x}", "I subscribe to Netflix", at=T0)
    say(client, h, f"I cancelled {x}", at=T0 + timedelta(days=10))
    say(client, h, f"I signed up for {x} again", at=T0 + timedelta(days=20))
    say(client, h, f"I cancelled {x}", at=T0 + timedelta(days=30))
    now = active(client, h)
    assert not [c for c in holding(now, x) if "cancelled" not in c], now
    assert len(holding(now, x, "cancelled")) == 1, now
    assert holding(now, "Netflix"), now
