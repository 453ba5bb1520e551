"""strata as an MCP server: the tools an agent calls (``tools``) and their Streamable HTTP
transport at ``/mcp`` (``transport``).

``tools`` imports no part of the ``mcp`` package; ``transport`` does, and is imported only by an
app that serves ``/mcp`` (the package costs over a second at cold start).
"""
