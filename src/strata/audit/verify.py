"""Verifying a tenant's chain, with one verdict that is ``ok`` only when every part is.

A walk recomputes ``row_hash`` for each row from the previous one, reports the first seq
whose link does not verify (edited, reordered or inserted rows) and the seq gaps (deleted
rows), and compares its end with the tenant's head so a deleted or forged tail shows too.
Head and rows are read in one REPEATABLE READ snapshot: an append committing mid-walk is not
a tamper.

The parts of a verdict (``failed`` names those that did not hold, ``problems`` says how):

- ``chain``: the links walked, and the end of the walk against the head;
- ``checkpoint``: a full or rolling walk passing the ``verified`` checkpoint finds the row
  there still carrying the hash the checkpoint recorded (a chain re-forged from the start,
  head included, links up perfectly and fails only there);
- ``digest``: the chain against the latest published digest (:mod:`strata.audit.digests`),
  kept outside the database: its signature and link to the digest before it, the head not
  behind the digest's, the row the digest vouches for still carrying its hash;
- ``prune``: the prune checkpoint moved only by prunes the chain records (each prune batch
  appends its ``audit.prune`` entry in the transaction that moves the checkpoint).

Modes: ``full`` walks every retained row (the API, ``--full``). ``incremental`` trusts the
prefix an earlier run vouched for and walks from the ``verified`` checkpoint. ``rolling``
(the daily schedule) is incremental plus the next slice of a rolling full walk that resumes
from its own checkpoint, sized so that every retained row is re-walked within
``audit_full_verify_days`` runs: an edit behind the checkpoint is found within the week even
though no single run walks everything. The digest and prune checks are point lookups and run
in every mode. The verified checkpoint only moves forward, over rows that verified and that
the head vouches for; it is never trusted by a full walk.

Every report says what it looked at: ``mode``, ``checked`` (rows walked) and ``covered`` (the
seq ranges walked; empty when nothing was, which an incremental run after no appends is).

Failed appends leave ``audit.missed`` entries (:func:`strata.audit.chain.append`); a walk
sums their counts into ``missed_appends``: entries the trail lacks, not a tamper.
"""

from __future__ import annotations

import hashlib
import math
import uuid
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import psycopg

from strata.audit.chain import GENESIS, Reader, audited, row_hash
from strata.audit.maintenance import KeepGoing
from strata.db import Database

if TYPE_CHECKING:
    from strata.audit.digests import Digest, Digests

BATCH = 5000
MISSED = "audit.missed"
PRUNE = "audit.prune"


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
    anchor_missing: bool = False  # the row at the checkpoint is not there (and not pruned)
    missed: int = 0  # appends that failed, as the audit.missed entries walked record


def _checkpoints(conn: psycopg.Connection, tenant_id: uuid.UUID) -> dict[str, dict[str, Any]]:
    rows = conn.execute(
        "SELECT kind, seq, row_hash, created_at FROM audit_checkpoints WHERE tenant_id = %s",
        (tenant_id,)).fetchall()
    return {r["kind"]: {"seq": r["seq"], "row_hash": bytes(r["row_hash"]),
                        "created_at": r["created_at"]} for r in rows}


def _walk(
    conn: psycopg.Connection, tenant_id: uuid.UUID, start: dict[str, Any] | None, *,
    head: tuple[int, bytes], anchor: dict[str, Any] | None = None, keep_going: KeepGoing | None = None,
    batch: int = BATCH, limit: int | None = None,
) -> Walk:
    """Walk from ``start`` (a checkpoint; the genesis when None) towards the head, in batches;
    stop between batches when ``keep_going`` says so or ``limit`` rows were checked."""
    start_seq = start["seq"] if start else 0
    w = Walk(start_seq, start["row_hash"] if start else GENESIS, last_seq=start_seq)
    head_seq, head_hash = head
    expected = w.start_seq + 1
    while True:
        size = batch if limit is None else max(1, min(batch, limit - w.checked))
        rows = conn.execute(
            "SELECT * FROM audit_log WHERE tenant_id = %s AND seq > %s ORDER BY seq LIMIT %s",
            (tenant_id, w.last_seq, size),
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
            if row["operation"] == MISSED:
                w.missed += row["count"]
            w.prev, expected, w.last_seq = stored_hash, seq + 1, seq
        if len(rows) < size:
            w.complete = True
            break
        if (keep_going is not None and not keep_going()) or (limit is not None and w.checked >= limit):
            break
    if w.complete and w.first_bad is None and (w.last_seq != head_seq or w.prev != head_hash):
        if w.last_seq < head_seq:  # deleted tail
            w.first_bad = w.last_seq + 1
            w.gaps.append([w.last_seq + 1, head_seq])
        else:  # rows past the head (none vouched for), or a head that does not match
            w.first_bad = head_seq + 1 if w.last_seq > head_seq else head_seq
    if anchor is not None and w.anchor_ok is None and w.complete:
        # The checkpointed row is not there: fine if it was pruned, a truncation if not.
        w.anchor_ok = anchor["seq"] <= w.start_seq
        w.anchor_missing = not w.anchor_ok
    return w


def _head(conn: psycopg.Connection, tenant_id: uuid.UUID) -> tuple[int, bytes]:
    # A missing head vouches for nothing: every row is then "past the head".
    head = conn.execute(
        "SELECT seq, row_hash FROM audit_heads WHERE tenant_id = %s", (tenant_id,)
    ).fetchone()
    return (head["seq"], bytes(head["row_hash"])) if head else (0, GENESIS)


def _snapshot(conn: psycopg.Connection) -> None:
    conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")


def _stored_hash(conn: psycopg.Connection, tenant_id: uuid.UUID, seq: int) -> bytes | None:
    row = conn.execute("SELECT row_hash FROM audit_log WHERE tenant_id = %s AND seq = %s",
                       (tenant_id, seq)).fetchone()
    return bytes(row["row_hash"]) if row else None


def _against_digest(
    conn: psycopg.Connection, tenant_id: uuid.UUID, latest: Digest | None,
    previous: Digest | None, *, head: tuple[int, bytes], pruned: dict[str, Any] | None,
) -> tuple[dict[str, Any], list[str], list[str]]:
    """The ``digest`` and ``prune`` parts: (report, digest problems, prune problems)."""
    if latest is None:
        return {"ok": None, "reason": "no digest published yet"}, [], []
    report: dict[str, Any] = {"digest": latest.name, "published_at": latest.published_at,
                              "head_seq": latest.head_seq}
    problems: list[str] = []
    link = latest.body.get("previous")
    if not latest.signature_ok:
        problems.append(f"digest {latest.name} does not carry this deployment's signature")
    elif (previous is None) != (link is None) or (previous is not None and link != {
            "name": previous.name, "sha256": hashlib.sha256(previous.raw).hexdigest()}):
        problems.append(f"digest {latest.name} does not link to the digest before it")
    if problems:
        return report | {"ok": False}, problems, []
    d_seq, d_hash = latest.head_seq, latest.head_hash
    p_seq, p_hash = (pruned["seq"], pruned["row_hash"]) if pruned else (0, GENESIS)
    if head[0] < d_seq:
        problems.append(f"the head (seq {head[0]}) is behind the digest's (seq {d_seq}):"
                        " rows were removed from the tail")
    if d_seq > p_seq:
        stored = _stored_hash(conn, tenant_id, d_seq)
        if stored is None:
            problems.append(f"seq {d_seq}, which the digest vouches for, is missing")
        elif stored != d_hash:
            problems.append(f"seq {d_seq} no longer carries the hash the digest recorded")
    elif d_seq == p_seq and d_seq > 0 and p_hash != d_hash:
        problems.append(f"the prune checkpoint at seq {p_seq} does not carry the digest's hash")
    else:  # prunes cut only rows verified and 90 days old: the latest digest is always past them
        problems.append(f"the prune checkpoint (seq {p_seq}) is past the digest's head (seq {d_seq}):"
                        " rows no digest vouched for were removed")
    # The prune checkpoint: it moves forward only, by what the prunes since the digest record.
    prune_problems: list[str] = []
    dp_seq, dp_hash = latest.pruned or (0, GENESIS)
    if p_seq < dp_seq:
        prune_problems.append(f"the prune checkpoint (seq {p_seq}) is behind the digest's (seq {dp_seq})")
    elif p_seq == dp_seq and p_hash != dp_hash:
        prune_problems.append(f"the prune checkpoint at seq {p_seq} was rewritten")
    elif p_seq <= d_seq:  # every entry appended since the digest is still there to count
        recorded = conn.execute(
            "SELECT COALESCE(sum(count), 0)::bigint AS n FROM audit_log"
            " WHERE tenant_id = %s AND seq > %s AND operation = %s",
            (tenant_id, d_seq, PRUNE)).fetchone()["n"]
        if recorded != p_seq - dp_seq:
            prune_problems.append(
                f"the prune checkpoint moved {p_seq - dp_seq} rows since the digest;"
                f" the prunes the chain records removed {recorded}")
    return report | {"ok": not problems and not prune_problems}, problems, prune_problems


def _rolling_rows(head_seq: int, pruned: dict[str, Any] | None, days: int, batch: int) -> int:
    """Rows per daily run that re-walk every retained row within ``days`` runs."""
    retained = head_seq - (pruned["seq"] if pruned else 0)
    return max(batch, math.ceil(retained / max(days - 1, 1)))


_ADVANCE = """
INSERT INTO audit_checkpoints (tenant_id, kind, seq, row_hash, created_at)
VALUES (%s, 'verified', %s, %s, now())
ON CONFLICT (tenant_id, kind) DO UPDATE
    SET seq = EXCLUDED.seq, row_hash = EXCLUDED.row_hash, created_at = EXCLUDED.created_at
    WHERE audit_checkpoints.seq < EXCLUDED.seq
"""

# The rolling walk's place; created_at is when its pass began and stays while it advances.
_ROLL = """
INSERT INTO audit_checkpoints (tenant_id, kind, seq, row_hash, created_at)
VALUES (%s, 'rolling', %s, %s, now())
ON CONFLICT (tenant_id, kind) DO UPDATE SET seq = EXCLUDED.seq, row_hash = EXCLUDED.row_hash
"""


def verify_tenant(
    db: Database, tenant_id: uuid.UUID, *, full: bool = False, rolling: bool = False,
    digests: Digests | None = None, keep_going: KeepGoing | None = None, batch: int = BATCH,
    full_verify_days: int = 7, rolling_rows: int | None = None, advance: bool = True,
) -> dict[str, Any]:
    """Verify one tenant's chain (see the module's docstring for the modes and parts).

    ``complete`` is false when ``keep_going`` stopped a walk before the end of the chain;
    the next run continues from the checkpoint. A break is reported on every run until it is
    dealt with: no checkpoint moves past it. ``advance`` off writes nothing at all.
    """
    # The digest is read before the snapshot is taken: the head it records was committed
    # before, so the snapshot's head cannot be behind it unless rows were removed.
    latest, previous = digests.latest(tenant_id) if digests is not None else (None, None)
    with db.connection() as conn, conn.transaction():
        _snapshot(conn)
        points = _checkpoints(conn, tenant_id)
        pruned, verified = points.get("pruned"), points.get("verified")
        later = verified if verified and (not pruned or verified["seq"] > pruned["seq"]) else pruned
        head = _head(conn, tenant_id)
        w = _walk(conn, tenant_id, pruned if full else later, head=head,
                  anchor=verified if full else None, keep_going=keep_going, batch=batch)
        roll = None
        if rolling and not full and (keep_going is None or keep_going()):
            place = points.get("rolling")
            start = place if place and (not pruned or place["seq"] > pruned["seq"]) else pruned
            roll = _walk(conn, tenant_id, start, head=head, anchor=verified, keep_going=keep_going,
                         batch=batch, limit=rolling_rows or _rolling_rows(
                             head[0], pruned, full_verify_days, batch))
        if digests is None:
            anchor, digest_problems, prune_problems = (
                {"ok": None, "reason": "no digest store configured"}, [], [])
        else:
            anchor, digest_problems, prune_problems = _against_digest(
                conn, tenant_id, latest, previous, head=head, pruned=pruned)
    if advance:
        _move_checkpoints(db, tenant_id, w, roll, verified, points.get("rolling"))

    problems: dict[str, list[str]] = {"chain": [], "checkpoint": [], "digest": digest_problems,
                                      "prune": prune_problems}
    for walk in filter(None, (w, roll)):
        if walk.anchor_ok is False:
            problems["checkpoint"].append(
                f"seq {verified['seq']}, where the verified checkpoint is, is missing"
                if walk.anchor_missing else
                f"seq {verified['seq']} no longer carries the hash the verified checkpoint recorded")
        if walk.first_bad is not None and not (walk.anchor_ok is False and walk.first_bad == verified["seq"]):
            problems["chain"].append(_chain_problem(walk, head))
    first_bad = min((x.first_bad for x in (w, roll) if x and x.first_bad is not None), default=None)
    gaps = sorted({tuple(g) for x in (w, roll) if x for g in x.gaps})
    report = {
        "ok": not any(problems.values()),
        "failed": [part for part, found in problems.items() if found],
        "problems": [p for found in problems.values() for p in dict.fromkeys(found)],
        "mode": "full" if full else "rolling" if rolling else "incremental",
        "from_seq": w.start_seq, "checked": w.checked + (roll.checked if roll else 0),
        "first_bad_seq": first_bad, "gaps": [list(g) for g in gaps], "head_seq": head[0],
        "complete": w.complete,  # a rolling slice that ends early is its design, not a stop
        "verified_seq": max(w.good[0] if w.good else 0, verified["seq"] if verified else 0),
        "anchor": anchor, "missed_appends": w.missed,
        "covered": [_covered(x) for x in (w, roll) if x is not None and x.checked],
    }
    if full and verified is not None:
        report["checkpoint"] = {"seq": verified["seq"], "ok": w.anchor_ok}
    if roll is not None:
        report["rolling"] = {"from_seq": roll.start_seq, "to_seq": roll.last_seq,
                             "checked": roll.checked, "pass_complete": roll.complete}
    return report


def _covered(w: Walk) -> str:
    """The rows a walk checked, as a person reads them ("seq 1..45", "seq 41..45")."""
    first = w.start_seq + 1
    return f"seq {first}" if w.last_seq == first else f"seq {first}..{w.last_seq}"


def _chain_problem(w: Walk, head: tuple[int, bytes]) -> str:
    if w.complete and w.first_bad == head[0] + 1 and w.last_seq > head[0]:
        return f"rows after seq {head[0]} are not vouched for by the head"
    if w.complete and w.first_bad == head[0] and w.last_seq == head[0]:
        return f"the head does not match seq {head[0]}"
    for lo, hi in w.gaps:
        if lo == w.first_bad:
            return f"seq {lo}..{hi} missing" if hi > lo else f"seq {lo} missing"
    return f"seq {w.first_bad} does not link to the row before it"


def _move_checkpoints(db: Database, tenant_id: uuid.UUID, w: Walk, roll: Walk | None,
                      verified: dict[str, Any] | None, place: dict[str, Any] | None) -> None:
    with db.connection() as conn:
        if w.good is not None and (verified is None or w.good[0] > verified["seq"]):
            conn.execute(_ADVANCE, (tenant_id, w.good[0], w.good[1]))
        if roll is None or roll.first_bad is not None:
            return  # a break keeps the rolling walk where it was: the next run finds it again
        if roll.complete:  # the pass is done: the next one starts from the beginning
            conn.execute("DELETE FROM audit_checkpoints WHERE tenant_id = %s AND kind = 'rolling'",
                         (tenant_id,))
        elif roll.good is not None and (place is None or roll.good[0] > place["seq"]):
            conn.execute(_ROLL, (tenant_id, roll.good[0], roll.good[1]))


def verify(db: Database, tenant_id: uuid.UUID, *, digests: Digests | None = None,
           batch: int = BATCH) -> dict[str, Any]:
    """Every retained row, the checkpoints and the latest digest; writes nothing."""
    return verify_tenant(db, tenant_id, full=True, digests=digests, batch=batch, advance=False)


def verify_for(db: Database, caller: Reader, digests: Digests | None = None) -> dict[str, Any]:
    with audited(db, caller, "admin", "audit.verify"):
        caller.require_root_owner()
        return verify(db, caller.tenant_id, digests=digests)


def publish_digest(db: Database, tenant_id: uuid.UUID, digests: Digests, *,
                   keep_going: KeepGoing | None = None) -> dict[str, Any]:
    """Verify what is new (incrementally, against the latest digest), then publish the last
    row that verified as the tenant's digest. A chain that does not verify is not anchored:
    the last good digest stays the one verification compares with."""
    check = verify_tenant(db, tenant_id, digests=digests, keep_going=keep_going)
    report = {"verify": {k: check[k] for k in ("ok", "failed", "problems", "verified_seq")}}
    if not check["ok"]:
        return report | {"ok": False, "complete": True, "published": False,
                         "reason": "the chain does not verify: nothing published"}
    if not check["complete"]:
        return report | {"ok": True, "complete": False, "published": False}
    with db.connection() as conn, conn.transaction():
        _snapshot(conn)
        out = digests.publish(conn, tenant_id, check["verified_seq"])
    return report | {"ok": True, "complete": True, **out, "store": digests.store.where}
