"""Corrections of what an earlier session stored (issue 35), through POST /v1/ingest with the
rule extractor on a real database, on generated exchanges:

- a date put right later ("I gave you the wrong date before -- it's May 21st" after "my
  birthday is May 12") takes the stored date's place;
- a value put right by the frame the message names ("my allergy test came back and I had it
  wrong -- it's X I react to") or by naming the wrong value ("it's X, not Y") retires the
  stored value and keeps the right one.

Each case has its control: the same value said without owning an error, or without naming
what it corrects, retires nothing -- so the correction is what made the change. Values are
invented words, so nothing but the exchange can put them in a memory.
"""

from __future__ import annotations

import re
import uuid

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

ONSETS = ["k", "v", "z", "dr", "qu", "th", "br", "m", "s", "gr", "pl"]
VOWELS = ["a", "o", "e", "ui", "ae"]
CODAS = ["rv", "x", "ld", "nth", "sk", "rn", "lt"]
NAME = st.lists(st.tuples(st.sampled_from(ONSETS), st.sampled_from(VOWELS),
                          st.sampled_from(CODAS)).map("".join),
                min_size=2, max_size=3).map("".join)
MONTH = st.sampled_from(["March", "May", "June", "October", "December"])
OWNED = st.sampled_from([
    "ugh I gave you the wrong date before — ", "I had it wrong this whole time, ",
    "I was wrong earlier. ", "wait, I got that backwards: ", "actually "])
CASES = settings(max_examples=6, deadline=None, derandomize=True,
                 suppress_health_check=[HealthCheck.function_scoped_fixture,
                                        HealthCheck.too_slow])


def _path() -> str:
    return f"users.x{uuid.uuid4().hex[:12]}"


def _talk(client, h, path: str, text: str) -> list[str]:
    r = client.post("/v1/ingest", headers=h, json={
        "path": path, "wait": True, "messages": [{"role": "user", "content": text}]})
    assert r.status_code == 200, r.text
    r = client.get("/v1/memories", headers=h, params={"path": path, "limit": 200})
    assert r.status_code == 200, r.text
    return [m["content"] for m in r.json()["items"]]


def _word(text: str, word: str) -> bool:
    return re.search(rf"(?<![\w-]){re.escape(word)}(?![\w-])", text, re.I) is not None


def _day(n: int) -> str:
    return f"{n}{'st' if n in (1, 21, 31) else 'nd' if n in (2, 22) else 'rd' if n in (3, 23) else 'th'}"


@given(month=MONTH, old=st.integers(1, 28), new=st.integers(1, 28), owned=OWNED,
       what=st.sampled_from(["my birthday", "my anniversary", "my wedding anniversary"]),
       form=st.sampled_from(["it's {m} {d}", "it's {m} {d}.", "it's the {d}"]),
       tail=st.sampled_from(["", " I flip those constantly.", " sorry!"]))
@CASES
def test_a_date_put_right_later_takes_the_stored_dates_place(client, tenant, month, old, new,
                                                             owned, what, form, tail):
    if old == new:
        return
    h, path = tenant.headers, _path()
    _talk(client, h, path, f"{what} is {month} {old} and I want to plan a small dinner")
    right = form.format(m=month, d=_day(new))
    stored = _talk(client, h, path, f"{owned}{right}.{tail}")
    dated = [c for c in stored if _word(c, month)]
    assert any(re.search(rf"\b{new}(?:st|nd|rd|th)?\b", c) for c in dated), stored
    assert not any(re.search(rf"\b{old}\b", c) for c in dated), stored
    # Control: the same date said without owning an error corrects nothing stored.
    path = _path()
    _talk(client, h, path, f"{what} is {month} {old} and I want to plan a small dinner")
    stored = _talk(client, h, path, f"{right}.{tail}")
    assert any(re.search(rf"\b{old}\b", c) for c in stored if _word(c, month)), stored


@given(wrong=NAME, right=NAME, owned=OWNED,
       frame=st.sampled_from(["my allergy panel came back. ", "the allergist called. ",
                              "update on my allergies. "]),
       cleft=st.sampled_from(["it's {x} I react to", "it's definitely {x} I react to",
                              "it's {x} that I react to"]))
@CASES
def test_a_value_put_right_by_the_frame_the_message_names_retires_the_stored_one(
        client, tenant, wrong, right, owned, frame, cleft):
    if wrong == right:
        return
    h, path = tenant.headers, _path()
    _talk(client, h, path, f"I'm allergic to {wrong}, is the pesto safe?")
    said = f"{frame}{owned}{cleft.format(x=right)}"
    stored = _talk(client, h, path, said)
    assert any(_word(c, right) for c in stored), stored
    assert not any(_word(c, wrong) and not _word(c, right) for c in stored), stored
    # Control: nothing in the message names the allergy: the stored one is not its target.
    path = _path()
    _talk(client, h, path, f"I'm allergic to {wrong}, is the pesto safe?")
    stored = _talk(client, h, path, f"{owned}{cleft.format(x=right)}")
    assert any(_word(c, wrong) and not _word(c, right) for c in stored), stored


@given(wrong=NAME, right=NAME, other=NAME,
       said=st.sampled_from(["I live in {w}", "I work at {w}", "my manager is {w}"]),
       fix=st.sampled_from(["it's {r}, not {w}. I always mix those up",
                            "oops, {r} not {w}", "not {w}, it's {r}"]))
@CASES
def test_a_correction_naming_the_stored_value_replaces_it(client, tenant, wrong, right,
                                                           other, said, fix):
    if len({wrong, right, other}) < 3:
        return
    h, path = tenant.headers, _path()
    w, r, o = wrong.capitalize(), right.capitalize(), other.capitalize()
    _talk(client, h, path, said.format(w=w))
    stored = _talk(client, h, path, fix.format(r=r, w=w))
    assert any(_word(c, r) for c in stored), stored
    assert not any(_word(c, w) and not _word(c, r) for c in stored), stored
    # Control: a correction of a value nobody stored leaves the stored one alone.
    path = _path()
    _talk(client, h, path, said.format(w=w))
    stored = _talk(client, h, path, fix.format(r=r, w=o))
    assert any(_word(c, w) for c in stored), stored
