"""The audit hash chain on a real PostgreSQL: what every request appends, what it never holds,
how tampering is reported, that failures fail open, and that appends serialise per tenant."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import threading
import time
import uuid
from datetime import UTC, datetime

import psycopg
import pytest
from psycopg import sql as pgsql
from psycopg.rows import dict_row

from strata import audit
from strata.audit.chain import GENESIS, Actor, Reader, SystemActor, row_hash
from strata.auth import Caller
from strata.auth.keys import parse_key

STRATA = [sys.executable, "-m", "strata.cli"]
SECRET = "zebra-quartz-7731 keeps the spare key under the blue flowerpot"
SECRET_PATCHED = "okapi-mauve-4406 moved the spare key into the mailbox"


# --------------------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------------------


def audit_rows(db, tenant_id) -> list[dict]:
    with db.connection() as conn:
        return conn.execute(
            "SELECT * FROM audit_log WHERE tenant_id = %s ORDER BY seq", (tenant_id,)
        ).fetchall()


def sql(db, statement: str, params=None) -> None:
    with db.transaction() as cur:
        cur.execute(statement, params)


def key_id_of(db, key: str) -> uuid.UUID:
    with db.connection() as conn:
        return conn.execute(
            "SELECT id FROM api_keys WHERE prefix = %s", (parse_key(key),)
        ).fetchone()["id"]


def create_memory(client, tk, content: str = "I prefer PostgreSQL", path: str = "users.alice"):
    r = client.post("/v1/memories", headers=tk.headers,
                    json={"memories": [{"content": content, "path": path}]})
    assert r.status_code == 200, r.text
    [result] = r.json()["results"]
    assert result["status"] == "inserted", result
    return uuid.UUID(result["id"])


def reader_key(client, owner) -> dict:
    """Via the admin routes: a principal with read on users, and a key for it."""
    p = client.post("/v1/principals", headers=owner.headers, json={"name": "reader", "kind": "agent"})
    assert p.status_code == 201, p.text
    g = client.post("/v1/grants", headers=owner.headers,
                    json={"principal_id": p.json()["id"], "path": "users", "level": "read"})
    assert g.status_code == 201, g.text
    k = client.post("/v1/keys", headers=owner.headers, json={"principal_id": p.json()["id"]})
    assert k.status_code == 201, k.text
    return {"principal_id": uuid.UUID(p.json()["id"]), "grant_id": g.json()["id"],
            "key_id": k.json()["id"], "key": k.json()["key"],
            "headers": {"Authorization": f"Bearer {k.json()['key']}"}}


@pytest.fixture
def chain(client, db, tenant):
    """A tenant chain of 8 rows: tenant.create, create, 3 reads, a list, a refused read, a patch."""
    mid = create_memory(client, tenant)
    for _ in range(3):
        assert client.get(f"/v1/memories/{mid}", headers=tenant.headers).status_code == 200
    assert client.get("/v1/memories", headers=tenant.headers).status_code == 200
    assert client.get(f"/v1/memories/{uuid.uuid4()}", headers=tenant.headers).status_code == 404
    r = client.patch(f"/v1/memories/{mid}", headers=tenant.headers,
                     json={"expected_version": 1, "importance": 0.9})
    assert r.status_code == 200, r.text
    rows = audit_rows(db, tenant.tenant_id)
    assert [r["seq"] for r in rows] == list(range(1, 9))
    assert audit.verify(db, tenant.tenant_id)["ok"] is True  # control: intact before tampering
    return rows


def cli(db, *args: str) -> tuple[int, dict]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("STRATA_")}
    env["STRATA_DATABASE_URL"] = db.url
    proc = subprocess.run(STRATA + list(args), env=env, capture_output=True, text=True, timeout=60)
    assert proc.stdout.strip(), proc.stderr
    return proc.returncode, json.loads(proc.stdout)


# --------------------------------------------------------------------------------------
# every request appends; verify after a mixed run
# --------------------------------------------------------------------------------------


def test_auths_caller_is_what_the_audit_chain_takes():
    """Audit sits below auth and names its callers by protocol (strata.audit.chain.Actor,
    Reader), so nothing but this test ties the two together.
    Given auth's Caller, a job's SystemActor, and an object that lacks one of the ids
    Then the Caller is a Reader (and so an Actor), the SystemActor an Actor but no Reader (a
    job does not read the trail), and the object missing ``key_id`` is neither."""
    tenant_id = uuid.uuid4()
    caller = Caller(tenant_id=tenant_id, principal_id=uuid.uuid4(), key_id=uuid.uuid4(),
                    access=(), surface="http")
    system = SystemActor(tenant_id, surface="maintenance")

    class Partial:
        tenant_id, principal_id, surface = uuid.uuid4(), None, "http"

        def require_root_owner(self) -> None:
            pass

    assert isinstance(caller, Reader) and isinstance(caller, Actor)
    assert isinstance(system, Actor) and not isinstance(system, Reader)
    assert not isinstance(Partial(), Actor) and not isinstance(Partial(), Reader)
    assert isinstance(Caller.system(tenant_id), Actor)


def test_mixed_http_run_appends_one_entry_per_request_and_verifies(client, db, tenant):
    """Given a tenant, when create/get/list/patch/history/delete/restore/forget, admin routes
    and refused requests (404, 412, 403) run over HTTP, then each appends one entry with its
    action, operation, outcome, principal, key, ids and count, and verify reports ok with
    checked == the number of rows."""
    h = tenant.headers
    mid = create_memory(client, tenant)
    assert client.get(f"/v1/memories/{mid}", headers=h).status_code == 200
    assert client.get("/v1/memories", headers=h).json()["items"][0]["id"] == str(mid)
    assert client.patch(f"/v1/memories/{mid}", headers=h,
                        json={"expected_version": 1, "content": "I prefer MySQL"}).status_code == 200
    assert client.patch(f"/v1/memories/{mid}", headers=h,
                        json={"expected_version": 1, "content": "x"}).status_code == 412
    assert client.get(f"/v1/memories/{mid}/history", headers=h).status_code == 200
    assert client.delete(f"/v1/memories/{mid}", headers=h).status_code == 200
    assert client.get(f"/v1/memories/{mid}", headers=h).status_code == 404
    assert client.post(f"/v1/memories/{mid}/restore", headers=h).status_code == 200
    missing = uuid.uuid4()
    assert client.get(f"/v1/memories/{missing}", headers=h).status_code == 404
    assert client.post(f"/v1/memories/{mid}/forget", headers=h).status_code == 200
    assert client.get(f"/v1/memories/{mid}/related", headers=h).status_code == 404
    reader = reader_key(client, tenant)  # principal.create, grant.create, key.create
    assert client.post("/v1/memories", headers=reader["headers"],
                       json={"memories": [{"content": "nope", "path": "users.bob"}]}).status_code == 403
    assert client.get("/v1/keys", headers=h).status_code == 200
    assert client.get("/v1/principals", headers=h).status_code == 200
    assert client.get("/v1/grants", headers=h).status_code == 200
    assert client.delete(f"/v1/keys/{reader['key_id']}", headers=h).status_code == 200
    assert client.delete(f"/v1/grants/{reader['grant_id']}", headers=h).status_code == 200
    assert client.get("/v1/audit", headers=h).status_code == 200

    rows = audit_rows(db, tenant.tenant_id)
    got = [(r["operation"], r["action"], r["outcome"]) for r in rows]
    assert got == [
        ("tenant.create", "admin", "ok"),
        ("memory.create", "write", "ok"),
        ("memory.get", "read", "ok"),
        ("memory.list", "read", "ok"),
        ("memory.update", "write", "ok"),
        ("memory.update", "write", "version_conflict"),
        ("memory.history", "read", "ok"),
        ("memory.delete", "delete", "ok"),
        ("memory.get", "read", "not_found"),
        ("memory.restore", "write", "ok"),
        ("memory.get", "read", "not_found"),
        ("memory.forget", "delete", "ok"),
        ("memory.related", "read", "not_found"),
        ("principal.create", "admin", "ok"),
        ("grant.create", "admin", "ok"),
        ("key.create", "admin", "ok"),
        ("memory.create", "write", "forbidden"),
        ("key.list", "admin", "ok"),
        ("principal.list", "admin", "ok"),
        ("grant.list", "admin", "ok"),
        ("key.revoke", "admin", "ok"),
        ("grant.delete", "admin", "ok"),
        ("audit.list", "admin", "ok"),
    ]
    assert [r["seq"] for r in rows] == list(range(1, len(rows) + 1))
    # who: the fixture's tenant.create is the operator; everything else is the owner key over
    # HTTP, except the refused write made with the reader's key
    assert (rows[0]["surface"], rows[0]["principal_id"], rows[0]["key_id"]) == ("cli", None, None)
    admin_key = key_id_of(db, tenant.key)
    refused_write = rows[16]
    assert (refused_write["principal_id"], str(refused_write["key_id"])) == (
        reader["principal_id"], reader["key_id"])
    for r in rows[1:16] + rows[17:]:
        assert (r["surface"], r["principal_id"], r["key_id"]) == ("http", tenant.principal_id, admin_key)
    # which memories, how many
    for r in rows[1:13]:
        assert r["memory_ids"] == [mid] or (r["memory_ids"] == [missing] and r["outcome"] == "not_found")
    assert rows[10]["memory_ids"] == [missing] and rows[10]["count"] == 0
    assert rows[3]["count"] == 1 and rows[1]["count"] == 1
    assert rows[6]["count"] == 1  # one prior state in history
    # the hash links are the ones verify recomputes
    assert bytes(rows[0]["prev_hash"]) == GENESIS
    for prev, row in zip(rows, rows[1:]):
        assert bytes(row["prev_hash"]) == bytes(prev["row_hash"])

    r = client.post("/v1/audit/verify", headers=h)
    assert r.status_code == 200, r.text
    report = r.json()
    assert report["ok"] is True
    assert report["checked"] == len(rows) == 23
    assert report["first_bad_seq"] is None
    after = audit_rows(db, tenant.tenant_id)
    assert (after[-1]["seq"], after[-1]["operation"]) == (24, "audit.verify")
    check = audit.verify(db, tenant.tenant_id)
    assert {k: check[k] for k in ("ok", "failed", "checked", "first_bad_seq", "gaps", "head_seq")} == {
        "ok": True, "failed": [], "checked": 24, "first_bad_seq": None, "gaps": [], "head_seq": 24}


def test_audit_rows_hold_no_content_and_no_key(client, db, tenant):
    """Given memories whose content carries distinctive strings (the control: they are in the
    memories table and history), when they are created, read, listed, patched and a key is
    minted, then no audit row (whole row as text) nor audit head contains the content, the
    API keys, their secret part or their prefix -- while the rows do name the memory ids."""
    mid = create_memory(client, tenant, content=SECRET)
    with db.connection() as conn:
        assert conn.execute("SELECT count(*) AS n FROM memories t WHERE t::text LIKE %s",
                            (f"%{SECRET}%",)).fetchone()["n"] == 1
    h = tenant.headers
    assert client.get(f"/v1/memories/{mid}", headers=h).json()["content"] == SECRET
    assert client.get("/v1/memories", headers=h).status_code == 200
    assert client.patch(f"/v1/memories/{mid}", headers=h,
                        json={"expected_version": 1, "content": SECRET_PATCHED}).status_code == 200
    assert client.get(f"/v1/memories/{mid}/history", headers=h).status_code == 200
    minted = reader_key(client, tenant)["key"]
    with db.connection() as conn:
        assert conn.execute("SELECT count(*) AS n FROM memory_history t WHERE t::text LIKE %s",
                            (f"%{SECRET}%",)).fetchone()["n"] == 1
        texts = [r["t"] for r in conn.execute(
            "SELECT t::text AS t FROM audit_log t WHERE tenant_id = %s ORDER BY seq",
            (tenant.tenant_id,)).fetchall()]
        texts += [r["t"] for r in conn.execute("SELECT t::text AS t FROM audit_heads t").fetchall()]
    assert len(texts) >= 9
    joined = "\n".join(texts)
    assert str(mid) in joined  # control: the scan sees what the rows do record
    forbidden = [SECRET, "zebra-quartz", SECRET_PATCHED, "okapi-mauve", "flowerpot"]
    for key in (tenant.key, minted):
        forbidden += [key, key.split("_", 2)[2], parse_key(key)]
    for needle in forbidden:
        assert needle not in joined, needle
    # the listing API returns the same columns: no content there either
    listed = client.get("/v1/audit?limit=1000", headers=h).text
    assert str(mid) in listed
    for needle in forbidden:
        assert needle not in listed, needle


# --------------------------------------------------------------------------------------
# tampering
# --------------------------------------------------------------------------------------


def _swap(db, tenant_id, a: int, b: int) -> None:
    with db.transaction() as cur:
        for old, new in ((a, -1), (b, a), (-1, b)):
            cur.execute("UPDATE audit_log SET seq = %s WHERE tenant_id = %s AND seq = %s",
                        (new, tenant_id, old))


def _rehash_from(db, tenant_id, start: int) -> None:
    """What an attacker who knows the algorithm does: re-link every row from ``start``."""
    rows = audit_rows(db, tenant_id)
    prev = bytes(rows[start - 2]["row_hash"])
    with db.transaction() as cur:
        for row in rows[start - 1:]:
            new = row_hash(prev, row)
            cur.execute("UPDATE audit_log SET prev_hash = %s, row_hash = %s"
                        " WHERE tenant_id = %s AND seq = %s", (prev, new, tenant_id, row["seq"]))
            prev = new


TAMPERS = {
    # name: (sql or callable, expected first_bad_seq, expected checked, expected gaps)
    "outcome_edited": ("UPDATE audit_log SET outcome = 'ok' WHERE tenant_id = %s AND seq = 7", 7, 8, []),
    "count_edited": ("UPDATE audit_log SET count = 42 WHERE tenant_id = %s AND seq = 5", 5, 8, []),
    "memory_ids_emptied": (
        "UPDATE audit_log SET memory_ids = '{}' WHERE tenant_id = %s AND seq = 3", 3, 8, []),
    "principal_erased": (
        "UPDATE audit_log SET principal_id = NULL WHERE tenant_id = %s AND seq = 4", 4, 8, []),
    "row_hash_edited": (
        "UPDATE audit_log SET row_hash = sha256(row_hash) WHERE tenant_id = %s AND seq = 6", 6, 8, []),
    "middle_deleted": ("DELETE FROM audit_log WHERE tenant_id = %s AND seq = 4", 4, 7, [[4, 4]]),
    "first_deleted": ("DELETE FROM audit_log WHERE tenant_id = %s AND seq = 1", 1, 7, [[1, 1]]),
    "tail_deleted": ("DELETE FROM audit_log WHERE tenant_id = %s AND seq = 8", 8, 7, [[8, 8]]),
    "two_tail_rows_deleted": (
        "DELETE FROM audit_log WHERE tenant_id = %s AND seq >= 7", 7, 6, [[7, 8]]),
    "rows_swapped": (lambda db, t: _swap(db, t, 3, 4), 3, 8, []),
    "edited_and_rehashed": (
        lambda db, t: (sql(db, "UPDATE audit_log SET outcome = 'ok' WHERE tenant_id = %s AND seq = 7",
                           (t,)), _rehash_from(db, t, 7)),
        8, 8, []),  # every link re-forged: only the head no longer matches
}
# After verify's own entry is appended the break stays visible; for a re-forged suffix it
# then shows at that entry's link (its prev_hash is the head's, not the forged row 8's).
AGAIN = {"edited_and_rehashed": 9}


@pytest.mark.parametrize("case", list(TAMPERS))
def test_tampering_reports_first_bad_seq(client, db, tenant, chain, case):
    """Given an intact 8-row chain, when a row is edited, deleted or reordered directly in SQL,
    then POST /v1/audit/verify reports ok false and the first bad seq (gaps for deletions)."""
    tamper, first_bad, checked, gaps = TAMPERS[case]
    if callable(tamper):
        tamper(db, tenant.tenant_id)
    else:
        sql(db, tamper, (tenant.tenant_id,))
    r = client.post("/v1/audit/verify", headers=tenant.headers)
    assert r.status_code == 200, r.text
    report = r.json()
    assert (report["ok"], report["first_bad_seq"], report["checked"], report["gaps"]) == (
        False, first_bad, checked, gaps)
    # the break stays visible: the verify call's own entry does not heal it
    again = audit.verify(db, tenant.tenant_id)
    assert (again["ok"], again["first_bad_seq"]) == (False, AGAIN.get(case, first_bad))


def test_forged_row_past_the_head_is_reported(db, tenant, chain):
    """Given an intact 8-row chain, when a correctly linked row 9 is inserted in SQL without
    moving the head, then verify reports seq 9 (the first row the head does not vouch for)."""
    last = chain[-1]
    forged = {**last, "seq": 9, "at": datetime.now(UTC), "outcome": "ok"}
    forged["prev_hash"] = bytes(last["row_hash"])
    forged["row_hash"] = row_hash(forged["prev_hash"], forged)
    cols = list(forged)
    sql(db, f"INSERT INTO audit_log ({', '.join(cols)}) VALUES ({', '.join(['%s'] * len(cols))})",
        [forged[c] for c in cols])
    report = audit.verify(db, tenant.tenant_id)
    assert (report["ok"], report["first_bad_seq"], report["checked"]) == (False, 9, 9)


def test_tampering_one_tenant_leaves_the_other_verifying(client, db, tenant, chain, make_tenant):
    """Given two tenants' chains, when A's row is edited, then A's verify fails and B's
    (checked over B's rows only) still reports ok."""
    b = make_tenant("beta")
    create_memory(client, b)
    sql(db, "UPDATE audit_log SET count = 99 WHERE tenant_id = %s AND seq = 2", (tenant.tenant_id,))
    assert audit.verify(db, tenant.tenant_id)["first_bad_seq"] == 2
    rb = client.post("/v1/audit/verify", headers=b.headers).json()
    assert (rb["ok"], rb["checked"], rb["first_bad_seq"]) == (True, 2, None)


def test_verify_is_consistent_while_an_append_commits(db, tenant, chain, pg_server):
    """Given verify reading the head and then blocked before reading the rows, when an append
    commits in between, then verify still reports ok (one snapshot), not a false tamper."""
    holder = psycopg.connect(db.url, row_factory=dict_row)
    try:
        holder.execute("LOCK TABLE audit_log IN ACCESS EXCLUSIVE MODE")
        result: dict = {}
        t = threading.Thread(target=lambda: result.update(audit.verify(db, tenant.tenant_id)))
        t.start()
        with psycopg.connect(db.url, autocommit=True) as watcher:
            deadline = time.monotonic() + 10
            while not watcher.execute(
                "SELECT 1 FROM pg_locks WHERE relation = 'audit_log'::regclass AND NOT granted"
            ).fetchone():
                assert time.monotonic() < deadline, "verify never reached audit_log"
                time.sleep(0.02)
        # an append (the row and head move strata.audit.append writes), committing now
        head = holder.execute("SELECT * FROM audit_heads WHERE tenant_id = %s FOR UPDATE",
                              (tenant.tenant_id,)).fetchone()
        row = {**chain[-1], "seq": head["seq"] + 1, "at": datetime.now(UTC),
               "prev_hash": bytes(head["row_hash"])}
        row["row_hash"] = row_hash(row["prev_hash"], row)
        cols = list(row)
        holder.execute(f"INSERT INTO audit_log ({', '.join(cols)})"
                       f" VALUES ({', '.join(['%s'] * len(cols))})", [row[c] for c in cols])
        holder.execute("UPDATE audit_heads SET seq = %s, row_hash = %s WHERE tenant_id = %s",
                       (row["seq"], row["row_hash"], tenant.tenant_id))
        holder.commit()
        t.join(10)
        assert not t.is_alive()
    finally:
        holder.close()
    assert (result["ok"], result["first_bad_seq"]) == (True, None), (result, audit.verify(db, tenant.tenant_id))
    assert result["checked"] in (8, 9)
    assert audit.verify(db, tenant.tenant_id)["checked"] == 9  # control: the append is real


# --------------------------------------------------------------------------------------
# fail open
# --------------------------------------------------------------------------------------


def test_audit_failure_fails_open_and_is_counted(client, db, tenant, caplog):
    """Given audit_log refusing inserts (a trigger that raises), when a write and a refused
    read are made, then both answer as without the fault (200 with the memory stored, 404),
    each failure is counted in failure_count() and /healthz, logged, and no row or gap is left;
    once the fault is gone the next append continues a chain that verifies, followed by an
    audit.missed entry counting the two lost appends, which verification reports."""
    mid = create_memory(client, tenant)
    base = audit.failure_count()
    assert client.get(f"/v1/memories/{mid}", headers=tenant.headers).status_code == 200
    assert audit.failure_count() == base  # control: a healthy append is not a failure
    rows_before = len(audit_rows(db, tenant.tenant_id))
    sql(db, """
        CREATE FUNCTION audit_refuse() RETURNS trigger LANGUAGE plpgsql AS
        $$ BEGIN RAISE EXCEPTION 'audit store unavailable'; END $$;
        CREATE TRIGGER audit_refuse BEFORE INSERT ON audit_log
            FOR EACH ROW EXECUTE FUNCTION audit_refuse();
    """)

    with caplog.at_level(logging.ERROR, logger="strata.audit.chain"):
        r = client.post("/v1/memories", headers=tenant.headers,
                        json={"memories": [{"content": "stored despite audit", "path": "users.bob"}]})
        assert r.status_code == 200, r.text
        new_id = r.json()["results"][0]["id"]
        assert client.get(f"/v1/memories/{uuid.uuid4()}", headers=tenant.headers).status_code == 404
    with db.connection() as conn:
        stored = conn.execute("SELECT content FROM memories WHERE id = %s", (new_id,)).fetchone()
    assert stored["content"] == "stored despite audit"
    assert audit.failure_count() == base + 2
    health = client.get("/healthz")
    assert health.status_code == 200 and health.json()["audit_failures"] == base + 2
    failures = [rec for rec in caplog.records if rec.getMessage() == "audit append failed"]
    assert len(failures) == 2
    assert {getattr(rec, "operation", None) for rec in failures} == {"memory.create", "memory.get"}
    assert len(audit_rows(db, tenant.tenant_id)) == rows_before

    sql(db, "DROP TRIGGER audit_refuse ON audit_log")
    assert client.get(f"/v1/memories/{new_id}", headers=tenant.headers).status_code == 200
    assert audit.failure_count() == base + 2
    report = audit.verify(db, tenant.tenant_id)
    # the read, then the marker that two appends are missing: the trail says what it lacks
    assert (report["ok"], report["checked"], report["missed_appends"]) == (True, rows_before + 2, 2)
    after = audit_rows(db, tenant.tenant_id)[-2:]
    assert [(r["operation"], r["count"]) for r in after] == [("memory.get", 1), ("audit.missed", 2)]


def test_audit_failure_from_a_held_head_lock_fails_open(client, db, tenant):
    """Given the tenant's audit head locked by another session and a short lock_timeout, when a
    write is made, then it returns 200 with its data stored and the failure is counted."""
    with psycopg.connect(db.url, autocommit=True) as admin:
        admin.execute(pgsql.SQL("ALTER DATABASE {} SET lock_timeout = '200ms'").format(
            pgsql.Identifier(admin.info.dbname)))
    db.close()  # pooled sessions pick the setting up on reconnect
    holder = psycopg.connect(db.url)
    try:
        holder.execute("SELECT 1 FROM audit_heads WHERE tenant_id = %s FOR UPDATE", (tenant.tenant_id,))
        base = audit.failure_count()
        mid = create_memory(client, tenant, content="written while the head is held")
        assert audit.failure_count() == base + 1
    finally:
        holder.close()
    assert client.get(f"/v1/memories/{mid}", headers=tenant.headers).status_code == 200
    assert audit.failure_count() == base + 1  # control: released, the append succeeds again
    assert [(r["operation"], r["count"]) for r in audit_rows(db, tenant.tenant_id)] == [
        ("tenant.create", 1), ("memory.get", 1), ("audit.missed", 1)]


# --------------------------------------------------------------------------------------
# serialised per tenant, without a global lock
# --------------------------------------------------------------------------------------


def _caller(tk) -> Caller:
    return Caller(tenant_id=tk.tenant_id, principal_id=tk.principal_id, key_id=None, access=(),
                  surface="http")


def test_concurrent_appends_give_contiguous_seqs_per_tenant(db, make_tenant):
    """Given two tenants, when 4 threads (2 per tenant) append 25 entries each at once, then
    every append succeeds and each tenant's chain is seq 1..51, distinct, and verifies."""
    a, b = make_tenant("alpha"), make_tenant("beta")
    base = audit.failure_count()
    seqs: dict[uuid.UUID, list[int | None]] = {a.tenant_id: [], b.tenant_id: []}
    start = threading.Barrier(4)

    def work(tk, n):
        start.wait()
        got = [audit.append(db, _caller(tk), audit.AuditEvent("read", f"test.{n}", count=i))
               for i in range(25)]
        seqs[tk.tenant_id].extend(got)

    threads = [threading.Thread(target=work, args=(tk, n)) for n, tk in enumerate((a, b, a, b))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert audit.failure_count() == base
    for tk in (a, b):
        assert sorted(seqs[tk.tenant_id]) == list(range(2, 52))  # seq 1 is tenant.create
        assert [r["seq"] for r in audit_rows(db, tk.tenant_id)] == list(range(1, 52))
        report = audit.verify(db, tk.tenant_id)
        assert (report["ok"], report["checked"], report["head_seq"]) == (True, 51, 51)


def test_a_held_tenant_head_blocks_only_that_tenant(db, make_tenant):
    """Given tenant A's audit head row locked by another transaction, when A and B append,
    then B's append completes at once while A's waits, and A's completes once released."""
    a, b = make_tenant("alpha"), make_tenant("beta")
    holder = psycopg.connect(db.url)
    results: dict[str, int | None] = {}
    try:
        holder.execute("SELECT 1 FROM audit_heads WHERE tenant_id = %s FOR UPDATE", (a.tenant_id,))
        ta = threading.Thread(target=lambda: results.update(
            a=audit.append(db, _caller(a), audit.AuditEvent("read", "test.a"))))
        tb = threading.Thread(target=lambda: results.update(
            b=audit.append(db, _caller(b), audit.AuditEvent("read", "test.b"))))
        ta.start()
        tb.start()
        tb.join(10)
        assert not tb.is_alive() and results["b"] == 2
        time.sleep(0.3)
        assert ta.is_alive() and "a" not in results  # serialised behind the holder
    finally:
        holder.rollback()
        holder.close()
    ta.join(10)
    assert results["a"] == 2
    assert audit.verify(db, a.tenant_id)["ok"] and audit.verify(db, b.tenant_id)["ok"]


# --------------------------------------------------------------------------------------
# GET /v1/audit, tenancy, ownership
# --------------------------------------------------------------------------------------


def test_list_pages_through_the_chain_by_cursor(client, db, tenant, chain):
    """Given an 8-row chain, when GET /v1/audit is paged with limit=3 by next_cursor, then the
    pages hold seqs 1.. contiguously without repeats, match the stored rows, and end with
    next_cursor null; a foreign cursor is refused 422."""
    seen, cursor, pages = [], None, 0
    while True:
        params = {"limit": 3} | ({"cursor": cursor} if cursor else {})
        r = client.get("/v1/audit", headers=tenant.headers, params=params)
        assert r.status_code == 200, r.text
        body = r.json()
        assert len(body["items"]) <= 3
        seen += body["items"]
        pages += 1
        cursor = body["next_cursor"]
        if cursor is None:
            break
        assert cursor == str(body["items"][-1]["seq"])
        assert pages < 10
    seqs = [i["seq"] for i in seen]
    assert seqs == list(range(1, len(seqs) + 1))
    assert len(seqs) >= 8 and pages >= 3
    stored = {r["seq"]: r for r in audit_rows(db, tenant.tenant_id)}
    for item in seen:
        row = stored[item["seq"]]
        assert item["operation"] == row["operation"] and item["outcome"] == row["outcome"]
        assert item["row_hash"] == bytes(row["row_hash"]).hex()
    # every page was itself audited, after its read
    assert max(stored) == len(seqs) + 1 and stored[max(stored)]["operation"] == "audit.list"
    bad = client.get("/v1/audit", headers=tenant.headers, params={"cursor": "abc"})
    assert bad.status_code == 422 and bad.json()["error"]["field"] == "cursor"


def test_tenant_b_never_sees_tenant_a_entries(client, db, tenant, make_tenant):
    """Given tenants A and B with their own activity, when B lists and verifies its chain,
    then it sees only its own entries (none of A's ids), while A's listing has A's (control)."""
    b = make_tenant("beta")
    a_mid = create_memory(client, tenant)
    assert client.get(f"/v1/memories/{a_mid}", headers=tenant.headers).status_code == 200
    assert client.get(f"/v1/memories/{a_mid}", headers=b.headers).status_code == 404  # B probes A's id
    b_mid = create_memory(client, b)

    a_items = client.get("/v1/audit", headers=tenant.headers).json()["items"]
    b_items = client.get("/v1/audit", headers=b.headers).json()["items"]
    assert str(a_mid) in {m for i in a_items for m in i["memory_ids"]}
    assert {i["principal_id"] for i in a_items if i["principal_id"]} == {str(tenant.principal_id)}
    assert [i["operation"] for i in b_items] == ["tenant.create", "memory.get", "memory.create"]
    assert {i["principal_id"] for i in b_items if i["principal_id"]} == {str(b.principal_id)}
    assert b_items[1]["outcome"] == "not_found"  # B's probe is in B's chain, not A's
    assert str(b_mid) in b_items[2]["memory_ids"]
    assert not any(i["operation"] == "memory.get" and i["outcome"] == "not_found" for i in a_items)
    rb = client.post("/v1/audit/verify", headers=b.headers).json()
    assert (rb["ok"], rb["checked"]) == (True, len(audit_rows(db, b.tenant_id)) - 1) == (True, 4)


def test_audit_routes_are_owner_only_and_refusals_are_recorded(client, db, tenant):
    """Given a key with read access only, when it calls GET /v1/audit and POST /v1/audit/verify,
    then both answer 403 and the refusals are in the chain (outcome forbidden, the reader's
    principal); the owner key (control) gets 200 for both."""
    reader = reader_key(client, tenant)
    assert client.get("/v1/memories", headers=reader["headers"]).status_code == 200  # the key works
    r1 = client.get("/v1/audit", headers=reader["headers"])
    r2 = client.post("/v1/audit/verify", headers=reader["headers"])
    assert (r1.status_code, r2.status_code) == (403, 403)
    assert r1.json()["error"]["code"] == "forbidden"
    assert client.get("/v1/audit", headers=tenant.headers).status_code == 200
    assert client.post("/v1/audit/verify", headers=tenant.headers).status_code == 200
    refused = [(r["operation"], r["principal_id"]) for r in audit_rows(db, tenant.tenant_id)
               if r["outcome"] == "forbidden"]
    assert refused == [("audit.list", reader["principal_id"]), ("audit.verify", reader["principal_id"])]


# --------------------------------------------------------------------------------------
# CLI
# --------------------------------------------------------------------------------------


def test_cli_audit_verify_reports_ok_then_first_bad_seq(db, tenant, chain, make_tenant, client):
    """Given the test database in STRATA_DATABASE_URL and an intact chain, when `strata audit
    verify --tenant acme` runs, then it exits 0 with ok and checked == rows; after a row is
    edited in SQL the same command exits 1 naming the first bad seq, and without --tenant it reports
    every tenant (the untouched one ok)."""
    code, out = cli(db, "audit", "verify", "--tenant", "acme")
    assert code == 0, out
    [report] = out["tenants"]
    assert (out["ok"], report["tenant"], report["ok"], report["checked"], report["first_bad_seq"]) == (
        True, "acme", True, 8, None)

    make_tenant("beta")
    sql(db, "UPDATE audit_log SET outcome = 'ok' WHERE tenant_id = %s AND seq = 7", (tenant.tenant_id,))
    # the first run checkpointed seq 8, so the edit at 7 is behind it: the bare command walks
    # every row again (only --incremental would start at the checkpoint)
    code, out = cli(db, "audit", "verify", "--tenant", "acme")
    assert code == 1, out
    assert (out["ok"], out["tenants"][0]["first_bad_seq"]) == (False, 7)

    code, out = cli(db, "audit", "verify", "--full")
    assert code == 1
    by_name = {r["tenant"]: r for r in out["tenants"]}
    assert (by_name["acme"]["ok"], by_name["acme"]["first_bad_seq"]) == (False, 7)
    assert (by_name["beta"]["ok"], by_name["beta"]["checked"]) == (True, 1)


def test_verify_flags_a_chain_whose_head_and_tail_were_deleted(client, tenant, db):
    """Given a verified chain
    When the tail row and the tenant's head row are both deleted in SQL
    Then verify is no longer ok (control: ok before the deletion)."""
    client.get("/v1/memories", headers=tenant.headers)
    before = client.post("/v1/audit/verify", headers=tenant.headers).json()
    assert before["ok"] is True
    with db.connection() as conn:
        conn.execute(
            "DELETE FROM audit_log WHERE tenant_id = %s"
            " AND seq = (SELECT max(seq) FROM audit_log WHERE tenant_id = %s)",
            (tenant.tenant_id, tenant.tenant_id),
        )
        conn.execute("DELETE FROM audit_heads WHERE tenant_id = %s", (tenant.tenant_id,))
    from strata.audit import verify

    report = verify(db, tenant.tenant_id)
    assert report["ok"] is False
    assert report["first_bad_seq"] == 1


def test_read_entries_commit_asynchronously_without_leaking_the_setting(db, tenant):
    """A read entry's transaction turns synchronous_commit off for itself only: on the one
    connection of a one-connection pool, the next statement sees it on again -- after a read
    append and after a write append (control) alike -- and both entries are in the chain."""
    from strata.db import Database

    caller = Caller.system(tenant.tenant_id)
    single = Database(db.url, max_size=1)
    try:
        seqs = []
        for action in ("read", "write"):
            seqs.append(audit.append(single, caller, audit.AuditEvent(action, f"test.{action}")))
            with single.connection() as conn:
                setting = conn.execute("SHOW synchronous_commit").fetchone()
                assert list(setting.values() if isinstance(setting, dict) else setting) == ["on"]
    finally:
        single.close()
    assert None not in seqs and seqs[1] == seqs[0] + 1
    assert audit.verify(db, tenant.tenant_id)["ok"] is True


def test_a_pipelined_read_append_that_loses_the_race_commits_nothing_and_retries(
        db, tenant, monkeypatch):
    """A read's append is pipelined (the head's read with BEGIN, the append with COMMIT), so
    whether it moved the head is known only after COMMIT. When another append moves the head
    between the read and the append, the first attempt must commit no entry and the retry
    link to the new head: seqs contiguous, one entry each, the chain verifies, no failure
    counted. Control: the interloper's append did land in between."""
    from strata.audit import chain

    caller = Caller.system(tenant.tenant_id)
    base = audit.failure_count()
    real = chain._next_row
    interloper: list[int | None] = []

    def racing(conn, caller_, event, **kw):
        row = real(conn, caller_, event, **kw)
        if row is not None and not interloper:  # once: someone else appends meanwhile
            interloper.append(None)
            interloper[0] = audit.append(db, caller_, audit.AuditEvent("write", "test.race"))
        return row

    monkeypatch.setattr(chain, "_next_row", racing)
    seq = audit.append(db, caller, audit.AuditEvent("read", "test.read"))
    monkeypatch.setattr(chain, "_next_row", real)
    assert interloper[0] is not None and seq == interloper[0] + 1
    rows = audit_rows(db, tenant.tenant_id)
    assert [r["seq"] for r in rows] == list(range(1, seq + 1))
    assert [r["operation"] for r in rows][-2:] == ["test.race", "test.read"]
    assert audit.failure_count() == base
    assert audit.verify(db, tenant.tenant_id)["ok"] is True


def test_a_read_append_with_the_head_read_beforehand_takes_one_attempt_or_retries(
        db, tenant, monkeypatch):
    """An operation that read the tenant's head beside its own statement (``event.head``, as
    search does) appends without reading it again; a head that moved since (control: another
    append in between) makes that attempt commit nothing, and the retry links to the new
    head. Both chains verify, no failure counted, the prefetched head is used only once."""
    from strata.audit import chain

    caller = Caller.system(tenant.tenant_id)
    base = audit.failure_count()
    reads: list[str] = []
    real = chain._next_row

    def counting(conn, caller_, event, **kw):
        reads.append(event.operation)
        return real(conn, caller_, event, **kw)

    def head():
        with db.connection() as conn:
            r = conn.execute(chain.HEAD, {"tenant_id": tenant.tenant_id}).fetchone()
        return r["seq"], bytes(r["row_hash"])

    monkeypatch.setattr(chain, "_next_row", counting)
    fresh = audit.AuditEvent("read", "test.fresh")
    fresh.head = head()
    first = audit.append(db, caller, fresh)
    assert first is not None and head()[0] == first
    assert reads == [] and fresh.head is None  # no head read: the prefetched one held

    stale = audit.AuditEvent("read", "test.stale")
    stale.head = head()
    between = audit.append(db, caller, audit.AuditEvent("write", "test.between"))
    second = audit.append(db, caller, stale)
    assert between == first + 1 and second == between + 1
    assert reads == ["test.between", "test.stale"]  # the stale head lost; read again
    rows = audit_rows(db, tenant.tenant_id)
    assert [r["seq"] for r in rows] == list(range(1, second + 1))
    assert [r["operation"] for r in rows][-3:] == ["test.fresh", "test.between", "test.stale"]
    assert audit.failure_count() == base
    assert audit.verify(db, tenant.tenant_id)["ok"] is True


def test_a_search_reads_the_audit_head_beside_its_statement(client, db, tenant, monkeypatch):
    """A search on the writer prefetches the head: its audit entry is appended without the
    head being read again, and the chain verifies (control: the entry is there)."""
    from strata.audit import chain

    reads: list[str] = []
    real = chain._next_row

    def counting(conn, caller_, event, **kw):
        reads.append(event.operation)
        return real(conn, caller_, event, **kw)

    monkeypatch.setattr(chain, "_next_row", counting)
    r = client.post("/v1/search", headers=tenant.headers, json={"query": "anything at all"})
    assert r.status_code == 200, r.text
    assert "memory.search" not in reads
    rows = audit_rows(db, tenant.tenant_id)
    assert rows[-1]["operation"] == "memory.search"
    assert audit.verify(db, tenant.tenant_id)["ok"] is True
