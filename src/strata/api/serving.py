"""What the HTTP API (:mod:`strata.api`) and the MCP server (:mod:`strata.api.mcp`) share.

The :class:`Runtime` a request runs against, the caller a request resolves to (from the Lambda
authorizer's context on AWS, else from its bearer key), and the error contract both surfaces
answer with: ``{"error": {"code", "message", "field"?}}`` and the HTTP status of each core
error.

Dependencies go one way: ``strata.api.app`` mounts ``strata.api.mcp.transport`` on the app
it builds, and both import this module, which imports neither of them. Nor does it import
FastAPI, Starlette or the ``mcp`` package, and it imports no more at module level than every
API app already loads (settings, the pool, the embedders, the core errors) but
``strata.api.authorizer``, which imports only the standard library: ``strata.auth`` (~5 ms, which
the health function never needs) is imported by the first key lookup, as the ingest pipeline
is by the first request that ingests.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any

from strata.api.authorizer import bearer_token, caller_from_context
from strata.db import Database, get_database
from strata.foundation.config import Settings
from strata.foundation.errors import (
    Conflict,
    Forbidden,
    Gone,
    InvalidInput,
    ModelUnavailable,
    NotFound,
    StrataError,
    Suppressed,
    Unauthenticated,
    Unavailable,
    VersionConflict,
    field_path,
)
from strata.providers import Embedder, get_embedder

if TYPE_CHECKING:
    from strata.auth import Caller
    from strata.db.routing import Reads
    from strata.ingest.pipeline import IngestRuntime
    from strata.ingest.service import Launcher

# ---------------------------------------------------------------------------------- runtime


@dataclass
class Runtime:
    """What a request needs, resolved lazily so importing the app never touches the network."""

    settings: Settings
    _db: Database | None = None
    _embedder: Embedder | None = None

    @cached_property
    def database(self) -> Database:
        """The process database as requests use it: a checkout waits at most
        ``pool_timeout_s``, then the request answers 503 unavailable. Unchecked: readiness
        reports on it what ``db`` would refuse."""
        return (self._db or get_database()).waiting(self.settings.pool_timeout_s)

    @cached_property
    def db(self) -> Database:
        from strata.db.migrate import check_schema

        db = self.database
        # Once per process, on first use: refuse a schema whose vector dimension is not the
        # configured one (its message names `strata reindex`). Not cached on failure, so
        # every request says why until the operator fixes it.
        with db.connection() as conn:
            check_schema(conn, self.settings)
        if self._embedder is None and self.settings.embedder is not None:
            from strata.providers.store_embedder import resolve

            # Likewise a configured embedder other than the store's (strata.providers.store_embedder):
            # its queries would rank the store's vectors as noise.
            resolve(db, self.settings, strict=True)
        return db

    @cached_property
    def reads(self) -> Reads:
        """Where reads that may use a replica run (strata.db.routing)."""
        from strata.db.pool import get_read_database
        from strata.db.routing import Reads

        return Reads(self.db, get_read_database(self.settings), self.settings.read_after_write_s)

    @cached_property
    def embedder(self) -> Embedder:
        """The one given, the configured one (checked against the store's by ``db``), or with
        STRATA_EMBEDDER unset the store's own, which reads the database once."""
        if self._embedder is not None:
            return self._embedder
        if self.settings.embedder is None:
            from strata.providers.store_embedder import resolve

            return resolve(self.database, self.settings, strict=True).embedder
        return get_embedder(self.settings)

    @property
    def known_embedder(self) -> Embedder | None:
        """The embedder when naming it needs no database (what ``/healthz`` describes): given,
        configured, or already read from the store; None while the store's is unread."""
        if self._embedder is not None or self.settings.embedder is not None:
            return self.embedder
        return self.__dict__.get("embedder")

    @cached_property
    def ingest(self) -> IngestRuntime:
        from strata.ingest.pipeline import IngestRuntime

        return IngestRuntime(self.db, self.embedder, self.settings)

    @cached_property
    def reflector(self):
        """The model that reflects and consolidates (strata.reflection.reflector); None
        when no model is configured."""
        from strata.reflection.reflector import get_reflector

        return get_reflector(self.settings)

    @cached_property
    def launcher(self) -> Launcher:
        from strata.ingest.service import StepFunctionsLauncher, ThreadLauncher

        arn = self.settings.ingest_state_machine_arn
        return StepFunctionsLauncher(arn) if arn else ThreadLauncher()


# ----------------------------------------------------------------------------------- caller


def authorizer_context(scope: dict[str, Any], settings: Settings) -> dict[str, Any] | None:
    """What the API Gateway Lambda authorizer (functions/authorizer) resolved the key to, when
    this request came through it: Mangum puts the Lambda event in the ASGI scope, where no
    header can reach, and only when running on AWS. ``None`` everywhere else (the local
    server, tests, a route without the authorizer)."""
    if settings.runtime != "aws":
        return None
    event = scope.get("aws.event")
    if not isinstance(event, dict):
        return None
    context = ((event.get("requestContext") or {}).get("authorizer") or {}).get("lambda")
    return context if isinstance(context, dict) else None


def resolve_caller(db: Database, settings: Settings, scope: dict[str, Any],
                   authorization: str | None, *, surface: str) -> Caller:
    """The caller: from the authorizer's context on AWS (no second key lookup; the effective
    paths it carries still filter every statement), else by the bearer key."""
    context = authorizer_context(scope, settings)
    if context is not None:
        return caller_from_context(context, surface=surface)
    from strata.auth import authenticate

    return authenticate(db, bearer_token(authorization), surface=surface)


# ----------------------------------------------------------------------------------- errors

STATUS: dict[type[StrataError], int] = {
    InvalidInput: 422,
    Unauthenticated: 401,
    Forbidden: 403,
    NotFound: 404,
    Conflict: 409,
    Suppressed: 409,
    Gone: 410,
    VersionConflict: 412,
    Unavailable: 503,
    ModelUnavailable: 409,
}


def error_body(code: str, message: str, field: str | None = None, **extra: Any) -> dict[str, Any]:
    err: dict[str, Any] = {"code": code, "message": message}
    if field:
        err["field"] = field
    err.update({k: v for k, v in extra.items() if v is not None})
    return {"error": err}


def error_body_for(exc: StrataError) -> dict[str, Any]:
    """A core error's body: its code, message, field and details."""
    return error_body(exc.code, exc.message, exc.field, **exc.details)


def error_answer(exc: StrataError) -> tuple[int, dict[str, Any], dict[str, str] | None]:
    """A core error as HTTP: (status, body, headers); a 401 asks for a bearer key, a 503
    says when to try again."""
    status = next((s for cls, s in STATUS.items() if isinstance(exc, cls)), 400)
    headers = None
    if status == 401:
        headers = {"WWW-Authenticate": "Bearer"}
    elif isinstance(exc, Unavailable):
        headers = {"Retry-After": str(exc.retry_after_s)}
    return status, error_body_for(exc), headers


def field_name(loc: Sequence[Any]) -> str | None:
    """('body', 'memories', 3, 'content') -> 'memories[3].content'."""
    return field_path(loc[1:] if loc and loc[0] in ("body", "query", "path", "header") else loc)
