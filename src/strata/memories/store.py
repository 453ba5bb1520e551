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
from datetime import UTC, datetime
from typing import Any

import psycopg
from psycopg.types.json import Jsonb
from psycopg.types.range import Range

from strata.audit import audited
from strata.auth.access import Caller, Level
from strata.db import Database
from strata.errors import Conflict, InvalidInput, NotFound, Suppressed, VersionConflict
from strata.write.canonical import canonicalize, value_hash
from strata.write.tombstones import find_tombstone
from strata.memories.models import CreateRequest, Memory, MemoryIn, MemoryPatch, WriteResult
from strata.paths import validate_path
from strata.providers import Embedder

COLUMNS = """id, path::text AS path, name, content, kind::text AS kind, slot, value,
    status::text AS status, origin::text AS origin, importance, confidence, pinned,
    tier::text AS tier, expires_at, valid, recorded_at, version, access_count, last_accessed_at,
    reinforcements, embedding_model, evidence, meta, tags, created_at, updated_at"""

_SELECT_READABLE = f"""
SELECT {COLUMNS} FROM memories
WHERE tenant_id = %(tenant)s AND id = %(id)s AND path <@ %(readable)s::ltree[]
"""


def scope(caller: Caller, **params: Any) -> dict[str, Any]:
    return {
        "tenant": caller.tenant_id,
        "readable": caller.paths(Level.read),
        "writable": caller.paths(Level.write),
        **params,
    }


def evidence_entry(caller: Caller, source: str) -> dict[str, Any]:
    return {
        "source": source,
        "surface": caller.surface,
        "principal_id": str(caller.principal_id) if caller.principal_id else None,
        "at": datetime.now(UTC).isoformat(),
    }


# --------------------------------------------------------------------------------------
# Create
# --------------------------------------------------------------------------------------


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


_REPLACE = """
UPDATE memories
SET content = %(content)s, canonical = %(canonical)s, value_hash = %(hash)s, kind = %(kind)s,
    slot = %(slot)s, importance = COALESCE(%(importance)s, importance),
    valid = CASE WHEN %(valid_from)s::timestamptz IS NULL THEN valid
                 ELSE tstzrange(%(valid_from)s, NULL) END,
    embedding = %(embedding)s, embedding_model = %(model)s, meta = %(meta)s, tags = %(tags)s,
    evidence = evidence || %(evidence)s, version = version + 1, updated_at = now()
WHERE id = %(id)s
RETURNING id, version
"""

# Rows an incoming batch may land on, locked for the rest of the transaction.
_NAMED = """
SELECT m.id, m.path::text AS path, m.name, m.value_hash
FROM memories m JOIN unnest(%(paths)s::ltree[], %(names)s::text[]) AS n(path, name)
  ON m.tenant_id = %(tenant)s AND m.path = n.path AND m.name = n.name
FOR UPDATE OF m
"""
def create_memories(
    db: Database, caller: Caller, req: CreateRequest, embedder: Embedder, judge=None,
    settings=None,
) -> list[WriteResult]:
    """Batch create: one result per input in input order, in one transaction.

    Items pass through the same gate and conflict analysis as ingestion (without
    extraction): tombstones block, a same-slot value supersedes, paraphrases reinforce. A bad
    item (invalid, not writable, or a name clash under ``on_conflict=error``) rejects the
    whole batch with its index named; a tombstoned value is ``blocked`` per item.
    """
    with audited(db, caller, "write", "memory.create") as event:
        prepared = _prepare(caller, req, embedder)
        with db.transaction(cause="memory.create", actor=caller.actor) as cur:
            results = _write_batch(cur, caller, prepared, req.on_conflict, embedder, judge,
                                   settings)
        event.memory_ids = [r.id for r in results if r.id]
        event.count = len(results)
        return results


# What an ingest outcome means for a direct write (the v1 create contract's statuses).
_STATUS = {
    "created": "inserted", "reinforced": "reinforced", "merged": "reinforced",
    "superseded_existing": "superseded_existing", "blocked": "blocked",
    "stored_as_superseded": "inserted", "candidate": "inserted", "skipped": "skipped",
}


def _write_batch(
    cur: psycopg.Cursor, caller: Caller, prepared: list[_Prepared], on_conflict: str,
    embedder: Embedder, judge, settings,
) -> list[WriteResult]:
    from strata.config import get_settings
    from strata.write import apply as persist
    from strata.write import gate as gating
    from strata.write.resolve import resolve

    tenant = caller.tenant_id
    named_items = [p for p in prepared if p.item.name is not None]
    named: dict[tuple[str, str], tuple[uuid.UUID, bytes]] = {}
    if named_items:
        for r in cur.execute(_NAMED, {
            "tenant": tenant, "paths": [p.path for p in named_items],
            "names": [p.item.name for p in named_items],
        }).fetchall():
            named[(r["path"], r["name"])] = (r["id"], bytes(r["value_hash"]))

    evidence = [evidence_entry(caller, "api")]
    now = datetime.now(UTC)
    results: list[WriteResult | None] = [None] * len(prepared)
    replaces: list[tuple[int, _Prepared, uuid.UUID]] = []
    staged: list[persist.Staged] = []
    first_of: dict[tuple, int] = {}
    for i, p in enumerate(prepared):
        item = p.item
        if item.name is not None and (p.path, item.name) in named:
            existing_id, existing_hash = named[(p.path, item.name)]
            if existing_hash == p.hash:
                results[i] = WriteResult(id=existing_id, status="skipped", reason="unchanged")
            elif on_conflict == "ignore":
                results[i] = WriteResult(id=existing_id, status="skipped", reason="name exists")
            elif on_conflict == "error":
                raise Conflict(
                    "a memory with this name exists in this path (on_conflict=error)",
                    field=f"memories[{i}].name",
                )
            else:
                replaces.append((i, p, existing_id))
            continue
        value = gating.normalise_value(item.value or item.content) if item.slot else None
        s = persist.Staged(
            idx=i, path=p.path, content=item.content, canonical=p.canonical, value_hash=p.hash,
            kind=item.kind, slot=item.slot, value=value,
            valid_from=item.valid_from or now, confidence=1.0, evidence=evidence,
            embedding=p.embedding, gate=None, verdicts=None, name=item.name,
            importance=item.importance, tags=list(dict.fromkeys(item.tags)), meta=item.meta,
        )
        key = (p.path, *gating.merge_key(s.slot, s.value, s.canonical))
        if key in first_of and item.name is None:
            s.gate = {"action": "merged", "into": first_of[key]}
        else:
            first_of.setdefault(key, i)
        if item.name is not None:
            named[(p.path, item.name)] = (uuid.UUID(int=0), p.hash)  # a later twin is skipped
        staged.append(s)

    resolve(cur, tenant, staged, gating.bands(settings or get_settings(), embedder.model), judge)
    outcomes = persist.apply(cur, tenant_id=tenant, items=staged, model=embedder.model,
                             recorded_at=now)
    for s, o in zip(staged, outcomes, strict=True):
        results[s.idx] = WriteResult(
            id=o.memory_id, status=_STATUS[o.outcome], reason=o.reason,
            tombstone_id=(s.gate or {}).get("tombstone_id") if o.outcome == "blocked" else None,
            version=o.version,
        )
    for i, p, existing_id in replaces:
        row = cur.execute(_REPLACE, {
            "id": existing_id, "content": p.item.content, "canonical": p.canonical,
            "hash": p.hash, "kind": p.item.kind, "slot": p.item.slot,
            "importance": p.item.importance, "valid_from": p.item.valid_from,
            "embedding": p.embedding, "model": embedder.model, "meta": Jsonb(p.item.meta),
            "tags": list(dict.fromkeys(p.item.tags)), "evidence": Jsonb(evidence),
        }).fetchone()
        results[i] = WriteResult(id=row["id"], status="updated", version=row["version"])
    return [r for r in results if r is not None]


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


def decode_cursor(cursor: str) -> tuple[datetime, uuid.UUID]:
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        at, ident = json.loads(raw)
        return datetime.fromisoformat(at), uuid.UUID(ident)
    except (binascii.Error, ValueError, TypeError, UnicodeDecodeError):
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


def lock_writable(cur: psycopg.Cursor, caller: Caller, memory_id: uuid.UUID) -> dict[str, Any]:
    """Lock a memory the caller may write: 404 when unreadable, 403 when read-only."""
    row = cur.execute(_SELECT_READABLE + " FOR UPDATE", scope(caller, id=memory_id)).fetchone()
    if row is None:
        raise NotFound("memory", memory_id)
    caller.require(row["path"], Level.write)
    return row


def update_memory(
    db: Database,
    caller: Caller,
    memory_id: uuid.UUID,
    patch: MemoryPatch,
    embedder: Embedder,
    *,
    expected_version: int | None = None,
) -> Memory:
    """Compare-and-set on ``version``; every change bumps it and leaves a history row."""
    expected = patch.expected_version if patch.expected_version is not None else expected_version
    with audited(db, caller, "write", "memory.update") as event:
        event.memory_ids = [memory_id]
        if expected is None:
            raise InvalidInput(
                "expected_version (or an If-Match header) is required", field="expected_version"
            )
        changes = patch.model_dump(exclude_unset=True, exclude={"expected_version"})
        if patch.path is not None:
            validate_path(patch.path)
            caller.require(patch.path, Level.write)
        vector = embedder.embed([patch.content])[0] if patch.content is not None else None
        with db.transaction(cause="memory.update", actor=caller.actor) as cur:
            row = lock_writable(cur, caller, memory_id)
            if row["version"] != expected:
                raise VersionConflict(expected, row["version"])
            canonical = canonicalize(patch.content) if patch.content is not None else None
            if canonical == "":
                raise InvalidInput("content has no words", field="content")
            # The gate applies to the value the row will hold where it will live: a new
            # content, or the current one moved into another path.
            if canonical is not None or (patch.path is not None and patch.path != row["path"]):
                tomb = find_tombstone(
                    cur, caller.tenant_id, patch.path or row["path"],
                    canonical if canonical is not None else canonicalize(row["content"]),
                    patch.slot or row["slot"],
                )
                if tomb is not None:
                    raise Suppressed(tomb["id"], tomb["reason"],
                                     field="content" if canonical is not None else "path")
            valid_from = changes.get("valid_from", row["valid"].lower)
            valid_to = changes.get("valid_to", row["valid"].upper)
            if valid_to is not None and valid_to <= valid_from:
                raise InvalidInput("valid_to must be after valid_from", field="valid_to")
            params = {
                **{k: changes.get(k) for k in (
                    "content", "path", "kind", "slot", "importance", "confidence", "pinned")},
                "set_slot": "slot" in changes,
                "tags": changes.get("tags"),
                "meta": Jsonb(patch.meta) if patch.meta is not None else None,
                "canonical": canonical,
                "hash": value_hash(canonical) if canonical is not None else None,
                "embedding": vector, "model": embedder.model if vector is not None else None,
                "valid": Range(valid_from, valid_to, "[)"),
                **scope(caller, id=memory_id, expected=expected),
            }
            updated = cur.execute(
                f"""
                UPDATE memories SET
                    content = COALESCE(%(content)s, content),
                    canonical = COALESCE(%(canonical)s, canonical),
                    value_hash = COALESCE(%(hash)s, value_hash),
                    embedding = COALESCE(%(embedding)s, embedding),
                    embedding_model = COALESCE(%(model)s, embedding_model),
                    path = COALESCE(%(path)s::ltree, path),
                    kind = COALESCE(%(kind)s::memory_kind, kind),
                    slot = CASE WHEN %(set_slot)s THEN %(slot)s ELSE slot END,
                    importance = COALESCE(%(importance)s, importance),
                    confidence = COALESCE(%(confidence)s, confidence),
                    pinned = COALESCE(%(pinned)s, pinned),
                    tags = COALESCE(%(tags)s::text[], tags),
                    meta = COALESCE(%(meta)s, meta),
                    valid = %(valid)s,
                    version = version + 1, updated_at = now()
                WHERE tenant_id = %(tenant)s AND id = %(id)s AND version = %(expected)s
                  AND path <@ %(writable)s::ltree[]
                RETURNING {COLUMNS}
                """,
                params,
            ).fetchone()
        return Memory.from_row(updated)


def delete_memory(db: Database, caller: Caller, memory_id: uuid.UUID) -> dict[str, Any]:
    """Remove the row; the history trigger keeps its last state, so restore brings it back."""
    with audited(db, caller, "delete", "memory.delete") as event:
        event.memory_ids = [memory_id]
        with db.transaction(cause="memory.delete", actor=caller.actor) as cur:
            row = lock_writable(cur, caller, memory_id)
            cur.execute(
                "DELETE FROM memories WHERE tenant_id = %(tenant)s AND id = %(id)s"
                " AND path <@ %(writable)s::ltree[]",
                scope(caller, id=memory_id),
            )
        event.count = 1
        return {"id": memory_id, "deleted": True, "version": row["version"]}
