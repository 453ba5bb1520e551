"""The past beside the present (issue 35), through POST /v1/ingest and /v1/search with the
rule extractor on a real database, on generated conversations:

- a state told as over ("I lived in X for three years", "in college I lived in X", "my first
  apartment was in X") is kept as history, and a question about the present ranks the
  current fact first; the control, the same place said as news ("I just moved to X"),
  ranks first;
- an emoji before a question ends the statement before it ("adopted a kitten named X 😅 tips
  for the first week?"): the statement is kept; the control, the same words without the
  emoji, is one question and stores nothing naming X.

Names and places are invented words, so nothing but the statement can put them in a memory.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from talk import first_hit as _first
from talk import fresh_path as _path
from talk import has_word as _word
from talk import stored as _stored

from strata.search.ranking import Candidate, fuse

ONSETS = ["k", "v", "z", "dr", "qu", "th", "br", "m", "s", "gr", "pl"]
VOWELS = ["a", "o", "e", "ui", "ae"]
CODAS = ["rv", "x", "ld", "nth", "sk", "rn", "lt"]

CASES = settings(max_examples=8, deadline=None, derandomize=True,
                 suppress_health_check=[HealthCheck.function_scoped_fixture,
                                        HealthCheck.too_slow])


def _invented() -> st.SearchStrategy[str]:
    syllable = st.tuples(st.sampled_from(ONSETS), st.sampled_from(VOWELS),
                         st.sampled_from(CODAS)).map("".join)
    return st.lists(syllable, min_size=2, max_size=3).map(lambda s: "".join(s).capitalize())


NAME = _invented()



def _say(client, h, path: str, at: str, *texts: str) -> None:
    messages = [{"role": "user", "content": t, "at": at} for t in texts]
    r = client.post("/v1/ingest", headers=h, json={"path": path, "wait": True,
                                                   "messages": messages})
    assert r.status_code == 200, r.text





PAST_TOLD = [
    "I lived in {old} for {n} years and biked everywhere",
    "in college I lived in {old}",
    "I lived in {old} until grad school",
    "back when I lived in {old} I walked everywhere",
    "my first apartment was in {old}",
    "I worked in {old} for {n} years",
]
NOW_TELLING = ["I live in {now}", "oh and I live in {now} btw", "we live in {now} now"]


@given(old=NAME, now=NAME, told=st.sampled_from(PAST_TOLD), current=st.sampled_from(NOW_TELLING),
       n=st.sampled_from(["two", "three", "5"]),
       tail=st.sampled_from(["", " lol", ", good times"]))
@CASES
def test_a_state_told_as_over_does_not_answer_what_holds_now(client, tenant, old, now, told,
                                                               current, n, tail):
    """Given where the user lives, and later a place of their past told as over
    When asking where the user lives
    Then the current place ranks first, and the past one is kept; control: the same
    place said later as news ("I just moved to X") ranks first."""
    if old == now:
        return
    h = tenant.headers
    path = _path()
    _say(client, h, path, "2025-03-01T10:00:00Z", current.format(now=now))
    _say(client, h, path, "2025-08-01T10:00:00Z", told.format(old=old, n=n) + tail)
    assert _word(_first(client, h, path, "where does the user live?"), now)
    assert any(_word(m, old) for m in _stored(client, h, path))

    control = _path()
    _say(client, h, control, "2025-03-01T10:00:00Z", current.format(now=now))
    _say(client, h, control, "2025-08-01T10:00:00Z", f"I just moved to {old}{tail}")
    assert _word(_first(client, h, control, "where does the user live?"), old)


@given(lead=st.floats(0.01, 0.2), question=st.sampled_from([
    ("what car does the user drive", True), ("what car did the user drive", False),
    ("which city does the user live in", True), ("where was the user living", False)]))
@CASES
def test_what_has_ended_ranks_below_what_holds_for_a_question_about_now(lead, question):
    """Given two memories, the one that has ended ahead on both arms by ``lead``
    When fusing for a question about the present
    Then the one that still holds ranks first; control: for a question about the past,
    the fused order stands."""
    query, about_now = question

    def memory(i: int, score: float, ended: bool) -> Candidate:
        return Candidate(id=uuid.UUID(int=i), vec_rank=None, cosine=score, txt_rank=None,
                         bm25=score, value_hash=bytes([i]), ended=ended,
                         said_at=datetime(2025, i, 1, tzinfo=UTC))

    holds, ended = memory(1, 0.5, False), memory(2, 0.5 + lead, True)
    order = [r.candidate.id for r in fuse([holds, ended], mode="hybrid", query=query,
                                          idf_sum=1.0).ranked]
    assert order == ([holds.id, ended.id] if about_now else [ended.id, holds.id])


STATEMENTS = [
    "I adopted a {kind} named {name}",
    "just started a new job at {name}",
    "my sister {name} is visiting this weekend",
    "we finally booked the cabin in {name}",
]
KINDS = ["kitten", "puppy", "rescue dog", "parrot"]
EMOJI = ["😅", "🎉", "😭", "🙃🙃", "😵‍💫"]
ASKS = ["tips for the first week", "any advice", "packing list ideas", "books on negotiation"]


@given(name=NAME, said=st.sampled_from(STATEMENTS), kind=st.sampled_from(KINDS),
       emoji=st.sampled_from(EMOJI), ask=st.sampled_from(ASKS))
@CASES
def test_an_emoji_before_a_question_ends_the_statement(client, tenant, name, said, kind, emoji,
                                                        ask):
    """Given a statement, an emoji, then a question with no full stop between them
    When the message is ingested
    Then the statement is kept; control: the same words without the emoji are one question,
    and nothing stored names the value."""
    h = tenant.headers
    statement = said.format(name=name, kind=kind)
    path = _path()
    _say(client, h, path, "2025-03-01T10:00:00Z", f"{statement} {emoji} {ask}?")
    assert any(_word(m, name) for m in _stored(client, h, path))

    control = _path()
    _say(client, h, control, "2025-03-01T10:00:00Z", f"{statement} {ask}?")
    assert not any(_word(m, name) for m in _stored(client, h, control))


def _slots(client, h, path: str) -> list[tuple[str | None, str | None]]:
    r = client.get("/v1/memories", headers=h, params={"path": path, "limit": 200})
    assert r.status_code == 200, r.text
    return [(m["slot"], m["value"]) for m in r.json()["items"]]


HERE = [
    "I'm looking for a good dentist {where} {place}",
    "we just joined a climbing gym {where} {place}",
    "I finally got a bike for commuting {where} {place}",
    "I love the farmers market {where} {place}",
]


@given(place=NAME, said=st.sampled_from(HERE), tail=st.sampled_from(["", " lol", "!!"]))
@CASES
def test_a_place_called_here_is_where_the_user_lives(client, tenant, place, said, tail):
    """Given a statement about something else that calls a place "here" ("the gym here in X")
    When the message is ingested
    Then the user's location is keyed to the place, beside the statement; control: the same
    statement with "in X" (not "here") keys no location."""
    h = tenant.headers
    path = _path()
    _say(client, h, path, "2025-03-01T10:00:00Z", said.format(where="here in", place=place) + tail)
    assert ("user.location", place.lower()) in _slots(client, h, path)
    assert any(_word(m, place) and not m.startswith("The user lives")
               for m in _stored(client, h, path))

    control = _path()
    _say(client, h, control, "2025-03-01T10:00:00Z", said.format(where="in", place=place) + tail)
    assert "user.location" not in {slot for slot, _ in _slots(client, h, control)}


PETS = ["kitten", "puppy", "rescue dog", "baby girl", "bunny"]
THINGS = ["couch", "kettle", "lamp", "used car"]


@given(name=NAME, pet=st.sampled_from(PETS), thing=st.sampled_from(THINGS),
       verb=st.sampled_from(["we adopted", "we just got", "I rescued", "my sister had"]),
       pronoun=st.sampled_from(["her name's", "his name is", "her name is"]),
       sep=st.sampled_from(["!!! ", ". ", "! "]))
@CASES
def test_a_name_given_after_an_introduction_goes_with_it(client, tenant, name, pet, thing, verb,
                                                          pronoun, sep):
    """Given someone introduced ("we adopted a kitten") and their name in the next clause
    ("her name's X")
    When the message is ingested
    Then one memory holds both; control: after a thing ("we bought a lamp"), nothing is
    named."""
    h = tenant.headers
    path = _path()
    _say(client, h, path, "2025-03-01T10:00:00Z", f"{verb} a {pet}{sep}{pronoun} {name}")
    assert any(_word(m, name) and _word(m, pet.split()[-1]) for m in _stored(client, h, path))

    control = _path()
    _say(client, h, control, "2025-03-01T10:00:00Z", f"we bought a {thing}{sep}{pronoun} {name}")
    assert not any(_word(m, name) for m in _stored(client, h, control))


@given(diet=st.sampled_from(["vegetarian", "vegan", "pescatarian"]),
       span=st.sampled_from(["for 12 years", "for two years", "since college", "since 2019"]),
       tail=st.sampled_from(["", " and still bad at protein", " lol"]))
@CASES
def test_a_state_with_its_span_and_no_subject_is_the_users(client, tenant, diet, span, tail):
    """Given a diet said with how long, the "I have been" left out ("vegetarian for 12 years")
    When the message is ingested
    Then it is the user's diet; control: the same words about a menu ("vegan options for
    12 years") key no diet."""
    h = tenant.headers
    path = _path()
    _say(client, h, path, "2025-03-01T10:00:00Z", f"{diet} {span}{tail}")
    assert ("user.diet", diet) in _slots(client, h, path)

    control = _path()
    _say(client, h, control, "2025-03-01T10:00:00Z", f"{diet} options {span}{tail}")
    assert "user.diet" not in {slot for slot, _ in _slots(client, h, control)}


DONE = ["registered for the {name} half marathon", "signed up for a pottery class at {name}",
        "booked a table at {name}", "enrolled in a night course at {name}"]
TOPIC = ["unrelated: ", "totally different topic: ", "side note: ", ""]


@given(name=NAME, done=st.sampled_from(DONE), topic=st.sampled_from(TOPIC),
       adverb=st.sampled_from(["just ", "finally ", ""]), tail=st.sampled_from(["", "!!", " lol"]))
@CASES
def test_a_past_verb_with_its_subject_left_out_is_the_speakers(client, tenant, name, done, topic,
                                                                adverb, tail):
    """Given "registered for X" with "I" left out, after a change of topic or not
    When the message is ingested
    Then it is kept as the user's; control: a feeling said the same way ("excited for X")
    is not."""
    h = tenant.headers
    path = _path()
    said = f"{topic}{adverb}{done.format(name=name)}{tail}"
    _say(client, h, path, "2025-03-01T10:00:00Z", said)
    assert any(_word(m, name) and m.startswith("The user") for m in _stored(client, h, path))

    control = _path()
    _say(client, h, control, "2025-03-01T10:00:00Z", f"{topic}so excited for {name}{tail}")
    assert not any(_word(m, name) for m in _stored(client, h, control))
