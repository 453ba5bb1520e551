"""Direct memory CRUD. Every statement carries the tenant and the caller's readable (for
writes, writable) paths, so authorisation happens inside SQL; the Python checks only choose
between 403 and 404."""

from __future__ import annotations

import base64
import binascii
import json
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg

from strata.audit import audited
from strata.auth.access import Caller, Level
from strata.db import Database, deadline
from strata.foundation.errors import Conflict, InvalidInput, NotFound, Suppressed
from strata.foundation.paths import validate_path
from strata.memories.models import CreateRequest, Memory, MemoryIn, MemoryPatch, WriteResult
from strata.providers import Embedder
from strata.rules import secrets
from strata.write import apply as persist
from strata.write import changes, locks
from strata.write import gate as gating
from strata.write.canonical import canonicalize, value_hash
from strata.write.rows import COLUMNS, columns, evidence_entry, scope
from strata.write.values import derive_value

_SELECT_READABLE = f"""
SELECT {COLUMNS} FROM memories
WHERE tenant_id = %(tenant)s AND id = %(id)s AND path <@ %(readable)s::ltree[]
"""


# --------------------------------------------------------------------------------------
# Create
# --------------------------------------------------------------------------------------


def refuse_secrets(content: str | None, slot: str | None, value: str | None,
                   prefix: str = "", context: str | None = None) -> None:
    """A memory written directly holds no secret, in its content or in what its slot's value
    says ("wifi password is hunter2"): ``InvalidInput`` naming the field and the kind, never the
    value. An ingested message is not refused: the extractor reports its secret clauses as
    not kept (reason ``secret``). Here, not in the request shapes, which the Python client
    shares without detect-secrets (strata.memories.models)."""
    for name, text in (("content", content), ("context", context)):
        if text is not None and (found := secrets.find(text)):
            kind = found[0].kind.replace("_", " ")
            raise InvalidInput(f"{name} contains a secret ({kind}); strata does not store "
                               "secrets", field=f"{prefix}{name}")
    if slot and value and secrets.contains_secret(
            f"the {slot.rsplit('.', 1)[-1].replace('_', ' ')} is {value}"):
        raise InvalidInput("value is a secret; strata does not store secrets",
                           field=f"{prefix}value")


@dataclass
class _Prepared:
    item: MemoryIn
    path: str
    canonical: str
    hash: bytes
    embedding: Any


def _prepare(caller: Caller, req: CreateRequest, embedder: Embedder) -> list[_Prepared]:
    """Validate every item and embed the whole batch before anything is written."""
    prepared = []
    for i, item in enumerate(req.memories):
        refuse_secrets(item.content, item.slot, item.value, prefix=f"memories[{i}].",
                       context=item.context)
        field = f"memories[{i}].path"
        path = item.path if item.path is not None else caller.default_path
        if path is None:
            raise InvalidInput("path is required (this key has no default path)", field=field)
        validate_path(path, field=field)
        caller.require(path, Level.write, field=field)
        canonical = canonicalize(item.content)
        if not canonical:
            raise InvalidInput("content has no words", field=f"memories[{i}].content")
        prepared.append(_Prepared(item, path, canonical, value_hash(canonical), None))
    vectors = embedder.embed([p.item.content for p in prepared])
    for p, vec in zip(prepared, vectors, strict=True):
        p.embedding = vec
    return prepared


def create_memories(
    db: Database, caller: Caller, req: CreateRequest, embedder: Embedder, judge=None,
    settings=None,
) -> list[WriteResult]:
    """Batch create: one result per input in input order, in one transaction.

    Items go through the write path as ingested statements do (without extraction):
    tombstones block, a same-slot value supersedes, paraphrases reinforce, and items of the
    batch are resolved in order against each other. A named item whose name exists in its
    path is skipped (unchanged, or ``on_conflict=ignore``), refused (``error``) or becomes an
    edit of that memory (``replace``) under the same rules as a PATCH, except that a refusal
    is that item's ``blocked`` or ``skipped`` result. A bad item (invalid, not writable, a
    name clash under ``error``) rejects the whole batch with its index named.
    """
    from strata.foundation.config import get_settings

    settings = settings or get_settings()
    thresholds = gating.bands(settings, embedder.model)
    # Each item is several statements in the transaction: a request's database budget
    # grows with its batch (strata.db.deadline), up to max_batch items' worth.
    deadline.extend(settings.db_request_deadline_per_item_s * len(req.memories))
    with audited(db, caller, "write", "memory.create") as event:
        prepared = _prepare(caller, req, embedder)
        results = locks.retrying(
            db, lambda cur: _write_batch(cur, caller, prepared, req.on_conflict, embedder,
                                         judge, thresholds),
            cause="memory.create", actor=caller.actor)
        event.memory_ids = [r.id for r in results if r.id]
        event.count = len(results)
        return results


# What an outcome of the write path means for a direct write (the v1 create contract).
_STATUS = {
    "created": "inserted", "reinforced": "reinforced", "merged": "reinforced",
    "superseded_existing": "superseded_existing", "blocked": "blocked",
    "stored_as_superseded": "inserted", "candidate": "held", "skipped": "skipped",
}

# Rows an incoming batch may land on by name, locked for the rest of the transaction.
_NAMED = f"""
SELECT {columns("m")}, m.value_hash, m.embedding
FROM memories m
JOIN unnest(%(paths)s::ltree[], %(names)s::text[]) AS n(path, name)
  ON m.tenant_id = %(tenant)s AND m.path = n.path AND m.name = n.name
FOR UPDATE OF m
"""


def _write_batch(
    cur: psycopg.Cursor, caller: Caller, prepared: list[_Prepared], on_conflict: str,
    embedder: Embedder, judge, thresholds: tuple[float, float],
) -> list[WriteResult]:
    tenant = caller.tenant_id
    named_items = [p for p in prepared if p.item.name is not None]
    named: dict[tuple[str, str], dict[str, Any]] = {}
    if named_items:
        for r in cur.execute(_NAMED, {
            "tenant": tenant, "paths": [p.path for p in named_items],
            "names": [p.item.name for p in named_items],
        }).fetchall():
            named[(r["path"], r["name"])] = r

    evidence = [evidence_entry(caller, "api")]
    now = datetime.now(UTC)
    results: list[WriteResult | None] = [None] * len(prepared)
    replaces: list[tuple[int, _Prepared, dict[str, Any]]] = []
    staged: list[persist.Staged] = []
    for i, p in enumerate(prepared):
        item = p.item
        if item.name is not None and (p.path, item.name) in named:
            existing = named[(p.path, item.name)]
            if existing.get("staged"):
                results[i] = WriteResult(id=None, status="skipped",
                                         reason="name given twice in this request")
            elif bytes(existing["value_hash"]) == p.hash:
                results[i] = WriteResult(id=existing["id"], status="skipped", reason="unchanged")
            elif on_conflict == "ignore":
                results[i] = WriteResult(id=existing["id"], status="skipped", reason="name exists")
            elif on_conflict == "error":
                raise Conflict(
                    "a memory with this name exists in this path (on_conflict=error)",
                    field=f"memories[{i}].name",
                )
            else:
                replaces.append((i, p, existing))
            continue
        value = derive_value(item.slot, item.content, item.value)
        staged.append(persist.Staged(
            idx=i, path=p.path, content=item.content, context=item.context,
            canonical=p.canonical, value_hash=p.hash,
            kind=item.kind, slot=item.slot, value=value,
            valid_from=item.valid_from or now, valid_from_explicit=item.valid_from is not None,
            confidence=1.0, evidence=evidence,
            embedding=p.embedding, gate=None, verdicts=None, name=item.name,
            importance=item.importance, tags=list(dict.fromkeys(item.tags)), meta=item.meta,
            tier=item.tier,
            expires_at=now + timedelta(seconds=item.ttl) if item.ttl is not None else None,
        ))
        if item.name is not None:
            named[(p.path, item.name)] = {"staged": True}  # a later twin is skipped

    outcomes = persist.write(cur, tenant_id=tenant, items=staged, model=embedder.model,
                             recorded_at=now, thresholds=thresholds, judge=judge,
                             embed=embedder.embed)
    for s, o in zip(staged, outcomes, strict=True):
        results[s.idx] = WriteResult(
            id=o.memory_id, status=_STATUS[o.outcome], reason=o.reason,
            tombstone_id=(s.gate or {}).get("tombstone_id") if o.outcome == "blocked" else None,
            version=o.version, tier=o.tier, rule_id=o.rule_id,
        )
    for i, p, existing in replaces:
        results[i] = _replace(cur, caller, p, existing, embedder, evidence, thresholds)
    return [r for r in results if r is not None]


def _replace(cur, caller: Caller, p: _Prepared, existing: dict[str, Any], embedder: Embedder,
             evidence, thresholds) -> WriteResult:
    """``on_conflict=replace``: the named memory is edited, under the rules of a PATCH."""
    item = p.item
    target = changes.Target(
        content=item.content, context=item.context, set_context=True, kind=item.kind,
        slot=item.slot, set_slot=True, value=item.value,
        importance=item.importance, meta=item.meta, tags=list(dict.fromkeys(item.tags)),
        valid_from=item.valid_from, embedding=p.embedding, model=embedder.model,
        evidence=evidence,
    )
    try:
        row = changes.revise(cur, caller, existing, target, thresholds=thresholds)
    except Suppressed as exc:
        return WriteResult(id=existing["id"], status="blocked",
                           reason=f"tombstoned: {exc.reason} (tombstone {exc.tombstone_id})",
                           tombstone_id=exc.tombstone_id)
    except Conflict as exc:
        if exc.__cause__ is not None:  # a database refusal: the transaction is gone, retry it
            raise
        return WriteResult(id=existing["id"], status="skipped", reason=str(exc))
    return WriteResult(id=row["id"], status="updated", version=row["version"], tier=row["tier"])


# --------------------------------------------------------------------------------------
# Read
# --------------------------------------------------------------------------------------


def get_memory(db: Database, caller: Caller, memory_id: uuid.UUID) -> Memory:
    with audited(db, caller, "read", "memory.get") as event:
        event.memory_ids = [memory_id]
        with db.connection() as conn:
            row = conn.execute(_SELECT_READABLE, scope(caller, id=memory_id)).fetchone()
        if row is None:
            raise NotFound("memory", memory_id)
        event.count = 1
        return Memory.from_row(row)


def encode_cursor(created_at: datetime, memory_id: uuid.UUID) -> str:
    raw = json.dumps([created_at.isoformat(), str(memory_id)]).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


# An issued cursor is under 100 characters: anything much longer is not one, and is refused
# before it is decoded (a deeply nested JSON array would otherwise exhaust the recursion
# limit of the parser).
_MAX_CURSOR = 200


def decode_cursor(cursor: str) -> tuple[datetime, uuid.UUID]:
    try:
        if len(cursor) > _MAX_CURSOR or not cursor.isascii():
            raise ValueError("not an issued cursor")
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        at, ident = json.loads(raw)
        if not (isinstance(at, str) and isinstance(ident, str)):
            raise ValueError("not an issued cursor")
        return datetime.fromisoformat(at), uuid.UUID(ident)
    except (binascii.Error, ValueError, TypeError, UnicodeDecodeError, RecursionError):
        raise InvalidInput("cursor is not one this server issued", field="cursor") from None


def list_memories(
    db: Database,
    caller: Caller,
    *,
    path: str | None = None,
    kind: Sequence[str] | None = None,
    status: Sequence[str] | None = ("active",),
    tags: Sequence[str] | None = None,
    valid_at: datetime | None = None,
    cursor: str | None = None,
    limit: int = 50,
) -> tuple[list[Memory], str | None]:
    """A page of readable memories in a stable order (created_at, id)."""
    if path is not None:
        validate_path(path)
    after = decode_cursor(cursor) if cursor else None
    params = scope(
        caller, path=path, kinds=list(kind) if kind else None,
        statuses=list(status) if status else None, tags=list(tags) if tags else None,
        valid_at=valid_at, after_at=after[0] if after else None,
        after_id=after[1] if after else None, limit=limit + 1,
    )
    sql = f"""
        SELECT {COLUMNS} FROM memories
        WHERE tenant_id = %(tenant)s AND path <@ %(readable)s::ltree[]
          AND (%(path)s::ltree IS NULL OR path <@ %(path)s::ltree)
          AND (%(kinds)s::memory_kind[] IS NULL OR kind = ANY(%(kinds)s::memory_kind[]))
          AND (%(statuses)s::memory_status[] IS NULL OR status = ANY(%(statuses)s::memory_status[]))
          AND (%(tags)s::text[] IS NULL OR tags @> %(tags)s::text[])
          AND (%(valid_at)s::timestamptz IS NULL OR valid @> %(valid_at)s::timestamptz)
          AND (%(after_at)s::timestamptz IS NULL
               OR (created_at, id) > (%(after_at)s::timestamptz, %(after_id)s::uuid))
        ORDER BY created_at, id
        LIMIT %(limit)s
    """
    with audited(db, caller, "read", "memory.list") as event:
        with db.connection() as conn:
            rows = conn.execute(sql, params).fetchall()
        more = len(rows) > limit
        items = [Memory.from_row(r) for r in rows[:limit]]
        event.count = len(items)
        event.memory_ids = [m.id for m in items]
    next_cursor = encode_cursor(rows[limit - 1]["created_at"], rows[limit - 1]["id"]) if more else None
    return items, next_cursor


# --------------------------------------------------------------------------------------
# Update and delete
# --------------------------------------------------------------------------------------


def update_memory(
    db: Database,
    caller: Caller,
    memory_id: uuid.UUID,
    patch: MemoryPatch,
    embedder: Embedder,
    *,
    expected_version: int | None = None,
    settings=None,
) -> Memory:
    """Compare-and-set on ``version``, through the write path's rules for an edit (see
    :mod:`strata.write.changes`): every change bumps the version and leaves a history row."""
    from strata.foundation.config import get_settings

    expected = patch.expected_version if patch.expected_version is not None else expected_version
    with audited(db, caller, "write", "memory.update") as event:
        event.memory_ids = [memory_id]
        refuse_secrets(patch.content, patch.slot, patch.value, context=patch.context)
        if expected is None:
            raise InvalidInput(
                "expected_version (or an If-Match header) is required", field="expected_version"
            )
        changes_ = patch.model_dump(exclude_unset=True, exclude={"expected_version"})
        if patch.path is not None:
            validate_path(patch.path)
        vector = embedder.embed([patch.content])[0] if patch.content is not None else None
        target = changes.Target(
            content=patch.content, context=patch.context, set_context="context" in changes_,
            path=patch.path, kind=patch.kind, slot=patch.slot,
            set_slot="slot" in changes_, value=patch.value, importance=patch.importance,
            confidence=patch.confidence, pinned=patch.pinned, tags=patch.tags, meta=patch.meta,
            valid_from=patch.valid_from, valid_to=patch.valid_to,
            set_valid_to="valid_to" in changes_, embedding=vector,
            model=embedder.model if vector is not None else None,
            evidence=[evidence_entry(caller, "api.update")] if patch.content is not None else None,
            expected_version=expected,
        )
        thresholds = gating.bands(settings or get_settings(), embedder.model)

        def edit(cur: psycopg.Cursor) -> dict[str, Any]:
            return changes.revise(cur, caller, changes.lock_visible(cur, caller, memory_id),
                                  target, thresholds=thresholds)

        row = locks.retrying(db, edit, cause="memory.update", actor=caller.actor)
        event.memory_ids += row.pop("retired_ids", [])
        return Memory.from_row(row)


def delete_path(db: Database, caller: Caller, path: str, *,
                expected_count: int | None = None) -> dict[str, Any]:
    """Delete every memory at ``path`` or below it, in any status: owner access there only.
    Without ``expected_count`` it is a dry run (the count, nothing removed); with it, exactly
    those rows go or, when the count changed since, nothing does (``Conflict``). Each row's
    last state stays in its history (restore brings a memory back); one audit entry names
    every removed id."""
    validate_path(path, field="path")
    dry_run = expected_count is None
    action, operation = ("read", "memory.count_path") if dry_run else ("delete",
                                                                        "memory.delete_path")
    with audited(db, caller, action, operation) as event:
        with db.transaction(cause=operation, actor=caller.actor) as cur:
            found = changes.delete_under(cur, caller, path, expected_count=expected_count)
        event.count = found["count"]
        if not dry_run:
            event.memory_ids = found["ids"]
        return {"path": path, "count": found["count"], "dry_run": dry_run,
                "deleted": 0 if dry_run else found["count"]}


def delete_memory(db: Database, caller: Caller, memory_id: uuid.UUID) -> dict[str, Any]:
    """Remove the row; the history trigger keeps its last state, so restore brings it back."""
    with audited(db, caller, "delete", "memory.delete") as event:
        event.memory_ids = [memory_id]
        with db.transaction(cause="memory.delete", actor=caller.actor) as cur:
            row = changes.delete(cur, caller, memory_id)
        event.count = 1
        return {"id": memory_id, "deleted": True, "version": row["version"]}
