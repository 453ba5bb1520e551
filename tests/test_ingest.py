"""Ingestion with truth maintenance, end to end through POST /v1/ingest on a real database.

The rule extractor and rule judge run here (no model configured); the model-backed path is
exercised in test_ingest_llm.py against a loopback OpenAI-compatible server.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

import pytest
from support import assert_error

PATH = "users.alice"
T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)


def say(client, headers, *texts: str, at: datetime = T0, path: str = PATH, **extra) -> dict:
    """Send user messages (one minute apart from ``at``) and wait for the finished receipt."""
    messages = [
        {"role": "user", "content": t, "at": (at + timedelta(minutes=i)).isoformat()}
        for i, t in enumerate(texts)
    ]
    r = client.post("/v1/ingest", headers=headers,
                    json={"path": path, "messages": messages, "wait": True, **extra})
    assert r.status_code == 200, r.text
    return r.json()


def memories(client, headers, status: str = "active", path: str = PATH) -> list[dict]:
    r = client.get("/v1/memories", headers=headers, params={"path": path, "status": status})
    assert r.status_code == 200, r.text
    return r.json()["items"]


def contents(items: list[dict]) -> list[str]:
    return [m["content"] for m in items]


def outcomes(receipt: dict) -> list[str]:
    return [i["outcome"] for i in receipt["items"]]


def test_preference_change_supersedes_with_reason_and_edge(client, tenant):
    """Given "I prefer MongoDB"
    When weeks later the user says "I've switched to PostgreSQL"
    Then one active preference remains (PostgreSQL), MongoDB is superseded with its valid time
    closed, a SUPERSEDES edge carries a reason, and the receipt says superseded_existing."""
    h = tenant.headers
    first = say(client, h, "I prefer MongoDB")
    assert first["status"] == "wrote" and outcomes(first) == ["created"]
    second = say(client, h, "I've switched to PostgreSQL", at=T0 + timedelta(weeks=3))
    assert outcomes(second) == ["superseded_existing"], second

    active = memories(client, h)
    assert len(active) == 1 and "PostgreSQL" in active[0]["content"]
    [old] = memories(client, h, status="superseded")
    assert "MongoDB" in old["content"] and old["valid_to"] is not None
    edges = client.get(f"/v1/memories/{active[0]['id']}/related", headers=h).json()["items"]
    assert edges == [] or all(e["other_status"] != "active" for e in edges)
    with client.app.state.runtime.db.connection() as conn:
        edge = conn.execute(
            "SELECT type::text AS type, reason, decided_by FROM memory_relationships"
            " WHERE source_id = %s AND target_id = %s", (active[0]["id"], old["id"])).fetchone()
    assert edge["type"] == "SUPERSEDES" and edge["reason"] and edge["decided_by"] == "rule"
    assert second["items"][0]["related_ids"] == [old["id"]]


def test_repetition_in_passing_does_not_bring_a_superseded_value_back(client, tenant):
    """Given MongoDB superseded by PostgreSQL
    When a later message says "I prefer MongoDB" again in passing
    Then it is blocked by the tombstone and PostgreSQL stays the one active preference."""
    h = tenant.headers
    say(client, h, "I prefer MongoDB")
    say(client, h, "I've switched to PostgreSQL", at=T0 + timedelta(weeks=3))
    again = say(client, h, "I prefer MongoDB", at=T0 + timedelta(weeks=5))
    assert outcomes(again) == ["blocked"], again
    assert "tombstone" in again["items"][0]["reason"]
    assert again["status"] == "meaningful_no_write"
    active = memories(client, h)
    assert [("PostgreSQL" in c) for c in contents(active)] == [True]


def test_going_back_explicitly_becomes_a_candidate_for_review(client, tenant):
    """Given MongoDB superseded by PostgreSQL
    When the user says "I've gone back to MongoDB"
    Then a candidate is held with a CONTRADICTS edge to PostgreSQL, which stays active; the
    review list shows it with that edge."""
    h = tenant.headers
    say(client, h, "I prefer MongoDB")
    say(client, h, "I've switched to PostgreSQL", at=T0 + timedelta(weeks=3))
    back = say(client, h, "I've gone back to MongoDB", at=T0 + timedelta(weeks=6))
    assert outcomes(back) == ["candidate"], back
    active = memories(client, h)
    assert len(active) == 1 and "PostgreSQL" in active[0]["content"]
    review = client.get("/v1/review", headers=h).json()["items"]
    assert [m["id"] for m in review] == [back["items"][0]["memory_id"]]
    assert review[0]["contradicts"][0]["target_id"] == active[0]["id"]


def test_promoting_the_change_back_makes_it_current(client, tenant):
    """Given a candidate "gone back to MongoDB"
    When it is promoted on review
    Then it is the active preference, PostgreSQL is superseded, and a later "I prefer MongoDB"
    reinforces instead of being blocked (control: it was blocked before the promotion)."""
    h = tenant.headers
    say(client, h, "I prefer MongoDB")
    say(client, h, "I've switched to PostgreSQL", at=T0 + timedelta(weeks=3))
    assert outcomes(say(client, h, "I prefer MongoDB", at=T0 + timedelta(weeks=4))) == ["blocked"]
    back = say(client, h, "I've gone back to MongoDB", at=T0 + timedelta(weeks=6))
    cid = back["items"][0]["memory_id"]
    r = client.post(f"/v1/review/{cid}/promote", headers=h)
    assert r.status_code == 200 and r.json()["status"] == "active"
    active = memories(client, h)
    assert [m["id"] for m in active] == [cid]
    assert any("PostgreSQL" in c for c in contents(memories(client, h, status="superseded")))
    later = say(client, h, "I prefer MongoDB", at=T0 + timedelta(weeks=8))
    assert outcomes(later) == ["reinforced"], later


def test_reject_with_suppress_blocks_the_value(client, tenant):
    """Given a candidate
    When it is rejected with suppress
    Then it is rejected and the same change-back is blocked next time (while a different
    value of the slot is still accepted: control)."""
    h = tenant.headers
    say(client, h, "I prefer MongoDB")
    say(client, h, "I've switched to PostgreSQL", at=T0 + timedelta(weeks=3))
    back = say(client, h, "I've gone back to MongoDB", at=T0 + timedelta(weeks=6))
    cid = back["items"][0]["memory_id"]
    r = client.post(f"/v1/review/{cid}/reject", headers=h, json={"suppress": True})
    assert r.status_code == 200 and r.json()["status"] == "rejected"
    again = say(client, h, "I've gone back to MongoDB", at=T0 + timedelta(weeks=7))
    assert outcomes(again) == ["blocked"], again
    other = say(client, h, "I've switched to SQLite", at=T0 + timedelta(weeks=8))
    assert outcomes(other) == ["superseded_existing"], other


def test_older_statement_delivered_late_does_not_supersede(client, tenant):
    """Given "I've switched to PostgreSQL" said in March
    When a message from January saying "I prefer MongoDB" arrives afterwards
    Then PostgreSQL stays active and MongoDB is stored as already superseded."""
    h = tenant.headers
    say(client, h, "I've switched to PostgreSQL", at=T0)
    late = say(client, h, "I prefer MongoDB", at=T0 - timedelta(weeks=8))
    assert outcomes(late) == ["stored_as_superseded"], late
    active = memories(client, h)
    assert len(active) == 1 and "PostgreSQL" in active[0]["content"]
    [old] = memories(client, h, status="superseded")
    assert "MongoDB" in old["content"]


def test_paraphrase_reinforces_instead_of_duplicating(client, tenant):
    """Given "I prefer PostgreSQL"
    When the user repeats it in other casing and punctuation, and states it again later
    Then there is still one active memory, reinforced (control: a new fact is created)."""
    h = tenant.headers
    say(client, h, "I prefer PostgreSQL")
    again = say(client, h, "i prefer postgresql!!", at=T0 + timedelta(days=1))
    assert outcomes(again) == ["reinforced"], again
    new = say(client, h, "My name is Alice", at=T0 + timedelta(days=2))
    assert outcomes(new) == ["created"]
    active = memories(client, h)
    assert len(active) == 2
    pg = next(m for m in active if "PostgreSQL" in m["content"])
    assert pg["reinforcements"] == 1


def test_forget_then_extracted_again_is_blocked(client, tenant):
    """Given a memory created by ingestion and then forgotten
    When the same fact is extracted again
    Then it is blocked (control: a different fact in the same message is created)."""
    h = tenant.headers
    first = say(client, h, "I live in Lisbon")
    mid = first["items"][0]["memory_id"]
    assert client.post(f"/v1/memories/{mid}/forget", headers=h).status_code == 200
    again = say(client, h, "I live in Lisbon", "My name is Alice", at=T0 + timedelta(days=3))
    assert outcomes(again) == ["blocked", "created"], again


def test_idempotent_replay_writes_nothing_twice(client, tenant, db):
    """Given a request with an idempotency key
    When it is sent again (same body)
    Then the same receipt comes back and nothing is written twice; the same key with a
    different body is a 409."""
    h = tenant.headers
    first = say(client, h, "I prefer PostgreSQL", idempotency_key="req-1")
    with db.connection() as conn:
        before = conn.execute("SELECT count(*) AS n, max(version) AS v FROM memories").fetchone()
    again = say(client, h, "I prefer PostgreSQL", idempotency_key="req-1")
    assert again["id"] == first["id"] and again["items"] == first["items"]
    with db.connection() as conn:
        assert conn.execute("SELECT count(*) AS n, max(version) AS v FROM memories").fetchone() == before
    r = client.post("/v1/ingest", headers=h, json={
        "path": PATH, "idempotency_key": "req-1", "wait": True,
        "messages": [{"role": "user", "content": "I prefer MySQL"}]})
    assert_error(r, 409, "conflict", "idempotency_key")


def test_retried_steps_write_nothing_twice(client, tenant, db):
    """Given a finished receipt
    When every step is run again (a retried Step Functions task)
    Then no step writes anything (memory rows and versions unchanged, receipt unchanged)."""
    from strata.ingest.pipeline import STEPS, run_step

    h = tenant.headers
    done = say(client, h, "I prefer PostgreSQL", "My name is Alice")
    rt = client.app.state.runtime.ingest
    with db.connection() as conn:
        before = conn.execute("SELECT id, version FROM memories ORDER BY id").fetchall()
    payload = {"receipt_id": done["id"], "tenant_id": str(tenant.tenant_id)}
    for step in STEPS:
        out = run_step(rt, step, payload)
        assert out["status"] == "wrote"
    with db.connection() as conn:
        assert conn.execute("SELECT id, version FROM memories ORDER BY id").fetchall() == before
    assert client.get(f"/v1/ingest/{done['id']}", headers=h).json()["items"] == done["items"]


def test_async_ingest_returns_202_then_finishes(client, tenant):
    """Given no wait flag
    When a conversation is sent
    Then 202 with a queued (or running) receipt, and the receipt later reads wrote."""
    import time

    h = tenant.headers
    r = client.post("/v1/ingest", headers=h, json={
        "path": PATH, "messages": [{"role": "user", "content": "I prefer PostgreSQL"}]})
    assert r.status_code == 202, r.text
    assert r.json()["status"] in ("queued", "running", "wrote")
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        receipt = client.get(f"/v1/ingest/{r.json()['id']}", headers=h).json()
        if receipt["status"] == "wrote":
            break
        time.sleep(0.05)
    assert receipt["status"] == "wrote"
    assert len(memories(client, h)) == 1


class BrokenEmbedder:
    """An embedding provider that is down (the provider, not strata, is the fake)."""

    model = "broken-embedder"
    dim = 384

    def embed(self, texts):
        raise ConnectionError("provider unreachable")


def test_embedder_failure_writes_nothing(db, tenant, caller_for, settings):
    """Given an embedding provider that fails
    When a conversation is ingested
    Then the receipt is embed_failed and no memory is written; with a working embedder the
    same conversation writes (control)."""
    from strata.ingest.models import IngestRequest
    from strata.ingest.pipeline import IngestRuntime
    from strata.ingest.service import ingest
    from strata.providers import HashingEmbedder

    caller = caller_for(tenant.key)
    req = IngestRequest(path=PATH, wait=True, messages=[{"role": "user", "content": "I prefer PostgreSQL"}])
    broken = IngestRuntime(db, BrokenEmbedder(), settings)
    receipt, finished = ingest(broken, None, caller, req)
    assert finished and receipt.status == "embed_failed" and receipt.error
    with db.connection() as conn:
        assert conn.execute("SELECT count(*) AS n FROM memories").fetchone()["n"] == 0
    ok = IngestRuntime(db, HashingEmbedder(384), settings)
    receipt, _ = ingest(ok, None, caller, req)
    assert receipt.status == "wrote"


class ExplodingJudge:
    name = "exploding"

    def judge(self, candidate, neighbours):
        raise TimeoutError("judge timed out")


def test_conflict_failure_still_stores_the_memory(db, tenant, caller_for, settings):
    """Given a conflict judge that fails
    When a statement close to an existing one is ingested
    Then the memory is stored (unrelated) and the receipt notes that conflict analysis did not
    run (control: with the rule judge the same statement is linked as a refinement)."""
    from strata.ingest.models import IngestRequest
    from strata.ingest.pipeline import IngestRuntime
    from strata.ingest.service import ingest
    from strata.providers import HashingEmbedder

    def run(rt, text, path):
        return ingest(rt, None, caller_for(tenant.key), IngestRequest(path=path, wait=True, messages=[
            {"role": "user", "content": text}]))[0]

    good = IngestRuntime(db, HashingEmbedder(384), settings)
    bad = IngestRuntime(db, HashingEmbedder(384), settings, _judge=ExplodingJudge())
    for path in ("users.broken", "users.working"):
        run(good, "I have a dog named Rex", path)
    receipt = run(bad, "I have a dog named Rex and a cat named Tom", "users.broken")
    assert receipt.status == "wrote"
    assert any("conflict analysis did not run" in n for n in receipt.notes), receipt.notes
    assert [(i.outcome, i.related_ids) for i in receipt.items] == [("created", [])]
    control = run(good, "I have a dog named Rex and a cat named Tom", "users.working")
    assert [i.outcome for i in control.items] == ["created"] and control.items[0].related_ids
    assert control.notes == []
    with db.connection() as conn:
        n = conn.execute("SELECT count(*) AS n FROM memories WHERE status = 'active'").fetchone()["n"]
    assert n == 4


def test_refinement_links_with_refines_and_both_stay_active(client, tenant, db):
    """Given "I have a dog named Rex"
    When the user adds detail ("... and a cat named Tom")
    Then both are active and a REFINES edge links the new one to the old one."""
    h = tenant.headers
    first = say(client, h, "I have a dog named Rex")
    second = say(client, h, "I have a dog named Rex and a cat named Tom", at=T0 + timedelta(days=1))
    old_id, new_id = first["items"][0]["memory_id"], second["items"][0]["memory_id"]
    assert second["items"][0]["related_ids"] == [old_id]
    assert {m["id"] for m in memories(client, h)} == {old_id, new_id}
    related = client.get(f"/v1/memories/{new_id}/related", headers=h).json()["items"]
    assert [(e["type"], e["other_id"]) for e in related] == [("REFINES", old_id)]


def test_ingest_needs_write_access_and_tenant_scope(client, tenant, make_tenant, db):
    """Given another tenant's receipt id, and a key whose holder has no grant on the path
    Then GET answers 404 and ingest answers 403 (control: the owner ingests and reads)."""
    from strata.auth import Caller, create_key, create_principal

    h = tenant.headers
    done = say(client, h, "I prefer PostgreSQL")
    system = Caller.system(tenant.tenant_id)
    reader = create_principal(db, system, "reader", "agent")
    key = create_key(db, system, principal_id=reader.id).key
    r = client.post("/v1/ingest", headers={"Authorization": f"Bearer {key}"},
                    json={"path": PATH, "messages": [{"role": "user", "content": "I like tea"}]})
    assert_error(r, 403, "forbidden", "path")
    assert_error(client.get(f"/v1/ingest/{done['id']}", headers={"Authorization": f"Bearer {key}"}),
                 404, "not_found")
    other = make_tenant()
    assert_error(client.get(f"/v1/ingest/{done['id']}", headers=other.headers), 404, "not_found")
    assert client.get(f"/v1/ingest/{done['id']}", headers=h).status_code == 200
    assert_error(client.get(f"/v1/ingest/{uuid.uuid4()}", headers=h), 404, "not_found")


@pytest.mark.parametrize("body,field", [
    ({"path": PATH, "messages": []}, "messages"),
    ({"path": PATH, "messages": [{"role": "robot", "content": "hi"}]}, "messages[0].role"),
    ({"path": "a..b", "messages": [{"role": "user", "content": "hi"}]}, "path"),
    ({"path": PATH, "messages": [{"role": "user", "content": " "}]}, "messages[0].content"),
    ({"path": PATH, "messages": [{"role": "user", "content": "hi", "at": "soon"}]}, "messages[0].at"),
    ({"path": PATH, "messages": [{"role": "user", "content": "hi"}], "extra": 1}, "extra"),
])
def test_bad_ingest_requests_name_the_field(client, tenant, body, field):
    """Bad input is a 422 naming the field, and nothing is written (control: a good one is)."""
    r = client.post("/v1/ingest", headers=tenant.headers, json=body)
    assert_error(r, 422, "invalid_input", field)
    assert memories(client, tenant.headers) == []


def test_negation_retires_only_the_value_it_names(client, tenant):
    """Given PostgreSQL as the active database preference (MongoDB retired before)
    When the user says "I no longer use MongoDB", then "I no longer use PostgreSQL"
    Then the first leaves PostgreSQL active (it names another value), the second retires it."""
    h = tenant.headers
    say(client, h, "I prefer MongoDB")
    say(client, h, "I've switched to PostgreSQL", at=T0 + timedelta(weeks=1))
    say(client, h, "I no longer use MongoDB", at=T0 + timedelta(weeks=2))
    assert any("PostgreSQL" in c for c in contents(memories(client, h)))
    out = say(client, h, "I no longer use PostgreSQL", at=T0 + timedelta(weeks=3))
    assert "superseded_existing" in outcomes(out), out
    assert not any("prefers PostgreSQL" in c or "switched to PostgreSQL" in c
                   for c in contents(memories(client, h)))


def test_paraphrase_in_other_words_reinforces(client, tenant):
    """Given "I love hiking in the mountains"
    When the user says "I really love hiking in mountains"
    Then the rule judge sees the same statement in other words and reinforces it (one active
    memory), while a different hobby is created (control)."""
    h = tenant.headers
    say(client, h, "I love hiking in the mountains")
    again = say(client, h, "I really love hiking in mountains", at=T0 + timedelta(days=1))
    assert outcomes(again) == ["reinforced"], again
    other = say(client, h, "I love sailing on the lake", at=T0 + timedelta(days=2))
    assert outcomes(other) == ["created"], other
    assert len(memories(client, h)) == 2


def test_review_merge_and_decisions_are_recorded_with_the_principal(client, tenant, db):
    """Given a candidate (a change back to MongoDB)
    When it is merged into the active memory
    Then the candidate is rejected with a DUPLICATE_OF edge decided by the principal, the
    target gained its evidence, and the history of both names the review cause and actor;
    merging again answers 409 (it is no longer a candidate)."""
    h = tenant.headers
    say(client, h, "I prefer MongoDB")
    say(client, h, "I've switched to PostgreSQL", at=T0 + timedelta(weeks=3))
    back = say(client, h, "I've gone back to MongoDB", at=T0 + timedelta(weeks=6))
    cid = back["items"][0]["memory_id"]
    [target] = memories(client, h)
    before = len(target["evidence"])
    r = client.post(f"/v1/review/{cid}/merge", headers=h, json={"into": target["id"]})
    assert r.status_code == 200, r.text
    assert len(r.json()["evidence"]) > before
    got = client.get(f"/v1/memories/{cid}", headers=h).json()
    assert got["status"] == "rejected"
    actor = f"principal:{tenant.principal_id}"
    with db.connection() as conn:
        edges = conn.execute("SELECT type::text AS type, decided_by FROM memory_relationships"
                             " WHERE source_id = %s AND target_id = %s ORDER BY type",
                             (cid, target["id"])).fetchall()
        causes = conn.execute("SELECT cause, actor FROM memory_history WHERE memory_id = %s"
                              " ORDER BY id DESC LIMIT 1", (cid,)).fetchone()
    assert edges == [{"type": "CONTRADICTS", "decided_by": "gate"},
                     {"type": "DUPLICATE_OF", "decided_by": actor}]
    assert causes == {"cause": "review.merge", "actor": actor}
    assert_error(client.post(f"/v1/review/{cid}/merge", headers=h, json={"into": target["id"]}),
                 409, "conflict")
    assert_error(client.post(f"/v1/review/{target['id']}/promote", headers=h), 409, "conflict")
