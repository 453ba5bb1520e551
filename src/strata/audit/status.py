"""Where a tenant's audit chain stands, without walking it: its head, the checkpoints that
verification and pruning left, and the last scheduled verification and digest (their
reports as :mod:`strata.audit.maintenance` recorded them). A walk is ``POST /v1/audit/verify``;
this is what an owner looks at first."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, Field

from strata.audit.chain import Reader, audited
from strata.db import Database


class Checkpoint(BaseModel):
    seq: int = Field(description="The last row the checkpoint vouches for (or pruned up to).")
    at: datetime = Field(description="When the checkpoint was last moved.")


class JobRun(BaseModel):
    """The last run of a scheduled job (``strata audit verify``, the daily verify function,
    the digest job) for this tenant."""

    started_at: datetime = Field(description="When the run began.")
    completed_at: datetime | None = Field(
        description="None while a run is under way or when the last one did not finish.")
    ok: bool | None = Field(description="The run's verdict; None when it did not finish.")
    mode: str | None = Field(default=None, description=(
        "How much a verification walked (`full`, `rolling`, `incremental`)."))
    failed: list[str] = Field(default_factory=list,
                              description="The parts that did not hold (chain, checkpoint, digest, prune).")
    problems: list[str] = Field(default_factory=list, description=(
        "What was wrong, one sentence each."))
    checked: int | None = Field(default=None, description="Rows the run walked.")
    published: bool | None = Field(default=None, description="A digest run published one.")


class AuditStatus(BaseModel):
    head_seq: int = Field(description="The chain's last entry (0: nothing audited yet).")
    verified: Checkpoint | None = Field(description="How far verification has vouched for the chain.")
    pruned: Checkpoint | None = Field(description="Entries up to here were pruned (retention).")
    last_verification: JobRun | None = Field(description=(
        "The last scheduled verification of the chain; null before the first."))
    last_digest: JobRun | None = Field(description=(
        "The last digest run (anchoring the head outside the database); null before the "
        "first."))


def _run(row: dict[str, Any] | None) -> JobRun | None:
    if row is None:
        return None
    report = row["report"] or {}
    finished = row["completed_at"] is not None and row["completed_at"] >= row["started_at"]
    return JobRun(
        started_at=row["started_at"], completed_at=row["completed_at"] if finished else None,
        ok=report.get("ok") if finished else None, mode=report.get("mode"),
        failed=report.get("failed") or report.get("verify", {}).get("failed") or [],
        problems=report.get("problems") or report.get("verify", {}).get("problems") or [],
        checked=report.get("checked"), published=report.get("published"),
    )


def status_for(db: Database, caller: Reader) -> AuditStatus:
    with audited(db, caller, "admin", "audit.status"):
        # As the trail itself: the chain covers the whole tenant, so only its root owner.
        caller.require_root_owner()
        with db.connection() as conn:
            head = conn.execute("SELECT seq FROM audit_heads WHERE tenant_id = %s",
                                (caller.tenant_id,)).fetchone()
            points = {r["kind"]: Checkpoint(seq=r["seq"], at=r["created_at"]) for r in conn.execute(
                "SELECT kind, seq, created_at FROM audit_checkpoints WHERE tenant_id = %s",
                (caller.tenant_id,)).fetchall()}
            jobs = {r["job"]: r for r in conn.execute(
                "SELECT job, started_at, completed_at, report FROM maintenance_state"
                " WHERE tenant_id = %s AND job IN ('audit_verify', 'audit_digest')",
                (caller.tenant_id,)).fetchall()}
    return AuditStatus(
        head_seq=head["seq"] if head else 0, verified=points.get("verified"),
        pruned=points.get("pruned"), last_verification=_run(jobs.get("audit_verify")),
        last_digest=_run(jobs.get("audit_digest")))
