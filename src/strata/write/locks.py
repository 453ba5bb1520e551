"""Serialisation of writers: what two concurrent transactions may not decide independently.

Two writers of one canonical value in one (tenant, path), or of one slot there, would each
read "nothing active yet" and each insert an active row. Every write of the write path
therefore first takes a transaction-scoped advisory lock per (tenant, path, value) and per
(tenant, path, slot) it is about to decide on, then reads and decides: the second writer
waits, and then sees the first one's row (a reinforcement, or a holder to supersede).

Locks are taken in one sorted order per transaction, so two batches that share keys cannot
deadlock on them. A writer that locks rows first (PATCH locks the memory it edits) can still
meet a writer that locks keys first; PostgreSQL then aborts one of them, and ``retrying``
runs its transaction again. The unique indexes of migration 0009 are the backstop: a missed
lock surfaces as a unique violation, which is retried the same way, never as a second active
holder.
"""

from __future__ import annotations

import hashlib
import logging
import uuid
from collections.abc import Callable, Iterable
from typing import TypeVar

import psycopg
from psycopg import errors as pg_errors

from strata.foundation.errors import Conflict

log = logging.getLogger(__name__)

T = TypeVar("T")

# The schema's guards (migration 0009): a violation means a concurrent writer won a race.
GUARD_INDEXES = frozenset({"memories_active_value_key", "memories_active_slot_key"})
ATTEMPTS = 5


def value_key(tenant_id: uuid.UUID, path: str, value_hash: bytes) -> tuple[str, ...]:
    return (str(tenant_id), "value", path, bytes(value_hash).hex())


def slot_key(tenant_id: uuid.UUID, path: str, slot: str) -> tuple[str, ...]:
    return (str(tenant_id), "slot", path, slot)


def name_key(tenant_id: uuid.UUID, path: str, name: str) -> tuple[str, ...]:
    return (str(tenant_id), "name", path, name)


def _lock_id(key: tuple[str, ...]) -> int:
    digest = hashlib.sha256("\x1f".join(key).encode()).digest()
    return int.from_bytes(digest[:8], "big", signed=True)


def hold(cur: psycopg.Cursor, keys: Iterable[tuple[str, ...]]) -> None:
    """Take the advisory locks for ``keys`` until the transaction ends, in sorted order."""
    ids = sorted({_lock_id(k) for k in keys})
    if not ids:
        return
    # One statement per lock, in order: a set-returning form would leave the order to the
    # planner. Pipelined, so a batch of hundreds costs one round trip.
    with cur.connection.pipeline():
        for lock in ids:
            cur.execute("SELECT pg_advisory_xact_lock(%s)", (lock,))


def _retryable(exc: BaseException) -> bool:
    if isinstance(exc, (pg_errors.DeadlockDetected, pg_errors.SerializationFailure)):
        return True
    cause = exc if isinstance(exc, pg_errors.UniqueViolation) else exc.__cause__
    return isinstance(cause, pg_errors.UniqueViolation) and (
        cause.diag.constraint_name in GUARD_INDEXES)


def retrying(db, body: Callable[[psycopg.Cursor], T], *, cause: str, actor: str | None) -> T:
    """Run ``body`` in a transaction of its own, again when a concurrent writer forced an
    abort (deadlock, serialisation failure, a guard index). ``body`` must do nothing outside
    the transaction it is given, so running it again is safe."""
    for attempt in range(1, ATTEMPTS + 1):
        try:
            with db.transaction(cause=cause, actor=actor) as cur:
                return body(cur)
        except (psycopg.Error, Conflict) as exc:
            if not _retryable(exc):
                raise
            log.info("write retried after a concurrent writer", extra={"attempt": attempt})
    raise Conflict("concurrent writes to the same value kept colliding: retry the request")
