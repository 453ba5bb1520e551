"""Request-scoped dependencies: the database, the embedder, and the authenticated caller."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import Depends, Request

from strata.auth import Caller, authenticate
from strata.authorizer import bearer_token
from strata.config import Settings
from strata.db import Database
from strata.providers import Embedder


def get_db(request: Request) -> Database:
    return request.app.state.runtime.db


def get_embedder(request: Request) -> Embedder:
    return request.app.state.runtime.embedder


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
        from strata.authorizer import caller_from_context

        return caller_from_context(context, surface=surface)
    return authenticate(db, bearer_token(authorization), surface=surface)


def get_caller(request: Request) -> Caller:
    runtime = request.app.state.runtime
    return resolve_caller(runtime.db, runtime.settings, request.scope,
                          request.headers.get("authorization"), surface="http")


DB = Annotated[Database, Depends(get_db)]
EmbedderDep = Annotated[Embedder, Depends(get_embedder)]
CallerDep = Annotated[Caller, Depends(get_caller)]
