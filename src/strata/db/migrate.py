"""Forward-only numbered ``.sql`` migrations.

Each file runs in its own transaction and is recorded in ``schema_migrations``. A
transaction-level advisory lock makes two processes starting at once safe: the second waits,
then finds the work done. ``${embedding_dim}`` is the one substitution, from settings.
"""

from __future__ import annotations

import logging
import re
from importlib import resources

import psycopg

from strata.foundation.config import Settings, get_settings

log = logging.getLogger(__name__)

_LOCK_KEY = 0x5374726174  # "Strat"
_NAME = re.compile(r"^(\d{4})_[a-z0-9_]+\.sql$")


def migration_names() -> list[str]:
    """The migrations this version of the code knows, in order."""
    folder = resources.files("strata.db") / "migrations"
    return sorted(p.name for p in folder.iterdir() if _NAME.match(p.name))


def migration_files() -> list[tuple[str, str]]:
    folder = resources.files("strata.db") / "migrations"
    return [(n, (folder / n).read_text(encoding="utf-8")) for n in migration_names()]


def render(sql: str, settings: Settings) -> str:
    return sql.replace("${embedding_dim}", str(int(settings.embedding_dim)))


def migrate(url: str, settings: Settings | None = None) -> list[str]:
    """Apply pending migrations to the database at ``url``; return the names applied."""
    settings = settings or get_settings()
    applied: list[str] = []
    with psycopg.connect(url, autocommit=True) as conn:
        with conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (_LOCK_KEY,))
            conn.execute(
                "CREATE TABLE IF NOT EXISTS schema_migrations ("
                " name text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())"
            )
        for name, sql in migration_files():
            with conn.transaction():
                conn.execute("SELECT pg_advisory_xact_lock(%s)", (_LOCK_KEY,))
                done = conn.execute("SELECT 1 FROM schema_migrations WHERE name = %s", (name,)).fetchone()
                if done:
                    continue
                conn.execute(render(sql, settings))
                conn.execute("INSERT INTO schema_migrations (name) VALUES (%s)", (name,))
                applied.append(name)
                log.info("migration applied", extra={"migration": name})
    return applied


def migrate_database() -> list[str]:
    """Entry point for the CLI and the deploy-time custom resource."""
    from strata.db.pool import database_url

    settings = get_settings()
    return migrate(database_url(settings), settings)


def migration_level(conn: psycopg.Connection) -> tuple[list[str], list[str]]:
    """(pending, unknown): the code's migrations this database has not applied, and those
    it has applied that this version of the code does not know (a newer deploy's)."""
    if conn.execute("SELECT to_regclass('schema_migrations') AS t").fetchone()["t"] is None:
        return migration_names(), []
    applied = {r["name"] for r in conn.execute("SELECT name FROM schema_migrations")}
    known = migration_names()
    return [n for n in known if n not in applied], sorted(applied - set(known))


def stored_embedding_dim(conn: psycopg.Connection) -> int:
    row = conn.execute("SELECT value FROM strata_meta WHERE key = 'embedding_dim'").fetchone()
    return int(row["value"] if isinstance(row, dict) else row[0])


def check_schema(conn: psycopg.Connection, settings: Settings) -> None:
    """Refuse to run against a schema whose embedding dimension differs from settings."""
    dim = stored_embedding_dim(conn)
    if dim != settings.embedding_dim:
        raise RuntimeError(
            f"the database stores {dim}-dimensional embeddings but STRATA_EMBEDDING_DIM is "
            f"{settings.embedding_dim}: run `strata reindex` to switch, or fix the setting"
        )
