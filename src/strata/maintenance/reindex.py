"""``strata reindex``: re-embed every stored vector with the configured embedder, switching the
vector columns' dimension first when it changed.

1. **Prepare** (one transaction, only when the target model is new to this database): if the
   dimension changes, drop the indexes on the vector columns, retype ``memories.embedding``,
   ``tombstones.embedding`` and ``ingest_candidates.embedding`` to ``vector(N)`` (every vector
   becomes NULL, and ``embedding_model`` with it), recreate the indexes from their saved
   definitions and record the dimension in ``strata_meta``; for a new model at the same
   dimension, clear the tombstones' and staged candidates' vectors (they are copies or
   staging, refilled below). ``strata_meta.embedding_model`` records the target, so a rerun
   skips this step.
2. **Memories**, keyset by id in batches: rows whose ``embedding_model`` is not the target
   are embedded outside any transaction, then written only if their content is unchanged (a
   concurrent edit wins; the row is left for a rerun). Re-embedding is not a change of the
   memory: no version bump, and no history row where the role may set
   ``session_replication_role`` (the history trigger is the table's only trigger).
3. **Staged ingest candidates** that had passed the gate get a vector again.
4. **Tombstones** of superseded and rejected values take the vector of their memory again
   (a tombstone stores its retired memory's vector; forgotten ones store none).

Stopping at any point and rerunning is safe: committed batches stay, and rows already
stamped with the target model are skipped. Writers using the old dimension fail while a
switch is in progress: stop the API for a dimension change and restart it with the new
``STRATA_EMBEDDING_DIM``.
"""

from __future__ import annotations

import re
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import psycopg
from psycopg import errors as pg_errors
from psycopg import sql

from strata.db import Database
from strata.foundation.errors import Conflict
from strata.providers import Embedder
from strata.providers.store_embedder import record
from strata.write import embeddings

VECTOR_TABLES = ("memories", "tombstones", "ingest_candidates")
_LOCK_KEY = 0x5374726152  # "StraR": one reindex at a time
_LOCK_HOLD_S = 7 * 24 * 3600.0  # a reindex of any size ends well within a week
_ZERO = uuid.UUID(int=0)
_TYPMOD = re.compile(r"\b(vector|halfvec|sparsevec)\((\d+)\)")

Progress = Callable[[str, int], None]


@dataclass
class ReindexReport:
    model: str
    dim: int
    previous_dim: int = 0
    dim_changed: bool = False
    prepared: bool = False
    tenant_id: str | None = None
    history: str = "not_recorded"
    memories: dict[str, int] = field(default_factory=lambda: {
        "embedded": 0, "already_current": 0, "changed_during_run": 0, "remaining": 0})
    ingest_candidates: dict[str, int] = field(default_factory=lambda: {"embedded": 0})
    tombstones: dict[str, int] = field(default_factory=lambda: {
        "refilled": 0, "without_vector": 0})
    indexes: list[str] = field(default_factory=list)
    # The store's embedder is now this one (every memory vector is its model's).
    recorded: bool = False
    batches: int = 0
    seconds: float = 0.0

    def to_json(self) -> dict[str, Any]:
        return dict(self.__dict__)


_INDEXES = """
SELECT c.relname AS table_name, ic.relname AS index_name, pg_get_indexdef(i.indexrelid) AS def
FROM pg_index i
JOIN pg_class ic ON ic.oid = i.indexrelid
JOIN pg_class c ON c.oid = i.indrelid
JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname = current_schema() AND c.relname = ANY(%(tables)s)
  AND (EXISTS (SELECT 1 FROM pg_attribute a
               WHERE a.attrelid = i.indrelid AND a.attnum = ANY(i.indkey::int2[])
                 AND a.attname = 'embedding')
       OR coalesce(pg_get_expr(i.indexprs, i.indrelid), '') ~ '\\membedding\\M'
       OR coalesce(pg_get_expr(i.indpred, i.indrelid), '') ~ '\\membedding\\M')
ORDER BY c.relname, ic.relname
"""

_NEXT_MEMORIES = """
SELECT id, content FROM memories
WHERE id > %(after)s AND embedding_model IS DISTINCT FROM %(model)s
  AND (%(tenant)s::uuid IS NULL OR tenant_id = %(tenant)s)
ORDER BY id LIMIT %(batch)s
"""


# Merged candidates never had a vector of their own: the one they merged into carries it.
_NEXT_CANDIDATES = """
SELECT receipt_id, idx, content FROM ingest_candidates
WHERE (receipt_id, idx) > (%(after)s, %(after_idx)s) AND embedding IS NULL AND gate IS NOT NULL
  AND coalesce(gate->>'action', '') <> 'merged'
  AND (%(tenant)s::uuid IS NULL OR tenant_id = %(tenant)s)
ORDER BY receipt_id, idx LIMIT %(batch)s
"""

_WRITE_CANDIDATE = """
UPDATE ingest_candidates SET embedding = %(embedding)s
WHERE receipt_id = %(receipt_id)s AND idx = %(idx)s AND content = %(content)s AND embedding IS NULL
"""

_NEXT_TOMBSTONES = """
SELECT id FROM tombstones
WHERE id > %(after)s AND reason <> 'forgotten'
  AND (%(tenant)s::uuid IS NULL OR tenant_id = %(tenant)s)
ORDER BY id LIMIT %(batch)s
"""



def model_mismatch(stored: dict[str, int] | None, model: str) -> str | None:
    """The warning when stored vectors come from another model than ``model`` (the store's
    embedder's; an unfinished ``strata reindex`` leaves a store so): search compares a query
    embedded by one model with vectors of another, so the vector arm ranks noise until the
    reindex finishes. None when they match."""
    if not stored:
        return None
    others = {m: n for m, n in stored.items() if m != model}
    if not others:
        return None
    total, stale = sum(stored.values()), sum(others.values())
    return (f"{stale} of {total} stored memory vectors were embedded by "
            f"{', '.join(others)}, not by the store's embedder {model}: recall ranks them "
            "as noise until a `strata reindex` finishes (run it again with STRATA_EMBEDDER set "
            "to the embedder it switches to; it resumes)")


class Reindex:
    """One run. ``report`` holds the progress so far, also when ``run`` raises."""

    def __init__(
        self, db: Database, embedder: Embedder, *, batch: int = 500,
        tenant_id: uuid.UUID | None = None, progress: Progress | None = None,
    ) -> None:
        if batch < 1:
            raise ValueError("batch must be at least 1")
        self.db = db
        self.embedder = embedder
        self.batch = batch
        self.tenant_id = tenant_id
        self.progress = progress or (lambda phase, done: None)
        self.report = ReindexReport(model=embedder.model, dim=embedder.dim,
                                    tenant_id=str(tenant_id) if tenant_id else None)
        self._quiet_history: bool | None = None

    def run(self) -> ReindexReport:
        started = time.perf_counter()
        # The lock's connection is held, idle, for the whole run, which may re-embed for
        # longer than a job's per-call deadline; the calls made during it have their own.
        with self.db.connection(deadline_s=_LOCK_HOLD_S) as lock:
            got = lock.execute("SELECT pg_try_advisory_lock(%s) AS ok", (_LOCK_KEY,)).fetchone()
            if not got["ok"]:
                raise Conflict("another `strata reindex` is running on this database")
            try:
                self._prepare()
                self._count_current()
                self._memories()
                self._candidates()
                self._tombstones()
                self._count_remaining()
                self._record()
            finally:
                self.report.seconds = round(time.perf_counter() - started, 3)
                lock.execute("SELECT pg_advisory_unlock(%s)", (_LOCK_KEY,))
        return self.report

    # -- prepare ---------------------------------------------------------------------------

    def _prepare(self) -> None:
        target_dim, target_model = self.embedder.dim, self.embedder.model
        with self.db.transaction(cause="reindex") as cur:
            meta = {r["key"]: r["value"] for r in cur.execute(
                "SELECT key, value FROM strata_meta WHERE key IN ('embedding_dim', 'embedding_model')"
                " FOR UPDATE"
            ).fetchall()}
            current = int(meta["embedding_dim"])
            self.report.previous_dim = current
            if current != target_dim:
                self.report.indexes = switch_dimension(cur, current, target_dim)
                self.report.dim_changed = True
            elif meta.get("embedding_model") == target_model:
                return
            else:
                # Copies and staging of the previous model's vectors: refilled below.
                cur.execute(embeddings.CLEAR_TOMBSTONES)
                cur.execute(
                    "UPDATE ingest_candidates SET embedding = NULL WHERE embedding IS NOT NULL"
                )
            cur.execute(
                "INSERT INTO strata_meta (key, value) VALUES ('embedding_model', %(m)s)"
                " ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                {"m": target_model},
            )
            self.report.prepared = True

    def _count_current(self) -> None:
        with self.db.connection() as conn:
            row = conn.execute(
                "SELECT count(*) AS n FROM memories WHERE embedding_model = %(model)s"
                " AND (%(tenant)s::uuid IS NULL OR tenant_id = %(tenant)s)",
                {"model": self.embedder.model, "tenant": self.tenant_id},
            ).fetchone()
        self.report.memories["already_current"] = row["n"]

    # -- phases ----------------------------------------------------------------------------

    def _memories(self) -> None:
        after = _ZERO
        while True:
            with self.db.connection() as conn:
                rows = conn.execute(_NEXT_MEMORIES, self._page(after=after)).fetchall()
            if not rows:
                return
            vectors = self._embed([r["content"] for r in rows])
            params = [{"id": r["id"], "content": r["content"], "embedding": v,
                       "model": self.embedder.model} for r, v in zip(rows, vectors, strict=True)]
            written = self._write(embeddings.WRITE_MEMORY, params, quiet_history=True)
            self.report.memories["embedded"] += written
            self.report.memories["changed_during_run"] += len(rows) - written
            self.report.batches += 1
            self.progress("memories", self.report.memories["embedded"])
            after = rows[-1]["id"]

    def _candidates(self) -> None:
        after, after_idx = _ZERO, -1
        while True:
            with self.db.connection() as conn:
                rows = conn.execute(
                    _NEXT_CANDIDATES, self._page(after=after, after_idx=after_idx)
                ).fetchall()
            if not rows:
                return
            vectors = self._embed([r["content"] for r in rows])
            params = [{"receipt_id": r["receipt_id"], "idx": r["idx"], "content": r["content"],
                       "embedding": v} for r, v in zip(rows, vectors, strict=True)]
            self.report.ingest_candidates["embedded"] += self._write(_WRITE_CANDIDATE, params)
            self.report.batches += 1
            self.progress("ingest_candidates", self.report.ingest_candidates["embedded"])
            after, after_idx = rows[-1]["receipt_id"], rows[-1]["idx"]

    def _tombstones(self) -> None:
        after = _ZERO
        while True:
            with self.db.transaction(cause="reindex") as cur:
                ids = [r["id"] for r in cur.execute(_NEXT_TOMBSTONES, self._page(after=after))]
                if not ids:
                    return
                cur.execute(embeddings.REFILL_TOMBSTONES, {"ids": ids, "model": self.embedder.model})
                self.report.tombstones["refilled"] += cur.rowcount
            self.progress("tombstones", self.report.tombstones["refilled"])
            after = ids[-1]

    def _count_remaining(self) -> None:
        with self.db.connection() as conn:
            row = conn.execute(
                "SELECT (SELECT count(*) FROM memories WHERE embedding_model IS DISTINCT FROM"
                "          %(model)s AND (%(tenant)s::uuid IS NULL OR tenant_id = %(tenant)s))"
                "         AS memories,"
                "       (SELECT count(*) FROM tombstones WHERE reason <> 'forgotten'"
                "          AND embedding IS NULL"
                "          AND (%(tenant)s::uuid IS NULL OR tenant_id = %(tenant)s)) AS tombstones",
                {"model": self.embedder.model, "tenant": self.tenant_id},
            ).fetchone()
        self.report.memories["remaining"] = row["memories"]
        # A retired value whose memory is gone (or could not be re-embedded) keeps its hash
        # check but loses the semantic one.
        self.report.tombstones["without_vector"] = row["tombstones"]

    def _record(self) -> None:
        """Once every memory vector in the store is the new model's (a run over one tenant
        counts the others too), the store's embedder is the new one: processes that do not
        configure one follow it (strata.providers.store_embedder)."""
        with self.db.connection() as conn:
            left = conn.execute(
                "SELECT EXISTS (SELECT 1 FROM memories WHERE embedding_model IS DISTINCT FROM"
                " %(model)s) AS left", {"model": self.embedder.model}).fetchone()["left"]
        if not left:
            record(self.db, self.embedder)
            self.report.recorded = True

    # -- helpers ---------------------------------------------------------------------------

    def _page(self, **keys: Any) -> dict[str, Any]:
        return {**keys, "tenant": self.tenant_id, "batch": self.batch, "model": self.embedder.model}

    def _embed(self, texts: list[str]) -> list[Any]:
        vectors = self.embedder.embed(texts)
        if len(vectors) != len(texts):
            raise RuntimeError(f"the embedder returned {len(vectors)} vectors for {len(texts)} texts")
        return vectors

    def _write(self, statement: str, params: list[dict[str, Any]], *,
               quiet_history: bool = False) -> int:
        with self.db.transaction(cause="reindex") as cur:
            if quiet_history:
                self._silence_history(cur)
            written = 0
            for p in params:
                cur.execute(statement, p)
                written += cur.rowcount
            return written

    def _silence_history(self, cur: psycopg.Cursor) -> None:
        """Keep re-embedding out of ``memory_history`` where the role may switch triggers off
        for its own transaction (superuser, or rds_superuser on RDS and Aurora)."""
        if self._quiet_history is False:
            return
        try:
            with cur.connection.transaction():
                cur.execute("SET LOCAL session_replication_role = replica")
            self._quiet_history = True
            self.report.history = "not_recorded"
        except pg_errors.InsufficientPrivilege:
            self._quiet_history = False
            self.report.history = "recorded"


def switch_dimension(cur: psycopg.Cursor, old: int, new: int) -> list[str]:
    """Retype every vector column to ``vector(new)``, nulling the vectors; the indexes on them
    are dropped first and recreated from their own definitions (a ``vector(old)`` or
    ``halfvec(old)`` cast in an expression index follows the new dimension). Returns the
    recreated index names. Runs in the caller's transaction: all or nothing."""
    indexes = cur.execute(_INDEXES, {"tables": list(VECTOR_TABLES)}).fetchall()
    for ix in indexes:
        cur.execute(sql.SQL("DROP INDEX {}").format(sql.Identifier(ix["index_name"])))
    retype = sql.SQL("ALTER COLUMN embedding TYPE vector({}) USING NULL").format(sql.Literal(new))
    for table in VECTOR_TABLES:
        actions = [retype]
        if table == "memories":
            # Both at once, so memories_embedding_model_check (both NULL or neither) holds.
            actions.append(sql.SQL("ALTER COLUMN embedding_model TYPE text USING NULL"))
        cur.execute(sql.SQL("ALTER TABLE {} ").format(sql.Identifier(table))
                    + sql.SQL(", ").join(actions))
    for ix in indexes:
        definition = _TYPMOD.sub(
            lambda m: f"{m.group(1)}({new})" if int(m.group(2)) == old else m.group(0), ix["def"]
        )
        cur.execute(definition)
    cur.execute("UPDATE strata_meta SET value = %s WHERE key = 'embedding_dim'", (str(new),))
    return [ix["index_name"] for ix in indexes]


def reindex(
    db: Database, embedder: Embedder, *, batch: int = 500, tenant_id: uuid.UUID | None = None,
    progress: Progress | None = None,
) -> dict[str, Any]:
    """Re-embed with ``embedder`` (switching the dimension to ``embedder.dim`` if needed) and
    return the report."""
    return Reindex(db, embedder, batch=batch, tenant_id=tenant_id, progress=progress).run().to_json()
