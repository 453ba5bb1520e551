"""/v1/memories: parse, call one core function, shape the answer."""

from __future__ import annotations

import re
from typing import Annotated, get_args

from fastapi import APIRouter, Body, Header, Query, Request
from pydantic import BaseModel, ConfigDict, Field, WithJsonSchema

from strata import memories as core
from strata.api.deps import DB, CallerDep, Cursor, EmbedderDep, MemoryId, csv_pattern, csv_values
from strata.api.openapi import Items, Page, Results, answers
from strata.foundation.errors import InvalidInput
from strata.foundation.fields import MemoryPath, Version
from strata.memories.history import history as history_of
from strata.memories.models import (
    Deleted, Forgotten, HistoryEntry, Instant, Kind, Relationship, Status, WriteResult,
)

router = APIRouter(prefix="/v1/memories", tags=["memories"])


Kinds = Annotated[str, Field(json_schema_extra={"pattern": csv_pattern(get_args(Kind))})]
# Statuses, or "all" alone.
Statuses = Annotated[list[str], WithJsonSchema({"anyOf": [
    {"type": "array", "items": {"type": "string", "pattern": csv_pattern(get_args(Status))}},
    {"type": "array", "items": {"const": "all"}, "minItems": 1, "maxItems": 1},
]})]
# Tags, comma-separated or repeated; each value names one at least (`?tags=,` names none).
Tags = Annotated[str, Field(json_schema_extra={"pattern": r"^[^\x00]*[^\x00,][^\x00]*$"})]


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


@router.post("", operation_id="createMemories", responses={200: _READ_BACK, **answers(409)})
def create(
    body: core.CreateRequest, request: Request, db: DB, caller: CallerDep, embedder: EmbedderDep
) -> Results[WriteResult]:
    """Create memories

    Each memory goes through the write path as an ingested statement does: a retired value is
    `blocked`, a new value of a slot supersedes the old one, a paraphrase `reinforced` the
    memory it repeats. One result per memory, in the order sent, all in one transaction; an
    invalid memory refuses the whole request, naming its index in `field`.

    A memory without a `path` goes to the key's default path; without one, `path` is
    required (422).
    """
    runtime = request.app.state.runtime
    return {"results": core.create_memories(
        db, caller, body, embedder, judge=runtime.ingest.judge, settings=runtime.settings)}


@router.get("", operation_id="listMemories")
def list_(
    db: DB,
    caller: CallerDep,
    path: Annotated[MemoryPath | None, Query(description=(
        "Only memories in this path's subtree."))] = None,
    kind: Annotated[list[Kinds] | None, Query(description="Only memories of these kinds.")] = None,
    status: Annotated[Statuses | None, Query(description=(
        "Only memories in these statuses (`active` when absent), or `all`."))] = None,
    tags: Annotated[list[Tags] | None, Query(description=(
        "Only memories carrying every one of these tags."))] = None,
    valid_at: Annotated[Instant | None, Query(description=(
        "Only memories true at this instant (RFC 3339)."))] = None,
    cursor: Cursor = None,
    limit: Annotated[int, Query(ge=1, le=200, description="The most items on a page.")] = 50,
) -> Page[core.Memory]:
    """List memories

    The memories the key can read, oldest first, filtered by `path` (a subtree), `kind`,
    `status` (`active` by default; `all` for every status), `tags` (all of them) and
    `valid_at` (true at that instant). `kind`, `status` and `tags` take several values,
    comma-separated or repeated.
    """
    statuses = ["active"] if not status else (
        None if status == ["all"] else csv_values(status, get_args(Status), "status"))
    if tags and any("\x00" in t for t in tags):
        raise InvalidInput("tags must not contain NUL characters", field="tags")
    if tags and any(not raw.replace(",", "") for raw in tags):
        raise InvalidInput("tags names no tag", field="tags")
    items, next_cursor = core.list_memories(
        db, caller, path=path, kind=csv_values(kind, get_args(Kind), "kind"), status=statuses,
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


@router.delete("", operation_id="deleteMemoriesUnderPath", responses=answers(409))
def delete_path(
    db: DB,
    caller: CallerDep,
    path: Annotated[MemoryPath, Query(description="The path whose subtree is emptied.")],
    expected_count: Annotated[int | None, Query(ge=0, description=(
        "The count a dry run answered: the delete removes that many or nothing."))] = None,
) -> PathDeletion:
    """Delete every memory under a path

    Delete every memory at `path` or below it, in any status. Owner access on the path only
    (403). Without `expected_count` nothing is removed: the answer is the count (a dry run).
    With it, exactly those memories are removed, or nothing when the count has changed since
    (409). Each memory's last state stays in its history, so
    `POST /v1/memories/{id}/restore` brings it back; one audit entry names every removed id.
    """
    return core.delete_path(db, caller, path, expected_count=expected_count)


@router.get("/{memory_id}", operation_id="getMemory")
def get(memory_id: MemoryId, db: DB, caller: CallerDep) -> core.Memory:
    """Read a memory

    The memory in any status, with its `version` (what a PATCH names). A memory the key
    cannot read, or another tenant's, is a 404.
    """
    return core.get_memory(db, caller, memory_id)


@router.patch("/{memory_id}", operation_id="updateMemory", responses=answers(409))
def patch(
    memory_id: MemoryId,
    body: core.MemoryPatch,
    db: DB,
    caller: CallerDep,
    embedder: EmbedderDep,
    if_match: Annotated[IfMatch | None, Header(description=(
        "The version this change is made to, instead of `expected_version`: `3` or "
        "`\"3\"`."))] = None,
) -> core.Memory:
    """Change a memory

    Only the fields sent change; the previous state goes to the memory's history. Names the
    version it changes, as `expected_version` or `If-Match` (422 without either; 412 when it
    is not the current one). `valid_to` must come after `valid_from`: the one given, else
    the stored one (422). A change to a retired value is refused (409).
    """
    return core.update_memory(
        db, caller, memory_id, body, embedder, expected_version=_if_match(if_match)
    )


@router.delete("/{memory_id}", operation_id="deleteMemory")
def delete(memory_id: MemoryId, db: DB, caller: CallerDep) -> Deleted:
    """Delete a memory

    The memory is removed from every read and search; its history stays, so
    `POST /v1/memories/{id}/restore` can bring it back. To erase its content too, forget it.
    """
    return core.delete_memory(db, caller, memory_id)


@router.get("/{memory_id}/history", operation_id="getMemoryHistory")
def history(memory_id: MemoryId, db: DB, caller: CallerDep) -> Items[HistoryEntry]:
    """Read a memory's history

    Every prior state of the memory, oldest first: what it was before each change and before
    its deletion. A forgotten memory's entries keep no content.
    """
    return {"items": history_of(db, caller, memory_id)}


class RestoreRequest(BaseModel):
    model_config = ConfigDict(extra="forbid", json_schema_extra={"examples": [{"version": 2}]})
    version: Version | None = Field(default=None, description=(  # JSON's integer: strata.foundation.fields
        "The version of its history to restore. Required for a live memory (rolled back to "
        "it); without it a deleted memory comes back as it was when deleted."))


@router.post("/{memory_id}/restore", operation_id="restoreMemory", responses=answers(409, 410))
def restore(
    memory_id: MemoryId,
    db: DB,
    caller: CallerDep,
    embedder: EmbedderDep,
    body: Annotated[RestoreRequest | None, Body()] = None,
) -> core.Memory:
    """Restore a memory

    Brings a deleted memory back with its id (no body, or `{}`), or rolls a live one back to
    the `version` named (409 without one), under the write path's rules: a value retired
    since, or another copy of it in the path, is refused (409). A forgotten memory cannot
    come back (410).
    """
    return core.restore(db, caller, memory_id, embedder, version=body.version if body else None)


@router.post("/{memory_id}/forget", operation_id="forgetMemory")
def forget(memory_id: MemoryId, db: DB, caller: CallerDep) -> Forgotten:
    """Forget a memory (erasure)

    Deletes the memory and erases its content (and every plain hash of it) from its history,
    edges and receipts; a tombstone keeps a keyed fingerprint of the fact, so no route
    stores it again in this scope however it is worded (`blocked`, reason `forgotten`).
    Other memories of the scope that say it are forgotten with it (`also_forgotten`).
    Forgetting twice answers the same as once.
    """
    return core.forget(db, caller, memory_id)


@router.get("/{memory_id}/related", operation_id="listRelatedMemories")
def related(memory_id: MemoryId, db: DB, caller: CallerDep) -> Items[Relationship]:
    """Read a memory's relationships

    The edges from and to the memory (supersedes, refines, contradicts, ...) whose other
    end the key can also read, oldest first, each with who decided it and why.
    """
    return {"items": core.related(db, caller, memory_id)}

