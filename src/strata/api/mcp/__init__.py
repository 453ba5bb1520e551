"""strata as an MCP server: the tools an agent calls (``tools``) and their Streamable HTTP
transport at ``/mcp`` (``transport``).

``tools`` imports no part of the ``mcp`` package; ``transport`` does, and is imported only by an
app that serves ``/mcp`` (the package costs over a second at cold start).

Neither imports :mod:`strata.api`: ``strata.api.app`` mounts ``transport`` on the app it builds,
and what both sides need (``Runtime``, the caller's resolution, the error contract) lives below
both, in :mod:`strata.api.serving`.
"""
