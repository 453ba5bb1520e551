"""The sync and async clients: thin typed methods over ``_calls``, one retry loop each."""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import AsyncIterator, Iterator, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal

import httpx

from strata import __version__
from strata.client import _calls
from strata.client._calls import Backoff, Call
from strata.client.config import ClientConfig, resolve
from strata.client.errors import ApiError, Unreachable

if TYPE_CHECKING:
    from strata.client.models import (
        Deleted, Event, Forgotten, Health, HistoryEntry, Memory, MemoryIn, Page, PathCount, Receipt,
        Relationship, Remembered, ReviewItem, Rule, RuleDeleted, RuleVersion, SearchResult,
        WriteResult,
    )

log = logging.getLogger("strata.client")

Id = uuid.UUID | str
# How long an ingest with wait=True may take on the server (extraction, embedding, judging).
WAIT_TIMEOUT = 120.0
_TERMINAL = frozenset({"wrote", "meaningful_no_write", "llm_failed", "embed_failed",
                       "db_write_failed"})


class _Base:
    def __init__(
        self, url: str | None = None, key: str | None = None, *, profile: str | None = None,
        timeout: float | None = None, max_retries: int | None = None,
        backoff: Backoff | None = None, config: ClientConfig | None = None,
    ) -> None:
        self.config = config or resolve(url, key, profile, timeout=timeout, max_retries=max_retries)
        self.backoff = backoff or Backoff()

    def _http_options(self) -> dict[str, Any]:
        headers = {"User-Agent": f"strata-client/{__version__}", "Accept": "application/json"}
        if self.config.key:
            headers["Authorization"] = f"Bearer {self.config.key}"
        return {
            "base_url": self.config.url, "headers": headers,
            "timeout": httpx.Timeout(self.config.timeout, connect=min(self.config.timeout, 10.0)),
        }

    def _request_options(self, call: Call) -> dict[str, Any]:
        opts: dict[str, Any] = {"params": call.params, "headers": call.headers}
        if call.json is not None:
            opts["json"] = call.json
        if call.timeout is not None:
            opts["timeout"] = httpx.Timeout(call.timeout, connect=min(self.config.timeout, 10.0))
        return opts

    def _retry_transport(self, call: Call, exc: httpx.TransportError, attempt: int) -> float | None:
        """Seconds to wait before another attempt after a transport failure, or None to stop.
        A connection never made is always safe to retry; a lost answer only if the request
        is safe to repeat."""
        not_sent = isinstance(exc, (httpx.ConnectError, httpx.ConnectTimeout))
        if attempt >= self.config.max_retries or not (not_sent or call.idempotent):
            return None
        return self.backoff.delay(attempt, None)

    def _retry_status(self, call: Call, err: ApiError, attempt: int) -> float | None:
        if attempt >= self.config.max_retries or not _calls.retryable_status(err.status or 0, call):
            return None
        return self.backoff.delay(attempt, err.retry_after)

    def _wait(self, wait: bool) -> float | None:
        """The timeout of an ingest that waits for the pipeline (None: the client's own)."""
        return max(self.config.timeout, WAIT_TIMEOUT) if wait else None

    def _unreachable(self, exc: httpx.TransportError) -> Unreachable:
        what = "timed out" if isinstance(exc, httpx.TimeoutException) else (
            "connection failed" if isinstance(exc, httpx.ConnectError) else "connection lost")
        return Unreachable(f"cannot reach strata at {self.config.url}: {what}")


def _log_retry(call: Call, why: str, wait: float, attempt: int) -> None:
    # Method and route only: never a body (memory content, queries) or a header (the key).
    log.info("strata client: %s %s: %s; retry %d in %.2fs", call.method, call.path.split("?")[0],
             why, attempt + 1, wait)


class Client(_Base):
    """A synchronous strata client.

    ``Client()`` reads ``STRATA_URL`` / ``STRATA_KEY`` or a profile (see
    :mod:`strata.client.config`). ``client.memories``, ``client.review`` and ``client.rules`` group those
    routes; ``remember`` and ``recall`` are the two calls an agent needs.
    """

    def __init__(self, url: str | None = None, key: str | None = None, *,
                 http: httpx.Client | None = None, transport: httpx.BaseTransport | None = None,
                 **options: Any) -> None:
        super().__init__(url, key, **options)
        self._http = http or httpx.Client(transport=transport, **self._http_options())
        self.memories = Memories(self)
        self.review = Review(self)
        self.rules = Rules(self)

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _send(self, call: Call) -> Any:
        attempt = 0
        while True:
            try:
                resp = self._http.request(call.method, call.path, **self._request_options(call))
            except httpx.TransportError as exc:
                wait = self._retry_transport(call, exc, attempt)
                if wait is None:
                    raise self._unreachable(exc) from None
                _log_retry(call, type(exc).__name__, wait, attempt)
            else:
                result = _calls.outcome(call, resp.status_code, resp.headers, resp.content)
                if not isinstance(result, ApiError):
                    return result
                wait = self._retry_status(call, result, attempt)
                if wait is None:
                    raise result
                _log_retry(call, f"HTTP {resp.status_code}", wait, attempt)
            time.sleep(wait)
            attempt += 1

    # -- the two calls an agent needs ---------------------------------------------------

    def remember(self, content: str | Sequence[Any], path: str | None = None, *,
                 as_is: bool = False, role: str = "user", wait: bool = True,
                 idempotency_key: str | None = None, kind: str | None = None,
                 **fields: Any) -> "Remembered":
        """Remember a statement, or a list of messages, in ``path`` (the key's default path
        if None), and answer what was kept: the same ``Remembered`` as MCP ``remember`` and
        ``strata remember``.

        By default it is extracted (a statement as one ``role`` message) and the call waits
        for that: ``items`` is each memory written or refused (``outcome``, ``memory_id``,
        ``content`` read back with this key, ``reason``), ``not_kept`` each clause that was
        not kept and why (``question``, ``secret`` — whose ``text`` is withheld —, ...),
        ``summary`` one line of it. Keeping nothing is an answer, not an error.

        ``wait=False`` answers at once: ``status`` ``queued`` and the ``receipt_id``
        (:meth:`wait_for` reads the receipt when it is done).

        ``as_is=True`` stores the statement verbatim as one memory through the write gate
        (``POST /v1/memories``), with ``kind`` and the other ``MemoryIn`` fields (``slot``,
        ``value``, ``tags``, ``meta``, ``importance``, ``valid_from``, ``context``): one item,
        ``created``, ``reinforced`` (``memory_id`` is the memory that already held it),
        ``superseded_existing``, ``candidate``, or ``blocked`` (a forgotten or rejected value,
        see ``tombstone_id``, or a memory rule). A secret is refused: ``InvalidInput`` naming
        ``content``."""
        call = _calls.remember(content, path, as_is=as_is, role=role, wait=wait,
                               idempotency_key=idempotency_key, timeout=self._wait(wait),
                               fields={"kind": kind, **fields})
        try:
            written = self._send(call)
        except ApiError as exc:
            if as_is:
                _calls.one_item(exc)
            raise
        memories = {}
        for memory_id in _calls.to_read(written):
            try:
                memories[memory_id] = self._send(_calls.get(memory_id))
            except ApiError:
                pass  # gone or out of reach since it was written: the id says enough
        return _calls.remembered(written, path, memories)

    def recall(self, query: str, *, paths: Sequence[str] | None = None, limit: int = 10,
               **options: Any) -> "list[SearchResult]":
        """Search what is true now (active memories); options as for :meth:`search`."""
        return self.search(query, paths=paths, limit=limit, **options)

    # -- routes ---------------------------------------------------------------------------

    def health(self) -> "Health":
        return self._send(_calls.health())

    def ingest(self, messages: Sequence[Any], path: str | None = None, *, wait: bool = False,
               idempotency_key: str | None = None) -> "Receipt":
        return self._send(_calls.ingest(
            messages, path=path, wait=wait, idempotency_key=idempotency_key,
            timeout=self._wait(wait)))

    def receipt(self, receipt_id: Id) -> "Receipt":
        return self._send(_calls.receipt(receipt_id))

    def events(self, *, after: str | None = None, path: str | None = None,
               types: Sequence[str] | None = None, limit: int = 100) -> "Page[Event]":
        """``GET /v1/events``: changes after the cursor ``after``, in commit order; pass the
        page's ``next_cursor`` as ``after`` to read on."""
        return self._send(_calls.events(after=after, path=path, types=types, limit=limit))

    def paths(self, path: str | None = None, *, cursor: str | None = None,
              limit: int = 500) -> "Page[PathCount]":
        """One page of the paths holding memories this key can read (under ``path`` when
        given), in path order, each with its number of memories per status."""
        return self._send(_calls.paths(path=path, cursor=cursor, limit=limit))

    def wait_for(self, receipt_id: Id, *, timeout: float = WAIT_TIMEOUT,
                 interval: float = 0.25) -> "Receipt":
        """Poll a receipt until the pipeline finished (or ``timeout`` passed: then the last)."""
        deadline = time.monotonic() + timeout
        while True:
            rec = self.receipt(receipt_id)
            if rec.status in _TERMINAL or time.monotonic() >= deadline:
                return rec
            time.sleep(interval)

    def search(
        self, query: str, *, paths: Sequence[str] | None = None,
        kinds: Sequence[str] | None = None, tags: Sequence[str] | None = None,
        meta: dict[str, Any] | None = None, limit: int | None = None,
        valid_at: datetime | None = None,
        include: Sequence[Literal["candidates", "history"]] | None = None,
        mode: Literal["hybrid", "vector", "keyword"] | None = None,
        expand: bool | None = None, explain: bool | None = None,
        min_score: float | None = None,
    ) -> "list[SearchResult]":
        return self._send(_calls.search(
            query, paths=paths, kinds=kinds, tags=tags, meta=meta, limit=limit,
            valid_at=valid_at, include=include, mode=mode, expand=expand, explain=explain,
            min_score=min_score))


class Memories:
    """``/v1/memories``."""

    def __init__(self, client: Client) -> None:
        self._c = client

    def create(self, memories: "Sequence[MemoryIn | dict[str, Any]]", *,
               on_conflict: Literal["error", "replace", "ignore"] = "error") -> "list[WriteResult]":
        return self._c._send(_calls.create(memories, on_conflict))

    def add(self, content: str, path: str | None = None, **fields: Any) -> "WriteResult":
        """Create one memory (``kind``, ``slot``, ``tags``, ... as for ``MemoryIn``)."""
        return self.create([{"content": content, "path": path, **fields}])[0]

    def get(self, memory_id: Id) -> "Memory":
        return self._c._send(_calls.get(memory_id))

    def list(self, *, path: str | None = None, kind: str | Sequence[str] | None = None,
             status: str | Sequence[str] | None = None, tags: str | Sequence[str] | None = None,
             valid_at: datetime | None = None, cursor: str | None = None,
             limit: int = 50) -> "Page[Memory]":
        """One page; ``status="all"`` for every status (default: active)."""
        return self._c._send(_calls.list_(path=path, kind=kind, status=status, tags=tags,
                                          valid_at=valid_at, cursor=cursor, limit=limit))

    def iter(self, **filters: Any) -> "Iterator[Memory]":
        """Every memory the filters select, page after page."""
        cursor = None
        while True:
            page = self.list(cursor=cursor, **filters)
            yield from page.items
            if not page.next_cursor:
                return
            cursor = page.next_cursor

    def update(self, memory_id: Id, expected_version: int, **changes: Any) -> "Memory":
        """Compare-and-set: raises ``VersionConflict`` when the memory moved on."""
        return self._c._send(_calls.update(memory_id, expected_version, changes))

    def delete(self, memory_id: Id) -> "Deleted":
        return self._c._send(_calls.delete(memory_id))

    def history(self, memory_id: Id) -> "list[HistoryEntry]":
        return self._c._send(_calls.history(memory_id))

    def restore(self, memory_id: Id, version: int | None = None) -> "Memory":
        return self._c._send(_calls.restore(memory_id, version))

    def forget(self, memory_id: Id) -> "Forgotten":
        return self._c._send(_calls.forget(memory_id))

    def related(self, memory_id: Id) -> "list[Relationship]":
        return self._c._send(_calls.related(memory_id))


class Review:
    """``/v1/review``: candidates held back for a person's decision."""

    def __init__(self, client: Client) -> None:
        self._c = client

    def list(self, *, path: str | None = None, cursor: str | None = None,
             limit: int = 50) -> "Page[ReviewItem]":
        return self._c._send(_calls.review_list(path=path, cursor=cursor, limit=limit))

    def promote(self, memory_id: Id) -> "Memory":
        return self._c._send(_calls.promote(memory_id))

    def reject(self, memory_id: Id, *, suppress: bool = False,
               until: datetime | None = None) -> "Memory":
        return self._c._send(_calls.reject(memory_id, suppress, until))

    def merge(self, memory_id: Id, into: Id) -> "Memory":
        return self._c._send(_calls.merge(memory_id, into))


class Rules:
    """``/v1/rules``: memory rules, the owner's policy for what is kept under a path."""

    def __init__(self, client: Client) -> None:
        self._c = client

    def set(self, path: str, **fields: Any) -> "Rule":
        return self._c._send(_calls.rule_set(path, **fields))

    def list(self, *, path: str | None = None) -> "list[Rule]":
        return self._c._send(_calls.rule_list(path=path))

    def get(self, rule_id: Id) -> "Rule":
        return self._c._send(_calls.rule_get(rule_id))

    def delete(self, rule_id: Id) -> "RuleDeleted":
        return self._c._send(_calls.rule_delete(rule_id))

    def history(self, rule_id: Id) -> "list[RuleVersion]":
        return self._c._send(_calls.rule_history(rule_id))


# --------------------------------------------------------------------------------------
# Async
# --------------------------------------------------------------------------------------


class AsyncClient(_Base):
    """The same API as :class:`Client`, awaitable (``async with AsyncClient() as c``)."""

    def __init__(self, url: str | None = None, key: str | None = None, *,
                 http: httpx.AsyncClient | None = None,
                 transport: httpx.AsyncBaseTransport | None = None, **options: Any) -> None:
        super().__init__(url, key, **options)
        self._http = http or httpx.AsyncClient(transport=transport, **self._http_options())
        self.memories = AsyncMemories(self)
        self.review = AsyncReview(self)
        self.rules = AsyncRules(self)

    async def aclose(self) -> None:
        await self._http.aclose()

    async def __aenter__(self) -> "AsyncClient":
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def _send(self, call: Call) -> Any:
        attempt = 0
        while True:
            try:
                resp = await self._http.request(call.method, call.path,
                                                **self._request_options(call))
            except httpx.TransportError as exc:
                wait = self._retry_transport(call, exc, attempt)
                if wait is None:
                    raise self._unreachable(exc) from None
                _log_retry(call, type(exc).__name__, wait, attempt)
            else:
                result = _calls.outcome(call, resp.status_code, resp.headers, resp.content)
                if not isinstance(result, ApiError):
                    return result
                wait = self._retry_status(call, result, attempt)
                if wait is None:
                    raise result
                _log_retry(call, f"HTTP {resp.status_code}", wait, attempt)
            await asyncio.sleep(wait)
            attempt += 1

    async def remember(self, content: str | Sequence[Any], path: str | None = None, *,
                       as_is: bool = False, role: str = "user", wait: bool = True,
                       idempotency_key: str | None = None, kind: str | None = None,
                       **fields: Any) -> "Remembered":
        """As :meth:`Client.remember`: what was kept (with content) and what was not."""
        call = _calls.remember(content, path, as_is=as_is, role=role, wait=wait,
                               idempotency_key=idempotency_key, timeout=self._wait(wait),
                               fields={"kind": kind, **fields})
        try:
            written = await self._send(call)
        except ApiError as exc:
            if as_is:
                _calls.one_item(exc)
            raise
        memories = {}
        for memory_id in _calls.to_read(written):
            try:
                memories[memory_id] = await self._send(_calls.get(memory_id))
            except ApiError:
                pass
        return _calls.remembered(written, path, memories)

    async def recall(self, query: str, *, paths: Sequence[str] | None = None, limit: int = 10,
                     **options: Any) -> "list[SearchResult]":
        return await self.search(query, paths=paths, limit=limit, **options)

    async def health(self) -> "Health":
        return await self._send(_calls.health())

    async def ingest(self, messages: Sequence[Any], path: str | None = None, *,
                     wait: bool = False, idempotency_key: str | None = None) -> "Receipt":
        return await self._send(_calls.ingest(
            messages, path=path, wait=wait, idempotency_key=idempotency_key,
            timeout=self._wait(wait)))

    async def receipt(self, receipt_id: Id) -> "Receipt":
        return await self._send(_calls.receipt(receipt_id))

    async def events(self, *, after: str | None = None, path: str | None = None,
                     types: Sequence[str] | None = None, limit: int = 100) -> "Page[Event]":
        """``GET /v1/events`` (see :meth:`Client.events`)."""
        return await self._send(_calls.events(after=after, path=path, types=types, limit=limit))

    async def paths(self, path: str | None = None, *, cursor: str | None = None,
                    limit: int = 500) -> "Page[PathCount]":
        return await self._send(_calls.paths(path=path, cursor=cursor, limit=limit))

    async def wait_for(self, receipt_id: Id, *, timeout: float = WAIT_TIMEOUT,
                       interval: float = 0.25) -> "Receipt":
        deadline = time.monotonic() + timeout
        while True:
            rec = await self.receipt(receipt_id)
            if rec.status in _TERMINAL or time.monotonic() >= deadline:
                return rec
            await asyncio.sleep(interval)

    async def search(
        self, query: str, *, paths: Sequence[str] | None = None,
        kinds: Sequence[str] | None = None, tags: Sequence[str] | None = None,
        meta: dict[str, Any] | None = None, limit: int | None = None,
        valid_at: datetime | None = None,
        include: Sequence[Literal["candidates", "history"]] | None = None,
        mode: Literal["hybrid", "vector", "keyword"] | None = None,
        expand: bool | None = None, explain: bool | None = None,
        min_score: float | None = None,
    ) -> "list[SearchResult]":
        return await self._send(_calls.search(
            query, paths=paths, kinds=kinds, tags=tags, meta=meta, limit=limit,
            valid_at=valid_at, include=include, mode=mode, expand=expand, explain=explain,
            min_score=min_score))


class AsyncMemories:
    def __init__(self, client: AsyncClient) -> None:
        self._c = client

    async def create(self, memories: "Sequence[MemoryIn | dict[str, Any]]", *,
                     on_conflict: Literal["error", "replace", "ignore"] = "error") -> "list[WriteResult]":
        return await self._c._send(_calls.create(memories, on_conflict))

    async def add(self, content: str, path: str | None = None, **fields: Any) -> "WriteResult":
        return (await self.create([{"content": content, "path": path, **fields}]))[0]

    async def get(self, memory_id: Id) -> "Memory":
        return await self._c._send(_calls.get(memory_id))

    async def list(self, *, path: str | None = None, kind: str | Sequence[str] | None = None,
                   status: str | Sequence[str] | None = None,
                   tags: str | Sequence[str] | None = None, valid_at: datetime | None = None,
                   cursor: str | None = None, limit: int = 50) -> "Page[Memory]":
        return await self._c._send(_calls.list_(path=path, kind=kind, status=status, tags=tags,
                                                valid_at=valid_at, cursor=cursor, limit=limit))

    async def iter(self, **filters: Any) -> "AsyncIterator[Memory]":
        cursor = None
        while True:
            page = await self.list(cursor=cursor, **filters)
            for item in page.items:
                yield item
            if not page.next_cursor:
                return
            cursor = page.next_cursor

    async def update(self, memory_id: Id, expected_version: int, **changes: Any) -> "Memory":
        return await self._c._send(_calls.update(memory_id, expected_version, changes))

    async def delete(self, memory_id: Id) -> "Deleted":
        return await self._c._send(_calls.delete(memory_id))

    async def history(self, memory_id: Id) -> "list[HistoryEntry]":
        return await self._c._send(_calls.history(memory_id))

    async def restore(self, memory_id: Id, version: int | None = None) -> "Memory":
        return await self._c._send(_calls.restore(memory_id, version))

    async def forget(self, memory_id: Id) -> "Forgotten":
        return await self._c._send(_calls.forget(memory_id))

    async def related(self, memory_id: Id) -> "list[Relationship]":
        return await self._c._send(_calls.related(memory_id))


class AsyncReview:
    def __init__(self, client: AsyncClient) -> None:
        self._c = client

    async def list(self, *, path: str | None = None, cursor: str | None = None,
                   limit: int = 50) -> "Page[ReviewItem]":
        return await self._c._send(_calls.review_list(path=path, cursor=cursor, limit=limit))

    async def promote(self, memory_id: Id) -> "Memory":
        return await self._c._send(_calls.promote(memory_id))

    async def reject(self, memory_id: Id, *, suppress: bool = False,
                     until: datetime | None = None) -> "Memory":
        return await self._c._send(_calls.reject(memory_id, suppress, until))

    async def merge(self, memory_id: Id, into: Id) -> "Memory":
        return await self._c._send(_calls.merge(memory_id, into))


class AsyncRules:
    def __init__(self, client: AsyncClient) -> None:
        self._c = client

    async def set(self, path: str, **fields: Any) -> "Rule":
        return await self._c._send(_calls.rule_set(path, **fields))

    async def list(self, *, path: str | None = None) -> "list[Rule]":
        return await self._c._send(_calls.rule_list(path=path))

    async def get(self, rule_id: Id) -> "Rule":
        return await self._c._send(_calls.rule_get(rule_id))

    async def delete(self, rule_id: Id) -> "RuleDeleted":
        return await self._c._send(_calls.rule_delete(rule_id))

    async def history(self, rule_id: Id) -> "list[RuleVersion]":
        return await self._c._send(_calls.rule_history(rule_id))
