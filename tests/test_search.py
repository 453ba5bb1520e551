"""Hybrid search over HTTP on a real database: the right memory, nothing retired, nothing
the caller cannot read, filters inside the statement."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from strata.search import rrf
from support import assert_error

T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)


def say(client, headers, text: str, at: datetime, path: str = "users.alice") -> dict:
    r = client.post("/v1/ingest", headers=headers, json={
        "path": path, "wait": True, "messages": [{"role": "user", "content": text, "at": at.isoformat()}]})
    assert r.status_code == 200, r.text
    return r.json()


def search(client, headers, query: str, **extra) -> list[dict]:
    r = client.post("/v1/search", headers=headers, json={"query": query, **extra})
    assert r.status_code == 200, r.text
    return r.json()["results"]


def test_rrf_is_a_sum_of_reciprocal_ranks():
    assert rrf(1, None) == 1 / 61
    assert rrf(1, 1) == 2 / 61
    assert rrf(None, None) == 0
    assert rrf(1, 3) > rrf(2, 2) > rrf(None, 1)


def test_superseded_preference_never_comes_back_in_search(client, tenant):
    """Given "I prefer MongoDB" superseded weeks later by "I've switched to PostgreSQL"
    When searching "what database does the user prefer"
    Then PostgreSQL is found and MongoDB is not, also after MongoDB is mentioned again in
    passing (blocked by its tombstone)."""
    h = tenant.headers
    say(client, h, "I prefer MongoDB", T0)
    say(client, h, "I've switched to PostgreSQL", T0 + timedelta(weeks=3))
    say(client, h, "I prefer MongoDB", T0 + timedelta(weeks=5))
    found = [r["content"] for r in search(client, h, "what database does the user prefer")]
    assert any("PostgreSQL" in c for c in found), found
    assert not any("MongoDB" in c for c in found), found


def test_search_finds_by_words_and_explains_the_score(client, tenant):
    """Given a few memories
    When searching for words of one of them with explain
    Then it ranks first, and explain shows both arms' ranks and the fused score."""
    h = tenant.headers
    client.post("/v1/memories", headers=h, json={"memories": [
        {"content": "The deploy region is eu-west-1", "path": "shared.ops"},
        {"content": "Alice's dentist appointment is on Friday", "path": "users.alice"},
        {"content": "The team standup is at 9:30", "path": "shared.ops"},
    ]})
    results = search(client, h, "which region do we deploy to?", explain=True)
    assert results[0]["content"] == "The deploy region is eu-west-1"
    ex = results[0]["explain"]
    assert ex["text"]["rank"] == 1 and ex["vector"]["rank"] is not None
    assert abs(ex["rrf"] - rrf(ex["vector"]["rank"], ex["text"]["rank"])) < 1e-9
    assert results[0]["score"] == ex["rrf"]


def test_search_respects_paths_grants_and_tenants(client, tenant, make_tenant, db):
    """Given memories in users.alice and users.bob, and a second tenant
    When a key clamped to users.alice, and the other tenant, search for both
    Then the clamped key finds only alice's and the other tenant finds nothing of the first
    (control: the owner key finds both)."""
    from strata.auth import Caller, create_key

    h = tenant.headers
    client.post("/v1/memories", headers=h, json={"memories": [
        {"content": "Alice's favourite editor is vim", "path": "users.alice"},
        {"content": "Bob's favourite editor is emacs", "path": "users.bob"},
    ]})
    both = {r["path"] for r in search(client, h, "favourite editor")}
    assert both == {"users.alice", "users.bob"}
    clamped = create_key(db, Caller.system(tenant.tenant_id), principal_id=tenant.principal_id,
                         ceiling=[{"path": "users.alice", "level": "read"}]).key
    only = search(client, {"Authorization": f"Bearer {clamped}"}, "favourite editor")
    assert {r["path"] for r in only} == {"users.alice"}
    other = make_tenant()
    assert search(client, other.headers, "favourite editor") == []
    scoped = search(client, h, "favourite editor", paths=["users.bob"])
    assert {r["path"] for r in scoped} == {"users.bob"}


def test_search_filters_kind_tags_and_valid_time(client, tenant):
    """Filters narrow the results inside the statement (each with its control)."""
    h = tenant.headers
    client.post("/v1/memories", headers=h, json={"memories": [
        {"content": "Project Falcon ships in May", "path": "shared.p", "kind": "event",
         "tags": ["falcon"], "valid_from": "2026-05-01T00:00:00Z"},
        {"content": "Project Falcon uses Rust", "path": "shared.p", "kind": "fact",
         "tags": ["falcon", "tech"]},
    ]})
    assert {r["kind"] for r in search(client, h, "project falcon")} == {"event", "fact"}
    assert {r["kind"] for r in search(client, h, "project falcon", kinds=["event"])} == {"event"}
    assert [r["content"] for r in search(client, h, "project falcon", tags=["tech"])] == [
        "Project Falcon uses Rust"]
    early = search(client, h, "project falcon", valid_at="2026-04-01T00:00:00Z")
    assert "Project Falcon ships in May" not in [r["content"] for r in early]


def test_search_bad_input_and_no_query_text_in_audit(client, tenant, db):
    """Bad input names the field; the audit row of a search holds its length, not its text."""
    h = tenant.headers
    assert_error(client.post("/v1/search", headers=h, json={"query": ""}), 422, "invalid_input", "query")
    assert_error(client.post("/v1/search", headers=h, json={"query": "x", "limit": 0}), 422,
                 "invalid_input", "limit")
    assert_error(client.post("/v1/search", headers=h, json={"query": "x", "paths": ["a..b"]}), 422,
                 "invalid_input", "paths[0]")
    search(client, h, "zanzibar quokka question")
    with db.connection() as conn:
        row = conn.execute("SELECT t::text AS t, query_len FROM audit_log t"
                           " WHERE operation = 'memory.search' ORDER BY seq DESC LIMIT 1").fetchone()
    assert row["query_len"] == len("zanzibar quokka question")
    assert "quokka" not in row["t"]
