"""Tombstones: retired values, keyed on scope and (slot + value hash, or value hash)."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any

import psycopg

from strata.auth.access import Caller, Level
from strata.foundation.errors import NotFound
from strata.write import fingerprints
from strata.write.canonical import slot_value_hash, value_hash

# A tombstone in force retires its value; with ``ended`` also a suppression whose ``until`` has
# passed (a rejection suppressed for a while: strata.write.gate holds its value for review
# again). One in force always comes first.
_TOMBSTONES_SQL = """
SELECT DISTINCT ON (i.ord) i.ord, t.id, t.reason::text AS reason,
       NOT (t.until IS NULL OR t.until > now()) AS ended
FROM unnest(%(paths)s::ltree[], %(hashes)s::bytea[], %(slots)s::text[], %(slot_hashes)s::bytea[])
     WITH ORDINALITY AS i(path, hash, slot, slot_hash, ord)
JOIN tombstones t ON t.tenant_id = %(tenant)s AND i.path <@ t.path
 AND (t.until IS NULL OR t.until > now() OR (%(ended)s AND t.reason = 'rejected'))
 AND (t.value_hash = i.hash
      OR (i.slot IS NOT NULL AND t.slot = i.slot AND t.slot_value_hash = i.slot_hash))
ORDER BY i.ord, (t.until IS NULL OR t.until > now()) DESC,
         t.reason DESC, t.created_at DESC  -- forgotten, rejected, superseded
"""


def find_tombstones(
    cur: psycopg.Cursor, tenant_id: uuid.UUID,
    values: Sequence[tuple[str, str, str | None, str | None]], *, ended: bool = False,
) -> dict[int, dict[str, Any]]:
    """Tombstones retiring each (path, canonical, slot, value), keyed by input index; one
    statement for a whole batch. ``ended``: where none is in force, a suppression that has
    ended (``ended`` true in the row) counts too. A forgotten fact the item carries, however
    it is worded (:mod:`.fingerprints`), comes first."""
    if not values:
        return {}
    rows = cur.execute(
        _TOMBSTONES_SQL,
        {
            "tenant": tenant_id,
            "paths": [v[0] for v in values],
            "hashes": [value_hash(v[1]) for v in values],
            "slots": [v[2] for v in values],
            "slot_hashes": [slot_value_hash(v[3]) for v in values],
            "ended": ended,
        },
    ).fetchall()
    found = {r["ord"] - 1: r for r in rows}
    for n, tombstone_id in fingerprints.find(cur, tenant_id, values).items():
        found[n] = {"ord": n + 1, "id": tombstone_id, "reason": "forgotten", "ended": False}
    return found


def find_tombstone(
    cur: psycopg.Cursor, tenant_id: uuid.UUID, path: str, canonical: str, slot: str | None,
    value: str | None = None,
) -> dict[str, Any] | None:
    """The tombstone (if any) that retires this value in this scope."""
    return find_tombstones(cur, tenant_id, [(path, canonical, slot, value)]).get(0)


_INSERT = """
INSERT INTO tombstones (tenant_id, path, slot, slot_value_hash, value_hash, reason, memory_id,
                        replaced_by, embedding, until)
VALUES (%(tenant)s, %(path)s::ltree, %(slot)s, %(slot_hash)s, %(hash)s, %(reason)s, %(memory)s,
        %(replaced_by)s, %(embedding)s, %(until)s)
RETURNING id
"""


def insert_tombstone(
    cur: psycopg.Cursor, tenant_id: uuid.UUID, *, path: str, slot: str | None,
    value: str | None, value_hash: bytes, reason: str, memory_id: uuid.UUID | None,
    replaced_by: uuid.UUID | None = None, embedding: Any = None, until: Any = None,
) -> uuid.UUID:
    """Retire a value in ``path``'s subtree (until ``until``, when given). A forgotten value
    keeps no embedding."""
    return cur.execute(_INSERT, {
        "tenant": tenant_id, "path": path, "slot": slot,
        "slot_hash": slot_value_hash(value) if slot else None, "hash": bytes(value_hash),
        "reason": reason, "memory": memory_id, "replaced_by": replaced_by,
        "embedding": None if reason == "forgotten" else embedding, "until": until,
    }).fetchone()["id"]


def lift(cur: psycopg.Cursor, tenant_id: uuid.UUID, *, path: str, value_hash: bytes,
         slot: str | None, value: str | None) -> None:
    """A person re-asserted a superseded value (promote, an explicit edit, restore): the
    superseded tombstones of it in scope stop blocking. Rejected and forgotten ones stay."""
    cur.execute(
        "UPDATE tombstones SET until = now()"
        " WHERE tenant_id = %(tenant)s AND reason = 'superseded'"
        "   AND (until IS NULL OR until > now()) AND %(path)s::ltree <@ path"
        "   AND (value_hash = %(hash)s OR (slot = %(slot)s AND slot_value_hash = %(slot_hash)s))",
        {"tenant": tenant_id, "path": path, "hash": bytes(value_hash), "slot": slot,
         "slot_hash": slot_value_hash(value) if slot else None},
    )


def insert_forgotten(
    cur: psycopg.Cursor, tenant_id: uuid.UUID, *, path: str, content: str, canonical: str,
    slot: str | None, value: str | None, memory_id: uuid.UUID,
    shared: frozenset[str] = frozenset(),
) -> uuid.UUID:
    """Retire a forgotten statement in ``path``'s subtree: no content, no embedding, no plain
    hash, not even the slot's name ("user.therapist" says what was said) -- its keyed
    fingerprint (:mod:`.fingerprints`; ``shared``: the words the scope still holds
    elsewhere), whose decisive text feature stands in ``value_hash`` too."""
    key_id, key = fingerprints.tenant_key(cur, tenant_id)
    fp = fingerprints.fingerprint(key, fingerprints.features(content, canonical, slot, value,
                                                             shared=shared))
    return cur.execute(
        "INSERT INTO tombstones (tenant_id, path, slot, slot_value_hash, value_hash, reason,"
        " memory_id, fingerprint_key_id, fingerprint, fingerprint_weights, fingerprint_kinds)"
        " VALUES (%(tenant)s, %(path)s::ltree, NULL, NULL, %(hash)s, 'forgotten',"
        " %(memory)s, %(key_id)s, %(hashes)s, %(weights)s, %(kinds)s) RETURNING id",
        {"tenant": tenant_id, "path": path, "key_id": key_id,
         "hash": fingerprints.keyed(key, f"c:{canonical}"), "memory": memory_id, **fp},
    ).fetchone()["id"]


# What a person who owns a path may see of the tombstones there: never a value, a hash or a
# fingerprint -- that a value was retired, why, when, and by which memory.
TOMBSTONE_COLUMNS = """t.id, t.path::text AS path, t.reason::text AS reason, t.memory_id,
       t.replaced_by, t.until, t.created_at,
       (t.until IS NULL OR t.until > now()) AS in_force"""


def lift_one(cur: psycopg.Cursor, caller: Caller, tombstone_id: uuid.UUID) -> dict[str, Any]:
    """An owner's explicit act: the tombstone stops blocking its value from now on (a
    forgotten fact may be stated again; a rejected or superseded value is a value like any
    other). Lifting one that no longer blocks changes nothing. ``NotFound`` where the caller
    cannot read its path; ``Forbidden`` where it can but does not own it."""
    row = cur.execute(
        f"SELECT {TOMBSTONE_COLUMNS} FROM tombstones t"
        " WHERE t.tenant_id = %s AND t.id = %s FOR UPDATE",
        (caller.tenant_id, tombstone_id)).fetchone()
    if row is None or not caller.can(row["path"], Level.read):
        raise NotFound("tombstone", tombstone_id)
    caller.require(row["path"], Level.owner, field="tombstone_id")
    if not row["in_force"]:
        return row
    # until = now() is not after now(): the row returned says it is no longer in force.
    return cur.execute(
        f"UPDATE tombstones t SET until = now() WHERE t.tenant_id = %s AND t.id = %s"
        f" RETURNING {TOMBSTONE_COLUMNS}",
        (caller.tenant_id, tombstone_id)).fetchone()
