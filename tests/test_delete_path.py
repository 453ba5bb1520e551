"""DELETE /v1/memories?path=: a subtree emptied by its owner, counted first, audited, with
history; through HTTP on the real database."""

from __future__ import annotations

import random

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

SEGMENTS = ("a", "b", "ab", "c")


def create(client, h, items: list[tuple[str, str]]) -> list[str]:
    r = client.post("/v1/memories", headers=h, json={"memories": [
        {"content": c, "path": p} for c, p in items]})
    assert r.status_code == 200, r.text
    return [x["id"] for x in r.json()["results"]]


def delete(client, h, path: str, **params):
    return client.delete("/v1/memories", headers=h, params={"path": path, **params})


def stored(db, tenant_id) -> dict[str, str]:
    with db.connection() as conn:
        return {str(r["id"]): r["path"] for r in conn.execute(
            "SELECT id, path::text AS path FROM memories WHERE tenant_id = %s",
            (tenant_id,)).fetchall()}


def test_owner_counts_then_deletes_a_subtree_with_history_and_audit(client, tenant, db):
    """Given memories under users.alice (one of them superseded), a sibling users.alicex and
    users.bob
    When the owner counts users.alice (no expected_count: a dry run), deletes with a stale
    count, then with the count
    Then the dry run counts the subtree in every status and removes nothing; the stale count
    is refused (409) and removes nothing; the last removes exactly the subtree
    (users.alicex and users.bob stay: the control), each removed memory keeps its history
    and can be restored, and one audit entry names every removed id and no content."""
    h = tenant.headers
    alice = create(client, h, [("Alice likes green tea", "users.alice"),
                               ("Alice's cat is called Miso", "users.alice.pets"),
                               ("Alice works in Lisbon", "users.alice.work")])
    r = client.patch(f"/v1/memories/{alice[2]}", headers=h, json={
        "expected_version": 1, "content": "Alice works in Porto"})
    assert r.status_code == 200, r.text
    others = create(client, h, [("Alicex is a different user", "users.alicex"),
                                ("Bob rides a bike", "users.bob")])
    before = stored(db, tenant.tenant_id)
    under = {i for i, p in before.items() if p == "users.alice" or p.startswith("users.alice.")}
    assert len(under) >= 3 and set(others) <= set(before)

    dry = delete(client, h, "users.alice")
    assert dry.status_code == 200, dry.text
    assert dry.json() == {"path": "users.alice", "count": len(under), "dry_run": True,
                          "deleted": 0}
    assert stored(db, tenant.tenant_id) == before

    r = delete(client, h, "users.alice", expected_count=len(under) - 1)
    assert r.status_code == 409 and r.json()["error"]["field"] == "expected_count", r.text
    assert stored(db, tenant.tenant_id) == before

    r = delete(client, h, "users.alice", expected_count=len(under))
    assert r.status_code == 200, r.text
    assert r.json() == {"path": "users.alice", "count": len(under), "dry_run": False,
                        "deleted": len(under)}
    after = stored(db, tenant.tenant_id)
    assert set(after) == set(before) - under and set(others) <= set(after)
    for mid in under:
        assert client.get(f"/v1/memories/{mid}", headers=h).status_code == 404
    hist = client.get(f"/v1/memories/{alice[0]}/history", headers=h)
    assert hist.status_code == 200 and hist.json()["items"], hist.text
    r = client.post(f"/v1/memories/{alice[0]}/restore", headers=h)
    assert r.status_code == 200 and r.json()["content"] == "Alice likes green tea", r.text

    with db.connection() as conn:
        rows = conn.execute(
            "SELECT operation, action, memory_ids, count, to_jsonb(a)::text AS body"
            " FROM audit_log a WHERE tenant_id = %s AND operation LIKE 'memory.%%_path'"
            " ORDER BY seq", (tenant.tenant_id,)).fetchall()
    ops = [(x["operation"], x["outcome"] if "outcome" in x else None) for x in rows]
    deleted = [x for x in rows if x["operation"] == "memory.delete_path" and x["count"]]
    assert len(deleted) == 1, ops
    assert {str(m) for m in deleted[0]["memory_ids"]} == under
    assert any(x["operation"] == "memory.count_path" for x in rows), ops
    for x in rows:
        assert "green tea" not in x["body"] and "Lisbon" not in x["body"]


def test_only_an_owner_of_the_path_may_delete_it(client, tenant, db):
    """A key with write (not owner) on users.alice is refused, counting included, and nothing
    goes; a key that cannot read the path learns nothing either (403 without a count).
    Control: the owner key counts and deletes."""
    from strata.auth import Caller, create_key

    h = tenant.headers
    create(client, h, [("Alice plays chess", "users.alice")])
    before = stored(db, tenant.tenant_id)
    for level in ("write", "read"):
        key = create_key(db, Caller.system(tenant.tenant_id), principal_id=tenant.principal_id,
                         ceiling=[{"path": "users.alice", "level": level}]).key
        kh = {"Authorization": f"Bearer {key}"}
        for params in ({}, {"expected_count": 1}):
            r = delete(client, kh, "users.alice", **params)
            assert r.status_code == 403, (level, params, r.text)
            assert "count" not in r.json(), r.text
    assert stored(db, tenant.tenant_id) == before
    assert delete(client, h, "users.alice").json()["count"] == 1
    assert delete(client, h, "users.alice", expected_count=1).json()["deleted"] == 1


def test_bad_paths_are_422_naming_path(client, tenant):
    h = tenant.headers
    for bad in ("", "users..alice", "users.al ice", "x" * 5000):
        r = delete(client, h, bad)
        assert r.status_code == 422 and r.json()["error"]["field"] == "path", (bad, r.text)
    r = client.delete("/v1/memories", headers=h)
    assert r.status_code == 422 and r.json()["error"]["field"] == "path", r.text


paths = st.lists(st.sampled_from(SEGMENTS), min_size=1, max_size=3).map(".".join)


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(paths, min_size=1, max_size=12), paths)
def test_the_count_is_the_subtree_whatever_the_tree(client, make_tenant, db, tree, target):
    """Generated trees of paths (siblings sharing prefixes: a, ab) and a target: the dry run
    counts exactly the memories at the target or below it (ltree's <@, not a string prefix),
    and the delete removes exactly those."""
    t = make_tenant()
    create(client, t.headers, [(f"Memory {i} {random.random()}", p) for i, p in enumerate(tree)])
    under = [p for p in tree if p == target or p.startswith(target + ".")]
    r = delete(client, t.headers, target)
    assert r.status_code == 200 and r.json()["count"] == len(under), (tree, target, r.text)
    r = delete(client, t.headers, target, expected_count=len(under))
    assert r.status_code == 200, r.text
    assert sorted(stored(db, t.tenant_id).values()) == sorted(p for p in tree if p not in under)
