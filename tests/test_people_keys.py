"""A key for any attribute, of anyone (issue 35): statements about where someone lives, works
or studies, what they do, how old they are, whether they are engaged or married, and the
phone or car they have -- of the user or of a person in their life, named or by relation --
are keyed ``user.<attribute>`` / ``person.<who>.<attribute>`` from the statement's shape.

Phrasings are generated: subjects (the user, a name, a relation with a name, a relation
alone, in its other spellings) crossed with attributes, values and the several shapes of
each (plain, copular both ways, events that imply the state). The extractor is checked
directly (hypothesis), and end to end through POST /v1/ingest on a real database: a later
value of one person's attribute supersedes the earlier one; another attribute of the same
person, and the same attribute of another person, stay active (the controls); a past state
told later retires nothing; and a search for the attribute ranks the new value first.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from strata.ingest.rules import extract_message, read_message
from strata.ingest.rules.person import speaker_slot
from strata.write import slots

NOW = datetime(2026, 5, 13, 15, 0, tzinfo=UTC)


@dataclass(frozen=True)
class Who:
    """One person, as first introduced and as mentioned later, with the verb forms that
    agree with them."""

    first: str
    later: str
    key: str          # the key prefix: "user" or "person.<who>"
    be: str
    was: str
    have: str
    s: str            # the present-tense ending: "" for I, "s" for anyone else
    their: str
    name: str         # how the content names them

    def has(self, attribute: str) -> str:
        return f"{self.key}.{attribute}"


ME = Who("I", "I", "user", "am", "was", "have", "", "my", "user")
PEOPLE = [
    Who("my sister Dana", "Dana", "person.dana", "is", "was", "has", "s", "her", "Dana"),
    Who("Marcus", "Marcus", "person.marcus", "is", "was", "has", "s", "his", "Marcus"),
    Who("my brother Theo", "my brother Theo", "person.theo", "is", "was", "has", "s", "his",
        "Theo"),
    Who("my dad", "Dad", "person.father", "is", "was", "has", "s", "his", "dad"),
    Who("my father", "my dad", "person.father", "is", "was", "has", "s", "his", "father|dad"),
    Who("my mom", "Mom", "person.mother", "is", "was", "has", "s", "her", "mom"),
    Who("my friend Ines", "Ines", "person.ines", "is", "was", "has", "s", "her", "Ines"),
]
CHILDREN = [
    Who("my son Leo", "Leo", "person.leo", "is", "was", "has", "s", "his", "Leo"),
    Who("my daughter Mia", "Mia", "person.mia", "is", "was", "has", "s", "her", "Mia"),
    Who("Noor", "Noor", "person.noor", "is", "was", "has", "s", "her", "Noor"),
]
EVERYONE = [ME, *PEOPLE]

CITIES = ["Portland", "Boise", "Austin", "Denver", "Lisbon", "Nashville", "Tucson", "Phoenix"]
ORGS = ["Stripe", "Figma", "Shopify", "Deloitte", "Westbrook", "Humana", "Marlowe"]
ROLES = ["nurse", "teacher", "senior engineer", "sous chef", "vice principal", "product manager",
         "accountant", "pharmacist"]
SCHOOLS = ["Maple Grove Elementary", "Hillcrest Middle School", "Oak Park Elementary",
           "Lincoln High School"]


def v(who: Who, verb: str) -> str:
    """``verb`` agreeing with ``who``: live/lives, go/goes."""
    if not who.s:
        return verb
    return verb + ("es" if verb.endswith(("o", "sh", "ch")) else "s")


# Each attribute: a plain first statement and the later shapes that change it.
def plain_location(w: Who, x: str) -> str:
    return f"{w.first} {v(w, 'live')} in {x}"


LOCATION_LATER = [
    lambda w, x: f"{w.later} moved to {x} last month",
    lambda w, x: f"{w.later} {w.have} relocated to {x}",
    lambda w, x: f"so {w.later} {w.be} officially a {x} resident now",
    lambda w, x: f"{w.later} finally closed on a house in {x}!!",
    lambda w, x: f"{w.later} {v(w, 'live')} in {x} now",
]


def plain_employer(w: Who, x: str) -> str:
    return f"{w.first} {v(w, 'work')} at {x}"


EMPLOYER_LATER = [
    lambda w, x: f"{w.later} just started at {x}",
    lambda w, x: f"{w.later} survived {w.their} first week at {x}",
    lambda w, x: f"{w.later} {v(w, 'work')} at {x} now",
    lambda w, x: f"{w.later} got a job at {x}",
    lambda w, x: f"{w.later} {w.was} hired by {x} in march",
    lambda w, x: f"{x} is where {w.later} {v(w, 'work')} now",
]


def plain_role(w: Who, x: str) -> str:
    return f"{w.first} {w.be} {'an' if x[0] in 'aeiou' else 'a'} {x}"


ROLE_LATER = [
    lambda w, x: f"{w.later} got promoted to {x}",
    lambda w, x: f"{w.later} {w.was} bumped up to {x} last week",
    lambda w, x: f"{w.later} became {'an' if x[0] in 'aeiou' else 'a'} {x}",
    lambda w, x: f"{w.later} landed a new role as {'an' if x[0] in 'aeiou' else 'a'} {x}",
    lambda w, x: f"{w.later} {w.be} working as {'an' if x[0] in 'aeiou' else 'a'} {x}",
]


def key_of(text: str, at: datetime = NOW) -> list[tuple[str | None, str | None]]:
    return [(c.slot, c.value) for c in extract_message(text, at)]


# -- the extractor ----------------------------------------------------------------------------


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(who=st.sampled_from(EVERYONE), first=st.sampled_from(CITIES),
       later=st.sampled_from(LOCATION_LATER), second=st.sampled_from(CITIES))
def test_where_someone_lives_is_one_key_in_every_shape(who, first, later, second):
    """Given a person said to live in one city, then in another in any of the shapes,
    Then both statements carry that person's location key, each with its own city."""
    assert (who.has("location"), first.lower()) in key_of(plain_location(who, first))
    assert (who.has("location"), second.lower()) in key_of(later(who, second))


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(who=st.sampled_from(EVERYONE), first=st.sampled_from(ORGS),
       later=st.sampled_from(EMPLOYER_LATER), second=st.sampled_from(ORGS))
def test_where_someone_works_is_one_key_in_every_shape(who, first, later, second):
    assert (who.has("employer"), first.lower()) in key_of(plain_employer(who, first))
    assert (who.has("employer"), second.lower()) in key_of(later(who, second))


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(who=st.sampled_from(EVERYONE), first=st.sampled_from(ROLES),
       later=st.sampled_from(ROLE_LATER), second=st.sampled_from(ROLES))
def test_what_someone_does_is_one_key_in_every_shape(who, first, later, second):
    assert (who.has("occupation"), first) in key_of(plain_role(who, first))
    assert (who.has("occupation"), second) in key_of(later(who, second))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(who=st.sampled_from(CHILDREN + PEOPLE[:3]), first=st.integers(2, 17),
       step=st.integers(1, 3),
       later=st.sampled_from([
           lambda w, n: f"{w.later} turned {n} yesterday",
           lambda w, n: f"{w.later} blew out {n} candles on saturday",
           lambda w, n: f"{w.later} {w.be} {n} now",
           lambda w, n: f"{w.later} had {w.their} {n}th birthday party",
       ]))
def test_an_age_is_one_key_however_it_is_told(who, first, step, later):
    words = ["", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten"]
    said = words[first] if first < len(words) else str(first)
    assert (who.has("age"), str(first)) in key_of(f"{who.first} {who.be} {said} and loves trains")
    assert (who.has("age"), str(first + step)) in key_of(later(who, first + step))


@pytest.mark.parametrize("who", CHILDREN)
@pytest.mark.parametrize("shape", [
    "{first} goes to {school}",
    "{first}'s class at {school} is doing a volcano project",
    "{first} just started kindergarten at {school}",
    "{first} started 6th grade at {school} this week",
    "{first} is in 3rd grade at {school}",
    "{first} is a junior at {school}",
])
def test_a_childs_school(who, shape):
    school = SCHOOLS[len(who.first) % len(SCHOOLS)]
    got = key_of(shape.format(first=who.first if "{first}'s" not in shape else who.later,
                              school=school))
    assert (who.has("school"), school.lower()) in got


@pytest.mark.parametrize("who", PEOPLE)
@pytest.mark.parametrize("state,said", [
    ("engaged", "{w} and Jess got engaged!"),
    ("engaged", "{w} got engaged to Jess on NYE!!!"),
    ("married", "{w} got married in June"),
    ("married", "back from {w} & Jess's wedding in Tulum"),
    ("divorced", "{w} is divorced now"),
])
def test_relationship_states(who, state, said):
    subject = who.later if "wedding" in said else who.first
    assert (who.has("relationship_status"), state) in key_of(said.format(w=subject))


@pytest.mark.parametrize("major", ["biology", "computer science", "economics"])
@pytest.mark.parametrize("said,change", [
    ("I'm a {m} major at Austin Community College", False),
    ("I'm majoring in {m}", False),
    ("switched my major to {m}", True),
    ("I changed my major from art to {m} last semester", True),
])
def test_the_users_major(major, said, change):
    found = extract_message(said.format(m=major), NOW)
    assert any((c.slot, c.value, c.asserts_change) == ("user.major", major, change)
               for c in found), [(c.slot, c.value) for c in found]


@pytest.mark.parametrize("who", PEOPLE)
@pytest.mark.parametrize("city", ["Phoenix", "Tucson"])
def test_moving_in_with_someone_somewhere(who, city):
    assert (who.has("location"), city.lower()) in key_of(
        f"{who.later} moved in with my aunt in {city}")


@pytest.mark.parametrize("said", [
    "my wife is pregnant with our second", "my coworker Ben is moving to Denver",
    "my sister is thinking about Denver",
])
def test_a_person_is_not_an_attribute_of_the_users(said):
    """"my wife is ...": not a ``user.wife`` value (the control: a real attribute of the
    user's in the same shape is still keyed)."""
    assert not any(slot and slot.startswith("user.") for slot, _ in key_of(said))
    assert ("user.favorite_colour", "green") in key_of("my favorite color is green")


@pytest.mark.parametrize("owner,key", [("my", "user"), ("my sister's", "person.sister"),
                                       ("Dana's", "person.dana"), ("my son Leo's", "person.leo")])
@pytest.mark.parametrize("said,attribute,value", [
    ("{o} new job is at Stripe", "employer", "stripe"),
    ("{o} new place is in Boise", "location", "boise"),
    ("{o} school is Hillcrest Middle", "school", "hillcrest middle"),
    ("{o} title is VP of Sales now", "occupation", "vp of sales"),
    ("{o} current city is Denver", "location", "denver"),
])
def test_an_attribute_named_by_its_noun(owner, key, said, attribute, value):
    assert (f"{key}.{attribute}", value) in key_of(said.format(o=owner))


@pytest.mark.parametrize("said", ["my job is killing me", "my place is a mess",
                                  "work is crazy", "my office is freezing"])
def test_a_noun_with_no_attribute_value(said):
    got = key_of(said)
    assert not any(slot in ("user.occupation", "user.location", "user.employer")
                   for slot, _ in got), got
    assert ("user.occupation", "senior designer") in key_of("my job is senior designer")


@pytest.mark.parametrize("name", ["Priscilla", "Luis", "Aisha"])
@pytest.mark.parametrize("said", [
    "my manager is {n}", "{n} is my manager now", "{n} is my new boss",
    "my manager {n} wants a launch checklist by friday", "{n} (my manager) wants a one-pager",
    "I report to {n} now",
    "we have a new manager, {n}", "{n} took over as my team lead",
])
def test_the_users_manager_by_name_in_both_directions(name, said):
    assert ("user.manager", name.lower()) in key_of(said.format(n=name))


@pytest.mark.parametrize("kind,said,value", [
    ("phone", "grabbed an iPhone 16 at Best Buy yesterday", "iphone 16"),
    ("phone", "I caved and got a Pixel 9 Pro last week", "pixel 9 pro"),
    ("phone", "I have a Galaxy S24", "galaxy s24"),
    ("laptop", "my thinkpad's fan sounds like a jet engine", "thinkpad"),
    ("laptop", "I just bought a MacBook Air", "macbook air"),
    ("car", "my Outback needs new tires", "outback"),
    ("car", "we finally got a used Model 3", "model 3"),
    ("car", "I traded my Civic in for a Prius", "prius"),
    ("car", "welp did the trade-in thursday and drove home in the tesla", "tesla"),
    ("car", "I drive a Saab", "saab"),
    ("phone", "I switched to an iPhone last month", "iphone"),
    ("phone", "my new phone is a Pixel 8", "pixel 8"),
])
def test_what_the_user_has_of_a_kind(kind, said, value):
    assert (f"user.{kind}", value) in key_of(said)


@pytest.mark.parametrize("who", [p for p in PEOPLE if p.later[:1].isupper()])
@pytest.mark.parametrize("platform", ["android", "iPhone"])
def test_a_phone_by_its_platform(who, platform):
    assert (who.has("phone"), platform.lower()) in key_of(f"{who.later}'s {platform} lol")
    assert ("user.phone", platform.lower()) in key_of(f"I'm an {platform} person")


@pytest.mark.parametrize("who", PEOPLE)
@pytest.mark.parametrize("city", ["Tucson", "Boise"])
def test_an_age_and_a_home_in_one_clause(who, city):
    got = key_of(f"{who.first} {who.be} 88, still living alone out in {city}, and stubborn")
    assert (who.has("age"), "88") in got and (who.has("location"), city.lower()) in got


def test_someone_elses_car_is_theirs_not_the_users():
    """Given the user's car and their wife's, Then each is keyed to its owner."""
    assert ("user.car", "outback") in key_of("my Outback is in the shop")
    got = key_of("so I'm borrowing my wife's Prius all week")
    assert ("person.wife.car", "prius") in got and ("user.car", "prius") not in got


@pytest.mark.parametrize("said", [
    "my first car was a '98 Corolla with no AC",
    "my childhood dog was a german shepherd named Rex",
    "when I lived in Montreal I spoke French every day",
    "back when he was at Lincoln High he called me every day",
    "growing up in Cleveland we had one bagel place",
])
def test_a_past_state_has_no_current_key(said):
    """A past state is history: no current key of the user's (the control: the same
    extractor keys the present form)."""
    assert not any(slot in ("user.car", "user.location", "user.employer")
                   for slot, _ in key_of(said))
    assert ("user.location", "montreal") in key_of("I live in Montreal")


@pytest.mark.parametrize("said", [
    "Dana is in a meeting", "Marcus is 30 minutes away", "Tom is a genius",
    "I go to Costco, it's cheaper", "Sarah started at 9 today",
    "my manager Tom said I should learn Go",
])
def test_shapes_that_name_no_attribute(said):
    """Not an attribute: a meeting is no city, minutes are no age, a genius no job, a shop no
    school, a time no employer; a manager's words are not the user's."""
    got = key_of(said)
    assert not any(slot and slot.rsplit(".", 1)[-1] in ("location", "age", "occupation",
                                                          "school", "employer")
                   for slot, _ in got), got
    assert ("person.dana.location", "boise") in key_of("Dana lives in Boise")


def test_named_speakers_each_keep_their_own_attributes():
    """Two named speakers in one conversation: what each says of themself is theirs."""
    priya = read_message("I just started at Stripe", NOW, 0, "Priya").memories
    jon = read_message("I'm still at Figma", NOW, 1, "Jon").memories
    assert {speaker_slot(c.slot, "Priya") for c in priya} == {"person.priya.employer"}
    assert {speaker_slot(c.slot, "Jon") for c in jon} == {"person.jon.employer"}
    assert speaker_slot("user.location", None) == "user.location"


def test_the_key_grammar_folds_relations_and_attribute_names():
    assert slots.family_of("person.dad.city") == "person.father.location"
    assert slots.family_of("person.Mom.job_title") == "person.mother.occupation"
    assert slots.family_of("user.company") == "user.employer"
    assert slots.attribute_key("Grandpa", "home_city") == "person.grandfather.location"
    assert slots.attribute_key(None, "boss") == "user.manager"
    for key in ("person.dana.location", "user.manager", "person.leo.school", "user.phone"):
        assert slots.single_valued(key) and not slots.is_multi(key)
    # a multi-valued family of the user's stays multi-valued
    assert slots.is_multi("user.languages:french")


# -- end to end -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Story:
    """One person's attribute changing, beside two controls that must not change."""

    who: Who
    first: str         # the first value's statement
    later: str         # the new value's statement, in another shape
    old: str           # a word only the old statement holds
    new: str           # a word the new value's memory holds
    other_attr: str    # the same person's other attribute (control)
    other_word: str
    other_person: str  # the same attribute of someone else (control)
    other_person_word: str
    question: str      # a search the new value must answer first


def stories() -> list[Story]:
    out = []
    marcus, dana, dad, me = PEOPLE[1], PEOPLE[0], PEOPLE[3], ME
    noor = CHILDREN[2]
    for i, who in enumerate([dana, dad, me, marcus]):
        a, b = CITIES[i], CITIES[-1 - i]
        name = who.name.split("|")[0]
        q = "where does the user live" if who is me else f"where does the user's {name} live"
        if who in (dana, marcus):
            q = f"where does {who.name} live"
        out.append(Story(
            who, plain_location(who, a), LOCATION_LATER[i % len(LOCATION_LATER)](who, b), a, b,
            plain_employer(who, ORGS[i]), ORGS[i],
            f"my cousin Rafa {v(PEOPLE[1], 'live')} in Tucson", "Tucson", q))
    for i, who in enumerate([marcus, me, dana]):
        a, b = ROLES[i], ROLES[-1 - i]
        out.append(Story(
            who, plain_role(who, a), ROLE_LATER[i](who, b), a.split()[-1], b.split()[-1],
            plain_location(who, "Lisbon"), "Lisbon",
            "my neighbor Omar is a pharmacist", "pharmacist",
            "what is the user's job" if who is me else f"what is {who.name}'s job"))
    for i, who in enumerate([dana, me]):
        out.append(Story(
            who, plain_employer(who, "Deloitte"), EMPLOYER_LATER[i](who, "Shopify"), "Deloitte",
            "Shopify", plain_location(who, "Denver"), "Denver", "my uncle Ravi works at Humana",
            "Humana", "where does the user work" if who is me else f"where does {who.name} work"))
    out.append(Story(
        noor, "my 6 year old Noor refuses anything green", "Noor blew out seven candles",
        "green", "7", "Noor goes to Oak Park Elementary", "Oak", "Ella is 9 and wants a phone",
        "Ella", "how old is Noor"))
    return out


def ingest(client, headers, path: str, text: str, when: datetime) -> dict:
    r = client.post("/v1/ingest", headers=headers, json={
        "path": path, "wait": True,
        "messages": [{"role": "user", "content": text, "at": when.isoformat()}]})
    assert r.status_code == 200, r.text
    return r.json()


def active(client, headers, path: str) -> list[str]:
    r = client.get("/v1/memories", headers=headers,
                   params={"path": path, "status": "active", "limit": 200})
    assert r.status_code == 200, r.text
    return [m["content"] for m in r.json()["items"]]


def holding(contents: list[str], word: str) -> list[str]:
    return [c for c in contents if re.search(rf"\b{re.escape(word)}\b", c, re.I)]


def test_a_later_value_supersedes_and_the_controls_stay(client, tenant):
    """Given, per story, a person's attribute, the same person's other attribute and the same
    attribute of someone else, When a later statement in another shape gives the attribute a
    new value, Then the old value is no longer active, the new one is and answers the
    attribute's question first, and both controls are still active."""
    t0 = datetime(2026, 1, 5, 9, tzinfo=UTC)
    for i, story in enumerate(stories()):
        path = f"users.story{i}"
        for day, text in enumerate([story.first, story.other_attr, story.other_person,
                                    story.later]):
            ingest(client, tenant.headers, path, text, t0 + timedelta(days=30 * day))
        now = active(client, tenant.headers, path)
        assert holding(now, story.new), (story.later, now)
        assert not holding(now, story.old), (story.first, story.later, now)
        assert holding(now, story.other_word), (story.other_attr, now)
        assert holding(now, story.other_person_word), (story.other_person, now)
        r = client.post("/v1/search", headers=tenant.headers,
                        json={"query": story.question, "paths": [path], "limit": 5})
        assert r.status_code == 200, r.text
        first = r.json()["results"][0]["content"]
        assert holding([first], story.new), (story.question, first)


@pytest.mark.parametrize("current,past,word", [
    ("I live in Toronto", "when I did my master's in Montreal I spoke French every day",
     "Toronto"),
    ("I live in Austin", "I lived in Berlin for three years and biked everywhere", "Austin"),
    ("my manager Aisha wants us doing async standups",
     "when I was at Oracle my boss Greg would have lost it", "Aisha"),
    ("I drive a Mazda CX-5", "my first car was a '98 Corolla with no AC", "Mazda"),
])
def test_a_past_state_told_later_does_not_retire_the_current_one(client, tenant, current, past,
                                                                 word):
    t0 = datetime(2026, 2, 1, 9, tzinfo=UTC)
    ingest(client, tenant.headers, "users.alice", current, t0)
    ingest(client, tenant.headers, "users.alice", past, t0 + timedelta(days=60))
    assert holding(active(client, tenant.headers, "users.alice"), word)
