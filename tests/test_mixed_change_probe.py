"""Long messages and changes told indirectly (issue 35), through POST /v1/ingest with the rule
extractor on a real database, on generated phrasings:

- a heading before what happened ("work stuff: got promoted ...") is no reason to drop it;
- how many people are on the speaker's team is one number, a later one supersedes it;
- moving to a flat, an apartment or a house "in X" is moving to X;
- a role "based in X" says where the person lives too, and the role's statement keeps no copy
  of the place, so a later move leaves nothing behind;
- "starting monday as a receptionist" after a job given up is the new occupation;
- "switched to X, no more Y" ends Y: what said Y was still so retires;
- in a list of what changed, "new GP Dr X" is something the speaker now has, and "need to X"
  is theirs.

Each case has a control that must come out differently. Names and places are invented words,
so nothing but the mechanism can put them in a memory.
"""

from __future__ import annotations

import re
from datetime import timedelta

from hypothesis import given
from hypothesis import strategies as st

from talk import (
    active as _active, CASES, fresh_path as _path, has_word as _word, ingest as _ingest, NAME,
    T0,
)

LATER = T0 + timedelta(days=90)


def _holding(stored: list[str], *words: str) -> list[str]:
    return [c for c in stored if all(_word(c, w) for w in words)]


@given(heading=st.sampled_from(["work stuff", "job news", "quick update", "big news"]),
       verb=st.sampled_from(["got promoted to", "just got promoted to", "finally got made"]),
       role=st.sampled_from(["team lead", "senior engineer", "head chef", "charge nurse"]))
@CASES
def test_a_heading_before_what_happened_keeps_it(client, tenant, heading, verb, role):
    """Given "work stuff: got promoted to team lead", when ingested, then the new role is
    kept; control: the heading before a question keeps nothing of the role."""
    h = tenant.headers
    if verb == "finally got made":
        verb = "finally got promoted to"
    path = _path()
    _ingest(client, h, path, f"{heading}: {verb} {role} 🎉")
    assert _holding(_active(client, h, path), *role.split()), (heading, verb, role)

    path = _path()
    _ingest(client, h, path, f"{heading}: should I ask to be promoted to {role}?")
    assert not _holding(_active(client, h, path), *role.split())


@given(before=st.sampled_from(["I'm on a team of {n}", "im a backend dev, on a team of {n}",
                               "I lead a team of {n}", "my team is {n} people"]),
       after=st.sampled_from(["my team is {n} people now", "our team grew to {n} engineers",
                              "my team's {n} strong now", "my team is up to {n} now"]),
       sizes=st.sampled_from([(4, 6), (3, 9), (5, 12), (8, 2)]))
@CASES
def test_a_later_team_size_supersedes_the_earlier(client, tenant, before, after, sizes):
    """Given a team of N, when a later message gives another size, then only it is active;
    control: "my team is 2 weeks behind" is no size and retires nothing."""
    h = tenant.headers
    old, new = sizes
    path = _path()
    _ingest(client, h, path, before.format(n=old))
    assert _holding(_active(client, h, path), str(old)), before
    _ingest(client, h, path, after.format(n=new), LATER)
    stored = _active(client, h, path)
    assert _holding(stored, str(new)) and _holding(stored, "team"), (after, stored)
    assert not _holding(stored, str(old)), (before, after, stored)

    path = _path()
    _ingest(client, h, path, before.format(n=old))
    _ingest(client, h, path, "my team is 2 weeks behind on the release", LATER)
    assert _holding(_active(client, h, path), str(old))


@given(old=NAME, new=NAME, home=st.sampled_from(["a flat", "an apartment", "a tiny house",
                                                  "a studio"]),
       verb=st.sampled_from(["moved to", "just moved to", "we finally moved into"]),
       role=st.sampled_from(["UX designer", "nurse", "data analyst", "chef"]),
       was=st.sampled_from(["based in", "living in"]))
@CASES
def test_a_role_based_somewhere_and_a_move_to_a_home_there(client, tenant, old, new, home,
                                                           verb, role, was):
    """Given "I'm a nurse based in X", when "moved to a flat in Y" follows, then Y is where the
    user lives, X is in no active memory and the role is still kept; control: moving a thing
    to a place ("moved my desk to ...") leaves X."""
    h = tenant.headers
    if old == new:
        new = new + "ia"
    path = _path()
    _ingest(client, h, path, f"hey, I'm a {role} {was} {old}, mostly freelance")
    assert _holding(_active(client, h, path), old)
    _ingest(client, h, path, f"big update: {verb} {home} in {new}, love it", LATER)
    stored = _active(client, h, path)
    assert _holding(stored, new), stored
    assert not _holding(stored, old), stored
    assert _holding(stored, *role.split()), stored

    path = _path()
    _ingest(client, h, path, f"hey, I'm a {role} {was} {old}, mostly freelance")
    _ingest(client, h, path, "moved my desk to a corner by the window", LATER)
    assert _holding(_active(client, h, path), old)


@given(end=st.sampled_from(["handed in my badge on friday", "turned in my notice",
                            "said goodbye to the ward"]),
       when=st.sampled_from(["monday", "next week", "on the 3rd"]),
       old=st.sampled_from(["nurse", "paramedic", "teacher"]),
       new=st.sampled_from(["receptionist", "barista", "paralegal", "bookkeeper"]),
       where=NAME)
@CASES
def test_starting_as_a_role_is_the_new_occupation(client, tenant, end, when, old, new, where):
    """Given "I'm a nurse", when "..., starting monday as a receptionist at X" follows, then
    the receptionist is kept and the nurse is no longer active; control: "starting monday as
    a joke" names no role and the nurse stays."""
    h = tenant.headers
    path = _path()
    _ingest(client, h, path, f"I'm a {old} and I can barely think")
    _ingest(client, h, path, f"{end} 🥲 starting {when} as a {new} at {where}", LATER)
    stored = _active(client, h, path)
    assert _holding(stored, new), stored
    assert not _holding(stored, old), stored

    path = _path()
    _ingest(client, h, path, f"I'm a {old} and I can barely think")
    _ingest(client, h, path, f"starting {when} as a joke, I'll only text in emoji", LATER)
    assert _holding(_active(client, h, path), old)


@given(habit=st.sampled_from(["espressos", "energy drinks", "cigarettes", "sodas"]),
       n=st.integers(2, 9),
       switch=st.sampled_from(["i switched to matcha completely", "swapped to herbal tea",
                               "i'm on green tea now"]),
       tail=st.sampled_from(["", " 🍵 can u suggest snacks", " lol"]))
@CASES
def test_no_more_after_a_change_ends_what_it_names(client, tenant, habit, n, switch, tail):
    """Given "I have N X a day", when "switched to Y, no more X" follows, then nothing active
    says the N X; control: "no more for me" names nothing and the habit stays."""
    h = tenant.headers
    path = _path()
    _ingest(client, h, path, f"i have like {n} {habit} a day")
    assert _holding(_active(client, h, path), habit.split()[-1])
    _ingest(client, h, path, f"{switch}, no more {habit}{tail}", LATER)
    stored = _active(client, h, path)
    assert not [c for c in _holding(stored, habit.split()[-1]) if _word(c, str(n))], stored

    path = _path()
    _ingest(client, h, path, f"i have like {n} {habit} a day")
    _ingest(client, h, path, "no more for me, thanks", LATER)
    assert _holding(_active(client, h, path), str(n), habit.split()[-1])


@given(who=st.sampled_from(["GP", "dentist", "therapist", "physio"]), name=NAME,
       need=st.sampled_from(["need to cut sodium", "need to sleep more", "need to stretch daily"]),
       heading=st.sampled_from(["health stuff", "update", "life admin"]))
@CASES
def test_a_list_of_changes_keeps_a_new_someone_and_a_need(client, tenant, who, name, need,
                                                           heading):
    """Given "health stuff: new GP Dr X, need to Y, started Z", then Dr X and the need are
    kept; control: "new GP Dr X starts in May" is not read as something the user has."""
    h = tenant.headers
    path = _path()
    _ingest(client, h, path, f"{heading}: new {who} Dr {name}, {need}, started walking "
                             "after dinner")
    stored = _active(client, h, path)
    assert _holding(stored, name), stored
    assert _holding(stored, need.split()[-1]), stored
    assert _holding(stored, "walking"), stored

    path = _path()
    _ingest(client, h, path, f"new {who} Dr {name} starts in May")
    assert not [c for c in _active(client, h, path) if re.search(r"\bhas a new\b", c)]


@given(fact=st.sampled_from(["im allergic to {x}", "I'm allergic to {x}", "i can't eat {x}"]),
       ask=st.sampled_from(["so keep that in mind if i ever ask health stuff",
                            "so please remember that if I ask for recipes",
                            "so bear that in mind if we talk meds"]),
       x=NAME)
@CASES
def test_a_request_to_keep_a_fact_in_mind_does_not_make_it_hypothetical(client, tenant, fact,
                                                                        ask, x):
    """Given "I'm allergic to X so keep that in mind if I ever ask ...", then X is kept: the
    "if" belongs to the request, not the fact; control: the fact said inside the "if" is
    not kept."""
    h = tenant.headers
    path = _path()
    _ingest(client, h, path, f"{fact.format(x=x)} {ask}")
    assert _holding(_active(client, h, path), x)

    path = _path()
    _ingest(client, h, path, f"if {fact.format(x=x)}, {ask}")
    assert not _holding(_active(client, h, path), x)
