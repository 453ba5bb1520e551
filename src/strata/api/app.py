"""The FastAPI application: every router locally, one router per Lambda function on AWS."""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from fastapi import FastAPI

from strata import __version__
from strata.api import deadlines, errors, jsonbody, openapi
from strata.db import Database
from strata.foundation.config import Settings, get_settings
from strata.providers import Embedder

if TYPE_CHECKING:
    from strata.api.ratelimit import RateLimiter

# What a request runs against; shared with the MCP server, which imports nothing of strata.api
# (this module mounts it), so it lives below both.
from strata.api.serving import Runtime

__all__ = ["ROUTERS", "Runtime", "create_app"]


def _ask_about_pydantic_v1_only_once_it_is_loaded() -> None:
    """Keep FastAPI from importing ``pydantic.v1`` to refuse v1 models nobody uses.

    FastAPI asks of every route parameter (and of values its encoder does not know) whether it
    is a pydantic.v1 model, only to raise ``PydanticV1NotSupportedError``, and imports
    ``pydantic.v1`` to ask: ~20 ms of every API function's cold start here, 44 ms measured on
    Lambda upstream (fastapi/fastapi#16374, closed unmerged). A v1 model cannot exist before
    ``pydantic.v1`` is imported, so until then the answer is no without asking; once it is
    loaded, FastAPI's own check runs unchanged. If FastAPI renames these functions this does
    nothing, and tests/test_app_imports.py says so.
    """
    from fastapi import encoders
    from fastapi._compat import shared

    def guard(check: Callable[[object], bool]) -> Callable[[object], bool]:
        @functools.wraps(check)
        def only_once_loaded(obj: object) -> bool:
            return "pydantic.v1" in sys.modules and check(obj)

        only_once_loaded.strata_guard = True
        return only_once_loaded

    for module, name in ((shared, "is_pydantic_v1_model_class"),
                         (shared, "is_pydantic_v1_model_instance"),
                         (encoders, "is_pydantic_v1_model_instance")):
        check = getattr(module, name, None)
        if callable(check) and not getattr(check, "strata_guard", False):
            setattr(module, name, guard(check))


_ask_about_pydantic_v1_only_once_it_is_loaded()

ROUTERS = ("health", "docs", "memories", "reflect", "access", "audit", "ingest", "review",
           "search", "browse", "rules", "events", "webhooks", "console", "mcp")
# Routers whose routes are not part of the API the document describes: the document and its
# viewers, the console's static files, and /mcp (JSON-RPC, which OpenAPI does not describe; a
# mount, not routes).
UNDOCUMENTED = ("docs", "console", "mcp")


def create_app(
    routers: Sequence[str] | None = None,
    *,
    db: Database | None = None,
    embedder: Embedder | None = None,
    settings: Settings | None = None,
    rate_limiter: RateLimiter | None = None,
) -> FastAPI:
    from strata.foundation import logs

    settings = settings or get_settings()
    logs.configure(settings)
    # FastAPI's own /openapi.json and /docs are off: the docs router serves them (and
    # /redoc), with local assets, only in the apps that include it (one function on AWS).
    app = FastAPI(title="strata", version=__version__, description=openapi.DESCRIPTION,
                  openapi_tags=openapi.TAGS, openapi_url=None, docs_url=None, redoc_url=None)
    app.state.runtime = Runtime(settings, db, embedder)
    openapi.install(app, documented=lambda: [_router(n) for n in ROUTERS
                                             if n not in UNDOCUMENTED])
    # Middleware, inner to outer: the rate limits (strata.api.ratelimit; the local server only,
    # API Gateway throttles on AWS) inside the NeverLeak guard, so a fault there is the JSON
    # 500; CORS outside it, so every answer (a 429, the guard's 500) carries the CORS
    # headers and a preflight is answered before rate limits or auth see it. Every body is
    # read as JSON whatever its Content-Type, and refused past STRATA_MAX_BODY_BYTES before
    # it is read (strata.api.jsonbody); every request's database work has one deadline
    # (strata.api.deadlines).
    if rate_limiter is None and settings.rate_limit and settings.runtime == "local":
        from strata.api.ratelimit import RateLimiter

        rate_limiter = RateLimiter.from_settings(settings)
    if rate_limiter is not None:
        from strata.api import throttle

        throttle.install(app, rate_limiter)
    errors.install(app)
    jsonbody.install(app, settings.max_body_bytes)
    deadlines.install(app, settings.db_request_deadline_s)
    if settings.cors_origins:
        from strata.api import cors

        cors.install(app, settings)
    for name in routers or ROUTERS:
        if name not in ROUTERS:
            raise ValueError(f"unknown router {name!r}; known: {', '.join(ROUTERS)}")
        # Only the routers this app serves are imported: a Lambda for one route group does
        # not pay at cold start for the others (ingestion's rule tables, say; the mcp
        # package, over a second).
        if name == "mcp":
            from strata.api.mcp import transport

            transport.mount(app, app.state.runtime)
        else:
            app.include_router(_router(name))
    return app


def _router(name: str):
    import importlib

    return importlib.import_module(f"strata.api.routes.{name}").router
