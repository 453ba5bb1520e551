"""Memories: direct CRUD, history, restore, forget."""

from strata.memories.history import forget, history, related, restore
from strata.memories.models import (
    CreateRequest,
    HistoryEntry,
    Memory,
    MemoryIn,
    MemoryPatch,
    WriteResult,
)
from strata.memories.store import (
    create_memories,
    delete_memory,
    delete_path,
    get_memory,
    list_memories,
    update_memory,
)

__all__ = [
    "CreateRequest", "HistoryEntry", "Memory", "MemoryIn", "MemoryPatch", "WriteResult",
    "create_memories", "delete_memory", "delete_path", "forget", "get_memory", "history", "list_memories",
    "related", "restore", "update_memory",
]
