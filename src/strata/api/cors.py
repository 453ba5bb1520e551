"""CORS for the local server, for the origins in ``STRATA_CORS_ORIGINS``.

The same policy as the HttpApi's CorsConfiguration in template.yaml, which API Gateway
applies on AWS (tests/test_cors.py holds the two together): the request headers the API
reads, its methods, the response headers a browser script may read, and a preflight answered
204 and cached for 10 minutes. No credentials: keys travel in ``Authorization``, not cookies.
"""

from __future__ import annotations

from starlette.datastructures import Headers
from starlette.middleware.cors import CORSMiddleware
from starlette.responses import JSONResponse, Response

from strata.api.serving import error_body
from strata.foundation.config import Settings

__all__ = ["ALLOW_HEADERS", "ALLOW_METHODS", "EXPOSE_HEADERS", "MAX_AGE", "Cors", "install"]

ALLOW_HEADERS = ["authorization", "content-type", "if-match", "mcp-protocol-version",
                 "mcp-session-id"]
ALLOW_METHODS = ["GET", "POST", "PATCH", "DELETE", "OPTIONS"]
EXPOSE_HEADERS = ["etag", "mcp-session-id", "retry-after"]
MAX_AGE = 600


class Cors(CORSMiddleware):
    """Starlette's CORS middleware, answering a preflight as API Gateway does (204, no body)
    and refusing one with the API's error body instead of plain text."""

    def preflight_response(self, request_headers: Headers) -> Response:
        answer = super().preflight_response(request_headers)
        headers = {k: v for k, v in answer.headers.items()
                   if k not in ("content-length", "content-type")}
        if answer.status_code == 200:
            return Response(status_code=204, headers=headers)
        # Starlette names what failed (origin, method, headers) in its plain-text body.
        reason = answer.body.decode().removeprefix("Disallowed CORS ")
        return JSONResponse(error_body("cors_refused", f"CORS preflight refused: {reason}"),
                            answer.status_code, headers=headers)


def origins(settings: Settings) -> list[str]:
    return [o.strip() for o in settings.cors_origins.split(",") if o.strip()]


def install(app, settings: Settings) -> None:
    app.add_middleware(Cors, allow_origins=origins(settings), allow_methods=ALLOW_METHODS,
                       allow_headers=ALLOW_HEADERS, expose_headers=EXPOSE_HEADERS,
                       max_age=MAX_AGE)
