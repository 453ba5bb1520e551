"""Reflection and consolidation: memories made from other memories.

``reflect`` gathers active ``user_stated`` evidence the caller can read -- around a seed
memory (its nearest neighbours in the seed's path) or under a path -- asks the model for one
pattern and the ids it rests on, and stores it as an ``llm_derived`` memory of kind
``reflection`` with a DERIVED_FROM edge to each cited memory. A derived memory is never
evidence (DESIGN, truth maintenance): a derived seed is refused, and gathering skips them.

``consolidate`` writes one memory (kind ``summary``) for several active ones, its content
given by the caller (origin ``user_stated``) or written by the model (``llm_derived``), with
a CONSOLIDATES edge to each original, which it supersedes with the reason.

Model and embedder calls happen before the transaction; the write (strata.write.derive)
re-checks every source under its lock. What keeps a derived memory honest later -- retired
or flagged when its evidence is -- is the cascade of migration 0019.
"""

from __future__ import annotations

import uuid
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from strata.audit import audited
from strata.auth.access import Caller, Level
from strata.db import Database
from strata.db.vector import exact_distance
from strata.foundation.errors import Conflict, InvalidInput, ModelUnavailable, NotFound
from strata.foundation.fields import NOT_NULL, Integer, MemoryContent, MemoryPath, Text, _content_ok
from strata.foundation.paths import validate_path
from strata.memories.models import Memory
from strata.memories.store import refuse_secrets
from strata.providers import Embedder
from strata.write import locks
from strata.write.derive import NOT_DERIVED, Derived, lock_sources, refuse_derived, write_derived
from strata.write.rows import scope

MAX_EVIDENCE = 50
_MODEL_SETTING = "STRATA_LLM_MODEL"


class ReflectRequest(BaseModel):
    # Exactly one of seed_id and path, as the schema says too.
    model_config = ConfigDict(extra="forbid", json_schema_extra={
        "oneOf": [{"required": [name], "properties": {name: {
            **NOT_NULL, "description": f"{name} given (and not null)."}}}
            for name in ("seed_id", "path")],
        "examples": [{"path": "users.alice"},
                     {"seed_id": "0b9e3c52-4a2d-4c55-9d1f-0d8f5f3c2a11", "limit": 10}]})

    seed_id: uuid.UUID | None = Field(None, description=(
        "Reflect around this memory: it and its nearest active user_stated neighbours in its "
        "path. A derived (llm_derived) seed is refused (409)."))
    path: MemoryPath | None = Field(None, description=(
        "Reflect over the active user_stated memories at this path and below. The reflection "
        "is stored here (or, with seed_id, at the seed's path)."))
    limit: Integer = Field(20, ge=2, le=MAX_EVIDENCE,
                       description="At most this many memories are shown to the model.")

    @model_validator(mode="after")
    def _one_source(self) -> "ReflectRequest":
        if (self.seed_id is None) == (self.path is None):
            raise ValueError("give exactly one of seed_id or path")
        return self


class ConsolidateRequest(BaseModel):
    model_config = ConfigDict(extra="forbid", json_schema_extra={"examples": [{
        "ids": ["0b9e3c52-4a2d-4c55-9d1f-0d8f5f3c2a11", "5f7d2c1e-8b3a-4e6f-9c0d-1a2b3c4d5e6f"],
        "content": "Alice prefers tea, green in the morning and mint after dinner.",
        "reason": "three notes on one preference"}]})

    ids: list[uuid.UUID] = Field(min_length=2, max_length=MAX_EVIDENCE, json_schema_extra={
        "uniqueItems": True}, description=(
        "The active memories to merge; each is superseded by the new one."))
    content: MemoryContent | None = Field(None, max_length=8000, description=(
        "What the merged memory says; without it the configured model writes it (409 when "
        "none is configured)."))
    path: MemoryPath | None = Field(None, description=(
        "Where the merged memory lives; by default the originals' path when they share one "
        "(422 when they do not)."))
    reason: Text | None = Field(None, min_length=1, max_length=500,
                                description="Why, recorded on each SUPERSEDES edge.")

    @field_validator("content")
    @classmethod
    def _content_ok(cls, value: str | None) -> str | None:
        return None if value is None else _content_ok(value)

    @model_validator(mode="after")
    def _distinct(self) -> "ConsolidateRequest":
        if len(set(self.ids)) != len(self.ids):
            raise ValueError("ids must be distinct")
        return self


class ReflectResult(BaseModel):
    memory: Memory = Field(description="The reflection stored (origin llm_derived).")
    evidence_ids: list[uuid.UUID] = Field(description="The memories it rests on (DERIVED_FROM).")


class ConsolidateResult(BaseModel):
    memory: Memory = Field(description="The merged memory.")
    superseded_ids: list[uuid.UUID] = Field(description="The originals, now superseded by it.")


_SEED = """
SELECT id, path::text AS path, kind::text AS kind, content, status::text AS status,
       origin::text AS origin, embedding
FROM memories WHERE tenant_id = %(tenant)s AND id = %(id)s AND path <@ %(readable)s::ltree[]
"""

# Active, user_stated, readable: the only evidence an inference may rest on. Around a seed
# by similarity to it; under a path by importance, then recency.
_EVIDENCE = """
SELECT id, path::text AS path, kind::text AS kind, content
FROM memories
WHERE tenant_id = %(tenant)s AND path <@ %(path)s::ltree AND path <@ %(readable)s::ltree[]
  AND status = 'active' AND origin = 'user_stated' AND id IS DISTINCT FROM %(seed)s
  AND {not_derived}
ORDER BY {order}
LIMIT %(limit)s
"""

# The seed's nearest first, exactly (an HNSW walk under the path filter would return fewer
# or farther rows: strata.db.vector.exact_distance).
SEED_ORDER = exact_distance("embedding", "%(vec)s") + ", id"


def _require_model(reflector, what: str, field: str | None = None):
    if reflector is None:
        raise ModelUnavailable(
            f"{what} needs a model: set STRATA_LLM_BASE_URL and {_MODEL_SETTING}",
            setting=_MODEL_SETTING, field=field)
    return reflector


def _gather(db: Database, caller: Caller, req: ReflectRequest) -> tuple[str, list[dict[str, Any]]]:
    """Where the reflection goes, and the evidence shown to the model."""
    with db.connection() as conn:
        if req.seed_id is not None:
            seed = conn.execute(_SEED, scope(caller, id=req.seed_id)).fetchone()
            if seed is None:
                raise NotFound("memory", req.seed_id, field="seed_id")
            if seed["origin"] != "user_stated":
                raise Conflict(f"the seed is {seed['origin']}: only user_stated memories are "
                               "evidence for a reflection", field="seed_id")
            with conn.cursor() as cur:
                refuse_derived(cur, caller.tenant_id, [seed["id"]], field="seed_id")
            if seed["status"] != "active":
                raise Conflict(f"the seed is {seed['status']}, not active", field="seed_id")
            path = seed["path"]
            caller.require(path, Level.write, field="seed_id")
            order = SEED_ORDER if seed["embedding"] is not None else "id"
            rows = conn.execute(_EVIDENCE.format(order=order, not_derived=NOT_DERIVED), scope(
                caller, path=path, seed=seed["id"], vec=seed["embedding"],
                limit=req.limit - 1)).fetchall()
            return path, [seed, *rows]
        path = req.path
        caller.require(path, Level.write, field="path")
        rows = conn.execute(_EVIDENCE.format(order="importance DESC, recorded_at DESC, id",
                                              not_derived=NOT_DERIVED),
                            scope(caller, path=path, seed=None, limit=req.limit)).fetchall()
        return path, rows


def reflect(db: Database, caller: Caller, req: ReflectRequest, embedder: Embedder,
            reflector) -> dict[str, Any]:
    """One pattern over the gathered evidence, stored (see the module docstring)."""
    with audited(db, caller, "write", "memory.reflect") as event:
        if req.path is not None:
            validate_path(req.path, field="path")
        model = _require_model(reflector, "reflection")  # whatever the request: it needs one
        path, evidence = _gather(db, caller, req)
        field = "seed_id" if req.seed_id is not None else "path"
        if len(evidence) < 2:
            raise Conflict(f"{len(evidence)} active user_stated memories to reflect on: a "
                           "reflection needs at least two", field=field)
        content, cited = model.reflect(evidence)  # a failure answers 503 provider_unavailable
        if req.seed_id is not None and req.seed_id not in cited:
            cited.insert(0, req.seed_id)  # the seed is what the reflection was asked about
        vector = embedder.embed([content])[0]

        def body(cur):
            sources = lock_sources(cur, caller, cited, field="evidence_ids", level=Level.read)
            # The same rules, under the lock: a source may have changed since it was shown.
            refuse_derived(cur, caller.tenant_id, cited, field=field)
            for s in sources:
                if s["origin"] != "user_stated":
                    raise Conflict(f"memory {s['id']} is {s['origin']}: not evidence",
                                   field=field)
            return write_derived(cur, caller, Derived(
                path=path, content=content, kind="reflection", origin="llm_derived",
                sources=cited, relation="DERIVED_FROM", embedding=vector,
                model=embedder.model, decided_by=model.model, reason="reflection"),
                supersede=False)

        row = locks.retrying(db, body, cause="memory.reflect", actor=caller.actor)
        event.memory_ids = [row["id"], *cited]
        event.count = 1
        return {"memory": Memory.from_row(row), "evidence_ids": cited}


def consolidate(db: Database, caller: Caller, req: ConsolidateRequest, embedder: Embedder,
                reflector) -> dict[str, Any]:
    """One memory for several, which it supersedes (see the module docstring)."""
    with audited(db, caller, "write", "memory.consolidate") as event:
        event.memory_ids = list(req.ids)
        with db.connection() as conn:
            found = {r["id"]: r for r in conn.execute(
                "SELECT id, path::text AS path, kind::text AS kind, content,"
                " status::text AS status FROM memories WHERE tenant_id = %(tenant)s"
                " AND id = ANY(%(ids)s) AND path <@ %(readable)s::ltree[]",
                scope(caller, ids=req.ids)).fetchall()}
        for i, one in enumerate(req.ids):
            if one not in found:
                raise NotFound("memory", one, field=f"ids[{i}]")
        originals = [found[i] for i in req.ids]
        # Refused before a model sees them (and again under the lock, where it counts).
        for i, o in enumerate(originals):
            if o["status"] != "active":
                raise Conflict(f"memory {o['id']} is {o['status']}, not active",
                               field=f"ids[{i}]")
        with db.connection() as conn, conn.cursor() as cur:
            refuse_derived(cur, caller.tenant_id, list(req.ids), field="ids")
        if req.path is not None:
            path = validate_path(req.path, field="path") or req.path
        else:
            paths = {o["path"] for o in originals}
            if len(paths) != 1:
                raise InvalidInput("the memories live in different paths: name the path of "
                                   "the merged memory", field="path")
            path = paths.pop()
        caller.require(path, Level.write, field="path")
        refuse_secrets(req.content, None, None)  # as every direct write
        content, origin, decided_by = req.content, "user_stated", caller.actor
        if content is None:
            model = _require_model(reflector, "a consolidation without content", field="content")
            content = model.consolidate(originals)
            origin, decided_by = "llm_derived", model.model
        vector = embedder.embed([content])[0]
        reason = f"consolidated: {req.reason}" if req.reason else "consolidated"

        def body(cur):
            lock_sources(cur, caller, list(req.ids), field="ids", level=Level.write)
            refuse_derived(cur, caller.tenant_id, list(req.ids), field="ids")
            return write_derived(cur, caller, Derived(
                path=path, content=content, kind="summary", origin=origin,
                sources=list(req.ids), relation="CONSOLIDATES", embedding=vector,
                model=embedder.model, decided_by=decided_by, reason=reason),
                supersede=True)

        row = locks.retrying(db, body, cause="memory.consolidate", actor=caller.actor)
        event.memory_ids = [row["id"], *req.ids]
        event.count = 1 + len(req.ids)
        return {"memory": Memory.from_row(row), "superseded_ids": list(req.ids)}
