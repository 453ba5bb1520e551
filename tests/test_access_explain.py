"""GET /v1/access/explain: a key's effective level at a path and the entry that decides it,
held to the SQL that authorises requests (effective_access) on generated chains."""

from __future__ import annotations

import uuid

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from strata.auth import Caller, authenticate, create_grant, create_principal
from strata.auth.keys import insert_key
from strata.auth.models import CeilingEntry
from strata.foundation.errors import Unauthenticated

PATHS = ("", "users", "users.alice", "users.alice.notes", "users.bob", "shared")
LEVELS = ("read", "write", "owner")


def explain(client, headers, key_id, path):
    return client.get("/v1/access/explain", headers=headers,
                      params={"key_id": str(key_id), "path": path})


def test_explain_names_the_ceiling_entry_that_clamps_a_key(client, tenant, db):
    """Given an agent granted write on users and a key of it clamped to read on users.alice
    When the owner asks why that key holds what it holds at users.alice, users.bob, shared
    Then users.alice is read, decided by the ceiling entry on users.alice (its grant allows
    write); users.bob has none, the ceiling covering nothing there; shared has none, no grant
    covering it. Control: a key of the same agent without a ceiling has write at users.alice,
    decided by the grant."""
    system = Caller.system(tenant.tenant_id)
    agent = create_principal(db, system, "agent-explain", "agent")
    create_grant(db, system, agent.id, "users", "write")
    with db.transaction() as cur:
        clamped = insert_key(cur, tenant_id=tenant.tenant_id, principal_id=agent.id,
                             ceiling=[CeilingEntry(path="users.alice", level="read")], name="c")
        free = insert_key(cur, tenant_id=tenant.tenant_id, principal_id=agent.id,
                          ceiling=None, name="f")
    h = tenant.headers
    r = explain(client, h, clamped.id, "users.alice")
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["level"] == "read"
    assert body["decided_by"]["source"] == "ceiling"
    assert body["decided_by"]["entry"] == {"path": "users.alice", "level": "read"}
    assert "users.alice" in body["decided_by"]["message"]
    assert body["chain"][0]["grants"] == [{"path": "users", "level": "write"}]
    bob = explain(client, h, clamped.id, "users.bob").json()
    assert bob["level"] is None and bob["decided_by"]["source"] == "no_ceiling_entry"
    shared = explain(client, h, clamped.id, "shared").json()
    assert shared["level"] is None and shared["decided_by"]["source"] == "no_grant"
    control = explain(client, h, free.id, "users.alice").json()
    assert control["level"] == "write" and control["decided_by"]["source"] == "grant"
    assert control["decided_by"]["entry"] == {"path": "users", "level": "write"}


def test_explain_follows_the_minting_chain_and_dead_links(client, tenant, db):
    """A key minted through the API by a clamped key is clamped by its parent too; once the
    parent is revoked the child holds nothing, and the explanation names the revoked link."""
    h = tenant.headers
    parent = client.post("/v1/keys", headers=h, json={
        "principal_id": str(tenant.principal_id),
        "ceiling": [{"path": "users", "level": "owner"}]}).json()
    child = client.post("/v1/keys", headers={"Authorization": f"Bearer {parent['key']}"},
                        json={"principal_id": str(tenant.principal_id),
                              "ceiling": [{"path": "users.alice", "level": "write"}]})
    assert child.status_code == 201, child.text
    child = child.json()
    body = explain(client, h, child["id"], "users.alice.notes").json()
    owner = str(authenticate(db, tenant.key).key_id)  # minted the parent
    assert body["level"] == "write" and [s["key_id"] for s in body["chain"]] == [
        child["id"], parent["id"], owner]
    assert body["decided_by"]["key_id"] == child["id"]
    assert client.delete(f"/v1/keys/{parent['id']}", headers=h).status_code == 200
    dead = explain(client, h, child["id"], "users.alice").json()
    assert dead["level"] is None and dead["decided_by"]["source"] == "dead_key"
    assert dead["decided_by"]["key_id"] == parent["id"]
    assert dead["chain"][1]["dead_because"] == "revoked"


def test_only_owners_of_the_path_may_ask_and_only_of_their_tenant(client, tenant, make_tenant,
                                                                   db):
    """A key without owner access at the path is refused (403), another tenant's key is not
    found (404), a malformed path is a 422 naming it. Control: the owner's answer is 200."""
    h = tenant.headers
    reader = client.post("/v1/keys", headers=h, json={
        "principal_id": str(tenant.principal_id),
        "ceiling": [{"path": "users", "level": "write"}]}).json()
    rh = {"Authorization": f"Bearer {reader['key']}"}
    assert explain(client, rh, reader["id"], "users").status_code == 403
    other = make_tenant()
    other_key = authenticate(db, other.key).key_id
    r = explain(client, h, other_key, "users")
    assert r.status_code == 404 and r.json()["error"]["field"] == "key_id", r.text
    r = explain(client, h, reader["id"], "users..x")
    assert r.status_code == 422 and r.json()["error"]["field"] == "path", r.text
    assert explain(client, h, reader["id"], "users").status_code == 200


ceilings = st.one_of(st.none(), st.lists(st.tuples(st.sampled_from(PATHS),
                                                   st.sampled_from(LEVELS)), max_size=3))
grants = st.dictionaries(st.sampled_from(PATHS), st.sampled_from(LEVELS), max_size=3)


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(grants, ceilings), min_size=1, max_size=3),
       st.sampled_from([None, 0, 1, 2]))
def test_explained_level_is_the_level_requests_get(client, make_tenant, db, chain, revoked):
    """Generated chains of keys (each of its own principal, with generated grants and
    ceilings, each minted by the next; sometimes one link revoked): at every path, the
    explained level is the level the authorisation SQL gives the key (none at all when the
    key no longer authenticates), and the deciding entry, when there is one, holds it."""
    t = make_tenant()
    system = Caller.system(t.tenant_id)
    parent_id = None
    keys = []
    for i, (g, ceiling) in reversed(list(enumerate(chain))):
        p = create_principal(db, system, f"p{i}-{uuid.uuid4().hex[:6]}", "agent")
        for path, level in g.items():
            create_grant(db, system, p.id, path, level)
        with db.transaction() as cur:
            k = insert_key(cur, tenant_id=t.tenant_id, principal_id=p.id, name=f"k{i}",
                           ceiling=None if ceiling is None else [
                               CeilingEntry(path=c, level=lv) for c, lv in ceiling],
                           parent_id=parent_id)
        keys.append(k)
        parent_id = k.id
    key = keys[-1]  # the bottom of the chain
    if revoked is not None and revoked < len(keys):
        with db.transaction() as cur:
            cur.execute("UPDATE api_keys SET revoked_at = now() WHERE id = %s",
                        (keys[revoked].id,))
    try:
        caller = authenticate(db, key.key)
    except Unauthenticated:
        caller = Caller(t.tenant_id, None, None, ())
    for path in PATHS:
        r = explain(client, t.headers, key.id, path)
        assert r.status_code == 200, r.text
        body = r.json()
        want = caller.level_at(path)
        assert body["level"] == (want.name if want else None), (chain, path, body)
        entry = body["decided_by"]["entry"]
        if body["level"] is not None:
            assert entry is not None and entry["level"] == body["level"], body
