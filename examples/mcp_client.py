"""strata's MCP endpoint from Python, with the official MCP SDK: connect over Streamable
HTTP with the API key as a bearer token, list the tools, remember a statement (optional)
and recall.

    export STRATA_URL=http://127.0.0.1:8080 STRATA_KEY=...   # `strata dev` prints these
    python examples/mcp_client.py "which database do I prefer?" --path users.me
    python examples/mcp_client.py "which database?" --remember "I prefer PostgreSQL"

The SDK is the `mcp` package (the server already depends on it). Each key sees only its
tenant and paths; every tool call is audited with surface `mcp`.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys

import httpx2  # the HTTP client the mcp 2.x SDK is built on
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client


async def run(url: str, key: str, query: str, path: str | None, statement: str | None) -> int:
    async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {key}"}, timeout=60) as http:
        async with streamable_http_client(f"{url.rstrip('/')}/mcp", http_client=http) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                tools = await session.list_tools()
                print("tools:", ", ".join(t.name for t in tools.tools))
                if statement:
                    kept = await session.call_tool("remember", {
                        "statement": statement, **({"path": path} if path else {})})
                    print("remembered:", (kept.structured_content or {}).get("summary"))
                found = await session.call_tool("recall", {
                    "query": query, **({"paths": [path]} if path else {})})
                if found.is_error:
                    print("error:", json.dumps(found.structured_content), file=sys.stderr)
                    return 1
                results = found.structured_content["results"]
                for hit in results:
                    print(f"[{hit['id']}] {hit['content']}  (score {hit['score']:.2f})")
                if not results:
                    print("nothing recalled")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("query")
    parser.add_argument("--path", default=None, help="where to remember and recall")
    parser.add_argument("--remember", default=None, metavar="STATEMENT",
                        help="remember this first")
    args = parser.parse_args(argv)
    url, key = os.environ.get("STRATA_URL"), os.environ.get("STRATA_KEY")
    if not url or not key:
        print("set STRATA_URL and STRATA_KEY (`strata dev` prints them)", file=sys.stderr)
        return 2
    return asyncio.run(run(url, key, args.query, args.path, args.remember))


if __name__ == "__main__":
    sys.exit(main())
