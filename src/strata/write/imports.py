"""Import: memories, history, edges and tombstones from an export, under the write path's
rules. The file's records are the source's truth, so they keep their status, ids (derived)
and times; what the destination already holds decides the rest:

- an active or candidate memory whose value is tombstoned here is blocked, and so is any
  memory whose value was forgotten here;
- an active memory whose value is already active in its path reinforces that memory;
- an active memory whose slot another active memory holds in its path is held for review
  (candidate, CONTRADICTS edge), never made a second active holder.

A record's slot is stored under its normal key (:func:`.slots.normal`, as every entry point
does), so a file written before slots had contexts or values keeps French and Spanish as two
facts of ``user.languages``; its lexical key is computed here (``memory_lexical_keys``).

Records of one batch that touch one value or slot are decided one after another (waves, as
in :mod:`.apply`), under the same advisory locks.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import psycopg
from psycopg.types.json import Jsonb

from strata.foundation.errors import Conflict
from strata.write import fingerprints
from strata.write import gate as gating
from strata.write import lexical, locks, policy, slots
from strata.write.apply import waves
from strata.write.canonical import slot_value_hash
from strata.write.rows import held_text

# The memory, its lexical key (migration 0012) and its use by search (0021) in one statement;
# a record already there (ON CONFLICT) inserts none of them.
_INSERT_MEMORY = """
WITH m AS (
    INSERT INTO memories (id, tenant_id, path, name, content, context, canonical, value_hash,
        kind, slot, value, status, origin, importance, confidence, pinned,
        reinforcements, tier, expires_at, valid, recorded_at, embedding, embedding_model,
        version, evidence, meta, tags, created_at, updated_at, asserted_at, valid_from_explicit)
    VALUES (%(id)s, %(tenant)s, %(path)s::ltree, %(name)s, %(content)s, %(context)s,
        %(canonical)s, %(hash)s,
        %(kind)s, %(slot)s, %(value)s, %(status)s, %(origin)s, %(importance)s, %(confidence)s,
        %(pinned)s, %(reinforcements)s, %(tier)s,
        %(expires_at)s, %(valid)s, %(recorded_at)s, %(embedding)s, %(model)s, GREATEST(%(version)s, (
            -- a memory this store deleted comes back above every version it had here
            SELECT max(h.version) + 1 FROM memory_history h
            WHERE h.tenant_id = %(tenant)s AND h.memory_id = %(id)s)),
        %(evidence)s, %(meta)s, %(tags)s, %(created_at)s, %(updated_at)s, %(asserted_at)s,
        %(valid_from_explicit)s)
    ON CONFLICT (id) DO NOTHING
    RETURNING id, tenant_id
),
used AS (  -- its use by search (strata.write.bookkeeping), when the file says it had one
    INSERT INTO memory_access (memory_id, tenant_id, access_count, last_accessed_at)
    SELECT id, tenant_id, %(access_count)s, coalesce(%(last_accessed_at)s, %(updated_at)s)
    FROM m WHERE %(access_count)s > 0
)
INSERT INTO memory_lexical_keys (memory_id, tenant_id, lexical_hash)
SELECT id, tenant_id, %(lexical)s::bytea FROM m WHERE %(lexical)s::bytea IS NOT NULL
"""

_REINFORCE = """
UPDATE memories SET reinforcements = reinforcements + 1, version = version + 1,
       evidence = evidence || %(evidence)s, updated_at = now()
WHERE id = %(id)s AND tenant_id = %(tenant)s AND status = 'active'
RETURNING id
"""

_EDGE = """
INSERT INTO memory_relationships (id, tenant_id, source_id, target_id, type, confidence,
                                  reason, decided_by, created_at)
VALUES (%(id)s, %(tenant)s, %(source)s, %(target)s, %(type)s, %(confidence)s, %(reason)s,
        %(by)s, %(created_at)s)
ON CONFLICT DO NOTHING
"""

_HISTORY = """
INSERT INTO memory_history (tenant_id, memory_id, path, version, operation, row_data,
                            operation_id, cause, actor, changed_at, erased)
SELECT %(tenant)s::uuid, %(memory)s::uuid, %(path)s::ltree, %(version)s::int,
       %(operation)s::text, %(row)s::jsonb, %(operation_id)s::uuid, %(cause)s::text,
       %(actor)s::text, %(changed_at)s::timestamptz, %(erased)s::boolean
WHERE NOT EXISTS (
    -- One row per version a memory had: the file's row is there already (a re-import), or
    -- this store holds its own row for that version (the memory was deleted here and comes
    -- back above it), and this store's own history is the one kept.
    SELECT 1 FROM memory_history WHERE tenant_id = %(tenant)s AND memory_id = %(memory)s
      AND version = %(version)s)
"""

_TOMBSTONE = """
INSERT INTO tombstones (id, tenant_id, path, slot, slot_value_hash, value_hash, reason,
                        memory_id, replaced_by, embedding, until, created_at,
                        fingerprint_key_id, fingerprint, fingerprint_weights, fingerprint_kinds)
VALUES (%(id)s, %(tenant)s, %(path)s::ltree, %(slot)s, %(slot_hash)s, %(hash)s, %(reason)s,
        %(memory)s, %(replaced_by)s,
        COALESCE(%(embedding)s::vector, CASE WHEN %(refill)s THEN (
            SELECT m.embedding FROM memories m WHERE m.tenant_id = %(tenant)s
               AND m.id = %(memory)s AND m.embedding_model = %(model)s) END),
        %(until)s, %(created_at)s, %(key_id)s, %(fingerprint)s, %(weights)s, %(kinds)s)
ON CONFLICT (id) DO NOTHING
"""

_HELD = "imported value contradicts an active memory of the same slot: held for review"


@dataclass
class Incoming:
    """One memory record, as the row it would insert (see ``_INSERT_MEMORY``)."""

    row: dict[str, Any]
    embedding: Any
    reinforce_evidence: list[dict[str, Any]] = field(default_factory=list)
    # What the memory rule governing the path decided (strata.write.policy); set by write.
    rule: policy.RuleDecision | None = None

    def __post_init__(self) -> None:
        r = self.row
        r["slot"], r["value"] = slots.normal(r["slot"], r["value"], r["content"])
        r.setdefault("lexical", lexical.lexical_key(r["canonical"]))
        r.setdefault("valid_from_explicit", False)  # a row that does not say (migration 0024)

    def keys(self, tenant_id: uuid.UUID) -> set[tuple[str, ...]]:
        r = self.row
        keys = {locks.value_key(tenant_id, r["path"], r["hash"])}
        if r["slot"]:
            keys.add(locks.slot_key(tenant_id, r["path"], r["slot"]))
        return keys


@dataclass
class Decision:
    action: str  # inserted | held | reinforced | blocked
    memory_id: uuid.UUID | None = None
    tombstone_id: uuid.UUID | None = None
    reason: str | None = None
    rule_id: uuid.UUID | None = None  # the memory rule that decided, if one did


def write(cur: psycopg.Cursor, tenant_id: uuid.UUID, items: list[Incoming],
          thresholds: tuple[float, float], ours: set[uuid.UUID]) -> list[Decision]:
    """Decide and write every record; one decision per record, in order. ``ours`` holds
    the destination ids of the file's memories written so far (they are the file's own
    records, not something the destination already held).

    Memory rules apply as on every write (``strata.write.policy``): a record a rule excludes
    (or whose path captures nothing) is blocked whatever its status; a live record under
    review-only capture is held as a candidate."""
    out: dict[int, Decision] = {}
    ruled = policy.decide(cur, tenant_id, [(i.row["path"], held_text(i.row["content"],
                                                                      i.row.get("context")))
                                           for i in items])
    for n, (item, decision) in enumerate(zip(items, ruled, strict=True)):
        item.rule = decision
        if decision is not None and decision.action == "block":
            out[n] = Decision("blocked", reason=decision.reason, rule_id=decision.rule_id)
    todo = [(n, i) for n, i in enumerate(items) if n not in out]
    locks.hold(cur, {k for _, i in todo for k in i.keys(tenant_id)})
    for wave in waves(todo, lambda pair: pair[1].keys(tenant_id)):
        decided = _wave(cur, tenant_id, [i for _, i in wave], thresholds, ours)
        out.update((n, d) for (n, _), d in zip(wave, decided, strict=True))
    return [out[n] for n in range(len(items))]


def _wave(cur, tenant_id, items: list[Incoming], thresholds, ours) -> list[Decision]:
    decisions = gating.decide(cur, tenant_id, [
        gating.GateInput(i, it.row["path"], it.row["canonical"], it.row["slot"], it.row["value"],
                         False, it.embedding, it.row["lexical"])
        for i, it in enumerate(items)], thresholds)
    reasons = _tombstone_reasons(cur, decisions)
    out, rows, edges = [], [], []
    for item, d in zip(items, decisions, strict=True):
        row = item.row
        live = row["status"] in ("active", "candidate")
        if d.action == "blocked" and (live or reasons.get(d.tombstone_id) == "forgotten"):
            out.append(Decision("blocked", tombstone_id=d.tombstone_id,
                                reason=reasons.get(d.tombstone_id)))
            continue
        held = (item.rule is not None and item.rule.action == "hold"
                and row["status"] == "active")
        if held:  # review-only capture: a candidate, whatever the gate would have done
            rows.append({**row, "status": "candidate"})
            out.append(Decision("held", memory_id=row["id"], reason=item.rule.reason,
                                rule_id=item.rule.rule_id))
            continue
        if d.action == "reinforce" and row["status"] == "active":
            target = cur.execute(_REINFORCE, {"id": d.target_id, "tenant": tenant_id,
                                              "evidence": Jsonb(item.reinforce_evidence)}).fetchone()
            if target is not None:
                out.append(Decision("reinforced", memory_id=target["id"]))
                continue
        status = row["status"]
        if d.action == "judge" and status == "active":
            holders = [n["id"] for n in d.neighbours if n.get("slot_match")]
            if holders:
                status = "candidate"
                edges += [(row["id"], h) for h in holders]
        rows.append({**row, "status": status})
        out.append(Decision("held" if status != row["status"] else "inserted",
                            memory_id=row["id"]))
    if rows:
        cur.executemany(_INSERT_MEMORY, rows)
    for source, target in edges:
        insert_edge(cur, {
            "id": uuid.uuid5(source, f"held-for-review:{target}"), "tenant": tenant_id,
            "source": source, "target": target, "type": "CONTRADICTS", "confidence": 1.0,
            "reason": _HELD, "by": "import", "created_at": datetime.now(UTC)})
    return out


def _tombstone_reasons(cur, decisions) -> dict[uuid.UUID, str]:
    ids = [d.tombstone_id for d in decisions if d.action == "blocked" and d.tombstone_id]
    if not ids:
        return {}
    return {r["id"]: r["reason"] for r in cur.execute(
        "SELECT id, reason::text AS reason FROM tombstones WHERE id = ANY(%s)", (ids,))}


def insert_history(cur: psycopg.Cursor, params: dict[str, Any]) -> int:
    """One history row of the file (skipped when it is there already); rows inserted."""
    return cur.execute(_HISTORY, params).rowcount


def insert_edge(cur: psycopg.Cursor, params: dict[str, Any]) -> int:
    return cur.execute(_EDGE, params).rowcount


def insert_tombstone(cur: psycopg.Cursor, params: dict[str, Any]) -> int:
    """1 inserted, 0 there already, -1 skipped: a forgotten or rejected value that a live
    memory of this store holds in the tombstone's scope (importing the source's verdict
    would leave that memory holding a retired value, or erase it by import)."""
    params = {"key_id": None, "fingerprint": None, "weights": None, "kinds": None, **params}
    if params["fingerprint"] is not None:
        _import_key(cur, params["tenant"], params["key_id"], params.pop("secret"))
        if _carried_live(cur, params):
            return -1
    elif params["reason"] in ("forgotten", "rejected") and _held_live(cur, params):
        return -1
    return cur.execute(_TOMBSTONE, params).rowcount


def _import_key(cur: psycopg.Cursor, tenant_id: uuid.UUID, key_id: uuid.UUID,
                secret: bytes) -> None:
    """The key a file's fingerprints were made with, as one of the destination's own."""
    cur.execute("INSERT INTO fingerprint_keys (id, tenant_id, secret) VALUES (%s, %s, %s)"
                " ON CONFLICT (id) DO NOTHING", (key_id, tenant_id, secret))
    row = cur.execute("SELECT tenant_id, secret FROM fingerprint_keys WHERE id = %s",
                      (key_id,)).fetchone()
    if row["tenant_id"] != tenant_id or bytes(row["secret"]) != secret:
        raise Conflict(f"fingerprint key {key_id} belongs to another tenant: import without "
                       "keep_ids to derive new ids", field="fingerprint_key_id")


def _carried_live(cur: psycopg.Cursor, t: dict[str, Any]) -> bool:
    """Whether a live memory in the tombstone's scope carries the forgotten fact its
    fingerprint describes (then importing the verdict would leave it holding the fact)."""
    secret = bytes(cur.execute("SELECT secret FROM fingerprint_keys WHERE id = %s",
                               (t["key_id"],)).fetchone()["secret"])
    hashes = [bytes(h) for h in t["fingerprint"]]
    return any(
        fingerprints.carries(hashes, t["weights"], t["kinds"], fingerprints.keyed_probes(
            secret, m["canonical"], m["slot"], m["value"]))
        for m in cur.execute(
            "SELECT canonical, slot, value FROM memories WHERE tenant_id = %(tenant)s"
            " AND path <@ %(path)s::ltree AND status IN ('active', 'candidate')", t).fetchall())


def _held_live(cur: psycopg.Cursor, t: dict[str, Any]) -> bool:
    rows = cur.execute(
        "SELECT value_hash, slot, value FROM memories WHERE tenant_id = %(tenant)s"
        " AND path <@ %(path)s::ltree AND status IN ('active', 'candidate')"
        " AND (value_hash = %(hash)s OR (%(slot)s::text IS NOT NULL AND slot = %(slot)s))",
        t,
    ).fetchall()
    return any(bytes(r["value_hash"]) == t["hash"]
               or (t["slot"] and t["slot_hash"] and slot_value_hash(r["value"]) == t["slot_hash"])
               for r in rows)
