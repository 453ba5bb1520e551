"""Issue 14: every change to a memory passes through one write path.

Each test reproduces a way a write slipped past the truth-maintenance rules (a named
replace, a review promote, a PATCH, a forget/restore across a move, concurrent or batched
writes, the age guard) and states the behaviour that holds once every entry point goes
through the write path: tombstones block on every entry point, a slot has one active
holder, authorisation follows the memory where it lives now, and "newer" means said later.

Every exclusion sits next to its control: the allowed write in the same setup still lands.
Assertions read both the HTTP answers and the rows (``memories``, ``tombstones``). Real app,
real PostgreSQL, nothing of ours mocked; concurrency goes through uvicorn on loopback.
"""

from __future__ import annotations

import json
import threading
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, example, given, settings, strategies as st

from support import assert_error, bearer, create_ok

ALICE = "users.alice"
BOB = "users.bob"


# --------------------------------------------------------------------------------------
# Helpers
# --------------------------------------------------------------------------------------


def new_id(client, headers, content: str, path: str = ALICE, **extra: Any) -> str:
    [res] = create_ok(client, headers, {"content": content, "path": path, **extra})
    assert res["status"] == "inserted", res
    return res["id"]


def get(client, headers, mid: str):
    return client.get(f"/v1/memories/{mid}", headers=headers)


def get_ok(client, headers, mid: str) -> dict:
    r = get(client, headers, mid)
    assert r.status_code == 200, r.text
    return r.json()


def patch(client, headers, mid: str, body: dict):
    return client.patch(f"/v1/memories/{mid}", headers=headers, json=body)


def forget_ok(client, headers, mid: str) -> list[str]:
    r = client.post(f"/v1/memories/{mid}/forget", headers=headers)
    assert r.status_code == 200, r.text
    assert r.json()["forgotten"] is True and r.json()["tombstone_ids"], r.text
    return r.json()["tombstone_ids"]


def say(client, headers, text: str, *, at: datetime, path: str) -> dict:
    """Ingest one user message said at ``at`` and return the finished receipt."""
    r = client.post("/v1/ingest", headers=headers, json={
        "path": path, "wait": True,
        "messages": [{"role": "user", "content": text, "at": at.isoformat()}]})
    assert r.status_code == 200, r.text
    return r.json()


def outcomes(receipt: dict) -> list[str]:
    return [i["outcome"] for i in receipt["items"]]


def rows(db, sql: str, *params: Any) -> list[dict]:
    with db.connection() as conn:
        return conn.execute(sql, params).fetchall()


def memory_rows(db, tenant_id, path: str) -> list[dict]:
    """Every memory row in exactly ``path``, oldest first."""
    return rows(db, "SELECT id::text AS id, path::text AS path, content, canonical, slot, value,"
                    " status::text AS status, valid, reinforcements, version FROM memories"
                    " WHERE tenant_id = %s AND path = %s::ltree ORDER BY created_at, id",
                tenant_id, path)


def holding_text(db, tenant_id, text: str, statuses=("active", "candidate")) -> list[dict]:
    """Rows in those statuses whose content is ``text`` up to case."""
    return rows(db, "SELECT id::text AS id, path::text AS path, status::text AS status"
                    " FROM memories WHERE tenant_id = %s AND lower(content) = lower(%s)"
                    " AND status::text = ANY(%s)",
                tenant_id, text, list(statuses))


# A memory holds a value a forgotten tombstone retires when it lives in the tombstone's scope
# and has its value_hash, or its slot and (normalised) slot value: the slot value hash is the
# sha256 of the stored value, which is kept in normal form.
_FORGOTTEN_HELD = """
SELECT DISTINCT m.id::text AS id, m.path::text AS path, m.slot, m.value,
       m.status::text AS status, m.version
FROM memories m JOIN tombstones t
  ON t.tenant_id = m.tenant_id AND t.reason = 'forgotten' AND m.path <@ t.path
 AND (t.value_hash = m.value_hash
      OR (m.slot IS NOT NULL AND t.slot = m.slot AND m.value IS NOT NULL
          AND t.slot_value_hash = sha256(convert_to(m.value, 'UTF8'))))
WHERE m.tenant_id = %s AND m.status IN ('active', 'candidate')
ORDER BY 1
"""


def forgotten_held(db, tenant_id) -> list[dict]:
    """Active or candidate memories holding a value some forgotten tombstone retires in their
    scope (by value_hash, or by slot + slot value)."""
    return rows(db, _FORGOTTEN_HELD, tenant_id)


# --------------------------------------------------------------------------------------
# 1. Named replace goes through the gate
# --------------------------------------------------------------------------------------


def test_named_replace_cannot_write_a_forgotten_value(client, tenant, db):
    """Given a named memory "shed" ("The shed is number 1234") in users.alice, and the value
         "The shed is number 4417" created there and forgotten
    When "shed" is re-sent with the forgotten content under on_conflict=replace
    Then that item is `blocked` with a reason naming the forgotten tombstone, the named memory
         keeps its old content and version, and no active row holds the forgotten value;
         a named replace with a fresh code is `updated` and GET shows it (control)."""
    h = tenant.headers
    shed = new_id(client, h, "The shed is number 1234", name="shed")
    other = new_id(client, h, "The shed is number 4417")
    forget_ok(client, h, other)

    [res] = create_ok(client, h, {"name": "shed", "content": "The shed is number 4417",
                                  "path": ALICE}, on_conflict="replace")
    assert res["status"] == "blocked", res
    assert "forgotten" in (res.get("reason") or ""), res
    got = get_ok(client, h, shed)
    assert (got["content"], got["version"]) == ("The shed is number 1234", 1)
    assert holding_text(db, tenant.tenant_id, "The shed is number 4417",
                        statuses=("active", "candidate", "superseded")) == []
    assert forgotten_held(db, tenant.tenant_id) == []
    [row] = [r for r in memory_rows(db, tenant.tenant_id, ALICE) if r["id"] == shed]
    assert (row["content"], row["status"]) == ("The shed is number 1234", "active")

    # Control: a fresh value replaces in place.
    [ok] = create_ok(client, h, {"name": "shed", "content": "The shed is number 9051",
                                 "path": ALICE}, on_conflict="replace")
    assert (ok["status"], ok["id"]) == ("updated", shed), ok
    assert get_ok(client, h, shed)["content"] == "The shed is number 9051"


# --------------------------------------------------------------------------------------
# 2. Review promote goes through the gate
# --------------------------------------------------------------------------------------

T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)


def _change_back_candidate(client, h, path: str) -> tuple[str, str, str]:
    """MongoDB, superseded by PostgreSQL, then "gone back to MongoDB" held for review:
    (superseded MongoDB id, active PostgreSQL id, candidate id)."""
    first = say(client, h, "I prefer MongoDB", at=T0, path=path)
    assert outcomes(first) == ["created"], first
    mongo = first["items"][0]["memory_id"]
    second = say(client, h, "Actually I've switched to PostgreSQL", at=T0 + timedelta(weeks=3),
                 path=path)
    assert outcomes(second) == ["superseded_existing"], second
    pg = second["items"][0]["memory_id"]
    back = say(client, h, "I've gone back to MongoDB", at=T0 + timedelta(weeks=6), path=path)
    assert outcomes(back) == ["candidate"], back
    cid = back["items"][0]["memory_id"]
    review = client.get("/v1/review", headers=h, params={"path": path})
    assert review.status_code == 200, review.text
    assert [m["id"] for m in review.json()["items"]] == [cid]
    return mongo, pg, cid


def _active_slot(db, tenant_id, path: str, slot: str) -> list[tuple[str, str]]:
    return [(r["id"], r["value"]) for r in memory_rows(db, tenant_id, path)
            if r["slot"] == slot and r["status"] == "active"]


def test_review_promote_cannot_resurrect_a_forgotten_value(client, tenant, db):
    """Given a candidate "gone back to MongoDB" held for review
    When the superseded MongoDB memory is forgotten
    Then the candidate, which holds the forgotten value in its scope, is erased with it
         (``also_forgotten``), a fresh "I prefer MongoDB" is blocked as forgotten, promoting
         the candidate answers 404 like any unknown memory, PostgreSQL stays the one active
         database preference and no active or candidate memory holds MongoDB; the same
         scenario without the forget (another path) promotes with 200 and the candidate
         becomes the active holder (control)."""
    h = tenant.headers
    path = "users.alice"
    mongo, pg, cid = _change_back_candidate(client, h, path)
    r = client.post(f"/v1/memories/{mongo}/forget", headers=h)
    assert r.status_code == 200, r.text
    assert r.json()["also_forgotten"] == [cid], r.text
    again = say(client, h, "I prefer MongoDB", at=T0 + timedelta(weeks=7), path=path)
    assert outcomes(again) == ["blocked"], again
    assert "forgotten" in again["items"][0]["reason"], again

    r = client.post(f"/v1/review/{cid}/promote", headers=h)
    assert_error(r, 404, "not_found")
    assert _active_slot(db, tenant.tenant_id, path, "user.preferred_database") == [
        (pg, "postgresql")]
    held = [m for m in memory_rows(db, tenant.tenant_id, path)
            if m["status"] in ("active", "candidate")
            and (m["value"] == "mongodb" or "mongo" in m["canonical"])]
    assert held == []
    assert forgotten_held(db, tenant.tenant_id) == []

    # Control: no forget, the change back is promoted.
    ctl = "users.carol"
    _, ctl_pg, ctl_cid = _change_back_candidate(client, h, ctl)
    r = client.post(f"/v1/review/{ctl_cid}/promote", headers=h)
    assert r.status_code == 200 and r.json()["status"] == "active", r.text
    assert _active_slot(db, tenant.tenant_id, ctl, "user.preferred_database") == [
        (ctl_cid, "mongodb")]
    assert get_ok(client, h, ctl_pg)["status"] == "superseded"


# --------------------------------------------------------------------------------------
# 3. PATCH is a write like any other
# --------------------------------------------------------------------------------------

EDITOR = "user.preferred_editor"


def test_patch_content_rederives_the_slot_value_and_retires_the_old_one(client, tenant, db):
    """Given "Bob prefers Vim" (slot user.preferred_editor, value vim) in users.bob
    When its content is patched to "Bob prefers Emacs"
    Then the memory's value is emacs; and "Bob prefers Vim" written again (with value vim, and
         without a value) is `blocked` both times (vim was retired by the correction), never
         a reinforcement of the Emacs memory, whose reinforcements and version stay, and
         which stays the slot's one active holder; re-stating Emacs still reinforces it
         (control)."""
    h = tenant.headers
    vim = new_id(client, h, "Bob prefers Vim", BOB, slot=EDITOR, value="vim", kind="preference")
    r = patch(client, h, vim, {"content": "Bob prefers Emacs", "expected_version": 1})
    assert r.status_code == 200, r.text
    after_patch = get_ok(client, h, vim)

    # The corrected value comes back, named explicitly and left to be derived from the text.
    [named] = create_ok(client, h, {"content": "Bob prefers Vim", "slot": EDITOR, "value": "vim",
                                    "path": BOB})
    [derived] = create_ok(client, h, {"content": "Bob prefers Vim", "slot": EDITOR, "path": BOB})
    # Every half in one comparison, so a failure shows each.
    assert (after_patch["content"], after_patch["value"], named["status"], derived["status"]) == (
        "Bob prefers Emacs", "emacs", "blocked", "blocked"), (named, derived)
    assert vim not in (named["id"], derived["id"])
    now = get_ok(client, h, vim)
    assert (now["reinforcements"], now["version"]) == (
        after_patch["reinforcements"], after_patch["version"])
    assert _active_slot(db, tenant.tenant_id, BOB, EDITOR) == [(vim, "emacs")]
    assert holding_text(db, tenant.tenant_id, "Bob prefers Vim") == []
    vim_tombs = rows(db, "SELECT reason::text AS reason FROM tombstones WHERE tenant_id = %s"
                         " AND path = %s::ltree AND slot = %s"
                         " AND slot_value_hash = sha256(convert_to('vim', 'UTF8'))",
                     tenant.tenant_id, BOB, EDITOR)
    assert vim_tombs, "the PATCH left no tombstone for the retired value vim"

    # Control: the current value is still reinforced.
    [ctl] = create_ok(client, h, {"content": "Bob prefers Emacs", "slot": EDITOR, "value": "emacs",
                                  "path": BOB})
    assert (ctl["status"], ctl["id"]) == ("reinforced", vim), ctl
    assert get_ok(client, h, vim)["reinforcements"] == after_patch["reinforcements"] + 1


def test_patch_to_a_forgotten_slot_value_in_other_words_is_suppressed(client, tenant, db):
    """Given "I use Neovim" (slot user.preferred_editor, value neovim) forgotten in users.bob,
         and another memory of that slot there
    When that memory is patched to "My editor is nvim" with value neovim (another wording:
         only the slot + value key can catch it, not the exact hash)
    Then 409 suppressed with the tombstone id and the memory is unchanged; a patch to a fresh
         value succeeds (control)."""
    h = tenant.headers
    nvim = new_id(client, h, "I use Neovim", BOB, slot=EDITOR, value="neovim", kind="preference")
    tombs = forget_ok(client, h, nvim)
    other = new_id(client, h, "I use Helix", BOB, slot=EDITOR, value="helix", kind="preference")

    r = patch(client, h, other, {"content": "My editor is nvim", "value": "neovim",
                                 "expected_version": 1})
    err = assert_error(r, 409, "suppressed")
    assert err.get("tombstone_id") in tombs, err
    got = get_ok(client, h, other)
    assert (got["content"], got["value"], got["version"]) == ("I use Helix", "helix", 1)
    assert forgotten_held(db, tenant.tenant_id) == []

    # Control: a fresh value goes through.
    r = patch(client, h, other, {"content": "I use Zed", "value": "zed", "expected_version": 1})
    assert r.status_code == 200, r.text
    got = get_ok(client, h, other)
    assert (got["content"], got["value"]) == ("I use Zed", "zed")
    assert _active_slot(db, tenant.tenant_id, BOB, EDITOR) == [(other, "zed")]


def test_patch_setting_a_held_slot_leaves_one_active_holder(client, tenant, db):
    """Given "Carol prefers Python" holding slot user.preferred_language in users.carol and
         "Carol prefers Rust" without a slot there
    When the Rust memory is patched to take slot user.preferred_language
    Then exactly one active memory holds the slot (the patched one) and the Python memory is
         superseded; patching a third memory onto a slot nobody holds leaves it and the
         Rust memory both active (control)."""
    h = tenant.headers
    path, slot = "users.carol", "user.preferred_language"
    py = new_id(client, h, "Carol prefers Python", path, slot=slot, value="python",
                kind="preference")
    rust = new_id(client, h, "Carol prefers Rust", path, kind="preference")

    r = patch(client, h, rust, {"slot": slot, "expected_version": 1})
    assert r.status_code == 200, r.text
    holders = [m for m in memory_rows(db, tenant.tenant_id, path)
               if m["slot"] == slot and m["status"] == "active"]
    assert [m["id"] for m in holders] == [rust], holders
    assert get_ok(client, h, py)["status"] == "superseded"
    assert get_ok(client, h, rust)["status"] == "active"

    # Control: a slot nobody else holds supersedes nothing.
    tea = new_id(client, h, "Carol drinks green tea", path)
    r = patch(client, h, tea, {"slot": "user.favourite_drink", "expected_version": 1})
    assert r.status_code == 200, r.text
    assert {m["id"]: m["status"] for m in memory_rows(db, tenant.tenant_id, path)} == {
        py: "superseded", rust: "active", tea: "active"}


# --------------------------------------------------------------------------------------
# 4. Authorisation follows the memory where it lives now
# --------------------------------------------------------------------------------------


def _without_id(text: str, ident: str) -> Any:
    """A JSON body with the memory's id (should a message quote it) masked, for comparing
    the body one id gets with the body another gets."""
    return json.loads(text.replace(ident, "<id>")) if text else None


def test_forget_restore_history_related_follow_the_memory_across_a_move(client, tenant, db):
    """Given "Alice's locker is 12" created in users.alice by the owner and then moved by the
         owner to users.bob, and a key whose holder may write users.alice only
    When that key calls GET, DELETE, history, related, restore {"version": 1} and forget on it
    Then every call answers 404 with the very body a random id gets on the same route, and the
         memory still lives at users.bob unchanged; the owner's forget answers 200 and its
         tombstones sit at users.bob, where the memory was (control)."""
    h = tenant.headers
    mid = new_id(client, h, "Alice's locker is 12", ALICE)
    r = client.post("/v1/principals", headers=h, json={"name": "alice"})
    assert r.status_code == 201, r.text
    pid = r.json()["id"]
    r = client.post("/v1/grants", headers=h,
                    json={"principal_id": pid, "path": ALICE, "level": "write"})
    assert r.status_code == 201, r.text
    r = client.post("/v1/keys", headers=h, json={"principal_id": pid})
    assert r.status_code == 201, r.text
    alice = bearer(r.json()["key"])
    assert get(client, alice, mid).status_code == 200  # before the move she can read it

    r = patch(client, h, mid, {"path": BOB, "expected_version": 1})
    assert r.status_code == 200 and r.json()["path"] == BOB, r.text
    moved = get_ok(client, h, mid)

    calls = [  # destructive ones last: today forget erases the memory
        ("GET", "/v1/memories/{}", None),
        ("DELETE", "/v1/memories/{}", None),
        ("GET", "/v1/memories/{}/history", None),
        ("GET", "/v1/memories/{}/related", None),
        ("POST", "/v1/memories/{}/restore", {"version": 1}),
        ("POST", "/v1/memories/{}/forget", None),
    ]
    got, want = {}, {}
    for method, url, body in calls:
        kw = {"json": body} if body is not None else {}
        random_id = str(uuid.uuid4())
        probe = client.request(method, url.format(random_id), headers=alice, **kw)
        assert probe.status_code == 404, (url, probe.text)
        want[(method, url)] = (404, _without_id(probe.text, random_id))
        r = client.request(method, url.format(mid), headers=alice, **kw)
        got[(method, url)] = (r.status_code, _without_id(r.text, mid))
    assert got == want
    assert all(body["error"]["code"] == "not_found" for _, body in want.values()), want

    [row] = rows(db, "SELECT path::text AS path, content, version FROM memories WHERE id = %s",
                 mid)
    assert row == {"path": BOB, "content": "Alice's locker is 12", "version": moved["version"]}
    assert get_ok(client, h, mid)["path"] == BOB

    # Control: the owner forgets it where it lives now.
    tomb_ids = forget_ok(client, h, mid)
    tombs = rows(db, "SELECT id::text AS id, path::text AS path FROM tombstones"
                     " WHERE tenant_id = %s AND memory_id = %s", tenant.tenant_id, mid)
    assert sorted(t["id"] for t in tombs) == sorted(tomb_ids)
    assert {t["path"] for t in tombs} == {BOB}


# --------------------------------------------------------------------------------------
# 5. Concurrent and batched writes are serialised
# --------------------------------------------------------------------------------------


def _race(server: str, headers: dict, bodies: list[dict]) -> list[httpx.Response | Exception]:
    """POST /v1/memories with each body from its own thread and HTTP client, all released by
    one barrier; the responses in body order."""
    barrier = threading.Barrier(len(bodies), timeout=60)  # a thread that died cannot hang the rest
    out: list[Any] = [None] * len(bodies)

    def run(i: int) -> None:
        with httpx.Client(base_url=server, headers=headers, timeout=60) as http:
            http.get("/healthz")  # connect before the barrier, so the writes start together
            barrier.wait()
            try:
                out[i] = http.post("/v1/memories", json=bodies[i])
            except Exception as exc:  # noqa: BLE001 - the outcome is what the test inspects
                out[i] = exc

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(bodies))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    return out


def _results(responses) -> list[dict]:
    for r in responses:
        assert isinstance(r, httpx.Response) and r.status_code == 200, r if not isinstance(
            r, httpx.Response) else r.text
    return [r.json()["results"][0] for r in responses]


ROUNDS = 4  # a race is a chance: every round must hold, so one lucky ordering proves nothing


@pytest.mark.parametrize("writers", [8, 16])
def test_concurrent_identical_creates_make_one_memory(server, tenant, db, writers):
    """Given an empty path, several times over
    When N clients create the same statement at the same moment (no idempotency key)
    Then one row holds it: exactly one request answers `inserted` and the other N-1
         `reinforced`, all naming the same id, and the memory counts N-1 reinforcements;
         a different statement written afterwards is a new memory (control)."""
    for round_ in range(ROUNDS):
        path = f"users.race{round_}"
        content = f"The staging database password rotates on Fridays (team {round_})"
        body = {"memories": [{"content": content, "path": path}]}
        results = _results(_race(server, tenant.headers, [body] * writers))

        statuses = sorted(r["status"] for r in results)
        assert statuses == ["inserted"] + ["reinforced"] * (writers - 1), (round_, statuses)
        assert len({r["id"] for r in results}) == 1, (round_, results)
        held = [m for m in memory_rows(db, tenant.tenant_id, path) if m["content"] == content]
        assert [(m["id"], m["status"]) for m in held] == [(results[0]["id"], "active")], held
        assert held[0]["reinforcements"] == writers - 1

        with httpx.Client(base_url=server, headers=tenant.headers) as http:
            r = http.post("/v1/memories", json={"memories": [
                {"content": f"The staging cluster restarts on Mondays (team {round_})",
                 "path": path}]})
        assert r.status_code == 200 and r.json()["results"][0]["status"] == "inserted", r.text
        assert len(memory_rows(db, tenant.tenant_id, path)) == 2


DATABASES = ["postgresql", "mysql", "sqlite", "mongodb", "redis", "cassandra", "mariadb",
             "oracle", "duckdb", "cockroachdb", "neo4j", "dynamodb", "couchdb", "firebird",
             "clickhouse", "timescaledb"]


@pytest.mark.parametrize("writers", [8, 16])
def test_concurrent_slot_writes_leave_one_active_holder(server, tenant, db, writers):
    """Given an empty path
    When N clients each write a different value of slot user.preferred_database at the same
         moment
    Then exactly one row of the slot is active and every other row is superseded; each request
         answers `inserted` or `superseded_existing`, with exactly N-1 superseded_existing
         (every write after the first found a holder and superseded it); a write in another
         slot afterwards supersedes nothing (control)."""
    path, slot = "users.race", "user.preferred_database"
    values = DATABASES[:writers]
    bodies = [{"memories": [{"content": f"I prefer {v}", "path": path, "slot": slot, "value": v,
                             "kind": "preference"}]} for v in values]
    results = _results(_race(server, tenant.headers, bodies))

    statuses = [r["status"] for r in results]
    assert set(statuses) <= {"inserted", "superseded_existing"}, statuses
    assert statuses.count("superseded_existing") == writers - 1, statuses
    assert statuses.count("inserted") == 1, statuses
    slot_rows = [m for m in memory_rows(db, tenant.tenant_id, path) if m["slot"] == slot]
    assert len(slot_rows) == writers
    assert sorted(m["status"] for m in slot_rows) == ["active"] + ["superseded"] * (writers - 1)
    assert {m["id"] for m in slot_rows} == {r["id"] for r in results}

    with httpx.Client(base_url=server, headers=tenant.headers) as http:
        r = http.post("/v1/memories", json={"memories": [
            {"content": "I prefer vim", "path": path, "slot": "user.preferred_editor",
             "value": "vim"}]})
    assert r.status_code == 200 and r.json()["results"][0]["status"] == "inserted", r.text
    assert sum(m["status"] == "active" for m in memory_rows(db, tenant.tenant_id, path)) == 2


def test_one_batch_of_500_values_of_one_slot_leaves_the_last_active(client, tenant, db):
    """Given an empty path
    When one batch of 500 memories gives slot user.lucky_number 500 distinct values
    Then results come in input order, item 0 `inserted` and items 1..499
         `superseded_existing`; the last item is the one active holder and the other 499 rows
         are superseded; a batch of distinct slots inserts every item (control)."""
    path, slot, n = "users.lucky", "user.lucky_number", 500
    items = [{"content": f"The user's lucky number is {i}", "path": path, "slot": slot,
              "value": str(i)} for i in range(n)]
    results = create_ok(client, tenant.headers, *items)

    assert [r["status"] for r in results] == ["inserted"] + ["superseded_existing"] * (n - 1)
    assert len({r["id"] for r in results}) == n
    by_id = {m["id"]: m for m in memory_rows(db, tenant.tenant_id, path)}
    assert len(by_id) == n
    active = [i for i, m in by_id.items() if m["status"] == "active"]
    assert active == [results[-1]["id"]]
    assert by_id[results[-1]["id"]]["value"] == str(n - 1)
    assert sum(m["status"] == "superseded" for m in by_id.values()) == n - 1

    ctl = create_ok(client, tenant.headers, *[
        {"content": f"The user's lucky colour number {i} is {i}", "path": "users.colours",
         "slot": f"user.lucky_colour_{i}", "value": str(i)} for i in range(5)])
    assert [r["status"] for r in ctl] == ["inserted"] * 5


# --------------------------------------------------------------------------------------
# 6. The age guard orders statements by when they were said
# --------------------------------------------------------------------------------------

T = datetime(2026, 10, 1, 10, 0, tzinfo=UTC)


def test_age_guard_orders_by_statement_time_not_valid_time(client, tenant, db):
    """Given "I live in Berlin" said at T
    When "Actually I moved to Paris last month" is said at T + 7 days (its valid time, a month
         before, lies before Berlin's)
    Then Paris is active (outcome superseded_existing), Berlin is superseded, and Berlin's
         validity never ends before it began; in a fresh path, "I live in Munich" said at
         T - 7 days but delivered after "I live in Berlin" (said at T) is the older statement:
         stored_as_superseded while Berlin stays active (control)."""
    h = tenant.headers
    path = "users.mover"
    berlin = say(client, h, "I live in Berlin", at=T, path=path)
    assert outcomes(berlin) == ["created"], berlin
    berlin_id = berlin["items"][0]["memory_id"]
    paris = say(client, h, "Actually I moved to Paris last month", at=T + timedelta(days=7),
                path=path)
    assert outcomes(paris) == ["superseded_existing"], paris
    paris_id = paris["items"][0]["memory_id"]

    by_id = {m["id"]: m for m in memory_rows(db, tenant.tenant_id, path)}
    assert by_id[paris_id]["status"] == "active"
    assert by_id[berlin_id]["status"] == "superseded"
    valid = by_id[berlin_id]["valid"]
    assert valid.upper is not None and valid.upper >= valid.lower, valid
    assert _active_slot(db, tenant.tenant_id, path, "user.location") == [(paris_id, "paris")]

    # Control: a statement said earlier, delivered late, does not replace the present.
    ctl = "users.late"
    b2 = say(client, h, "I live in Berlin", at=T, path=ctl)
    assert outcomes(b2) == ["created"], b2
    late = say(client, h, "I live in Munich", at=T - timedelta(days=7), path=ctl)
    assert outcomes(late) == ["stored_as_superseded"], late
    ctl_rows = {m["id"]: m for m in memory_rows(db, tenant.tenant_id, ctl)}
    assert ctl_rows[b2["items"][0]["memory_id"]]["status"] == "active"
    assert ctl_rows[late["items"][0]["memory_id"]]["status"] == "superseded"


def test_a_past_residence_said_later_is_history_not_a_move(client, tenant, db):
    """Given "I live in Berlin" said at T
    When "I lived in Munich in 2024" is said at T + 8 days (said later, but about the past)
    Then it is stored as already superseded (outcome stored_as_superseded) and Berlin stays
         the one active location; "I live in Hamburg" said at T + 9 days is a move: it
         supersedes Berlin (control)."""
    h = tenant.headers
    path = "users.stayer"
    berlin = say(client, h, "I live in Berlin", at=T, path=path)
    assert outcomes(berlin) == ["created"], berlin
    berlin_id = berlin["items"][0]["memory_id"]
    munich = say(client, h, "I lived in Munich in 2024", at=T + timedelta(days=8), path=path)
    assert outcomes(munich) == ["stored_as_superseded"], munich
    by_id = {m["id"]: m for m in memory_rows(db, tenant.tenant_id, path)}
    assert by_id[munich["items"][0]["memory_id"]]["status"] == "superseded"
    assert _active_slot(db, tenant.tenant_id, path, "user.location") == [(berlin_id, "berlin")]

    # Control: a present-tense statement said later is a move.
    hamburg = say(client, h, "I live in Hamburg", at=T + timedelta(days=9), path=path)
    assert outcomes(hamburg) == ["superseded_existing"], hamburg
    assert _active_slot(db, tenant.tenant_id, path, "user.location") == [
        (hamburg["items"][0]["memory_id"], "hamburg")]
    assert get_ok(client, h, berlin_id)["status"] == "superseded"


# --------------------------------------------------------------------------------------
# Generated: a forgotten value never comes back, whatever the entry point or wording
# --------------------------------------------------------------------------------------

SLOT = "user.preferred_database"
BASE = "I prefer PostgreSQL"
DB_WORDS = ["PostgreSQL", "Postgres", "postgresql", "POSTGRES", "pg", "psql"]
VALUES = ["postgresql", "PostgreSQL", "Postgres", "postgres", " POSTGRESQL ", "pg", "psql"]
ENTRY_POINTS = ["create", "named_replace", "patch", "promote", "restore"]


@st.composite
def variants(draw) -> dict[str, Any]:
    """A wording of "I prefer PostgreSQL": with a slot, any alias in content and value;
    without one, only what the canonical form ignores (case, whitespace, trailing marks)."""
    use_slot = draw(st.booleans())
    word = draw(st.sampled_from(DB_WORDS)) if use_slot else "PostgreSQL"
    words = ["I", "prefer", word]
    case = draw(st.sampled_from(["keep", "lower", "upper"]))
    gaps = [draw(st.sampled_from([" ", "  ", "\t", " \n "])) for _ in range(len(words) - 1)]
    text = words[0] + "".join(g + w for g, w in zip(gaps, words[1:]))
    text = {"keep": text, "lower": text.lower(), "upper": text.upper()}[case]
    text = draw(st.sampled_from(["", " ", "  "])) + text + draw(
        st.sampled_from(["", ".", "!!", "...", " !", "?!"]))
    out: dict[str, Any] = {"content": text}
    if use_slot:
        out |= {"slot": SLOT, "value": draw(st.sampled_from(VALUES)), "kind": "preference"}
    return out


def _attempt_promote(client, h, path: str, v: dict[str, Any]):
    """Ingest a change back to the value (candidate), forget the value's superseded memory,
    then promote the candidate (the extractor always gives this statement a slot)."""
    said = " ".join(v["content"].split())  # the variant as one line ("I prefer <word><end>")
    word, end = said.split(" ", 2)[2].rstrip(".!? "), said[len(said.rstrip(".!? ")):]
    first = say(client, h, said, at=T0, path=path)
    assert outcomes(first) == ["created"], first
    second = say(client, h, "I've switched to SQLite", at=T0 + timedelta(weeks=1), path=path)
    assert outcomes(second) == ["superseded_existing"], second
    back = say(client, h, f"I've gone back to {word}{end}", at=T0 + timedelta(weeks=2),
               path=path)
    assert outcomes(back) == ["candidate"], back
    forget_ok(client, h, first["items"][0]["memory_id"])
    return back["items"][0]["memory_id"]


ALIAS = {"content": "I PREFER  Postgres", "slot": SLOT, "value": "pg", "kind": "preference"}


@settings(max_examples=30, deadline=None, database=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(entry=st.sampled_from(ENTRY_POINTS), v=variants())
@example(entry="create", v=ALIAS)
@example(entry="named_replace", v={"content": "i prefer postgresql!"})
@example(entry="patch", v=ALIAS)
@example(entry="promote", v={"content": "I prefer Postgres"})
@example(entry="restore", v=ALIAS)
def test_a_forgotten_value_never_comes_back_through_any_entry_point(client, db, make_tenant,
                                                                    entry, v):
    """Given "I prefer PostgreSQL" (slot user.preferred_database = postgresql) forgotten in a
         fresh tenant's path
    When a variant of it (case, whitespace, punctuation, alias) is written there through a
         plain create, a named replace, a PATCH of another memory, a review promote, or a
         restore of an earlier version that held it
    Then the write is refused (`blocked` in a create result, 409 suppressed for an edit or a
         restore; the candidate a promote would need was erased by the forget: 404), and no
         active or candidate memory holds a value a forgotten tombstone
         retires in its scope (by slot + value or by value_hash); the setup's other writes
         (the named memory, the patched memory, the restored memory's current version) land
         as control."""
    t = make_tenant()
    h = t.headers
    path = "users.gen"
    kept = None  # what the refused write must have left in place, where there is one

    def forget_base() -> None:
        fid = new_id(client, h, BASE, path, slot=SLOT, value="postgresql", kind="preference")
        forget_ok(client, h, fid)

    if entry == "create":
        forget_base()
        [res] = create_ok(client, h, {**v, "path": path})
        refused = res["status"] == "blocked", res
    elif entry == "named_replace":
        named = new_id(client, h, "Favourite database: undecided", path, name="dbpref")
        forget_base()
        [res] = create_ok(client, h, {**v, "path": path, "name": "dbpref"},
                          on_conflict="replace")
        refused = res["status"] == "blocked", res
        kept = lambda: get_ok(client, h, named)["content"]  # noqa: E731
    elif entry == "patch":
        target = new_id(client, h, "Favourite database: undecided", path)
        forget_base()
        body = {k: v[k] for k in ("content", "slot", "value") if k in v}
        r = patch(client, h, target, {**body, "expected_version": 1})
        refused = (r.status_code == 409 and r.json()["error"]["code"] == "suppressed"), r.text
        kept = lambda: get_ok(client, h, target)["content"]  # noqa: E731
    elif entry == "promote":
        # The forget erased the candidate that held the value: nothing is left to promote.
        cid = _attempt_promote(client, h, path, v)
        r = client.post(f"/v1/review/{cid}/promote", headers=h)
        refused = (r.status_code == 404 and r.json()["error"]["code"] == "not_found"), r.text
    else:  # restore: version 1 held the variant in a sub-path, the value is forgotten above it
        sub = f"{path}.notes"
        rid = new_id(client, h, v["content"], sub, **{k: v[k] for k in ("slot", "value", "kind")
                                                       if k in v})
        r = patch(client, h, rid, {"content": "Favourite database: undecided",
                                   "expected_version": 1})
        assert r.status_code == 200, r.text
        forget_base()
        r = client.post(f"/v1/memories/{rid}/restore", headers=h, json={"version": 1})
        refused = (r.status_code == 409 and r.json()["error"]["code"] == "suppressed"), r.text
        kept = lambda: get_ok(client, h, rid)["content"]  # noqa: E731

    assert refused[0], (entry, v, refused[1])
    if kept is not None:
        assert kept() == "Favourite database: undecided", (entry, v)
    held = forgotten_held(db, t.tenant_id)
    assert held == [], (entry, v, held)


def test_forget_erases_every_live_copy_of_the_value_in_its_scope(client, tenant, db):
    """Given "The gate is number 7781" in users.carol and the same value in users.carol.home
    (inside the forgotten path's scope) and in users.dave (outside it), when the first is
    forgotten, then the copy inside the scope is forgotten with it (``also_forgotten``), so no
    live memory holds a forgotten value in a tombstone's scope; the copy outside stays (the
    control), and the value cannot be created again inside."""
    h = tenant.headers
    first = create_ok(client, h, {"content": "The gate is number 7781", "path": "users.carol"})[0]["id"]
    inside = create_ok(client, h, {"content": "The gate is number 7781.", "path": "users.carol.home"})[0]["id"]
    outside = create_ok(client, h, {"content": "the gate is number 7781", "path": "users.dave"})[0]["id"]
    r = client.post(f"/v1/memories/{first}/forget", headers=h)
    assert r.status_code == 200, r.text
    assert r.json()["also_forgotten"] == [inside]
    assert client.get(f"/v1/memories/{inside}", headers=h).status_code == 404
    assert client.get(f"/v1/memories/{outside}", headers=h).status_code == 200
    assert forgotten_held(db, tenant.tenant_id) == []
    [again] = create_ok(client, h, {"content": "The gate is number 7781", "path": "users.carol.home"})
    assert again["status"] == "blocked"
