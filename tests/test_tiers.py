"""Tiers through every entry point: a short-term memory with a time to live on create,
ingest and MCP remember; the result says where each memory landed; lifecycle expires it, or
promotes one in use to long-term with its id."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from strata.maintenance.lifecycle import run_lifecycle
from strata.search.hybrid import ACCESS_LOG


def create(client, h, **fields):
    return client.post("/v1/memories", headers=h, json={"memories": [
        {"path": "users.alice", **fields}]})


def test_short_term_on_create_says_its_tier_and_expires_through_lifecycle(client, tenant, db,
                                                                          settings):
    """Given a short-term memory (ttl one hour) and a long-term one (the control)
    When both are created, and lifecycle runs two hours later
    Then the results say short_term and long_term; the short-term one has expires_at one hour
    on, and lifecycle expires (archives) it while the long-term one stays active; its history
    keeps the state it had."""
    h = tenant.headers
    before = datetime.now(UTC)
    short = create(client, h, content="Alice is in Lisbon this week", tier="short_term",
                   ttl=3600)
    assert short.status_code == 200, short.text
    s = short.json()["results"][0]
    assert s["status"] == "inserted" and s["tier"] == "short_term"
    long = create(client, h, content="Alice's home town is Porto").json()["results"][0]
    assert long["tier"] == "long_term"
    got = client.get(f"/v1/memories/{s['id']}", headers=h).json()
    expires = datetime.fromisoformat(got["expires_at"])
    assert got["tier"] == "short_term"
    assert before + timedelta(seconds=3590) < expires < datetime.now(UTC) + timedelta(seconds=3610)
    report = run_lifecycle(db, tenant_id=tenant.tenant_id, settings=settings,
                           now=datetime.now(UTC) + timedelta(hours=2))
    assert report["ok"], report
    assert client.get(f"/v1/memories/{s['id']}", headers=h).json()["status"] == "archived"
    assert client.get(f"/v1/memories/{long['id']}", headers=h).json()["status"] == "active"
    history = client.get(f"/v1/memories/{s['id']}/history", headers=h).json()["items"]
    assert history and history[-1]["cause"] == "lifecycle.expire"


def test_a_short_term_memory_used_three_times_is_promoted_with_its_id(client, tenant, db,
                                                                      settings):
    """Given two short-term memories, one recalled three times
    When lifecycle runs (before either expires)
    Then the recalled one is long-term with the same id and no expiry; the other (control)
    is still short-term."""
    h = tenant.headers
    used = create(client, h, content="Alice is reading Dune", tier="short_term",
                  ttl=86400).json()["results"][0]["id"]
    idle = create(client, h, content="Alice parked on level 3", tier="short_term",
                  ttl=86400).json()["results"][0]["id"]
    for _ in range(settings.lifecycle_promote_access_count):
        r = client.post("/v1/search", headers=h, json={"query": "what is Alice reading",
                                                       "limit": 1})
        assert [x["id"] for x in r.json()["results"]] == [used]
        ACCESS_LOG.flush()
    report = run_lifecycle(db, tenant_id=tenant.tenant_id, settings=settings)
    assert report["ok"], report
    got = client.get(f"/v1/memories/{used}", headers=h).json()
    assert (got["id"], got["tier"], got["expires_at"], got["status"]) == (
        used, "long_term", None, "active")
    assert client.get(f"/v1/memories/{idle}", headers=h).json()["tier"] == "short_term"


def test_ingest_lands_its_memories_in_the_tier_it_asks_for(client, tenant):
    """An ingest with tier short_term creates short-term memories, and its receipt says so
    per item; the same statement ingested as long-term elsewhere (control) says long_term."""
    h = tenant.headers
    for path, tier in (("users.alice", "short_term"), ("users.bob", "long_term")):
        body = {"path": path, "wait": True, "tier": tier,
                "messages": [{"role": "user", "content": "I am working from Berlin this month"}]}
        if tier == "short_term":
            body["ttl"] = 7 * 86400
        r = client.post("/v1/ingest", headers=h, json=body)
        assert r.status_code == 200, r.text
        items = r.json()["items"]
        assert items and all(i["tier"] == tier for i in items if i["memory_id"]), items
        got = client.get(f"/v1/memories/{items[0]['memory_id']}", headers=h).json()
        assert got["tier"] == tier


def test_mcp_remember_takes_a_tier(server, tenant):
    """remember over MCP (real HTTP, the mcp client) with tier short_term stores a short-term
    memory and says so, for a statement stored as is and for messages; without a tier,
    long_term."""
    from test_mcp import call, mcp_session, ok, run

    async def go():
        async with mcp_session(f"{server}/mcp", tenant.key) as session:
            short = ok(await call(session, "remember", statement="Alice's flight is on Friday",
                                  path="users.alice", tier="short_term", ttl=3 * 86400,
                                  as_is=True))
            said = ok(await call(session, "remember", path="users.bob", wait=True,
                                 tier="short_term", ttl=86400, messages=[
                                     {"role": "user", "content": "I am in Oslo until Sunday"}]))
            plain = ok(await call(session, "remember", statement="Alice's passport is Irish",
                                  path="users.alice", as_is=True))
            return short, said, plain

    short, said, plain = run(go)
    assert [(i["outcome"], i["tier"]) for i in short["items"]] == [("created", "short_term")]
    assert said["items"] and all(i["tier"] == "short_term" for i in said["items"]), said
    assert [i["tier"] for i in plain["items"]] == ["long_term"], plain


@pytest.mark.parametrize("fields, field", [
    ({"tier": "short_term"}, "memories[0].ttl"),
    ({"ttl": 3600}, "memories[0].ttl"),
    ({"tier": "short_term", "ttl": 5}, "memories[0].ttl"),
    ({"tier": "forever"}, "memories[0].tier"),
])
def test_a_tier_without_its_ttl_or_a_ttl_without_its_tier_is_a_422(client, tenant, fields,
                                                                    field):
    r = create(client, tenant.headers, content="Alice is at the dentist", **fields)
    assert r.status_code == 422 and r.json()["error"]["field"] == field, r.text
    r = client.post("/v1/ingest", headers=tenant.headers, json={
        "path": "users.alice", "messages": [{"role": "user", "content": "hello"}], **fields})
    assert r.status_code == 422 and r.json()["error"]["field"] == field.split(".")[1], r.text
