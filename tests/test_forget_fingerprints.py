"""A forget sticks to the fact (issue 34): generated forget-then-mention stories through every
write path. The value never comes back -- in other words, in a compound sentence, as an
aside, beside a new fact -- the new fact always lands (control), and no stored row holds the
forgotten content or a hash of it computable without the tenant's secret.

The stories are generated: invented names and numbers (rare by construction, as the names,
addresses and numbers people ask to have forgotten are), attributes and wordings from small
grammars, new facts from a vocabulary disjoint from the forgotten one. Each ingest story has
a control: the same mention without the forget is stored (so the wording is one the
extractor keeps, and the test can fail).
"""

from __future__ import annotations

import hashlib
import json
import uuid

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from strata.write import fingerprints
from strata.write.canonical import canonicalize

from support import assert_error, create_ok

ONSETS = ["k", "v", "z", "dr", "qu", "th", "br", "m", "s", "gr"]
VOWELS = ["a", "o", "e", "ui", "ae", "y"]
CODAS = ["rv", "x", "ld", "nth", "sk", "rn", "lt"]
# Names of new facts: other letters altogether, so no new fact shares a word with a value.
NEW_ONSETS = ["p", "f", "l", "w", "h"]
NEW_VOWELS = ["i", "ou", "ee"]


def _invented(onsets, vowels, codas) -> st.SearchStrategy[str]:
    syllable = st.tuples(st.sampled_from(onsets), st.sampled_from(vowels),
                         st.sampled_from(codas)).map("".join)
    return st.lists(syllable, min_size=2, max_size=3).map(lambda s: "".join(s).capitalize())


NAME = _invented(ONSETS, VOWELS, CODAS)
NEW_NAME = _invented(NEW_ONSETS, NEW_VOWELS, ["p", "n", "m", "b"])
NUMBER = st.integers(1000, 99999).map(str)


@st.composite
def forgotten_fact(draw) -> dict[str, str]:
    """A fact and the words that make it what it is (its needle), as people state them."""
    kind = draw(st.sampled_from(["address", "locker", "person", "employer", "diagnosis"]))
    if kind == "address":
        number, street = draw(st.integers(10, 999)), draw(NAME)
        value = f"{number} {street} Lane"
        return {"stated": f"My home address is {value}", "needle": street, "value": value,
                "other_words": draw(st.sampled_from([
                    f"I live at {value}", f"{value} is where I live"]))}
    if kind == "locker":
        value = draw(NUMBER)
        return {"stated": f"My gym locker is number {value}", "needle": value, "value": value,
                "other_words": draw(st.sampled_from([
                    f"I use gym locker number {value}", f"my locker at the gym is {value}"]))}
    if kind == "person":
        name = draw(NAME)
        return {"stated": f"My therapist is Dr. {name}", "needle": name, "value": name,
                "other_words": draw(st.sampled_from([
                    f"I saw {name} again on Tuesday", f"I saw Dr. {name} again today"]))}
    if kind == "employer":
        name = draw(NAME)
        return {"stated": f"I work at {name}", "needle": name, "value": name,
                "other_words": draw(st.sampled_from([
                    f"I'm going to the {name} holiday party",
                    f"I need an outfit for the {name} party"]))}
    name = draw(NAME).lower() + "osis"
    return {"stated": f"I was diagnosed with {name} last month", "needle": name, "value": name,
            "other_words": draw(st.sampled_from([
                f"my {name} flared up this week", f"my {name} got worse this month"]))}


@st.composite
def new_fact(draw) -> dict[str, str]:
    name = draw(NEW_NAME)
    return draw(st.sampled_from([
        {"text": f"I adopted a gecko named {name}", "marker": name},
        {"text": f"I started cello lessons with {name}", "marker": name},
        {"text": f"I joined the {name} running club", "marker": name},
    ]))


@st.composite
def story(draw) -> dict[str, str]:
    fact, new = draw(forgotten_fact()), draw(new_fact())
    shape = draw(st.sampled_from(["other_words", "compound", "aside", "beside"]))
    mention = {
        "other_words": fact["other_words"],
        "compound": f"{fact['other_words']}, and {new['text'][0].lower()}{new['text'][1:]}",
        "aside": f"{new['text']} -- unrelated, {fact['other_words']}",
        "beside": f"{new['text']}. Also, {fact['other_words']}.",
    }[shape]
    # Said on its own, the mention comes with the new fact in a message of its own.
    messages = [new["text"], mention] if shape == "other_words" else [mention]
    return {**fact, "new": new["text"], "marker": new["marker"], "shape": shape,
            "mention": mention, "messages": messages}


STORIES = settings(max_examples=12, deadline=None, derandomize=True,
                   suppress_health_check=[HealthCheck.function_scoped_fixture,
                                          HealthCheck.too_slow])


def _path() -> str:
    return f"users.u{uuid.uuid4().hex[:12]}"


def _forget_stated(client, h, path: str, stated: str) -> str:
    [res] = create_ok(client, h, {"content": stated, "path": path})
    assert res["status"] == "inserted", res
    r = client.post(f"/v1/memories/{res['id']}/forget", headers=h)
    assert r.status_code == 200, r.text
    return res["id"]


def _live(client, h, path: str) -> list[str]:
    items, cursor = [], None
    while True:
        params = {"path": path, "status": "all", "limit": 200, **({"cursor": cursor} if cursor else {})}
        body = client.get("/v1/memories", headers=h, params=params).json()
        items += [m["content"] for m in body["items"] if m["status"] in ("active", "candidate")]
        cursor = body.get("next_cursor")
        if not cursor:
            return items


def _holds(contents: list[str], word: str) -> bool:
    return any(word.casefold() in c.casefold() for c in contents)


def _ingest(client, h, path: str, text: str | list[str]) -> dict:
    texts = [text] if isinstance(text, str) else text
    r = client.post("/v1/ingest", headers=h, json={
        "path": path, "wait": True, "messages": [{"role": "user", "content": t} for t in texts]})
    assert r.status_code == 200, r.text
    return r.json()


def _ingest_live(client, h, path: str, text: str | list[str]) -> list[str]:
    _ingest(client, h, path, text)
    return _live(client, h, path)


@given(s=story())
@STORIES
def test_ingest_never_brings_a_forgotten_fact_back_and_keeps_the_new_one(client, tenant, s):
    """Given a stated fact, forgotten
    When a later message mentions it again (in other words, in a compound sentence, as an
         aside, or beside a new fact) and says something new
    Then no live memory holds the forgotten value, the receipt names a tombstone for what it
         refused without echoing it, and the new fact is kept (control)."""
    h, path, control = tenant.headers, _path(), _path()
    assert _holds(_ingest_live(client, h, control, s["messages"]), s["needle"]), \
        "control: without the forget, the mention is stored"
    _forget_stated(client, h, path, s["stated"])
    receipt = _ingest(client, h, path, s["messages"])
    live = _live(client, h, path)
    assert not _holds(live, s["needle"]), (s, live)
    assert _holds(live, s["marker"]), (s, live, receipt)
    refused = [i for i in receipt["items"] if i["outcome"] == "blocked"]
    assert refused and all("forgotten" in i["reason"] and i["tombstone_id"] for i in refused), \
        receipt
    assert s["needle"].casefold() not in json.dumps(receipt).casefold()


@given(s=story())
@settings(max_examples=8, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
def test_model_extraction_never_brings_a_forgotten_fact_back(
        client, tenant, db, embedder, settings, fake_llm, caller_for, s):
    """Given a forgotten fact and a model-backed extractor (the real openai client against a
         scripted server) that extracts the mention as said -- the forgotten value beside the
         new fact in one candidate for the compound, aside and beside shapes
    When the conversation is ingested
    Then the forgotten value is refused, naming its tombstone, and the new fact is kept: the
         clause that carries nothing forgotten is cut from the model's candidate."""
    from strata.ingest.models import IngestRequest
    from strata.ingest.pipeline import IngestRuntime
    from strata.ingest.service import ingest

    rt = IngestRuntime(db, embedder, fake_llm.settings(settings, llm_max_retries=1))
    h, path = tenant.headers, _path()
    _forget_stated(client, h, path, s["stated"])
    said = [{"content": t, "kind": "fact", "confidence": 0.9, "evidence": [i]}
            for i, t in enumerate(s["messages"])]
    fake_llm.fallback = lambda rec: (
        {"verdicts": []} if rec.schema_name == "JudgeAnswer" else {"memories": said})
    receipt, _ = ingest(rt, None, caller_for(tenant.key), IngestRequest(
        path=path, wait=True, messages=[{"role": "user", "content": t} for t in s["messages"]]))
    assert receipt.extractor == "llm:fake-model", receipt.extractor
    live = _live(client, h, path)
    assert not _holds(live, s["needle"]), (s, live)
    assert _holds(live, s["marker"]), (s, live, receipt.items)
    refused = [i for i in receipt.items if i.outcome == "blocked"]
    assert refused and all(i.tombstone_id and "forgotten" in i.reason for i in refused)


@given(s=story())
@STORIES
def test_direct_create_refuses_the_forgotten_fact_whatever_else_it_says(client, tenant, s):
    """Given a forgotten fact
    When a batch creates the mention (as said) next to the new fact
    Then the mention answers blocked naming the tombstone, and the new fact is inserted."""
    h, path = tenant.headers, _path()
    _forget_stated(client, h, path, s["stated"])
    res = create_ok(client, h, {"content": s["mention"], "path": path},
                    {"content": s["new"], "path": path})
    assert res[0]["status"] == "blocked" and res[0]["tombstone_id"], res
    assert "forgotten" in res[0]["reason"] and s["needle"] not in res[0]["reason"]
    assert res[1]["status"] == "inserted", res
    live = _live(client, h, path)
    assert not _holds(live, s["needle"]) and _holds(live, s["marker"]), live


def test_the_issue_reproductions_stay_forgotten(client, tenant):
    """Given "My home address is 12 Elm Street" and "My gym locker is number 4417", forgotten
    When the address comes back in a compound sentence by ingest, and the locker by a named
         replace
    Then neither is stored; the Subaru beside the address is (control)."""
    h, path = tenant.headers, _path()
    _forget_stated(client, h, path, "My home address is 12 Elm Street")
    _ingest(client, h, path, "I live at 12 Elm Street, and I drive a blue Subaru")
    live = _live(client, h, path)
    assert not _holds(live, "Elm") and _holds(live, "Subaru"), live

    [named] = create_ok(client, h, {"content": "Locker at the pool", "path": path,
                                    "name": "locker"})
    _forget_stated(client, h, path, "My gym locker is number 4417")
    [res] = create_ok(client, h, {"content": "Gym locker number 4417", "path": path,
                                  "name": "locker"}, on_conflict="replace")
    assert res["status"] == "blocked" and "forgotten" in res["reason"], res
    assert client.get(f"/v1/memories/{named['id']}", headers=h).json()["content"] == \
        "Locker at the pool"


EDITS = settings(max_examples=5, deadline=None, derandomize=True,
                 suppress_health_check=[HealthCheck.function_scoped_fixture,
                                        HealthCheck.too_slow])


@pytest.mark.parametrize("route", ["patch", "replace", "restore", "promote", "consolidate",
                                   "import"])
@given(s=story())
@EDITS
def test_edits_restores_promotions_derivations_and_imports_refuse_it_too(
        client, tenant, db, embedder, route, s):
    """Given a forgotten fact, and (per route) a memory about to be made to say it again
    When a PATCH, a named replace, a restore of a memory deleted before the forget, a
         promotion of a candidate from before fingerprints, a consolidation, or an import says
         it (in other words, in a compound, as an aside, beside a new fact)
    Then it is refused naming the field (or blocked), and the same act with the new fact
         succeeds (control)."""
    h, path = tenant.headers, _path()
    carry, fresh = s["mention"], s["new"]
    [a, b] = create_ok(client, h, {"content": "I like jazz", "path": path},
                       {"content": "I like tea", "path": path})
    if route == "restore":
        [d] = create_ok(client, h, {"content": carry, "path": path})
        [e] = create_ok(client, h, {"content": fresh, "path": path})
        for one in (d, e):
            assert client.delete(f"/v1/memories/{one['id']}", headers=h).status_code == 200
    _forget_stated(client, h, path, s["stated"])

    if route == "patch":
        r = client.patch(f"/v1/memories/{a['id']}", headers={**h, "If-Match": "1"},
                         json={"content": carry})
        assert_error(r, 409, "suppressed", "content")
        ok = client.patch(f"/v1/memories/{a['id']}", headers={**h, "If-Match": "1"},
                          json={"content": fresh})
        assert ok.status_code == 200, ok.text
    elif route == "replace":
        [named] = create_ok(client, h, {"content": "a note to fill in", "path": path,
                                        "name": "note"})
        [res] = create_ok(client, h, {"content": carry, "path": path, "name": "note"},
                          on_conflict="replace")
        assert res["status"] == "blocked" and "forgotten" in res["reason"], res
        [res] = create_ok(client, h, {"content": fresh, "path": path, "name": "note"},
                          on_conflict="replace")
        assert res["status"] == "updated" and res["id"] == named["id"], res
    elif route == "restore":
        assert_error(client.post(f"/v1/memories/{d['id']}/restore", headers=h), 409,
                     "suppressed")
        ok = client.post(f"/v1/memories/{e['id']}/restore", headers=h)
        assert ok.status_code == 200, ok.text
    elif route == "promote":
        ids = []
        for content in (carry, fresh):  # candidates as a store written before this change holds
            [c] = create_ok(client, h, {"content": f"draft {uuid.uuid4().hex[:6]}",
                                        "path": path})
            with db.transaction() as cur:
                cur.execute("UPDATE memories SET content = %s, canonical = %s,"
                            " status = 'candidate' WHERE id = %s",
                            (content, canonicalize(content), c["id"]))
            ids.append(c["id"])
        assert_error(client.post(f"/v1/review/{ids[0]}/promote", headers=h), 409, "suppressed")
        ok = client.post(f"/v1/review/{ids[1]}/promote", headers=h)
        assert ok.status_code == 200, ok.text
    elif route == "consolidate":
        r = client.post("/v1/consolidate", headers=h, json={"ids": [a["id"], b["id"]],
                                                            "content": f"{carry}; likes jazz"})
        assert_error(r, 409, "suppressed", "content")
        ok = client.post("/v1/consolidate", headers=h, json={"ids": [a["id"], b["id"]],
                                                             "content": f"{fresh}; likes jazz"})
        assert ok.status_code == 200, ok.text
    else:
        from strata.maintenance import transfer

        lines = _export_lines_with(db, tenant.tenant_id, path, [carry, fresh], embedder)
        report = transfer.import_lines(db, tenant.tenant_id, lines, embedder)
        assert report["memories"]["blocked"] == 1, report
    # (The promote case's refused candidate stays a candidate: only what is active counts.)
    active = [m["content"] for m in client.get("/v1/memories", headers=h,
                                                params={"path": path}).json()["items"]]
    assert not _holds(active, s["needle"]), active
    assert _holds(active, s["marker"]), active


def _export_lines_with(db, tenant_id, path, contents, embedder) -> list[str]:
    """An export of another tenant holding ``contents`` at ``path`` (a backup made elsewhere)."""
    import io

    from fastapi.testclient import TestClient

    from strata.api.app import create_app
    from strata.auth import create_tenant
    from strata.foundation.config import get_settings
    from strata.maintenance import transfer

    other, key = create_tenant(db, f"src{uuid.uuid4().hex[:8]}")
    with TestClient(create_app(db=db, embedder=embedder, settings=get_settings())) as c:
        create_ok(c, {"Authorization": f"Bearer {key.key}"},
                  *({"content": t, "path": path} for t in contents))
    out = io.StringIO()
    transfer.export(db, other.id, out)
    return out.getvalue().splitlines()


def _plain_hashes(text: str) -> set[str]:
    canonical = canonicalize(text)
    return {hashlib.sha256(x.encode()).hexdigest()
            for x in (canonical, text, canonical.split(" is ")[-1])}


def test_no_row_holds_the_forgotten_content_or_a_plain_hash_of_it(client, tenant, db):
    """Given a fact stated by ingest and by direct create (so receipts, history, lexical keys
         and tombstones have all seen it), edited once, then forgotten
    When every table of the database is read as text
    Then none holds its words, or a sha256 of its text (what a guess could be checked with),
         while the tombstone's keyed hashes are there; before the forget they were (control)."""
    h, path = tenant.headers, _path()
    _ingest(client, h, path, "My gym locker is number 58213")
    live = [m for m in client.get("/v1/memories", headers=h, params={"path": path}).json()["items"]]
    assert len(live) == 1
    mid = live[0]["id"]
    assert client.patch(f"/v1/memories/{mid}", headers={**h, "If-Match": "1"},
                        json={"importance": 0.9}).status_code == 200
    # Its words (letters outside [0-9a-f]: never inside a hash or a uuid by chance) and the
    # sha256 of its text.
    needles = {"locker", *(_plain_hashes(live[0]["content"]))}
    assert _rows_holding(db, needles), "control: the fact is stored before the forget"
    r = client.post(f"/v1/memories/{mid}/forget", headers=h)
    assert r.status_code == 200 and r.json()["tombstone_ids"], r.text
    assert _rows_holding(db, needles) == []
    with db.connection() as conn:
        fp = conn.execute("SELECT fingerprint FROM tombstones WHERE memory_id = %s"
                          " AND reason = 'forgotten'", (uuid.UUID(mid),)).fetchone()["fingerprint"]
    assert fp and all(len(bytes(x)) == fingerprints.HASH_BYTES for x in fp)


def _rows_holding(db, needles: set[str]) -> list[tuple[str, str]]:
    """(table, needle) for every user table with a row whose text holds a needle."""
    found = []
    with db.connection() as conn:
        tables = [r["relname"] for r in conn.execute(
            "SELECT relname FROM pg_stat_user_tables WHERE schemaname = 'public'").fetchall()]
        for table in tables:
            text = " ".join(r["t"] for r in conn.execute(
                f'SELECT t::text AS t FROM "{table}" t').fetchall()).casefold()
            found += [(table, n) for n in needles if n.casefold() in text]
    return found


def test_fingerprints_are_keyed_per_tenant(client, make_tenant, db):
    """Given the same fact forgotten in two tenants
    Then their fingerprints share no hash (a guess confirmed in one says nothing of the
         other), while each tenant's own fingerprint matches its own probes (control)."""
    prints = []
    for _ in range(2):
        t = make_tenant()
        path = _path()
        _forget_stated(client, t.headers, path, "My therapist is Dr. Quorvane")
        with db.transaction() as cur:
            fp = cur.execute("SELECT fingerprint FROM tombstones WHERE tenant_id = %s"
                             " AND reason = 'forgotten'", (t.tenant_id,)).fetchone()["fingerprint"]
            hit = fingerprints.find(cur, t.tenant_id,
                                    [(path, canonicalize("Quorvane called"), None, None)])
        assert hit, "control: the tenant's own probe matches"
        prints.append({bytes(x) for x in fp})
    assert not prints[0] & prints[1]


@pytest.mark.parametrize(("forgotten", "other"), [
    ("My gym locker is number 4417", "I go to the gym on Mondays"),
    ("I have 2 cats", "I have 2 kids"),
    ("My home address is 12 Elm Street", "My office is on Main Street"),
    ("I work at Quorvane", "I work from home on Fridays"),
])
def test_a_different_fact_about_the_same_kind_of_thing_is_not_refused(forgotten, other):
    """The fingerprint holds what identifies a fact, not its topic: another locker, another
    number of pets, another street is a fact of its own (and the forgotten one, reworded,
    still matches: control)."""
    key = b"k" * 32
    fp = fingerprints.fingerprint(key, fingerprints.features(forgotten, canonicalize(forgotten)))

    def carries(text: str) -> bool:
        probe = {fingerprints.keyed(key, p) for p in fingerprints.probes(canonicalize(text))}
        return fingerprints.carries(fp["hashes"], fp["weights"], fp["kinds"], probe)

    assert not carries(other)
    assert carries(f"by the way, {forgotten.lower()}, as I said")


def test_an_owner_lifts_a_forgotten_fingerprint_explicitly_and_the_act_is_audited(
        client, tenant):
    """Given a forgotten fact, blocked when said again (control)
    When a key that can write but not own the path tries to lift its tombstone, and then the
         owner lifts it
    Then the first is refused (403, nothing changes: still blocked), the owner's lift is
         audited as tombstone.lift, the listing shows it no longer in force and never a value,
         and the fact may be stated again."""
    h, path = tenant.headers, "users.alice"
    _forget_stated(client, h, path, "My therapist is Dr. Quorvane")
    listed = client.get("/v1/review/tombstones", headers=h,
                        params={"path": path, "reason": "forgotten"}).json()["items"]
    assert len(listed) == 1 and listed[0]["in_force"] is True, listed
    assert "quorvane" not in json.dumps(listed).casefold()
    tomb = listed[0]["id"]
    again = {"content": "I saw Dr. Quorvane today", "path": path}
    assert create_ok(client, h, again)[0]["status"] == "blocked"

    writer = client.post("/v1/keys", headers=h, json={
        "principal_id": str(tenant.principal_id),
        "ceiling": [{"path": path, "level": "write"}]}).json()["key"]
    r = client.post(f"/v1/review/tombstones/{tomb}/lift", headers={
        "Authorization": f"Bearer {writer}"})
    assert_error(r, 403, "forbidden")
    assert create_ok(client, h, again)[0]["status"] == "blocked"

    r = client.post(f"/v1/review/tombstones/{tomb}/lift", headers=h)
    assert r.status_code == 200 and r.json()["in_force"] is False, r.text
    audit = client.get("/v1/audit", headers=h, params={"limit": 1000}).json()["items"]
    assert any(e["operation"] == "tombstone.lift" and e["action"] == "admin" for e in audit)
    assert create_ok(client, h, again)[0]["status"] == "inserted"
    assert_error(client.post(f"/v1/review/tombstones/{uuid.uuid4()}/lift", headers=h), 404,
                 "not_found")


@given(topic=NAME, facts=st.lists(st.tuples(NEW_NAME, st.sampled_from([
    "stores its events in {}", "is owned by {}", "launches with {} as the partner",
    "moved its servers to {}"])), min_size=2, max_size=4, unique_by=lambda f: f[0]),
    budget=NUMBER)
@EDITS
def test_forgetting_one_fact_leaves_the_others_about_the_same_subject(
        client, tenant, topic, facts, budget):
    """Given several facts about one subject (a project's name in each) and one more with a
         number, in one path
    When the one with the number is forgotten
    Then the others stay active (the subject is what they share, not what was forgotten);
         the number said again about the subject is refused (control), and a new fact about
         the subject lands."""
    h, path = tenant.headers, _path()
    forgotten = f"Project {topic}'s contractor budget is {budget} euros"
    others = [f"Project {topic} {template.format(name)}" for name, template in facts]
    # and one said the same way, one word apart: what tells it apart is that word alone
    others.append(forgotten.replace(budget, facts[0][0]))
    create_ok(client, h, *({"content": t, "path": path} for t in others))
    mid = _forget_stated(client, h, path, forgotten)
    live = _live(client, h, path)
    assert sorted(live) == sorted(others), (forgotten, live)
    [again, new] = create_ok(client, h,
                             {"content": f"The {topic} budget is {budget} euros", "path": path},
                             {"content": f"Project {topic} hired a designer", "path": path})
    assert again["status"] == "blocked" and "forgotten" in again["reason"], again
    assert new["status"] == "inserted", new
    assert mid not in json.dumps(live)
