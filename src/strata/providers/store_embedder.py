"""The embedder a store uses is the store's: recorded in the database, so every process that
opens the store (``strata dev``, the API and MCP apps, operator commands, Lambda) embeds
queries and writes with the model its vectors came from, whatever shell it was started from.

The record is one ``strata_meta`` row (key ``embedder``): the provider (the STRATA_EMBEDDER
value), the model stamp (what ``embedding_model`` on each row says), the dimension and the
model's name. It is written the first time a process resolves the store's embedder (a new
store: at ``strata dev`` start, or by the first command), and by ``strata reindex`` when every
memory vector is the new model's.

Resolution (:func:`resolve`):

- STRATA_EMBEDDER unset: the store's embedder. A store without a record takes the model its
  vectors are stamped with (stores written before the record existed), else this machine's
  default for a new store (``local`` when installed, else ``hash``; see
  :func:`strata.providers.embedders.default_provider`).
- STRATA_EMBEDDER set to the store's embedder: that one. A server configured with another on
  a store that holds no vector yet adopts it (recorded; nothing needs re-embedding).
- Set to another embedder while the store holds vectors: a query embedded by one model ranks
  another model's vectors as noise, so servers refuse to start (:class:`EmbedderMismatch`,
  naming both and the fix), and operator commands follow the store and say so. ``strata
  reindex`` is the way to switch.
"""

from __future__ import annotations

import json
import logging
import re
from dataclasses import asdict, dataclass

from psycopg import errors as pg_errors
from psycopg import sql

from strata.db import Database
from strata.foundation.config import Settings
from strata.providers import Embedder
from strata.providers.embedders import default_provider, get_embedder

log = logging.getLogger(__name__)

KEY = "embedder"

_RECORDED = "SELECT value FROM strata_meta WHERE key = 'embedder'"
# A concurrent first start records first; the loser reads the winner's record.
_RECORD_FIRST = ("INSERT INTO strata_meta (key, value) VALUES ('embedder', %(value)s)"
                 " ON CONFLICT (key) DO NOTHING")
_RECORD = ("INSERT INTO strata_meta (key, value) VALUES ('embedder', %(value)s)"
           " ON CONFLICT (key) DO UPDATE SET value = excluded.value")
# Each EXISTS stops at the first row with a vector: cheap on a store of any size.
_HAS_VECTORS = """
SELECT EXISTS (SELECT 1 FROM memories WHERE embedding IS NOT NULL)
    OR EXISTS (SELECT 1 FROM tombstones WHERE embedding IS NOT NULL)
    OR EXISTS (SELECT 1 FROM ingest_candidates WHERE embedding IS NOT NULL) AS any
"""

_HASH_STAMP = re.compile(r"^strata-hash-v1-(\d+)$")
_PROVIDER_STAMP = re.compile(r"^(openai|bedrock|local):(.+):(\d+)$")


class EmbedderMismatch(RuntimeError):
    """STRATA_EMBEDDER names another embedder than the store's, and the store holds vectors."""


@dataclass(frozen=True)
class StoreEmbedder:
    """What the record holds."""

    provider: str
    model: str  # the stamp on the rows
    dim: int
    name: str | None  # the model's name (STRATA_EMBEDDING_MODEL); None for hash

    @classmethod
    def of(cls, embedder: Embedder) -> StoreEmbedder:
        return cls(embedder.provider, embedder.model, embedder.dim,
                   getattr(embedder, "model_name", None))

    @classmethod
    def from_stamp(cls, stamp: str) -> StoreEmbedder | None:
        """What a row's ``embedding_model`` says, for stores written before the record; None
        for a stamp no provider here gives."""
        if m := _HASH_STAMP.match(stamp):
            return cls("hash", stamp, int(m[1]), None)
        if m := _PROVIDER_STAMP.match(stamp):
            return cls(m[1], stamp, int(m[3]), m[2])
        return None

    def settings(self, settings: Settings) -> Settings:
        """``settings`` choosing this embedder (endpoint, keys and the rest stay as they are)."""
        return settings.model_copy(update={
            "embedder": self.provider, "embedding_model": self.name, "embedding_dim": self.dim})

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)


@dataclass(frozen=True)
class Resolved:
    embedder: Embedder
    settings: Settings  # the caller's settings choosing ``embedder``
    source: str  # "configured" (STRATA_EMBEDDER) or "store" (its record)
    warning: str | None = None  # a configured embedder the command did not follow


def recorded(db: Database) -> StoreEmbedder | None:
    with db.connection() as conn:
        row = conn.execute(_RECORDED).fetchone()
    if row is None:
        return None
    value = json.loads(row["value"])
    return StoreEmbedder(value["provider"], value["model"], int(value["dim"]), value.get("name"))


def record(db: Database, embedder: Embedder) -> None:
    """Make ``embedder`` the store's (``strata reindex``, once every vector is its model's)."""
    with db.transaction(cause="embedder") as cur:
        cur.execute(_RECORD, {"value": StoreEmbedder.of(embedder).to_json()})


def has_vectors(db: Database) -> bool:
    with db.connection() as conn:
        return conn.execute(_HAS_VECTORS).fetchone()["any"]


# Which models the stored vectors come from. A full scan of ``memories`` (no index leads with
# embedding_model), bounded by a statement timeout: the check is advice at start-up, never a
# reason to wait.
_STORED_MODELS = """
SELECT embedding_model AS model, count(*) AS n FROM memories
WHERE embedding_model IS NOT NULL
GROUP BY embedding_model ORDER BY n DESC, embedding_model
"""
STORED_MODELS_TIMEOUT_MS = 2000


def stored_models(db: Database) -> dict[str, int] | None:
    """How many memory vectors each model stamped; None when counting them took longer than
    STORED_MODELS_TIMEOUT_MS (a very large store: the check is skipped)."""
    try:
        with db.connection() as conn, conn.transaction():
            conn.execute(sql.SQL("SET LOCAL statement_timeout = {}").format(
                sql.Literal(STORED_MODELS_TIMEOUT_MS)))
            return {r["model"]: r["n"] for r in conn.execute(_STORED_MODELS).fetchall()}
    except pg_errors.QueryCanceled:
        return None


def _stamped(db: Database) -> StoreEmbedder | None:
    """The model most of the store's memory vectors are stamped with (a store from before the
    record), else the one ``strata reindex`` last switched to."""
    counted = stored_models(db)
    with db.connection() as conn:
        if counted is None:  # too many to count in time: any one row's stamp says it
            row = conn.execute("SELECT embedding_model FROM memories"
                               " WHERE embedding_model IS NOT NULL LIMIT 1").fetchone()
            counted = {row["embedding_model"]: 1} if row else {}
        for stamp in counted:
            if found := StoreEmbedder.from_stamp(stamp):
                return found
        row = conn.execute("SELECT value FROM strata_meta WHERE key = 'embedding_model'").fetchone()
    return StoreEmbedder.from_stamp(row["value"]) if row else None


def _first_record(db: Database, settings: Settings) -> StoreEmbedder:
    """The record of a store that has none yet: its vectors' model, else the configured
    embedder, else this machine's default. A concurrent first start may record first: its
    record is the one returned."""
    found = _stamped(db)
    if found is None:
        chosen = settings if settings.embedder else settings.model_copy(
            update={"embedder": default_provider(settings)})
        found = StoreEmbedder.of(get_embedder(chosen))
    with db.transaction(cause="embedder") as cur:
        cur.execute(_RECORD_FIRST, {"value": found.to_json()})
    return recorded(db) or found


def resolve(db: Database, settings: Settings, *, strict: bool) -> Resolved:
    """The embedder this process uses on this store (see the module's docstring). ``strict``
    (servers): a configured embedder other than the store's, on a store with vectors, raises
    :class:`EmbedderMismatch`; otherwise (operator commands) the store's is used and
    ``warning`` says so. A configuration the provider refuses raises ValueError."""
    store = recorded(db) or _first_record(db, settings)
    if settings.embedder is None:
        return Resolved(*_build(store, settings), source="store")
    configured = get_embedder(settings)
    if configured.model == store.model:
        return Resolved(configured, settings, source="configured")
    if strict and not has_vectors(db):
        # A server on a store with nothing embedded yet: switching costs nothing, so the
        # configured one is adopted. (A command leaves the store's choice to its servers.)
        record(db, configured)
        log.info("embedder: the store holds no vectors yet; it now uses %s", configured.model)
        return Resolved(configured, settings, source="configured")
    fix = (f"run `strata reindex` with STRATA_EMBEDDER={settings.embedder} to re-embed the "
           f"store (it then uses {configured.model}), or unset STRATA_EMBEDDER to use the "
           f"store's ({store.provider})")
    if strict:
        raise EmbedderMismatch(
            f"STRATA_EMBEDDER={settings.embedder} embeds with {configured.model}, but this "
            f"store's vectors are {store.model}'s: a query embedded by one model ranks the "
            f"other's vectors as noise. To switch, {fix}")
    warning = (f"STRATA_EMBEDDER={settings.embedder} ({configured.model}) is not this store's "
               f"embedder ({store.model}): this command uses the store's. To switch, {fix}")
    log.warning(warning)
    return Resolved(*_build(store, settings), source="store", warning=warning)


def _build(store: StoreEmbedder, settings: Settings) -> tuple[Embedder, Settings]:
    chosen = store.settings(settings)
    embedder = get_embedder(chosen)
    if embedder.model != store.model:  # a stamp this version of strata no longer gives
        raise EmbedderMismatch(
            f"this store's embedder is {store.model}, which this version of strata builds as "
            f"{embedder.model}: run `strata reindex` with STRATA_EMBEDDER set")
    return embedder, chosen
