"""Request-scoped dependencies: the database, the embedder, and the authenticated caller."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request

from strata.auth import Caller, authenticate
from strata.db import Database
from strata.providers import Embedder


def get_db(request: Request) -> Database:
    return request.app.state.runtime.db


def get_embedder(request: Request) -> Embedder:
    return request.app.state.runtime.embedder


def bearer_token(authorization: str | None) -> str | None:
    """The key in an ``Authorization: Bearer <key>`` header (HTTP routes and /mcp alike)."""
    scheme, _, token = (authorization or "").partition(" ")
    return token.strip() if scheme.lower() == "bearer" else None


def get_caller(request: Request) -> Caller:
    token = bearer_token(request.headers.get("authorization"))
    return authenticate(get_db(request), token, surface="http")


DB = Annotated[Database, Depends(get_db)]
EmbedderDep = Annotated[Embedder, Depends(get_embedder)]
CallerDep = Annotated[Caller, Depends(get_caller)]
