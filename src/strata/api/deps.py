"""Request-scoped dependencies: the database, the embedder, and the authenticated caller; and
the query parameters several routes share."""

from __future__ import annotations

import uuid

from collections.abc import AsyncIterator
from typing import Annotated, Any

from fastapi import Depends, Path, Query, Request
from fastapi.concurrency import run_in_threadpool
from pydantic import Field, WithJsonSchema

from strata.auth import Caller
from strata.db import Database
from strata.db.routing import Reads
from strata.foundation.errors import InvalidInput
from strata.foundation.fields import SPACE_CLASS
from strata.providers import Embedder

# Not FastAPI's: the MCP transport resolves its caller the same way (strata.api.serving).
from strata.api.serving import resolve_caller

__all__ = ["DB", "AuditCursor", "CallerDep", "Cursor", "EmbedderDep", "MemoryId", "ReadsDep",
           "csv_pattern", "csv_values", "get_caller",
           "get_db", "get_embedder", "get_reads"]


async def _part(request: Request, name: str) -> Any:
    """The runtime's part ``name``. Once resolved it is an attribute read, answered on the
    event loop (a plain ``def`` dependency goes to the thread pool and back, ~0.1 ms a
    request each); resolving it (the schema check, loading a model) may block, and runs in
    the thread pool -- on every request while it fails (the database is down, say)."""
    runtime = request.app.state.runtime
    if name in vars(runtime):  # a cached_property already resolved
        return vars(runtime)[name]
    return await run_in_threadpool(getattr, runtime, name)


async def get_db(request: Request) -> Database:
    return await _part(request, "db")


async def get_embedder(request: Request) -> Embedder:
    return await _part(request, "embedder")


async def get_reads(request: Request) -> Reads:
    return await _part(request, "reads")


# Requests that change nothing although they are not GETs: no read-after-write stamp.
_READS = frozenset({"/v1/search"})


async def get_caller(request: Request) -> AsyncIterator[Caller]:
    # The key's lookup in the thread pool; a read's way out stays on the event loop.
    runtime = request.app.state.runtime
    db = await _part(request, "db")
    caller = await run_in_threadpool(resolve_caller, db, runtime.settings, request.scope,
                                     request.headers.get("authorization"), surface="http")
    yield caller
    # Reached only when the route returned (a refused or failed request raises at the yield):
    # the caller's reads stay on the writer for a while (strata.db.routing).
    if request.method not in ("GET", "HEAD", "OPTIONS") and request.url.path not in _READS:
        reads = await _part(request, "reads")
        await run_in_threadpool(reads.wrote, caller)


DB = Annotated[Database, Depends(get_db)]
EmbedderDep = Annotated[Embedder, Depends(get_embedder)]
ReadsDep = Annotated[Reads, Depends(get_reads)]
CallerDep = Annotated[Caller, Depends(get_caller)]
MemoryId = Annotated[uuid.UUID, Path(description="The memory's id.")]


def csv_values(values: list[str] | None, allowed: tuple[str, ...], field: str) -> list[str] | None:
    """Accept ?kind=a,b and ?kind=a&kind=b; name the field on an unknown value, and on a value
    that names none (``?kind=``, ``?kind=,``): it would otherwise filter by nothing."""
    if not values:
        return None
    out = []
    for raw in values:
        named = [v.strip() for v in raw.split(",") if v.strip()]
        if not named:
            raise InvalidInput(f"{field} names no {field}; one of: {', '.join(allowed)}",
                               field=field)
        out += named
    for v in out:
        if v not in allowed:
            raise InvalidInput(f"unknown {field} {v!r}; one of: {', '.join(allowed)}", field=field)
    return out


def csv_pattern(allowed: tuple[str, ...]) -> str:
    """A :func:`csv_values` parameter's value as the schema states it: comma-separated pieces,
    each (less the whitespace strip() removes) empty or one of ``allowed``, at least one not
    empty."""
    blank = f"[{SPACE_CLASS}]*"
    piece = rf"{blank}({'|'.join(allowed)})?{blank}"
    named = rf"{blank}({'|'.join(allowed)}){blank}"
    return rf"^({blank},)*{named}(,{piece})*$"

# A page's cursor, as the page before gave it (``next_cursor``): never empty, so a client that
# sends back a missing one is told so instead of getting the first page again.
# Of the memory and review lists: a position (strata.memories.store.encode_cursor), which no
# pattern can tell from a string of the same letters, so the schema names its format instead
# (tests/test_schemathesis.py draws issued cursors for it); what is checked here only keeps
# what is plainly not one from the decoder.
Cursor = Annotated[Annotated[str, Field(min_length=1, max_length=200, pattern=r"^[A-Za-z0-9_-]+$"),
                             WithJsonSchema({"type": "string", "format": "strata-cursor",
                                             "minLength": 1, "maxLength": 200})]
                   | None, Query(description="The `next_cursor` of the page before.")]
# Of the audit chain: a sequence number, ASCII digits (str.isdigit() would take "²", which
# int() refuses).
AuditCursor = Annotated[Annotated[str, Field(
    min_length=1, max_length=19, pattern=r"^[0-9]+$")] | None, Query(
        description="The `next_cursor` of the page before.")]
