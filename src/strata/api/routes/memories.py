"""/v1/memories: parse, call one core function, shape the answer."""

from __future__ import annotations

import uuid
from typing import Annotated, get_args

from fastapi import APIRouter, Body, Header, Query, Request
from pydantic import BaseModel, ConfigDict, Field

from strata import memories as core
from strata.api.deps import DB, CallerDep, EmbedderDep
from strata.errors import InvalidInput
from strata.memories.models import Kind, Status, Instant

router = APIRouter(prefix="/v1/memories", tags=["memories"])


def _csv(values: list[str] | None, allowed: tuple[str, ...], field: str) -> list[str] | None:
    """Accept ?kind=a,b and ?kind=a&kind=b; name the field on an unknown value."""
    if not values:
        return None
    out = [v.strip() for raw in values for v in raw.split(",") if v.strip()]
    for v in out:
        if v not in allowed:
            raise InvalidInput(f"unknown {field} {v!r}; one of: {', '.join(allowed)}", field=field)
    return out


def _if_match(value: str | None) -> int | None:
    if value is None:
        return None
    raw = value.strip().removeprefix("W/").strip('"')
    if not (raw.isascii() and raw.isdigit()):
        raise InvalidInput("If-Match must be the memory's version", field="If-Match")
    return int(raw)


@router.post("")
def create(
    body: core.CreateRequest, request: Request, db: DB, caller: CallerDep, embedder: EmbedderDep
) -> dict:
    runtime = request.app.state.runtime
    return {"results": core.create_memories(
        db, caller, body, embedder, judge=runtime.ingest.judge, settings=runtime.settings)}


@router.get("")
def list_(
    db: DB,
    caller: CallerDep,
    path: str | None = None,
    kind: Annotated[list[str] | None, Query()] = None,
    status: Annotated[list[str] | None, Query()] = None,
    tags: Annotated[list[str] | None, Query()] = None,
    valid_at: Instant | None = None,
    cursor: str | None = None,
    limit: Annotated[int, Query(ge=1, le=200)] = 50,
) -> dict:
    statuses = ["active"] if not status else (
        None if status == ["all"] else _csv(status, get_args(Status), "status"))
    if tags and any("\x00" in t for t in tags):
        raise InvalidInput("tags must not contain NUL characters", field="tags")
    items, next_cursor = core.list_memories(
        db, caller, path=path, kind=_csv(kind, get_args(Kind), "kind"), status=statuses,
        tags=[t for raw in tags for t in raw.split(",") if t] if tags else None,
        valid_at=valid_at, cursor=cursor, limit=limit,
    )
    return {"items": items, "next_cursor": next_cursor}


@router.get("/{memory_id}")
def get(memory_id: uuid.UUID, db: DB, caller: CallerDep) -> core.Memory:
    return core.get_memory(db, caller, memory_id)


@router.patch("/{memory_id}")
def patch(
    memory_id: uuid.UUID,
    body: core.MemoryPatch,
    db: DB,
    caller: CallerDep,
    embedder: EmbedderDep,
    if_match: Annotated[str | None, Header()] = None,
) -> core.Memory:
    return core.update_memory(
        db, caller, memory_id, body, embedder, expected_version=_if_match(if_match)
    )


@router.delete("/{memory_id}")
def delete(memory_id: uuid.UUID, db: DB, caller: CallerDep) -> dict:
    return core.delete_memory(db, caller, memory_id)


@router.get("/{memory_id}/history")
def history(memory_id: uuid.UUID, db: DB, caller: CallerDep) -> dict:
    return {"items": core.history(db, caller, memory_id)}


class RestoreRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    version: int | None = Field(default=None, ge=1)


@router.post("/{memory_id}/restore")
def restore(
    memory_id: uuid.UUID,
    db: DB,
    caller: CallerDep,
    embedder: EmbedderDep,
    body: Annotated[RestoreRequest | None, Body()] = None,
) -> core.Memory:
    return core.restore(db, caller, memory_id, embedder, version=body.version if body else None)


@router.post("/{memory_id}/forget")
def forget(memory_id: uuid.UUID, db: DB, caller: CallerDep) -> dict:
    return core.forget(db, caller, memory_id)


@router.get("/{memory_id}/related")
def related(memory_id: uuid.UUID, db: DB, caller: CallerDep) -> dict:
    return {"items": core.related(db, caller, memory_id)}
