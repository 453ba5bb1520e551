"""The event outbox and its feed (migration 0025, strata.events), through HTTP on the real
database: one event per change in commit order, none for a rolled-back write, no content,
and a key reads events only where it reads memories."""

from __future__ import annotations

import psycopg

from tests.support import bearer


def feed(client, h, **params):
    r = client.get("/v1/events", headers=h, params=params)
    assert r.status_code == 200, r.text
    return r.json()


def create(client, h, content, path="users.alice", **extra):
    r = client.post("/v1/memories", headers=h, json={"memories": [
        {"content": content, "path": path, **extra}]})
    assert r.status_code == 200, r.text
    return r.json()["results"][0]


def test_each_change_has_one_event_in_commit_order_without_content(client, tenant):
    """Given a tenant's memory created, said again, edited, superseded by a new slot value,
    deleted, restored and forgotten, and a PATCH refused for a stale version
    When the feed is read from the start, and again after its last cursor
    Then it holds exactly one event per change, of the right type, memory and version, in
    the order the changes committed, the refused PATCH none; the supersession names the
    memory that replaced it; no event carries the content; and reading after the last
    cursor answers nothing new, with the same cursor."""
    h = tenant.headers
    tea = create(client, h, "Alice drinks green tea every morning")["id"]
    assert create(client, h, "Alice drinks green tea every morning")["status"] == "reinforced"
    r = client.patch(f"/v1/memories/{tea}", headers=h, json={
        "expected_version": 2, "content": "Alice drinks oolong tea every morning"})
    assert r.status_code == 200, r.text
    stale = client.patch(f"/v1/memories/{tea}", headers=h, json={
        "expected_version": 1, "content": "Alice drinks black tea"})
    assert stale.status_code == 412, stale.text  # rolled back: no event
    db1 = create(client, h, "Alice prefers MySQL", slot="user.preferred_database",
                 value="mysql")["id"]
    db2 = create(client, h, "Alice prefers Postgres", slot="user.preferred_database",
                 value="postgres")["id"]
    assert client.delete(f"/v1/memories/{tea}", headers=h).status_code == 200
    r = client.post(f"/v1/memories/{tea}/restore", headers=h, json={})
    assert r.status_code == 200, r.text
    r = client.post(f"/v1/memories/{tea}/forget", headers=h)
    assert r.status_code == 200, r.text

    page = feed(client, h)
    got = [(e["type"], e["memory_id"], e["version"]) for e in page["items"]]
    assert got == [
        ("created", tea, 1), ("reinforced", tea, 2), ("updated", tea, 3),
        ("created", db1, 1), ("superseded", db1, 2), ("created", db2, 1),
        ("deleted", tea, 3), ("restored", tea, 4), ("forgotten", tea, 4),
    ], got
    cursors = [int(e["cursor"]) for e in page["items"]]
    assert cursors == sorted(cursors) and len(set(cursors)) == len(cursors)
    [superseded] = [e for e in page["items"] if e["type"] == "superseded"]
    assert superseded["related"] == [db2]
    assert all(e["actor"] and e["cause"] for e in page["items"])
    text = str(page)
    assert "tea" not in text and "MySQL" not in text and "Postgres" not in text
    again = feed(client, h, after=page["next_cursor"])
    assert again == {"items": [], "next_cursor": page["next_cursor"]}
    # a filter by type and by path, with its control
    assert [e["type"] for e in feed(client, h, types="created,forgotten")["items"]] == [
        "created", "created", "created", "forgotten"]
    assert feed(client, h, path="users.bob")["items"] == []


def test_a_key_reads_events_only_where_it_reads_memories(client, tenant):
    """Given memories written under users.alice and users.bob by the tenant's root key
    When a key whose ceiling is read on users.alice reads the feed
    Then it sees users.alice's event and not users.bob's (the root key sees both: the
    control), and its cursor moves past the unreadable event, to the tenant's head, when the
    page is not full."""
    h = tenant.headers
    alice = create(client, h, "Alice likes chess", path="users.alice")["id"]
    bob = create(client, h, "Bob likes go", path="users.bob")["id"]
    r = client.post("/v1/keys", headers=h, json={
        "principal_id": str(tenant.principal_id),
        "ceiling": [{"path": "users.alice", "level": "read"}]})
    assert r.status_code == 201, r.text
    narrow = bearer(r.json()["key"])
    everything = feed(client, h)
    assert {e["memory_id"] for e in everything["items"]} == {alice, bob}
    seen = feed(client, narrow)
    assert [e["memory_id"] for e in seen["items"]] == [alice]
    # Its cursor passes bob's unreadable event (the last): the next poll starts after it.
    assert everything["items"][-1]["memory_id"] == bob
    assert seen["next_cursor"] == everything["next_cursor"] == everything["items"][-1]["cursor"]
    # A full page ends at its last event (limit 1: alice's), not at the head.
    assert feed(client, narrow, limit=1)["next_cursor"] == seen["items"][0]["cursor"]


def test_bad_feed_parameters_name_their_field(client, tenant):
    """Given an unknown type, a cursor that is not a number and a malformed path
    When the feed is asked with each
    Then each is a 422 naming its parameter."""
    for params, field in (({"types": "made"}, "types"), ({"after": "x1"}, "after"),
                          ({"path": "users..a"}, "path")):
        r = client.get("/v1/events", headers=tenant.headers, params=params)
        assert r.status_code == 422, r.text
        assert field in r.text, r.text


def test_seq_is_commit_order_when_transactions_commit_out_of_id_order(db, tenant):
    """Given two transactions of one tenant, the first inserting a memory (the smaller event
    id) and staying open, the second inserting one and committing first
    When the first then commits
    Then the second's event is numbered before the first's: seq follows commit, not insert,
    so a reader that saw the second's event cannot later find a smaller seq appear."""
    url = db.url
    insert = ("INSERT INTO memories (tenant_id, path, content, canonical, value_hash)"
              " VALUES (%s, 'users.a', %s, %s, %s) RETURNING id")
    first = psycopg.connect(url)
    second = psycopg.connect(url)
    try:
        a = first.execute(insert, (tenant.tenant_id, "one", "one", b"1")).fetchone()[0]
        b = second.execute(insert, (tenant.tenant_id, "two", "two", b"2")).fetchone()[0]
        second.commit()
        first.commit()
    finally:
        first.close()
        second.close()
    with db.connection() as conn:
        rows = conn.execute("SELECT memory_id, id, seq FROM events WHERE tenant_id = %s"
                            " ORDER BY seq", (tenant.tenant_id,)).fetchall()
    assert [r["memory_id"] for r in rows] == [b, a]
    assert rows[0]["id"] > rows[1]["id"]  # the control: ids are in insert order


def test_ingest_commits_its_events_with_its_writes_in_the_persist_step(client, tenant):
    """Given a conversation ingested (wait: true) that states a preference, then changes it
    When the feed is read
    Then the pipeline's persist step wrote the events in its transaction: the first memory's
    creation, then the change's creation and the first one's supersession naming it, each
    caused by ingest.persist; nothing else."""
    h = tenant.headers

    def say(text, at):
        r = client.post("/v1/ingest", headers=h, json={
            "path": "users.alice", "wait": True,
            "messages": [{"role": "user", "content": text, "at": at}]})
        assert r.status_code == 200, r.text
        return r.json()["items"][0]["memory_id"]

    first = say("I prefer MySQL", "2026-01-01T10:00:00Z")
    second = say("I've switched to PostgreSQL", "2026-02-01T10:00:00Z")
    events = feed(client, h)["items"]
    assert {e["cause"] for e in events} == {"ingest.persist"}
    got = [(e["type"], e["memory_id"]) for e in events]
    assert got[0] == ("created", first)
    assert sorted(got[1:]) == sorted([("created", second), ("superseded", first)]), got
    [superseded] = [e for e in events if e["type"] == "superseded"]
    assert superseded["related"] == [second]


def test_review_lifecycle_and_derived_changes_have_their_event_types(client, tenant, db, settings):
    """Given a change said and said back (a candidate held for review) and promoted, a
    second one rejected, two memories consolidated and one of them then deleted, and a
    short-term memory past its expiry when the lifecycle job runs
    When the feed is read by type
    Then each of those changes has its event: held_for_review, promoted, rejected,
    derived_retired (the consolidation, its source gone) and expired (cause
    lifecycle.expire), each naming the memory it changed."""
    from datetime import UTC, datetime

    from strata.maintenance.lifecycle import run_lifecycle

    h = tenant.headers

    def say(text, at, path):
        r = client.post("/v1/ingest", headers=h, json={
            "path": path, "wait": True,
            "messages": [{"role": "user", "content": text, "at": at}]})
        assert r.status_code == 200, r.text
        return r.json()["items"][0]

    candidates = []
    for path, (old, new) in (("users.alice", ("MongoDB", "PostgreSQL")),
                             ("users.bob", ("vim", "emacs"))):
        say(f"I prefer {old}", "2026-01-01T10:00:00Z", path)
        say(f"I've switched to {new}", "2026-01-22T10:00:00Z", path)
        back = say(f"I've gone back to {old}", "2026-02-12T10:00:00Z", path)
        assert back["outcome"] == "candidate", back
        candidates.append(back["memory_id"])
    assert client.post(f"/v1/review/{candidates[0]}/promote", headers=h).status_code == 200
    r = client.post(f"/v1/review/{candidates[1]}/reject", headers=h, json={"suppress": False})
    assert r.status_code == 200, r.text

    parts = [create(client, h, text, path="shared.team")["id"]
             for text in ("Deploys happen on Tuesdays", "Deploys need two approvals")]
    r = client.post("/v1/consolidate", headers=h, json={
        "ids": parts, "content": "Deploys: Tuesdays, two approvals", "path": "shared.team"})
    assert r.status_code == 200, r.text
    summary = r.json()["memory"]["id"]
    assert client.delete(f"/v1/memories/{parts[0]}", headers=h).status_code == 200

    brief = create(client, h, "Standup moved to the small room today", path="shared.team",
                   tier="short_term", ttl=3600)["id"]
    with db.connection() as conn:
        conn.execute("UPDATE memories SET expires_at = now() - interval '1 minute'"
                     " WHERE id = %s", (brief,))
    assert run_lifecycle(db, settings=settings, now=datetime.now(UTC))["ok"]

    def of(kind):
        return [(e["memory_id"], e["cause"]) for e in feed(client, h, types=kind)["items"]]

    assert (candidates[0], "ingest.persist") in of("held_for_review")
    assert [m for m, _ in of("promoted")] == [candidates[0]]
    assert [m for m, _ in of("rejected")] == [candidates[1]]
    assert [m for m, _ in of("derived_retired")] == [summary]
    assert of("expired") == [(brief, "lifecycle.expire")]
