"""Later statements (strata.search.ranking, "Later statements"), through the HTTP API over real
PostgreSQL: of two active memories holding the same telling words of a question about the
present, the one said later ranks first, whatever the fused score says; a question about the
past, words every memory holds, and words more than two memories hold keep the fused order.

Generated: subjects (people by name), things they speak of, places, and memories about the
same subject beside them, so the subject's name is in every memory of the scope and only the
thing asked about tells the two statements from the rest. The earlier statement is the
short one, close to the question, and the later one long: the fused score prefers the
earlier, which each test checks (its control) before asserting the order."""

from __future__ import annotations

import uuid

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import support

SUBJECTS = ("Nora", "Dmitri", "Aunt Lena", "Kofi", "Ingrid")
THINGS = ("standup", "recital", "potluck", "checkup", "offsite", "rehearsal", "reunion",
          "barbecue")
PLACES = ("Harbor Room", "Maple Hall", "the east annex", "Pier 9", "the old library",
          "Cedar Court", "the rooftop")
OTHER = ("likes green tea", "collects vinyl records", "runs on Sundays", "keeps a sourdough "
         "starter", "volunteers at the shelter", "plays chess online", "knits scarves")

SETTINGS = settings(max_examples=6, deadline=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture])

cases = st.fixed_dictionaries({
    "subject": st.sampled_from(SUBJECTS),
    "thing": st.sampled_from(THINGS),
    "places": st.lists(st.sampled_from(PLACES), min_size=3, max_size=3, unique=True),
    "others": st.lists(st.sampled_from(OTHER), min_size=4, max_size=6, unique=True),
})


def _earlier(c: dict) -> str:
    return f"{c['subject']}'s {c['thing']} is at {c['places'][0]}"


def _later(c: dict, n: int = 1) -> str:
    return (f"After a week of back and forth over rooms and times with everyone involved, "
            f"{c['subject']}'s {c['thing']} ended up at {c['places'][n]} this time round, and "
            f"the invitations have gone out")


def _setup(client, headers, c: dict, statements: list[str]) -> tuple[str, dict[str, str]]:
    """A fresh path with memories about the subject (the name in most of the scope), then
    ``statements`` each in a request of its own, in order (so each is said after the one
    before): the path and each statement's id."""
    path = f"users.u{uuid.uuid4().hex[:10]}"
    support.create_ok(client, headers, *({"content": f"{c['subject']} {o}", "path": path}
                                         for o in c["others"]))
    ids = {}
    for text in statements:
        (r,) = support.create_ok(client, headers, {"content": text, "path": path})
        ids[text] = r["id"]
    return path, ids


def _search(client, headers, query: str, path: str, mode: str = "hybrid") -> list[dict]:
    r = client.post("/v1/search", headers=headers, json={
        "query": query, "paths": [path], "mode": mode, "explain": True, "limit": 10})
    assert r.status_code == 200, r.text
    return r.json()["results"]


def _fused_order(results: list[dict]) -> bool:
    scores = [r["explain"]["rank_score"] for r in results]
    return scores == sorted(scores, reverse=True)


@SETTINGS
@given(c=cases, mode=st.sampled_from(["hybrid", "keyword"]))
def test_the_later_statement_ranks_first_whichever_was_said_first(client, tenant, c, mode):
    """Given a short statement on a thing and, said later, a long one on the same thing
    (beside other memories about the same person)
    When asking where the thing is now
    Then the later statement ranks first, above the earlier one that the fused score puts
    first (control: its explain score is the higher); and said the other way round, the
    short one -- now the later -- ranks first (the order of saying decides, not the text)."""
    h = tenant.headers
    question = f"Where is {c['subject']}'s {c['thing']}?"
    path, ids = _setup(client, h, c, [_earlier(c), _later(c)])
    got = _search(client, h, question, path, mode)
    first, second = got[0], got[1]
    assert [first["id"], second["id"]] == [ids[_later(c)], ids[_earlier(c)]]
    assert first["explain"]["rank_score"] < second["explain"]["rank_score"]  # control: fusion alone
    assert first["explain"]["later_than"] == second["id"]
    assert second["explain"]["later_than"] is None
    assert {r["status"] for r in got} == {"active"}

    path, ids = _setup(client, h, c, [_later(c), _earlier(c)])
    got = _search(client, h, question, path, mode)
    assert [r["id"] for r in got[:2]] == [ids[_earlier(c)], ids[_later(c)]]
    assert _fused_order(got)


@SETTINGS
@given(c=cases)
def test_a_question_about_the_past_keeps_the_fused_order(client, tenant, c):
    """Given the same two statements, the short one said first
    When asking where the thing was (a past question)
    Then the results come in the fused order, which puts the earlier statement above the
    later; control: asking where it is now puts the later one first."""
    h = tenant.headers
    path, ids = _setup(client, h, c, [_earlier(c), _later(c)])
    for question in (f"Where was {c['subject']}'s {c['thing']}?",
                     f"Where did {c['subject']} have the {c['thing']}?",
                     f"Where has {c['subject']}'s {c['thing']} been?"):
        got = _search(client, h, question, path)
        score = {r["id"]: r["explain"]["rank_score"] for r in got}
        assert score[ids[_earlier(c)]] > score[ids[_later(c)]], question  # fusion's choice
        assert _fused_order(got), question
    now = _search(client, h, f"Where is {c['subject']}'s {c['thing']}?", path)
    assert now[0]["id"] == ids[_later(c)]


@SETTINGS
@given(c=cases)
def test_words_many_memories_hold_keep_the_fused_order(client, tenant, c):
    """Given the two statements and a third on the same thing said between them
    When asking where the thing is now
    Then the three keep the fused order (three memories holding the words name a subject
    spoken of, not one fact restated); and asking only by the name every memory holds
    keeps it too. Control: without the third, the later statement ranks first."""
    h = tenant.headers
    middle = (f"{c['subject']} thinks the {c['thing']} could use {c['places'][2]} some "
              f"year, maybe")
    path, ids = _setup(client, h, c, [_earlier(c), middle, _later(c)])
    got = _search(client, h, f"Where is {c['subject']}'s {c['thing']}?", path)
    assert _fused_order(got) and got[0]["id"] == ids[_earlier(c)]
    by_name = _search(client, h, f"Anything new about {c['subject']}?", path)
    assert _fused_order(by_name) and len(by_name) >= len(c["others"])

    path, ids = _setup(client, h, c, [_earlier(c), _later(c)])
    got = _search(client, h, f"Where is {c['subject']}'s {c['thing']}?", path)
    assert got[0]["id"] == ids[_later(c)]
