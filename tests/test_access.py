"""Access inside one tenant: keys, principals, grants and key ceilings, through the HTTP API.

The organisation is built the way an operator would build it, over HTTP with the tenant's
owner key: principals alice and bob (write on their own users.<name>), a reader agent (read
on users), and a lead (owner on users.alice). Every exclusion (401/403/404/not listed) sits
next to its control: the same request with the rightful key succeeds.
"""

from __future__ import annotations

import hashlib
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from strata.auth import Caller, authenticate, create_key
from strata.foundation.errors import Unauthenticated
from support import assert_error, bearer, effective, read, write, write_ok


# --------------------------------------------------------------------------------------
# Helpers
# --------------------------------------------------------------------------------------


def listed_ids(client, key: str, url: str = "/v1/memories") -> set[str]:
    r = client.get(url, headers=bearer(key))
    assert r.status_code == 200, r.text
    return {m["id"] for m in r.json()["items"]}


@dataclass
class Org:
    admin: str                       # the tenant's owner key (root, owner)
    principals: dict[str, str]       # name -> id
    grants: dict[str, str]           # name -> the principal's grant id
    keys: dict[str, str]             # name -> full key (unclamped: minted by admin, no ceiling)
    key_ids: dict[str, str]
    m_alice: str                     # memory at users.alice
    m_bob: str                       # memory at users.bob
    m_shared: str                    # memory at shared.ops (no one but admin holds it)

    def mint(self, client, principal: str, *, by: str | None = None, **body: Any) -> dict:
        """Mint a key for ``principal`` with ``by`` (a full key; the admin key by default)."""
        r = client.post("/v1/keys", headers=bearer(by or self.admin),
                        json={"principal_id": self.principals[principal], **body})
        assert r.status_code == 201, r.text
        return r.json()


GRANTS = {
    "alice": ("users.alice", "write"),
    "bob": ("users.bob", "write"),
    "reader": ("users", "read"),
    "lead": ("users.alice", "owner"),
}


@pytest.fixture
def org(client, tenant) -> Org:
    admin = tenant.key
    principals, grants, keys, key_ids = {}, {}, {}, {}
    for name, (path, level) in GRANTS.items():
        kind = "agent" if name == "reader" else "user"
        r = client.post("/v1/principals", headers=bearer(admin), json={"name": name, "kind": kind})
        assert r.status_code == 201, r.text
        principals[name] = r.json()["id"]
        r = client.post("/v1/grants", headers=bearer(admin),
                        json={"principal_id": principals[name], "path": path, "level": level})
        assert r.status_code == 201, r.text
        grants[name] = r.json()["id"]
        r = client.post("/v1/keys", headers=bearer(admin),
                        json={"principal_id": principals[name], "name": name})
        assert r.status_code == 201, r.text
        keys[name], key_ids[name] = r.json()["key"], r.json()["id"]
    m_alice = write_ok(client, admin, "Alice prefers PostgreSQL", "users.alice")
    m_bob = write_ok(client, admin, "Bob is on call this week", "users.bob")
    m_shared = write_ok(client, admin, "The ops runbook lives in the wiki", "shared.ops")
    return Org(admin, principals, grants, keys, key_ids, m_alice, m_bob, m_shared)


# --------------------------------------------------------------------------------------
# Authentication: 401 with the error shape
# --------------------------------------------------------------------------------------


BAD_AUTH = {
    "missing": None,
    "empty-bearer": "Bearer ",
    "basic-scheme": "Basic {key}",
    "no-scheme": "{key}",
    "garbage": "Bearer not-a-key",
    "unknown-prefix": "Bearer sk_000000000000_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
    "wrong-secret": "Bearer {wrong}",
    "truncated": "Bearer {truncated}",
}


@pytest.mark.parametrize("case", list(BAD_AUTH))
@pytest.mark.parametrize("method,url", [
    ("GET", "/v1/memories"), ("GET", "/v1/memories/{id}"), ("POST", "/v1/memories"),
    ("GET", "/v1/keys"),
])
def test_missing_or_bad_authorization_is_401(case, method, url, client, tenant):
    """Given a live memory and the tenant's valid key
    When a request carries a missing, malformed or wrong Authorization header
    Then it answers 401 unauthenticated with a WWW-Authenticate challenge; the valid key
    gets 200 on the same request."""
    good = bearer(tenant.key)
    memory_id = write_ok(client, tenant.key, "Deploys happen on Tuesdays", "shared.ops")
    url = url.format(id=memory_id)
    body = {"memories": [{"content": "Another fact", "path": "shared.ops"}]}
    prefix, secret = tenant.key.split("_", 2)[1:]
    wrong = f"sk_{prefix}_{'x' * len(secret)}"
    template = BAD_AUTH[case]
    headers = {} if template is None else {
        "Authorization": template.format(key=tenant.key, wrong=wrong, truncated=tenant.key[:-1])}

    r = client.request(method, url, headers=headers, json=body if method == "POST" else None)

    assert_error(r, 401, "unauthenticated")
    assert r.headers.get("www-authenticate") == "Bearer"
    ok = client.request(method, url, headers=good, json=body if method == "POST" else None)
    assert ok.status_code == 200, ok.text


def test_bearer_scheme_is_case_insensitive(client, tenant):
    """Given a valid key
    When it is sent as 'bearer <key>' (lower case scheme)
    Then the request is authenticated (200)."""
    r = client.get("/v1/memories", headers={"Authorization": f"bearer {tenant.key}"})
    assert r.status_code == 200, r.text


def test_healthz_needs_no_key_but_v1_does(client, tenant):
    """Given no Authorization header
    When /healthz and /v1/memories are requested
    Then /healthz answers 200 and /v1/memories 401 (200 with a key)."""
    assert client.get("/healthz").status_code == 200
    assert_error(client.get("/v1/memories"), 401, "unauthenticated")
    assert client.get("/v1/memories", headers=bearer(tenant.key)).status_code == 200


# --------------------------------------------------------------------------------------
# Keys: random, shown once, stored hashed, short public prefix
# --------------------------------------------------------------------------------------


def test_key_is_shown_once_and_stored_only_hashed(client, db, org):
    """Given a key minted over HTTP
    When the database and GET /v1/keys are inspected
    Then the full key appears only in the creation response: the row holds its sha256 and a
    12-hex public prefix, no column and no listing carries the secret; the key works."""
    created = org.mint(client, "alice", name="laptop")
    key = created["key"]
    _, prefix, secret = key.split("_", 2)
    assert created["prefix"] == prefix and len(prefix) == 12
    int(prefix, 16)  # hex
    assert len(secret) >= 40  # 32 random bytes, urlsafe base64

    with db.connection() as conn:
        row = conn.execute("SELECT * FROM api_keys WHERE id = %s", (created["id"],)).fetchone()
        dumps = [r["t"] for r in conn.execute("SELECT to_jsonb(k)::text AS t FROM api_keys k")]
        audit = [r["t"] for r in conn.execute("SELECT to_jsonb(a)::text AS t FROM audit_log a")]
    assert bytes(row["secret_hash"]) == hashlib.sha256(key.encode()).digest()
    assert row["prefix"] == prefix
    assert audit, "the mint was audited"
    for text in dumps + audit:
        assert secret not in text
        assert key not in text

    listing = client.get("/v1/keys", headers=bearer(org.admin))
    assert listing.status_code == 200
    [info] = [k for k in listing.json()["items"] if k["id"] == created["id"]]
    assert "key" not in info and info["prefix"] == prefix
    assert secret not in listing.text
    # Control: the secret that was shown once does authenticate.
    assert read(client, key, org.m_alice).status_code == 200


def test_keys_are_random(client, org):
    """Given two keys minted for the same principal with the same body
    When they are compared
    Then prefixes and secrets differ, and both authenticate."""
    k1, k2 = (org.mint(client, "alice", name="same") for _ in range(2))
    assert k1["prefix"] != k2["prefix"]
    assert k1["key"].split("_", 2)[2] != k2["key"].split("_", 2)[2]
    for k in (k1, k2):
        assert read(client, k["key"], org.m_alice).status_code == 200


def test_right_prefix_wrong_secret_is_401(client, org):
    """Given a live key
    When its prefix is presented with another key's secret
    Then 401; the genuine key gets 200."""
    other = org.keys["bob"].split("_", 2)[2]
    _, prefix, _ = org.keys["alice"].split("_", 2)
    assert_error(read(client, f"sk_{prefix}_{other}", org.m_alice), 401, "unauthenticated")
    assert read(client, org.keys["alice"], org.m_alice).status_code == 200


# --------------------------------------------------------------------------------------
# Revocation and expiry: 401 after
# --------------------------------------------------------------------------------------


def test_revoked_key_is_401_on_the_next_request(client, org):
    """Given alice's two keys, both working
    When the owner revokes one (DELETE /v1/keys/{id})
    Then that key gets 401 on its next request, while alice's other key still works, and the
    listing shows it revoked."""
    spare = org.mint(client, "alice", name="spare")
    assert read(client, spare["key"], org.m_alice).status_code == 200

    r = client.delete(f"/v1/keys/{spare['id']}", headers=bearer(org.admin))
    assert r.status_code == 200, r.text
    assert r.json()["revoked_at"] is not None

    assert_error(read(client, spare["key"], org.m_alice), 401, "unauthenticated")
    assert_error(write(client, spare["key"], "After revocation", "users.alice"),
                 401, "unauthenticated")
    assert read(client, org.keys["alice"], org.m_alice).status_code == 200
    listing = client.get("/v1/keys", headers=bearer(org.admin)).json()["items"]
    assert [k["revoked_at"] is not None for k in listing if k["id"] == spare["id"]] == [True]


def test_expired_key_is_401(client, db, org):
    """Given a key minted with a future expiry, which works
    When its expiry passes (the clock moved: expires_at set into the past in the row)
    Then it answers 401; an unexpired key of the same holder still works."""
    soon = datetime.now(UTC) + timedelta(hours=1)
    k = org.mint(client, "alice", expires_at=soon.isoformat())
    assert k["expires_at"] is not None
    assert read(client, k["key"], org.m_alice).status_code == 200

    with db.transaction() as cur:
        cur.execute("UPDATE api_keys SET expires_at = now() - interval '1 second' WHERE id = %s",
                    (k["id"],))

    assert_error(read(client, k["key"], org.m_alice), 401, "unauthenticated")
    assert read(client, org.keys["alice"], org.m_alice).status_code == 200


def test_key_cannot_be_minted_already_expired(client, org, db):
    """Given an expiry in the past
    When a key is minted with it
    Then 422 naming expires_at and no key is stored, while the same request with a future
    expiry mints a key that works until then."""
    past = (datetime.now(UTC) - timedelta(minutes=1)).isoformat()
    with db.connection() as conn:
        before = conn.execute("SELECT count(*) AS n FROM api_keys").fetchone()["n"]
    r = client.post("/v1/keys", headers=bearer(org.admin),
                    json={"principal_id": org.principals["alice"], "expires_at": past})
    assert_error(r, 422, "invalid_input", "expires_at")
    with db.connection() as conn:
        assert conn.execute("SELECT count(*) AS n FROM api_keys").fetchone()["n"] == before
    future = (datetime.now(UTC) + timedelta(hours=1)).isoformat()
    live = org.mint(client, "alice", expires_at=future)
    assert read(client, live["key"], org.m_alice).status_code == 200


# --------------------------------------------------------------------------------------
# Grants: subtree coverage; 404 on reads and 403 on writes outside them
# --------------------------------------------------------------------------------------


def test_grant_covers_its_subtree_only(client, org):
    """Given alice with write on users.alice
    When she writes and reads inside users.alice (and a child path) and outside it
    Then inside succeeds; reading bob's memory is 404 and writing users.bob is 403 (field
    memories[0].path), while bob's own key does both."""
    alice, bob = org.keys["alice"], org.keys["bob"]
    child = write_ok(client, alice, "Alice's notebook entry", "users.alice.notes")
    assert read(client, alice, child).status_code == 200
    assert read(client, alice, org.m_alice).status_code == 200

    assert_error(read(client, alice, org.m_bob), 404, "not_found")
    assert read(client, bob, org.m_bob).status_code == 200

    assert_error(write(client, alice, "Sneaky write", "users.bob"), 403, "forbidden",
                 field="memories[0].path")
    write_ok(client, bob, "Bob's own write", "users.bob")

    # A sibling that shares the prefix text is not the subtree.
    assert_error(write(client, alice, "Prefix trick", "users.alicex"), 403, "forbidden")
    assert_error(write(client, alice, "Parent", "users"), 403, "forbidden")
    write_ok(client, org.admin, "Admin can write the parent", "users")


def test_list_shows_only_readable_paths(client, org):
    """Given memories at users.alice, users.bob and shared.ops
    When alice, bob and the reader list memories
    Then each sees exactly the memories under their grants; admin sees all three."""
    assert listed_ids(client, org.keys["alice"]) == {org.m_alice}
    assert listed_ids(client, org.keys["bob"]) == {org.m_bob}
    assert listed_ids(client, org.keys["reader"]) == {org.m_alice, org.m_bob}
    assert listed_ids(client, org.admin) == {org.m_alice, org.m_bob, org.m_shared}
    # Asking for a path outside the grant yields nothing, not an error; admin gets it.
    assert listed_ids(client, org.keys["alice"], "/v1/memories?path=users.bob") == set()
    assert listed_ids(client, org.admin, "/v1/memories?path=users.bob") == {org.m_bob}


WRITE_ROUTES = {
    "patch": ("PATCH", "/v1/memories/{id}", {"expected_version": 1, "content": "Rewritten"}),
    "delete": ("DELETE", "/v1/memories/{id}", None),
    "forget": ("POST", "/v1/memories/{id}/forget", None),
    "restore-version": ("POST", "/v1/memories/{id}/restore", {"version": 1}),
}


@pytest.mark.parametrize("name", list(WRITE_ROUTES))
def test_readable_but_not_writable_is_403_unreadable_is_404(name, client, db, org):
    """Given bob's memory (patched once so version 1 is in history), readable by the reader
    (read on users) and invisible to alice
    When the reader and alice send a write route on it
    Then the reader gets 403 and alice 404; the memory is unchanged; bob's key succeeds."""
    r = client.patch(f"/v1/memories/{org.m_bob}", headers=bearer(org.keys["bob"]),
                     json={"expected_version": 1, "tags": ["oncall"]})
    assert r.status_code == 200, r.text
    method, url, body = WRITE_ROUTES[name]
    url = url.format(id=org.m_bob)
    if body and "expected_version" in body:
        body = {**body, "expected_version": 2}
    before = read(client, org.admin, org.m_bob).json()

    reader = client.request(method, url, headers=bearer(org.keys["reader"]), json=body)
    assert_error(reader, 403, "forbidden")
    alice = client.request(method, url, headers=bearer(org.keys["alice"]), json=body)
    assert_error(alice, 404, "not_found")
    assert read(client, org.admin, org.m_bob).json() == before

    ok = client.request(method, url, headers=bearer(org.keys["bob"]), json=body)
    assert ok.status_code == 200, ok.text


@pytest.mark.parametrize("route", ["history", "related"])
def test_read_routes_404_without_grant(route, client, org):
    """Given bob's memory
    When alice (no grant on users.bob) asks for its history or relations
    Then 404, while the reader (read on users) gets 200."""
    url = f"/v1/memories/{org.m_bob}/{route}"
    assert_error(client.get(url, headers=bearer(org.keys["alice"])), 404, "not_found")
    assert client.get(url, headers=bearer(org.keys["reader"])).status_code == 200


def test_restore_of_deleted_memory_needs_read_then_write(client, org):
    """Given bob's memory, deleted by bob
    When alice, the reader and bob try to restore it
    Then alice gets 404 (cannot read users.bob), the reader 403 (read only), bob 200."""
    assert client.delete(f"/v1/memories/{org.m_bob}", headers=bearer(org.keys["bob"])).status_code == 200
    url = f"/v1/memories/{org.m_bob}/restore"
    assert_error(client.post(url, headers=bearer(org.keys["alice"])), 404, "not_found")
    assert_error(client.post(url, headers=bearer(org.keys["reader"])), 403, "forbidden")
    r = client.post(url, headers=bearer(org.keys["bob"]))
    assert r.status_code == 200 and r.json()["path"] == "users.bob", r.text


def test_patch_cannot_move_a_memory_out_of_reach(client, org):
    """Given alice's memory at users.alice
    When alice patches its path to users.bob
    Then 403 (field path) and the memory stays put; moving it within users.alice works."""
    r = client.patch(f"/v1/memories/{org.m_alice}", headers=bearer(org.keys["alice"]),
                     json={"expected_version": 1, "path": "users.bob"})
    assert_error(r, 403, "forbidden", field="path")
    assert read(client, org.admin, org.m_alice).json()["path"] == "users.alice"

    r = client.patch(f"/v1/memories/{org.m_alice}", headers=bearer(org.keys["alice"]),
                     json={"expected_version": 1, "path": "users.alice.archive"})
    assert r.status_code == 200 and r.json()["path"] == "users.alice.archive", r.text


def test_batch_with_one_forbidden_item_writes_nothing(client, org):
    """Given alice may write users.alice but not users.bob
    When she creates a batch of one item in each
    Then 403 naming memories[1].path and nothing was written; the allowed item alone works."""
    body = {"memories": [{"content": "Fine item", "path": "users.alice"},
                         {"content": "Forbidden item", "path": "users.bob"}]}
    r = client.post("/v1/memories", headers=bearer(org.keys["alice"]), json=body)
    assert_error(r, 403, "forbidden", field="memories[1].path")
    assert listed_ids(client, org.keys["alice"]) == {org.m_alice}
    new = write_ok(client, org.keys["alice"], "Fine item", "users.alice")
    assert listed_ids(client, org.keys["alice"]) == {org.m_alice, new}


# --------------------------------------------------------------------------------------
# Grant revocation: live, on the next request
# --------------------------------------------------------------------------------------


def test_grant_revocation_removes_access_on_next_request(client, org):
    """Given alice reading and writing users.alice with her key
    When the owner deletes her grant (DELETE /v1/grants/{id})
    Then her very next requests get 404 on reads and 403 on writes while still authenticated
    (list is 200 and no longer shows the memory); re-granting restores access."""
    alice = org.keys["alice"]
    assert read(client, alice, org.m_alice).status_code == 200
    assert org.m_alice in listed_ids(client, alice)

    r = client.delete(f"/v1/grants/{org.grants['alice']}", headers=bearer(org.admin))
    assert r.status_code == 200 and r.json()["path"] == "users.alice", r.text

    assert_error(read(client, alice, org.m_alice), 404, "not_found")
    assert_error(write(client, alice, "Still here?", "users.alice"), 403, "forbidden")
    assert org.m_alice not in listed_ids(client, alice)  # 200: authenticated, just no access
    assert read(client, org.admin, org.m_alice).status_code == 200  # the memory is there

    r = client.post("/v1/grants", headers=bearer(org.admin),
                    json={"principal_id": org.principals["alice"], "path": "users.alice",
                          "level": "read"})
    assert r.status_code == 201, r.text
    assert read(client, alice, org.m_alice).status_code == 200
    assert_error(write(client, alice, "Read only now", "users.alice"), 403, "forbidden")


def test_clamped_key_loses_access_with_its_holders_grant(client, db, org):
    """Given a reader key clamped to users.alice (it reads alice's memory, not bob's)
    When the reader's grant on users is revoked
    Then the clamped key reads nothing (404) although its ceiling is unchanged, and its
    effective access in SQL is empty."""
    k = org.mint(client, "reader", ceiling=[{"path": "users.alice", "level": "owner"}])
    assert read(client, k["key"], org.m_alice).status_code == 200
    assert_error(read(client, k["key"], org.m_bob), 404, "not_found")
    assert read(client, org.keys["reader"], org.m_bob).status_code == 200  # the holder can
    assert effective(db, k["id"]) == {("users.alice", "read")}

    assert client.delete(f"/v1/grants/{org.grants['reader']}",
                         headers=bearer(org.admin)).status_code == 200

    assert_error(read(client, k["key"], org.m_alice), 404, "not_found")
    assert effective(db, k["id"]) == set()
    assert client.get("/v1/memories", headers=bearer(k["key"])).status_code == 200


# --------------------------------------------------------------------------------------
# Key ceilings: least(key, member) at the deeper path, both directions, in SQL
# --------------------------------------------------------------------------------------


def test_ceiling_deeper_than_grant_clamps_to_ceiling_path(client, db, org):
    """Given the reader (read on users) and a key with ceiling owner on users.alice
    When the key reads and writes
    Then effective access is (users.alice, read): the deeper path with the lesser level. It
    reads alice's memory, gets 404 on bob's (the unclamped reader key reads it) and 403 on
    writes to users.alice (admin writes there)."""
    k = org.mint(client, "reader", ceiling=[{"path": "users.alice", "level": "owner"}])
    assert effective(db, k["id"]) == {("users.alice", "read")}

    assert read(client, k["key"], org.m_alice).status_code == 200
    assert_error(read(client, k["key"], org.m_bob), 404, "not_found")
    assert read(client, org.keys["reader"], org.m_bob).status_code == 200
    assert listed_ids(client, k["key"]) == {org.m_alice}
    assert listed_ids(client, org.keys["reader"]) == {org.m_alice, org.m_bob}

    assert_error(write(client, k["key"], "Owner? no", "users.alice"), 403, "forbidden")
    write_ok(client, org.admin, "Admin writes here", "users.alice")
    # Owner in the ceiling does not make owner: admin routes stay closed.
    assert_error(client.get("/v1/keys", headers=bearer(k["key"])), 403, "forbidden")


def test_grant_deeper_than_ceiling_clamps_to_grant_path(client, db, org):
    """Given alice (write on users.alice) and a key with ceiling read on users
    When the key reads and writes
    Then effective access is (users.alice, read): the grant's deeper path, the ceiling's
    lesser level. It reads alice's memory but not bob's, and cannot write users.alice
    (alice's unclamped key can)."""
    k = org.mint(client, "alice", ceiling=[{"path": "users", "level": "read"}])
    assert effective(db, k["id"]) == {("users.alice", "read")}

    assert read(client, k["key"], org.m_alice).status_code == 200
    assert_error(read(client, k["key"], org.m_bob), 404, "not_found")
    assert read(client, org.keys["bob"], org.m_bob).status_code == 200
    assert_error(write(client, k["key"], "Read-only key", "users.alice"), 403, "forbidden")
    write_ok(client, org.keys["alice"], "Unclamped key writes", "users.alice")


def test_ceiling_above_grant_level_gives_the_grant_level(client, db, org):
    """Given alice (write on users.alice) and a key with ceiling owner on users
    When the key writes and administers
    Then effective access is (users.alice, write): writes in users.alice succeed, writes in
    users.bob are 403 and admin routes are 403 (the admin key gets 200)."""
    k = org.mint(client, "alice", ceiling=[{"path": "users", "level": "owner"}])
    assert effective(db, k["id"]) == {("users.alice", "write")}
    write_ok(client, k["key"], "Written through the clamp", "users.alice")
    assert_error(write(client, k["key"], "Not bob's", "users.bob"), 403, "forbidden")
    assert_error(client.get("/v1/principals", headers=bearer(k["key"])), 403, "forbidden")
    assert client.get("/v1/principals", headers=bearer(org.admin)).status_code == 200


def test_multi_entry_ceiling_and_multi_grant(client, db, org):
    """Given bob with a second grant (read on shared) and a key with ceiling
    [(users.bob.work, write), (shared.ops, owner)]
    When effective access is computed
    Then it is {(users.bob.work, write), (shared.ops, read)}: per pair, deeper path and
    lesser level; bob's top-level memory is out of reach, shared.ops is readable."""
    r = client.post("/v1/grants", headers=bearer(org.admin),
                    json={"principal_id": org.principals["bob"], "path": "shared",
                          "level": "read"})
    assert r.status_code == 201, r.text
    k = org.mint(client, "bob", ceiling=[{"path": "users.bob.work", "level": "write"},
                                         {"path": "shared.ops", "level": "owner"}])
    assert effective(db, k["id"]) == {("users.bob.work", "write"), ("shared.ops", "read")}

    assert read(client, k["key"], org.m_shared).status_code == 200
    assert_error(read(client, k["key"], org.m_bob), 404, "not_found")
    assert read(client, org.keys["bob"], org.m_bob).status_code == 200
    write_ok(client, k["key"], "Work note", "users.bob.work")
    assert_error(write(client, k["key"], "Top level", "users.bob"), 403, "forbidden")


def test_inconsistent_key_has_no_access_but_is_authenticated(client, db, org):
    """Given a key for alice whose ceiling (users.bob) is disjoint from her grant
    When it is used
    Then it authenticates (lists answer 200) but reads are 404 and writes 403 everywhere,
    and its effective access is empty; alice's consistent key reads and writes."""
    k = org.mint(client, "alice", ceiling=[{"path": "users.bob", "level": "write"}])
    assert effective(db, k["id"]) == set()
    assert effective(db, org.key_ids["alice"]) == {("users.alice", "write")}

    r = client.get("/v1/memories", headers=bearer(k["key"]))
    assert r.status_code == 200 and r.json()["items"] == []
    assert listed_ids(client, org.keys["alice"]) == {org.m_alice}
    for mid in (org.m_alice, org.m_bob):
        assert_error(read(client, k["key"], mid), 404, "not_found")
    for path in ("users.alice", "users.bob"):
        assert_error(write(client, k["key"], "Nope", path), 403, "forbidden")
    assert read(client, org.keys["alice"], org.m_alice).status_code == 200
    write_ok(client, org.keys["alice"], "Consistent key writes", "users.alice")


def test_caller_access_is_what_sql_computes(db, org, caller_for):
    """Given clamped and unclamped keys
    When authenticate resolves them
    Then the caller's access tuples equal effective_access() rows, per key."""
    for name in ("alice", "reader", "lead"):
        caller = caller_for(org.keys[name])
        got = {(a.path, a.level.name) for a in caller.access}
        assert got == effective(db, org.key_ids[name]) == {GRANTS[name]}
        assert str(caller.principal_id) == org.principals[name]


# --------------------------------------------------------------------------------------
# Admin routes: owner-level only
# --------------------------------------------------------------------------------------


ADMIN_ROUTES = {
    "create-key": ("POST", "/v1/keys", lambda o: {"principal_id": o.principals["alice"]}, 201),
    "list-keys": ("GET", "/v1/keys", None, 200),
    "revoke-key": ("DELETE", "/v1/keys/{bob_key}", None, 200),
    "create-grant": ("POST", "/v1/grants", lambda o: {
        "principal_id": o.principals["alice"], "path": "users.alice.x", "level": "read"}, 201),
    "list-grants": ("GET", "/v1/grants", None, 200),
    "delete-grant": ("DELETE", "/v1/grants/{bob_grant}", None, 200),
    "create-principal": ("POST", "/v1/principals", lambda o: {"name": "carol"}, 201),
    "list-principals": ("GET", "/v1/principals", None, 200),
}


@pytest.mark.parametrize("holder", ["alice", "reader"])
@pytest.mark.parametrize("name", list(ADMIN_ROUTES))
def test_admin_routes_need_owner(name, holder, client, db, org):
    """Given a write key (alice) or a read key (reader)
    When it calls an admin route
    Then 403 forbidden and nothing changes; the owner key gets success on the same request."""
    method, url, body, ok_status = ADMIN_ROUTES[name]
    url = url.format(bob_key=org.key_ids["bob"], bob_grant=org.grants["bob"])
    payload = body(org) if body else None

    def counts():
        with db.connection() as conn:
            return conn.execute(
                "SELECT (SELECT count(*) FROM api_keys) k,"
                " (SELECT count(*) FROM api_keys WHERE revoked_at IS NOT NULL) r,"
                " (SELECT count(*) FROM grants) g, (SELECT count(*) FROM principals) p"
            ).fetchone()

    before = counts()
    r = client.request(method, url, headers=bearer(org.keys[holder]), json=payload)
    assert_error(r, 403, "forbidden")
    assert counts() == before

    ok = client.request(method, url, headers=bearer(org.admin), json=payload)
    assert ok.status_code == ok_status, ok.text


# --------------------------------------------------------------------------------------
# Minting: never above the minting key's effective access
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("ceiling,bad_index", [
    ([{"path": "users.bob", "level": "read"}], 0),
    ([{"path": "users", "level": "read"}], 0),
    ([{"path": "", "level": "read"}], 0),
    ([{"path": "users.alice", "level": "write"}, {"path": "users.bob", "level": "read"}], 1),
])
def test_key_cannot_mint_above_its_access(ceiling, bad_index, client, db, org):
    """Given the lead's key (owner on users.alice)
    When it mints a key for itself whose ceiling reaches outside users.alice
    Then 403 with field ceiling[i] naming the offending entry, and no key was stored; the
    admin key mints the same key (201), and the lead mints within users.alice (201)."""
    lead = org.keys["lead"]
    body = {"principal_id": org.principals["lead"], "ceiling": ceiling}
    with db.connection() as conn:
        n = conn.execute("SELECT count(*) AS n FROM api_keys").fetchone()["n"]

    r = client.post("/v1/keys", headers=bearer(lead), json=body)
    assert_error(r, 403, "forbidden", field=f"ceiling[{bad_index}]")
    with db.connection() as conn:
        assert conn.execute("SELECT count(*) AS n FROM api_keys").fetchone()["n"] == n

    assert client.post("/v1/keys", headers=bearer(org.admin), json=body).status_code == 201
    inside = {"principal_id": org.principals["lead"],
              "ceiling": [{"path": "users.alice", "level": "read"}]}
    assert client.post("/v1/keys", headers=bearer(lead), json=inside).status_code == 201


def test_mint_check_uses_effective_access_not_declared_ceiling(client, org):
    """Given a lead key whose declared ceiling is owner on users (the lead only owns
    users.alice, so its effective access is owner on users.alice)
    When it mints a key (for the lead) for users.bob, and one for users.alice.sub
    Then the users.bob mint is 403 (ceiling[0]) and the users.alice.sub mint is 201."""
    k = org.mint(client, "lead", ceiling=[{"path": "users", "level": "owner"}])
    bad = {"principal_id": org.principals["lead"],
           "ceiling": [{"path": "users.bob", "level": "read"}]}
    assert_error(client.post("/v1/keys", headers=bearer(k["key"]), json=bad),
                 403, "forbidden", field="ceiling[0]")
    good = {"principal_id": org.principals["lead"],
            "ceiling": [{"path": "users.alice.sub", "level": "write"}]}
    assert client.post("/v1/keys", headers=bearer(k["key"]), json=good).status_code == 201


def test_key_cannot_mint_a_higher_level_on_its_own_path(client, db, org):
    """Given the lead's owner key on users.alice, and a child key it minted clamped to read
    When the child mints a key (for the lead) with write on users.alice (above its own read)
    Then 403 (it is not an owner, and write exceeds read); the owner parent mints it (201)."""
    parent = org.mint(client, "lead", ceiling=[{"path": "users.alice", "level": "owner"}])
    child = org.mint(client, "lead", by=parent["key"],
                     ceiling=[{"path": "users.alice", "level": "read"}])
    assert effective(db, child["id"]) == {("users.alice", "read")}
    body = {"principal_id": org.principals["lead"],
            "ceiling": [{"path": "users.alice", "level": "write"}]}
    assert_error(client.post("/v1/keys", headers=bearer(child["key"]), json=body),
                 403, "forbidden")
    assert client.post("/v1/keys", headers=bearer(parent["key"]), json=body).status_code == 201


def test_key_minted_without_ceiling_inherits_the_minters_clamp(client, db, org):
    """Given the lead with a second grant (read on users.bob) and a lead key clamped by the
    admin to owner on users.alice
    When that key mints a key for the lead with no ceiling
    Then the new key's ceiling is the minting key's access, so it reads users.alice but not
    users.bob (404), while the lead's unclamped key reads both."""
    r = client.post("/v1/grants", headers=bearer(org.admin),
                    json={"principal_id": org.principals["lead"], "path": "users.bob",
                          "level": "read"})
    assert r.status_code == 201, r.text
    clamped = org.mint(client, "lead", ceiling=[{"path": "users.alice", "level": "owner"}])
    r = client.post("/v1/keys", headers=bearer(clamped["key"]),
                    json={"principal_id": org.principals["lead"]})
    assert r.status_code == 201, r.text
    k = r.json()
    assert k["ceiling"] == [{"path": "users.alice", "level": "owner"}]
    assert effective(db, k["id"]) == {("users.alice", "owner")}

    assert read(client, k["key"], org.m_alice).status_code == 200
    assert_error(read(client, k["key"], org.m_bob), 404, "not_found")
    assert read(client, org.keys["lead"], org.m_bob).status_code == 200


def test_subtree_owner_cannot_mint_for_a_broader_principal(client, db, org):
    """Given the lead's key (owner on users.alice) and the admin principal (owner on the root)
    When the lead mints a key for the admin principal
    Then 403 naming principal_id and no key is stored -- such a key used to be clamped only
    by the minter's access at mint time and outlived the minter's grant (issue 14; see
    test_keys_delegation); the lead's key for itself works in users.alice only."""
    admin_principal = next(p["id"] for p in client.get(
        "/v1/principals", headers=bearer(org.admin)).json()["items"] if p["name"] == "admin")
    with db.connection() as conn:
        n = conn.execute("SELECT count(*) AS n FROM api_keys").fetchone()["n"]
    r = client.post("/v1/keys", headers=bearer(org.keys["lead"]),
                    json={"principal_id": admin_principal})
    assert_error(r, 403, "forbidden", field="principal_id")
    with db.connection() as conn:
        assert conn.execute("SELECT count(*) AS n FROM api_keys").fetchone()["n"] == n

    k = org.mint(client, "lead", by=org.keys["lead"])
    assert effective(db, k["id"]) == {("users.alice", "owner")}
    assert read(client, k["key"], org.m_alice).status_code == 200
    assert_error(read(client, k["key"], org.m_bob), 404, "not_found")
    assert read(client, org.admin, org.m_bob).status_code == 200


def test_key_cannot_grant_above_its_access(client, org):
    """Given the lead's key (owner on users.alice)
    When it grants on users.bob, users, or the root
    Then 403 with field path and no grant is stored; granting on users.alice.shared works and
    takes effect for the grantee."""
    lead = bearer(org.keys["lead"])
    for path in ("users.bob", "users", ""):
        r = client.post("/v1/grants", headers=lead,
                        json={"principal_id": org.principals["bob"], "path": path,
                              "level": "read"})
        assert_error(r, 403, "forbidden", field="path")
    grants = client.get(f"/v1/grants?principal_id={org.principals['bob']}",
                        headers=bearer(org.admin)).json()["items"]
    assert [g["path"] for g in grants] == ["users.bob"]

    m = write_ok(client, org.admin, "Shared between alice and bob", "users.alice.shared")
    assert_error(read(client, org.keys["bob"], m), 404, "not_found")
    r = client.post("/v1/grants", headers=lead,
                    json={"principal_id": org.principals["bob"], "path": "users.alice.shared",
                          "level": "read"})
    assert r.status_code == 201, r.text
    assert read(client, org.keys["bob"], m).status_code == 200


def test_subtree_owner_sees_and_revokes_only_keys_inside_its_subtree(client, org):
    """Given the lead's key (owner on users.alice)
    When it lists keys and tries to revoke bob's key and the admin key
    Then those are absent from its listing and revoking them is 404 (they keep working);
    alice's key is listed and revocable (then 401)."""
    lead = bearer(org.keys["lead"])
    listed = {k["id"] for k in client.get("/v1/keys", headers=lead).json()["items"]}
    assert org.key_ids["alice"] in listed
    assert org.key_ids["bob"] not in listed

    admin_key_id = next(k["id"] for k in client.get("/v1/keys", headers=bearer(org.admin))
                        .json()["items"] if k["name"] == "admin")
    for key_id in (org.key_ids["bob"], admin_key_id):
        assert_error(client.delete(f"/v1/keys/{key_id}", headers=lead), 404, "not_found")
    assert read(client, org.keys["bob"], org.m_bob).status_code == 200
    assert read(client, org.admin, org.m_bob).status_code == 200

    assert client.delete(f"/v1/keys/{org.key_ids['alice']}", headers=lead).status_code == 200
    assert_error(read(client, org.keys["alice"], org.m_alice), 401, "unauthenticated")


def test_subtree_owner_cannot_delete_grants_outside_its_subtree(client, org):
    """Given the lead's key (owner on users.alice)
    When it lists grants and deletes bob's grant (users.bob), the admin's root grant and
    alice's grant (users.alice)
    Then it lists only alice's; bob's and the root grant are 404 and keep working; alice's is
    deleted and alice loses access."""
    lead = bearer(org.keys["lead"])
    assert_error(client.delete(f"/v1/grants/{org.grants['bob']}", headers=lead),
                 404, "not_found")
    assert read(client, org.keys["bob"], org.m_bob).status_code == 200
    root = [g for g in client.get("/v1/grants", headers=bearer(org.admin)).json()["items"]
            if g["path"] == ""]
    assert len(root) == 1
    assert_error(client.delete(f"/v1/grants/{root[0]['id']}", headers=lead), 404, "not_found")
    assert read(client, org.admin, org.m_shared).status_code == 200
    listed = {g["id"] for g in client.get("/v1/grants", headers=lead).json()["items"]}
    assert org.grants["alice"] in listed and org.grants["bob"] not in listed

    assert client.delete(f"/v1/grants/{org.grants['alice']}", headers=lead).status_code == 200
    assert_error(read(client, org.keys["alice"], org.m_alice), 404, "not_found")


# --------------------------------------------------------------------------------------
# Principals and default paths
# --------------------------------------------------------------------------------------


def test_principals_are_users_or_agents_of_one_tenant(client, org):
    """Given the tenant's principals
    When the owner lists them and creates an agent and a duplicate name
    Then kinds are as created, a duplicate name is 409 and an unknown kind 422."""
    items = client.get("/v1/principals", headers=bearer(org.admin)).json()["items"]
    kinds = {p["name"]: p["kind"] for p in items}
    assert kinds == {"admin": "user", "alice": "user", "bob": "user", "reader": "agent",
                     "lead": "user"}
    r = client.post("/v1/principals", headers=bearer(org.admin),
                    json={"name": "support-bot", "kind": "agent"})
    assert r.status_code == 201 and r.json()["kind"] == "agent", r.text
    assert_error(client.post("/v1/principals", headers=bearer(org.admin),
                             json={"name": "alice"}), 409, "conflict")
    assert_error(client.post("/v1/principals", headers=bearer(org.admin),
                             json={"name": "robot", "kind": "robot"}), 422, "invalid_input")


def test_default_path_receives_writes_without_path(client, org):
    """Given a key for alice with default_path users.alice.inbox, and one without
    When each writes a memory without a path
    Then the first lands in users.alice.inbox; the second is 422 naming memories[0].path."""
    k = org.mint(client, "alice", default_path="users.alice.inbox")
    assert k["default_path"] == "users.alice.inbox"
    mid = write_ok(client, k["key"], "Remember to call the dentist")
    assert read(client, k["key"], mid).json()["path"] == "users.alice.inbox"
    # An explicit path still wins.
    mid2 = write_ok(client, k["key"], "Explicit path note", "users.alice")
    assert read(client, k["key"], mid2).json()["path"] == "users.alice"

    assert_error(write(client, org.keys["alice"], "No path and no default"),
                 422, "invalid_input", field="memories[0].path")


def test_default_path_does_not_bypass_access(client, org):
    """Given a key for alice whose default path is users.bob (outside her grant)
    When it writes without a path
    Then 403 (nothing written); bob's key with that default writes there."""
    k = org.mint(client, "alice", default_path="users.bob")
    assert_error(write(client, k["key"], "Into bob's space"), 403, "forbidden",
                 field="memories[0].path")
    kb = org.mint(client, "bob", default_path="users.bob")
    mid = write_ok(client, kb["key"], "Into bob's space")
    assert read(client, kb["key"], mid).json()["path"] == "users.bob"


# --------------------------------------------------------------------------------------
# CLI-level core functions (Caller.system)
# --------------------------------------------------------------------------------------


def test_system_caller_mints_freely_but_key_is_still_clamped_to_holder(client, db, org, tenant):
    """Given the operator (Caller.system, as the CLI) minting a key for alice with ceiling
    owner on the root
    When the key is used
    Then it works and its access is alice's grant only: (users.alice, write) -- a key never
    exceeds its holder, whoever minted it; bob's memory is 404 for it and 200 for bob."""
    created = create_key(db, Caller.system(tenant.tenant_id),
                         principal_id=uuid.UUID(org.principals["alice"]),
                         ceiling=[{"path": "", "level": "owner"}], name="cli")
    assert effective(db, str(created.id)) == {("users.alice", "write")}
    caller = authenticate(db, created.key)
    assert {(a.path, a.level.name) for a in caller.access} == {("users.alice", "write")}

    write_ok(client, created.key, "Written with a CLI key", "users.alice")
    assert_error(read(client, created.key, org.m_bob), 404, "not_found")
    assert read(client, org.keys["bob"], org.m_bob).status_code == 200


def test_system_caller_key_for_other_tenants_principal_is_not_found(db, org, make_tenant):
    """Given another tenant
    When its operator mints a key for alice (a principal of the first tenant)
    Then NotFound; minting for its own admin principal works and authenticates."""
    from strata.foundation.errors import NotFound

    other = make_tenant("other")
    with pytest.raises(NotFound):
        create_key(db, Caller.system(other.tenant_id),
                   principal_id=uuid.UUID(org.principals["alice"]))
    ok = create_key(db, Caller.system(other.tenant_id), principal_id=other.principal_id)
    assert authenticate(db, ok.key).tenant_id == other.tenant_id
    with pytest.raises(Unauthenticated):
        authenticate(db, ok.key[:-2] + "zz")


# --------------------------------------------------------------------------------------
# Admin input validation names the field
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("url,body,status,field", [
    ("/v1/keys", lambda o: {"principal_id": o.principals["alice"],
                            "ceiling": [{"path": "users..x", "level": "read"}]},
     422, "ceiling[0].path"),
    ("/v1/keys", lambda o: {"principal_id": o.principals["alice"],
                            "ceiling": [{"path": "users.alice", "level": "admin"}]},
     422, None),
    ("/v1/keys", lambda o: {"principal_id": str(uuid.uuid4())}, 404, "principal_id"),
    ("/v1/keys", lambda o: {"principal_id": o.principals["alice"], "default_path": "a b"},
     422, "default_path"),
    ("/v1/grants", lambda o: {"principal_id": o.principals["alice"], "path": "users/alice",
                              "level": "read"}, 422, "path"),
    ("/v1/grants", lambda o: {"principal_id": str(uuid.uuid4()), "path": "users.alice",
                              "level": "read"}, 404, "principal_id"),
    ("/v1/grants", lambda o: {"principal_id": o.principals["alice"], "path": "users.alice",
                              "level": "read"}, 409, "path"),
])
def test_admin_input_errors_are_4xx_with_field(url, body, status, field, client, org):
    """Given the owner key
    When it sends an invalid admin request (bad path, unknown level, unknown principal,
    duplicate grant)
    Then a 4xx error body naming the field; a valid request to the same route succeeds."""
    r = client.post(url, headers=bearer(org.admin), json=body(org))
    assert r.status_code == status, r.text
    err = r.json()["error"]
    assert err["code"] and err["message"]
    if field is not None:
        assert err.get("field") == field, err
    valid = ({"principal_id": org.principals["alice"]} if url == "/v1/keys" else
             {"principal_id": org.principals["alice"], "path": "users.alice.y", "level": "read"})
    assert client.post(url, headers=bearer(org.admin), json=valid).status_code == 201


def test_review_names_a_contradicted_memory_only_to_who_may_read_it(client, db, org):
    """Given a candidate at users.alice recorded as contradicting bob's memory (a parent-path
    replacement or a model extractor can link across paths)
    When alice (write on users.alice only) lists the review queue
    Then she sees her candidate without the edge to bob's memory, while the tenant's owner
    (control) sees the edge: an edge never names what the caller cannot read."""
    cand = write_ok(client, org.admin, "Alice now prefers MySQL", "users.alice")
    with db.transaction() as cur:
        cur.execute("UPDATE memories SET status = 'candidate' WHERE id = %s", (cand,))
        cur.execute("INSERT INTO memory_relationships (tenant_id, source_id, target_id, type, decided_by)"
                    " SELECT tenant_id, %s, %s, 'CONTRADICTS', 'rule' FROM memories WHERE id = %s",
                    (cand, org.m_bob, cand))

    def queue(key: str) -> dict[str, list]:
        r = client.get("/v1/review", headers=bearer(key))
        assert r.status_code == 200, r.text
        return {c["id"]: [e["target_id"] for e in c["contradicts"]] for c in r.json()["items"]}

    assert queue(org.admin) == {cand: [org.m_bob]}
    assert queue(org.keys["alice"]) == {cand: []}
    assert org.m_bob not in client.get("/v1/review", headers=bearer(org.keys["alice"])).text
