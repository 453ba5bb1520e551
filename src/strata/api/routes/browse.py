"""/v1/me and /v1/paths: who a key is and the paths it can read, for a person browsing the
store (the console) or a client deciding what to show."""

from __future__ import annotations

import uuid
from typing import Annotated, Literal

from fastapi import APIRouter, Query
from pydantic import BaseModel, Field

from strata.api.deps import DB, CallerDep
from strata.api.openapi import Page
from strata.foundation.fields import MemoryPath
from strata.memories import tree

router = APIRouter(prefix="/v1", tags=["browse"])


class AccessEntry(BaseModel):
    path: str = Field(description="A subtree (the empty path is the tenant root).")
    level: Literal["read", "write", "owner"] = Field(description="The level there.")


class Me(BaseModel):
    tenant_id: uuid.UUID = Field(description="The key's tenant.")
    principal_id: uuid.UUID | None = Field(description="Who the key acts for.")
    key_id: uuid.UUID | None = Field(description="The key.")
    key_prefix: str | None = Field(default=None, description=(
        "The key's public prefix (`sk_<prefix>_...`), as the keys list shows it."))
    default_path: str | None = Field(description=(
        "Where a memory or conversation sent without a path goes."))
    access: list[AccessEntry] = Field(description=(
        "The key's effective access: its holder's grants met with its ceiling and its "
        "delegators', computed on this request."))


@router.get("/me", operation_id="getMe")
def me(caller: CallerDep) -> Me:
    """Who this key is

    The calling key: its tenant, principal and effective access.
    """
    return Me(tenant_id=caller.tenant_id, principal_id=caller.principal_id,
              key_id=caller.key_id, key_prefix=caller.key_prefix,
              default_path=caller.default_path,
              access=[AccessEntry(path=a.path, level=a.level.name) for a in caller.access])


# A cursor here is the last path of the page before: a path, as ltree spells it.
PathCursor = Annotated[MemoryPath | None, Query(description="The `next_cursor` of the page before.")]


@router.get("/paths", operation_id="listPaths")
def paths(
    db: DB, caller: CallerDep,
    path: Annotated[MemoryPath | None, Query(description=(
        "Only paths in this path's subtree."))] = None,
    cursor: PathCursor = None,
    limit: Annotated[int, Query(ge=1, le=1000, description="The most paths on a page.")] = 500,
) -> Page[tree.PathCount]:
    """List the paths the key can read

    Every path holding memories the key can read (under `path` when given), in path order,
    with its number of memories per status. Paths the key cannot read are never counted.
    """
    items, next_cursor = tree.path_counts(db, caller, path=path, after=cursor, limit=limit)
    return {"items": items, "next_cursor": next_cursor}
