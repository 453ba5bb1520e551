"""Ends of states and events that change a state (issue 35), through POST /v1/ingest with the
rule extractor on a real database, on generated phrasings.

Each mechanism is tried over combinations of subjects, verbs, values and templates, each
beside a control that must come out differently (the same words with the mechanism's cue
taken away), so a test cannot pass on an extractor that keeps or retires everything.
Values are invented words where the mechanism should not depend on them.
"""

from __future__ import annotations

import itertools
import re
import uuid
from datetime import UTC, datetime, timedelta

import pytest

T0 = datetime(2026, 1, 5, 9, tzinfo=UTC)


def _path() -> str:
    return f"users.s{uuid.uuid4().hex[:12]}"


def tell(client, headers, path: str, *texts: str) -> list[str]:
    """Each text a user message of its own session, thirty days apart; the active memories
    after the last."""
    for day, text in enumerate(texts):
        r = client.post("/v1/ingest", headers=headers, json={
            "path": path, "wait": True, "messages": [
                {"role": "user", "content": text,
                 "at": (T0 + timedelta(days=30 * day)).isoformat()}]})
        assert r.status_code == 200, r.text
    r = client.get("/v1/memories", headers=headers,
                   params={"path": path, "status": "active", "limit": 200})
    assert r.status_code == 200, r.text
    return [m["content"] for m in r.json()["items"]]


def holding(contents: list[str], word: str) -> list[str]:
    return [c for c in contents if re.search(rf"\b{re.escape(word)}\b", c, re.I)]


def first_answer(client, headers, path: str, query: str) -> str:
    r = client.post("/v1/search", headers=headers,
                    json={"query": query, "paths": [path], "limit": 5})
    assert r.status_code == 200, r.text
    return r.json()["results"][0]["content"]


# --- a new manager told through who the user reports to, after another subject --------------

OLD_MANAGER = ["Karen (my manager) wants a one-pager by thursday",
               "my manager is Karen", "my boss Karen keeps moving our standup"]
REPORTING = [
    "{name} came over from the {place} office and I've been reporting to {pron} since monday",
    "had my first 1:1 with {name} today. {subj} joined in march and I report to {pron} now",
    "{name} took over the team and I report to {pron} now",
]
NEW_MANAGERS = [("Luis", "him", "he"), ("Priya", "her", "she")]


@pytest.mark.parametrize("old,said,who", list(itertools.product(
    OLD_MANAGER, REPORTING, NEW_MANAGERS))[::2])
def test_reporting_to_someone_named_before_makes_them_the_manager(client, tenant, old, said,
                                                                   who):
    """Given a manager by name, When the user later says they report to "him"/"her" after
    naming that person in the same clause or just before, Then the new person is the manager
    and the old one is no longer active; the control, the same clause with someone else
    reporting, changes nothing."""
    name, pron, subj = who
    text = said.format(name=name, pron=pron, subj=subj, place="Dublin")
    now = tell(client, tenant.headers, _path(), old, text)
    assert not holding(now, "Karen"), now
    assert holding(now, name), now
    control = said.format(name=name, pron=pron, subj=subj, place="Dublin").replace(
        "I've been reporting", "Tom has been reporting").replace("I report", "Tom reports")
    now = tell(client, tenant.headers, _path(), old, control)
    assert holding(now, "Karen"), (control, now)


# --- a way of eating is one value of the user's diet, however it is said ---------------------

DIET_FIRST = ["been strict {a} since thanksgiving and I'm so bored of it",
              "I'm {a} now", "I've been {a} for 3 years", "I'm on {a} these days"]
DIET_LATER = ["my doctor wants me eating {b}, can you redo my meal prep?",
              "I went {b} last month", "I'm doing {b} now", "she put me on a {b} diet"]
DIETS = [("keto", "mediterranean"), ("vegan", "pescatarian"), ("paleo", "plant-based")]


@pytest.mark.parametrize("first,later,diet", list(itertools.product(
    DIET_FIRST, DIET_LATER, DIETS))[::3])
def test_a_new_way_of_eating_replaces_the_old(client, tenant, first, later, diet):
    """Given a way of eating in one shape, When a later session names another in another
    shape, Then only the new one is active; the control, a food the user likes said later,
    keeps the diet."""
    a, b = diet
    now = tell(client, tenant.headers, _path(), first.format(a=a), later.format(b=b))
    assert holding(now, b), now
    assert not holding(now, a), now
    now = tell(client, tenant.headers, _path(), first.format(a=a), f"I really like {b} food")
    assert holding(now, a), now


# --- a question takes for granted the device the user has ------------------------------------

DEVICES = [("phone", "Pixel 7", "iPhone 16"), ("laptop", "ThinkPad", "MacBook Air"),
           ("phone", "Galaxy S23", "Pixel 9")]
ASKED_ON = ["how do I turn off the widget on my {d}?",
            "ok dumb q, on the {d} work gave me where's the setting for tap to click??",
            "how do i get the battery % to show on my new {d}, it keeps hiding it",
            "why is my {d} so slow after the update?"]
HAVING = ["I have a {d}", "my {kind} is a {d}"]


@pytest.mark.parametrize("device,asked,having", list(itertools.product(
    DEVICES, ASKED_ON, HAVING)))
def test_a_device_a_question_takes_for_granted_is_the_users(client, tenant, device, asked,
                                                          having):
    """Given the user's device, When a later question is asked on another device of the
    kind the user calls theirs, Then the new device is the user's and the old one is not;
    the control, a question about whether to buy one, keeps the old device and stores no
    new one."""
    kind, old, new = device
    path = _path()
    now = tell(client, tenant.headers, path, having.format(d=old, kind=kind),
               asked.format(d=new))
    assert holding(now, new.split()[0]), now
    assert not holding(now, old.split()[0]), now
    assert holding([first_answer(client, tenant.headers, path,
                                 f"what {kind} does the user have?")], new.split()[0])
    now = tell(client, tenant.headers, _path(), having.format(d=old, kind=kind),
               f"should I get a {new} or wait for the next one?")
    assert holding(now, old.split()[0]), now
    assert not holding(now, new.split()[0]), now


# --- a group the user is in ends -------------------------------------------------------------

GROUP_FIRST = ["our {g} is called the Gutter Crows and we're sitting in 2nd",
               "my {g} plays every tuesday at the rec center"]
GROUP_ENDED = ["the venue closed for good so our {g} just... dissolved",
               "our {g} folded last month", "the {g} disbanded, no one renewed"]


@pytest.mark.parametrize("group,first,ended", list(itertools.product(
    ["league", "team"], GROUP_FIRST, GROUP_ENDED)))
def test_a_group_that_dissolved_retires_what_was_said_of_it(client, tenant, group, first,
                                                             ended):
    """Given a statement about the user's league or team, When the user says it dissolved,
    folded or disbanded (a pause of dots included), Then that statement is no longer active
    and the end is; the control, the other group ending, keeps it."""
    now = tell(client, tenant.headers, _path(), first.format(g=group), ended.format(g=group))
    assert not holding(now, "tuesday") and not holding(now, "2nd"), now
    assert holding(now, group), now
    other = "team" if group == "league" else "league"
    now = tell(client, tenant.headers, _path(), first.format(g=group), ended.format(g=other))
    assert holding(now, "tuesday") or holding(now, "2nd"), now


# --- the user's work, said aside or as what became full-time ----------------------------------

ROLES = [("barista", "Blue Bottle"), ("line cook", "Marlowe"), ("nurse", "Mercy General")]
ASIDE = ["opening shift in 30 min ({r} at {o}), give me a quick stretch",
         "long day at work ({r} at {o}) and my feet are done",
         "double shift done (as a {r} at {o}), my feet are toast lol"]
FULL_TIME = ["the {x} business is my full-time thing now", "{x} is officially my day job now",
             "my {x} side gig is my full-time job now"]


@pytest.mark.parametrize("role,aside,later", list(itertools.product(ROLES, ASIDE, FULL_TIME)))
def test_a_role_said_aside_is_the_users_job_until_another_becomes_full_time(
        client, tenant, role, aside, later):
    """Given the user's role said in parentheses inside another statement, When the user
    later says something else is now their full-time work, Then the new work is active and
    the old role is not; the control, the same aside after someone named ("my friend Tom
    (nurse at ...)"), is Tom's and is not the user's job."""
    r, o = role
    path = _path()
    now = tell(client, tenant.headers, path, aside.format(r=r, o=o))
    assert holding(now, r.split()[-1]), now
    now = tell(client, tenant.headers, path, later.format(x="photography"))
    assert holding(now, "photography"), now
    assert not holding(now, r.split()[-1]), now
    now = tell(client, tenant.headers, _path(), f"my friend Tom ({r} at {o}) says hi")
    assert not any(c.startswith("The user's job") for c in now), now


# --- a recurring time given over to something new ends what the user did then ----------------

ROUTINES = ["I volunteer at the animal shelter every {day} morning, mostly walking dogs",
            "I do pottery at the community studio every {day}"]
TAKEN = ["had to step back from it, my {day}s are fully eaten by coaching my son's team now",
         "my {day}s are taken up by the new baby these days",
         "honestly my {day}s have been swallowed by grad school"]


@pytest.mark.parametrize("day,routine,taken", list(itertools.product(
    ["saturday", "sunday", "wednesday"], ROUTINES, TAKEN))[::2])
def test_a_day_given_over_to_something_new_ends_what_was_done_then(client, tenant, day,
                                                                   routine, taken):
    """Given what the user does every <day>, When they say their <day>s are now eaten or
    taken up by something else, Then the routine is no longer active and the new use of the
    day is; the control, another day given over, keeps the routine."""
    now = tell(client, tenant.headers, _path(), routine.format(day=day), taken.format(day=day))
    assert not [c for c in holding(now, day) if "every" in c], now
    assert holding(now, f"{day}s"), now
    other = "monday" if day != "monday" else "friday"
    now = tell(client, tenant.headers, _path(), routine.format(day=day),
               taken.format(day=other))
    assert [c for c in holding(now, day) if "every" in c], now


# --- an end beside a test result keeps the result --------------------------------------------

RESULTS = ["A1C came back 5.4!!!", "my LDL came back at 210", "bloodwork came back normal",
           "TSH levels came back high"]
MED_ENDS = ["my doctor said I'm done with {m}", "they took me off {m}", "I quit {m} last week"]


@pytest.mark.parametrize("result,ended", list(itertools.product(RESULTS, MED_ENDS)))
def test_a_test_result_said_without_its_owner_is_the_users(client, tenant, result, ended):
    """Given the user takes a medication, When a test result is told without "my" beside the
    medication's end, Then the result is kept as the user's and the medication is no longer
    taken; the control, something else that "came back", is not stored."""
    word = result.split()[0] if result.split()[0] != "my" else result.split()[1]
    now = tell(client, tenant.headers, _path(), "I take metformin with breakfast",
               f"{result.rstrip('!')}. {ended.format(m='metformin')}")
    assert [c for c in holding(now, word) if "user" in c], now
    assert not [c for c in holding(now, "metformin") if "breakfast" in c], now
    now = tell(client, tenant.headers, _path(), "the package came back 2 days late")
    assert not holding(now, "package"), now


# --- parting with a thing ends it -------------------------------------------------------------

THINGS = ["kayak", "Kindle", "Vespa"]
HAD = ["I have a {t} I take out most weekends", "I keep my {t} in the garage"]
PARTED = ["donated my {t} last week", "gave away my old {t}", "the old {t} went to my nephew",
          "RIP to my {t}, it took a swim in the lake", "replaced my {t} with a newer one"]


@pytest.mark.parametrize("thing,had,parted", list(itertools.product(THINGS, HAD, PARTED))[::2])
def test_parting_with_a_thing_retires_it(client, tenant, thing, had, parted):
    """Given a thing the user has, When they donate it, give it away, hand it on, mourn it or
    replace it, Then what said they have it is no longer active and the end is; the
    control, parting with another thing, keeps it."""
    now = tell(client, tenant.headers, _path(), had.format(t=thing), parted.format(t=thing))
    assert not [c for c in holding(now, thing) if re.search(r"weekends|garage", c)], now
    assert holding(now, thing), now
    other = "canoe" if thing != "canoe" else "bike"
    now = tell(client, tenant.headers, _path(), had.format(t=thing), parted.format(t=other))
    assert [c for c in holding(now, thing) if re.search(r"weekends|garage", c)], now
