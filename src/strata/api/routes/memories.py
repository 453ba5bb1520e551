"""/v1/memories: parse, call one core function, shape the answer."""

from __future__ import annotations

import re
import uuid
from typing import Annotated, get_args

from fastapi import APIRouter, Body, Header, Query, Request
from pydantic import BaseModel, ConfigDict, Field, WithJsonSchema

from strata import memories as core
from strata.memories.history import history as history_of
from strata.api.deps import DB, CallerDep, Cursor, EmbedderDep
from strata.api.openapi import Items, Page, Results, answers
from strata.memories.models import HistoryEntry, WriteResult
from strata.errors import InvalidInput
from strata.fields import NO_NUL, SPACE_CLASS, MemoryPath, Version
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


def _csv_pattern(allowed: tuple[str, ...]) -> str:
    """A ``_csv`` parameter's value as the schema states it: comma-separated pieces, each
    (less the whitespace strip() removes) empty or one of ``allowed``."""
    piece = rf"[{SPACE_CLASS}]*({'|'.join(allowed)})?[{SPACE_CLASS}]*"
    return rf"^{piece}(,{piece})*$"


Kinds = Annotated[str, Field(json_schema_extra={"pattern": _csv_pattern(get_args(Kind))})]
# Statuses, or "all" alone.
Statuses = Annotated[list[str], WithJsonSchema({"anyOf": [
    {"type": "array", "items": {"type": "string", "pattern": _csv_pattern(get_args(Status))}},
    {"type": "array", "items": {"const": "all"}, "minItems": 1, "maxItems": 1},
]})]
Tags = Annotated[str, Field(json_schema_extra={"pattern": NO_NUL})]


# The memory's version as an entity tag ("3", W/"3") or bare (3); the schema states it too.
IF_MATCH = r'^(W/)?("[0-9]{1,18}"|[0-9]{1,18})$'
_IF_MATCH = re.compile(IF_MATCH)
IfMatch = Annotated[str, Field(json_schema_extra={"pattern": IF_MATCH})]


def _if_match(value: str | None) -> int | None:
    if value is None:
        return None
    if not (m := _IF_MATCH.fullmatch(value.strip())):
        raise InvalidInput("If-Match must be the memory's version", field="If-Match")
    return int(m.group(2).strip('"'))


# The id in a write's answer is the memory's: an OpenAPI link says so (to a client, and to
# schemathesis' stateful run, which reads it back).
_READ_BACK = {"links": {"GetMemory": {
    "operationRef": "#/paths/~1v1~1memories~1%7Bmemory_id%7D/get",
    "parameters": {"memory_id": "$response.body#/results/0/id"}}}}


@router.post("", responses={200: _READ_BACK, **answers(409)}, description=(
    "A memory without a `path` goes to the key's default path; without one, `path` is "
    "required (422)."))
def create(
    body: core.CreateRequest, request: Request, db: DB, caller: CallerDep, embedder: EmbedderDep
) -> Results[WriteResult]:
    runtime = request.app.state.runtime
    return {"results": core.create_memories(
        db, caller, body, embedder, judge=runtime.ingest.judge, settings=runtime.settings)}


@router.get("")
def list_(
    db: DB,
    caller: CallerDep,
    path: MemoryPath | None = None,
    kind: Annotated[list[Kinds] | None, Query()] = None,
    status: Annotated[Statuses | None, Query()] = None,
    tags: Annotated[list[Tags] | None, Query()] = None,
    valid_at: Instant | None = None,
    cursor: Cursor = None,
    limit: Annotated[int, Query(ge=1, le=200)] = 50,
) -> Page[core.Memory]:
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


class PathDeletion(BaseModel):
    """What a delete by path counted (dry run) or removed."""

    path: str = Field(description="The path whose subtree was counted or emptied.")
    count: int = Field(description="Memories at the path or below it, in any status.")
    dry_run: bool = Field(description="True: counted only, nothing removed.")
    deleted: int = Field(description="Memories removed (0 on a dry run).")


@router.delete("", responses=answers(409), description=(
    "Delete every memory at `path` or below it, in any status. Owner access on the path only "
    "(403). Without `expected_count` nothing is removed: the answer is the count (a dry run). "
    "With it, exactly those memories are removed, or nothing when the count has changed since "
    "(409). Each memory's last state stays in its history, so "
    "`POST /v1/memories/{id}/restore` brings it back; one audit entry names every removed id."))
def delete_path(
    db: DB,
    caller: CallerDep,
    path: MemoryPath,
    expected_count: Annotated[int | None, Query(ge=0, description=(
        "The count a dry run answered: the delete removes that many or nothing."))] = None,
) -> PathDeletion:
    return core.delete_path(db, caller, path, expected_count=expected_count)


@router.get("/{memory_id}")
def get(memory_id: uuid.UUID, db: DB, caller: CallerDep) -> core.Memory:
    return core.get_memory(db, caller, memory_id)


@router.patch("/{memory_id}", responses=answers(409), description=(
    "Names the version it changes, as `expected_version` or `If-Match` (422 without either; "
    "412 when it is not the current one). `valid_to` must come after `valid_from`: the one "
    "given, else the stored one (422)."))
def patch(
    memory_id: uuid.UUID,
    body: core.MemoryPatch,
    db: DB,
    caller: CallerDep,
    embedder: EmbedderDep,
    if_match: Annotated[IfMatch | None, Header()] = None,
) -> core.Memory:
    return core.update_memory(
        db, caller, memory_id, body, embedder, expected_version=_if_match(if_match)
    )


@router.delete("/{memory_id}")
def delete(memory_id: uuid.UUID, db: DB, caller: CallerDep) -> dict:
    return core.delete_memory(db, caller, memory_id)


@router.get("/{memory_id}/history")
def history(memory_id: uuid.UUID, db: DB, caller: CallerDep) -> Items[HistoryEntry]:
    return {"items": history_of(db, caller, memory_id)}


class RestoreRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    version: Version | None = None  # JSON's integer: strata.fields


@router.post("/{memory_id}/restore", responses=answers(409, 410))
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

