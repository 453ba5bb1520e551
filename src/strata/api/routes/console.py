"""/console: the web console, a static page over the JSON API (src/strata/console).

The page and its assets carry no data and need no key: the browser signs in by sending the
key it keeps in sessionStorage with every API call, so the console holds exactly the access
that key has through the API's own authorisation. Not part of the API contract, hence out
of the OpenAPI document.
"""

from __future__ import annotations

from functools import cache
from importlib import resources

from fastapi import APIRouter
from fastapi.responses import Response

from strata.foundation.errors import NotFound

router = APIRouter(include_in_schema=False)

# The only files served: a name outside this table is a 404, so no path reaches the disk.
ASSETS = {
    "index.html": "text/html; charset=utf-8",
    "console.js": "text/javascript; charset=utf-8",
    "console.css": "text/css; charset=utf-8",
}

# Everything from this origin, nothing inline, nothing from elsewhere: a memory's content
# that slipped into the DOM as markup could still not run a script or call out.
HEADERS = {
    "Content-Security-Policy": (
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
        "connect-src 'self'; form-action 'none'; base-uri 'none'; frame-ancestors 'none'"),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-cache",
}


@cache
def _read(name: str) -> bytes:
    return resources.files("strata.console").joinpath(name).read_bytes()


def _asset(name: str) -> Response:
    media_type = ASSETS.get(name)
    if media_type is None:
        raise NotFound("console asset", name)
    return Response(_read(name), media_type=media_type, headers=HEADERS)


@router.get("/console")
def page() -> Response:
    return _asset("index.html")


@router.get("/console/{name}")
def asset(name: str) -> Response:
    return _asset(name)
