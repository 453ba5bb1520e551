"""/v1/review: candidates held back for a person's decision."""

from __future__ import annotations

import uuid
from typing import Annotated

from fastapi import APIRouter, Body, Query
from pydantic import BaseModel, ConfigDict, Field

from strata import review
from strata.api.deps import DB, CallerDep, Cursor
from strata.api.openapi import answers
from strata.fields import Flag, MemoryPath
from strata.memories.models import Instant, Memory

router = APIRouter(prefix="/v1/review", tags=["review"])


class RejectRequest(BaseModel):
    # until only with suppress true, as JSON Schema states it (review.reject enforces it)
    model_config = ConfigDict(extra="forbid", json_schema_extra={
        "if": {"required": ["until"], "properties": {"until": {"type": "string"}}},
        "then": {"required": ["suppress"], "properties": {"suppress": {"const": True}}}})
    suppress: Flag = False  # JSON's boolean: strata.fields
    until: Instant | None = Field(default=None, description=(
        "With suppress: the value is blocked until this instant only; after it, it may be "
        "proposed again, as a candidate for review. 422 without suppress."))


class MergeRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    into: uuid.UUID


@router.get("")
def list_(
    db: DB, caller: CallerDep, path: MemoryPath | None = None, cursor: Cursor = None,
    limit: Annotated[int, Query(ge=1, le=200)] = 50,
) -> dict:
    if path is not None:
        from strata.paths import validate_path

        validate_path(path)
    items, next_cursor = review.list_candidates(db, caller, path=path, cursor=cursor, limit=limit)
    return {"items": items, "next_cursor": next_cursor}


@router.post("/{memory_id}/promote", responses=answers(409))
def promote(memory_id: uuid.UUID, db: DB, caller: CallerDep) -> Memory:
    return review.promote(db, caller, memory_id)


@router.post("/{memory_id}/reject", responses=answers(409))
def reject(
    memory_id: uuid.UUID, db: DB, caller: CallerDep,
    body: Annotated[RejectRequest | None, Body()] = None,
) -> Memory:
    return review.reject(db, caller, memory_id, suppress=bool(body and body.suppress),
                         until=body.until if body else None)


@router.post("/{memory_id}/merge", responses=answers(409))
def merge(memory_id: uuid.UUID, body: MergeRequest, db: DB, caller: CallerDep) -> Memory:
    return review.merge(db, caller, memory_id, body.into)
