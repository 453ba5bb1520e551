"""strata as a LangGraph store (``pip install "strata[langgraph]"``).

::

    from langgraph.prebuilt import create_react_agent
    from strata.client import Client
    from strata.integrations.langgraph import StrataStore

    store = StrataStore(Client(), index={"fields": ["content"]})
    store.put(("users", "alice", "memories"), "db", {"content": "Alice prefers PostgreSQL"})
    store.search(("users", "alice"), query="which database?")
    agent = create_react_agent(model, tools, store=store)

How LangGraph's store maps onto strata (``docs/integrations.md`` has the table):

- A namespace is a path: ``("users", "alice", "memories")`` is ``users.alice.memories``
  (under ``root`` when one is given). A label made only of letters, digits, ``_`` and ``-``
  stays as it is; any other label is written ``x--`` followed by its characters, letters,
  digits and ``-`` as they are and every other byte of its UTF-8 as ``_`` and two hex digits
  (``"alice@example"`` is ``x--alice_40example``), and so is a label that itself starts with
  ``x--``. Every label decodes back: the mapping is reversible, and ``list_namespaces`` answers
  the labels that were put.
- A key is the memory's ``name`` (unique within its path); a memory that has none (one
  ingest extracted) is keyed by its id, and its value is ``{"content": <its content>}``, the
  shape LangMem writes.
- A value is stored twice: verbatim as the memory's ``meta`` (what ``get`` and ``search``
  answer, and what ``filter`` matches), and as the memory's ``content``, the text strata
  embeds and judges: the fields the store's ``index`` config names (``{"fields": [...]}``, or
  ``index=`` on ``put``), ``"$"`` the whole value as JSON. Without an index config that is
  the value's ``content`` field, or the whole value when it has none. strata embeds on the
  server: the config's ``embed`` and ``dims`` are not used.
- ``search`` with a ``query`` is strata's search (hybrid, active memories only) under the
  prefix, ``filter`` as meta conditions (``{"n": {"$gte": 2}}`` is strata's ``gte``), at most
  100 results from the start; without one it pages through the prefix's memories, oldest
  first, and applies ``filter`` here.
- A ``ttl`` (minutes, as LangGraph counts) makes a short-term memory that expires then
  (strata takes 1 minute to 366 days). Reading does not extend it: ``refresh_ttl`` is
  accepted and has no effect. The tier and expiry are set when a key is first put: putting
  the key again edits the memory and keeps them (strata's edit has no tier or TTL).
- ``delete`` deletes the memory (its history is kept; ``Client.memories.restore`` brings it
  back). :meth:`StrataStore.forget` erases it and tombstones its value: a later ``put`` of
  that value raises :class:`strata.client.Suppressed` (with its ``tombstone_id``).

What strata does with a put shows through the store: a value that contradicts one held (a
new value of the same slot, ``slot_field``; or, on a server with a conflict judge, a
statement it judges contradicts the old) supersedes it, and the old item is gone from
``get`` and ``search``; a put that a memory rule holds for review is not returned until someone promotes
it; every change is versioned (``Client.memories.history``) and audited. strata's errors
(:mod:`strata.client.errors`) are raised as they are: out of the graph from a tool in
LangGraph's ``ToolNode`` by default, or handed to the model as the tool's error with
``ToolNode(tools, handle_tool_errors=True)``. A namespace strata cannot hold
raises LangGraph's ``InvalidNamespaceError``.

Finding an item by key lists its path (the API has no lookup by name); the ids found are
remembered by the store, so reading a key again is one request.
"""

from __future__ import annotations

import asyncio
import json
import re
import uuid
from collections.abc import Callable, Generator, Iterable, Mapping, Sequence
from typing import Any

from langgraph.store.base import (
    BaseStore,
    GetOp,
    IndexConfig,
    InvalidNamespaceError,
    Item,
    ListNamespacesOp,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
    TTLConfig,
)
from langgraph.store.base.embed import get_text_at_path, tokenize_path

from strata.client import AsyncClient, Client, Forbidden, NotFound, Suppressed
from strata.foundation.fields import MAX_PATH_LEN

__all__ = ["StrataStore", "label_of", "namespace_of", "path_of", "remember_conversation"]

_PLAIN = re.compile(r"[A-Za-z0-9_-]{1,255}")
_ESCAPED = "x--"
_KEEP = re.compile(r"[A-Za-z0-9-]")
_MAX_LABEL = 255
# strata answers at most this many search results; an offset counts from the first of them.
MAX_SEARCH = 100
_PAGE = 200  # memories per page when listing a path
_OPS = {"$eq": "eq", "$ne": "ne", "$gt": "gt", "$gte": "gte", "$lt": "lt", "$lte": "lte",
        "$in": "in", "$exists": "exists"}


# --------------------------------------------------------------------------------------
# Namespaces and paths
# --------------------------------------------------------------------------------------


def label_of(part: str) -> str:
    """The path label of one namespace label (see the module's docstring)."""
    if _PLAIN.fullmatch(part) and not part.startswith(_ESCAPED):
        return part
    out = [_ESCAPED]
    for ch in part:
        out.append(ch if _KEEP.fullmatch(ch) else "".join(f"_{b:02x}" for b in ch.encode()))
    label = "".join(out)
    if len(label) > _MAX_LABEL:
        raise InvalidNamespaceError(
            f"namespace label {part[:40]!r}... is too long for a strata path label "
            f"({len(label)} characters written, at most {_MAX_LABEL})")
    return label


def _unlabel(label: str) -> str:
    if not label.startswith(_ESCAPED):
        return label
    body, out, i = label[len(_ESCAPED):], bytearray(), 0
    while i < len(body):
        if body[i] == "_":
            out.append(int(body[i + 1:i + 3], 16))
            i += 3
        else:
            out.extend(body[i].encode())
            i += 1
    return out.decode()


def path_of(namespace: Sequence[str], root: str | None = None) -> str:
    """The strata path a namespace lives at (``root`` first, when given)."""
    for part in namespace:
        if not isinstance(part, str) or not part:
            raise InvalidNamespaceError(f"namespace labels are non-empty strings: {namespace!r}")
    path = ".".join([*([root] if root else []), *(label_of(p) for p in namespace)])
    if len(path) > MAX_PATH_LEN:
        raise InvalidNamespaceError(
            f"namespace {namespace!r} makes a strata path of {len(path)} characters "
            f"(at most {MAX_PATH_LEN})")
    return path


def namespace_of(path: str, root: str | None = None) -> tuple[str, ...] | None:
    """The namespace of a strata path, or None for a path outside ``root``."""
    if root:
        if path == root or not path.startswith(root + "."):
            return None
        path = path[len(root) + 1:]
    return tuple(_unlabel(label) for label in path.split(".")) if path else None


# --------------------------------------------------------------------------------------
# Values and filters
# --------------------------------------------------------------------------------------


def _fields_text(value: Mapping[str, Any], fields: Sequence[str]) -> str:
    texts: list[str] = []
    for field in fields:
        if field == "$":
            texts.append(json.dumps(value, ensure_ascii=False, sort_keys=True, default=str))
        else:
            texts.extend(t for t in get_text_at_path(value, tokenize_path(field)) if t)
    return "\n".join(texts)


def content_of(value: Mapping[str, Any], fields: Sequence[str] | None) -> str:
    """The text strata stores (and embeds) for a value: the ``fields`` named, else its
    ``content``, else the whole value as JSON."""
    text = _fields_text(value, fields) if fields else ""
    if not text and isinstance(value.get("content"), str):
        text = value["content"]
    return text or _fields_text(value, ["$"])


def server_filter(filter: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """LangGraph's filter as strata's search ``meta``: a plain value matches by containment,
    ``{"$gte": 2}`` becomes ``{"gte": 2}``."""
    if not filter:
        return None
    out: dict[str, Any] = {}
    for key, cond in filter.items():
        if isinstance(cond, Mapping) and cond and all(k.startswith("$") for k in cond):
            unknown = sorted(set(cond) - set(_OPS))
            if unknown:
                raise ValueError(f"filter on {key!r}: unknown operator {unknown[0]!r}")
            out[key] = {_OPS[op]: v for op, v in cond.items()}
        else:
            out[key] = cond
    return out


def _compare(stored: Any, op: str, wanted: Any) -> bool:
    if op == "$eq":
        return stored == wanted
    if op == "$ne":
        return stored != wanted
    if op == "$in":
        return stored in wanted
    if op == "$exists":
        return (stored is not _MISSING) == bool(wanted)
    if stored is _MISSING or type(stored) is bool or type(wanted) is bool:
        return False
    try:
        return {"$gt": stored > wanted, "$gte": stored >= wanted, "$lt": stored < wanted,
                "$lte": stored <= wanted}[op]
    except TypeError:  # a string against a number: it does not match, as on the server
        return False


_MISSING = object()


def matches(value: Mapping[str, Any], filter: Mapping[str, Any] | None) -> bool:
    """Whether a value passes a LangGraph filter (the same meaning strata's search gives it)."""
    for key, cond in (filter or {}).items():
        stored = value.get(key, _MISSING)
        if isinstance(cond, Mapping) and cond and all(k.startswith("$") for k in cond):
            server_filter({key: cond})  # refuses an unknown operator
            if not all(_compare(stored, op, wanted) for op, wanted in cond.items()):
                return False
        elif isinstance(cond, Mapping):
            if not isinstance(stored, Mapping) or not matches(stored, cond):
                return False
        elif stored is _MISSING or stored != cond:
            return False
    return True


# --------------------------------------------------------------------------------------
# The store
# --------------------------------------------------------------------------------------

# Each operation is written once, as a generator that yields the client calls it needs
# (``("memories.get", (id,), {})``) and receives their answers; the sync store runs it on a
# Client, the async store on an AsyncClient.
Calls = Generator[tuple[str, tuple, dict], Any, Any]


class StrataStore(BaseStore):
    """A LangGraph ``BaseStore`` over strata (see the module's docstring for the mapping).

    ``client`` is a :class:`strata.client.Client` (for ``batch``, ``get``, ``put``, ...) and
    ``aclient`` an :class:`~strata.client.AsyncClient` (for ``abatch``, ``aget``, ...); give
    either or both. Without an ``aclient`` the async methods run the sync ones in a thread.
    ``root`` is a path every namespace lives under (``apps.support``); ``index`` is
    LangGraph's index config, of which strata reads ``fields``; ``ttl`` is LangGraph's TTL
    config, of which strata reads ``default_ttl``. ``slot_field`` names a field of the values
    that says what a value is about (``"about": "user.preferred_database"``): it becomes the
    memory's slot, and a value of a slot supersedes the one held before it, whatever its key.
    """

    supports_ttl = True

    def __init__(self, client: Client | None = None, *, aclient: AsyncClient | None = None,
                 root: str | None = None, index: IndexConfig | None = None,
                 ttl: TTLConfig | None = None, slot_field: str | None = None) -> None:
        if client is None and aclient is None:
            raise ValueError("StrataStore needs a strata Client or AsyncClient")
        if root:
            from strata.foundation.paths import validate_path

            validate_path(root, field="root")
        self.client, self.aclient, self.root = client, aclient, root or None
        self.index_config = index
        self.fields: list[str] | None = list(index["fields"]) if index and index.get("fields") else None
        self.ttl_config = ttl
        self.slot_field = slot_field
        self._ids: dict[tuple[str, str], uuid.UUID] = {}

    # -- running -----------------------------------------------------------------------

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        if self.client is None:
            raise RuntimeError("StrataStore was given an AsyncClient only: use abatch / aget / ...")
        return [self._run_sync(self._op(op)) for op in ops]

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        ops = list(ops)
        if self.aclient is None:
            return await asyncio.to_thread(self.batch, ops)
        return [await self._run_async(self._op(op)) for op in ops]

    def _run_sync(self, gen: Calls) -> Any:
        answer: Any = None
        error: BaseException | None = None
        while True:
            try:
                name, args, kwargs = gen.throw(error) if error else gen.send(answer)
            except StopIteration as done:
                return done.value
            error = None
            try:
                answer = _method(self.client, name)(*args, **kwargs)
            except Exception as exc:  # handed to the operation, which decides
                error = exc

    async def _run_async(self, gen: Calls) -> Any:
        answer: Any = None
        error: BaseException | None = None
        while True:
            try:
                name, args, kwargs = gen.throw(error) if error else gen.send(answer)
            except StopIteration as done:
                return done.value
            error = None
            try:
                answer = await _method(self.aclient, name)(*args, **kwargs)
            except Exception as exc:
                error = exc

    def _op(self, op: Op) -> Calls:
        if isinstance(op, GetOp):
            return self._get(op)
        if isinstance(op, PutOp):
            return self._put(op)
        if isinstance(op, SearchOp):
            return self._search(op)
        if isinstance(op, ListNamespacesOp):
            return self._list_namespaces(op)
        raise ValueError(f"unknown store operation {type(op).__name__}")

    # -- items -------------------------------------------------------------------------

    def _item(self, memory: Any, cls: Callable[..., Item] = Item, **extra: Any) -> Item | None:
        namespace = namespace_of(memory.path, self.root)
        if namespace is None:
            return None
        if memory.name is not None and memory.meta:
            key, value = memory.name, dict(memory.meta)
        else:
            key, value = memory.name or str(memory.id), {"content": memory.content}
        return cls(namespace=namespace, key=key, value=value, created_at=memory.created_at,
                   updated_at=memory.updated_at, **extra)

    def _find(self, path: str, key: str) -> Calls:
        """The active memory keyed ``key`` at exactly ``path``, or None."""
        known = self._ids.get((path, key))
        if known is None and _is_uuid(key):
            known = uuid.UUID(key)
        if known is not None:
            try:
                memory = yield ("memories.get", (known,), {})
            except NotFound:
                memory = None
            if memory is not None and memory.path == path and memory.status == "active" and (
                    memory.name == key or memory.name is None or (path, key) in self._ids):
                return memory
            self._ids.pop((path, key), None)
        cursor = None
        while True:
            page = yield ("memories.list", (), {"path": path, "cursor": cursor, "limit": _PAGE})
            for memory in page.items:
                if memory.path == path and memory.name == key:
                    self._ids[(path, key)] = memory.id
                    return memory
            if not page.next_cursor:
                return None
            cursor = page.next_cursor

    def _get(self, op: GetOp) -> Calls:
        memory = yield from self._find(path_of(op.namespace, self.root), op.key)
        return None if memory is None else self._item(memory)

    def _put(self, op: PutOp) -> Calls:
        path = path_of(op.namespace, self.root)
        if op.value is None:
            memory = yield from self._find(path, op.key)
            if memory is not None:
                yield ("memories.delete", (memory.id,), {})
            self._ids.pop((path, op.key), None)
            return None
        value = dict(op.value)
        fields = None if op.index is False else (op.index or self.fields)
        memory: dict[str, Any] = {"content": content_of(value, fields), "path": path,
                                  "name": op.key, "meta": value}
        slot = value.get(self.slot_field) if self.slot_field else None
        if isinstance(slot, str) and slot:
            memory["slot"] = slot
        if op.ttl is not None:
            memory |= {"tier": "short_term", "ttl": round(op.ttl * 60)}
        elif _is_uuid(op.key):
            # A memory strata made (ingest) is keyed by its id and has no name: a put under
            # that key (LangMem's update) edits it, as a new version, rather than naming a
            # second one.
            try:
                held = yield ("memories.get", (uuid.UUID(op.key),), {})
            except NotFound:
                held = None
            if held is not None and held.path == path and held.name is None and held.status == "active":
                yield ("memories.update", (held.id, held.version), {
                    k: v for k, v in memory.items() if k not in ("path", "name")})
                return None
        [result] = yield ("memories.create", ([memory],), {"on_conflict": "replace"})
        if result.status == "blocked":
            self._ids.pop((path, op.key), None)
            if result.tombstone_id is not None:
                raise Suppressed(
                    f"{result.reason or 'this value was forgotten'}: strata will not store it "
                    f"again (tombstone {result.tombstone_id})", status=None,
                    details={"tombstone_id": str(result.tombstone_id)})
            raise Forbidden(result.reason or "a memory rule refuses this value", status=None,
                            details={"rule_id": str(result.rule_id)} if result.rule_id else None)
        if result.id is not None:
            # A paraphrase of a held memory reinforces it instead of making a second one:
            # this key then reads that memory, in this process.
            self._ids[(path, op.key)] = result.id
        return None

    def _search(self, op: SearchOp) -> Calls:
        prefix = path_of(op.namespace_prefix, self.root) if op.namespace_prefix else self.root
        if op.query:
            wanted = min(op.offset + op.limit, MAX_SEARCH)
            if op.offset >= wanted:
                return []
            hits = yield ("search", (op.query,), {
                "paths": [prefix] if prefix else None, "meta": server_filter(op.filter),
                "limit": wanted})
            out = []
            for hit in hits[op.offset:]:
                try:
                    memory = yield ("memories.get", (hit.id,), {})
                except NotFound:  # gone since the search
                    continue
                item = self._item(memory, SearchItem, score=hit.score)
                if item is not None:
                    out.append(item)
            return out
        out, skipped, cursor = [], 0, None
        while len(out) < op.limit:
            page = yield ("memories.list", (), {"path": prefix, "cursor": cursor, "limit": _PAGE})
            for memory in page.items:
                item = self._item(memory, SearchItem)
                if item is None or not matches(item.value, op.filter):
                    continue
                if skipped < op.offset:
                    skipped += 1
                elif len(out) < op.limit:
                    out.append(item)
            if not page.next_cursor:
                break
            cursor = page.next_cursor
        return out

    def _list_namespaces(self, op: ListNamespacesOp) -> Calls:
        conditions = op.match_conditions or ()
        # Ask the server for the subtree of the longest literal prefix; filter the rest here.
        literal: list[str] = []
        for cond in conditions:
            if cond.match_type == "prefix":
                head = []
                for part in cond.path:
                    if part == "*":
                        break
                    head.append(part)
                literal = max(literal, head, key=len)
        under = path_of(literal, self.root) if literal else self.root
        seen: dict[tuple[str, ...], None] = {}
        cursor = None
        while True:
            page = yield ("paths", (under,), {"cursor": cursor, "limit": 1000})
            for entry in page.items:
                if not entry.counts.get("active"):
                    continue
                namespace = namespace_of(entry.path, self.root)
                if namespace is None or not all(_matches_condition(namespace, c) for c in conditions):
                    continue
                if op.max_depth is not None:
                    namespace = namespace[:op.max_depth]
                seen.setdefault(namespace)
            if not page.next_cursor:
                break
            cursor = page.next_cursor
        return sorted(seen)[op.offset:op.offset + op.limit]

    # -- what strata adds --------------------------------------------------------------

    def _forget(self, namespace: tuple[str, ...], key: str) -> Calls:
        memory = yield from self._find(path_of(namespace, self.root), key)
        if memory is None:
            raise NotFound("memory", key)
        return (yield ("memories.forget", (memory.id,), {}))

    def forget(self, namespace: tuple[str, ...], key: str) -> Any:
        """Erase the item everywhere and tombstone its value: unlike ``delete``, it cannot be
        restored, and putting the same value again raises :class:`strata.client.Suppressed`.
        Answers strata's ``Forgotten``; ``NotFound`` when there is no such item."""
        return self._run_sync(self._forget(namespace, key))

    async def aforget(self, namespace: tuple[str, ...], key: str) -> Any:
        if self.aclient is None:
            return await asyncio.to_thread(self.forget, namespace, key)
        return await self._run_async(self._forget(namespace, key))


def _matches_condition(namespace: tuple[str, ...], cond: Any) -> bool:
    pattern = tuple(cond.path)
    if len(pattern) > len(namespace):
        return False
    part = namespace[:len(pattern)] if cond.match_type == "prefix" else namespace[-len(pattern):]
    return all(p == "*" or p == n for p, n in zip(pattern, part, strict=True))


def _method(client: Any, name: str) -> Any:
    target = client
    for attr in name.split("."):
        target = getattr(target, attr)
    return target


def _is_uuid(value: str) -> bool:
    try:
        uuid.UUID(value)
    except ValueError:
        return False
    return True


# --------------------------------------------------------------------------------------
# Remembering a conversation through ingest
# --------------------------------------------------------------------------------------

_ROLES = {"human": "user", "user": "user", "ai": "assistant", "assistant": "assistant"}


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # content blocks: their text parts
        return "\n".join(b if isinstance(b, str) else b.get("text", "") for b in content
                         if isinstance(b, str) or (isinstance(b, dict) and b.get("type") == "text"))
    return ""


def turn_of(messages: Sequence[Any]) -> list[dict[str, Any]]:
    """The last turn of a LangChain conversation as strata messages: from the last human
    message on, the human and AI messages that carry text (tool calls and tool results are
    the agent's work, not what was said)."""
    start = 0
    for i, message in enumerate(messages):
        if getattr(message, "type", None) == "human":
            start = i
    out = []
    for message in messages[start:]:
        role = _ROLES.get(getattr(message, "type", ""))
        text = _text(getattr(message, "content", "")).strip()
        if role and text:
            out.append({"role": role, "content": text})
    return out


def remember_conversation(client: Client | AsyncClient, *, path: str | None = None,
                          path_of_config: Callable[[dict[str, Any]], str] | None = None,
                          wait: bool = False, messages_key: str = "messages") -> Callable:
    """A graph node that sends the turn just finished to strata's ``/v1/ingest``: strata's
    extraction and truth maintenance decide what is kept (a new value supersedes the old one,
    a forgotten one stays out), not a model of the agent's.

    ``path`` is where the memories go (the key's default path when None), or
    ``path_of_config(config)`` picks it per run (``config["configurable"]["user_id"]``).
    ``wait=False`` (the default) does not hold the graph up: the server answers at once with
    a receipt and extracts in the background. The node's idempotency key is the turn's
    messages' ids, so a graph step replayed (a retry, a resumed thread) ingests once. It
    returns no state update; add it after the agent (``graph.add_node("remember", node)``).
    A node built on an ``AsyncClient`` is async.
    """

    def plan(state: Any) -> tuple[list[dict[str, Any]], dict[str, Any]] | None:
        from langgraph.config import get_config

        try:
            config = get_config()
        except RuntimeError:  # called outside a graph
            config = {}
        messages = state[messages_key] if isinstance(state, Mapping) else getattr(state, messages_key)
        turn = turn_of(messages)
        if not turn:
            return None
        where = path_of_config(config) if path_of_config else path
        ids = [getattr(m, "id", None) for m in messages]
        key = None
        if all(ids):
            key = "langgraph-" + uuid.uuid5(uuid.NAMESPACE_URL, "|".join([where or "", *ids])).hex
        return turn, {"path": where, "wait": wait, "idempotency_key": key}

    if isinstance(client, AsyncClient):
        async def aremember(state: Any) -> dict[str, Any]:
            planned = plan(state)
            if planned is not None:
                await client.ingest(planned[0], **planned[1])
            return {}

        return aremember

    def remember(state: Any) -> dict[str, Any]:
        planned = plan(state)
        if planned is not None:
            client.ingest(planned[0], **planned[1])
        return {}

    return remember

