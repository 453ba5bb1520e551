"""Shared by the eval scripts: a throwaway migrated database (embedded PostgreSQL in a
temporary directory, or STRATA_DATABASE_URL), the app over it (in-process or on a loopback
port), and percentiles."""

from __future__ import annotations

import contextlib
import os
import socket
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import psycopg

from strata.db import Database
from strata.db.embedded import start_server
from strata.db.migrate import migrate
from strata.foundation.config import Settings


@contextlib.contextmanager
def scratch_database(**settings: object) -> Iterator[tuple[Database, Settings]]:
    with tempfile.TemporaryDirectory(prefix="strata-eval-") as tmp:
        url = os.environ.get("STRATA_DATABASE_URL")
        server = None
        if not url:
            server = start_server(Path(tmp) / "pgdata")
            with psycopg.connect(server.get_uri(), autocommit=True) as conn:
                conn.execute("CREATE DATABASE scratch")
            url = server.get_uri("scratch")
        config = Settings(home=Path(tmp), **settings)
        migrate(url, config)
        db = Database(url, max_size=4)
        try:
            yield db, config
        finally:
            db.close()
            if server is not None:
                server.cleanup()


def timed(fn):
    """``fn()`` and the seconds it took: (result, seconds)."""
    t0 = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t0


class NoAccessLog:
    """An evaluation's searches do not count as use of the memories: search's ``access_log``
    that records nothing."""

    def record(self, *args) -> None:
        pass


def cpu_speed_ms(loops: int = 2_000_000, tries: int = 3) -> float:
    """Milliseconds of a fixed pure-Python loop (the best of ``tries``): how fast this machine
    runs right now. This project's machines share their host: on 2026-12-03 a 10-million-step
    loop of this kind took 0.48 s at 06:25, 0.96 s at 07:12 and 0.50 s at 07:20, with nothing
    of ours running and no steal time reported. A latency benchmark reports it before and after its
    run, so that figures from different hours can be told apart."""
    best = float("inf")
    for _ in range(tries):
        t0 = time.perf_counter()
        total = 0
        for i in range(loops):
            total += i
        best = min(best, time.perf_counter() - t0)
    return round(best * 1000, 1)


def percentile(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(round(q * (len(values) - 1))))]


@contextlib.contextmanager
def api_client(db: Database, embedder, settings: Settings,
               routers: tuple[str, ...] = ("health", "ingest")) -> Iterator:
    """An HTTP client of the app over ``db``, in-process (Starlette's TestClient: the same
    request parsing, dependencies and error mapping as a server, without a socket). A server
    error comes back as the 500 a user would get, not as an exception."""
    from fastapi.testclient import TestClient

    from strata.api.app import create_app

    app = create_app(list(routers), db=db, embedder=embedder, settings=settings)
    with TestClient(app, raise_server_exceptions=False) as client:
        yield client


@contextlib.contextmanager
def serving(app) -> Iterator[str]:
    """The app under uvicorn on a free loopback port, for as long as the block runs; yields
    its base URL."""
    import uvicorn

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)
