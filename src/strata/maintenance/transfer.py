"""``strata export`` / ``strata import``: a tenant's memory store as JSON Lines.

Operator commands on the database (like ``strata reindex``), not HTTP routes: an export must
carry what no API caller may read -- every path, tombstones (hashes of forgotten values),
the raw history with its erasures, the vectors -- and an import must write rows with their
own ids, versions, statuses and timestamps, which no route allows. Both are audited
(surface ``cli``).

Format (one JSON object per line, ``type`` first, in this order)::

    header        format, version, tenant {id, name}, embedding {dim, model}, counts
    memory        every column (valid as valid_from/valid_to, with valid_from_explicit: the
                  start was given, not only when it was said), the vector as base64 of
                  little-endian float32 with its embedding_model stamp
    history       one line per memory: its memory_history rows, oldest first (erased rows
                  keep only hashes, as in the database)
    relationship  every edge
    tombstone     every retired value (hashes; a vector for superseded and rejected ones;
                  for a forgotten one its keyed fingerprint and the key it was made with)
    end           the counts again: a file without it was cut short

Ids. Primary keys are global, so a copy in another tenant needs new ids: memory, edge and
tombstone ids are derived as ``uuid5(destination tenant id, "strata-import:" + source id)``.
The same source id always maps to the same destination id, which is how a second import
recognises what the first wrote: a row whose derived id exists is left as it is. Importing
into the tenant the export came from (restoring a backup) keeps the ids, as does
``keep_ids`` (for moving a tenant to another database). History rows are recognised by
(memory, version, operation, changed_at); edges by (source, target, type).

The write gate. Every imported memory passes the gate (``strata.write.gate.decide``)
against what the destination already holds, not against its own export: a value the
destination tombstoned as forgotten is never imported (not even as history), and an active
or candidate memory whose value the destination retired in any way is blocked; an active
memory whose value is already active in the same path reinforces that memory (the
destination memory's evidence records ``{"source": "import", "from_id"}``, so a second
import recognises the merge); an active memory holding a slot the destination holds with
another value is imported as a ``candidate`` with a CONTRADICTS edge, for review. Nothing
else is judged: an import into an empty tenant reproduces the store exactly, and an import
never overwrites or supersedes what the destination has. The file's own tombstones are
written last, so they never block the file's own memories.

Vectors. A memory whose ``embedding_model`` is the destination embedder's model (and whose
vector has its dimension) keeps its vector: the embedder is not called. Others are embedded
again, in batches, outside the write transaction. Tombstone vectors are copied when every
imported memory's model matched, else taken from their (re-embedded) memory.
"""

from __future__ import annotations

import base64
import json
import sys
import uuid
from array import array
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import IO, Any, Literal

from psycopg.types.json import Jsonb
from psycopg.types.range import Range
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from strata.audit import audited
from strata.auth.access import Caller
from strata.db import Database
from strata.db.vector import Vector
from strata.foundation.errors import Conflict, InvalidInput
from strata.memories.models import Kind, Status
from strata.providers import Embedder
from strata.write import bookkeeping, imports
from strata.write.canonical import canonicalize, value_hash

FORMAT = "strata-export"
VERSION = 1
PHASES = ("memory", "history", "relationship", "tombstone")
Progress = Callable[[int], None]


# --------------------------------------------------------------------------------------
# Records
# --------------------------------------------------------------------------------------


class _Record(BaseModel):
    model_config = ConfigDict(extra="forbid")


class TenantRef(_Record):
    id: uuid.UUID
    name: str


class EmbeddingInfo(_Record):
    dim: int
    model: str | None = None


class Header(_Record):
    type: Literal["header"]
    format: Literal["strata-export"]
    version: int
    exported_at: datetime
    tenant: TenantRef
    embedding: EmbeddingInfo
    counts: dict[str, int]


class MemoryRecord(_Record):
    type: Literal["memory"]
    id: uuid.UUID
    path: str
    name: str | None = None
    content: str = Field(min_length=1)
    context: str | None = Field(default=None, min_length=1)  # absent in files before 0022
    kind: Kind
    slot: str | None = None
    value: str | None = None
    status: Status
    origin: Literal["user_stated", "llm_derived", "imported", "system"]
    importance: float = Field(ge=0, le=1)
    confidence: float = Field(ge=0, le=1)
    pinned: bool
    access_count: int
    last_accessed_at: datetime | None = None
    reinforcements: int
    tier: Literal["short_term", "long_term"]
    expires_at: datetime | None = None
    valid_from: datetime
    # The start was given, not only when it was said (migration 0024); absent in older files.
    valid_from_explicit: bool = False
    valid_to: datetime | None = None
    recorded_at: datetime
    asserted_at: datetime | None = None
    embedding: str | None = None
    embedding_model: str | None = None
    version: int = Field(ge=1)
    evidence: list[Any]
    meta: dict[str, Any]
    tags: list[str]
    created_at: datetime
    updated_at: datetime
    value_hash: str | None = None  # informational: the import recomputes it from content


class HistoryRow(_Record):
    version: int
    operation: Literal["update", "delete"]
    path: str
    cause: str | None = None
    actor: str | None = None
    operation_id: uuid.UUID | None = None
    changed_at: datetime
    erased: bool
    row: dict[str, Any]


class HistoryRecord(_Record):
    type: Literal["history"]
    memory_id: uuid.UUID
    entries: list[HistoryRow] = Field(min_length=1)


class RelationshipRecord(_Record):
    type: Literal["relationship"]
    id: uuid.UUID
    source_id: uuid.UUID
    target_id: uuid.UUID
    rel: Literal["SUPERSEDES", "REFINES", "COEXISTS", "CONTRADICTS", "CONSOLIDATES",
                 "DERIVED_FROM", "DUPLICATE_OF"]
    confidence: float = Field(ge=0, le=1)
    reason: str | None = None
    decided_by: str
    created_at: datetime


class TombstoneRecord(_Record):
    type: Literal["tombstone"]
    id: uuid.UUID
    path: str
    slot: str | None = None
    slot_value_hash: str | None = None
    value_hash: str
    reason: Literal["superseded", "rejected", "forgotten"]
    memory_id: uuid.UUID | None = None
    replaced_by: uuid.UUID | None = None
    embedding: str | None = None
    until: datetime | None = None
    created_at: datetime
    # A forgotten value's fingerprint (strata.write.fingerprints) and the key it was made
    # with; absent in files written before fingerprints.
    fingerprint_key_id: uuid.UUID | None = None
    fingerprint_key: str | None = None
    fingerprint: list[str] | None = Field(default=None, max_length=10_000)
    fingerprint_weights: list[float] | None = None
    fingerprint_kinds: list[Literal[0, 1, 2]] | None = None

    @model_validator(mode="after")
    def _whole_fingerprint(self) -> "TombstoneRecord":
        parts = (self.fingerprint_key_id, self.fingerprint_key, self.fingerprint,
                 self.fingerprint_weights, self.fingerprint_kinds)
        if any(p is not None for p in parts):
            if any(p is None for p in parts) or self.reason != "forgotten":
                raise ValueError("a fingerprint comes whole (key id, key, hashes, weights, "
                                 "kinds) and only on a forgotten tombstone")
            if not len(self.fingerprint) == len(self.fingerprint_weights) == len(
                    self.fingerprint_kinds):
                raise ValueError("fingerprint, fingerprint_weights and fingerprint_kinds "
                                 "differ in length")
        return self


class End(_Record):
    type: Literal["end"]
    counts: dict[str, int]


_RECORDS: dict[str, type[_Record]] = {
    "header": Header, "memory": MemoryRecord, "history": HistoryRecord,
    "relationship": RelationshipRecord, "tombstone": TombstoneRecord, "end": End,
}


# The file's vectors are little-endian float32 whatever the machine's byte order.
_SWAP = sys.byteorder == "big"


def encode_vector(vec: Any) -> str | None:
    if vec is None:
        return None
    le = array("f", vec)  # a copy, swapped in place
    if _SWAP:
        le.byteswap()
    return base64.b64encode(le.tobytes()).decode()


def decode_vector(raw: str | None) -> Vector | None:
    if raw is None:
        return None
    try:
        data = base64.b64decode(raw, validate=True)
    except ValueError:
        raise InvalidInput("an embedding is not base64", field="embedding") from None
    if len(data) % 4:
        raise InvalidInput("an embedding is not a float32 array", field="embedding")
    vec = Vector()
    vec.frombytes(data)
    if _SWAP:
        vec.byteswap()
    return vec


def _hex(raw: str | None, what: str) -> bytes | None:
    if raw is None:
        return None
    try:
        return bytes.fromhex(raw.removeprefix("\\x"))
    except ValueError:
        raise InvalidInput(f"{what} is not hex", field=what) from None


def _json_default(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, (bytes, memoryview)):
        return bytes(value).hex()
    if isinstance(value, Vector):
        return encode_vector(value)
    raise TypeError(f"cannot export a {type(value).__name__}")


# --------------------------------------------------------------------------------------
# Export
# --------------------------------------------------------------------------------------

_COUNTS = """
SELECT (SELECT count(*) FROM memories WHERE tenant_id = %(t)s) AS memory,
       (SELECT count(DISTINCT memory_id) FROM memory_history WHERE tenant_id = %(t)s) AS history,
       (SELECT count(*) FROM memory_relationships WHERE tenant_id = %(t)s) AS relationship,
       (SELECT count(*) FROM tombstones WHERE tenant_id = %(t)s) AS tombstone
"""

_EXPORT_MEMORIES = f"""
SELECT id, asserted_at, path::text AS path, name, content, context, kind::text AS kind, slot,
       value,
       status::text AS status, origin::text AS origin, importance, confidence, pinned,
       {bookkeeping.count_sql("memories")} AS access_count,
       {bookkeeping.last_sql("memories")} AS last_accessed_at,
       reinforcements, tier::text AS tier, expires_at,
       lower(valid) AS valid_from, valid_from_explicit, upper(valid) AS valid_to, recorded_at,
       embedding,
       embedding_model, version, evidence, meta, tags, created_at, updated_at,
       encode(value_hash, 'hex') AS value_hash
FROM memories WHERE tenant_id = %(t)s ORDER BY created_at, id
"""

_EXPORT_HISTORY = """
SELECT memory_id, version, operation, path::text AS path, cause, actor, operation_id,
       changed_at, erased, row_data - 'tenant_id' AS row
FROM memory_history WHERE tenant_id = %(t)s ORDER BY memory_id, id
"""

_EXPORT_RELATIONSHIPS = """
SELECT id, source_id, target_id, type::text AS rel, confidence, reason, decided_by, created_at
FROM memory_relationships WHERE tenant_id = %(t)s ORDER BY created_at, id
"""

# A forgotten tombstone's fingerprint travels with the key it was made with: without it the
# destination could not recognise the fact again (the file holds every memory in clear
# anyway; it holds no forgotten one).
_EXPORT_TOMBSTONES = """
SELECT t.id, t.path::text AS path, t.slot, encode(t.slot_value_hash, 'hex') AS slot_value_hash,
       encode(t.value_hash, 'hex') AS value_hash, t.reason::text AS reason, t.memory_id,
       t.replaced_by, t.embedding, t.until, t.created_at, t.fingerprint_key_id,
       encode(k.secret, 'hex') AS fingerprint_key,
       (SELECT array_agg(encode(h, 'hex') ORDER BY n)
        FROM unnest(t.fingerprint) WITH ORDINALITY AS u(h, n)) AS fingerprint,
       t.fingerprint_weights, t.fingerprint_kinds
FROM tombstones t LEFT JOIN fingerprint_keys k ON k.id = t.fingerprint_key_id
WHERE t.tenant_id = %(t)s ORDER BY t.created_at, t.id
"""


def export(db: Database, tenant_id: uuid.UUID, out: IO[str], *,
           progress: Progress | None = None) -> dict[str, int]:
    """Write the tenant's store to ``out`` from one consistent snapshot; return the counts."""
    progress = progress or (lambda n: None)
    caller = Caller.system(tenant_id)
    params = {"t": tenant_id}

    def write(record: dict[str, Any]) -> None:
        out.write(json.dumps(record, default=_json_default, ensure_ascii=False) + "\n")

    with audited(db, caller, "read", "memory.export") as event:
        with db.connection() as conn, conn.transaction():
            conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
            tenant = conn.execute("SELECT id, name FROM tenants WHERE id = %s",
                                  (tenant_id,)).fetchone()
            counts = dict(conn.execute(_COUNTS, params).fetchone())
            meta = {r["key"]: r["value"] for r in conn.execute(
                "SELECT key, value FROM strata_meta WHERE key IN ('embedding_dim', 'embedding_model')")}
            write({"type": "header", "format": FORMAT, "version": VERSION,
                   "exported_at": datetime.now(UTC), "tenant": tenant,
                   "embedding": {"dim": int(meta["embedding_dim"]),
                                 "model": meta.get("embedding_model")},
                   "counts": counts})
            written = dict.fromkeys(PHASES, 0)
            for phase, sql in (("memory", _EXPORT_MEMORIES), ("history", _EXPORT_HISTORY),
                               ("relationship", _EXPORT_RELATIONSHIPS),
                               ("tombstone", _EXPORT_TOMBSTONES)):
                with conn.cursor(name=f"strata_export_{phase}") as cur:
                    cur.itersize = 500
                    cur.execute(sql, params)
                    if phase == "history":
                        group: dict[str, Any] | None = None
                        for row in cur:
                            mid = row.pop("memory_id")
                            if group is None or group["memory_id"] != mid:
                                if group is not None:
                                    write(group)
                                    written[phase] += 1
                                    progress(1)
                                group = {"type": "history", "memory_id": mid, "entries": []}
                            group["entries"].append(row)
                        if group is not None:
                            write(group)
                            written[phase] += 1
                            progress(1)
                        continue
                    for row in cur:
                        write({"type": phase, **row})
                        written[phase] += 1
                        progress(1)
            write({"type": "end", "counts": written})
        event.count = written["memory"]
    return written


# --------------------------------------------------------------------------------------
# Import
# --------------------------------------------------------------------------------------


@dataclass
class ImportReport:
    source_tenant: str | None = None
    ids: str = "derived"
    memories: dict[str, int] = field(default_factory=lambda: dict.fromkeys(
        ("inserted", "existing", "reinforced", "held_for_review", "blocked", "name_taken",
         "embedded"), 0))
    history: dict[str, int] = field(default_factory=lambda: dict.fromkeys(
        ("inserted", "existing", "skipped"), 0))
    relationships: dict[str, int] = field(default_factory=lambda: dict.fromkeys(
        ("inserted", "existing", "skipped"), 0))
    # skipped: a forgotten or rejected value a live memory of the destination holds in the
    # tombstone's scope (the source's verdict does not erase the destination's own memory).
    tombstones: dict[str, int] = field(default_factory=lambda: dict.fromkeys(
        ("inserted", "existing", "skipped"), 0))
    blocked: list[dict[str, str | None]] = field(default_factory=list)  # ids only, first 100
    complete: bool = False

    def to_json(self) -> dict[str, Any]:
        return dict(self.__dict__)


_EXISTING = "SELECT id, tenant_id FROM memories WHERE id = ANY(%s)"

_PROVENANCE = """
SELECT m.id, e->>'from_id' AS from_id
FROM memories m CROSS JOIN LATERAL jsonb_array_elements(m.evidence) e
WHERE m.tenant_id = %s AND e->>'source' = 'import' AND e ? 'from_id'
"""

_NAMES = """
SELECT n.path, n.name FROM unnest(%(paths)s::text[], %(names)s::text[]) AS n(path, name)
WHERE EXISTS (SELECT 1 FROM memories m WHERE m.tenant_id = %(tenant)s
              AND m.path = n.path::ltree AND m.name = n.name)
"""




class Importer:
    """One import run into ``tenant_id``. Feed it the file's lines with :meth:`run`."""

    def __init__(
        self, db: Database, tenant_id: uuid.UUID, embedder: Embedder, *, settings=None,
        keep_ids: bool = False, batch: int = 200, progress: Progress | None = None,
    ) -> None:
        if batch < 1:
            raise ValueError("batch must be at least 1")
        self.db = db
        self.tenant_id = tenant_id
        self.embedder = embedder
        self.settings = settings
        self.keep_ids = keep_ids
        self.batch = batch
        self.progress = progress or (lambda n: None)
        self.caller = Caller.system(tenant_id)
        self.report = ImportReport()
        # Per source memory id: inserted | existing | candidate | reinforced | blocked |
        # name_taken. Ids only, so a large store fits.
        self.state: dict[uuid.UUID, str] = {}
        self.merged_into: dict[uuid.UUID, uuid.UUID] = {}
        self.ours: set[uuid.UUID] = set()  # destination ids of this file's memories
        self.models_seen: set[str | None] = set()
        self.header: Header | None = None

    # -- ids -------------------------------------------------------------------------------

    def dest_id(self, src: uuid.UUID) -> uuid.UUID:
        if self.keep_ids:
            return src
        return uuid.uuid5(self.tenant_id, f"strata-import:{src}")

    def resolve(self, src: uuid.UUID | None) -> uuid.UUID | None:
        """Where an id of the file points in the destination (None: nowhere, skip)."""
        if src is None:
            return None
        state = self.state.get(src)
        if state == "reinforced":
            return self.merged_into[src]
        if state in ("blocked", "name_taken"):
            return None
        return self.dest_id(src)

    # -- the run ---------------------------------------------------------------------------

    def run(self, lines: Iterable[str]) -> ImportReport:
        phase = -1
        pending: list[_Record] = []
        for number, line in enumerate(lines, 1):
            if not line.strip():
                continue
            record = self._parse(number, line)
            if isinstance(record, Header):
                if self.header is not None or number != 1:
                    raise InvalidInput(f"line {number}: a second header", field="header")
                self._start(record)
                continue
            if self.header is None:
                raise InvalidInput("line 1: not a strata export (no header)", field="header")
            if isinstance(record, End):
                self._flush(pending)
                pending = []
                self.report.complete = True
                continue
            if self.report.complete:
                raise InvalidInput(f"line {number}: records after the end record", field="type")
            at = PHASES.index(record.type)
            if at < phase:
                raise InvalidInput(f"line {number}: a {record.type} record after "
                                   f"{PHASES[phase]} records (out of order)", field="type")
            if at != phase or len(pending) >= self.batch:
                self._flush(pending)
                pending = []
            phase = at
            pending.append(record)
        if self.header is None:
            raise InvalidInput("the file is empty: not a strata export", field="header")
        self._flush(pending)
        return self.report

    def _parse(self, number: int, line: str) -> _Record:
        try:
            data = json.loads(line)
        except ValueError:
            raise InvalidInput(f"line {number}: not JSON", field="line") from None
        kind = data.get("type") if isinstance(data, dict) else None
        model = _RECORDS.get(kind) if isinstance(kind, str) else None
        if model is None:
            raise InvalidInput(f"line {number}: unknown record type {kind!r}", field="type")
        try:
            return model.model_validate(data)
        except ValidationError as exc:
            err = exc.errors()[0]
            where = ".".join(str(p) for p in err.get("loc", ()))
            raise InvalidInput(f"line {number}: {kind} record: {where}: {err.get('msg')}",
                               field=where or None) from None

    def _start(self, header: Header) -> None:
        if header.version != VERSION:
            raise InvalidInput(f"export format version {header.version} is not supported "
                               f"(this strata reads version {VERSION})", field="version")
        self.header = header
        if header.tenant.id == self.tenant_id:
            self.keep_ids = True  # restoring into the tenant it came from
        self.report.source_tenant = str(header.tenant.id)
        self.report.ids = "kept" if self.keep_ids else "derived"
        with self.db.connection() as conn:
            for r in conn.execute(_PROVENANCE, (self.tenant_id,)).fetchall():
                try:
                    src = uuid.UUID(r["from_id"])
                except ValueError:
                    continue
                self.state[src] = "reinforced"
                self.merged_into[src] = r["id"]

    def _flush(self, records: list[_Record]) -> None:
        if not records:
            return
        handler = {"memory": self._memories, "history": self._histories,
                   "relationship": self._relationships, "tombstone": self._tombstones}
        handler[records[0].type](records)
        self.progress(len(records))

    # -- memories --------------------------------------------------------------------------

    def _memories(self, records: list[MemoryRecord]) -> None:
        from strata.foundation.config import get_settings
        from strata.write import gate as gating

        tenant = self.tenant_id
        with self.db.connection() as conn:
            found = {r["id"]: r["tenant_id"] for r in conn.execute(
                _EXISTING, ([self.dest_id(m.id) for m in records],)).fetchall()}
        todo = []
        for m in records:
            dest = self.dest_id(m.id)
            self.models_seen.add(m.embedding_model)
            if self.state.get(m.id) == "reinforced":
                self.report.memories["existing"] += 1
                continue
            if dest in found:
                if found[dest] != tenant:
                    raise Conflict(f"memory id {dest} belongs to another tenant: import "
                                   "without keep_ids to derive new ids", field="id")
                self.state[m.id] = "existing"
                self.ours.add(dest)
                self.report.memories["existing"] += 1
                continue
            todo.append(m)
        if not todo:
            return
        vectors = self._vectors(todo)
        thresholds = gating.bands(self.settings or get_settings(), self.embedder.model)
        with audited(self.db, self.caller, "write", "memory.import") as event:
            with self.db.transaction(cause="memory.import", actor=self.caller.actor) as cur:
                taken = self._names_taken(cur, todo)
                gated = [(m, v) for m, v in zip(todo, vectors, strict=True)
                         if (m.path, m.name) not in taken]
                for m in todo:
                    if (m.path, m.name) in taken:
                        self.state[m.id] = "name_taken"
                        self.report.memories["name_taken"] += 1
                items = [imports.Incoming(
                    row=self._row(m, self.dest_id(m.id), m.status, v), embedding=v,
                    reinforce_evidence=[{"source": "import", "surface": "cli",
                                         "from_id": str(m.id), "at": datetime.now(UTC).isoformat()}])
                    for m, v in gated]
                decisions = imports.write(cur, tenant, items, thresholds, self.ours)
                written = []
                for (m, _), d in zip(gated, decisions, strict=True):
                    if d.action == "blocked":
                        self._blocked(m.id, d.tombstone_id, d.reason, d.rule_id)
                    elif d.action == "reinforced":
                        self.state[m.id] = "reinforced"
                        self.merged_into[m.id] = d.memory_id
                        self.report.memories["reinforced"] += 1
                    else:
                        held = d.action == "held"
                        self.state[m.id] = "candidate" if held else "inserted"
                        self.ours.add(d.memory_id)
                        written.append(d.memory_id)
                        self.report.memories["held_for_review" if held else "inserted"] += 1
            event.memory_ids = written
            event.count = len(written)

    def _vectors(self, todo: list[MemoryRecord]) -> list[Vector]:
        """The stored vector where the model matches (the embedder is not called), else a
        fresh one, in one embedder call for the batch."""
        out: list[Vector | None] = []
        for m in todo:
            vec = decode_vector(m.embedding) if m.embedding_model == self.embedder.model else None
            out.append(vec if vec is not None and len(vec) == self.embedder.dim else None)
        missing = [i for i, v in enumerate(out) if v is None]
        if missing:
            fresh = self.embedder.embed([todo[i].content for i in missing])
            if len(fresh) != len(missing):
                raise RuntimeError(f"the embedder returned {len(fresh)} vectors for {len(missing)} texts")
            for i, v in zip(missing, fresh, strict=True):
                out[i] = v
            self.report.memories["embedded"] += len(missing)
        return out  # type: ignore[return-value]

    def _names_taken(self, cur, todo: list[MemoryRecord]) -> set[tuple[str, str]]:
        named = [m for m in todo if m.name is not None]
        if not named:
            return set()
        rows = cur.execute(_NAMES, {"tenant": self.tenant_id, "paths": [m.path for m in named],
                                    "names": [m.name for m in named]}).fetchall()
        return {(r["path"], r["name"]) for r in rows}

    def _blocked(self, src: uuid.UUID, tombstone: uuid.UUID | None, reason: str | None,
                 rule: uuid.UUID | None = None) -> None:
        self.state[src] = "blocked"
        self.report.memories["blocked"] += 1
        if len(self.report.blocked) < 100:
            entry = {"id": str(src), "tombstone_id": str(tombstone),
                     "reason": reason or "tombstoned"}
            if rule is not None:  # a memory rule kept it out, not a tombstone
                entry.update(tombstone_id=None, rule_id=str(rule))
            self.report.blocked.append(entry)

    def _row(self, m: MemoryRecord, dest: uuid.UUID, status: str, vec: Vector) -> dict[str, Any]:
        canonical = canonicalize(m.content)
        return {
            "id": dest, "tenant": self.tenant_id, "path": m.path, "name": m.name,
            "content": m.content, "context": m.context, "canonical": canonical,
            "hash": value_hash(canonical),
            "kind": m.kind, "slot": m.slot, "value": m.value, "status": status,
            "origin": m.origin, "importance": m.importance, "confidence": m.confidence,
            "pinned": m.pinned, "access_count": m.access_count,
            "last_accessed_at": m.last_accessed_at, "reinforcements": m.reinforcements,
            "tier": m.tier, "expires_at": m.expires_at,
            "valid": Range(m.valid_from, m.valid_to, "[)"), "recorded_at": m.recorded_at,
            "valid_from_explicit": m.valid_from_explicit,
            "asserted_at": m.asserted_at,
            "embedding": vec, "model": self.embedder.model, "version": m.version,
            "evidence": Jsonb(m.evidence), "meta": Jsonb(m.meta), "tags": m.tags,
            "created_at": m.created_at, "updated_at": m.updated_at,
        }

    # -- history ---------------------------------------------------------------------------

    def _histories(self, records: list[HistoryRecord]) -> None:
        from strata.write.tombstones import find_tombstones

        with self.db.transaction(cause="memory.import", actor=self.caller.actor) as cur:
            params = []
            for rec in records:
                state = self.state.get(rec.memory_id)
                if state in ("blocked", "name_taken", "reinforced"):
                    self.report.history["skipped"] += len(rec.entries)
                    continue
                if state == "existing":
                    # The destination's memory keeps its own row and its own history: the
                    # file's (another timeline, or the same rows again) does not fit it.
                    self.report.history["existing"] += len(rec.entries)
                    continue
                if state is None and self._forgotten_here(cur, find_tombstones, rec):
                    self.report.history["skipped"] += len(rec.entries)
                    continue
                dest = self.dest_id(rec.memory_id)
                for e in rec.entries:
                    row = {**e.row, "id": str(dest), "tenant_id": str(self.tenant_id)}
                    params.append({
                        "tenant": self.tenant_id, "memory": dest, "path": e.path,
                        "version": e.version, "operation": e.operation, "row": Jsonb(row),
                        "operation_id": e.operation_id, "cause": e.cause, "actor": e.actor,
                        "changed_at": e.changed_at, "erased": e.erased,
                    })
            inserted = 0
            for p in params:  # in file order, so history ids keep each memory's order
                inserted += imports.insert_history(cur, p)
            self.report.history["inserted"] += inserted
            self.report.history["existing"] += len(params) - inserted

    def _forgotten_here(self, cur, find_tombstones, rec: HistoryRecord) -> bool:
        """A memory the export holds only as history (deleted in the source): is any of its
        values forgotten in the destination? Then its content must not come back here."""
        values = [(e.row.get("path") or e.path, canonicalize(e.row["content"]), e.row.get("slot"),
                   e.row.get("value")) for e in rec.entries
                  if not e.erased and isinstance(e.row.get("content"), str)]
        if not values:
            return False
        found = find_tombstones(cur, self.tenant_id, values)
        return any(t["reason"] == "forgotten" for t in found.values())

    # -- relationships and tombstones ------------------------------------------------------

    def _relationships(self, records: list[RelationshipRecord]) -> None:
        params = []
        for r in records:
            source, target = self.resolve(r.source_id), self.resolve(r.target_id)
            if source is None or target is None or source == target:
                self.report.relationships["skipped"] += 1
                continue
            params.append({"id": self.dest_id(r.id), "tenant": self.tenant_id, "source": source,
                           "target": target, "type": r.rel, "confidence": r.confidence,
                           "reason": r.reason, "by": r.decided_by, "created_at": r.created_at})
        self._insert_counted(imports.insert_edge, params, self.report.relationships)

    def _tombstones(self, records: list[TombstoneRecord]) -> None:
        # The file's vectors are the destination's when every memory kept its vector.
        copy = self.models_seen <= {self.embedder.model}
        params = []
        for t in records:
            vec = decode_vector(t.embedding) if copy and t.reason != "forgotten" else None
            if vec is not None and len(vec) != self.embedder.dim:
                vec = None
            memory = self.resolve(t.memory_id) or (self.dest_id(t.memory_id) if t.memory_id else None)
            params.append({
                "id": self.dest_id(t.id), "tenant": self.tenant_id, "path": t.path,
                "slot": t.slot, "slot_hash": _hex(t.slot_value_hash, "slot_value_hash"),
                "hash": _hex(t.value_hash, "value_hash"), "reason": t.reason, "memory": memory,
                "replaced_by": self.resolve(t.replaced_by) or (
                    self.dest_id(t.replaced_by) if t.replaced_by else None),
                # A forgotten value keeps no vector (tombstones_forgotten_check).
                "embedding": vec, "refill": t.reason != "forgotten", "model": self.embedder.model,
                "until": t.until,
                "created_at": t.created_at,
                **({} if t.fingerprint is None else {
                    "key_id": self.dest_id(t.fingerprint_key_id),
                    "secret": _hex(t.fingerprint_key, "fingerprint_key"),
                    "fingerprint": [_hex(h, "fingerprint") for h in t.fingerprint],
                    "weights": t.fingerprint_weights, "kinds": t.fingerprint_kinds}),
            })
        self._insert_counted(imports.insert_tombstone, params, self.report.tombstones)

    def _insert_counted(self, insert: Callable[..., int], params: list[dict[str, Any]],
                        counts: dict[str, int]) -> None:
        if not params:
            return
        with self.db.transaction(cause="memory.import", actor=self.caller.actor) as cur:
            inserted = skipped = 0
            for p in params:
                n = insert(cur, p)
                inserted += max(n, 0)
                skipped += n < 0
        counts["inserted"] += inserted
        counts["existing"] += len(params) - inserted - skipped
        if skipped:
            counts["skipped"] += skipped


def import_lines(
    db: Database, tenant_id: uuid.UUID, lines: Iterable[str], embedder: Embedder, **options: Any,
) -> dict[str, Any]:
    """Import an export into ``tenant_id``; return the report."""
    return Importer(db, tenant_id, embedder, **options).run(lines).to_json()
