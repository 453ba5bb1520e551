from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel

from strata.fields import ScopePath


class Tenant(BaseModel):
    id: uuid.UUID
    name: str
    created_at: datetime

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> "Tenant":
        return cls(id=row["id"], name=row["name"], created_at=row["created_at"])


class TenantSummary(Tenant):
    """A tenant as the operator lists it: how many principals, usable keys (neither revoked
    nor expired) and active memories it holds."""

    principals: int
    keys: int
    memories: int

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> "TenantSummary":
        return cls(id=row["id"], name=row["name"], created_at=row["created_at"],
                   principals=row["principals"], keys=row["keys"], memories=row["memories"])


class Principal(BaseModel):
    id: uuid.UUID
    name: str
    kind: Literal["user", "agent"]
    created_at: datetime
    disabled_at: datetime | None = None

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> "Principal":
        return cls(
            id=row["id"], name=row["name"], kind=row["kind"],
            created_at=row["created_at"], disabled_at=row["disabled_at"],
        )


class Grant(BaseModel):
    id: uuid.UUID
    principal_id: uuid.UUID
    path: str
    level: Literal["read", "write", "owner"]
    created_at: datetime

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> "Grant":
        return cls(
            id=row["id"], principal_id=row["principal_id"], path=row["path"],
            level=row["level"], created_at=row["created_at"],
        )


class CeilingEntry(BaseModel):
    path: ScopePath
    level: Literal["read", "write", "owner"]


class KeyInfo(BaseModel):
    """An API key as listed: never the secret. ``parent_id`` is the key that minted it
    through the API (its access never exceeds that key's); None when the operator (CLI) or
    the tenant bootstrap minted it."""

    id: uuid.UUID
    principal_id: uuid.UUID
    prefix: str
    name: str | None
    ceiling: list[CeilingEntry] | None
    default_path: str | None
    created_at: datetime
    expires_at: datetime | None
    revoked_at: datetime | None
    parent_id: uuid.UUID | None = None

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> "KeyInfo":
        return cls(
            id=row["id"], principal_id=row["principal_id"], prefix=row["prefix"],
            name=row["name"], ceiling=row["ceiling"], default_path=row["default_path"],
            created_at=row["created_at"], expires_at=row["expires_at"],
            revoked_at=row["revoked_at"], parent_id=row["parent_id"],
        )


class CreatedKey(KeyInfo):
    key: str  # shown once
