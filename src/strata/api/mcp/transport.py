"""MCP over Streamable HTTP at ``/mcp``: stateless, one JSON answer per POST.

Stateless JSON mode keeps no session between requests, so any process (a uvicorn worker, a
Lambda container) answers any request the same. Under Mangum the lifespan runs once per
invocation, and ``StreamableHTTPSessionManager.run()`` can run only once per instance, so each
lifespan builds a manager of its own; ``/mcp`` is an exact route to a raw ASGI endpoint (a
mount would answer ``POST /mcp`` with a redirect to ``/mcp/``).

The bearer key is checked here, before the MCP layer. A missing or wrong key answers HTTP 403
with a JSON-RPC error, not the 401 every ``/v1`` route answers: to an MCP client a 401 means
"authorize with OAuth" (the MCP authorization spec), and the MCP Inspector, mcp-remote and
Claude Code then look for ``/.well-known/oauth-protected-resource`` and an authorization
server, register a client at ``/register`` and report that failure ("Dynamic Client
Registration rejected (HTTP 404)") instead of a wrong key. strata takes a static API key and
no OAuth, so it refuses without a challenge: the TypeScript SDK stops at a 403 and shows the
body, the Python SDK raises the body's JSON-RPC error. This is also what API Gateway answers a
key its authorizer denies. ``/.well-known/oauth-*`` answer a 404 that says the same.
The resolved caller (surface ``mcp``) rides the request scope to the tool call, which runs the
core in a worker thread.

This module imports nothing of :mod:`strata.api`: ``strata.api.app`` mounts it (:func:`mount`)
on the app it builds, and what both need (the runtime, the caller's resolution, the error
contract) is in :mod:`strata.api.serving`.
"""

from __future__ import annotations

import contextlib
import json
import logging
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

import anyio
import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from starlette.responses import JSONResponse
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from strata import __version__
from strata.api.mcp import tools
from strata.api.serving import Runtime, error_answer, error_body, error_body_for, resolve_caller
from strata.auth import Caller
from strata.foundation.errors import StrataError, Unauthenticated

if TYPE_CHECKING:
    from fastapi import FastAPI

log = logging.getLogger(__name__)

PATH = "/mcp"
CALLER = "strata_caller"  # key in the request scope's state

# Behind API Gateway the Host header is the API's domain, and every request must carry an
# API key anyway (a DNS-rebinding page cannot read or send it), so Host/Origin checks would
# only refuse legitimate custom domains.
SECURITY = TransportSecuritySettings(enable_dns_rebinding_protection=False)

# JSON-RPC leaves -32000..-32099 to the server; the API's own code rides in ``data``.
UNAUTHENTICATED = -32001
NO_OAUTH = ("strata's MCP endpoint takes an API key, not OAuth: send "
            "'Authorization: Bearer <key>'")

TOOL_LIST = [
    types.Tool(
        name=t.name,
        title=t.title,
        description=t.description,
        input_schema=t.input_schema,
        annotations=types.ToolAnnotations(
            title=t.title, read_only_hint=t.read_only, destructive_hint=t.destructive,
            idempotent_hint=t.idempotent, open_world_hint=False,
        ),
    )
    for t in tools.TOOLS.values()
]


def build_server(runtime: Runtime) -> Server:
    async def list_tools(ctx, params) -> types.ListToolsResult:
        return types.ListToolsResult(tools=TOOL_LIST)

    async def call_tool(ctx, params: types.CallToolRequestParams) -> types.CallToolResult:
        caller = getattr(ctx.request.state, CALLER, None) if ctx.request is not None else None
        result, is_error = await anyio.to_thread.run_sync(
            tools.call, runtime, caller, params.name, params.arguments
        )
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=json.dumps(result, ensure_ascii=False))],
            structured_content=result,
            is_error=is_error,
        )

    return Server(
        "strata", version=__version__, instructions=tools.INSTRUCTIONS,
        on_list_tools=list_tools, on_call_tool=call_tool,
    )


class McpEndpoint:
    """The raw ASGI endpoint of ``/mcp`` and the lifespan that runs its session manager."""

    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime
        self.server = build_server(runtime)
        self.manager: StreamableHTTPSessionManager | None = None

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        manager = StreamableHTTPSessionManager(
            app=self.server, stateless=True, json_response=True, security_settings=SECURITY
        )
        async with manager.run():
            self.manager = manager
            try:
                yield
            finally:
                self.manager = None

    def _authenticate(self, scope: Scope, authorization: str | None) -> Caller:
        return resolve_caller(self.runtime.db, self.runtime.settings, scope, authorization,
                              surface="mcp")

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["method"] != "POST":
            # Stateless: no server-initiated stream to GET and no session to DELETE; the
            # transport says 405 is the answer a client expects for both.
            response = JSONResponse(
                error_body("method_not_allowed", "POST JSON-RPC messages to /mcp"), 405,
                headers={"Allow": "POST"},
            )
            await response(scope, receive, send)
            return
        headers = dict(scope.get("headers") or [])
        authorization = headers.get(b"authorization", b"").decode("latin-1")
        try:
            caller = await anyio.to_thread.run_sync(self._authenticate, scope, authorization)
        except Unauthenticated as exc:
            await refused(exc)(scope, receive, send)
            return
        except StrataError as exc:
            status, body, headers = error_answer(exc)
            response = JSONResponse(body, status, headers=headers)
            await response(scope, receive, send)
            return
        if self.manager is None:
            raise RuntimeError("/mcp is served only while the app's lifespan runs")
        # A fresh dict: the caller must never land in state another request could share.
        scope["state"] = {**scope.get("state", {}), CALLER: caller}
        await self.manager.handle_request(scope, receive, send)


def refused(exc: Unauthenticated) -> JSONResponse:
    """A missing or wrong key: 403 with a JSON-RPC error and no ``WWW-Authenticate`` (the
    module's docstring says why not 401). Its ``id`` is null: the body is refused unread."""
    return JSONResponse({"jsonrpc": "2.0", "id": None, "error": {
        "code": UNAUTHENTICATED, "message": f"{exc.message}: {NO_OAUTH}",
        "data": error_body_for(exc)["error"]}}, 403)


async def no_oauth(request: Any) -> JSONResponse:
    """``/.well-known/oauth-*`` and ``openid-configuration``: nothing to discover."""
    return JSONResponse(error_body("not_found", NO_OAUTH), 404)


def mount(app: FastAPI, runtime: Runtime) -> None:
    """Serve ``/mcp`` on ``app``; the session manager runs inside the app's lifespan."""
    endpoint = McpEndpoint(runtime)
    app.router.routes.append(Route(PATH, endpoint=endpoint, include_in_schema=False))
    for document in ("oauth-protected-resource", "oauth-authorization-server",
                     "openid-configuration"):
        for path in (f"/.well-known/{document}", f"/.well-known/{document}/{{rest:path}}"):
            app.router.routes.append(Route(path, endpoint=no_oauth, include_in_schema=False))
    outer = app.router.lifespan_context

    @contextlib.asynccontextmanager
    async def lifespan(app_: Any) -> AsyncIterator[Any]:
        async with outer(app_) as state, endpoint.running():
            yield state

    app.router.lifespan_context = lifespan
