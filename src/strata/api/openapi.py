"""The OpenAPI document the app serves: FastAPI's, completed with the error contract.

FastAPI documents the success answer and a 422 body (``{"detail": [...]}``) that this API never
sends. Every error strata answers is ``{"error": {"code", "message", "field"?, ...}}``
(:mod:`strata.api.errors`), and which ones an operation can answer follows from what the
operation is, so they are derived here, once, from each route rather than listed on each:

- every operation: 429 ``rate_limited`` (the local server's limits, API Gateway's on AWS) and
  503 (``unavailable``: the database; ``provider_unavailable``: a model provider);
- an operation that resolves a caller: 401 (with ``WWW-Authenticate``), 403 and 422, and it
  declares the bearer key as its security requirement;
- one with a body: 400 ``invalid_json`` and 413 ``payload_too_large``; one with a path
  parameter: 404 (nothing the key can see has that id); one that reads ``If-Match``: 412
  ``version_conflict``.

A query or header parameter is never null on the wire (``None`` is its absence), so the
``null`` FastAPI adds to an optional one's schema is dropped: generators would send "null".

What only the core knows (a duplicate is a 409, a forgotten memory a 410, a principal named
in the body a 404, an ingest still running a 202) the route declares with FastAPI's own
``responses=``, naming the status only (:func:`answers`); the error body is filled in here.
tests/test_schemathesis.py holds the server to the result: an undocumented status fails it.

An operation's summary and description come from its route's docstring: the first paragraph
is the summary, the rest the description (tests/test_openapi.py requires both of every
operation, and a description of every property of every schema, so a route or a field added
later cannot go undocumented).

The document describes the whole API, whichever routers the app that serves it includes: on
AWS one function serves /openapi.json for all of them (:func:`install`).
"""

from __future__ import annotations

import copy
import inspect
from collections.abc import Callable, Iterator
from typing import Any, Generic, TypeVar

from fastapi import APIRouter, FastAPI
from pydantic import BaseModel, Field

__all__ = ["DESCRIPTION", "ERROR_SCHEMA", "Items", "Page", "Results", "TAGS", "answers",
           "complete", "flat_routes", "install"]

DESCRIPTION = """\
strata keeps an agent's memories and knows which of them are still true: a memory that stops
being true is superseded, never silently overwritten, and a value corrected, rejected or
forgotten cannot creep back in by repetition.

**Keys.** Every `/v1` operation takes an API key as `Authorization: Bearer <key>` (create one
with `strata keys create`; in Swagger UI, *Authorize*). A key acts for its principal, within
the principal's grants and the key's own ceiling. `/healthz`, `/readyz` and this document
take none.

**Errors** are always `{"error": {"code", "message", "field"?}}` with the status each
operation lists; `field` names the parameter or body field to blame. 429 and some 503s carry
`Retry-After`.

**Lists** are `{"items": [...]}`; a paged one adds `next_cursor`, to pass back as `cursor`
(null on the last page).
"""

# The groups operations are shown in, in this order.
TAGS: list[dict[str, str]] = [
    {"name": "memories", "description": "Create, read, change, delete, restore and forget "
                                        "memories, and read their history and relationships."},
    {"name": "search", "description": "Hybrid retrieval over the memories the key may read."},
    {"name": "ingest", "description": "Send a conversation; strata extracts the memories "
                                      "worth keeping and answers with a receipt."},
    {"name": "review", "description": "Candidates held back for a person's decision: promote, "
                                      "reject or merge them."},
    {"name": "access", "description": "Owner administration within a tenant: principals, "
                                      "their grants on paths, and API keys."},
    {"name": "browse", "description": "Who a key is, and the paths it can read."},
    {"name": "reflect", "description": "Memories made from memories: reflections and "
                                       "consolidations, retired with their evidence."},
    {"name": "rules", "description": "Memory rules: an owner's policy for what is kept under a "
                                     "path (capture, exclusions, inclusions, retention)."},
    {"name": "events", "description": "The feed of changes to memories, in commit order, "
                                      "without their content."},
    {"name": "webhooks", "description": "Signed deliveries of the event feed to an owner's "
                                        "endpoint, with retries, a log and replay."},
    {"name": "audit", "description": "The tenant's append-only, hash-chained audit log, and "
                                     "its verification."},
    {"name": "health", "description": "Liveness and readiness, without a key."},
]

ERROR = "Error"
BEARER = "bearer"

# The body of every error answer (strata.api.serving.error_body): nothing but "error", which holds
# the code, the message, the field when one is to blame, and a code's own details
# (current_version, tombstone_id, checks, ...).
ERROR_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["error"],
    "additionalProperties": False,
    "properties": {
        "error": {
            "type": "object",
            "required": ["code", "message"],
            "properties": {
                "code": {"type": "string", "description": (
                    "A stable, machine-readable code (`not_found`, `invalid_input`, ...).")},
                "message": {"type": "string", "description": (
                    "What went wrong, for a person to read; never the request's content.")},
                "field": {"type": "string", "description": (
                    "The parameter or body field to blame, if one is (`memories[2].path`).")},
            },
            "description": "The error; some codes add their own details (`current_version`, "
                           "`tombstone_id`, `checks`, ...).",
        },
    },
    "examples": [
        {"error": {"code": "invalid_input", "message": "Input should be 'fact', 'preference', "
                   "...", "field": "memories[0].kind"}},
        {"error": {"code": "version_conflict",
                   "message": "expected version 3, current version is 4",
                   "field": "expected_version", "current_version": 4}},
    ],
}

T = TypeVar("T")


# The envelopes list answers come in, typed so the document says what is inside (and a client,
# or schemathesis following an id from one answer to the next request, can read it).
class Items(BaseModel, Generic[T]):
    items: list[T] = Field(description="Every item, in the order the operation states.")


class Page(BaseModel, Generic[T]):
    items: list[T] = Field(description="This page's items, in order.")
    next_cursor: str | None = Field(description=(
        "Pass as `cursor` to get the next page; null when this is the last one."))


class Results(BaseModel, Generic[T]):
    results: list[T] = Field(description="The results, in the order the operation states.")


_SECONDS = {"type": "integer", "minimum": 0}
RETRY_AFTER = {"description": "Seconds to wait before retrying.", "schema": _SECONDS}

DESCRIPTIONS: dict[int, str] = {
    400: "The body is not valid JSON (invalid_json).",
    401: "No key, or one that is unknown, revoked or expired (unauthenticated).",
    403: "The key may not do this: no grant on the path, a read-only key, not an owner "
         "(forbidden).",
    404: "Nothing the key can see has this id (not_found).",
    409: "The request conflicts with what is stored: a duplicate, a tombstoned value, a state "
         "that does not allow it, concurrent writes (conflict, suppressed).",
    410: "The memory was forgotten: its content is erased (gone).",
    412: "If-Match or expected_version is not the current version (version_conflict).",
    413: "The body is larger than the server takes (payload_too_large): 6 MB by default "
         "(STRATA_MAX_BODY_BYTES).",
    422: "A parameter or field is invalid (invalid_input); `field` names it.",
    429: "Too many requests (rate_limited): retry after Retry-After seconds.",
    503: "The database is unavailable (unavailable) or a model provider failed "
         "(provider_unavailable): retry later, after Retry-After seconds when it is given.",
}

HEADERS: dict[int, dict[str, Any]] = {
    401: {"WWW-Authenticate": {"description": "Bearer", "required": True,
                               "schema": {"type": "string"}}},
    429: {"Retry-After": {**RETRY_AFTER, "required": True}},
    503: {"Retry-After": RETRY_AFTER},
}


def answers(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """A route's own error answers, for FastAPI's ``responses=``: the description here, the
    error body filled in by :func:`complete`."""
    return {status: {"description": DESCRIPTIONS[status]} for status in statuses}


def install(app: FastAPI, documented: Callable[[], list[APIRouter]] | None = None) -> None:
    """Make ``app.openapi()`` (what /openapi.json serves) the completed document of the
    routers ``documented`` returns, or of the app's own routes without it. A Lambda function
    serves only its own routers, but the API it is part of has them all: its document must
    too. Built on first request, so an app that never serves it never pays for it (the
    routers it does not serve are imported then)."""
    build = app.openapi
    completed: dict[str, Any] | None = None

    def openapi() -> dict[str, Any]:
        nonlocal completed
        if completed is None:
            spec, routes = build, app.routes
            if documented is not None:
                source = FastAPI(title=app.title, version=app.version,
                                 description=app.description, openapi_tags=app.openapi_tags,
                                 openapi_url=None, docs_url=None, redoc_url=None)
                for router in documented():
                    source.include_router(router)
                spec, routes = source.openapi, source.routes
            completed = complete(copy.deepcopy(spec()), routes)
            app.openapi_schema = completed
        return completed

    app.openapi = openapi  # FastAPI's documented way to customise the document


def complete(spec: dict[str, Any], routes: list[Any]) -> dict[str, Any]:
    components = spec.setdefault("components", {})
    schemas = components.setdefault("schemas", {})
    schemas[ERROR] = ERROR_SCHEMA
    components.setdefault("securitySchemes", {})[BEARER] = {
        "type": "http", "scheme": "bearer",
        "description": "An API key (`strata keys create`), as `Authorization: Bearer <key>`.",
    }
    for route, operation in _operations(spec, routes):
        _summary_from_docstring(route, operation)
        for parameter in operation.get("parameters", []):
            _not_null(parameter.get("schema", {}))
        responses = operation.setdefault("responses", {})
        authenticated = _resolves_caller(route.dependant)
        if authenticated:
            operation["security"] = [{BEARER: []}]
        for status in _statuses(route, authenticated):
            responses.setdefault(str(status), {"description": DESCRIPTIONS[status]})
        for status, response in responses.items():
            if status[0] in "45":
                _error_response(int(status), response)
    # FastAPI's validation shapes are no longer referenced: the 422 above is the error body.
    for unused in ("HTTPValidationError", "ValidationError"):
        schemas.pop(unused, None)
    return spec


def flat_routes(routes: list[Any]) -> Iterator[Any]:
    """Every route of an app, those of included routers too: FastAPI 0.16x keeps an included
    router as one entry of ``app.routes`` and walks it with ``iter_route_contexts``; earlier
    releases copy its routes into the list."""
    from fastapi import routing

    walk = getattr(routing, "iter_route_contexts", None)
    yield from walk(routes) if walk is not None else routes


def _operations(spec: dict[str, Any], routes: list[Any]) -> Iterator[tuple[Any, dict]]:
    from fastapi.routing import APIRoute

    paths = spec.get("paths", {})
    for route in flat_routes(routes):
        if not isinstance(getattr(route, "original_route", route), APIRoute) \
                or not route.include_in_schema:
            continue
        for method in route.methods:
            operation = paths.get(route.path_format, {}).get(method.lower())
            if operation is not None:
                yield route, operation


def _statuses(route: Any, authenticated: bool) -> list[int]:
    statuses = [429, 503]
    if authenticated:
        statuses += [401, 403, 422]
    if route.body_field is not None:
        statuses += [400, 413, 422]
    if route.dependant.path_params:
        statuses += [404, 422]
    if any(p.alias.lower() == "if-match" for p in _all(route.dependant, "header_params")):
        statuses.append(412)
    return sorted(set(statuses))


def _summary_from_docstring(route: Any, operation: dict[str, Any]) -> None:
    """The docstring's first paragraph as the summary, the rest as the description, where the
    route sets neither itself (FastAPI would show the function's name, and the whole
    docstring)."""
    if route.summary is not None or route.description != inspect.cleandoc(
            route.endpoint.__doc__ or "").split("\f")[0]:
        return
    first, _, rest = route.description.partition("\n\n")
    if first:
        operation["summary"] = " ".join(first.split())
        operation["description"] = rest.strip()
        if not operation["description"]:
            del operation["description"]


def _not_null(schema: dict[str, Any]) -> None:
    branches = schema.get("anyOf")
    if not branches or {"type": "null"} not in branches:
        return
    rest = [b for b in branches if b != {"type": "null"}]
    del schema["anyOf"]
    if len(rest) == 1:
        schema.update({k: v for k, v in rest[0].items() if k not in schema})
    else:
        schema["anyOf"] = rest


def _error_response(status: int, response: dict[str, Any]) -> None:
    # Replaces FastAPI's 422 body ({"detail": [...]}) too: this API never sends it.
    body = {"$ref": f"#/components/schemas/{ERROR}"}
    response["content"] = {"application/json": {"schema": body}}
    if status in HEADERS:
        response.setdefault("headers", {}).update(HEADERS[status])


def _resolves_caller(dependant: Any) -> bool:
    from strata.api.deps import get_caller

    return any(d.call is get_caller for d in _dependants(dependant))


def _dependants(dependant: Any) -> Iterator[Any]:
    yield dependant
    for sub in dependant.dependencies:
        yield from _dependants(sub)


def _all(dependant: Any, kind: str) -> Iterator[Any]:
    for d in _dependants(dependant):
        yield from getattr(d, kind)
