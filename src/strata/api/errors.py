"""The one place core errors and request-parsing errors become HTTP responses.

Bodies are always ``{"error": {"code", "message", "field"?}}``; nothing else, never a trace.
"""

from __future__ import annotations

import logging

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import Match

from strata.foundation.errors import StrataError
from strata.providers.clients import ModelCallFailed

# The contract itself (the body, each core error's status, a field's name) is shared with the
# MCP server, which imports nothing of strata.api: it lives in strata.api.serving.
from strata.api.serving import error_answer, error_body, field_name

__all__ = ["NeverLeak", "install"]

log = logging.getLogger(__name__)


async def _strata_error(request: Request, exc: StrataError) -> JSONResponse:
    status, body, headers = error_answer(exc)
    return JSONResponse(body, status, headers=headers)


async def _validation_error(request: Request, exc: RequestValidationError) -> JSONResponse:
    errors = exc.errors()
    first = errors[0] if errors else {"loc": (), "msg": "invalid request", "type": ""}
    if first.get("type") == "json_invalid":
        return JSONResponse(error_body("invalid_json", "request body is not valid JSON"), 400)
    field = field_name(first.get("loc", ()))
    message = first.get("msg", "invalid value")
    if first.get("type") == "missing" and first.get("loc") == ("body",):
        message, field = "a JSON body is required", None
    return JSONResponse(error_body("invalid_input", message, field), 422)


async def _http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
    if exc.status_code == 400:
        # FastAPI raises a bare 400 when a JSON body cannot be decoded at all (not UTF-8,
        # nested too deep): to the caller that is invalid JSON like any other.
        return JSONResponse(error_body("invalid_json", "request body is not valid JSON"), 400)
    code = {404: "not_found", 405: "method_not_allowed"}.get(exc.status_code, "http_error")
    headers = exc.headers
    if exc.status_code == 405:
        headers = {**(headers or {}), "Allow": _allowed_methods(request)}
    return JSONResponse(error_body(code, str(exc.detail)), exc.status_code, headers=headers)


def _allowed_methods(request: Request) -> str:
    """Every method the path answers. FastAPI makes one route per method, and Starlette's 405
    names only the methods of the first route whose path matched (``GET`` of
    ``/v1/grants``, not its ``POST``)."""
    from strata.api.openapi import flat_routes

    methods: set[str] = set()
    for route in flat_routes(request.app.router.routes):
        if getattr(route, "methods", None) and route.matches(request.scope)[0] != Match.NONE:
            methods |= route.methods
    return ", ".join(sorted(methods))


class NeverLeak:
    """Outermost ASGI guard: an unexpected exception becomes the JSON 500 body and stops here.

    Starlette's own handler for ``Exception`` answers and then re-raises, which under Mangum
    turns into a plain-text 500; this guard makes the answer the same on every runtime.
    Only Starlette's CORS middleware (strata.api.cors, when origins are configured) wraps
    it, so that this 500 reaches a browser with the CORS headers too.
    """

    def __init__(self, app) -> None:
        self.app = app

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def tracking_send(message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, receive, tracking_send)
        except Exception:
            log.exception("unhandled error", extra={"route": scope.get("path")})
            if started:
                return
            response = JSONResponse(error_body("internal", "internal error"), 500)
            await response(scope, receive, send)


async def _provider_down(request: Request, exc: ModelCallFailed) -> JSONResponse:
    # A model or embedding provider gave no usable answer: the service is degraded, the
    # request was fine. The reason is a short code, never the provider's message.
    return JSONResponse(
        error_body("provider_unavailable", f"a model provider failed ({exc.reason})"), 503
    )


def install(app: FastAPI) -> None:
    app.add_exception_handler(StrataError, _strata_error)
    app.add_exception_handler(ModelCallFailed, _provider_down)
    app.add_exception_handler(RequestValidationError, _validation_error)
    app.add_exception_handler(StarletteHTTPException, _http_error)
    app.add_middleware(NeverLeak)
