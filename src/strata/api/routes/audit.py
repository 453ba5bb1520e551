"""/v1/audit: list the tenant's chain and verify it."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Request

from strata import audit as core
from strata.audit import digests
from strata.audit import status as audit_status
from strata.audit.status import AuditStatus
from strata.api.deps import DB, AuditCursor, CallerDep

router = APIRouter(prefix="/v1/audit", tags=["audit"])


@router.get("")
def list_entries(
    db: DB,
    caller: CallerDep,
    cursor: AuditCursor = None,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
) -> dict:
    items, next_seq = core.list_entries(db, caller, after_seq=int(cursor or 0), limit=limit)
    return {"items": items, "next_cursor": str(next_seq) if next_seq else None}


@router.post("/verify")
def verify(request: Request, db: DB, caller: CallerDep) -> dict:
    # Every retained row, the checkpoints and the latest digest: one verdict, ok only if all held.
    return core.verify_for(db, caller, digests.from_settings(request.app.state.runtime.settings))


@router.get("/status", description=(
    "Where the chain stands without walking it: its head, the verified and pruned "
    "checkpoints, and the last scheduled verification and digest. Owner on the tenant root."))
def status(db: DB, caller: CallerDep) -> AuditStatus:
    return audit_status.status_for(db, caller)
