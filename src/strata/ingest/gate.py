"""The write gate: what may be written, and what each candidate must be compared with.

For every candidate, in order: tombstones in scope (slot + value, value hash, and for
superseded/rejected values the retired memory's embedding), an exact active duplicate, the
active holders of the same slot, and the nearest active neighbours with their similarity
band. The gate decides ``blocked``, ``candidate`` (an explicit change back to a retired
value, held for review), ``reinforce``, ``judge`` (the conflict step decides) or ``new``.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import psycopg

from strata.config import Settings
from strata.ingest.models import Neighbour
from strata.memories.canonical import canonicalize, slot_value_hash, value_hash
from strata.memories.store import find_tombstones

# (reinforce at or above, judge at or above) per embedder family, from eval/calibrate_bands.py.
# A sentence model scores paraphrases far higher than feature hashing does, so one pair of
# constants cannot serve both.
BANDS: dict[str, tuple[float, float]] = {
    # Feature hashing is lexical: "meeting on Monday" vs "on Tuesday" scores 0.80, so only a
    # near-verbatim repeat may reinforce without a judge.
    "strata-hash-v1": (0.92, 0.55),
    "default": (0.92, 0.85),
}
NEIGHBOURS = 5

# Aliases folded into a slot's value, so "Mongo" and "MongoDB" are one value.
VALUE_ALIASES = {
    "mongo": "mongodb", "postgres": "postgresql", "pg": "postgresql", "psql": "postgresql",
    "js": "javascript", "ts": "typescript", "golang": "go", "k8s": "kubernetes",
    "vs code": "vscode", "visual studio code": "vscode", "nvim": "neovim",
}


def normalise_value(value: str | None) -> str | None:
    if value is None:
        return None
    v = canonicalize(value)
    return VALUE_ALIASES.get(v, v) or None


def bands(settings: Settings, model: str) -> tuple[float, float]:
    family = next((k for k in BANDS if model.startswith(k)), "default")
    reinforce, judge = BANDS[family]
    return (settings.reinforce_threshold or reinforce, settings.conflict_threshold or judge)


@dataclass
class GateInput:
    idx: int
    path: str
    canonical: str
    slot: str | None
    value: str | None
    asserts_change: bool
    embedding: np.ndarray


@dataclass
class GateDecision:
    action: str  # blocked | candidate | reinforce | judge | new
    reason: str | None = None
    target_id: uuid.UUID | None = None
    tombstone_id: uuid.UUID | None = None
    neighbours: list[dict[str, Any]] = field(default_factory=list)  # {id, similarity, slot_match}

    def to_json(self) -> dict[str, Any]:
        return {
            "action": self.action, "reason": self.reason,
            "target_id": str(self.target_id) if self.target_id else None,
            "tombstone_id": str(self.tombstone_id) if self.tombstone_id else None,
            "neighbours": [{**n, "id": str(n["id"])} for n in self.neighbours],
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> "GateDecision":
        return cls(
            action=data["action"], reason=data.get("reason"),
            target_id=uuid.UUID(data["target_id"]) if data.get("target_id") else None,
            tombstone_id=uuid.UUID(data["tombstone_id"]) if data.get("tombstone_id") else None,
            neighbours=[{**n, "id": uuid.UUID(n["id"])} for n in data.get("neighbours", [])],
        )


_SIMILAR_TOMBSTONE = """
SELECT t.id, t.reason::text AS reason, t.replaced_by, 1 - (t.embedding <=> %(vec)s) AS similarity
FROM tombstones t
WHERE t.tenant_id = %(tenant)s AND %(path)s::ltree <@ t.path
  AND t.reason IN ('superseded', 'rejected') AND t.embedding IS NOT NULL
  AND (t.until IS NULL OR t.until > now())
  AND (%(slot)s::text IS NULL OR t.slot IS NULL OR t.slot <> %(slot)s)
ORDER BY t.embedding <=> %(vec)s
LIMIT 1
"""

_SAME_VALUE = """
SELECT id FROM memories
WHERE tenant_id = %(tenant)s AND path = %(path)s::ltree AND status = 'active'
  AND value_hash = %(hash)s
ORDER BY created_at LIMIT 1
"""

_SLOT_HOLDERS = """
SELECT id, value FROM memories
WHERE tenant_id = %(tenant)s AND path = %(path)s::ltree AND status = 'active' AND slot = %(slot)s
ORDER BY created_at
"""

# Exact nearest neighbours in one path: the scope is small, so an exact scan is both correct
# and fast (an HNSW scan under a tenant filter can return nothing; see TOOLING.md).
_NEIGHBOURS = """
SELECT id, slot, value, 1 - (embedding <=> %(vec)s) AS similarity
FROM memories
WHERE tenant_id = %(tenant)s AND path = %(path)s::ltree AND status = 'active'
  AND embedding IS NOT NULL
ORDER BY embedding <=> %(vec)s
LIMIT %(k)s
"""


def decide(
    cur: psycopg.Cursor, tenant_id: uuid.UUID, items: Sequence[GateInput],
    thresholds: tuple[float, float],
) -> list[GateDecision]:
    """One decision per item, in order. Reads only: the persist step writes."""
    reinforce_at, judge_at = thresholds
    exact = find_tombstones(
        cur, tenant_id, [(i.path, i.canonical, i.slot, i.value) for i in items]
    )
    decisions = []
    for n, item in enumerate(items):
        decisions.append(_decide_one(cur, tenant_id, item, exact.get(n), reinforce_at, judge_at))
    return decisions


def _decide_one(
    cur: psycopg.Cursor, tenant_id: uuid.UUID, item: GateInput, tomb: dict | None,
    reinforce_at: float, judge_at: float,
) -> GateDecision:
    base = {"tenant": tenant_id, "path": item.path, "vec": item.embedding, "slot": item.slot}
    if tomb is None:
        similar = cur.execute(_SIMILAR_TOMBSTONE, base).fetchone()
        if similar is not None and similar["similarity"] >= reinforce_at:
            tomb = similar
    if tomb is not None:
        # Only a superseded value can be asserted back (held for review); a value a person
        # rejected or forgot stays blocked.
        if tomb["reason"] != "superseded" or not item.asserts_change:
            return GateDecision(
                "blocked", f"tombstoned: {tomb['reason']} (tombstone {tomb['id']})",
                tombstone_id=tomb["id"],
            )
        current = _slot_holders(cur, base) if item.slot else []
        target = current[0]["id"] if current else tomb.get("replaced_by")
        return GateDecision(
            "candidate", f"changes back to a retired value (tombstone {tomb['id']}): held for review",
            target_id=target, tombstone_id=tomb["id"],
        )

    same = cur.execute(_SAME_VALUE, {**base, "hash": value_hash(item.canonical)}).fetchone()
    if same is not None:
        return GateDecision("reinforce", "same value already active", target_id=same["id"])

    neighbours: dict[uuid.UUID, dict[str, Any]] = {}
    if item.slot:
        for holder in _slot_holders(cur, base):
            if item.value is not None and normalise_value(holder["value"]) == item.value:
                return GateDecision(
                    "reinforce", f"same value of slot {item.slot}", target_id=holder["id"]
                )
            neighbours[holder["id"]] = {"id": holder["id"], "similarity": None, "slot_match": True}
    for row in cur.execute(_NEIGHBOURS, {**base, "k": NEIGHBOURS}).fetchall():
        sim = float(row["similarity"])
        slot_conflict = bool(item.slot and row["slot"] == item.slot)
        other_subject = bool(item.slot and row["slot"] and row["slot"] != item.slot)
        if sim >= reinforce_at and not (slot_conflict or other_subject or neighbours):
            return GateDecision("reinforce", f"paraphrase (similarity {sim:.2f})", target_id=row["id"])
        if sim >= judge_at or slot_conflict:
            entry = neighbours.setdefault(row["id"], {"id": row["id"], "slot_match": slot_conflict})
            entry["similarity"] = round(sim, 4)
    if neighbours:
        return GateDecision("judge", None, neighbours=list(neighbours.values()))
    return GateDecision("new")


def _slot_holders(cur: psycopg.Cursor, base: dict[str, Any]) -> list[dict[str, Any]]:
    return cur.execute(_SLOT_HOLDERS, base).fetchall()


_NEIGHBOUR_ROWS = """
SELECT id, content, kind::text AS kind, slot, value, lower(valid) AS valid_from, recorded_at
FROM memories WHERE tenant_id = %s AND id = ANY(%s) AND status = 'active'
"""


def load_neighbours(cur: psycopg.Cursor, tenant_id: uuid.UUID, gate_json: dict[str, Any]) -> list[Neighbour]:
    """The still-active memories a gate decision listed, as a judge is shown them."""
    listed = {uuid.UUID(str(n["id"])): n for n in gate_json.get("neighbours", [])}
    if not listed:
        return []
    rows = cur.execute(_NEIGHBOUR_ROWS, (tenant_id, list(listed))).fetchall()
    return [Neighbour(**r, similarity=listed[r["id"]].get("similarity") or 0.0) for r in rows]


def merge_key(slot: str | None, value: str | None, canonical: str) -> tuple[str, ...]:
    """Two candidates of one batch are the same memory when they share slot + value, or,
    without a slot value, their canonical text."""
    return ("slot", slot, value) if slot and value else ("text", canonical)


__all__ = ["BANDS", "GateDecision", "GateInput", "bands", "decide", "merge_key",
           "normalise_value", "slot_value_hash"]
