"""Audit chain: ``row_hash = sha256(prev_hash || canonical(fields))``, seq contiguous per tenant.

Entries record who did what to which ids, never memory content, query text or keys. Appends
run in their own short transaction after the operation and are serialised per tenant by a
row lock on ``audit_heads`` (no global lock). An append that fails is logged and counted and
never fails the request; since seq is contiguous, a deleted row shows as a gap.

A failed append is also detectable after the fact: the process remembers, per tenant, how
many appends failed, and the next append that succeeds for that tenant is followed by an
``audit.missed`` entry whose ``count`` is that number. Verification sums them
(``missed_appends``); logs carry each failure (operation and tenant, never content).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import threading
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Protocol, runtime_checkable

from strata.db import Database
from strata.foundation.errors import StrataError

log = logging.getLogger(__name__)

GENESIS = b"\x00" * 32


@runtime_checkable
class Actor(Protocol):
    """Who an audit row names. Audit sits below auth, so it takes any object with a caller's
    ids (``strata.auth.access.Caller`` is one) rather than importing the caller's class."""

    @property
    def tenant_id(self) -> uuid.UUID: ...
    @property
    def principal_id(self) -> uuid.UUID | None: ...
    @property
    def key_id(self) -> uuid.UUID | None: ...
    @property
    def surface(self) -> str: ...


@runtime_checkable
class Reader(Actor, Protocol):
    """A caller asking to read the trail, which only the owner of the tenant's root may."""

    def require_root_owner(self) -> None:
        """Refuse (``Forbidden``) unless the caller owns the tenant's root."""


@dataclass(frozen=True)
class SystemActor:
    """A job acting on one tenant with no principal and no key (a prune, a lifecycle run)."""

    tenant_id: uuid.UUID
    surface: str = "cli"
    principal_id: None = None
    key_id: None = None


MISSED = "audit.missed"
_failures = 0
_missed: dict[uuid.UUID, int] = {}  # per tenant: failed appends not yet marked in its chain
_failures_lock = threading.Lock()


def failure_count() -> int:
    return _failures


def _failed(tenant_id: uuid.UUID) -> None:
    global _failures
    with _failures_lock:
        _failures += 1
        _missed[tenant_id] = _missed.get(tenant_id, 0) + 1


def _take_missed(tenant_id: uuid.UUID) -> int:
    with _failures_lock:
        return _missed.pop(tenant_id, 0)


@dataclass
class AuditEvent:
    action: str  # read | write | delete | admin
    operation: str  # e.g. memory.create
    memory_ids: list[uuid.UUID] = field(default_factory=list)
    count: int = 0
    query_len: int | None = None
    outcome: str = "ok"
    # The tenant's head, (seq, row_hash), as a statement of the operation read it (HEAD), so
    # a read's append need not read it again: one round trip (see append). Not recorded.
    head: tuple[int, bytes] | None = field(default=None, repr=False, compare=False)


# The tenant's head, for HEAD prefetches (an operation's statement reads it beside its own).
HEAD = "SELECT seq, row_hash FROM audit_heads WHERE tenant_id = %(tenant_id)s"


# What json.dumps(sort_keys=True, separators=(",", ":"), default=str) builds on every call,
# built once: verification hashes millions of rows and the encoder setup was a tenth of it.
_ENCODER = json.JSONEncoder(sort_keys=True, separators=(",", ":"), default=str)


def canonical(fields: dict[str, Any]) -> bytes:
    return _ENCODER.encode(fields).encode()


def row_hash(prev: bytes, row: dict[str, Any]) -> bytes:
    """The chain link of one entry, from its stored columns."""
    fields = {
        "tenant_id": str(row["tenant_id"]),
        "seq": int(row["seq"]),
        "at": row["at"].astimezone(UTC).isoformat(),
        "action": row["action"],
        "surface": row["surface"],
        "operation": row["operation"],
        "principal_id": str(row["principal_id"]) if row["principal_id"] else None,
        "key_id": str(row["key_id"]) if row["key_id"] else None,
        "memory_ids": [str(m) for m in row["memory_ids"]],
        "count": int(row["count"]),
        "query_len": row["query_len"],
        "outcome": row["outcome"],
    }
    return hashlib.sha256(bytes(prev) + canonical(fields)).digest()


_APPEND = """
WITH head AS (
    UPDATE audit_heads SET seq = %(seq)s, row_hash = %(row_hash)s
    WHERE tenant_id = %(tenant_id)s AND seq = %(prev_seq)s
    RETURNING 1
)
INSERT INTO audit_log (tenant_id, seq, at, action, surface, operation, principal_id, key_id,
                       memory_ids, count, query_len, outcome, prev_hash, row_hash)
SELECT %(tenant_id)s, %(seq)s, %(at)s, %(action)s, %(surface)s, %(operation)s,
       %(principal_id)s, %(key_id)s, %(memory_ids)s, %(count)s, %(query_len)s, %(outcome)s,
       %(prev_hash)s, %(row_hash)s
FROM head
"""
_OPTIMISTIC_ATTEMPTS = 3
_ATTEMPTS = 6


def _try_append(conn, caller: Actor, event: AuditEvent, *, locked: bool,
                durable: bool = True) -> int | None:
    row = _next_row(conn, caller, event, locked=locked, durable=durable)
    if row is None:
        return None
    return row["seq"] if conn.execute(_APPEND, row).rowcount == 1 else None


def _try_append_known_head(conn, caller: Actor, event: AuditEvent) -> int | None:
    """A read's first attempt when the operation read the head already (``event.head``): the
    append in one round trip (BEGIN, the setting, the append, COMMIT). A head that moved
    since loses the race like any other attempt; the caller reads it again."""
    assert event.head is not None
    row = _row_after(caller, event, event.head[0], bytes(event.head[1]))
    with conn.pipeline():
        with conn.transaction():
            conn.execute("SELECT set_config('synchronous_commit', 'off', true)")
            cur = conn.execute(_APPEND, row)
    return row["seq"] if cur.rowcount == 1 else None


def _try_append_pipelined(conn, caller: Actor, event: AuditEvent) -> int | None:
    """One optimistic attempt of a read's append in two round trips instead of four: BEGIN
    travels with the head's read, and the append with COMMIT (psycopg's pipeline mode). The
    append's row count is known once the pipeline has synced, after COMMIT; an append that
    lost the race committed nothing but the head's read, and the caller tries again."""
    with conn.pipeline():
        with conn.transaction():
            row = _next_row(conn, caller, event, locked=False, durable=False)
            cur = None if row is None else conn.execute(_APPEND, row)
    return row["seq"] if cur is not None and cur.rowcount == 1 else None


def _next_row(conn, caller: Actor, event: AuditEvent, *, locked: bool,
              durable: bool) -> dict[str, Any] | None:
    """The entry that would follow the tenant's head, linked to it (None: the tenant had no
    head yet; one is created)."""
    head = conn.execute(
        "SELECT seq, row_hash"
        # inside the caller's transaction: this append commits without waiting for WAL flush
        + ("" if durable else ", set_config('synchronous_commit', 'off', true)")
        + " FROM audit_heads WHERE tenant_id = %s" + (" FOR UPDATE" if locked else ""),
        (caller.tenant_id,),
    ).fetchone()
    if head is None:
        conn.execute(
            "INSERT INTO audit_heads (tenant_id, seq, row_hash) VALUES (%s, 0, %s)"
            " ON CONFLICT (tenant_id) DO NOTHING",
            (caller.tenant_id, GENESIS),
        )
        return None
    return _row_after(caller, event, head["seq"], bytes(head["row_hash"]))


def _row_after(caller: Actor, event: AuditEvent, seq: int, prev_hash: bytes
               ) -> dict[str, Any]:
    """The entry for ``event`` linked to the head (``seq``, ``prev_hash``)."""
    row = {
        "tenant_id": caller.tenant_id,
        "seq": seq + 1,
        "prev_seq": seq,
        "at": datetime.now(UTC),
        "action": event.action,
        "surface": caller.surface,
        "operation": event.operation,
        "principal_id": caller.principal_id,
        "key_id": caller.key_id,
        "memory_ids": list(dict.fromkeys(event.memory_ids)),
        "count": event.count,
        "query_len": event.query_len,
        "outcome": event.outcome,
        "prev_hash": prev_hash,
    }
    row["row_hash"] = row_hash(row["prev_hash"], row)
    return row


def append(db: Database, caller: Actor, event: AuditEvent) -> int | None:
    """Append one entry to the caller's tenant chain; return its seq, or None on failure.

    Compare-and-set on the tenant's head: read it, link the new row to it, and move the head
    only if nobody else did in between (one statement). A lost race re-reads and retries, so
    appends to one tenant serialise without holding a lock across round trips and appends to
    different tenants never wait for each other.

    Entries for reads commit asynchronously (``synchronous_commit = off`` for their own
    transaction only): the commit does not wait for the WAL flush, which was ~4 ms of every
    search here (0.3 ms without). A database crash can lose the last few hundred
    milliseconds of *read* entries -- together with the head move of the same transaction,
    so the chain stays consistent and verifies. Writes, deletes and admin actions keep
    synchronous commits. A read's optimistic attempts are pipelined: two round trips (BEGIN
    and the head's read; the append and COMMIT) instead of four -- one when the operation
    read the head beside its own statement (``event.head``, read with :data:`HEAD`; search
    does, on the writer).
    """
    seq = _append(db, caller, event)
    if seq is None:
        _failed(caller.tenant_id)
        return None
    missed = _take_missed(caller.tenant_id)
    if missed and _append(db, caller, AuditEvent("admin", MISSED, count=missed)) is None:
        with _failures_lock:  # still owed: the next successful append marks it
            _missed[caller.tenant_id] = _missed.get(caller.tenant_id, 0) + missed
    return seq


def _append(db: Database, caller: Actor, event: AuditEvent) -> int | None:
    durable = event.action != "read"
    try:
        with db.connection() as conn:
            if not durable and event.head is not None:
                seq, event.head = _try_append_known_head(conn, caller, event), None
                if seq is not None:
                    return seq
            for attempt in range(_ATTEMPTS):
                # After a few lost races, queue on the head's row lock instead: progress is
                # then guaranteed under any contention.
                locked = attempt >= _OPTIMISTIC_ATTEMPTS
                tx = locked or not durable
                if not durable and not locked:
                    seq = _try_append_pipelined(conn, caller, event)
                else:
                    with conn.transaction() if tx else contextlib.nullcontext():
                        seq = _try_append(conn, caller, event, locked=locked, durable=durable)
                if seq is not None:
                    return seq
            raise RuntimeError(f"audit head stayed contended for {_ATTEMPTS} attempts")
    except Exception:  # fail open: the request has already done its work
        log.exception(
            "audit append failed",
            extra={"tenant_id": str(caller.tenant_id), "operation": event.operation},
        )
        return None


def append_in(conn, caller: Actor, event: AuditEvent) -> int:
    """Append inside the caller's open transaction, so the entry commits (or rolls back) with
    the change it records. It queues on the head's row lock; it raises rather than fail open."""
    seq = _try_append(conn, caller, event, locked=True)
    if seq is None:  # the tenant had no head yet: the first call made it
        seq = _try_append(conn, caller, event, locked=True)
    if seq is None:
        raise RuntimeError("audit head could not be moved")
    return seq


@contextlib.contextmanager
def audited(db: Database, caller: Actor, action: str, operation: str) -> Iterator[AuditEvent]:
    """Record the operation whether it succeeds or is refused (outcome = the error code)."""
    event = AuditEvent(action=action, operation=operation)
    try:
        yield event
    except StrataError as exc:
        event.outcome = exc.code
        append(db, caller, event)
        raise
    except Exception:
        event.outcome = "error"
        append(db, caller, event)
        raise
    append(db, caller, event)


_LIST_COLUMNS = """seq, at, action, surface, operation, principal_id, key_id, memory_ids, count,
                   query_len, outcome, encode(row_hash, 'hex') AS row_hash"""


def list_entries(
    db: Database, caller: Reader, *, after_seq: int = 0, limit: int = 100
) -> tuple[list[dict[str, Any]], int | None]:
    with audited(db, caller, "admin", "audit.list") as event:
        # Inside: a refused read of the audit trail is audited too. The trail names memory
        # ids across the whole tenant, so only an owner of the tenant root reads it.
        caller.require_root_owner()
        with db.connection() as conn:
            rows = conn.execute(
                f"SELECT {_LIST_COLUMNS} FROM audit_log WHERE tenant_id = %s AND seq > %s"
                " ORDER BY seq LIMIT %s",
                (caller.tenant_id, after_seq, limit + 1),
            ).fetchall()
        event.count = min(len(rows), limit)
    more = len(rows) > limit
    rows = rows[:limit]
    return rows, (rows[-1]["seq"] if more else None)
