"""Reflection, consolidation and the evidence cascade, through the real HTTP app, the real
database and the scripted model over the real openai client (tests/fake_openai.py)."""

from __future__ import annotations

import io
import json

import pytest
from fastapi.testclient import TestClient

from strata.api.app import create_app
from strata.maintenance.transfer import export

PATH = "users.alice"
PREFS = ["I prefer tea in the morning", "I like green tea after lunch",
         "I drink herbal tea before bed"]
PATTERN = "The user drinks tea throughout the day."


@pytest.fixture
def model_client(db, embedder, settings, fake_llm):
    app = create_app(db=db, embedder=embedder, settings=fake_llm.settings(settings))
    with TestClient(app, raise_server_exceptions=False) as c:
        yield c


def auth(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


def create(c, key, *contents, path=PATH, **extra) -> list[str]:
    r = c.post("/v1/memories", headers=auth(key), json={"memories": [
        {"content": t, "path": path, "kind": "preference", **extra} for t in contents]})
    assert r.status_code == 200, r.text
    return [x["id"] for x in r.json()["results"]]


def cite_all(content: str = PATTERN):
    """A model answer citing every memory the prompt shows."""
    return lambda rec: {"content": content, "evidence_ids": rec.shown_ids()}


def reflect_over_prefs(c, key, fake_llm) -> tuple[list[str], dict]:
    ids = create(c, key, *PREFS)
    fake_llm.script(cite_all())
    r = c.post("/v1/reflect", headers=auth(key), json={"seed_id": ids[0]})
    assert r.status_code == 200, r.text
    return ids, r.json()


def edges(c, key, memory_id, type_) -> set[str]:
    r = c.get(f"/v1/memories/{memory_id}/related", headers=auth(key))
    assert r.status_code == 200, r.text
    return {e["target_id"] for e in r.json()["items"]
            if e["type"] == type_ and e["direction"] == "outgoing"}


def search_ids(c, key, query, **extra) -> list[str]:
    r = c.post("/v1/search", headers=auth(key), json={"query": query, "paths": [PATH], **extra})
    assert r.status_code == 200, r.text
    return [x["id"] for x in r.json()["results"]]


def test_reflection_over_three_preferences_stores_one_derived_memory(model_client, tenant,
                                                                      fake_llm):
    """Given three active preferences
    When a reflection is asked around one of them
    Then one llm_derived memory of kind reflection is stored with a DERIVED_FROM edge to each
    of the three; the prompt showed the three and nothing else."""
    ids, body = reflect_over_prefs(model_client, tenant.key, fake_llm)
    memory = body["memory"]
    assert (memory["origin"], memory["kind"], memory["status"]) == (
        "llm_derived", "reflection", "active")
    assert memory["content"] == PATTERN and memory["path"] == PATH
    assert set(body["evidence_ids"]) == set(ids)
    assert edges(model_client, tenant.key, memory["id"], "DERIVED_FROM") == set(ids)
    (req,) = fake_llm.completions
    assert req.schema_name == "ReflectionAnswer" and set(req.shown_ids()) == set(ids)


def test_a_derived_memory_is_never_evidence(model_client, tenant, fake_llm):
    """Given a reflection over three preferences
    When a second reflection names it as the seed, or reflects over the path
    Then the derived seed is refused (409 naming seed_id), and the path's reflection is shown
    the three preferences (control) but never the derived memory."""
    ids, body = reflect_over_prefs(model_client, tenant.key, fake_llm)
    derived = body["memory"]["id"]
    r = model_client.post("/v1/reflect", headers=auth(tenant.key),
                          json={"seed_id": derived})
    assert r.status_code == 409, r.text
    assert r.json()["error"]["field"] == "seed_id"
    fake_llm.script(cite_all("The user likes tea at every hour."))
    r = model_client.post("/v1/reflect", headers=auth(tenant.key), json={"path": PATH})
    assert r.status_code == 200, r.text
    shown = set(fake_llm.completions[-1].shown_ids())
    assert set(ids) <= shown and derived not in shown
    # Nor is it an original of a consolidation (control: the preferences are).
    r = model_client.post("/v1/consolidate", headers=auth(tenant.key), json={
        "ids": [derived, ids[0]], "content": "Tea, always"})
    assert r.status_code == 409 and r.json()["error"]["field"] == "ids[0]", r.text
    r = model_client.post("/v1/consolidate", headers=auth(tenant.key), json={
        "ids": [ids[0], ids[1]], "content": "Tea in the morning and green tea after lunch"})
    assert r.status_code == 200, r.text


def test_forgetting_evidence_erases_the_reflection(model_client, tenant, fake_llm, db):
    """Given a reflection over three preferences
    When one of its evidence memories is forgotten
    Then the reflection is retired (cause evidence_retired) and forgotten with it: gone from
    search, its history keeps no content, and an export does not carry its text -- while the
    two other preferences stay active and findable (control)."""
    ids, body = reflect_over_prefs(model_client, tenant.key, fake_llm)
    derived = body["memory"]["id"]
    assert derived in search_ids(model_client, tenant.key, "user drinks tea throughout the day")
    r = model_client.post(f"/v1/memories/{ids[1]}/forget", headers=auth(tenant.key))
    assert r.status_code == 200, r.text
    assert derived in [str(i) for i in r.json()["also_forgotten"]]
    assert model_client.get(f"/v1/memories/{derived}", headers=auth(tenant.key)).status_code == 404
    found = search_ids(model_client, tenant.key, "tea", include=["history"])
    assert derived not in found and ids[0] in found  # control: the rest is still there
    history = model_client.get(f"/v1/memories/{derived}/history", headers=auth(tenant.key))
    assert history.status_code == 200
    entries = history.json()["items"]
    assert "evidence_retired" in [e["cause"] for e in entries]
    assert all(e["erased"] and "content" not in e["snapshot"] for e in entries)
    out = io.StringIO()
    export(db, tenant.tenant_id, out)
    assert PATTERN not in out.getvalue() and PREFS[0] in out.getvalue()


def test_superseded_evidence_flags_the_reflection_then_retires_it(model_client, tenant,
                                                                   fake_llm):
    """Given a reflection over two slotted preferences
    When one is superseded by a new value, the reflection is flagged for review (candidate:
    the other evidence still holds); when the other is deleted too, it is retired
    (superseded), each change caused by evidence_retired."""
    key = tenant.key
    a = create(model_client, key, "My editor is vim", slot="user.editor", value="vim")[0]
    b = create(model_client, key, "My shell is zsh", slot="user.shell", value="zsh")[0]
    fake_llm.script(cite_all("The user prefers terminal tools."))
    r = model_client.post("/v1/reflect", headers=auth(key), json={"path": PATH})
    assert r.status_code == 200, r.text
    derived = r.json()["memory"]["id"]
    assert set(r.json()["evidence_ids"]) == {a, b}
    new = create(model_client, key, "My editor is emacs now", slot="user.editor", value="emacs")
    assert model_client.get(f"/v1/memories/{a}", headers=auth(key)).json()["status"] == "superseded"
    after = model_client.get(f"/v1/memories/{derived}", headers=auth(key)).json()
    assert after["status"] == "candidate", after
    assert model_client.delete(f"/v1/memories/{b}", headers=auth(key)).status_code == 200
    final = model_client.get(f"/v1/memories/{derived}", headers=auth(key)).json()
    assert final["status"] == "superseded" and final["valid_to"] is not None
    causes = [e["cause"] for e in model_client.get(
        f"/v1/memories/{derived}/history", headers=auth(key)).json()["items"]]
    assert causes == ["evidence_retired", "evidence_retired"]
    assert new[0] in search_ids(model_client, key, "editor emacs")  # control


def test_reflection_without_a_model_names_the_setting(client, tenant):
    """Given no model configured
    When a reflection is asked
    Then 409 model_unavailable naming STRATA_LLM_MODEL, and nothing is written."""
    ids = create(client, tenant.key, *PREFS)
    r = client.post("/v1/reflect", headers=auth(tenant.key), json={"seed_id": ids[0]})
    assert r.status_code == 409, r.text
    err = r.json()["error"]
    assert err["code"] == "model_unavailable" and err["setting"] == "STRATA_LLM_MODEL"
    listed = client.get("/v1/memories", headers=auth(tenant.key), params={"path": PATH}).json()
    assert len(listed["items"]) == 3


@pytest.mark.parametrize("body,field", [
    ({}, None), ({"seed_id": "00000000-0000-4000-8000-000000000000", "path": PATH}, None),
    ({"path": "bad path"}, "path"), ({"path": PATH, "limit": 1}, "limit"),
])
def test_bad_reflect_requests_are_422(client, tenant, body, field):
    r = client.post("/v1/reflect", headers=auth(tenant.key), json=body)
    assert r.status_code == 422, r.text
    if field:
        assert r.json()["error"]["field"] == field


def test_consolidation_supersedes_its_originals(client, tenant):
    """Given two memories
    When they are consolidated with content from the caller
    Then one new memory (summary) with CONSOLIDATES edges to both, which are superseded by
    it with the reason; search finds the new one and not the originals."""
    key = tenant.key
    ids = create(client, key, "I have a cat named Tom", "My cat Tom is grey")
    r = client.post("/v1/consolidate", headers=auth(key), json={
        "ids": ids, "content": "I have a grey cat named Tom", "reason": "same cat"})
    assert r.status_code == 200, r.text
    merged = r.json()["memory"]
    assert (merged["kind"], merged["origin"], merged["status"]) == ("summary", "user_stated",
                                                                     "active")
    assert edges(client, key, merged["id"], "CONSOLIDATES") == set(ids)
    assert edges(client, key, merged["id"], "SUPERSEDES") == set(ids)
    for one in ids:
        assert client.get(f"/v1/memories/{one}", headers=auth(key)).json()["status"] == "superseded"
    reasons = {e["reason"] for e in client.get(f"/v1/memories/{merged['id']}/related",
                                               headers=auth(key)).json()["items"]
               if e["type"] == "SUPERSEDES"}
    assert reasons == {"consolidated: same cat"}
    found = search_ids(client, key, "grey cat named Tom")
    assert merged["id"] in found and not set(ids) & set(found)
    # Consolidating what is no longer active is refused, naming the id.
    again = client.post("/v1/consolidate", headers=auth(key), json={
        "ids": ids, "content": "A cat"})
    assert again.status_code == 409 and again.json()["error"]["field"] == "ids[0]"


def test_consolidation_by_the_model_and_forgetting_an_original(model_client, tenant,
                                                                fake_llm):
    """Given two memories consolidated by the model (llm_derived)
    When one original is forgotten
    Then the consolidation is forgotten with it (its text may carry the forgotten one)."""
    key = tenant.key
    ids = create(model_client, key, "I visited Rome in May", "I loved Rome's food")
    fake_llm.script({"content": "The user visited Rome in May and loved its food."})
    r = model_client.post("/v1/consolidate", headers=auth(key), json={"ids": ids})
    assert r.status_code == 200, r.text
    merged = r.json()["memory"]
    assert merged["origin"] == "llm_derived"
    assert fake_llm.completions[-1].schema_name == "ConsolidationAnswer"
    forgot = model_client.post(f"/v1/memories/{ids[0]}/forget", headers=auth(key)).json()
    assert merged["id"] in [str(i) for i in forgot["also_forgotten"]]
    assert model_client.get(f"/v1/memories/{merged['id']}", headers=auth(key)).status_code == 404
    # control: the other original is still there (superseded, not forgotten)
    assert model_client.get(f"/v1/memories/{ids[1]}", headers=auth(key)).status_code == 200


def test_consolidation_across_paths_names_the_path(client, tenant):
    ids = [create(client, tenant.key, "I like chess", path="users.alice")[0],
           create(client, tenant.key, "I like chess openings", path="users.bob")[0]]
    r = client.post("/v1/consolidate", headers=auth(tenant.key),
                    json={"ids": ids, "content": "Chess"})
    assert r.status_code == 422 and r.json()["error"]["field"] == "path"
    r = client.post("/v1/consolidate", headers=auth(tenant.key),
                    json={"ids": ids, "content": "Chess", "path": "users.alice"})
    assert r.status_code == 200, r.text  # control


def test_model_failure_writes_nothing(model_client, tenant, fake_llm):
    ids = create(model_client, tenant.key, *PREFS)
    fake_llm.script({"content": "x", "evidence_ids": ["not-an-id"]})
    r = model_client.post("/v1/reflect", headers=auth(tenant.key),
                          json={"seed_id": ids[0]})
    assert r.status_code == 503 and r.json()["error"]["code"] == "provider_unavailable", r.text
    listed = model_client.get("/v1/memories", headers=auth(tenant.key),
                              params={"path": PATH}).json()
    assert len(listed["items"]) == 3
    assert json.dumps(listed).count("llm_derived") == 0


def test_search_marks_derived_memories_and_can_exclude_them(model_client, tenant, fake_llm):
    """Given a reflection over three preferences
    When searching, the reflection comes back with origin llm_derived (the preferences with
    user_stated); with exclude_derived it does not, while the preferences still do (control),
    and why_not names the origin filter."""
    ids, body = reflect_over_prefs(model_client, tenant.key, fake_llm)
    derived = body["memory"]["id"]
    r = model_client.post("/v1/search", headers=auth(tenant.key), json={
        "query": "user drinks tea throughout the day", "limit": 10})
    origins = {x["id"]: x["origin"] for x in r.json()["results"]}
    assert origins[derived] == "llm_derived" and origins[ids[0]] == "user_stated"
    r = model_client.post("/v1/search", headers=auth(tenant.key), json={
        "query": "user drinks tea throughout the day", "exclude_derived": True,
        "why_not": [derived]})
    found = [x["id"] for x in r.json()["results"]]
    assert derived not in found and ids[0] in found
    (why,) = r.json()["why_not"]
    assert why["reasons"] == ["origin"]
    # Graph expansion from a preference does not bring the reflection back either.
    r = model_client.post("/v1/search", headers=auth(tenant.key), json={
        "query": "green tea after lunch", "expand": True, "exclude_derived": True})
    assert derived not in [x["id"] for x in r.json()["results"]]
    r = model_client.post("/v1/search", headers=auth(tenant.key), json={
        "query": "green tea after lunch", "expand": True, "limit": 1})
    assert derived in [x["id"] for x in r.json()["results"]]  # control: expansion finds it


def test_memory_rules_decide_for_derived_memories(model_client, tenant, fake_llm):
    """Given preferences at a path whose rule turns capture off
    When a reflection or a consolidation would store a memory there
    Then each is refused (409 naming the rule) and nothing is written; under review-only
    capture the reflection is held as a candidate. Control: the same requests succeed once
    the rule is lifted."""
    key, h = tenant.key, auth(tenant.key)
    ids = create(model_client, key, *PREFS)
    rule = model_client.put("/v1/rules", headers=h, json={"path": PATH, "capture": "off"})
    assert rule.status_code == 200, rule.text
    fake_llm.script(cite_all())
    r = model_client.post("/v1/reflect", headers=h, json={"seed_id": ids[0]})
    assert r.status_code == 409 and r.json()["error"]["rule_id"] == rule.json()["id"], r.text
    r = model_client.post("/v1/consolidate", headers=h, json={
        "ids": ids[:2], "content": "Tea in the morning and after lunch"})
    assert r.status_code == 409 and r.json()["error"]["rule_id"] == rule.json()["id"], r.text
    assert model_client.get(f"/v1/memories/{ids[0]}", headers=h).json()["status"] == "active"
    held = model_client.put("/v1/rules", headers=h, json={
        "path": PATH, "capture": "review_only", "expected_version": 1})
    assert held.status_code == 200, held.text
    fake_llm.script(cite_all())
    r = model_client.post("/v1/reflect", headers=h, json={"seed_id": ids[0]})
    assert r.status_code == 200 and r.json()["memory"]["status"] == "candidate", r.text
    assert model_client.delete(f"/v1/rules/{rule.json()['id']}", headers=h).status_code == 200
    r = model_client.post("/v1/consolidate", headers=h, json={
        "ids": ids[:2], "content": "Tea in the morning and after lunch"})
    assert r.status_code == 200 and r.json()["memory"]["status"] == "active", r.text
