"""The FastAPI application: every router locally, one router per Lambda function on AWS."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property

from fastapi import FastAPI

from strata import __version__
from strata.api import errors
from strata.config import Settings, get_settings
from strata.db import Database, get_database
from strata.providers import Embedder, get_embedder

ROUTERS = ("health", "memories", "access", "audit", "ingest", "review", "search", "mcp")


@dataclass
class Runtime:
    """What a request needs, resolved lazily so importing the app never touches the network."""

    settings: Settings
    _db: Database | None = None
    _embedder: Embedder | None = None

    @cached_property
    def db(self) -> Database:
        from strata.db.migrate import check_schema

        db = self._db or get_database()
        # Once per process, on first use: refuse a schema whose vector dimension is not the
        # configured one (its message names `strata reindex`). Not cached on failure, so
        # every request says why until the operator fixes it.
        with db.connection() as conn:
            check_schema(conn, self.settings)
        return db

    @cached_property
    def embedder(self) -> Embedder:
        return self._embedder or get_embedder(self.settings)

    @cached_property
    def ingest(self):
        from strata.ingest.pipeline import IngestRuntime

        return IngestRuntime(self.db, self.embedder, self.settings)

    @cached_property
    def launcher(self):
        from strata.ingest.service import StepFunctionsLauncher, ThreadLauncher

        arn = self.settings.ingest_state_machine_arn
        return StepFunctionsLauncher(arn) if arn else ThreadLauncher()


def create_app(
    routers: Sequence[str] | None = None,
    *,
    db: Database | None = None,
    embedder: Embedder | None = None,
    settings: Settings | None = None,
) -> FastAPI:
    import importlib

    from strata import logs

    settings = settings or get_settings()
    logs.configure(settings)
    app = FastAPI(title="strata", version=__version__, docs_url="/docs", redoc_url=None)
    app.state.runtime = Runtime(settings, db, embedder)
    errors.install(app)
    for name in routers or ROUTERS:
        if name not in ROUTERS:
            raise ValueError(f"unknown router {name!r}; known: {', '.join(ROUTERS)}")
        # Only the routers this app serves are imported: a Lambda for one route group does
        # not pay at cold start for the others (ingestion's rule tables, say; the mcp
        # package, over a second).
        if name == "mcp":
            from strata.mcpserver import transport

            transport.mount(app, app.state.runtime)
        else:
            app.include_router(importlib.import_module(f"strata.api.routes.{name}").router)
    return app
