"""/v1/review: candidates held back for a person's decision."""

from __future__ import annotations

import uuid
from typing import Annotated, Literal

from fastapi import APIRouter, Body, Path, Query
from pydantic import BaseModel, ConfigDict, Field

from strata.api.deps import DB, CallerDep, Cursor, MemoryId
from strata.api.openapi import Page, answers
from strata.foundation.fields import NOT_NULL, Flag, MemoryPath
from strata.memories.models import Instant, Memory
from strata.review import queue as review

router = APIRouter(prefix="/v1/review", tags=["review"])


class RejectRequest(BaseModel):
    # until only with suppress true, as JSON Schema states it (review.reject enforces it)
    model_config = ConfigDict(extra="forbid", json_schema_extra={
        "if": {"required": ["until"], "properties": {"until": NOT_NULL}},
        "then": {"required": ["suppress"], "properties": {"suppress": {"const": True}}},
        "examples": [{"suppress": True}, {"suppress": True, "until": "2099-01-01T00:00:00Z"}]})
    suppress: Flag = Field(default=False, description=(  # JSON's boolean: strata.foundation.fields
        "Also tombstone the value, so it is not stored again by any route (until `until`, "
        "when given)."))
    until: Instant | None = Field(default=None, description=(
        "With suppress: the value is blocked until this instant only; after it, it may be "
        "proposed again, as a candidate for review. 422 without suppress."))


class MergeRequest(BaseModel):
    model_config = ConfigDict(extra="forbid", json_schema_extra={"examples": [
        {"into": "0b0f7c55-8d3e-4c1a-9f0e-2a4b6c8d0e1f"}]})
    into: uuid.UUID = Field(description="The memory the candidate is merged into.")


@router.get("", operation_id="listCandidates")
def list_(
    db: DB, caller: CallerDep,
    path: Annotated[MemoryPath | None, Query(description=(
        "Only candidates in this path's subtree."))] = None,
    cursor: Cursor = None,
    limit: Annotated[int, Query(ge=1, le=200, description="The most items on a page.")] = 50,
) -> Page[review.ReviewItem]:
    """List candidates for review

    Memories held back as `candidate` because they contradict what is active (a change back
    to a retired value, or a model's verdict), oldest first, each with the memories it
    contradicts.
    """
    if path is not None:
        from strata.foundation.paths import validate_path

        validate_path(path)
    items, next_cursor = review.list_candidates(db, caller, path=path, cursor=cursor, limit=limit)
    return {"items": items, "next_cursor": next_cursor}


@router.get("/tombstones", operation_id="listTombstones")
def list_tombstones(
    db: DB, caller: CallerDep,
    path: Annotated[MemoryPath | None, Query(description=(
        "Only tombstones in this path's subtree."))] = None,
    reason: Annotated[Literal["superseded", "rejected", "forgotten"] | None, Query(description=(
        "Only tombstones retired for this reason."))] = None,
    cursor: Cursor = None,
    limit: Annotated[int, Query(ge=1, le=200, description="The most items on a page.")] = 50,
) -> Page[review.Tombstone]:
    """List tombstones

    The retired values that keep their value out in a path's subtree -- superseded, rejected,
    forgotten -- in paths the key owns, oldest first. Never a value, a hash or a fingerprint:
    that a value was retired, why, when, and by which memory.
    """
    if path is not None:
        from strata.foundation.paths import validate_path

        validate_path(path)
    items, next_cursor = review.list_tombstones(db, caller, path=path, reason=reason,
                                                cursor=cursor, limit=limit)
    return {"items": items, "next_cursor": next_cursor}


@router.post("/tombstones/{tombstone_id}/lift", operation_id="liftTombstone", responses=answers(403, 404))
def lift_tombstone(
    tombstone_id: Annotated[uuid.UUID, Path(description="The tombstone's id.")],
    db: DB, caller: CallerDep,
) -> review.Tombstone:
    """Lift a tombstone

    An owner of its path lifts it: from now on its value may be stored again (a forgotten
    fact stated anew becomes a new memory; what was erased stays erased). Audited as
    `tombstone.lift`. Lifting one that no longer blocks changes nothing.
    """
    return review.lift_tombstone(db, caller, tombstone_id)


@router.post("/{memory_id}/promote", operation_id="promoteCandidate", responses=answers(409))
def promote(memory_id: MemoryId, db: DB, caller: CallerDep) -> Memory:
    """Promote a candidate

    The candidate becomes active and the memories it contradicts are superseded, as an edit
    would do it. A value forgotten or suppressed since it was held back is refused (409), as
    is a memory that is not a candidate.
    """
    return review.promote(db, caller, memory_id)


@router.post("/{memory_id}/reject", operation_id="rejectCandidate", responses=answers(409))
def reject(
    memory_id: MemoryId, db: DB, caller: CallerDep,
    body: Annotated[RejectRequest | None, Body()] = None,
) -> Memory:
    """Reject a candidate

    The candidate becomes `rejected`; with `suppress`, its value is tombstoned so that no
    route stores it again, for good or until `until`. The body is optional.
    """
    return review.reject(db, caller, memory_id, suppress=bool(body and body.suppress),
                         until=body.until if body else None)


@router.post("/{memory_id}/merge", operation_id="mergeCandidate", responses=answers(409))
def merge(memory_id: MemoryId, body: MergeRequest, db: DB, caller: CallerDep) -> Memory:
    """Merge a candidate into a memory

    The candidate says what the active memory `into` already says: its evidence joins that
    memory, and the candidate is rejected with a DUPLICATE_OF edge. The answer is the memory
    merged into; an `into` the key cannot read or that is not active is a 404.
    """
    return review.merge(db, caller, memory_id, body.into)
