"""Tenant isolation over HTTP: a second tenant's owner key sees 404 for every id of the first.

Every case runs against the real app and a real PostgreSQL of its own. Each exclusion is
paired with its control: the same request with tenant A's own key succeeds, and A's rows are
byte-for-byte unchanged by B's attempt.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
from support import assert_error


# --------------------------------------------------------------------------------------
# Helpers
# --------------------------------------------------------------------------------------


def create_memory(client, headers: dict, content: str, path: str) -> str:
    r = client.post("/v1/memories", headers=headers,
                    json={"memories": [{"content": content, "path": path}]})
    assert r.status_code == 200, r.text
    [res] = r.json()["results"]
    assert res["status"] == "inserted", res
    return res["id"]


# Everything tenant A owns, as the database holds it. A request from B must leave it equal.
_SNAPSHOT = {
    "memories": "SELECT to_jsonb(m) - 'embedding' - 'fts' AS r FROM memories m"
                " WHERE tenant_id = %s ORDER BY id",
    "history": "SELECT to_jsonb(h) AS r FROM memory_history h WHERE tenant_id = %s ORDER BY id",
    "edges": "SELECT to_jsonb(e) AS r FROM memory_relationships e WHERE tenant_id = %s ORDER BY id",
    "tombstones": "SELECT to_jsonb(t) - 'embedding' AS r FROM tombstones t"
                  " WHERE tenant_id = %s ORDER BY id",
    "principals": "SELECT to_jsonb(p) AS r FROM principals p WHERE tenant_id = %s ORDER BY id",
    "grants": "SELECT to_jsonb(g) AS r FROM grants g WHERE tenant_id = %s ORDER BY id",
    "keys": "SELECT to_jsonb(k) - 'secret_hash' AS r FROM api_keys k"
            " WHERE tenant_id = %s ORDER BY id",
}


def snapshot(db, tenant_id: uuid.UUID) -> dict[str, list[Any]]:
    with db.connection() as conn:
        return {
            name: [row["r"] for row in conn.execute(sql, (tenant_id,)).fetchall()]
            for name, sql in _SNAPSHOT.items()
        }


@dataclass
class World:
    a: Any                    # TenantKey of tenant A (owner key)
    b: Any                    # TenantKey of tenant B (owner key)
    m1: str                   # A: created then patched (version 2), has an outgoing edge
    m2: str                   # A: created, deleted, restored (live, with history)
    m3: str                   # A: target of m1's edge
    gone: str                 # A: created then deleted (only in history)
    b_memory: str             # B's own memory (B's control that its list works)
    alice: str                # A's principal
    alice_grant: str          # A's grant
    alice_key_id: str         # A's key for alice
    alice_key: str


@pytest.fixture
def world(client, make_tenant, db) -> World:
    a, b = make_tenant("tenant-a"), make_tenant("tenant-b")
    m1 = create_memory(client, a.headers, "The deploy window is Tuesday", "users.alice")
    m2 = create_memory(client, a.headers, "Alice prefers dark mode", "users.alice")
    m3 = create_memory(client, a.headers, "Deploys need two approvals", "shared.ops")
    gone = create_memory(client, a.headers, "Temporary note about the offsite", "users.alice")

    r = client.patch(f"/v1/memories/{m1}", headers=a.headers,
                     json={"expected_version": 1, "content": "The deploy window is Wednesday"})
    assert r.status_code == 200 and r.json()["version"] == 2, r.text
    assert client.delete(f"/v1/memories/{m2}", headers=a.headers).status_code == 200
    r = client.post(f"/v1/memories/{m2}/restore", headers=a.headers)
    assert r.status_code == 200, r.text
    assert client.delete(f"/v1/memories/{gone}", headers=a.headers).status_code == 200
    with db.transaction() as cur:
        cur.execute(
            "INSERT INTO memory_relationships (tenant_id, source_id, target_id, type, reason,"
            " decided_by) VALUES (%s, %s, %s, 'REFINES', 'test edge', 'test')",
            (a.tenant_id, m1, m3),
        )

    r = client.post("/v1/principals", headers=a.headers, json={"name": "alice"})
    assert r.status_code == 201, r.text
    alice = r.json()["id"]
    r = client.post("/v1/grants", headers=a.headers,
                    json={"principal_id": alice, "path": "users.alice", "level": "write"})
    assert r.status_code == 201, r.text
    alice_grant = r.json()["id"]
    r = client.post("/v1/keys", headers=a.headers, json={"principal_id": alice, "name": "alice"})
    assert r.status_code == 201, r.text
    alice_key_id, alice_key = r.json()["id"], r.json()["key"]

    b_memory = create_memory(client, b.headers, "Globex ships on Fridays", "users.alice")
    return World(a, b, m1, m2, m3, gone, b_memory, alice, alice_grant, alice_key_id, alice_key)


# --------------------------------------------------------------------------------------
# Every id-addressed route: B's owner key gets 404, A's data is unchanged, A's key succeeds
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Route:
    method: str
    url: Callable[[World], str]
    body: Callable[[World], Any] | None
    ok: int  # the status A's own key gets for the same request (the control)


ROUTES: dict[str, Route] = {
    "get": Route("GET", lambda w: f"/v1/memories/{w.m1}", None, 200),
    "patch": Route("PATCH", lambda w: f"/v1/memories/{w.m1}",
                   lambda w: {"expected_version": 2, "content": "The deploy window is Friday"}, 200),
    "delete": Route("DELETE", lambda w: f"/v1/memories/{w.m1}", None, 200),
    "history-live": Route("GET", lambda w: f"/v1/memories/{w.m2}/history", None, 200),
    "history-deleted": Route("GET", lambda w: f"/v1/memories/{w.gone}/history", None, 200),
    "restore-deleted": Route("POST", lambda w: f"/v1/memories/{w.gone}/restore", None, 200),
    "restore-version": Route("POST", lambda w: f"/v1/memories/{w.m1}/restore",
                             lambda w: {"version": 1}, 200),
    "forget": Route("POST", lambda w: f"/v1/memories/{w.m1}/forget", None, 200),
    "related": Route("GET", lambda w: f"/v1/memories/{w.m1}/related", None, 200),
    "revoke-key": Route("DELETE", lambda w: f"/v1/keys/{w.alice_key_id}", None, 200),
    "delete-grant": Route("DELETE", lambda w: f"/v1/grants/{w.alice_grant}", None, 200),
    "grant-to-foreign-principal": Route(
        "POST", lambda w: "/v1/grants",
        lambda w: {"principal_id": w.alice, "path": "users.alice.notes", "level": "read"}, 201),
    "key-for-foreign-principal": Route(
        "POST", lambda w: "/v1/keys", lambda w: {"principal_id": w.alice}, 201),
}


def send(client, route: Route, world: World, headers: dict):
    kwargs = {"headers": headers}
    if route.body is not None:
        kwargs["json"] = route.body(world)
    return client.request(route.method, route.url(world), **kwargs)


@pytest.mark.parametrize("name", list(ROUTES))
def test_other_tenant_gets_404_and_changes_nothing(name, client, db, world):
    """Given tenant A's memories (with history and an edge), principal, grant and key
    When tenant B's owner key sends the route with A's id
    Then it answers 404 not_found, A's rows are unchanged, and A's own key gets success."""
    route = ROUTES[name]
    before = snapshot(db, world.a.tenant_id)

    r = send(client, route, world, world.b.headers)

    assert_error(r, 404, "not_found")
    assert snapshot(db, world.a.tenant_id) == before
    # Control: the rightful owner's key succeeds on the very same request.
    ok = send(client, route, world, world.a.headers)
    assert ok.status_code == route.ok, ok.text


def test_failed_foreign_revoke_leaves_key_working(client, world):
    """Given A's key for alice, which B tried to revoke
    When alice uses it afterwards
    Then it still authenticates (B's DELETE had no effect), until A revokes it (401)."""
    r = client.delete(f"/v1/keys/{world.alice_key_id}", headers=world.b.headers)
    assert_error(r, 404, "not_found")
    alice = {"Authorization": f"Bearer {world.alice_key}"}
    got = client.get(f"/v1/memories/{world.m1}", headers=alice)
    assert got.status_code == 200, got.text

    assert client.delete(f"/v1/keys/{world.alice_key_id}", headers=world.a.headers).status_code == 200
    assert_error(client.get(f"/v1/memories/{world.m1}", headers=alice), 401, "unauthenticated")


def test_other_tenant_patch_does_not_leak_version_conflict(client, world):
    """Given A's memory at version 2
    When B patches it with a wrong expected_version
    Then B gets 404 (not 412, which would confirm the id exists), while A gets 412."""
    body = {"expected_version": 7, "content": "nope"}
    assert_error(client.patch(f"/v1/memories/{world.m1}", headers=world.b.headers, json=body),
                 404, "not_found")
    assert_error(client.patch(f"/v1/memories/{world.m1}", headers=world.a.headers, json=body),
                 412, "version_conflict")


def test_other_tenant_if_match_patch_is_404(client, world):
    """Given A's memory at version 2
    When B patches it with the correct If-Match header
    Then B gets 404 while A (same header) gets 200."""
    for headers, status in ((world.b.headers, 404), (world.a.headers, 200)):
        r = client.patch(f"/v1/memories/{world.m1}", headers={**headers, "If-Match": '"2"'},
                         json={"pinned": True})
        assert r.status_code == status, r.text


# --------------------------------------------------------------------------------------
# Lists: B never sees A's items; A sees them (and B sees its own)
# --------------------------------------------------------------------------------------


LISTS: dict[str, tuple[str, Callable[[World], set[str]], Callable[[World], set[str]]]] = {
    # url, A's ids that must be absent for B, B's own ids that must be present for B
    "memories": ("/v1/memories?status=all",
                 lambda w: {w.m1, w.m2, w.m3}, lambda w: {w.b_memory}),
    "memories-by-path": ("/v1/memories?path=users.alice",
                         lambda w: {w.m1, w.m2}, lambda w: {w.b_memory}),
    "keys": ("/v1/keys", lambda w: {w.alice_key_id}, lambda w: set()),
    "grants": ("/v1/grants", lambda w: {w.alice_grant}, lambda w: set()),
    "principals": ("/v1/principals", lambda w: {w.alice}, lambda w: {str(w.b.principal_id)}),
}


@pytest.mark.parametrize("name", list(LISTS))
def test_lists_never_show_another_tenants_items(name, client, world):
    """Given tenant A's items and tenant B's own
    When B lists them
    Then none of A's ids appear, while B's own do; A's list shows A's ids."""
    url, a_ids, b_ids = LISTS[name]
    rb = client.get(url, headers=world.b.headers)
    assert rb.status_code == 200, rb.text
    seen_by_b = {item["id"] for item in rb.json()["items"]}
    assert rb.json()["items"], "B's list must not be empty: B holds items of its own"
    assert not (a_ids(world) & seen_by_b)
    assert b_ids(world) <= seen_by_b

    ra = client.get(url, headers=world.a.headers)
    assert ra.status_code == 200, ra.text
    assert a_ids(world) <= {item["id"] for item in ra.json()["items"]}


def test_grant_list_filtered_by_foreign_principal_is_empty_for_b(client, world):
    """Given A's principal alice with a grant
    When B lists grants filtered on alice's id
    Then B gets no items while A gets alice's grant."""
    url = f"/v1/grants?principal_id={world.alice}"
    rb = client.get(url, headers=world.b.headers)
    assert rb.status_code == 200 and rb.json()["items"] == [], rb.text
    ra = client.get(url, headers=world.a.headers)
    assert [g["id"] for g in ra.json()["items"]] == [world.alice_grant]


def test_audit_chain_is_per_tenant(client, world):
    """Given audited activity on A's memories
    When B lists its audit trail
    Then no entry names A's memory ids, while A's trail does."""
    def memory_ids(headers):
        r = client.get("/v1/audit?limit=1000", headers=headers)
        assert r.status_code == 200, r.text
        assert r.json()["items"]
        return {str(i) for e in r.json()["items"] for i in (e.get("memory_ids") or [])}

    a_ids = {world.m1, world.m2, world.m3}
    assert not (a_ids & memory_ids(world.b.headers))
    assert a_ids <= memory_ids(world.a.headers)


def test_same_path_in_two_tenants_stays_apart(client, world):
    """Given both tenants hold memories at users.alice
    When each lists users.alice
    Then each sees only its own."""
    ra = client.get("/v1/memories?path=users.alice", headers=world.a.headers).json()["items"]
    rb = client.get("/v1/memories?path=users.alice", headers=world.b.headers).json()["items"]
    assert {m["id"] for m in rb} == {world.b_memory}
    assert {m["id"] for m in ra} == {world.m1, world.m2}


def test_write_to_another_tenants_name_does_not_touch_it(client, db, world):
    """Given A's named memory at users.alice
    When B creates a memory with the same path and name (on_conflict=replace)
    Then B gets its own new memory and A's stays as it was."""
    body = {"memories": [{"content": "A's secret plan", "path": "users.alice", "name": "plan"}]}
    r = client.post("/v1/memories", headers=world.a.headers, json=body)
    assert r.status_code == 200 and r.json()["results"][0]["status"] == "inserted", r.text
    a_plan = r.json()["results"][0]["id"]
    before = snapshot(db, world.a.tenant_id)

    body = {"memories": [{"content": "B's plan", "path": "users.alice", "name": "plan"}],
            "on_conflict": "replace"}
    r = client.post("/v1/memories", headers=world.b.headers, json=body)
    assert r.status_code == 200, r.text
    [res] = r.json()["results"]
    assert res["status"] == "inserted" and res["id"] != a_plan
    assert snapshot(db, world.a.tenant_id) == before
    assert client.get(f"/v1/memories/{a_plan}", headers=world.a.headers).json()["content"] \
        == "A's secret plan"
