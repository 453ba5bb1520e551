"""People and the past, told in passing (issue 35), through POST /v1/ingest with the rule
extractor on a real database, on generated phrasings:

- a habit or role tied to a time of one's life ("I used to be a X in my 20s") is kept as
  history and retires nothing current; a bare "I used to X" (most often the old side of a
  change) is still not stored;
- an announcer set off by punctuation ("plot twist, ...", "funny, ...", "gossip time: ...")
  does not hide the statement after it, and does not stay in it;
- a manager brought in by name ("my new manager is some guy called X, seems chill") keys
  the manager, superseding the one before; a manager who left ("my manager Y left for Z")
  is no longer the manager, while a partner who "left for a conference" still is.

Names, roles and places are invented words, so nothing but the mechanism can put them in a
memory.
"""

from __future__ import annotations

import re
from datetime import timedelta

from hypothesis import assume, given
from hypothesis import strategies as st

from talk import (
    active as _active, CASES, fresh_path as _path, has_word as _word, ingest as _ingest, NAME,
    T0, WORD,
)

LATER = T0 + timedelta(days=60)


@given(role=WORD, now=WORD, stage=st.sampled_from(["in my 20s", "in college", "in high school",
                                                  "as a kid", "in my twenties"]),
       said=st.sampled_from(["I used to be a {role} {stage}", "i used to work as a {role} {stage}",
                             "funny, I used to be a {role} {stage} lol"]))
@CASES
def test_a_past_role_of_a_time_of_life_is_history_beside_the_current_one(
        client, tenant, role, now, stage, said):
    assume(role != now)
    # Given a current role
    h, path = tenant.headers, _path()
    _ingest(client, h, path, f"I'm a {now} at a school downtown.")
    # When a role of a time of one's life is told later
    _ingest(client, h, path, said.format(role=role, stage=stage), LATER)
    # Then both are kept: the past one as history, the current one untouched
    active = _active(client, h, path)
    assert any(_word(c, role) for c in active), active
    assert any(_word(c, now) for c in active), active
    # Control: a bare "used to" with no time of life is not stored
    path = _path()
    _ingest(client, h, path, f"I used to be a {role}. I live in {now.capitalize()}.")
    active = _active(client, h, path)
    assert not any(_word(c, role) for c in active), active
    assert any(_word(c, now) for c in active), active


@given(name=NAME, place=NAME,
       lead=st.sampled_from(["plot twist,", "Plot twist:", "funny,", "gossip time:",
                             "heads up,", "funny enough,"]))
@CASES
def test_an_announcer_does_not_hide_the_statement_after_it(client, tenant, name, place, lead):
    # When a statement follows an announcer set off by punctuation
    h, path = tenant.headers, _path()
    _ingest(client, h, path, f"{lead} my sister {name} moved to {place} last month")
    # Then the statement is kept, without the announcer
    active = _active(client, h, path)
    holding = [c for c in active if _word(c, place)]
    assert holding, active
    announcer = lead.strip(",:").lower()
    assert not any(c.lower().startswith(announcer) for c in holding), holding
    # Control: the announcer alone is nothing to keep
    path = _path()
    _ingest(client, h, path, f"{lead.strip(',:')}!")
    assert _active(client, h, path) == []


@given(old=NAME, new=NAME,
       introduced=st.sampled_from(["some guy called {n}", "a woman named {n}",
                                   "this guy called {n}, seems chill so far",
                                   "{n}, seems nice", "some dude named {n}, sounds strict"]),
       holder=st.sampled_from(["manager", "boss", "supervisor"]))
@CASES
def test_a_new_manager_introduced_by_name_supersedes_the_old(
        client, tenant, old, new, introduced, holder):
    # Given a manager
    h, path = tenant.headers, _path()
    _ingest(client, h, path, f"My {holder} is {old}.")
    assume(old != new)
    # When a new one is brought in with "some guy called X" and a remark
    _ingest(client, h, path, f"my new {holder} is {introduced.format(n=new)}", LATER)
    # Then the new manager is kept and the old one is no longer the manager
    active = _active(client, h, path)
    assert any(_word(c, new) for c in active), active
    assert not any(_word(c, old) for c in active), active


@given(name=NAME, org=NAME,
       gone=st.sampled_from(["left for {o}", "just quit", "retired last month",
                             "got laid off", "moved on to {o}"]))
@CASES
def test_a_manager_who_left_is_no_longer_the_manager(client, tenant, name, org, gone):
    # Given a manager
    h, path = tenant.headers, _path()
    _ingest(client, h, path, f"My manager is {name}.")
    # When that manager is said to have left
    _ingest(client, h, path, f"my manager {name} {gone.format(o=org)}", LATER)
    # Then the first memory is retired and the departure is what names them
    active = _active(client, h, path)
    assert not any(re.search(rf"manager is {name}", c) for c in active), active
    assert any(_word(c, name) for c in active), active
    # Control: a partner who "left for" a trip is still the partner
    path = _path()
    _ingest(client, h, path, f"My husband is {name}.")
    _ingest(client, h, path, f"my husband {name} left for a conference in {org}", LATER)
    active = _active(client, h, path)
    assert any(re.search(rf"husband is {name}", c) for c in active), active


@given(name=NAME, place=NAME, holder=st.sampled_from(["wife", "husband", "boss", "girlfriend"]),
       rest=st.sampled_from(["are celebrating 10 years in june", "are flying to {p} in May",
                             "just got back from {p}"]))
@CASES
def test_a_person_named_beside_the_speaker_as_a_subject_is_kept(
        client, tenant, name, place, holder, rest):
    # When "my wife X and I ..." opens a sentence
    h, path = tenant.headers, _path()
    _ingest(client, h, path, f"my {holder} {name} and i {rest.format(p=place)}")
    # Then who X is to the user is kept
    active = _active(client, h, path)
    assert any(re.search(rf"{holder} is {name}", c) for c in active), active
    # Control: with no name there is no one to keep
    path = _path()
    _ingest(client, h, path, f"my {holder} and i {rest.format(p=place)}")
    assert not any(re.search(rf"{holder} is\b", c) for c in _active(client, h, path))
