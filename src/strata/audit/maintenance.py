"""Per-tenant bookkeeping shared by the scheduled jobs (lifecycle, audit verify, audit prune).

It lives beside the audit chain because audit is the lowest layer every job already depends
on. A job walks tenants least-recently-finished first, so a run that runs out of time (a
Lambda has 15 minutes) resumes next time with the tenants it did not reach instead of
starting over with the same first ones.
"""

from __future__ import annotations

import json
import logging
import uuid
from collections.abc import Callable
from functools import partial
from typing import Any

from psycopg.types.json import Jsonb

from strata.db import Database

log = logging.getLogger(__name__)

# Retention windows (audit entries, memory history) never go below this.
RETENTION_FLOOR_DAYS = 90

# Asked between batches: False means stop now, commit what is done, report incomplete.
KeepGoing = Callable[[], bool]


def always() -> bool:
    return True


def floored(days: int | None) -> dict[str, Any]:
    """The effective retention for a requested one, and whether the floor raised it."""
    if days is None:
        return {"retention_days": None, "requested_days": None, "floored": False}
    effective = max(days, RETENTION_FLOOR_DAYS)
    return {"retention_days": effective, "requested_days": days, "floored": effective != days}


def tenants_due(db: Database, job: str, tenant_id: uuid.UUID | None = None, *,
                grown: bool = False) -> list[tuple[uuid.UUID, str]]:
    """Every tenant (or the one asked for), least recently finished by ``job`` first.

    ``grown``: only tenants whose audit chain has an entry past the ``head_seq`` the job's
    last completed report recorded (or that have none yet). The digest job runs every minute
    with it, so an idle tenant costs one row of this query and no store or signing call."""
    with db.connection() as conn:
        rows = conn.execute(
            """
            SELECT t.id, t.name FROM tenants t
            LEFT JOIN maintenance_state s ON s.tenant_id = t.id AND s.job = %(job)s
            LEFT JOIN audit_heads h ON h.tenant_id = t.id
            WHERE (%(tenant)s::uuid IS NULL OR t.id = %(tenant)s)
              AND (NOT %(grown)s OR (h.seq IS NOT NULL AND
                   h.seq > COALESCE((s.report ->> 'head_seq')::bigint, -1)))
            ORDER BY s.completed_at NULLS FIRST, t.name
            """,
            {"job": job, "tenant": tenant_id, "grown": grown},
        ).fetchall()
    return [(r["id"], r["name"]) for r in rows]


def mark_started(db: Database, tenant_id: uuid.UUID, job: str) -> None:
    with db.connection() as conn:
        conn.execute(
            "INSERT INTO maintenance_state (tenant_id, job, started_at) VALUES (%s, %s, now())"
            " ON CONFLICT (tenant_id, job) DO UPDATE SET started_at = EXCLUDED.started_at",
            (tenant_id, job),
        )


def mark_completed(db: Database, tenant_id: uuid.UUID, job: str, report: dict[str, Any]) -> None:
    with db.connection() as conn:
        conn.execute(
            "UPDATE maintenance_state SET completed_at = now(), report = %s"
            " WHERE tenant_id = %s AND job = %s",
            (Jsonb(report, dumps=partial(json.dumps, default=str)), tenant_id, job),
        )


def for_each_tenant(
    db: Database, job: str, work: Callable[[uuid.UUID], dict[str, Any]], *,
    tenant_id: uuid.UUID | None = None, keep_going: KeepGoing | None = None, record: bool = True,
    grown: bool = False,
) -> dict[str, Any]:
    """Run ``work`` (one tenant's report, with ``ok`` and ``complete``) for each tenant due.

    One tenant's failure is reported and the others still run. A tenant whose work stopped
    early (the budget) ends the run; it stays unfinished, so it comes first next time.
    ``record`` is off for dry runs, which write nothing at all; ``grown`` runs only the
    tenants whose chain grew since the job last completed for them (see :func:`tenants_due`).
    """
    reports: list[dict[str, Any]] = []
    complete = True
    for tid, name in tenants_due(db, job, tenant_id, grown=grown):
        if reports and keep_going is not None and not keep_going():
            complete = False
            break
        if record:
            mark_started(db, tid, job)
        try:
            report = work(tid)
        except Exception as exc:  # reported per tenant; never the message (it can quote rows)
            sqlstate = getattr(getattr(exc, "diag", None), "sqlstate", None)
            log.error("maintenance job failed", exc_info=sqlstate is None, extra={
                "job": job, "tenant_id": str(tid), "error": type(exc).__name__, "sqlstate": sqlstate})
            report = {"ok": False, "complete": True, "error": type(exc).__name__}
        reports.append({"tenant": name, "tenant_id": str(tid), **report})
        if record and report["complete"] and "error" not in report:
            mark_completed(db, tid, job, report)
        if not report["complete"]:
            complete = False
            break
    return {"ok": all(r["ok"] for r in reports), "complete": complete, "tenants": reports}
