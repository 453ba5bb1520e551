"""The caller and its effective access: (path, level) pairs computed in SQL per request.

Data statements receive ``caller.paths(level)`` as an ``ltree[]`` parameter and filter inside
the statement; the pure checks here decide 403-versus-404 with the same semantics.
"""

from __future__ import annotations

import enum
import uuid
from dataclasses import dataclass, field

from strata.foundation.errors import Forbidden
from strata.foundation.paths import is_within


class Level(enum.IntEnum):
    read = 1
    write = 2
    owner = 3


@dataclass(frozen=True)
class Access:
    path: str
    level: Level


@dataclass(frozen=True)
class Caller:
    tenant_id: uuid.UUID
    principal_id: uuid.UUID | None
    key_id: uuid.UUID | None
    access: tuple[Access, ...]
    default_path: str | None = None
    surface: str = "http"
    # The key's public prefix (sk_<prefix>_...): how people tell keys apart (the keys list
    # shows it), where the id is how the API names one.
    key_prefix: str | None = None
    extra: dict = field(default_factory=dict, compare=False)

    def paths(self, level: Level = Level.read) -> list[str]:
        """Every path this caller holds at ``level`` or above (subtrees included)."""
        return [a.path for a in self.access if a.level >= level]

    def level_at(self, path: str) -> Level | None:
        levels = [a.level for a in self.access if is_within(path, a.path)]
        return max(levels) if levels else None

    def can(self, path: str, level: Level) -> bool:
        got = self.level_at(path)
        return got is not None and got >= level

    def require(self, path: str, level: Level, *, field: str | None = "path") -> None:
        if not self.can(path, level):
            raise Forbidden(f"this key has no {level.name} access to that path", field=field)

    def require_owner(self) -> None:
        if not self.paths(Level.owner):
            raise Forbidden("owner access is required")

    def require_root_owner(self) -> None:
        if not self.can("", Level.owner):
            raise Forbidden("owner access on the tenant root is required")

    @classmethod
    def system(cls, tenant_id: uuid.UUID, surface: str = "cli") -> "Caller":
        """An operator acting outside any key (the CLI): audited, but holding no paths."""
        return cls(tenant_id=tenant_id, principal_id=None, key_id=None, access=(), surface=surface)

    @property
    def actor(self) -> str:
        return f"principal:{self.principal_id}" if self.principal_id else "system"
