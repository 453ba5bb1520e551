"""Adapters that put strata inside the agent frameworks people already use.

Each module is a thin layer over :mod:`strata.client` and imports its framework only there,
installed with its own extra, so neither the light client nor the server grows:

- :mod:`strata.integrations.langgraph` (``strata[langgraph]``): ``StrataStore``, a LangGraph
  ``BaseStore``, and ``remember_conversation``, a graph node sending each turn to ingest.
- :mod:`strata.integrations.langmem` (``strata[langmem]``): LangMem's memory tools over it.
- :mod:`strata.integrations.openai_agents` (``strata[openai-agents]``): ``memory_tools`` and
  ``RememberTurns`` for the OpenAI Agents SDK.

``docs/integrations.md`` tells how each framework's interface maps onto strata.
"""
