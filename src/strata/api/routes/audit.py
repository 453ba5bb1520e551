"""/v1/audit: list the tenant's chain and verify it."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Request

from strata import audit as core
from strata.api.deps import DB, AuditCursor, CallerDep
from strata.api.openapi import Page
from strata.audit import digests
from strata.audit import status as audit_status
from strata.audit.models import AuditEntry, Verification
from strata.audit.status import AuditStatus

router = APIRouter(prefix="/v1/audit", tags=["audit"])


@router.get("", operation_id="listAuditEntries")
def list_entries(
    db: DB,
    caller: CallerDep,
    cursor: AuditCursor = None,
    limit: Annotated[int, Query(ge=1, le=1000, description="The most entries on a page.")] = 100,
) -> Page[AuditEntry]:
    """List the audit log

    The tenant's audit entries in chain order: who did what, where, to which memories, with
    what outcome (never content or query text). Only an owner of the tenant root reads it.
    """
    items, next_seq = core.list_entries(db, caller, after_seq=int(cursor or 0), limit=limit)
    return {"items": items, "next_cursor": str(next_seq) if next_seq else None}


# The report leaves out a part that does not apply (no checkpoint yet): left out here too.
@router.post("/verify", operation_id="verifyAuditChain", response_model_exclude_unset=True)
def verify(request: Request, db: DB, caller: CallerDep) -> Verification:
    """Verify the audit chain

    Walks every retained entry of the tenant's chain, checks the checkpoints and compares the
    head with the latest published digest: one verdict, `ok` only if every part held, with
    the problems found. Only an owner of the tenant root may ask.
    """
    return core.verify_for(db, caller, digests.from_settings(request.app.state.runtime.settings))


@router.get("/status", operation_id="getAuditStatus")
def status(db: DB, caller: CallerDep) -> AuditStatus:
    """The audit chain's state

    Where the chain stands without walking it: its head, the verified and pruned
    checkpoints, and the last scheduled verification and digest. Owner on the tenant root.
    """
    return audit_status.status_for(db, caller)
