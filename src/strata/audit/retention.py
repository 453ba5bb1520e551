"""Audit retention: delete a tenant's entries older than the window, keep the chain verifiable.

The window is floored at 90 days (:data:`RETENTION_FLOOR_DAYS`): a smaller setting is raised
and the report says so. Pruning removes a prefix of the chain -- rows up to the first one
still inside the window -- and in the same transaction moves the ``pruned`` checkpoint to
the last removed row's seq and hash, so verification resumes from there (the next row's
``prev_hash`` must equal it).

Only rows a verification has vouched for are pruned: the job first verifies incrementally,
and a chain that does not verify is left whole (deleting the evidence of a tamper is the one
thing retention must not do). Batches are bounded and each commits on its own, so a run that
stops early has pruned a consistent prefix. Two prunes at once serialise on the checkpoint
row: the checkpoint only moves forward, and a batch whose move lost the race deletes nothing.

Each batch appends its ``audit.prune`` entry (``count``: the rows the checkpoint moved over)
in the same transaction as the move: the chain then always accounts for every move of the
checkpoint, which is how verification tells a prune from rows deleted behind a rewritten
checkpoint (:mod:`strata.audit.verify`, the ``prune`` part).
"""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta
from typing import Any

from strata.audit.chain import AuditEvent, SystemActor, append_in
from strata.audit.maintenance import KeepGoing, floored
from strata.audit.verify import BATCH, verify_tenant
from strata.db import Database

_PRUNED_UP_TO = """
SELECT COALESCE((SELECT seq FROM audit_checkpoints WHERE tenant_id = %s AND kind = 'pruned'), 0)
    AS seq
"""

# The last seq that may go: the row before the first one still inside the window (or the
# last row, when all are older), never past what verification vouched for.
_CUT = """
SELECT LEAST(
    COALESCE((SELECT seq - 1 FROM audit_log WHERE tenant_id = %(tenant)s AND at >= %(cutoff)s
              ORDER BY seq LIMIT 1),
             (SELECT max(seq) FROM audit_log WHERE tenant_id = %(tenant)s), 0),
    %(verified)s) AS seq
"""

_MOVE = """
INSERT INTO audit_checkpoints (tenant_id, kind, seq, row_hash, created_at)
SELECT tenant_id, 'pruned', seq, row_hash, now() FROM audit_log
WHERE tenant_id = %(tenant)s AND seq = %(seq)s
ON CONFLICT (tenant_id, kind) DO UPDATE
    SET seq = EXCLUDED.seq, row_hash = EXCLUDED.row_hash, created_at = EXCLUDED.created_at
    WHERE audit_checkpoints.seq < EXCLUDED.seq
"""


def prune(
    db: Database, tenant_id: uuid.UUID, *, retention_days: int, now: datetime,
    dry_run: bool = False, keep_going: KeepGoing | None = None, batch: int = BATCH,
    surface: str = "cli",
) -> dict[str, Any]:
    window = floored(retention_days)
    cutoff = now - timedelta(days=window["retention_days"])
    check = verify_tenant(db, tenant_id, keep_going=keep_going)
    report: dict[str, Any] = {**window, "cutoff": cutoff.isoformat(), "dry_run": dry_run,
                              "verify": check, "pruned": 0}
    if not check["ok"]:
        return {**report, "ok": False, "complete": True,
                "reason": "the chain does not verify: nothing pruned"}
    with db.connection() as conn:
        done = conn.execute(_PRUNED_UP_TO, (tenant_id,)).fetchone()["seq"]
        cut = conn.execute(_CUT, {"tenant": tenant_id, "cutoff": cutoff,
                                  "verified": check["verified_seq"]}).fetchone()["seq"]
    if dry_run:
        return {**report, "ok": True, "complete": True, "pruned": max(0, cut - done),
                "pruned_to_seq": max(cut, done)}
    system = SystemActor(tenant_id, surface=surface)
    pruned, complete, failure = 0, True, None
    while done < cut:
        target = min(done + batch, cut)
        with db.transaction() as cur:
            # The head's row lock first: prunes of one tenant serialise with each other and
            # with appends, so the checkpoint seen here is the one this batch moves from.
            cur.execute("SELECT 1 FROM audit_heads WHERE tenant_id = %s FOR UPDATE", (tenant_id,))
            before = cur.execute(_PRUNED_UP_TO, (tenant_id,)).fetchone()["seq"]
            moved = before < target and cur.execute(_MOVE, {"tenant": tenant_id, "seq": target}).rowcount
            if moved:
                pruned += cur.execute(
                    "DELETE FROM audit_log WHERE tenant_id = %s AND seq <= %s", (tenant_id, target)
                ).rowcount
                append_in(cur.connection, system, AuditEvent("delete", "audit.prune", count=target - before))
            done = target if moved else before  # or further: another prune got here first
        if before < target and not moved:  # the row to checkpoint vanished since it verified
            failure, complete = f"seq {target} is gone since it verified", False
            break
        if done < cut and keep_going is not None and not keep_going():
            complete = False
            break
    report |= {"ok": failure is None, "complete": complete, "pruned": pruned, "pruned_to_seq": done}
    return report | ({"reason": failure} if failure else {})
