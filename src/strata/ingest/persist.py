"""Persist: the pipeline's only writer of memories, in one transaction.

Inserts new memories, supersedes what they replace (status, closed ``valid``, SUPERSEDES edge
with its reason and who decided, tombstone of the retired value), reinforces paraphrases,
holds changes-back as candidates with a CONTRADICTS edge, and writes the receipt's per-item
outcomes. The audit entry is appended after commit (surface ``pipeline``).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import psycopg
from psycopg.types.json import Jsonb
from psycopg.types.range import Range

from strata.ingest.conflict import is_older
from strata.ingest.gate import GateDecision
from strata.ingest.models import ItemOutcome, Neighbour, Verdict
from strata.memories.canonical import slot_value_hash

_INSERT = """
INSERT INTO memories (id, tenant_id, path, name, content, canonical, value_hash, kind, slot,
                      value, status, origin, confidence, importance, valid, embedding,
                      embedding_model, evidence, meta, tags)
VALUES (%(id)s, %(tenant)s, %(path)s::ltree, %(name)s, %(content)s, %(canonical)s, %(hash)s,
        %(kind)s, %(slot)s, %(value)s, %(status)s, 'user_stated', %(confidence)s,
        COALESCE(%(importance)s, 0.5), %(valid)s, %(embedding)s, %(model)s, %(evidence)s,
        %(meta)s, %(tags)s)
"""

_REINFORCE = """
UPDATE memories SET reinforcements = reinforcements + 1, version = version + 1,
       evidence = evidence || %(evidence)s, updated_at = now(),
       importance = GREATEST(importance, COALESCE(%(importance)s, importance)),
       tags = ARRAY(SELECT DISTINCT unnest(tags || %(tags)s::text[]))
WHERE id = %(id)s AND tenant_id = %(tenant)s AND status = 'active'
RETURNING id, version
"""

_SUPERSEDE = """
UPDATE memories SET status = 'superseded', version = version + 1, updated_at = now(),
       valid = tstzrange(lower(valid), GREATEST(lower(valid) + interval '1 microsecond', %(until)s))
WHERE id = %(id)s AND tenant_id = %(tenant)s AND status = 'active'
RETURNING id, path::text AS path, slot, value, value_hash, embedding
"""

_EDGE = """
INSERT INTO memory_relationships (tenant_id, source_id, target_id, type, confidence, reason,
                                  decided_by)
VALUES (%(tenant)s, %(source)s, %(target)s, %(type)s, %(confidence)s, %(reason)s, %(by)s)
ON CONFLICT (source_id, target_id, type) DO NOTHING
"""

_TOMBSTONE = """
INSERT INTO tombstones (tenant_id, path, slot, slot_value_hash, value_hash, reason, memory_id,
                        replaced_by, embedding)
VALUES (%(tenant)s, %(path)s::ltree, %(slot)s, %(slot_hash)s, %(hash)s, 'superseded', %(memory)s,
        %(replaced_by)s, %(embedding)s)
"""


@dataclass
class Staged:
    """One candidate as the persist step sees it (from the staging table)."""

    idx: int
    path: str
    content: str
    canonical: str
    value_hash: bytes
    kind: str
    slot: str | None
    value: str | None
    valid_from: datetime
    confidence: float
    evidence: list[dict[str, Any]]
    embedding: Any
    gate: dict[str, Any] | None
    verdicts: list[Verdict] | None
    neighbours: dict[uuid.UUID, Neighbour] = field(default_factory=dict)
    # Direct create carries these; extraction leaves the defaults.
    name: str | None = None
    importance: float | None = None
    tags: list[str] = field(default_factory=list)
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def reinforce_params(self) -> dict[str, Any]:
        return {"evidence": Jsonb(self.evidence), "importance": self.importance, "tags": self.tags}


def apply(
    cur: psycopg.Cursor, *, tenant_id: uuid.UUID, items: list[Staged], model: str,
    recorded_at: datetime,
) -> list[ItemOutcome]:
    """Write every staged candidate's outcome; return the receipt items in input order."""
    memory_of: dict[int, uuid.UUID] = {}
    outcomes: dict[int, ItemOutcome] = {}
    base = {"tenant": tenant_id}

    def insert(item: Staged, status: str, valid_until: datetime | None = None) -> uuid.UUID:
        new_id = uuid.uuid4()
        cur.execute(_INSERT, {
            **base, "id": new_id, "path": item.path, "name": item.name, "content": item.content,
            "canonical": item.canonical, "hash": item.value_hash, "kind": item.kind,
            "slot": item.slot, "value": item.value, "status": status,
            "confidence": item.confidence, "importance": item.importance,
            "valid": Range(item.valid_from, valid_until, "[)"), "embedding": item.embedding,
            "model": model, "evidence": Jsonb(item.evidence), "meta": Jsonb(item.meta),
            "tags": item.tags,
        })
        return new_id

    def edge(source, target, type_, confidence, reason, by) -> None:
        cur.execute(_EDGE, {**base, "source": source, "target": target, "type": type_,
                            "confidence": confidence, "reason": reason, "by": by})

    def outcome(item: Staged, kind: str, reason=None, memory=None, related=(), version=None) -> None:
        if version is None and memory is not None and kind != "merged":
            version = 1  # inserted by this write
        outcomes[item.idx] = ItemOutcome(
            content_hash=item.value_hash.hex(), outcome=kind, reason=reason, memory_id=memory,
            related_ids=list(related), version=version,
        )

    merged: list[Staged] = []
    for item in items:
        decision = GateDecision.from_json(item.gate) if item.gate else GateDecision("new")
        if item.gate and item.gate.get("action") == "merged":
            merged.append(item)
            continue
        if decision.action == "blocked":
            outcome(item, "blocked", decision.reason)
        elif decision.action == "candidate":
            memory = insert(item, "candidate")
            if decision.target_id:
                edge(memory, decision.target_id, "CONTRADICTS", 1.0, decision.reason, "gate")
            outcome(item, "candidate", decision.reason, memory,
                    [decision.target_id] if decision.target_id else [])
            memory_of[item.idx] = memory
        elif decision.action == "reinforce":
            _reinforce_or_insert(cur, base, item, decision.target_id, decision.reason, insert,
                                 outcome, memory_of)
        else:
            _resolve(cur, base, item, insert, edge, outcome, memory_of, recorded_at)

    for item in merged:
        into = item.gate["into"]
        target = memory_of.get(into)
        row = cur.execute(_REINFORCE, {**base, "id": target, **item.reinforce_params}
                          ).fetchone() if target is not None else None
        outcome(item, "merged", f"same memory as item {into} of this request", target,
                [target] if target else [], version=row["version"] if row else None)
    return [outcomes[i.idx] for i in items]


def _reinforce_or_insert(cur, base, item, target, reason, insert, outcome, memory_of) -> None:
    row = cur.execute(_REINFORCE, {**base, "id": target, **item.reinforce_params}).fetchone()
    if row is None:  # the target stopped being active since the gate looked: store as new
        memory = insert(item, "active")
        outcome(item, "created", "reinforcement target no longer active", memory)
    else:
        memory = row["id"]
        outcome(item, "reinforced", reason, memory, [memory], version=row["version"])
    memory_of[item.idx] = memory


def _resolve(cur, base, item: Staged, insert, edge, outcome, memory_of, recorded_at) -> None:
    """A new memory, related to its neighbours by the verdicts (if the judge ran)."""
    verdicts = item.verdicts or []
    duplicate = next((v for v in verdicts if v.relation == "duplicate"), None)
    if duplicate is not None:
        _reinforce_or_insert(cur, base, item, duplicate.target_id, duplicate.reason, insert,
                             outcome, memory_of)
        return
    supersedes = [v for v in verdicts if v.relation == "supersedes"]
    newer = [v for v in supersedes
             if is_older(item.valid_from, recorded_at, item.neighbours[v.target_id])]
    if newer:
        # Age guard: an older statement never supersedes a newer one. It is kept, as
        # already superseded, with its valid time closed where the newer one begins.
        v = newer[0]
        until = item.neighbours[v.target_id].valid_from
        memory = insert(item, "superseded", valid_until=until)
        edge(v.target_id, memory, "SUPERSEDES", v.confidence,
             "newer statement already holds (age guard)", v.decided_by)
        outcome(item, "stored_as_superseded", "older than the memory it would replace",
                memory, [v.target_id])
        memory_of[item.idx] = memory
        return
    if any(v.relation == "contradicts" for v in verdicts):
        memory = insert(item, "candidate")
        related = [v.target_id for v in verdicts if v.relation == "contradicts"]
        for v in verdicts:
            if v.relation == "contradicts":
                edge(memory, v.target_id, "CONTRADICTS", v.confidence, v.reason, v.decided_by)
        outcome(item, "candidate", "contradicts an active memory: held for review", memory, related)
        memory_of[item.idx] = memory
        return

    memory = insert(item, "active")
    memory_of[item.idx] = memory
    retired = []
    for v in supersedes:
        old = cur.execute(_SUPERSEDE, {**base, "id": v.target_id, "until": item.valid_from}).fetchone()
        if old is None:
            continue
        retired.append(v.target_id)
        edge(memory, v.target_id, "SUPERSEDES", v.confidence, v.reason, v.decided_by)
        cur.execute(_TOMBSTONE, {
            **base, "path": old["path"], "slot": old["slot"],
            "slot_hash": slot_value_hash(old["value"]), "hash": bytes(old["value_hash"]),
            "memory": v.target_id, "replaced_by": memory, "embedding": old["embedding"],
        })
    for v in verdicts:
        if v.relation in ("refines", "coexists"):
            edge(memory, v.target_id, v.relation.upper(), v.confidence, v.reason, v.decided_by)
    if retired:
        outcome(item, "superseded_existing", supersedes[0].reason, memory, retired)
    else:
        related = [v.target_id for v in verdicts if v.relation in ("refines", "coexists")]
        outcome(item, "created", None, memory, related)
