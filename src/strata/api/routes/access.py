"""/v1/keys, /v1/grants, /v1/principals: owner-level administration within a tenant."""

from __future__ import annotations

import uuid
from typing import Literal

from fastapi import APIRouter
from pydantic import BaseModel, ConfigDict, Field

from strata import auth
from strata.api.deps import DB, CallerDep
from strata.api.openapi import Items, answers
from strata.auth.explain import AccessExplanation, explain
from strata.auth.models import CeilingEntry, CreatedKey, Grant, KeyInfo, Principal
from strata.fields import MemoryPath, ScopePath
from strata.memories.models import Text, Instant

router = APIRouter(prefix="/v1", tags=["access"])


class KeyRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    principal_id: uuid.UUID
    ceiling: list[CeilingEntry] | None = Field(default=None, max_length=64)
    name: Text | None = Field(default=None, max_length=200)
    expires_at: Instant | None = None
    default_path: MemoryPath | None = None


class GrantRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    principal_id: uuid.UUID
    path: ScopePath
    level: Literal["read", "write", "owner"]


class PrincipalRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: Text = Field(min_length=1, max_length=200)
    kind: Literal["user", "agent"] = "user"


@router.post("/keys", status_code=201, responses=answers(404),
             description="`expires_at`, when given, must lie in the future (422).")
def create_key(body: KeyRequest, db: DB, caller: CallerDep) -> CreatedKey:
    return auth.create_key(db, caller, **body.model_dump())


@router.get("/keys")
def list_keys(db: DB, caller: CallerDep) -> Items[KeyInfo]:
    return {"items": auth.list_keys(db, caller)}


@router.delete("/keys/{key_id}")
def revoke_key(key_id: uuid.UUID, db: DB, caller: CallerDep) -> KeyInfo:
    return auth.revoke_key(db, caller, key_id)


@router.post("/grants", status_code=201, responses=answers(404, 409))
def create_grant(body: GrantRequest, db: DB, caller: CallerDep) -> Grant:
    return auth.create_grant(db, caller, body.principal_id, body.path, body.level)


@router.get("/grants")
def list_grants(
    db: DB, caller: CallerDep, principal_id: uuid.UUID | None = None
) -> Items[Grant]:
    return {"items": auth.list_grants(db, caller, principal_id)}


@router.delete("/grants/{grant_id}")
def delete_grant(grant_id: uuid.UUID, db: DB, caller: CallerDep) -> Grant:
    return auth.delete_grant(db, caller, grant_id)


@router.post("/principals", status_code=201, responses=answers(409))
def create_principal(body: PrincipalRequest, db: DB, caller: CallerDep) -> Principal:
    return auth.create_principal(db, caller, body.name, body.kind)


@router.get("/principals")
def list_principals(db: DB, caller: CallerDep) -> Items[Principal]:
    return {"items": auth.list_principals(db, caller)}


@router.get("/access/explain", description=(
    "Why a key holds the access it holds at a path: its effective level there, the grant or "
    "ceiling entry that decides it (or what is missing: no grant, no ceiling entry, a revoked "
    "or expired link), and each key of its minting chain with the entries that cover the "
    "path. The caller must own the path (403); a key of another tenant is 404."))
def explain_access(
    db: DB, caller: CallerDep, key_id: uuid.UUID, path: ScopePath = "",
) -> AccessExplanation:
    return explain(db, caller, key_id, path)
