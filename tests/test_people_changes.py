"""People in the user's life changing over sessions (issue 35), through POST /v1/ingest with
the rule extractor on a real database:

- "he"/"she" continues the person the last sentence named first, a relation said as a name
  included ("Dad's party was great. he likes sailing"), never a place ("... in Reno. she's
  thrilled" is not about Reno);
- someone's room or home in a city is where they live ("grandma's room at Lou's place in
  Reno is ready"), and it supersedes where they lived;
- finishing a role's training or earning its credential ("graduated from her PA program",
  "passed the bar", "got his RN") is the role, superseding the one before;
- an age told with a home keeps the home once, as its own fact: a later move leaves no copy;
- a birth ends a pregnancy ("Ana had the baby", "Ana's little guy showed up"), and a name
  with a birth weight right after it ("Theo, 7lb 2oz") is that person's baby.

Names and places are invented words, so nothing but the mechanism can put them in a memory.
"""

from __future__ import annotations

from datetime import timedelta

from hypothesis import assume, given
from hypothesis import strategies as st

from talk import (
    active as _active, CASES, first_hit as _first, fresh_path as _path, has_word as _word,
    ingest as _ingest, NAME, T0,
)

KIN = st.sampled_from(["Dad", "Mom", "grandpa", "grandma"])


def _holding(contents: list[str], *words: str) -> list[str]:
    return [c for c in contents if all(_word(c, w) for w in words)]


@given(kin=KIN, place=NAME, host=NAME,
       then=st.sampled_from(["{p} is settling in", "{p} really likes the garden",
                             "{p} is thrilled"]))
@CASES
def test_he_or_she_continues_the_person_named_first_never_a_place(client, tenant, kin, place,
                                                                   host, then):
    """Given a sentence naming a person (a relation said as a name) and then a city, When the
    next sentence opens with "he"/"she", Then its memory is about the person, not the city;
    Control: with nobody named before it, the pronoun is not replaced by the city."""
    h = tenant.headers
    pronoun = "she" if kin in ("Mom", "grandma") else "he"
    told = then.format(p=pronoun)
    path = _path()
    _ingest(client, h, path, f"{kin}'s room at {host}'s place in {place} is all set up, we "
                             f"hauled the boxes over on saturday. {told}.")
    now = _active(client, h, path)
    rest = told.split(" ", 1)[1]
    assert _holding(now, kin, *rest.split()[-2:]), now
    assert not [c for c in now if c.lower().startswith(place.lower() + " ")], now
    # Control: the city alone before the pronoun stands for no one.
    path = _path()
    _ingest(client, h, path, f"the boxes went over to a storage unit in {place} on saturday. "
                             f"{told}.")
    assert not [c for c in _active(client, h, path)
                if c.lower().startswith(place.lower() + " ")]


@given(kin=st.sampled_from(["Dad", "Mom", "Grandpa"]), hobby=NAME)
@CASES
def test_a_relation_said_as_a_name_is_who_he_or_she_is(client, tenant, kin, hobby):
    """Given "Dad's party was last night", When "he likes X" follows, Then the memory says
    Dad likes X; Control: "her dad" is someone else's, not the one the user calls Dad."""
    h = tenant.headers
    pronoun = "she" if kin == "Mom" else "he"
    path = _path()
    _ingest(client, h, path, f"{kin}'s birthday dinner was last night and it went great. "
                             f"{pronoun} likes {hobby.lower()} and old cars. ideas?")
    assert _holding(_active(client, h, path), kin, hobby), _active(client, h, path)
    # Control: "her dad" is someone else's: nobody the user calls Dad likes X.
    path = _path()
    _ingest(client, h, path, f"her {kin.lower()}'s birthday dinner was last night and it went "
                             f"great. {pronoun} likes {hobby.lower()} and old cars. ideas?")
    assert not [c for c in _active(client, h, path) if c.lower().startswith(kin.lower())]


@given(kin=st.sampled_from(["grandpa", "my grandma", "my sister", "Dad"]), old=NAME, new=NAME,
       host=NAME, home=st.sampled_from(["room at {h}'s place", "new apartment",
                                        "room at {h}'s house", "place"]))
@CASES
def test_someones_room_or_home_in_a_city_is_where_they_live(client, tenant, kin, old, new,
                                                            host, home):
    """Given where someone lives, When their room or home is said to be in another city,
    Then the old city is no longer active and the new one answers where they live;
    Control: the same person's other fact (their age) stays."""
    assume(old != new)
    h = tenant.headers
    path = _path()
    who = kin if kin.startswith("my") else f"my {kin.lower()}"
    _ingest(client, h, path, f"{who} lives in {old}")
    _ingest(client, h, path, f"{who} is 81")
    owner = kin[0].upper() + kin[1:]
    _ingest(client, h, path, f"{owner}'s {home.format(h=host)} in {new} is all set up",
            T0 + timedelta(days=60))
    now = _active(client, h, path)
    assert not _holding(now, old), now
    assert _holding(now, new), now
    assert _holding(now, "81"), now
    relation = kin.split()[-1].lower()
    assert _word(_first(client, h, path, f"where does the user's {relation} live"), new)


ROLES = st.sampled_from([
    ("graduated from {their} PA program", "PA"),
    ("finished nursing school", "nurse"),
    ("passed the bar", "lawyer"),
    ("got {their} RN", "RN"),
    ("finally finished {their} CPA program", "CPA"),
])


@given(name=NAME, role=ROLES, she=st.booleans(),
       before=st.sampled_from(["works as a barista", "is a paralegal", "works as a teller"]))
@CASES
def test_finishing_a_roles_training_is_the_role(client, tenant, name, role, she, before):
    """Given someone's job, When they finish the training or earn the credential of another,
    Then the old job is no longer active and the new role answers their job;
    Control: the same event of someone else leaves this person's job as it was."""
    h = tenant.headers
    said, word = role
    their = "her" if she else "his"
    old = before.split()[-1]
    event = said.format(their=their)
    path = _path()
    _ingest(client, h, path, f"my friend {name} {before}")
    _ingest(client, h, path, f"{name} {event}!!! so proud", T0 + timedelta(days=90))
    now = _active(client, h, path)
    assert not _holding(now, name, old), now
    assert _word(_first(client, h, path, f"what is {name}'s profession"), word)
    # Control: another person's training changes nothing of this one's.
    path = _path()
    _ingest(client, h, path, f"my friend {name} {before}")
    _ingest(client, h, path, f"my cousin Rafa {event}", T0 + timedelta(days=90))
    assert _holding(_active(client, h, path), name, old)


@given(kin=st.sampled_from(["grandpa", "dad", "aunt"]), old=NAME, new=NAME,
       age=st.integers(70, 95))
@CASES
def test_an_age_told_with_a_home_leaves_no_copy_of_the_home_after_a_move(client, tenant, kin,
                                                                         old, new, age):
    """Given "my X is 88, still living alone in A, and ...", When X moves to B, Then no
    active memory holds A; Control: the age and the rest of the clause stay."""
    assume(old != new)
    h = tenant.headers
    path = _path()
    _ingest(client, h, path, f"worried about my {kin}. my {kin}'s {age}, still "
                             f"living alone in {old}, and won't use a cane")
    now = _active(client, h, path)
    assert _holding(now, old), now
    _ingest(client, h, path, f"my {kin} moved to {new}", T0 + timedelta(days=60))
    now = _active(client, h, path)
    assert not _holding(now, old), now
    assert _holding(now, str(age), "cane"), now


PREGNANT = st.sampled_from(["my friend {n} is pregnant with her first, due in the spring",
                            "my friend {n} is expecting her second", "{n} is pregnant!!"])
BIRTH = st.sampled_from(["{n} had the baby! {b}, {w}, both doing great",
                         "{n} gave birth last night!! {b}, {w}",
                         "{n}'s little guy showed up two weeks early! {b}, {w}, all good",
                         "{n}'s baby girl finally arrived, {b}, {w}",
                         "{n} had a healthy baby boy! {b}, {w}",
                         "{n} and her husband welcomed a baby girl, {b}",
                         "{n} had twins last week, a boy named {b} and a girl"])


@given(name=NAME, baby=NAME, pregnant=PREGNANT, birth=BIRTH,
       weight=st.sampled_from(["6lb 9oz", "7 lbs", "3.2 kg"]))
@CASES
def test_a_birth_ends_the_pregnancy_and_names_the_baby(client, tenant, name, baby, pregnant,
                                                       birth, weight):
    """Given a friend is pregnant, When the birth is told with the baby's name (after it with
    its weight, or in the same clause), Then no active memory says the friend is pregnant,
    and the baby's name answers what the friend's baby is called; Control: a name and weight with no birth before them
    is nobody's baby, and the pregnancy of someone else stays."""
    assume(name != baby)
    h = tenant.headers
    path = _path()
    _ingest(client, h, path, pregnant.format(n=name))
    _ingest(client, h, path, "my cousin Rafa is pregnant too")
    assert _holding(_active(client, h, path), name), _active(client, h, path)
    _ingest(client, h, path, birth.format(n=name, b=baby, w=weight) + ". what do I bring?",
            T0 + timedelta(days=90))
    now = _active(client, h, path)
    assert not _holding(now, name, "pregnant") and not _holding(now, name, "expecting"), now
    assert _holding(now, "Rafa", "pregnant"), now
    assert _word(_first(client, h, path, f"what is the name of {name}'s baby"), baby)
    # Control: no birth told before it, the name and weight are no one's baby.
    path = _path()
    _ingest(client, h, path, f"I had lunch with {name} today. {baby}, {weight} bag of flour")
    assert not _holding(_active(client, h, path), name, baby)


SCHOOL_WORDS = st.sampled_from(["Middle", "Elementary", "High", "Academy"])
FIRST = st.sampled_from(["{w} got through {their} first week at {s}",
                         "{w}'s first day at {s} went great",
                         "{w} loved {their} first week at {s}"])


@given(kid=NAME, old=NAME, new=NAME, kind=SCHOOL_WORDS, first=FIRST, son=st.booleans())
@CASES
def test_a_first_week_at_a_school_is_the_school_and_with_a_role_the_work(
        client, tenant, kid, old, new, kind, first, son):
    """Given a child's school, When their first week at another school is told, Then the old
    school is no longer active and the new one answers where they go; Control: a first week
    there *as* a role (a teacher's) is where that person works, and the school stays."""
    assume(old != new)
    h = tenant.headers
    their = "his" if son else "her"
    path = _path()
    _ingest(client, h, path, f"{kid} goes to {old} {kind}")
    _ingest(client, h, path, first.format(w=kid, their=their, s=f"{new} {kind}"),
            T0 + timedelta(days=200))
    now = _active(client, h, path)
    assert not _holding(now, old), now
    assert _word(_first(client, h, path, f"which school does {kid} attend"), new)
    path = _path()
    _ingest(client, h, path, f"{kid} goes to {old} {kind}")
    _ingest(client, h, path, f"{kid} got through {their} first week as a teacher at {new} {kind}",
            T0 + timedelta(days=200))
    assert _holding(_active(client, h, path), old)


@given(kid=NAME, age=st.integers(3, 16),
       said=st.sampled_from(["it was {k}'s {n} birthday yesterday", "{k}'s {n} birthday party "
                             "was a blast", "my son {k}'s {n} birthday is next week"]))
@CASES
def test_an_ordinal_birthday_anywhere_in_the_clause_is_the_age(client, tenant, kid, age, said):
    """Given a child's age, When their Nth birthday is mentioned, Then the new age answers how
    old they are and the old one is no longer active; Control: the user's own Nth birthday
    leaves the child's age as it was."""
    h = tenant.headers
    suffix = {1: "st", 2: "nd", 3: "rd"}.get(age % 10, "th") if not 10 <= age <= 20 else "th"
    nth = f"{age}{suffix}"
    path = _path()
    _ingest(client, h, path, f"{kid} is {age - 1}")
    _ingest(client, h, path, said.format(k=kid, n=nth), T0 + timedelta(days=365))
    now = _active(client, h, path)
    assert not _holding(now, kid, str(age - 1)), now
    assert _word(_first(client, h, path, f"how old is {kid}"), str(age))
    path = _path()
    _ingest(client, h, path, f"{kid} is {age - 1}")
    _ingest(client, h, path, f"my {nth} birthday was a blast", T0 + timedelta(days=365))
    assert _holding(_active(client, h, path), kid, str(age - 1))


@given(kin=st.sampled_from(["mom", "dad", "grandpa", "sister"]), host=st.sampled_from(
    ["my aunt", "his brother", "her daughter", "a friend"]), old=NAME, new=NAME,
       form=st.sampled_from(["{w} is living with {h} in {p} now", "{w} lives with {h} in {p}"]))
@CASES
def test_living_with_someone_in_a_city_is_where_one_lives(client, tenant, kin, host, old, new,
                                                          form):
    """Given where someone lives, When they are said to live with someone in another city,
    Then that city supersedes the old; Control: a visit with someone there does not."""
    assume(old != new)
    h = tenant.headers
    path = _path()
    _ingest(client, h, path, f"my {kin} lives in {old}")
    _ingest(client, h, path, form.format(w=f"my {kin}", h=host, p=new), T0 + timedelta(days=60))
    now = _active(client, h, path)
    assert not _holding(now, old) and _holding(now, new), now
    path = _path()
    _ingest(client, h, path, f"my {kin} lives in {old}")
    _ingest(client, h, path, f"my {kin} is visiting {host} in {new} this week",
            T0 + timedelta(days=60))
    assert _holding(_active(client, h, path), old)
