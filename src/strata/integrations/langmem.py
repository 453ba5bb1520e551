"""LangMem's memory tools over strata (``pip install "strata[langmem]"``).

LangMem's ``create_manage_memory_tool`` and ``create_search_memory_tool`` work over
:class:`~strata.integrations.langgraph.StrataStore` unchanged: they write
``{"content": ...}`` under a fresh UUID key, update and delete by that key, and search with a
query, and the store maps each to strata (module :mod:`strata.integrations.langgraph`).
Memories strata extracted itself (``remember_conversation``, the API's ingest) appear to
them as ``{"content": ...}`` keyed by the memory's id, so the agent can update or delete
those too. :func:`memory_tools` builds the pair bound to a store, for an agent that is not
given one by its graph::

    from strata.integrations.langmem import memory_tools

    manage, search = memory_tools(StrataStore(Client()), namespace=("memories", "{langgraph_user_id}"))
    agent = create_react_agent(model, [manage, search], store=store)

What strata does behind them: a memory the agent creates that contradicts one held
supersedes it (the old one drops out of ``search_memory``); a value someone forgot cannot be
created again (the tool's call fails with strata's ``Suppressed``: raised out of the run
by default, handed to the model as the tool's error under ``ToolNode(tools,
handle_tool_errors=True)``); every change is versioned and audited.

Extraction stays strata's: LangMem's own background memory manager
(``create_memory_store_manager``) would extract with the agent's model; to let strata
extract, judge and supersede, send the conversation to ingest with
:func:`strata.integrations.langgraph.remember_conversation` instead.
"""

from __future__ import annotations

from typing import Any

from langgraph.store.base import BaseStore
from langmem import create_manage_memory_tool, create_search_memory_tool

__all__ = ["memory_tools"]


def memory_tools(store: BaseStore | None = None, *,
                 namespace: tuple[str, ...] | str = ("memories", "{langgraph_user_id}"),
                 manage: dict[str, Any] | None = None,
                 search: dict[str, Any] | None = None) -> list[Any]:
    """LangMem's ``manage_memory`` and ``search_memory`` tools over ``store`` (a
    ``StrataStore``; None: the store of the graph the tools run in). ``namespace`` may hold
    ``{placeholders}`` filled from the run's ``configurable``; ``manage`` and ``search`` are
    more options of each LangMem constructor (``instructions``, ``actions_permitted``, ...)."""
    return [create_manage_memory_tool(namespace, store=store, **(manage or {})),
            create_search_memory_tool(namespace, store=store, **(search or {}))]
