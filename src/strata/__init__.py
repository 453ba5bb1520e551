"""strata: a memory engine for AI agents that knows which of its memories are still true.

One package per capability, standing in floors that import only downwards: ``foundation``,
``db``, ``providers`` and ``audit``, ``auth``, ``rules``, ``write`` (the one write path),
``memories`` and ``events``, ``ingest``, ``review``, ``reflection`` and ``maintenance``,
``search``, then the edges: ``api`` (HTTP and MCP), ``client``, ``cli`` and
``integrations``. docs/reference/layout.md says what each is for; tests/test_layers.py holds
the floors. The public import paths are ``strata.client`` and ``strata.integrations``.
"""

__version__ = "0.1.0"
