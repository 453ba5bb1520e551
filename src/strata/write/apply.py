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

from strata.write.conflict import is_older
from strata.write.gate import GateDecision
from strata.write.models import ItemOutcome, Neighbour, Verdict
from strata.write.canonical import slot_value_hash

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
    writer = _Writer(cur, tenant_id, model, recorded_at)
    # Pipelined: plain inserts go out together; a statement whose result is read syncs.
    with cur.connection.pipeline():
        merged = []
        for item in items:
            if item.gate and item.gate.get("action") == "merged":
                merged.append(item)
            else:
                writer.write(item)
        for item in merged:  # after their twins, so the twin's memory exists
            writer.merge(item)
    return [writer.outcomes[i.idx] for i in items]


class _Writer:
    def __init__(self, cur: psycopg.Cursor, tenant_id: uuid.UUID, model: str,
                 recorded_at: datetime) -> None:
        self.cur = cur
        self.base = {"tenant": tenant_id}
        self.model = model
        self.recorded_at = recorded_at
        self.memory_of: dict[int, uuid.UUID] = {}
        self.outcomes: dict[int, ItemOutcome] = {}

    # -- primitives ------------------------------------------------------------------

    def insert(self, item: Staged, status: str, valid_until: datetime | None = None) -> uuid.UUID:
        new_id = uuid.uuid4()
        self.cur.execute(_INSERT, {
            **self.base, "id": new_id, "path": item.path, "name": item.name,
            "content": item.content, "canonical": item.canonical, "hash": item.value_hash,
            "kind": item.kind, "slot": item.slot, "value": item.value, "status": status,
            "confidence": item.confidence, "importance": item.importance,
            "valid": Range(item.valid_from, valid_until, "[)"), "embedding": item.embedding,
            "model": self.model, "evidence": Jsonb(item.evidence), "meta": Jsonb(item.meta),
            "tags": item.tags,
        })
        self.memory_of[item.idx] = new_id
        return new_id

    def edge(self, source, target, type_: str, confidence: float, reason, by: str) -> None:
        self.cur.execute(_EDGE, {**self.base, "source": source, "target": target, "type": type_,
                                 "confidence": confidence, "reason": reason, "by": by})

    def outcome(self, item: Staged, kind: str, reason=None, memory=None, related=(),
                version=None) -> None:
        if version is None and memory is not None and kind != "merged":
            version = 1  # inserted by this write
        self.outcomes[item.idx] = ItemOutcome(
            content_hash=item.value_hash.hex(), outcome=kind, reason=reason, memory_id=memory,
            related_ids=list(related), version=version,
        )

    def reinforce(self, item: Staged, target: uuid.UUID) -> dict[str, Any] | None:
        return self.cur.execute(
            _REINFORCE, {**self.base, "id": target, **item.reinforce_params}).fetchone()

    # -- decisions -------------------------------------------------------------------

    def write(self, item: Staged) -> None:
        decision = GateDecision.from_json(item.gate) if item.gate else GateDecision("new")
        if decision.action == "blocked":
            self.outcome(item, "blocked", decision.reason)
        elif decision.action == "candidate":
            memory = self.insert(item, "candidate")
            if decision.target_id:
                self.edge(memory, decision.target_id, "CONTRADICTS", 1.0, decision.reason, "gate")
            self.outcome(item, "candidate", decision.reason, memory,
                         [decision.target_id] if decision.target_id else [])
        elif decision.action == "reinforce":
            self.reinforce_or_insert(item, decision.target_id, decision.reason)
        else:
            self.resolve(item)

    def merge(self, item: Staged) -> None:
        into = item.gate["into"]
        target = self.memory_of.get(into)
        row = self.reinforce(item, target) if target is not None else None
        self.outcome(item, "merged", f"same memory as item {into} of this request", target,
                     [target] if target else [], version=row["version"] if row else None)

    def reinforce_or_insert(self, item: Staged, target: uuid.UUID, reason) -> None:
        row = self.reinforce(item, target)
        if row is None:  # the target stopped being active since the gate looked: store as new
            memory = self.insert(item, "active")
            self.outcome(item, "created", "reinforcement target no longer active", memory)
            return
        self.memory_of[item.idx] = row["id"]
        self.outcome(item, "reinforced", reason, row["id"], [row["id"]], version=row["version"])

    def resolve(self, item: Staged) -> None:
        """A new memory, related to its neighbours by the verdicts (if the judge ran)."""
        verdicts = item.verdicts or []
        duplicate = next((v for v in verdicts if v.relation == "duplicate"), None)
        if duplicate is not None:
            self.reinforce_or_insert(item, duplicate.target_id, duplicate.reason)
            return
        supersedes = [v for v in verdicts if v.relation == "supersedes"]
        newer = [v for v in supersedes
                 if is_older(item.valid_from, self.recorded_at, item.neighbours[v.target_id])]
        if newer:
            # Age guard: an older statement never supersedes a newer one. It is kept, as
            # already superseded, with its valid time closed where the newer one begins.
            v = newer[0]
            memory = self.insert(item, "superseded",
                                 valid_until=item.neighbours[v.target_id].valid_from)
            self.edge(v.target_id, memory, "SUPERSEDES", v.confidence,
                      "newer statement already holds (age guard)", v.decided_by)
            self.outcome(item, "stored_as_superseded", "older than the memory it would replace",
                         memory, [v.target_id])
            return
        contradicted = [v for v in verdicts if v.relation == "contradicts"]
        if contradicted:
            memory = self.insert(item, "candidate")
            for v in contradicted:
                self.edge(memory, v.target_id, "CONTRADICTS", v.confidence, v.reason, v.decided_by)
            self.outcome(item, "candidate", "contradicts an active memory: held for review",
                         memory, [v.target_id for v in contradicted])
            return

        memory = self.insert(item, "active")
        retired = [v.target_id for v in supersedes if self.supersede(memory, item, v)]
        linked = [v for v in verdicts if v.relation in ("refines", "coexists")]
        for v in linked:
            self.edge(memory, v.target_id, v.relation.upper(), v.confidence, v.reason,
                      v.decided_by)
        if retired:
            self.outcome(item, "superseded_existing", supersedes[0].reason, memory, retired)
        else:
            self.outcome(item, "created", None, memory, [v.target_id for v in linked])

    def supersede(self, memory: uuid.UUID, item: Staged, v: Verdict) -> bool:
        return retire(self.cur, self.base["tenant"], v.target_id, memory, until=item.valid_from,
                      confidence=v.confidence, reason=v.reason, decided_by=v.decided_by)


def retire(
    cur: psycopg.Cursor, tenant_id: uuid.UUID, old_id: uuid.UUID, new_id: uuid.UUID, *,
    until: datetime, confidence: float, reason: str | None, decided_by: str,
) -> bool:
    """Supersede ``old_id`` in favour of ``new_id``: status, valid time closed at ``until``, a
    SUPERSEDES edge with the reason and who decided, and a tombstone of the retired value
    (with its embedding, so a re-extraction in other words is caught too). False when the
    old memory is no longer active."""
    base = {"tenant": tenant_id}
    old = cur.execute(_SUPERSEDE, {**base, "id": old_id, "until": until}).fetchone()
    if old is None:
        return False
    cur.execute(_EDGE, {**base, "source": new_id, "target": old_id, "type": "SUPERSEDES",
                        "confidence": confidence, "reason": reason, "by": decided_by})
    cur.execute(_TOMBSTONE, {
        **base, "path": old["path"], "slot": old["slot"],
        "slot_hash": slot_value_hash(old["value"]), "hash": bytes(old["value_hash"]),
        "memory": old_id, "replaced_by": new_id, "embedding": old["embedding"],
    })
    return True
