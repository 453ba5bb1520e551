"""Verifying a tenant's chain: in full (the API, ``--full``) or incrementally from the last
verified checkpoint (the scheduled job).

A walk recomputes ``row_hash`` for each row from the previous one, reports the first seq
whose link does not verify (edited, reordered or inserted rows) and the seq gaps (deleted
rows), and compares its end with the tenant's head so a deleted or forged tail shows too.
Head and rows are read in one REPEATABLE READ snapshot: an append committing mid-walk is not
a tamper.

Incremental verification trusts the prefix an earlier run verified: it starts at the
``verified`` checkpoint (seq and row hash of the last row it vouched for) and costs only the
rows appended since. An edit *behind* the checkpoint is found by a full walk, which also
checks that the row at the checkpoint still carries the hash the checkpoint recorded -- a
chain re-forged from the start, head included, links up perfectly and fails only there.
The checkpoint only moves forward, over rows that verified and that the head vouches for.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import psycopg

from strata.audit.chain import GENESIS, audited, row_hash
from strata.audit.maintenance import KeepGoing
from strata.db import Database

if TYPE_CHECKING:
    from strata.auth.access import Caller

BATCH = 5000


@dataclass
class Walk:
    start_seq: int
    prev: bytes  # the row hash the next row must link to
    last_seq: int = 0
    checked: int = 0
    first_bad: int | None = None
    gaps: list[list[int]] = field(default_factory=list)
    complete: bool = False  # reached the end of the chain (not stopped by the budget)
    good: tuple[int, bytes] | None = None  # the last row vouched for (verified, within the head)
    anchor_ok: bool | None = None


def _checkpoints(conn: psycopg.Connection, tenant_id: uuid.UUID) -> dict[str, dict[str, Any]]:
    rows = conn.execute(
        "SELECT kind, seq, row_hash FROM audit_checkpoints WHERE tenant_id = %s", (tenant_id,)
    ).fetchall()
    return {r["kind"]: {"seq": r["seq"], "row_hash": bytes(r["row_hash"])} for r in rows}


def _walk(
    conn: psycopg.Connection, tenant_id: uuid.UUID, start: dict[str, Any] | None, *,
    head: tuple[int, bytes], anchor: dict[str, Any] | None = None, keep_going: KeepGoing | None = None,
    batch: int = BATCH,
) -> Walk:
    start_seq = start["seq"] if start else 0
    w = Walk(start_seq, start["row_hash"] if start else GENESIS, last_seq=start_seq)
    head_seq, head_hash = head
    expected = w.start_seq + 1
    while True:
        rows = conn.execute(
            "SELECT * FROM audit_log WHERE tenant_id = %s AND seq > %s ORDER BY seq LIMIT %s",
            (tenant_id, w.last_seq, batch),
        ).fetchall()
        for row in rows:
            seq = row["seq"]
            w.checked += 1
            if seq != expected:
                w.gaps.append([expected, seq - 1])
                w.first_bad = w.first_bad or expected
            stored_prev, stored_hash = bytes(row["prev_hash"]), bytes(row["row_hash"])
            if w.first_bad is None and (stored_prev != w.prev or row_hash(w.prev, row) != stored_hash):
                w.first_bad = seq
            if anchor is not None and seq == anchor["seq"]:
                w.anchor_ok = stored_hash == anchor["row_hash"]
                if not w.anchor_ok:
                    w.first_bad = min(w.first_bad or seq, seq)
            if w.first_bad is None and seq <= head_seq:
                w.good = (seq, stored_hash)
            w.prev, expected, w.last_seq = stored_hash, seq + 1, seq
        if len(rows) < batch:
            w.complete = True
            break
        if keep_going is not None and not keep_going():
            break
    if w.complete and w.first_bad is None and (w.last_seq != head_seq or w.prev != head_hash):
        if w.last_seq < head_seq:  # deleted tail
            w.first_bad = w.last_seq + 1
            w.gaps.append([w.last_seq + 1, head_seq])
        else:  # rows past the head (none vouched for), or a head that does not match
            w.first_bad = head_seq + 1 if w.last_seq > head_seq else head_seq
    if anchor is not None and w.anchor_ok is None and w.complete:
        w.anchor_ok = anchor["seq"] <= w.start_seq  # the checkpointed row was pruned: nothing to hold
    return w


def _head(conn: psycopg.Connection, tenant_id: uuid.UUID) -> tuple[int, bytes]:
    # A missing head vouches for nothing: every row is then "past the head".
    head = conn.execute(
        "SELECT seq, row_hash FROM audit_heads WHERE tenant_id = %s", (tenant_id,)
    ).fetchone()
    return (head["seq"], bytes(head["row_hash"])) if head else (0, GENESIS)


def _snapshot(conn: psycopg.Connection) -> None:
    conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")


def verify(db: Database, tenant_id: uuid.UUID, *, batch: int = BATCH) -> dict[str, Any]:
    """Recompute the whole chain from its start (or its prune checkpoint); writes nothing."""
    with db.connection() as conn, conn.transaction():
        _snapshot(conn)
        start = _checkpoints(conn, tenant_id).get("pruned")
        head = _head(conn, tenant_id)
        w = _walk(conn, tenant_id, start, head=head, batch=batch)
    return {"ok": w.first_bad is None, "checked": w.checked, "first_bad_seq": w.first_bad,
            "gaps": w.gaps, "head_seq": head[0]}


def verify_for(db: Database, caller: "Caller") -> dict[str, Any]:
    with audited(db, caller, "admin", "audit.verify"):
        caller.require_root_owner()
        return verify(db, caller.tenant_id)


_ADVANCE = """
INSERT INTO audit_checkpoints (tenant_id, kind, seq, row_hash, created_at)
VALUES (%s, 'verified', %s, %s, now())
ON CONFLICT (tenant_id, kind) DO UPDATE
    SET seq = EXCLUDED.seq, row_hash = EXCLUDED.row_hash, created_at = EXCLUDED.created_at
    WHERE audit_checkpoints.seq < EXCLUDED.seq
"""


def verify_tenant(
    db: Database, tenant_id: uuid.UUID, *, full: bool = False,
    keep_going: KeepGoing | None = None, batch: int = BATCH,
) -> dict[str, Any]:
    """The scheduled verification: from the verified checkpoint (or from the start when
    ``full``), in batches, moving the checkpoint over what verified.

    ``complete`` is false when ``keep_going`` stopped the walk before the end of the chain;
    the next run continues from the checkpoint. A break is reported on every run until it is
    dealt with: the checkpoint never moves past it.
    """
    with db.connection() as conn, conn.transaction():
        _snapshot(conn)
        points = _checkpoints(conn, tenant_id)
        pruned, verified = points.get("pruned"), points.get("verified")
        later = verified if verified and (not pruned or verified["seq"] > pruned["seq"]) else pruned
        start = pruned if full else later
        head = _head(conn, tenant_id)
        w = _walk(conn, tenant_id, start, head=head, anchor=verified if full else None,
                  keep_going=keep_going, batch=batch)
    if w.good is not None and (verified is None or w.good[0] > verified["seq"]):
        with db.connection() as conn:
            conn.execute(_ADVANCE, (tenant_id, w.good[0], w.good[1]))
    report = {
        "ok": w.first_bad is None, "mode": "full" if full else "incremental",
        "from_seq": w.start_seq, "checked": w.checked, "first_bad_seq": w.first_bad,
        "gaps": w.gaps, "head_seq": head[0], "complete": w.complete,
        "verified_seq": max(w.good[0] if w.good else 0, verified["seq"] if verified else 0),
    }
    if full and verified is not None:
        report["checkpoint"] = {"seq": verified["seq"], "ok": w.anchor_ok}
    return report
