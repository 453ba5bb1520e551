"""Memories: direct CRUD, history, restore, forget.

The store and history (psycopg) load on first use of their names here, so that importing
``strata.memories.models`` (the wire shapes, which the Python client shares) does not. The
history function is ``strata.memories.history.history``: a package attribute of that name
would be the function or the submodule depending on which was imported first.
"""

from __future__ import annotations

import importlib
from typing import Any

from strata.memories.models import (
    CreateRequest,
    HistoryEntry,
    Memory,
    MemoryIn,
    MemoryPatch,
    WriteResult,
)

_LAZY = {
    "forget": "history", "related": "history", "restore": "history",
    "create_memories": "store", "delete_memory": "store", "delete_path": "store",
    "get_memory": "store", "list_memories": "store", "update_memory": "store",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(f"strata.memories.{_LAZY[name]}"), name)
    raise AttributeError(f"module 'strata.memories' has no attribute {name!r}")


__all__ = [
    "CreateRequest", "HistoryEntry", "Memory", "MemoryIn", "MemoryPatch", "WriteResult",
    "create_memories", "delete_memory", "delete_path", "forget", "get_memory",
    "list_memories", "related", "restore", "update_memory",
]
