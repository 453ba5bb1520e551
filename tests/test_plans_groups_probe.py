"""Plans as people tell them (issue 35), through POST /v1/ingest with the rule extractor on a
real database, on generated phrasings:

- a weekday that a thing recurs on ("Thursday evenings", "the Saturday morning slot") is not
  a date: the day stays in the memory as said;
- a plan told after "remind me" or before a comment ("I have the X at 2pm, it's the Y
  thing") is a plan, and "they pushed me to <day>" moves the one plan there is.

Every case has a control that must come out differently.
"""

from __future__ import annotations

import itertools
from datetime import UTC, date, datetime, timedelta

import pytest

from talk import active_items as active
from talk import holding, say

PATH = "users.alice"
T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)


STANDING = ["I switched my {x} to the {day} morning slot",
            "I signed up for {x} on {day} evenings",
            "my {x} class is {day} evenings now"]
ACTIVITIES = ["pottery", "climbing", "salsa"]
WEEKDAYS = ["Thursday", "Saturday", "Tuesday"]


@pytest.mark.parametrize(("template", "x", "day"),
                         list(zip(STANDING, ACTIVITIES, WEEKDAYS, strict=True)))
def test_a_weekday_something_recurs_on_stays_a_day_not_a_date(client, tenant, template, x, day):
    """Given a weekday said of what recurs on it ("Thursday evenings", "the Saturday slot")
    Then the memory keeps the day as said; the control, "on <day>" once, is dated."""
    h = tenant.headers
    say(client, h, template.format(x=x, day=day), at=T0)
    assert holding(active(client, h), x, day), active(client, h)


def test_a_weekday_said_once_is_still_a_date(client, tenant):
    """Control: "I have a pottery class on Saturday" is a dated plan, not a standing day."""
    h = tenant.headers
    say(client, h, "I have a pottery class on Saturday", at=T0)
    assert holding(active(client, h), "pottery", "2026-03-07"), active(client, h)


REMINDED = ["remind me I have the {x} on {d} at 2pm, it's the {y} thing",
            "I have the {x} on {d} at 10am, the {y} one",
            "please remind me that I have the {x} on {d}"]
WHO = ["dentist", "vet", "doctor"]
PUSHED = ["{X} office called, they pushed me to {d}, same time",
          "they moved me to {d}",
          "got a call, they bumped me back to {d}"]
DAYS = [date(2026, 3, 12), date(2026, 3, 19)]


@pytest.mark.parametrize(("first", "x", "moved"),
                         list(zip(REMINDED, WHO, PUSHED, strict=True)))
def test_they_pushed_me_to_a_day_moves_the_one_plan(client, tenant, first, x, moved):
    """Given a plan told with "remind me" or with a comment after it
    When later "they pushed me to <day>"
    Then the plan's only active date is the new one."""
    h = tenant.headers
    old, new = DAYS
    say(client, h, first.format(x=x, d=old.strftime("%B %-d"), y="crown"), at=T0)
    assert holding(active(client, h), x, old.isoformat()), active(client, h)
    say(client, h, moved.format(X=x.capitalize(), d=new.strftime("%B %-d")),
        at=T0 + timedelta(days=2))
    now = active(client, h)
    assert holding(now, new.isoformat()), now
    assert not holding(now, x, old.isoformat()), now


@pytest.mark.parametrize("moved", ["they pushed me to {d}", "they moved us to {d}"])
def test_they_pushed_me_moves_none_of_two_plans(client, tenant, moved):
    """Control: with two open plans, a move that names neither retires neither."""
    h = tenant.headers
    old, new = DAYS
    d = old.strftime("%B %-d")
    for first, x in itertools.islice(zip(REMINDED, WHO, strict=False), 2):
        say(client, h, first.format(x=x, d=d, y="crown"), at=T0)
    say(client, h, moved.format(d=new.strftime("%B %-d")), at=T0 + timedelta(days=2))
    now = active(client, h)
    assert holding(now, WHO[0], old.isoformat()) and holding(now, WHO[1], old.isoformat()), now


WEDDINGS = ["my {rel} {name} is getting married on {d} in {place}",
            "my {rel} {name} is getting married {d} in {place}!!"]
RELATIONS = [("cousin", "Orlagh"), ("sister", "Quilla"), ("best friend", "Tamsin")]
CAUSES = ["ok chaos, the venue flooded so the wedding is now {d}",
          "the hotel double booked, so the wedding is {d} now",
          "so the wedding is now {d}"]
PLACES = ["Cork", "Galway", "Sligo"]


@pytest.mark.parametrize(("first", "rel", "cause", "place"),
                         [(f, r, c, p) for (f, r), (c, p) in zip(
                             itertools.product(WEDDINGS, RELATIONS),
                             itertools.cycle(zip(CAUSES, PLACES, strict=True)))])
def test_a_wedding_moved_after_a_cause_keeps_what_was_said_of_it(client, tenant, first, rel,
                                                                 cause, place):
    """Given "my cousin X is getting married on <day> in <place>"
    When later "the venue flooded so the wedding is now <day2>"
    Then the wedding's statement says the new day and still the place; no active memory says
    the old day."""
    h = tenant.headers
    old, new = DAYS
    relation, name = rel
    say(client, h, first.format(rel=relation, name=name, d=old.strftime("%B %-d"), place=place),
        at=T0)
    say(client, h, cause.format(d=new.strftime("%B %-d")), at=T0 + timedelta(days=2))
    now = active(client, h)
    assert holding(now, name, place, new.isoformat()), now
    assert not holding(now, old.isoformat()), now


def test_another_plan_moved_after_a_cause_leaves_the_wedding(client, tenant):
    """Control: "the venue flooded so the party is now <day>" is not the wedding."""
    h = tenant.headers
    old, new = DAYS
    say(client, h, f"my cousin Orlagh is getting married on {old:%B %-d} in Cork",
        f"I have a party on {old:%B %-d}", at=T0)
    say(client, h, f"the venue flooded so the party is now {new:%B %-d}",
        at=T0 + timedelta(days=2))
    assert holding(active(client, h), "Orlagh", old.isoformat()), active(client, h)


def group_say(client, headers, *turns: tuple[str, str], at: datetime) -> None:
    """Turns of a group conversation, each (speaker's name, what they said)."""
    messages = [{"role": "user", "name": who, "content": t,
                 "at": (at + timedelta(minutes=i)).isoformat()}
                for i, (who, t) in enumerate(turns)]
    r = client.post("/v1/ingest", headers=headers,
                    json={"path": PATH, "messages": messages, "wait": True})
    assert r.status_code == 200, r.text


TAKES = ["i'll take the {c} on tuesdays", "i do the {c} every weekend", "I'm on {c} duty",
         "i handle the {c}"]
SWAPS = ["we swapped, i'm doing the {c} now", "i took over the {c}", "i'm taking over the {c}"]
CHORES = [("bins", "laundry"), ("dishes", "bathroom"), ("recycling", "groceries")]


@pytest.mark.parametrize(("take", "swap", "chores"),
                         [(t, s, c) for t, (s, c) in zip(
                             TAKES, itertools.cycle(zip(SWAPS, CHORES, strict=True)))])
def test_a_chore_taken_over_by_a_housemate_is_theirs_now(client, tenant, take, swap, chores):
    """Given housemate A takes chore X and B takes chore Y
    When B later says they do X now
    Then no active memory says A does X, and B's Y stays (the control)."""
    h = tenant.headers
    x, y = chores
    group_say(client, h, ("Wren", take.format(c=x)), ("Osei", take.format(c=y)), at=T0)
    assert holding(active(client, h), "Wren", x), active(client, h)
    group_say(client, h, ("Osei", swap.format(c=x)), at=T0 + timedelta(days=7))
    now = active(client, h)
    assert holding(now, "Osei", x), now
    assert not holding(now, "Wren", x), now
    assert holding(now, "Osei", y), now


STANDING_FIRST = ["{who}'s {x} is {d1}s at 5", "my {x} is on {d1}s", "our {x} is {d1}s at 7pm"]
STANDING_LATER = ["coach changed it, {ref} is {d2}s now, same time", "so {ref} is {d2}s now",
                  "{ref} is on {d2}s now"]
PRACTICES = [("soccer practice", "practice"), ("book club", "book club"),
             ("choir rehearsal", "rehearsal")]


@pytest.mark.parametrize(("first", "later", "names"),
                         list(zip(STANDING_FIRST, STANDING_LATER, PRACTICES, strict=True)))
def test_a_standing_day_changed_is_the_only_day_held(client, tenant, first, later, names):
    """Given "Theo's soccer practice is Mondays at 5"
    When later "practice is Wednesdays now"
    Then the new day is held and no active memory says the old one; a standing slot of
    another thing (the control) keeps its day."""
    h = tenant.headers
    x, ref = names
    say(client, h, first.format(who="Theo", x=x, d1="Monday"),
        "my pottery class is Fridays", at=T0)
    say(client, h, later.format(ref=ref, d2="Wednesday"), at=T0 + timedelta(days=7))
    now = active(client, h)
    assert holding(now, ref, "wednesday"), now
    assert not holding(now, "monday"), now
    assert holding(now, "pottery", "fridays"), now
