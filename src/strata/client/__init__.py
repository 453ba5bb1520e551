"""The Python client for strata's HTTP API (sync and async, over httpx).

::

    from strata.client import Client

    with Client() as strata:                       # STRATA_URL / STRATA_KEY, or a profile
        kept = strata.remember("I prefer PostgreSQL", path="users.alice")
        print(kept.summary, [(i.outcome, i.content) for i in kept.items])
        for hit in strata.recall("which database?", paths=["users.alice"]):
            print(hit.score, hit.content)

Requests are validated with the server's own pydantic models before they are sent; answers
come back as those models (``Memory``, ``SearchResult``, ``Receipt``, ...), and ``remember``
answers ``Remembered``, as MCP ``remember`` and ``strata remember`` do. Errors are typed
(:mod:`strata.client.errors`) and carry the server's ``code``, ``message`` and ``field``.
429 and 503 are retried for every request, other 5xx and lost answers only for requests safe
to repeat (reads, search, forget, and ingest, which always carries an idempotency key), with
exponential backoff and jitter, honouring ``Retry-After``.

The client needs httpx and pydantic only: ``pip install .`` installs it without the server
(docs/guides/python.md). The models are the server's shape modules, which import nothing else;
they load on first use (building their pydantic classes takes about 0.2 s, which a CLI
command that fails early need not pay), and are importable from here too
(``from strata.client import Memory``), which loads them.
"""

from __future__ import annotations

from typing import Any

from strata.client._calls import Backoff
from strata.client._client import AsyncClient, Client
from strata.client.config import ClientConfig, resolve
from strata.client.errors import (
    ApiError,
    ConfigError,
    Conflict,
    Forbidden,
    Gone,
    InvalidInput,
    NotFound,
    ProviderUnavailable,
    RateLimited,
    ServerError,
    Suppressed,
    Unauthenticated,
    Unreachable,
    VersionConflict,
)

_MODELS = frozenset({
    "CreateRequest", "Deleted", "Forgotten", "Health", "HistoryEntry", "IngestRequest",
    "ItemOutcome", "Memory", "MemoryIn", "MemoryPatch", "Message", "NotKept", "Page", "PathCount",
    "Receipt",
    "Relationship", "Remembered", "RememberedItem", "ReviewItem", "SearchRequest",
    "SearchResult", "WriteResult",
})


def __getattr__(name: str) -> Any:
    if name in _MODELS:
        from strata.client import models

        return getattr(models, name)
    raise AttributeError(f"module 'strata.client' has no attribute {name!r}")


__all__ = [
    "ApiError", "AsyncClient", "Backoff", "Client", "ClientConfig", "ConfigError", "Conflict",
    "Forbidden", "Gone", "InvalidInput", "NotFound", "ProviderUnavailable", "RateLimited",
    "ServerError", "Suppressed", "Unauthenticated", "Unreachable", "VersionConflict", "resolve",
    *sorted(_MODELS),
]
