"""Memories over HTTP: batch create, compare-and-set updates, history, delete/restore, forget,
and listing. Real app, real PostgreSQL (one fresh database per test), nothing mocked.

Every exclusion sits next to its control: a blocked value beside an inserted one, a refused
batch beside the same key's accepted batch, an absent string beside the same search finding
a string that is present.
"""

from __future__ import annotations

import threading
import uuid
from typing import Any

import pytest
from fastapi.testclient import TestClient

from strata.foundation.errors import VersionConflict
from strata.memories import MemoryPatch, update_memory
from support import assert_error, create, create_ok

ALICE = "users.alice"


# --------------------------------------------------------------------------------------
# Helpers
# --------------------------------------------------------------------------------------


def item(content: str, path: str = ALICE, **extra: Any) -> dict[str, Any]:
    return {"content": content, "path": path, **extra}


def new_id(client, headers, content: str, path: str = ALICE, **extra: Any) -> str:
    [res] = create_ok(client, headers, item(content, path, **extra))
    assert res["status"] == "inserted", res
    return res["id"]


def get(client, headers, mid: str):
    return client.get(f"/v1/memories/{mid}", headers=headers)


def patch(client, headers, mid: str, body: dict, if_match: str | None = None):
    h = dict(headers)
    if if_match is not None:
        h["If-Match"] = if_match
    return client.patch(f"/v1/memories/{mid}", headers=h, json=body)


def list_all(client, headers, **params: Any) -> list[dict]:
    """Every page of GET /v1/memories with these filters."""
    out: list[dict] = []
    cursor = None
    for _ in range(100):
        q = dict(params)
        if cursor:
            q["cursor"] = cursor
        r = client.get("/v1/memories", headers=headers, params=q)
        assert r.status_code == 200, r.text
        body = r.json()
        out += body["items"]
        cursor = body["next_cursor"]
        if not cursor:
            return out
    raise AssertionError("pagination did not end")


def contents(items: list[dict]) -> list[str]:
    return [m["content"] for m in items]


def sql_rows_containing(db, table: str, needle: str) -> int:
    """How many rows of ``table`` hold ``needle`` anywhere in any column (as JSON text)."""
    assert table in {"memories", "memory_history", "tombstones", "audit_log", "ingest_receipts",
                     "memory_relationships"}
    with db.connection() as conn:
        return conn.execute(
            f"SELECT count(*) AS n FROM {table} t"
            " WHERE lower((to_jsonb(t) - 'embedding' - 'fts')::text) LIKE %s",
            (f"%{needle.lower()}%",),
        ).fetchone()["n"]


@pytest.fixture
def restricted(client, tenant) -> dict[str, str]:
    """Headers of a key whose holder may write users.alice and nothing else."""
    r = client.post("/v1/principals", headers=tenant.headers, json={"name": "alice"})
    assert r.status_code == 201, r.text
    pid = r.json()["id"]
    r = client.post("/v1/grants", headers=tenant.headers,
                    json={"principal_id": pid, "path": ALICE, "level": "write"})
    assert r.status_code == 201, r.text
    r = client.post("/v1/keys", headers=tenant.headers, json={"principal_id": pid})
    assert r.status_code == 201, r.text
    return {"Authorization": f"Bearer {r.json()['key']}"}


# --------------------------------------------------------------------------------------
# Batch create
# --------------------------------------------------------------------------------------


def test_batch_results_are_per_input_in_input_order(client, tenant):
    """Given a named memory and an active fact in users.alice
    When a batch mixes new values, a variant of the fact, the named slot re-sent unchanged,
         and the fact in another path
    Then results come one per input, in input order: inserted, reinforced, skipped, inserted,
         inserted, each pointing at the right memory."""
    h = tenant.headers
    tea = new_id(client, h, "I like green tea.")
    named = new_id(client, h, "Deploys happen on Tuesday", name="deploy-day")

    results = create_ok(
        client, h,
        item("Alice's cat is called Miso"),
        item("  i LIKE   green TEA!!  "),
        item("deploys happen on tuesday", name="deploy-day"),
        item("Alice drinks coffee at 9"),
        item("I like green tea.", path="users.bob"),
    )
    assert [r["status"] for r in results] == [
        "inserted", "reinforced", "skipped", "inserted", "inserted"]
    assert results[1]["id"] == tea
    assert results[2]["id"] == named
    fresh = {results[0]["id"], results[3]["id"], results[4]["id"]}
    assert len(fresh) == 3 and not fresh & {tea, named}
    assert get(client, h, results[0]["id"]).json()["content"] == "Alice's cat is called Miso"
    assert get(client, h, results[3]["id"]).json()["content"] == "Alice drinks coffee at 9"
    assert get(client, h, results[4]["id"]).json()["path"] == "users.bob"


def test_reinforcement_bumps_version_appends_evidence_and_makes_no_copy(client, tenant):
    """Given an active fact in users.alice
    When case/whitespace/trailing-punctuation variants of it are created there twice
    Then the same memory is reinforced (version and evidence grow, content kept) and the path
         still holds one copy; the same value in a sub-path is a separate insert."""
    h = tenant.headers
    mid = new_id(client, h, "The office wifi is slow")
    before = get(client, h, mid).json()
    assert before["version"] == 1 and len(before["evidence"]) == 1

    [r1] = create_ok(client, h, item("the OFFICE wifi is slow!"))
    [r2] = create_ok(client, h, item("The office   wifi is slow..."))
    assert (r1["status"], r1["id"], r1["version"]) == ("reinforced", mid, 2)
    assert (r2["status"], r2["id"], r2["version"]) == ("reinforced", mid, 3)

    after = get(client, h, mid).json()
    assert after["content"] == "The office wifi is slow"
    assert after["version"] == 3
    assert after["reinforcements"] == 2
    assert len(after["evidence"]) == 3
    assert [m["id"] for m in list_all(client, h, path=ALICE)] == [mid]

    # A different path (even a sub-path) is a new memory, not a reinforcement.
    [r3] = create_ok(client, h, item("The office wifi is slow", path="users.alice.work"))
    assert r3["status"] == "inserted" and r3["id"] != mid
    assert get(client, h, mid).json()["version"] == 3


def test_named_slot_replace_updates_in_place_and_keeps_history(client, tenant):
    """Given a named memory
    When the name is re-sent with new content and on_conflict=replace
    Then the result is `updated` with the same id, content and version change, and history
         holds the prior content."""
    h = tenant.headers
    mid = new_id(client, h, "Standup is at 9:30", name="standup")
    [res] = create_ok(client, h, item("Standup is at 10:00", name="standup"),
                      on_conflict="replace")
    assert (res["status"], res["id"], res["version"]) == ("updated", mid, 2)
    got = get(client, h, mid).json()
    assert (got["content"], got["version"]) == ("Standup is at 10:00", 2)
    hist = client.get(f"/v1/memories/{mid}/history", headers=h).json()["items"]
    assert [e["snapshot"]["content"] for e in hist] == ["Standup is at 9:30"]
    assert len(list_all(client, h, path=ALICE)) == 1


def test_named_slot_ignore_skips_and_keeps_content(client, tenant):
    """Given a named memory
    When the name is re-sent with different content and on_conflict=ignore
    Then the result is `skipped` with the existing id and nothing changes; a new name in the
         same batch is still inserted."""
    h = tenant.headers
    mid = new_id(client, h, "Standup is at 9:30", name="standup")
    res = create_ok(client, h, item("Standup is at 10:00", name="standup"),
                    item("Retro is on Friday", name="retro"), on_conflict="ignore")
    assert [(r["status"], r["id"] == mid) for r in res] == [("skipped", True), ("inserted", False)]
    got = get(client, h, mid).json()
    assert (got["content"], got["version"]) == ("Standup is at 9:30", 1)


@pytest.mark.parametrize("on_conflict", [None, "error", "replace", "ignore"])
def test_named_slot_same_content_resent_is_skipped(client, tenant, on_conflict):
    """Given a named memory
    When the same name is re-sent with the same content (modulo case/punctuation) under any
         on_conflict (default error included)
    Then the result is `skipped` and the memory is untouched (no 409, no version bump)."""
    h = tenant.headers
    mid = new_id(client, h, "Standup is at 9:30", name="standup")
    [res] = create_ok(client, h, item("standup is at 9:30.", name="standup"),
                      on_conflict=on_conflict)
    assert (res["status"], res["id"]) == ("skipped", mid)
    assert get(client, h, mid).json()["version"] == 1


def test_named_slot_error_rejects_whole_batch(client, tenant):
    """Given a named memory
    When a batch [new item, same name with different content] is sent with on_conflict=error
    Then 409 names memories[1].name and nothing from the batch is written (the new item at
         index 0 is absent, the named memory unchanged); the same batch without the clash
         succeeds (control)."""
    h = tenant.headers
    mid = new_id(client, h, "Standup is at 9:30", name="standup")
    r = create(client, h, item("Lunch is at noon"), item("Standup is at 10:00", name="standup"),
               on_conflict="error")
    assert_error(r, 409, "conflict", "memories[1].name")
    assert contents(list_all(client, h, path=ALICE)) == ["Standup is at 9:30"]
    assert get(client, h, mid).json()["version"] == 1

    res = create_ok(client, h, item("Lunch is at noon"), on_conflict="error")
    assert res[0]["status"] == "inserted"
    assert sorted(contents(list_all(client, h, path=ALICE))) == [
        "Lunch is at noon", "Standup is at 9:30"]


def test_batch_with_forbidden_path_is_rejected_whole(client, tenant, restricted):
    """Given a key that may write users.alice only
    When it sends a batch [users.alice item, users.bob item]
    Then 403 names memories[1].path and nothing is written; the users.alice item alone is
         accepted (control: the refusal is about index 1, not the key)."""
    r = create(client, restricted, item("Alice likes jazz"), item("Bob likes metal", "users.bob"))
    assert_error(r, 403, "forbidden", "memories[1].path")
    assert list_all(client, tenant.headers, status="all") == []

    [res] = create_ok(client, restricted, item("Alice likes jazz"))
    assert res["status"] == "inserted"
    assert contents(list_all(client, tenant.headers, status="all")) == ["Alice likes jazz"]


@pytest.mark.parametrize(
    ("bad", "field"),
    [
        (item(""), "memories[2].content"),
        (item("   \n\t "), "memories[2].content"),
        (item("?!..."), "memories[2].content"),
        (item("fine", path="users..alice"), "memories[2].path"),
        (item("fine", kind="opinion"), "memories[2].kind"),
        (item("fine", importance=2), "memories[2].importance"),
    ],
    ids=["empty", "whitespace", "punctuation-only", "bad-path", "bad-kind", "importance"],
)
def test_batch_with_invalid_item_is_rejected_whole(client, tenant, bad, field):
    """Given an empty store
    When a batch of two valid items and one invalid item (index 2) is sent
    Then 422 names the invalid item's field and nothing is written; the two valid items alone
         are accepted (control)."""
    h = tenant.headers
    good = [item("Alice likes jazz"), item("Alice lives in Lyon")]
    r = create(client, h, *good, bad)
    assert_error(r, 422, "invalid_input", field)
    assert list_all(client, h, status="all") == []

    assert [x["status"] for x in create_ok(client, h, *good)] == ["inserted", "inserted"]
    assert len(list_all(client, h)) == 2


# --------------------------------------------------------------------------------------
# PATCH: compare-and-set on version
# --------------------------------------------------------------------------------------


def test_patch_with_expected_version_and_mismatch(client, tenant):
    """Given a memory at version 1
    When it is patched with expected_version 1, then again with the stale 1
    Then the first answers 200 with version 2; the second 412 with current_version 2 and the
         content stays the first patch's."""
    h = tenant.headers
    mid = new_id(client, h, "Alice works remotely")
    r = patch(client, h, mid, {"expected_version": 1, "content": "Alice works from Lyon"})
    assert r.status_code == 200, r.text
    assert (r.json()["version"], r.json()["content"]) == (2, "Alice works from Lyon")

    r = patch(client, h, mid, {"expected_version": 1, "content": "Alice works from Oslo"})
    err = assert_error(r, 412, "version_conflict")
    assert err["current_version"] == 2
    got = get(client, h, mid).json()
    assert (got["version"], got["content"]) == (2, "Alice works from Lyon")


def test_patch_if_match_forms(client, tenant):
    """Given a memory at version 1
    When it is patched with If-Match 1, then "2", then W/"3", then a stale W/"1"
    Then the three current ones succeed (versions 2, 3, 4) and the stale one gets 412 with
         current_version 4 and changes nothing."""
    h = tenant.headers
    mid = new_id(client, h, "Alice works remotely")
    for n, tag in enumerate(["1", '"2"', 'W/"3"'], start=1):
        r = patch(client, h, mid, {"importance": n / 10}, if_match=tag)
        assert r.status_code == 200, (tag, r.text)
        assert r.json()["version"] == n + 1
    r = patch(client, h, mid, {"importance": 0.9}, if_match='W/"1"')
    assert assert_error(r, 412, "version_conflict")["current_version"] == 4
    got = get(client, h, mid).json()
    assert (got["version"], got["importance"]) == (4, pytest.approx(0.3))


def test_patch_without_version_is_422_and_changes_nothing(client, tenant):
    """Given a memory at version 1
    When it is patched with neither expected_version nor If-Match
    Then 422 names expected_version and the memory is unchanged; the same body with
         expected_version succeeds (control)."""
    h = tenant.headers
    mid = new_id(client, h, "Alice works remotely")
    r = patch(client, h, mid, {"content": "Alice works from Lyon"})
    assert_error(r, 422, "invalid_input", "expected_version")
    got = get(client, h, mid).json()
    assert (got["version"], got["content"]) == (1, "Alice works remotely")
    r = patch(client, h, mid, {"content": "Alice works from Lyon", "expected_version": 1})
    assert r.status_code == 200, r.text


def test_cas_race_sequential_loser_leaves_no_trace(client, tenant, db):
    """Given a memory both writers read at version 1
    When writer A patches with version 1, then writer B patches with version 1
    Then A gets 200 and B 412; A's content is stored, and B's intended value appears nowhere
         (GET, list, history, any memories/memory_history row) while A's is found (control)."""
    h = tenant.headers
    mid = new_id(client, h, "The release is on Monday")
    v_a = get(client, h, mid).json()["version"]
    v_b = get(client, h, mid).json()["version"]
    assert v_a == v_b == 1

    ra = patch(client, h, mid, {"expected_version": v_a, "content": "The release is on Zeta-day"})
    rb = patch(client, h, mid, {"expected_version": v_b, "content": "The release is on Omega-day"})
    assert ra.status_code == 200, ra.text
    assert assert_error(rb, 412, "version_conflict")["current_version"] == 2

    assert get(client, h, mid).json()["content"] == "The release is on Zeta-day"
    hist = client.get(f"/v1/memories/{mid}/history", headers=h).json()["items"]
    assert [e["snapshot"]["content"] for e in hist] == ["The release is on Monday"]
    assert "omega" not in str(list_all(client, h, status="all")).lower()
    for table in ("memories", "memory_history"):
        assert sql_rows_containing(db, table, "Omega-day") == 0, table
    assert sql_rows_containing(db, "memories", "Zeta-day") == 1


def _race(n: int, attempt) -> list[Any]:
    """Run ``attempt(i)`` on ``n`` threads released together; return what each produced."""
    barrier = threading.Barrier(n)
    out: list[Any] = [None] * n

    def run(i: int) -> None:
        barrier.wait()
        try:
            out[i] = attempt(i)
        except Exception as exc:  # noqa: BLE001 - the outcome is what the test inspects
            out[i] = exc

    threads = [threading.Thread(target=run, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    return out


def test_cas_race_concurrent_core(client, tenant, db, caller_for, embedder):
    """Given a memory at version 1, several times over
    When two threads call update_memory with expected_version 1 at the same moment
    Then exactly one returns version 2, the other raises VersionConflict (current 2), and the
         stored content is the winner's, the loser's value nowhere in memories or history."""
    caller = caller_for(tenant.key)
    for round_ in range(6):
        mid = uuid.UUID(new_id(client, tenant.headers, f"Round {round_} starts"))
        values = [f"Round {round_} value writer-{w}" for w in ("alpha", "beta")]
        out = _race(2, lambda i: update_memory(
            db, caller, mid, MemoryPatch(expected_version=1, content=values[i]), embedder))
        wins = [i for i, o in enumerate(out) if not isinstance(o, Exception)]
        losses = [i for i, o in enumerate(out) if isinstance(o, VersionConflict)]
        assert len(wins) == 1 and len(losses) == 1, out
        (w,), (lo,) = wins, losses
        assert out[w].version == 2 and out[w].content == values[w]
        assert out[lo].actual == 2
        got = get(client, tenant.headers, str(mid)).json()
        assert (got["content"], got["version"]) == (values[w], 2)
        assert sql_rows_containing(db, "memories", values[lo]) == 0
        assert sql_rows_containing(db, "memory_history", values[lo]) == 0
        assert sql_rows_containing(db, "memories", values[w]) == 1


def test_cas_race_concurrent_http(client, app, tenant, db):
    """Given a memory at version 1, several times over
    When two HTTP clients PATCH it with If-Match 1 at the same moment
    Then one gets 200 and the other 412, and only the winner's content is stored."""
    with TestClient(app, raise_server_exceptions=False) as other:
        clients = [client, other]
        for round_ in range(4):
            mid = new_id(client, tenant.headers, f"Race {round_} begins")
            values = [f"Race {round_} by client-{w}" for w in ("red", "blue")]
            out = _race(2, lambda i: patch(clients[i], tenant.headers, mid,
                                           {"content": values[i]}, if_match="1"))
            codes = sorted(r.status_code for r in out)
            assert codes == [200, 412], [r.text for r in out]
            w = next(i for i, r in enumerate(out) if r.status_code == 200)
            assert get(client, tenant.headers, mid).json()["content"] == values[w]
            assert sql_rows_containing(db, "memories", values[1 - w]) == 0
            assert sql_rows_containing(db, "memory_history", values[1 - w]) == 0


# --------------------------------------------------------------------------------------
# History, delete, restore
# --------------------------------------------------------------------------------------


def test_every_change_leaves_history_with_cause_and_actor(client, tenant):
    """Given a memory created, reinforced, then patched twice
    When its history is read
    Then each change left one row, oldest first, holding the prior content and version, the
         cause of the change and the acting principal."""
    h = tenant.headers
    mid = new_id(client, h, "Alice likes tea")
    create_ok(client, h, item("alice likes TEA!"))
    assert patch(client, h, mid, {"content": "Alice likes coffee"}, if_match="2").status_code == 200
    assert patch(client, h, mid, {"content": "Alice likes water"}, if_match="3").status_code == 200

    r = client.get(f"/v1/memories/{mid}/history", headers=h)
    assert r.status_code == 200, r.text
    hist = r.json()["items"]
    assert [(e["version"], e["operation"], e["cause"], e["snapshot"]["content"]) for e in hist] == [
        (1, "update", "memory.create", "Alice likes tea"),
        (2, "update", "memory.update", "Alice likes tea"),
        (3, "update", "memory.update", "Alice likes coffee"),
    ]
    assert {e["actor"] for e in hist} == {f"principal:{tenant.principal_id}"}
    assert get(client, h, mid).json()["content"] == "Alice likes water"


def test_delete_then_restore_brings_back_same_id_and_content(client, tenant):
    """Given a memory at version 2
    When it is deleted
    Then GET answers 404, list omits it, and history records the delete with its content;
    When it is restored
    Then it is back with the same id and content and a higher version."""
    h = tenant.headers
    mid = new_id(client, h, "Alice's badge number is 77")
    keep = new_id(client, h, "Alice sits near the window")
    assert patch(client, h, mid, {"importance": 0.9}, if_match="1").status_code == 200

    r = client.delete(f"/v1/memories/{mid}", headers=h)
    assert r.status_code == 200, r.text
    assert_error(get(client, h, mid), 404, "not_found")
    assert [m["id"] for m in list_all(client, h, status="all")] == [keep]
    hist = client.get(f"/v1/memories/{mid}/history", headers=h).json()["items"]
    assert [(e["operation"], e["cause"]) for e in hist] == [
        ("update", "memory.update"), ("delete", "memory.delete")]
    assert hist[-1]["snapshot"]["content"] == "Alice's badge number is 77"

    r = client.post(f"/v1/memories/{mid}/restore", headers=h)
    assert r.status_code == 200, r.text
    back = get(client, h, mid).json()
    assert back["id"] == mid
    assert back["content"] == "Alice's badge number is 77"
    assert back["importance"] == pytest.approx(0.9)
    assert back["version"] > 2
    assert sorted(m["id"] for m in list_all(client, h)) == sorted([mid, keep])


def test_restore_version_on_live_memory_rolls_back(client, tenant):
    """Given a live memory patched A -> B -> C (version 3)
    When it is restored with {"version": 1}
    Then its content is A again, the version is bumped to 4, and C is kept in history."""
    h = tenant.headers
    mid = new_id(client, h, "Plan A")
    assert patch(client, h, mid, {"content": "Plan B"}, if_match="1").status_code == 200
    assert patch(client, h, mid, {"content": "Plan C"}, if_match="2").status_code == 200

    r = client.post(f"/v1/memories/{mid}/restore", headers=h, json={"version": 1})
    assert r.status_code == 200, r.text
    assert (r.json()["content"], r.json()["version"]) == ("Plan A", 4)
    got = get(client, h, mid).json()
    assert (got["content"], got["version"]) == ("Plan A", 4)
    hist = client.get(f"/v1/memories/{mid}/history", headers=h).json()["items"]
    assert [e["snapshot"]["content"] for e in hist] == ["Plan A", "Plan B", "Plan C"]
    assert hist[-1]["cause"] == "memory.restore"


@pytest.mark.parametrize("body", [None, {}], ids=["no-body", "empty-body"])
def test_restore_live_memory_without_version_is_409(client, tenant, body):
    """Given a live memory
    When restore is called without a version
    Then 409 and the memory is unchanged; with a version it succeeds (control)."""
    h = tenant.headers
    mid = new_id(client, h, "Plan A")
    assert patch(client, h, mid, {"content": "Plan B"}, if_match="1").status_code == 200
    kw = {} if body is None else {"json": body}
    assert_error(client.post(f"/v1/memories/{mid}/restore", headers=h, **kw), 409, "conflict")
    got = get(client, h, mid).json()
    assert (got["content"], got["version"]) == ("Plan B", 2)
    r = client.post(f"/v1/memories/{mid}/restore", headers=h, json={"version": 1})
    assert r.status_code == 200 and r.json()["content"] == "Plan A", r.text


def test_restore_of_unknown_version_is_404(client, tenant):
    """Given a live memory at version 2
    When restore names version 7, which it never had
    Then 404 naming version, and nothing changes."""
    h = tenant.headers
    mid = new_id(client, h, "Plan A")
    assert patch(client, h, mid, {"content": "Plan B"}, if_match="1").status_code == 200
    r = client.post(f"/v1/memories/{mid}/restore", headers=h, json={"version": 7})
    assert_error(r, 404, "not_found", "version")
    assert get(client, h, mid).json()["version"] == 2


def test_restore_never_reuses_a_version_number(client, tenant):
    """Given a memory patched A -> B -> C (version 3) and then deleted
    When an old version is restored ({"version": 1})
    Then content A comes back with a version above every version it ever had, so a writer
         still holding version 2 (content B) cannot compare-and-set against it."""
    h = tenant.headers
    mid = new_id(client, h, "Plan A")
    assert patch(client, h, mid, {"content": "Plan B"}, if_match="1").status_code == 200
    assert patch(client, h, mid, {"content": "Plan C"}, if_match="2").status_code == 200
    assert client.delete(f"/v1/memories/{mid}", headers=h).status_code == 200

    r = client.post(f"/v1/memories/{mid}/restore", headers=h, json={"version": 1})
    assert r.status_code == 200, r.text
    assert r.json()["content"] == "Plan A"
    assert r.json()["version"] > 3
    stale = patch(client, h, mid, {"content": "Plan D"}, if_match="2")
    assert_error(stale, 412, "version_conflict")
    assert get(client, h, mid).json()["content"] == "Plan A"


# --------------------------------------------------------------------------------------
# Forget
# --------------------------------------------------------------------------------------

SECRET = "My locker is quokka-4417"
# Searched for in raw rows: letters outside [0-9a-f] cannot turn up inside a hash or a uuid.
NEEDLE = "quokka"


def _forget(client, h, mid: str) -> list[str]:
    r = client.post(f"/v1/memories/{mid}/forget", headers=h)
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["forgotten"] is True and body["tombstone_ids"], body
    return body["tombstone_ids"]


def test_forget_erases_content_from_row_and_history_and_leaves_tombstone(client, tenant, db):
    """Given a memory holding a secret, patched once so history holds the secret too
    When it is forgotten
    Then GET answers 404, no memories/history/tombstone/audit row holds the secret (it did
         before: control), history rows remain but erased, and a forgotten tombstone exists."""
    h = tenant.headers
    mid = new_id(client, h, SECRET, tags=["locker"], meta={"note": "quokka spare"})
    other = new_id(client, h, "Alice's locker is on floor 2")
    assert patch(client, h, mid, {"importance": 0.8}, if_match="1").status_code == 200
    assert sql_rows_containing(db, "memory_history", NEEDLE) == 1
    assert sql_rows_containing(db, "memories", NEEDLE) == 1

    [tomb] = _forget(client, h, mid)

    assert_error(get(client, h, mid), 404, "not_found")
    for table in ("memories", "memory_history", "tombstones", "audit_log", "ingest_receipts"):
        assert sql_rows_containing(db, table, NEEDLE) == 0, table
    hist = client.get(f"/v1/memories/{mid}/history", headers=h).json()["items"]
    assert len(hist) == 2 and all(e["erased"] for e in hist)
    assert all("content" not in e["snapshot"] for e in hist)
    with db.connection() as conn:
        row = conn.execute("SELECT reason::text AS reason, memory_id, path::text AS path"
                           " FROM tombstones WHERE id = %s", (tomb,)).fetchone()
    assert row == {"reason": "forgotten", "memory_id": uuid.UUID(mid), "path": ALICE}
    # The neighbour is untouched.
    assert get(client, h, other).json()["content"] == "Alice's locker is on floor 2"


@pytest.mark.parametrize(
    ("content", "path"),
    [
        (SECRET, ALICE),
        ("  my LOCKER is QUOKKA-4417!!", ALICE),
        ("My locker is quokka-4417.", "users.alice.work"),
    ],
    ids=["verbatim", "case-punctuation-variant", "sub-path"],
)
def test_forgotten_value_is_blocked_on_create(client, tenant, content, path):
    """Given a forgotten memory in users.alice
    When a batch re-creates its value (verbatim, as a variant, or in a sub-path) next to a
         fresh item
    Then the value answers `blocked` with the tombstone id and no id, while the fresh item is
         inserted; the same value in a sibling path (outside the scope) is inserted."""
    h = tenant.headers
    mid = new_id(client, h, SECRET)
    [tomb] = _forget(client, h, mid)

    res = create_ok(client, h, item(content, path), item("Alice parks on level 3"))
    assert res[0]["status"] == "blocked", res
    assert res[0]["id"] is None
    assert res[0]["tombstone_id"] == tomb
    assert "forgotten" in res[0]["reason"]
    assert res[1]["status"] == "inserted"
    stored = contents(list_all(client, h, status="all"))
    assert stored == ["Alice parks on level 3"]

    [ctl] = create_ok(client, h, item(content, "users.bob"))
    assert ctl["status"] == "inserted"


def test_forget_tombstones_every_value_the_memory_held(client, tenant):
    """Given a memory patched from value A to value B
    When it is forgotten
    Then both A and B are blocked on re-create in its path."""
    h = tenant.headers
    mid = new_id(client, h, "Alice's desk is 1234")
    assert patch(client, h, mid, {"content": "Alice's desk is 9876"}, if_match="1").status_code == 200
    tombs = _forget(client, h, mid)
    assert len(tombs) == 2
    res = create_ok(client, h, item("alice's desk is 1234"), item("Alice's desk is 9876!"),
                    item("Alice's PIN changes yearly"))
    assert [r["status"] for r in res] == ["blocked", "blocked", "inserted"]
    assert {r["tombstone_id"] for r in res[:2]} <= set(tombs)


def test_restore_after_forget_is_410(client, tenant):
    """Given a forgotten memory (and, as control, a merely deleted one)
    When restore is called on each
    Then the forgotten one answers 410 gone and stays absent; the deleted one comes back."""
    h = tenant.headers
    mid = new_id(client, h, SECRET)
    deleted = new_id(client, h, "Alice's desk is 4B")
    _forget(client, h, mid)
    assert client.delete(f"/v1/memories/{deleted}", headers=h).status_code == 200

    assert_error(client.post(f"/v1/memories/{mid}/restore", headers=h), 410, "gone")
    r = client.post(f"/v1/memories/{mid}/restore", headers=h, json={"version": 1})
    assert_error(r, 410, "gone")
    assert_error(get(client, h, mid), 404, "not_found")
    assert client.post(f"/v1/memories/{deleted}/restore", headers=h).status_code == 200


def test_patch_to_forgotten_value_is_409_suppressed(client, tenant):
    """Given a forgotten value in users.alice and another live memory there
    When the live memory is patched to a variant of the forgotten value
    Then 409 suppressed (with the tombstone id) and the memory is unchanged; a patch to a
         fresh value succeeds (control)."""
    h = tenant.headers
    [tomb] = _forget(client, h, new_id(client, h, SECRET))
    mid = new_id(client, h, "Alice's locker is on floor 2")
    r = patch(client, h, mid, {"content": "MY LOCKER IS QUOKKA-4417!"}, if_match="1")
    err = assert_error(r, 409, "suppressed", "content")
    assert err["tombstone_id"] == tomb
    got = get(client, h, mid).json()
    assert (got["content"], got["version"]) == ("Alice's locker is on floor 2", 1)
    assert patch(client, h, mid, {"content": "Alice's locker is on floor 3"},
                 if_match="1").status_code == 200


def test_patch_moving_a_value_into_a_forgotten_scope_is_suppressed(client, tenant):
    """Given a value forgotten in users.alice and the same value living in users.bob
    When the users.bob memory is patched to move into users.alice (content unchanged)
    Then 409 suppressed and it stays in users.bob; moving an unrelated memory succeeds."""
    h = tenant.headers
    _forget(client, h, new_id(client, h, SECRET))
    mid = new_id(client, h, SECRET, path="users.bob")
    r = patch(client, h, mid, {"path": ALICE}, if_match="1")
    assert_error(r, 409, "suppressed", "path")
    assert get(client, h, mid).json()["path"] == "users.bob"
    ctl = new_id(client, h, "Bob's locker is on floor 1", path="users.bob")
    assert patch(client, h, ctl, {"path": ALICE}, if_match="1").status_code == 200


# --------------------------------------------------------------------------------------
# List
# --------------------------------------------------------------------------------------


def test_list_filters_path_subtree_kind_status_tags(client, tenant, db):
    """Given memories across paths, kinds, tags and one archived memory
    When listing with each filter
    Then each returns exactly the matching memories (path is a label subtree: users.alice
         covers users.alice.work but not users.alicex); status defaults to active."""
    h = tenant.headers
    res = create_ok(
        client, h,
        item("a1 fact", kind="fact", tags=["x", "y"]),
        item("a2 pref", kind="preference", tags=["x"]),
        item("a3 work", "users.alice.work", kind="event", tags=["y"]),
        item("x1 other", "users.alicex", kind="fact", tags=["x", "y"]),
        item("b1 bob", "users.bob", kind="preference"),
        item("a4 archived", kind="fact", tags=["x"]),
    )
    with db.transaction() as cur:
        cur.execute("UPDATE memories SET status = 'archived' WHERE id = %s", (res[5]["id"],))

    def names(**params: Any) -> list[str]:
        return sorted(c.split()[0] for c in contents(list_all(client, h, **params)))

    assert names() == ["a1", "a2", "a3", "b1", "x1"]
    assert names(path=ALICE) == ["a1", "a2", "a3"]
    assert names(path="users") == ["a1", "a2", "a3", "b1", "x1"]
    assert names(kind="preference") == ["a2", "b1"]
    assert names(kind="fact,event") == ["a1", "a3", "x1"]
    assert names(kind=["fact", "event"], path=ALICE) == ["a1", "a3"]
    assert names(status="archived") == ["a4"]
    assert names(status="active,archived", path=ALICE) == ["a1", "a2", "a3", "a4"]
    assert names(status="all", path=ALICE) == ["a1", "a2", "a3", "a4"]
    assert names(tags="x") == ["a1", "a2", "x1"]
    assert names(tags="x,y") == ["a1", "x1"]
    assert names(tags=["x", "y"], path=ALICE) == ["a1"]
    assert names(tags="nope") == []


def test_list_valid_at(client, tenant):
    """Given a memory true from 2020 to 2021, one true since 2022, and one recorded now
    When listing with valid_at in 2020, 2023 and far in the future
    Then each instant returns exactly the memories whose valid range contains it."""
    h = tenant.headers
    old = new_id(client, h, "Alice lived in Paris", valid_from="2020-01-01T00:00:00Z")
    assert patch(client, h, old, {"valid_to": "2021-06-01T00:00:00Z"},
                 if_match="1").status_code == 200
    mid = new_id(client, h, "Alice lives in Lyon", valid_from="2022-01-01T00:00:00Z")
    now = new_id(client, h, "Alice learns Danish")

    def ids(at: str) -> set[str]:
        return {m["id"] for m in list_all(client, h, valid_at=at)}

    assert ids("2020-06-01T00:00:00Z") == {old}
    assert ids("2021-06-01T00:00:00Z") == set()  # upper bound is exclusive
    assert ids("2023-01-01T00:00:00Z") == {mid}
    assert ids("2999-01-01T00:00:00Z") == {mid, now}


def test_list_cursor_pagination_each_item_once_in_stable_order(client, tenant, db):
    """Given 25 memories created in one transaction (so they share created_at) plus 3 later
    When listing with limit 7 and following next_cursor
    Then pages hold 7,7,7,7, each memory appears exactly once, in (created_at, id) order
         (the id tie-break orders the 25 with equal created_at), and the last page has no
         next_cursor."""
    h = tenant.headers
    batch = create_ok(client, h, *[item(f"Note number {i:02d}") for i in range(25)])
    later = [new_id(client, h, f"Later note {i}") for i in range(3)]
    with db.connection() as conn:
        stamps = conn.execute("SELECT count(DISTINCT created_at) AS n FROM memories"
                              " WHERE id = ANY(%s)", ([r["id"] for r in batch],)).fetchone()
    assert stamps["n"] == 1  # the tie-break on id is what orders these

    pages: list[list[str]] = []
    cursor = None
    while True:
        params: dict[str, Any] = {"limit": 7}
        if cursor:
            params["cursor"] = cursor
        r = client.get("/v1/memories", headers=h, params=params)
        assert r.status_code == 200, r.text
        pages.append([m["id"] for m in r.json()["items"]])
        cursor = r.json()["next_cursor"]
        if cursor is None:
            break
        assert len(pages) < 10
    assert [len(p) for p in pages] == [7, 7, 7, 7]
    seen = [i for p in pages for i in p]
    assert len(seen) == len(set(seen)) == 28
    with db.connection() as conn:
        expected = [str(r["id"]) for r in conn.execute(
            "SELECT id FROM memories ORDER BY created_at, id").fetchall()]
    assert seen == expected
    assert set(seen) == {r["id"] for r in batch} | set(later)
    # Stable: reading again gives the same order.
    assert [m["id"] for m in list_all(client, h, limit=7)] == seen


def test_forget_a_deleted_memory_erases_its_history(client, tenant, db):
    """Given a memory holding a secret that was deleted (its content now lives in history only)
    When it is forgotten
    Then history holds the secret no more (it did before: control), its value is tombstoned,
    and a second forget answers the same tombstones (erasure requests can be retried)."""
    h = tenant.headers
    mid = new_id(client, h, SECRET)
    assert client.delete(f"/v1/memories/{mid}", headers=h).status_code == 200
    assert_error(get(client, h, mid), 404, "not_found")
    assert sql_rows_containing(db, "memory_history", NEEDLE) == 1

    tombs = _forget(client, h, mid)

    assert sql_rows_containing(db, "memory_history", NEEDLE) == 0
    assert _forget(client, h, mid) == tombs
    [blocked] = create_ok(client, h, item(SECRET))
    assert blocked["status"] == "blocked" and blocked["tombstone_id"] in tombs
    assert_error(client.post(f"/v1/memories/{mid}/restore", headers=h), 410, "gone")


def test_forget_of_unknown_memory_is_404(client, tenant):
    """Given an id that never existed (control: a real memory can be forgotten)
    When it is forgotten
    Then 404."""
    h = tenant.headers
    assert_error(client.post(f"/v1/memories/{uuid.uuid4()}/forget", headers=h), 404, "not_found")
    assert _forget(client, h, new_id(client, h, "Alice owns a red kayak"))


def _edge(db, tenant, source: str, target: str, reason: str) -> None:
    with db.connection() as conn:
        conn.execute(
            "INSERT INTO memory_relationships (tenant_id, source_id, target_id, type, reason,"
            " decided_by) VALUES (%s, %s, %s, 'SUPERSEDES', %s, 'rule')",
            (tenant.tenant_id, source, target, reason),
        )


def test_delete_keeps_the_edge_and_restore_brings_it_back(client, tenant, db):
    """Given memory B superseding memory A with a recorded reason
    When A is deleted, then restored
    Then B's related hides the edge while A is gone (A's edge to a live memory shows before:
    control), the edge's reason survives, and after restore the edge is shown again."""
    h = tenant.headers
    a = new_id(client, h, "Alice uses MySQL")
    b = new_id(client, h, "Alice switched to PostgreSQL")
    _edge(db, tenant, b, a, "slot user.database changed")

    def related_ids():
        r = client.get(f"/v1/memories/{b}/related", headers=h)
        assert r.status_code == 200
        return [(e["other_id"], e["reason"]) for e in r.json()["items"]]

    assert related_ids() == [(a, "slot user.database changed")]
    assert client.delete(f"/v1/memories/{a}", headers=h).status_code == 200
    assert related_ids() == []
    assert client.post(f"/v1/memories/{a}/restore", headers=h).status_code == 200
    assert related_ids() == [(a, "slot user.database changed")]


def test_forget_clears_edge_reasons_but_keeps_the_edge(client, tenant, db):
    """Given an edge whose reason quotes the content of the memory about to be forgotten
    When that memory is forgotten
    Then the edge row remains with its type but no reason (control: reason present before)."""
    h = tenant.headers
    a = new_id(client, h, SECRET)
    b = new_id(client, h, "Alice changed her locker")
    _edge(db, tenant, b, a, f"replaces '{SECRET}'")
    assert sql_rows_containing(db, "memory_relationships", NEEDLE) == 1
    _forget(client, h, a)
    assert sql_rows_containing(db, "memory_relationships", NEEDLE) == 0
    with db.connection() as conn:
        edge = conn.execute(
            "SELECT type::text AS type, reason FROM memory_relationships WHERE target_id = %s", (a,)
        ).fetchone()
    assert edge == {"type": "SUPERSEDES", "reason": None}


def test_direct_create_goes_through_the_gate_slot_supersedes_and_retired_value_is_blocked(
        client, tenant):
    """Given a direct write of slot user.preferred_database = mongodb
    When a second direct write gives the slot another value, and then the first value is
    written again
    Then the second supersedes the first (one active value), and the first comes back as
    blocked by the tombstone (control: an unrelated slot value is inserted)."""
    h = tenant.headers
    slot = {"kind": "preference", "slot": "user.preferred_database"}
    [a] = create_ok(client, h, item("Alice prefers MongoDB", value="MongoDB", **slot))
    [b] = create_ok(client, h, item("Alice prefers PostgreSQL", value="postgres", **slot))
    assert (a["status"], b["status"]) == ("inserted", "superseded_existing"), (a, b)
    assert get(client, h, a["id"]).json()["status"] == "superseded"
    [again, other] = create_ok(
        client, h, item("Alice prefers MongoDB", value="mongo", **slot),
        item("Alice prefers vim", kind="preference", slot="user.preferred_editor", value="vim"))
    assert again["status"] == "blocked" and again["tombstone_id"], again
    assert other["status"] == "inserted"
    active = [m for m in list_all(client, h) if m["slot"] == "user.preferred_database"]
    assert [(m["id"], m["value"]) for m in active] == [(b["id"], "postgresql")]


def test_embedding_provider_down_is_503_and_writes_nothing(db, settings, tenant):
    """Given an embedding provider that fails (the provider is the fake, not strata)
    When a batch is created
    Then 503 provider_unavailable with a reason code, and nothing is written (control: the
    same batch with a working embedder is inserted)."""
    from strata.api.app import create_app
    from strata.providers import HashingEmbedder
    from strata.providers.embedders import EmbeddingFailed

    class Down:
        model, dim = "down", 384

        def embed(self, texts):
            raise EmbeddingFailed("provider answered 503", reason="http_error")

    body = {"memories": [item("Alice's locker is on floor 3")]}
    with TestClient(create_app(db=db, embedder=Down(), settings=settings)) as down:
        r = down.post("/v1/memories", headers=tenant.headers, json=body)
    assert_error(r, 503, "provider_unavailable")
    assert "http_error" in r.json()["error"]["message"]
    with TestClient(create_app(db=db, embedder=HashingEmbedder(384), settings=settings)) as up:
        assert up.get("/v1/memories", headers=tenant.headers).json()["items"] == []
        assert create_ok(up, tenant.headers, *body["memories"])[0]["status"] == "inserted"
