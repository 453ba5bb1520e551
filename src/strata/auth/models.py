from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, Field

from strata.foundation.fields import ScopePath


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
    """A user or an agent of the tenant: who keys act for and grants are given to."""

    id: uuid.UUID = Field(description="The principal's id.")
    name: str = Field(description="Its name.")
    kind: Literal["user", "agent"] = Field(description="A person or an agent.")
    created_at: datetime = Field(description="When it was created.")
    disabled_at: datetime | None = Field(default=None, description=(
        "When it was disabled (its keys no longer work); null while it is enabled."))

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> "Principal":
        return cls(
            id=row["id"], name=row["name"], kind=row["kind"],
            created_at=row["created_at"], disabled_at=row["disabled_at"],
        )


class Grant(BaseModel):
    """A principal's access to a path and everything under it."""

    id: uuid.UUID = Field(description="The grant's id.")
    principal_id: uuid.UUID = Field(description="Who it is given to.")
    path: str = Field(description="The path it covers, with its subtree (`\"\"`: everything).")
    level: Literal["read", "write", "owner"] = Field(description=(
        "`read` < `write` < `owner` (owners administer keys and grants)."))
    created_at: datetime = Field(description="When it was given.")

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> "Grant":
        return cls(
            id=row["id"], principal_id=row["principal_id"], path=row["path"],
            level=row["level"], created_at=row["created_at"],
        )


class CeilingEntry(BaseModel):
    """At most this level on this path's subtree, for a key (never above its principal's)."""

    path: ScopePath = Field(description="The path (`\"\"`: everything).")
    level: Literal["read", "write", "owner"] = Field(description="The highest level there.")


class KeyInfo(BaseModel):
    """An API key as listed: never the secret. ``parent_id`` is the key that minted it
    through the API (its access never exceeds that key's); None when the operator (CLI) or
    the tenant bootstrap minted it."""

    id: uuid.UUID = Field(description="The key's id.")
    principal_id: uuid.UUID = Field(description="Who the key acts for.")
    prefix: str = Field(description="The key's first characters, to recognise it by.")
    name: str | None = Field(description="Its name, when given.")
    ceiling: list[CeilingEntry] | None = Field(description=(
        "The most the key may do, per path; null: all its principal may."))
    default_path: str | None = Field(description=(
        "Where a memory or conversation sent without a path goes."))
    created_at: datetime = Field(description="When it was created.")
    expires_at: datetime | None = Field(description="When it stops working, if ever.")
    revoked_at: datetime | None = Field(description="When it was revoked; null while it is not.")
    parent_id: uuid.UUID | None = Field(default=None, description=(
        "The key that created it through the API; null when an operator did."))

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> "KeyInfo":
        return cls(
            id=row["id"], principal_id=row["principal_id"], prefix=row["prefix"],
            name=row["name"], ceiling=row["ceiling"], default_path=row["default_path"],
            created_at=row["created_at"], expires_at=row["expires_at"],
            revoked_at=row["revoked_at"], parent_id=row["parent_id"],
        )


class CreatedKey(KeyInfo):
    """A new key, with its secret: shown this once, never again."""

    key: str = Field(description=(
        "The key itself, to send as `Authorization: Bearer <key>`; store it now."))
