"""Request-scoped dependencies: the database, the embedder, and the authenticated caller."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request

from strata.auth import Caller
from strata.db import Database
from strata.providers import Embedder

# Not FastAPI's: the MCP transport resolves its caller the same way (strata.serving).
from strata.serving import resolve_caller

__all__ = ["DB", "CallerDep", "EmbedderDep", "get_caller", "get_db", "get_embedder"]


def get_db(request: Request) -> Database:
    return request.app.state.runtime.db


def get_embedder(request: Request) -> Embedder:
    return request.app.state.runtime.embedder


def get_caller(request: Request) -> Caller:
    runtime = request.app.state.runtime
    return resolve_caller(runtime.db, runtime.settings, request.scope,
                          request.headers.get("authorization"), surface="http")


DB = Annotated[Database, Depends(get_db)]
EmbedderDep = Annotated[Embedder, Depends(get_embedder)]
CallerDep = Annotated[Caller, Depends(get_caller)]
