"""/v1/keys, /v1/grants, /v1/principals: owner-level administration within a tenant."""

from __future__ import annotations

import uuid
from typing import Annotated, Literal

from fastapi import APIRouter, Path, Query
from pydantic import BaseModel, ConfigDict, Field

from strata import auth
from strata.api.deps import DB, CallerDep
from strata.api.openapi import Items, answers
from strata.auth.explain import AccessExplanation, explain
from strata.auth.models import CeilingEntry, CreatedKey, Grant, KeyInfo, Principal
from strata.foundation.fields import MemoryPath, ScopePath
from strata.memories.models import Text, Instant

router = APIRouter(prefix="/v1", tags=["access"])


_PRINCIPAL = "5f0c2a9e-3b7d-4e41-8c6a-1d2e3f405162"


class KeyRequest(BaseModel):
    model_config = ConfigDict(extra="forbid", json_schema_extra={"examples": [{
        "principal_id": _PRINCIPAL, "name": "support-agent",
        "ceiling": [{"path": "shared.support", "level": "write"}],
        "default_path": "shared.support", "expires_at": "2099-01-01T00:00:00Z"}]})
    principal_id: uuid.UUID = Field(description="Who the key acts for.")
    ceiling: list[CeilingEntry] | None = Field(default=None, max_length=64, description=(
        "The most the key may do, per path; all its principal may when absent. Never above "
        "the key that creates it."))
    name: Text | None = Field(default=None, max_length=200, description="A name to know it by.")
    expires_at: Instant | None = Field(default=None, description=(
        "When it stops working; in the future. Never when absent."))
    default_path: MemoryPath | None = Field(default=None, description=(
        "Where a memory or conversation sent without a path goes."))


class GrantRequest(BaseModel):
    model_config = ConfigDict(extra="forbid", json_schema_extra={"examples": [
        {"principal_id": _PRINCIPAL, "path": "shared.support", "level": "write"}]})
    principal_id: uuid.UUID = Field(description="Who to give access to.")
    path: ScopePath = Field(description="The path, with its subtree (`\"\"`: everything).")
    level: Literal["read", "write", "owner"] = Field(description="`read`, `write` or `owner`.")


class PrincipalRequest(BaseModel):
    model_config = ConfigDict(extra="forbid", json_schema_extra={"examples": [
        {"name": "support-bot", "kind": "agent"}]})
    name: Text = Field(min_length=1, max_length=200, description="Its name.")
    kind: Literal["user", "agent"] = Field(default="user", description="A person or an agent.")


@router.post("/keys", operation_id="createKey", status_code=201, responses=answers(404))
def create_key(body: KeyRequest, db: DB, caller: CallerDep) -> CreatedKey:
    """Create an API key

    A key for a principal of the tenant, limited by its `ceiling` and never above the key
    that creates it. The answer holds the key itself, shown this once. A `principal_id` the
    tenant does not have is a 404; `expires_at`, when given, must lie in the future (422).
    """
    return auth.create_key(db, caller, **body.model_dump())


@router.get("/keys", operation_id="listKeys")
def list_keys(db: DB, caller: CallerDep) -> Items[KeyInfo]:
    """List API keys

    The tenant's keys, revoked ones included, without their secrets.
    """
    return {"items": auth.list_keys(db, caller)}


@router.delete("/keys/{key_id}", operation_id="revokeKey")
def revoke_key(key_id: Annotated[uuid.UUID, Path(description="The key's id.")], db: DB, caller: CallerDep) -> KeyInfo:
    """Revoke an API key

    The key stops working (within a minute or two on AWS, where authorizations are cached);
    the answer is the key as revoked.
    """
    return auth.revoke_key(db, caller, key_id)


@router.post("/grants", operation_id="createGrant", status_code=201, responses=answers(404, 409))
def create_grant(body: GrantRequest, db: DB, caller: CallerDep) -> Grant:
    """Grant access to a path

    Gives a principal `read`, `write` or `owner` on a path and its subtree. An unknown
    `principal_id` is a 404; the same grant twice a 409.
    """
    return auth.create_grant(db, caller, body.principal_id, body.path, body.level)


@router.get("/grants", operation_id="listGrants")
def list_grants(
    db: DB, caller: CallerDep,
    principal_id: Annotated[uuid.UUID | None, Query(description=(
        "Only this principal's grants."))] = None,
) -> Items[Grant]:
    """List grants

    The tenant's grants, or one principal's.
    """
    return {"items": auth.list_grants(db, caller, principal_id)}


@router.delete("/grants/{grant_id}", operation_id="deleteGrant")
def delete_grant(grant_id: Annotated[uuid.UUID, Path(description="The grant's id.")], db: DB, caller: CallerDep) -> Grant:
    """Delete a grant

    The principal loses that access, and so do its keys; the answer is the grant deleted.
    """
    return auth.delete_grant(db, caller, grant_id)


@router.post("/principals", operation_id="createPrincipal", status_code=201, responses=answers(409))
def create_principal(body: PrincipalRequest, db: DB, caller: CallerDep) -> Principal:
    """Create a principal

    A user or agent of the tenant, with no access until it is granted some. A name the
    tenant already has is a 409.
    """
    return auth.create_principal(db, caller, body.name, body.kind)


@router.get("/principals", operation_id="listPrincipals")
def list_principals(db: DB, caller: CallerDep) -> Items[Principal]:
    """List principals

    The tenant's users and agents.
    """
    return {"items": auth.list_principals(db, caller)}


@router.get("/access/explain", operation_id="explainAccess", responses=answers(404))
def explain_access(
    db: DB, caller: CallerDep,
    key_id: Annotated[uuid.UUID, Query(description="The key to explain.")],
    path: Annotated[ScopePath, Query(description=(
        "The path to explain its access at; the root (`\"\"`) when absent."))] = "",
) -> AccessExplanation:
    """Explain a key's access at a path

    Why a key holds the access it holds at a path: its effective level there, the grant or
    ceiling entry that decides it (or what is missing: no grant, no ceiling entry, a revoked
    or expired link), and each key of its minting chain with the entries that cover the
    path. The caller must own the path (403); a key of another tenant is 404.
    """
    return explain(db, caller, key_id, path)
