"""The API routes the console reads (GET /v1/me, /v1/paths, /v1/ingest, /v1/audit/status)
and the console's own static files, over HTTP on a real database.

Every exclusion is checked beside its control: a key clamped to users.alice must not learn
of users.bob (its paths, its receipts), while the owner key sees both.
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from support import assert_error, bearer

T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)


@pytest.fixture
def world(client, tenant):
    """Memories in users.alice (two active, one candidate after a change back) and one in
    users.bob, a receipt in each path, and a key clamped to read users.alice."""
    h = tenant.headers
    r = client.post("/v1/memories", headers=h, json={"memories": [
        {"content": "Alice keeps bees", "path": "users.alice"},
        {"content": "Bob collects stamps from Peru", "path": "users.bob"}]})
    assert r.status_code == 200, r.text
    receipts = {}
    for path, text in (("users.alice", "I prefer MongoDB"),
                       ("users.bob", "What time is it?")):
        r = client.post("/v1/ingest", headers=h, json={
            "path": path, "wait": True,
            "messages": [{"role": "user", "content": text, "at": T0.isoformat()}]})
        assert r.status_code == 200, r.text
        receipts[path] = r.json()
    r = client.post("/v1/keys", headers=h, json={
        "principal_id": str(tenant.principal_id), "name": "alice reader",
        "ceiling": [{"path": "users.alice", "level": "read"}]})
    assert r.status_code == 201, r.text
    return {"owner": h, "alice": bearer(r.json()["key"]), "receipts": receipts}


def test_me_names_the_keys_own_effective_access(client, world):
    """Given the owner key and a key clamped to read users.alice
    When each asks GET /v1/me
    Then each is told its own effective access (the clamp for the clamped one); without a
    key the answer is 401."""
    owner = client.get("/v1/me", headers=world["owner"])
    assert owner.status_code == 200, owner.text
    assert owner.json()["access"] == [{"path": "", "level": "owner"}]
    alice = client.get("/v1/me", headers=world["alice"])
    assert alice.status_code == 200
    assert alice.json()["access"] == [{"path": "users.alice", "level": "read"}]
    assert alice.json()["key_id"] != owner.json()["key_id"]
    assert_error(client.get("/v1/me"), 401, "unauthenticated")


def test_paths_lists_only_readable_paths_with_counts_per_status(client, world):
    """Given memories in users.alice and users.bob
    When the owner and the clamped key list GET /v1/paths
    Then the owner sees both paths with their counts per status (the control); the clamped
    key sees users.alice with the same counts and nothing of users.bob, not even its name,
    also when it asks for users.bob's subtree."""
    owner = client.get("/v1/paths", headers=world["owner"])
    assert owner.status_code == 200, owner.text
    by_path = {i["path"]: i for i in owner.json()["items"]}
    assert set(by_path) == {"users.alice", "users.bob"}
    assert by_path["users.alice"]["counts"] == {"active": 2}
    assert by_path["users.alice"]["total"] == 2 and by_path["users.bob"]["total"] == 1

    alice = client.get("/v1/paths", headers=world["alice"])
    assert alice.status_code == 200
    assert alice.json()["items"] == [by_path["users.alice"]]
    assert "bob" not in alice.text
    asked = client.get("/v1/paths", headers=world["alice"], params={"path": "users.bob"})
    assert asked.status_code == 200 and asked.json()["items"] == []
    control = client.get("/v1/paths", headers=world["owner"], params={"path": "users.bob"})
    assert [i["path"] for i in control.json()["items"]] == ["users.bob"]


def test_paths_pages_in_path_order_and_refuses_a_bad_path(client, world):
    """Given two readable paths
    When the owner lists them one per page
    Then the pages follow path order and the second says there is no more; a malformed
    path or cursor is a 422 naming the field."""
    first = client.get("/v1/paths", headers=world["owner"], params={"limit": 1}).json()
    assert [i["path"] for i in first["items"]] == ["users.alice"]
    assert first["next_cursor"] == "users.alice"
    second = client.get("/v1/paths", headers=world["owner"],
                        params={"limit": 1, "cursor": first["next_cursor"]}).json()
    assert [i["path"] for i in second["items"]] == ["users.bob"] and second["next_cursor"] is None
    assert_error(client.get("/v1/paths", headers=world["owner"], params={"path": "a..b"}),
                 422, "invalid_input", "path")
    assert_error(client.get("/v1/paths", headers=world["owner"], params={"cursor": "x y"}),
                 422, "invalid_input", "cursor")


def test_receipts_list_only_readable_ones_newest_first_with_their_outcomes(client, world):
    """Given a receipt in users.alice (a memory written) and one in users.bob (a question:
    nothing kept)
    When the owner and the clamped key list GET /v1/ingest
    Then the owner sees both, newest first, each with its status, items and not-kept
    clauses (the control); the clamped key sees only users.alice's receipt."""
    alice_receipt, bob_receipt = world["receipts"]["users.alice"], world["receipts"]["users.bob"]
    owner = client.get("/v1/ingest", headers=world["owner"])
    assert owner.status_code == 200, owner.text
    items = owner.json()["items"]
    assert [r["id"] for r in items] == [bob_receipt["id"], alice_receipt["id"]]
    assert items[1]["status"] == "wrote" and items[1]["items"][0]["outcome"] == "created"
    assert items[0]["status"] == "meaningful_no_write"
    assert [n["reason"] for n in items[0]["not_kept"]] == ["question"]

    alice = client.get("/v1/ingest", headers=world["alice"])
    assert [r["id"] for r in alice.json()["items"]] == [alice_receipt["id"]]
    assert bob_receipt["id"] not in alice.text and "users.bob" not in alice.text


def test_receipts_filter_by_status_and_path_and_page(client, world):
    """Given the two receipts
    When they are listed by status, by path, and one per page
    Then each filter keeps what it names, the pages meet without overlap, and an unknown
    status or a forged cursor is a 422."""
    h = world["owner"]
    quiet = client.get("/v1/ingest", headers=h, params={"status": "meaningful_no_write"}).json()
    assert [r["path"] for r in quiet["items"]] == ["users.bob"]
    both = client.get("/v1/ingest", headers=h, params={"status": "wrote,meaningful_no_write"})
    assert len(both.json()["items"]) == 2
    under = client.get("/v1/ingest", headers=h, params={"path": "users.alice"}).json()
    assert [r["path"] for r in under["items"]] == ["users.alice"]
    first = client.get("/v1/ingest", headers=h, params={"limit": 1}).json()
    second = client.get("/v1/ingest", headers=h,
                        params={"limit": 1, "cursor": first["next_cursor"]}).json()
    assert first["next_cursor"] and second["next_cursor"] is None
    assert {first["items"][0]["path"], second["items"][0]["path"]} == {"users.alice", "users.bob"}
    assert_error(client.get("/v1/ingest", headers=h, params={"status": "done"}), 422,
                 "invalid_input", "status")
    assert_error(client.get("/v1/ingest", headers=h, params={"cursor": "bm90LWEtY3Vyc29y"}),
                 422, "invalid_input", "cursor")


def test_audit_status_reports_the_head_and_the_last_scheduled_verification(client, world, db, tenant):
    """Given a tenant whose chain has entries
    When the root owner reads GET /v1/audit/status before and after a scheduled verification
    Then it reports the head, no verification before and the verified run after (ok, its
    mode and the checkpoint it moved); the clamped key is refused (403)."""
    from strata.audit import verify_tenant
    from strata.audit.maintenance import for_each_tenant

    before = client.get("/v1/audit/status", headers=world["owner"])
    assert before.status_code == 200, before.text
    assert before.json()["head_seq"] > 0
    assert before.json()["last_verification"] is None and before.json()["verified"] is None

    report = for_each_tenant(db, "audit_verify", lambda tid: verify_tenant(db, tid, rolling=True),
                             tenant_id=tenant.tenant_id)
    assert report["ok"], report
    after = client.get("/v1/audit/status", headers=world["owner"]).json()
    assert after["last_verification"]["ok"] is True
    assert after["last_verification"]["mode"] == "rolling"
    assert after["last_verification"]["completed_at"] is not None
    assert after["verified"]["seq"] >= before.json()["head_seq"]
    assert_error(client.get("/v1/audit/status", headers=world["alice"]), 403, "forbidden")


def test_console_files_are_served_without_a_key_and_kept_out_of_the_api_document(client):
    """Given the app
    When the console's page and assets are fetched without a key
    Then they are served with a content security policy that allows no inline script and no
    other origin; an unknown asset is a 404, and none of them is in the OpenAPI document."""
    page = client.get("/console")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    csp = page.headers["content-security-policy"]
    assert "script-src 'self'" in csp and "unsafe-inline" not in csp
    assert "console/console.js" in page.text
    script = client.get("/console/console.js")
    assert script.status_code == 200 and "sessionStorage" in script.text
    assert "innerHTML" not in script.text
    assert client.get("/console/console.css").status_code == 200
    assert_error(client.get("/console/secrets.txt"), 404, "not_found")
    assert_error(client.get("/console/..%2Fapp.py"), 404, "not_found")
    paths = client.get("/openapi.json").json()["paths"]
    assert "/v1/paths" in paths  # control: the document lists the API's routes
    assert not [p for p in paths if p.startswith("/console")]
