"""Changes to memories that already exist: edit (PATCH, named replace, MCP update), move,
restore, review decisions, delete and forget.

Every one of them goes through the same rules as a new statement:

- **Authorisation on every place a change touches.** The memory is found by id in the
  tenant first and then judged at its *current* path: a caller that cannot read it there
  gets ``NotFound`` from every change, exactly as for an id that does not exist; one that
  can read but not write gets ``Forbidden``. A change that moves it, or brings back a state
  that lived elsewhere, needs write access there too.
- **Tombstones.** The value a memory will hold where it will live is checked against
  tombstones in scope (slot + value, value hash, and the embedding of superseded or
  rejected values). A forgotten or rejected value stays out; a superseded one may be
  brought back only by an explicit act of a person (an edit, a restore, a promotion), which
  lifts that tombstone.
- **One active holder.** An edit that makes a memory hold a value another active memory of
  the path holds is refused (``Conflict``); one that makes it hold a slot another active
  memory holds supersedes that holder (SUPERSEDES edge, tombstone), like a new statement.
- **A corrected value stays corrected.** An edit that changes an active memory's value
  tombstones the value it replaces, so a later repetition of it is blocked.
- **Serialisation.** The (path, value) and (path, slot) a change will hold are locked
  (:mod:`.locks`) before anything is decided.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import psycopg
from psycopg.types.json import Jsonb
from psycopg.types.range import Range

from strata.auth.access import Caller, Level
from strata.db.vector import exact_distance
from strata.foundation.errors import (
    Conflict, Forbidden, Gone, InvalidInput, NotFound, Suppressed, VersionConflict,
)
from strata.write import lexical, locks, slots
from strata.write import fingerprints
from strata.write.apply import add_edge, retire
from strata.write.canonical import canonicalize, slot_value_hash, value_hash
from strata.write.derived import derived_from
from strata.write.rows import COLUMNS, columns, evidence_entry, scope
from strata.write.tombstones import find_tombstone, insert_forgotten, insert_tombstone, lift
from strata.write.values import derive_value

# What forget strips from history: everything that could carry the content -- the slot's
# name too ("user.therapist") -- and the plain hash of its text (which would confirm a guess
# of it). Ids, path, kind and timestamps stay, so the record of *that* something was erased
# survives.
ERASED_FIELDS = ("content", "context", "canonical", "slot", "value", "value_hash", "evidence",
                 "meta", "tags", "name")

_BY_ID = f"SELECT {COLUMNS}, value_hash, embedding FROM memories WHERE tenant_id = %(tenant)s AND id = %(id)s"

_SIMILAR_RETIRED = f"""
SELECT t.id, t.reason::text AS reason, 1 - (t.embedding <=> %(vec)s) AS similarity
FROM tombstones t
WHERE t.tenant_id = %(tenant)s AND %(path)s::ltree <@ t.path
  AND t.reason = 'rejected' AND t.embedding IS NOT NULL
  AND (t.until IS NULL OR t.until > now()) AND t.memory_id IS DISTINCT FROM %(id)s
ORDER BY {exact_distance("t.embedding", "%(vec)s")}
LIMIT 1
"""


def find_visible(cur: psycopg.Cursor, caller: Caller, memory_id: uuid.UUID) -> dict[str, Any] | None:
    """The live memory, locked, if it exists (None if it does not); ``NotFound`` if it
    exists where the caller cannot read it -- the same answer as for no such memory."""
    row = cur.execute(_BY_ID + " FOR UPDATE", scope(caller, id=memory_id)).fetchone()
    if row is not None and not caller.can(row["path"], Level.read):
        raise NotFound("memory", memory_id)
    return row


def lock_visible(cur: psycopg.Cursor, caller: Caller, memory_id: uuid.UUID,
                 level: Level = Level.write) -> dict[str, Any]:
    """The live memory, locked, judged at its current path: ``NotFound`` when it does not
    exist or the caller cannot read it there, ``Forbidden`` when it can read but ``level``
    is more than it holds there."""
    row = find_visible(cur, caller, memory_id)
    if row is None:
        raise NotFound("memory", memory_id)
    caller.require(row["path"], level)
    return row


# --------------------------------------------------------------------------------------
# Edit: the target state of a memory, checked and written
# --------------------------------------------------------------------------------------


@dataclass
class Target:
    """What an edit asks a memory to become; None leaves a field as it is."""

    content: str | None = None
    context: str | None = None
    set_context: bool = False  # context given (possibly None: clear it)
    path: str | None = None
    kind: str | None = None
    slot: str | None = None
    set_slot: bool = False  # slot given (possibly None: clear it)
    value: str | None = None
    status: str | None = None
    importance: float | None = None
    confidence: float | None = None
    pinned: bool | None = None
    tags: list[str] | None = None
    meta: dict[str, Any] | None = None
    valid_from: datetime | None = None
    # Whether the start is one given (migration 0024); None: given when valid_from is (a
    # PATCH's), else as it was.
    valid_from_explicit: bool | None = None
    valid_to: datetime | None = None
    set_valid_to: bool = False
    name: str | None = None
    set_name: bool = False
    embedding: Any = None
    model: str | None = None
    evidence: list[dict[str, Any]] | None = None
    expected_version: int | None = None


_UPDATE = f"""
UPDATE memories SET
    content = %(content)s, canonical = %(canonical)s, value_hash = %(hash)s,
    context = CASE WHEN %(set_context)s THEN %(context)s ELSE context END,
    embedding = COALESCE(%(embedding)s, embedding),
    embedding_model = COALESCE(%(model)s, embedding_model),
    path = %(path)s::ltree, name = %(name)s, kind = %(kind)s::memory_kind, slot = %(slot)s,
    value = %(value)s, status = %(status)s::memory_status,
    importance = COALESCE(%(importance)s, importance),
    confidence = COALESCE(%(confidence)s, confidence),
    pinned = COALESCE(%(pinned)s, pinned),
    tags = COALESCE(%(tags)s::text[], tags),
    meta = COALESCE(%(meta)s, meta),
    valid = %(valid)s,
    valid_from_explicit = COALESCE(%(valid_from_explicit)s, valid_from_explicit),
    evidence = evidence || %(evidence)s,
    asserted_at = CASE WHEN %(reasserted)s THEN now() ELSE asserted_at END,
    version = version + 1, updated_at = now()
WHERE tenant_id = %(tenant)s AND id = %(id)s
RETURNING {COLUMNS}
"""


def revise(
    cur: psycopg.Cursor, caller: Caller, row: dict[str, Any], target: Target, *,
    thresholds: tuple[float, float] | None = None,
) -> dict[str, Any]:
    """Make the locked ``row`` (from :func:`lock_visible`) what ``target`` says, under every
    rule of the write path; return the new row. Raises before writing anything when a rule
    refuses (``Suppressed``, ``Conflict``, ``VersionConflict``, ``InvalidInput``)."""
    if target.expected_version is not None and row["version"] != target.expected_version:
        raise VersionConflict(target.expected_version, row["version"])
    path = target.path if target.path is not None else row["path"]
    if path != row["path"]:
        caller.require(path, Level.write)
    content = target.content if target.content is not None else row["content"]
    canonical = canonicalize(content)
    if not canonical:
        raise InvalidInput("content has no words", field="content")
    slot = target.slot if target.set_slot else row["slot"]
    value = row["value"]
    if target.value is not None or target.content is not None or slot != row["slot"]:
        value = derive_value(slot, content, target.value,
                             previous=row["value"] if slot == row["slot"] else None)
        # The key every entry point stores a slot under (contexts, multi-valued families).
        slot, value = slots.normal(slot, value, content)
    status = target.status or row["status"]
    new_hash = value_hash(canonical)
    valid_from = target.valid_from or row["valid"].lower
    explicit = target.valid_from_explicit  # a start the edit gives is one given
    if explicit is None and target.valid_from is not None:
        explicit = True
    valid_to = target.valid_to if target.set_valid_to else row["valid"].upper
    if valid_to is not None and valid_to <= valid_from:
        raise InvalidInput("valid_to must be after valid_from", field="valid_to")

    old_hash = bytes(row["value_hash"])
    value_changed = new_hash != old_hash and (
        slot is None or slot != row["slot"] or value != row["value"])
    holds_more = (value_changed or path != row["path"] or slot != row["slot"]
                  or value != row["value"] or status != row["status"]
                  or new_hash != old_hash)
    field = "content" if target.content is not None else ("path" if path != row["path"] else "id")
    if status in ("active", "candidate") and holds_more:
        keys = {locks.value_key(caller.tenant_id, path, new_hash)}
        if slot:
            keys.add(locks.slot_key(caller.tenant_id, path, slot))
        locks.hold(cur, keys)
        reasserts = _check_tombstones(
            cur, caller, row["id"], path, canonical, slot, value,
            target.embedding if target.embedding is not None else row["embedding"],
            thresholds, field=field)
    else:
        reasserts = False
    holders = (_place(cur, caller, row["id"], path, slot, value, new_hash, field=field)
               if status == "active" and holds_more else [])
    # Every refusal is behind us: from here on the edit writes.
    if reasserts:
        lift(cur, caller.tenant_id, path=path, value_hash=new_hash, slot=slot, value=value)
    retired = [h for h in holders
               if retire(cur, caller.tenant_id, h, row["id"], until=valid_from, confidence=1.0,
                         reason=f"superseded by an edit of memory {row['id']}",
                         decided_by=caller.actor)]
    if row["status"] == "active" and value_changed:
        # A correction: the value replaced stays retired where it lived.
        insert_tombstone(cur, caller.tenant_id, path=row["path"], slot=row["slot"],
                         value=row["value"], value_hash=old_hash, reason="superseded",
                         memory_id=row["id"], replaced_by=row["id"], embedding=row["embedding"])
    updated = cur.execute(_UPDATE, {
        "tenant": caller.tenant_id, "id": row["id"], "content": content, "canonical": canonical,
        "hash": new_hash, "set_context": target.set_context, "context": target.context,
        "embedding": target.embedding, "model": target.model, "path": path,
        "name": target.name if target.set_name else row["name"],
        "kind": target.kind or row["kind"], "slot": slot, "value": value, "status": status,
        "importance": target.importance, "confidence": target.confidence,
        "pinned": target.pinned, "tags": target.tags,
        "meta": Jsonb(target.meta) if target.meta is not None else None,
        "valid": Range(valid_from, valid_to, "[)"), "evidence": Jsonb(target.evidence or []),
        "valid_from_explicit": explicit,
        "reasserted": value_changed or status != row["status"],
    }).fetchone()
    if content != row["content"]:
        _set_lexical_key(cur, caller.tenant_id, row["id"], canonical)
    updated["retired_ids"] = retired
    return updated


def _set_lexical_key(cur: psycopg.Cursor, tenant_id: uuid.UUID, memory_id: uuid.UUID,
                     canonical: str) -> None:
    """The memory's lexical key (migration 0012) for what it says now."""
    key = lexical.lexical_key(canonical)
    if key is None:
        cur.execute("DELETE FROM memory_lexical_keys WHERE memory_id = %s", (memory_id,))
        return
    cur.execute(
        "INSERT INTO memory_lexical_keys (memory_id, tenant_id, lexical_hash) VALUES (%s, %s, %s)"
        " ON CONFLICT (memory_id) DO UPDATE SET lexical_hash = excluded.lexical_hash",
        (memory_id, tenant_id, key))


def _check_tombstones(
    cur: psycopg.Cursor, caller: Caller, memory_id: uuid.UUID, path: str, canonical: str,
    slot: str | None, value: str | None, embedding: Any, thresholds, *, field: str,
) -> bool:
    """A forgotten or rejected value stays out, by hash, by slot + value, or (rejected) by
    meaning: ``Suppressed``. An explicit act may bring a superseded value back: True when
    it does, and the caller lifts those tombstones once nothing else refuses the edit."""
    tomb = find_tombstone(cur, caller.tenant_id, path, canonical, slot, value)
    if tomb is not None and tomb["reason"] != "superseded":
        raise Suppressed(tomb["id"], tomb["reason"], field=field)
    if embedding is not None and thresholds is not None:
        similar = cur.execute(_SIMILAR_RETIRED, {
            "tenant": caller.tenant_id, "path": path, "vec": embedding, "id": memory_id,
        }).fetchone()
        if similar is not None and similar["similarity"] >= thresholds[0]:
            raise Suppressed(similar["id"], similar["reason"], field=field)
    return tomb is not None


# --------------------------------------------------------------------------------------
# Review
# --------------------------------------------------------------------------------------


def lock_candidate(cur: psycopg.Cursor, caller: Caller, memory_id: uuid.UUID) -> dict[str, Any]:
    row = lock_visible(cur, caller, memory_id)
    if row["status"] != "candidate":
        raise Conflict(f"memory is {row['status']}, not a candidate for review", field="id")
    return row


def promote(cur: psycopg.Cursor, caller: Caller, memory_id: uuid.UUID,
            thresholds: tuple[float, float] | None = None) -> tuple[dict[str, Any], list[uuid.UUID]]:
    """The change is real: the candidate becomes active under the rules of an edit (a
    forgotten or rejected value is refused; the superseded value it brings back is lifted;
    the slot's holder is superseded), and what it contradicts is superseded too."""
    cand = lock_candidate(cur, caller, memory_id)
    contradicted = [r["target_id"] for r in cur.execute(
        "SELECT r.target_id, m.path::text AS path FROM memory_relationships r JOIN memories m"
        " ON m.id = r.target_id AND m.tenant_id = r.tenant_id"
        " WHERE r.tenant_id = %(tenant)s AND r.source_id = %(id)s AND r.type = 'CONTRADICTS'"
        "   AND m.status = 'active' AND m.path <@ %(writable)s::ltree[] ORDER BY r.target_id",
        scope(caller, id=memory_id),
    ).fetchall()]
    # Contradicted memories first: one of them may hold the slot the candidate takes.
    retired = [t for t in contradicted
               if retire(cur, caller.tenant_id, t, memory_id, until=cand["valid"].lower,
                         confidence=1.0, reason="promoted on review", decided_by=caller.actor)]
    row = revise(cur, caller, cand, Target(
        status="active", evidence=[evidence_entry(caller, "review.promote")]),
        thresholds=thresholds)
    return row, retired + row.pop("retired_ids")


def reject(cur: psycopg.Cursor, caller: Caller, memory_id: uuid.UUID, *,
           suppress: bool, until: datetime | None = None) -> dict[str, Any]:
    """Not true: rejected, its validity closed. With ``suppress`` its value is tombstoned, so
    it is blocked wherever it comes back in this scope -- until ``until`` when given; after
    it the value is held for review again (strata.write.gate)."""
    cand = lock_candidate(cur, caller, memory_id)
    row = cur.execute(
        "UPDATE memories SET status = 'rejected', version = version + 1, updated_at = now(),"
        " valid = tstzrange(lower(valid), GREATEST(lower(valid) + interval '1 microsecond', now()))"
        f" WHERE id = %s RETURNING {COLUMNS}",
        (memory_id,),
    ).fetchone()
    if suppress:
        insert_tombstone(cur, caller.tenant_id, path=cand["path"], slot=cand["slot"],
                         value=cand["value"], value_hash=bytes(cand["value_hash"]),
                         reason="rejected", memory_id=memory_id, embedding=cand["embedding"],
                         until=until)
        # What else holds the suppressed value in its scope is not true either.
        for other in live_holders(cur, caller.tenant_id, cand["path"], [cand], exclude={memory_id}):
            if not caller.can(other["path"], Level.write):
                raise Forbidden("a memory holding this value lies where this key cannot write",
                                field="id")
            cur.execute(
                "UPDATE memories SET status = 'rejected', version = version + 1,"
                " updated_at = now(), valid = tstzrange(lower(valid),"
                " GREATEST(lower(valid) + interval '1 microsecond', now())) WHERE id = %s",
                (other["id"],))
    return row


def merge(cur: psycopg.Cursor, caller: Caller, memory_id: uuid.UUID,
          into: uuid.UUID) -> dict[str, Any]:
    """The candidate says what an existing memory says: its evidence joins that memory, and
    the candidate is rejected with a DUPLICATE_OF edge."""
    lock_candidate(cur, caller, memory_id)
    target = cur.execute(_BY_ID + " FOR UPDATE", scope(caller, id=into)).fetchone()
    if target is None or target["status"] != "active" or not caller.can(target["path"], Level.read):
        raise NotFound("memory", into, field="into")
    caller.require(target["path"], Level.write, field="into")
    row = cur.execute(
        "UPDATE memories t SET evidence = t.evidence || c.evidence || %s,"
        " reinforcements = t.reinforcements + 1, version = t.version + 1, updated_at = now()"
        f" FROM memories c WHERE t.id = %s AND c.id = %s RETURNING {columns('t')}",
        (Jsonb([evidence_entry(caller, "review.merge")]), into, memory_id),
    ).fetchone()
    cur.execute("UPDATE memories SET status = 'rejected', version = version + 1,"
                " updated_at = now() WHERE id = %s", (memory_id,))
    add_edge(cur, caller.tenant_id, memory_id, into, "DUPLICATE_OF", 1.0, "merged on review",
             caller.actor)
    return row


# --------------------------------------------------------------------------------------
# Delete, forget, restore
# --------------------------------------------------------------------------------------


def delete(cur: psycopg.Cursor, caller: Caller, memory_id: uuid.UUID) -> dict[str, Any]:
    """Remove the row; the history trigger keeps its last state, so restore brings it back."""
    row = lock_visible(cur, caller, memory_id)
    gone = cur.execute("DELETE FROM memories WHERE tenant_id = %s AND id = %s",
                       (caller.tenant_id, memory_id)).rowcount
    if not gone:  # deleted before: its row's trigger cannot tell, so the erasure does
        cur.execute(_FORGOTTEN_EVENT, scope(caller, id=memory_id))
    return row


def delete_under(cur: psycopg.Cursor, caller: Caller, path: str, *,
                 expected_count: int | None) -> dict[str, Any]:
    """Every memory at ``path`` or below it, in any status, counted -- and, unless
    ``expected_count`` is None (a dry run), removed like :func:`delete` (each row's last state
    stays in its history, so restore brings it back). The caller must own ``path``. The rows
    are locked first, so the count checked is the count removed: a different one (another
    writer came in since the dry run) is a ``Conflict`` and nothing is removed."""
    caller.require(path, Level.owner)
    lock = "" if expected_count is None else " ORDER BY id FOR UPDATE"
    ids = [r["id"] for r in cur.execute(
        "SELECT id FROM memories WHERE tenant_id = %(tenant)s AND path <@ %(path)s::ltree"
        + lock, scope(caller, path=path)).fetchall()]
    if expected_count is not None:
        if len(ids) != expected_count:
            raise Conflict(f"{len(ids)} memories are under {path} now, not {expected_count}: "
                           "count again (dry_run) and confirm that number",
                           field="expected_count")
        cur.execute("DELETE FROM memories WHERE tenant_id = %(tenant)s AND id = ANY(%(ids)s)",
                    scope(caller, ids=ids))
    return {"path": path, "count": len(ids), "ids": ids}


def _last_state(cur: psycopg.Cursor, caller: Caller, memory_id: uuid.UUID) -> dict[str, Any] | None:
    """A deleted memory's last state (its delete snapshot), locked."""
    return cur.execute(
        "SELECT path::text AS path, erased, row_data, version FROM memory_history"
        " WHERE tenant_id = %(tenant)s AND memory_id = %(id)s ORDER BY id DESC LIMIT 1"
        " FOR UPDATE",
        scope(caller, id=memory_id),
    ).fetchone()


def forget(cur: psycopg.Cursor, caller: Caller, memory_id: uuid.UUID) -> dict[str, Any]:
    """Erasure: the row goes, its history keeps no content and no plain hash, and every
    statement it ever held is tombstoned at the path it lives at with a keyed fingerprint
    (no content, no embedding: :mod:`.fingerprints`), so it cannot be created again there,
    however it is worded. A deleted memory is judged, and tombstoned, where it last lived.
    Another active or candidate memory holding a forgotten value inside that scope -- the
    same value, or the fact in other words -- holds what was just erased: it is forgotten
    with it (``also_forgotten``), or, where the caller cannot write it, nothing is
    (``Forbidden``). Forgetting twice answers the same as once."""
    live = find_visible(cur, caller, memory_id)
    if live is not None:
        path, erased = live["path"], False
    else:
        last = _last_state(cur, caller, memory_id)
        if last is None:
            raise NotFound("memory", memory_id)
        path, erased = last["path"], last["erased"]
    if not caller.can(path, Level.read):
        raise NotFound("memory", memory_id)
    caller.require(path, Level.write)
    if erased:
        return {"tombstone_ids": [t["id"] for t in cur.execute(
            "SELECT id FROM tombstones WHERE tenant_id = %(tenant)s AND memory_id = %(id)s"
            " AND reason = 'forgotten' ORDER BY created_at, id",
            scope(caller, id=memory_id),
        ).fetchall()], "also_forgotten": []}
    tombstones: list[uuid.UUID] = []
    also: list[uuid.UUID] = []
    todo, done = [(memory_id, path)], set()
    while todo:
        one, where = todo.pop(0)
        if one in done:
            continue
        done.add(one)
        values = _erase(cur, caller, one)
        shared = fingerprints.held_elsewhere(
            cur, caller.tenant_id, where, [(v["content"], v["canonical"]) for v in values],
            apart=[*done, *(t[0] for t in todo)])
        tombstones += [
            insert_forgotten(cur, caller.tenant_id, path=where, content=v["content"],
                             canonical=v["canonical"], slot=v["slot"], value=v["value"],
                             memory_id=one, shared=shared)
            for v in values
        ]
        # What was made from it (a reflection, a consolidation) may carry its content: the
        # cascade (migration 0019) retired it when the row went; erased here with it. So is
        # what says the forgotten fact in other words: no live memory may carry it.
        carriers = [*live_holders(cur, caller.tenant_id, where, values, exclude=done),
                    *(d for d in derived_from(cur, caller.tenant_id, one) if d["id"] not in done),
                    *_carrying(cur, caller.tenant_id, where, values, exclude=done)]
        for other in carriers:
            if not caller.can(other["path"], Level.write):
                raise Forbidden("a memory holding this value lies where this key cannot write",
                                field="id")
            if other["id"] not in also:
                also.append(other["id"])
            todo.append((other["id"], other["path"]))
    return {"tombstone_ids": tombstones, "also_forgotten": also}


# The event of erasing a memory deleted before (its last state in history): the live
# memory's erasure is the delete, whose event the history trigger writes (migration 0025).
_FORGOTTEN_EVENT = """
INSERT INTO events (tenant_id, type, memory_id, path, version, cause, actor, operation_id)
SELECT tenant_id, 'forgotten', memory_id, path, version,
       nullif(current_setting('strata.cause', true), ''),
       nullif(current_setting('strata.actor', true), ''),
       nullif(current_setting('strata.operation_id', true), '')::uuid
FROM memory_history WHERE tenant_id = %(tenant)s AND memory_id = %(id)s
ORDER BY version DESC LIMIT 1
"""


def _erase(cur: psycopg.Cursor, caller: Caller, memory_id: uuid.UUID) -> list[dict[str, Any]]:
    """Delete the row and scrub its history, edges, receipts and earlier tombstones of
    content and plain hashes; return every statement it ever held (content, canonical,
    hash, slot, value) for the fingerprints."""
    values = cur.execute(
        """
        SELECT DISTINCT ON (value_hash, slot, value) * FROM (
            SELECT value_hash, slot, value, content, canonical
            FROM memories WHERE tenant_id = %(tenant)s AND id = %(id)s
            UNION ALL
            SELECT decode(substr(row_data->>'value_hash', 3), 'hex'),
                   row_data->>'slot', row_data->>'value', row_data->>'content',
                   row_data->>'canonical'
            FROM memory_history WHERE tenant_id = %(tenant)s AND memory_id = %(id)s
              AND NOT erased
        ) v ORDER BY value_hash, slot, value
        """,
        scope(caller, id=memory_id),
    ).fetchall()
    gone = cur.execute("DELETE FROM memories WHERE tenant_id = %s AND id = %s",
                       (caller.tenant_id, memory_id)).rowcount
    if not gone:  # deleted before: its row's trigger cannot tell, so the erasure does
        cur.execute(_FORGOTTEN_EVENT, scope(caller, id=memory_id))
    # Edges keep their type and who decided, but a reason may quote the erased content.
    cur.execute(
        "UPDATE memory_relationships SET reason = NULL"
        " WHERE tenant_id = %(tenant)s AND (source_id = %(id)s OR target_id = %(id)s)",
        scope(caller, id=memory_id),
    )
    cur.execute(
        "UPDATE memory_history SET erased = true, row_data = row_data - %(fields)s::text[]"
        " WHERE tenant_id = %(tenant)s AND memory_id = %(id)s",
        {"fields": list(ERASED_FIELDS), "tenant": caller.tenant_id, "id": memory_id},
    )
    # A plain hash of the text confirms a guess of it: the value it retired before (a
    # superseded or rejected tombstone, with its embedding) and the receipt that stored it
    # keep none. The forgotten tombstones hold keyed hashes only.
    cur.execute("DELETE FROM tombstones WHERE tenant_id = %(tenant)s AND memory_id = %(id)s"
                " AND reason <> 'forgotten'", scope(caller, id=memory_id))
    _rehash_receipts(cur, caller.tenant_id, memory_id)
    return values


def _rehash_receipts(cur: psycopg.Cursor, tenant_id: uuid.UUID, memory_id: uuid.UUID) -> None:
    """The receipt items that wrote or matched ``memory_id`` keep their shape, with a hash
    keyed under the tenant's fingerprint key in place of the plain one (as an item refused
    as forgotten carries)."""
    rows = cur.execute(
        "SELECT id, items FROM ingest_receipts WHERE tenant_id = %s AND items @> %s FOR UPDATE",
        (tenant_id, Jsonb([{"memory_id": str(memory_id)}]))).fetchall()
    if not rows:
        return
    _, key = fingerprints.tenant_key(cur, tenant_id)
    for r in rows:
        items = [{**i, "content_hash": fingerprints.keyed(key, f"r:{i['content_hash']}").hex()}
                 if i.get("memory_id") == str(memory_id) and i.get("content_hash") else i
                 for i in r["items"]]
        cur.execute("UPDATE ingest_receipts SET items = %s WHERE id = %s", (Jsonb(items), r["id"]))


def _carrying(cur: psycopg.Cursor, tenant_id: uuid.UUID, path: str,
              values: list[dict[str, Any]], *, exclude) -> list[dict[str, Any]]:
    """Active and candidate memories in ``path``'s subtree that carry one of the statements
    just forgotten, in other words (:mod:`.fingerprints`). Every one of them is tested: a
    text index would miss what only the lexical form shares ("Postgres" is "PostgreSQL"),
    and a forget is rare and scoped to one path."""
    rows = [r for r in cur.execute(
        "SELECT id, path::text AS path, canonical, slot, value FROM memories"
        " WHERE tenant_id = %(tenant)s AND path <@ %(path)s::ltree"
        "   AND status IN ('active', 'candidate') ORDER BY id",
        {"tenant": tenant_id, "path": path}).fetchall() if r["id"] not in exclude]
    if not rows:
        return []
    hit = fingerprints.find(cur, tenant_id, [
        (r["path"], r["canonical"], r["slot"], r["value"]) for r in rows])
    found = [r["id"] for n, r in enumerate(rows) if n in hit]
    if not found:
        return []
    return cur.execute(
        "SELECT id, path::text AS path FROM memories WHERE tenant_id = %s AND id = ANY(%s)"
        " ORDER BY id FOR UPDATE", (tenant_id, found)).fetchall()


def live_holders(cur: psycopg.Cursor, tenant_id: uuid.UUID, path: str,
                 values: list[dict[str, Any]], *, exclude) -> list[dict[str, Any]]:
    """Active and candidate memories in ``path``'s subtree holding one of ``values`` (by
    value hash, or by slot + value): what a tombstone there would leave holding a retired
    value."""
    if not values:
        return []
    rows = cur.execute(
        "SELECT id, path::text AS path, slot, value, value_hash FROM memories"
        " WHERE tenant_id = %(tenant)s AND path <@ %(path)s::ltree"
        "   AND status IN ('active', 'candidate')"
        "   AND (value_hash = ANY(%(hashes)s) OR slot = ANY(%(slots)s)) ORDER BY id FOR UPDATE",
        {"tenant": tenant_id, "path": path, "hashes": [bytes(v["value_hash"]) for v in values],
         "slots": [v["slot"] for v in values if v["slot"]]},
    ).fetchall()
    hashes = {bytes(v["value_hash"]) for v in values}
    slot_values = {(v["slot"], slot_value_hash(v["value"])) for v in values if v["slot"]}
    return [r for r in rows if r["id"] not in exclude and (
        bytes(r["value_hash"]) in hashes
        or (r["slot"] and (r["slot"], slot_value_hash(r["value"])) in slot_values))]


_RESTORE_INSERT = f"""
INSERT INTO memories (id, tenant_id, path, name, content, context, canonical, value_hash,
    kind, slot, value, status, origin, importance, confidence, pinned,
    reinforcements, tier, expires_at, valid, recorded_at, embedding, embedding_model, version,
    evidence, meta, tags, created_at, updated_at, asserted_at, valid_from_explicit)
SELECT r.id, r.tenant_id, r.path, r.name, r.content, r.context, r.canonical, r.value_hash,
    r.kind, r.slot, r.value, r.status, r.origin, r.importance, r.confidence, r.pinned,
    r.reinforcements, r.tier, r.expires_at, r.valid, r.recorded_at,
    %(embedding)s, %(model)s, %(version)s, r.evidence || %(evidence)s, r.meta, r.tags,
    r.created_at, now(), r.asserted_at,
    COALESCE(r.valid_from_explicit, false)  -- absent from history rows before 0024
FROM jsonb_populate_record(NULL::memories, %(row)s) r
RETURNING {COLUMNS}
"""


def restore(
    cur: psycopg.Cursor, caller: Caller, memory_id: uuid.UUID, *, version: int | None,
    embed, model: str, thresholds: tuple[float, float] | None = None,
) -> dict[str, Any]:
    """Bring a deleted memory back with its id, or roll a live one back to ``version``,
    under the rules of an edit (a forgotten or rejected value does not come back; an active
    copy of the value in the path refuses; the slot's holder is superseded)."""
    live = find_visible(cur, caller, memory_id)
    if live is not None:
        if version is None:
            raise Conflict("the memory exists: name the version to restore", field="version")
        caller.require(live["path"], Level.write)
        wanted = "version = %(version)s"
    else:
        last = _last_state(cur, caller, memory_id)
        if last is None or not caller.can(last["path"], Level.read):
            raise NotFound("memory", memory_id)
        wanted = "version = %(version)s" if version is not None else "operation = 'delete'"
    snap = cur.execute(
        "SELECT row_data, erased, version FROM memory_history"
        " WHERE tenant_id = %(tenant)s AND memory_id = %(id)s"
        f" AND path <@ %(readable)s::ltree[] AND {wanted} ORDER BY id DESC LIMIT 1",
        scope(caller, id=memory_id, version=version),
    ).fetchone()
    if snap is None:
        raise NotFound("version", memory_id, field="version")
    if snap["erased"]:
        raise Gone("this memory was forgotten: its content is erased")
    data = snap["row_data"]
    caller.require(data["path"], Level.write, field="version")
    evidence = [evidence_entry(caller, "restore")]
    vector = embed(data["content"])
    if live is not None:
        bounds = cur.execute("SELECT lower(%(v)s::tstzrange) AS lo, upper(%(v)s::tstzrange) AS hi",
                             {"v": data["valid"]}).fetchone()
        target = Target(
            content=data["content"], context=data.get("context"), set_context=True,
            path=data["path"], kind=data["kind"], slot=data.get("slot"), set_slot=True,
            value=data.get("value"), status=data["status"],
            importance=data["importance"], confidence=data["confidence"], pinned=data["pinned"],
            tags=data.get("tags"), meta=data.get("meta"), name=data.get("name"), set_name=True,
            valid_from=bounds["lo"], valid_to=bounds["hi"], set_valid_to=True,
            valid_from_explicit=bool(data.get("valid_from_explicit")),
            embedding=vector, model=model, evidence=evidence,
        )
        row = revise(cur, caller, live, target, thresholds=thresholds)
        row.pop("retired_ids", None)
        return row
    if data["status"] in ("active", "candidate"):
        canonical = canonicalize(data["content"])
        keys = {locks.value_key(caller.tenant_id, data["path"], value_hash(canonical))}
        if data.get("slot"):
            keys.add(locks.slot_key(caller.tenant_id, data["path"], data["slot"]))
        locks.hold(cur, keys)
        reasserts = _check_tombstones(cur, caller, memory_id, data["path"], canonical,
                                      data.get("slot"), data.get("value"), vector, thresholds,
                                      field="version")
        holders = (_place(cur, caller, memory_id, data["path"], data.get("slot"),
                          data.get("value"), value_hash(canonical), field="version")
                   if data["status"] == "active" else [])
        if reasserts:
            lift(cur, caller.tenant_id, path=data["path"], value_hash=value_hash(canonical),
                 slot=data.get("slot"), value=data.get("value"))
        for other in holders:
            retire(cur, caller.tenant_id, other, memory_id, until=datetime.now(UTC),
                   confidence=1.0, reason=f"superseded by restoring memory {memory_id}",
                   decided_by=caller.actor)
    # Above every version the memory ever had (not just the restored one), so a writer
    # still holding an old version cannot compare-and-set against it.
    next_version = cur.execute(
        "SELECT max(version) + 1 AS v FROM memory_history"
        " WHERE tenant_id = %(tenant)s AND memory_id = %(id)s",
        scope(caller, id=memory_id),
    ).fetchone()["v"]
    restored = cur.execute(_RESTORE_INSERT, {
        "row": Jsonb(data), "embedding": vector, "model": model, "version": next_version,
        "evidence": Jsonb(evidence),
    }).fetchone()
    _set_lexical_key(cur, caller.tenant_id, memory_id, canonicalize(restored["content"]))
    return restored


def _place(cur: psycopg.Cursor, caller: Caller, memory_id: uuid.UUID, path: str,
           slot: str | None, value: str | None, new_hash: bytes, *, field: str) -> list[uuid.UUID]:
    """Before ``memory_id`` becomes active holding (path, slot, value): ``Conflict`` when
    another active memory of the path already holds the value (by canonical text, or by slot
    and value); else the other active holders of the slot, which the caller retires."""
    holders = []
    for other in cur.execute(
        "SELECT id, value_hash, slot, value FROM memories"
        " WHERE tenant_id = %(tenant)s AND path = %(path)s::ltree AND status = 'active'"
        "   AND id <> %(id)s AND (value_hash = %(hash)s"
        "        OR (%(slot)s::text IS NOT NULL AND slot = %(slot)s))"
        " ORDER BY id FOR UPDATE",
        {"tenant": caller.tenant_id, "path": path, "slot": slot, "hash": new_hash,
         "id": memory_id},
    ).fetchall():
        if bytes(other["value_hash"]) == new_hash or (slot and other["value"] == value):
            raise Conflict(f"active memory {other['id']} in this path already holds this value",
                           field=field)
        holders.append(other["id"])
    return holders


__all__ = ["ERASED_FIELDS", "Target", "delete", "find_visible", "forget", "live_holders",
           "lock_candidate", "lock_visible", "merge", "promote", "reject", "restore", "revise"]
