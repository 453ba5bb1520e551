"""Every HTTP request's database work has one budget (strata.db.deadline), as ASGI middleware.

All of a request's database calls together (authentication, the work, the audit entry) may
take ``STRATA_DB_REQUEST_DEADLINE_S``: past it the request answers 503 ``unavailable`` with
``Retry-After``, and the connection it held is cut and discarded by the pool. Time outside
database calls (a slow upload, a model call) spends none of it. /mcp goes through here too:
its tool call runs in a worker thread that inherits the request's context, and so its budget.
"""

from __future__ import annotations

from starlette.types import ASGIApp, Receive, Scope, Send

from strata.db import deadline

__all__ = ["RequestDeadlines", "install"]


class RequestDeadlines:
    def __init__(self, app: ASGIApp, seconds: float) -> None:
        self.app = app
        self.seconds = seconds

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        with deadline.within(self.seconds):
            await self.app(scope, receive, send)


def install(app, seconds: float) -> None:
    app.add_middleware(RequestDeadlines, seconds=seconds)
