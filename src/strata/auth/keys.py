"""API keys: random, shown once, stored as sha256 with a short public prefix for lookup.

A key's secret carries 256 bits of randomness, so a fast hash is the right one: there is no
password to brute-force, and authentication stays one indexed lookup plus one digest.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import uuid
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import psycopg
from psycopg.types.json import Jsonb

from strata.audit import audited
from strata.auth.access import Access, Caller, Level
from strata.auth.models import CeilingEntry, CreatedKey, KeyInfo
from strata.db import Database
from strata.errors import Forbidden, InvalidInput, NotFound, Unauthenticated
from strata.paths import validate_path

KEY_PREFIX = "sk"


def generate_key() -> tuple[str, str]:
    """Return (prefix, full key). The prefix is public; the full key is shown once."""
    prefix = secrets.token_hex(6)
    return prefix, f"{KEY_PREFIX}_{prefix}_{secrets.token_urlsafe(32)}"


def hash_key(full: str) -> bytes:
    return hashlib.sha256(full.encode()).digest()


def parse_key(token: str) -> str | None:
    parts = token.split("_", 2)
    if len(parts) != 3 or parts[0] != KEY_PREFIX or len(parts[1]) != 12:
        return None
    return parts[1]


_AUTH_SQL = """
SELECT k.id, k.tenant_id, k.principal_id, k.secret_hash, k.default_path::text AS default_path,
       (k.revoked_at IS NOT NULL OR (k.expires_at IS NOT NULL AND k.expires_at <= now())
        OR p.disabled_at IS NOT NULL) AS dead,
       COALESCE((SELECT jsonb_agg(jsonb_build_array(e.path::text, e.level))
                 FROM effective_access(k.id) e), '[]') AS access
FROM api_keys k JOIN principals p ON p.id = k.principal_id
WHERE k.prefix = %(prefix)s
"""


def authenticate(db: Database, token: str | None, *, surface: str = "http") -> Caller:
    """Resolve a bearer token to a caller with live effective access (one statement)."""
    prefix = parse_key(token or "")
    if prefix is None:
        raise Unauthenticated("missing or malformed API key")
    with db.connection() as conn:
        row = conn.execute(_AUTH_SQL, {"prefix": prefix}).fetchone()
    if row is None or not hmac.compare_digest(bytes(row["secret_hash"]), hash_key(token)):
        raise Unauthenticated("invalid API key")
    if row["dead"]:
        raise Unauthenticated("API key is revoked or expired")
    return Caller(
        tenant_id=row["tenant_id"],
        principal_id=row["principal_id"],
        key_id=row["id"],
        access=tuple(Access(path, Level[level]) for path, level in row["access"]),
        default_path=row["default_path"],
        surface=surface,
    )


def _validate_ceiling(entries: Sequence[CeilingEntry | dict[str, Any]]) -> list[CeilingEntry]:
    out = []
    for i, entry in enumerate(entries):
        e = entry if isinstance(entry, CeilingEntry) else CeilingEntry.model_validate(entry)
        validate_path(e.path, field=f"ceiling[{i}].path", allow_root=True)
        out.append(e)
    return out


def create_key(
    db: Database,
    caller: Caller,
    *,
    principal_id: uuid.UUID,
    ceiling: Sequence[CeilingEntry | dict[str, Any]] | None = None,
    name: str | None = None,
    expires_at: datetime | None = None,
    default_path: str | None = None,
) -> CreatedKey:
    """Mint a key for a principal of the caller's tenant.

    A key-holding caller (HTTP, MCP) mints only within its own effective access: every
    ceiling entry must be covered, and no ceiling means the caller's own access becomes the
    ceiling. The operator (CLI, ``Caller.system``) mints freely.
    """
    with audited(db, caller, "admin", "key.create") as event:
        entries = _validate_ceiling(ceiling) if ceiling is not None else None
        if default_path is not None:
            validate_path(default_path, field="default_path")
        if expires_at is not None and expires_at <= datetime.now(UTC):
            raise InvalidInput("expires_at must be in the future", field="expires_at")
        if caller.key_id is not None:
            caller.require_owner()
            if default_path is not None:
                caller.require(default_path, Level.write, field="default_path")
            if entries is None:
                entries = [CeilingEntry(path=a.path, level=a.level.name) for a in caller.access]
            for i, e in enumerate(entries):
                if not caller.can(e.path, Level[e.level]):
                    raise Forbidden(
                        "a key cannot be minted above the caller's own access",
                        field=f"ceiling[{i}]",
                    )
        with db.transaction(cause="key.create", actor=caller.actor) as cur:
            created = insert_key(
                cur, tenant_id=caller.tenant_id, principal_id=principal_id, ceiling=entries,
                name=name, expires_at=expires_at, default_path=default_path,
                created_by=caller.principal_id,
            )
        event.count = 1
        return created


def insert_key(
    cur: psycopg.Cursor,
    *,
    tenant_id: uuid.UUID,
    principal_id: uuid.UUID,
    ceiling: list[CeilingEntry] | None,
    name: str | None,
    expires_at: datetime | None = None,
    default_path: str | None = None,
    created_by: uuid.UUID | None = None,
) -> CreatedKey:
    """Insert a key inside the caller's transaction; the full key is returned once."""
    if cur.execute(
        "SELECT 1 FROM principals WHERE tenant_id = %s AND id = %s", (tenant_id, principal_id)
    ).fetchone() is None:
        raise NotFound("principal", principal_id, field="principal_id")
    prefix, full = generate_key()
    row = cur.execute(
        """
        INSERT INTO api_keys (tenant_id, principal_id, prefix, secret_hash, name, ceiling,
                              default_path, expires_at, created_by)
        VALUES (%(tenant)s, %(principal)s, %(prefix)s, %(hash)s, %(name)s, %(ceiling)s,
                %(default_path)s::ltree, %(expires_at)s, %(created_by)s)
        RETURNING id, principal_id, prefix, name, ceiling, default_path::text AS default_path,
                  created_at, expires_at, revoked_at
        """,
        {
            "tenant": tenant_id, "principal": principal_id, "prefix": prefix,
            "hash": hash_key(full), "name": name,
            "ceiling": Jsonb([e.model_dump() for e in ceiling]) if ceiling is not None else None,
            "default_path": default_path, "expires_at": expires_at, "created_by": created_by,
        },
    ).fetchone()
    return CreatedKey(**KeyInfo.from_row(row).model_dump(), key=full)


# Keys visible to an owner: its own, and those whose whole effective access lies inside the
# caller's owner paths (so an owner of users.alice cannot see or revoke the root admin key).
_VISIBLE_KEYS = """
SELECT k.id, k.principal_id, k.prefix, k.name, k.ceiling, k.default_path::text AS default_path,
       k.created_at, k.expires_at, k.revoked_at
FROM api_keys k
WHERE k.tenant_id = %(tenant)s
  AND (k.id = %(self)s OR NOT EXISTS (
        SELECT 1 FROM effective_access(k.id) e
        WHERE NOT e.path <@ %(owned)s::ltree[]))
  AND (k.id = %(self)s OR EXISTS (SELECT 1 FROM grants g WHERE g.principal_id = k.principal_id
                                  AND g.path <@ %(owned)s::ltree[]))
"""


def list_keys(db: Database, caller: Caller) -> list[KeyInfo]:
    with audited(db, caller, "admin", "key.list") as event:
        caller.require_owner()
        params = {
            "tenant": caller.tenant_id, "self": caller.key_id, "owned": caller.paths(Level.owner),
        }
        with db.connection() as conn:
            rows = conn.execute(_VISIBLE_KEYS + " ORDER BY k.created_at, k.id", params).fetchall()
        event.count = len(rows)
        return [KeyInfo.from_row(r) for r in rows]


def revoke_key(db: Database, caller: Caller, key_id: uuid.UUID) -> KeyInfo:
    with audited(db, caller, "admin", "key.revoke") as event:
        caller.require_owner()
        params = {
            "tenant": caller.tenant_id, "self": caller.key_id,
            "owned": caller.paths(Level.owner), "id": key_id,
        }
        with db.transaction(cause="key.revoke", actor=caller.actor) as cur:
            if cur.execute(_VISIBLE_KEYS + " AND k.id = %(id)s", params).fetchone() is None:
                raise NotFound("key", key_id)
            row = cur.execute(
                """
                UPDATE api_keys SET revoked_at = COALESCE(revoked_at, now()) WHERE id = %(id)s
                RETURNING id, principal_id, prefix, name, ceiling,
                          default_path::text AS default_path, created_at, expires_at, revoked_at
                """,
                params,
            ).fetchone()
        event.count = 1
        return KeyInfo.from_row(row)
