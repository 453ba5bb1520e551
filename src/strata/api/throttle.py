"""The local server's rate limits as ASGI middleware (the limits themselves: strata.api.ratelimit).

Every HTTP request is checked before routing, by its source address (the ASGI client:
uvicorn takes it from ``X-Forwarded-For`` only when the peer is a trusted proxy, by default
loopback) and its bearer token; a refusal is the API's error body with 429 and
``Retry-After``. Liveness and readiness are exempt from the failed-authentication budget.
Each 401 the app answers counts as a failed authentication, and so does a
403 from /mcp, which refuses a missing or wrong key with 403 rather than 401 (a 401 sends MCP
clients looking for OAuth: strata.api.mcp.transport) and answers no other 403 itself.
Not installed on AWS, where API Gateway throttles (template.yaml).
"""

from __future__ import annotations

from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from strata.api.authorizer import bearer_token
from strata.api.ratelimit import RateLimiter
from strata.api.serving import error_body

__all__ = ["RateLimits", "install"]


class RateLimits:
    def __init__(self, app: ASGIApp, limiter: RateLimiter) -> None:
        self.app = app
        self.limiter = limiter

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        address = (scope.get("client") or ("unknown",))[0]
        authorization = next((v.decode("latin-1") for k, v in scope["headers"]
                              if k == b"authorization"), None)
        refusal = self.limiter.admit(address, bearer_token(authorization),
                                     probe=scope.get("path") in PROBE_PATHS)
        if refusal is not None:
            response = JSONResponse(error_body("rate_limited", refusal.message), 429,
                                    headers={"Retry-After": str(refusal.retry_after)})
            await response(scope, receive, send)
            return

        async def counting_send(message: Message) -> None:
            if message["type"] == "http.response.start" and _refused_key(scope, message["status"]):
                self.limiter.failed_authentication(address)
            await send(message)

        await self.app(scope, receive, counting_send)


MCP_PATH = "/mcp"  # strata.api.mcp.transport.PATH, named here without importing mcp
PROBE_PATHS = frozenset({"/healthz", "/readyz"})  # liveness and readiness: no key, no auth budget


def _refused_key(scope: Scope, status: int) -> bool:
    return status == 401 or (status == 403 and scope.get("path") == MCP_PATH)


def install(app, limiter: RateLimiter) -> None:
    app.state.rate_limiter = limiter
    app.add_middleware(RateLimits, limiter=limiter)
