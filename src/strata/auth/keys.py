"""API keys: random, shown once, stored as sha256 with a short public prefix for lookup.

A key's secret carries 256 bits of randomness, so a fast hash is the right one: there is no
password to brute-force, and authentication stays one indexed lookup plus one digest.

Delegation cannot outlive its delegator: a key minted through the API records the minting
key as its parent, and its effective access (``effective_access`` in SQL, migration 0010) is
clamped by the parent's live effective access, up the chain. A key whose chain holds a
revoked or expired key or a disabled principal does not authenticate at all.
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
from strata.foundation.errors import Forbidden, InvalidInput, NotFound, Unauthenticated
from strata.foundation.paths import validate_path

KEY_PREFIX = "sk"
# What a listing shows of a key (KeyInfo), qualified so it reads the same inside joins.
_KEY_COLUMNS = ("k.id, k.principal_id, k.prefix, k.name, k.ceiling,"
                " k.default_path::text AS default_path, k.created_at, k.expires_at,"
                " k.revoked_at, k.parent_id")


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


# dead: the key or any key up its parent chain is revoked or expired, or held by a disabled
# principal (api_key_live walks the chain) -- a delegated key dies with its delegator.
_AUTH_SQL = """
SELECT k.id, k.tenant_id, k.principal_id, k.secret_hash, k.default_path::text AS default_path,
       NOT api_key_live(k.id) AS dead,
       COALESCE((SELECT jsonb_agg(jsonb_build_array(e.path::text, e.level))
                 FROM effective_access(k.id) e), '[]') AS access
FROM api_keys k
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
        key_prefix=prefix,
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

    A key-holding caller (HTTP, MCP) must be an owner and mints only within its own
    effective access: every ceiling entry must be covered, and no ceiling means the caller's
    own access becomes the ceiling. It mints for its own principal unless it owns the tenant
    root (403 on ``principal_id`` otherwise), and the new key's parent is the caller's key,
    so the new key never holds more than the caller holds now. The operator (CLI,
    ``Caller.system``) mints freely, keys without a parent.
    """
    with audited(db, caller, "admin", "key.create") as event:
        entries = _validate_ceiling(ceiling) if ceiling is not None else None
        if default_path is not None:
            validate_path(default_path, field="default_path")
        if expires_at is not None and expires_at <= datetime.now(UTC):
            raise InvalidInput("expires_at must be in the future", field="expires_at")
        if caller.key_id is not None:
            caller.require_owner()
            if principal_id != caller.principal_id and not caller.can("", Level.owner):
                raise Forbidden(
                    "a key can be minted only for the caller's own principal, unless the "
                    "caller is owner on the tenant root",
                    field="principal_id",
                )
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
                created_by=caller.principal_id, parent_id=caller.key_id,
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
    parent_id: uuid.UUID | None = None,
) -> CreatedKey:
    """Insert a key inside the caller's transaction; the full key is returned once.
    ``parent_id`` is the minting key (None for the operator and the tenant bootstrap)."""
    if cur.execute(
        "SELECT 1 FROM principals WHERE tenant_id = %s AND id = %s", (tenant_id, principal_id)
    ).fetchone() is None:
        raise NotFound("principal", principal_id, field="principal_id")
    prefix, full = generate_key()
    row = cur.execute(
        f"""
        INSERT INTO api_keys AS k (tenant_id, principal_id, prefix, secret_hash, name,
                                   ceiling, default_path, expires_at, created_by, parent_id)
        VALUES (%(tenant)s, %(principal)s, %(prefix)s, %(hash)s, %(name)s, %(ceiling)s,
                %(default_path)s::ltree, %(expires_at)s, %(created_by)s, %(parent)s)
        RETURNING {_KEY_COLUMNS}
        """,
        {
            "tenant": tenant_id, "principal": principal_id, "prefix": prefix,
            "hash": hash_key(full), "name": name,
            "ceiling": Jsonb([e.model_dump() for e in ceiling]) if ceiling is not None else None,
            "default_path": default_path, "expires_at": expires_at, "created_by": created_by,
            "parent": parent_id,
        },
    ).fetchone()
    return CreatedKey(**KeyInfo.from_row(row).model_dump(), key=full)


# Keys visible to a caller. The operator (no key) and a root owner: every key of the tenant.
# A subtree owner: its own key, the keys minted through it (descendants: they hold nothing
# it does not), and keys whose whole effective access lies inside its owner paths and whose
# holder has a grant there (so an owner of users.alice cannot see or revoke the root admin
# key, nor the key of a principal it has nothing to do with).
_VISIBLE_KEYS = f"""
WITH RECURSIVE minted (id) AS (
    SELECT id FROM api_keys WHERE id = %(self)s
  UNION
    SELECT k.id FROM api_keys k JOIN minted m ON k.parent_id = m.id
)
SELECT {_KEY_COLUMNS}
FROM api_keys k
WHERE k.tenant_id = %(tenant)s
  AND (%(all)s OR k.id IN (SELECT id FROM minted) OR (
        NOT EXISTS (SELECT 1 FROM effective_access(k.id) e
                    WHERE NOT e.path <@ %(owned)s::ltree[])
        AND EXISTS (SELECT 1 FROM grants g WHERE g.principal_id = k.principal_id
                    AND g.path <@ %(owned)s::ltree[])))
"""


def _visibility(caller: Caller) -> dict[str, Any]:
    """Parameters of _VISIBLE_KEYS; a key-holding caller must be an owner somewhere."""
    if caller.key_id is not None:
        caller.require_owner()
    return {
        "tenant": caller.tenant_id, "self": caller.key_id, "owned": caller.paths(Level.owner),
        "all": caller.key_id is None or caller.can("", Level.owner),
    }


def list_keys(db: Database, caller: Caller) -> list[KeyInfo]:
    """The keys the caller may see (see _VISIBLE_KEYS), oldest first, never a secret."""
    with audited(db, caller, "admin", "key.list") as event:
        params = _visibility(caller)
        with db.connection() as conn:
            rows = conn.execute(_VISIBLE_KEYS + " ORDER BY k.created_at, k.id", params).fetchall()
        event.count = len(rows)
        return [KeyInfo.from_row(r) for r in rows]


def revoke_key(db: Database, caller: Caller, key_id: uuid.UUID) -> KeyInfo:
    """Revoke a key the caller may see (else NotFound). Keys minted through it stop
    authenticating with it: their chain holds a revoked key."""
    with audited(db, caller, "admin", "key.revoke") as event:
        params = {**_visibility(caller), "id": key_id}
        with db.transaction(cause="key.revoke", actor=caller.actor) as cur:
            if cur.execute(_VISIBLE_KEYS + " AND k.id = %(id)s", params).fetchone() is None:
                raise NotFound("key", key_id)
            row = cur.execute(
                f"UPDATE api_keys AS k SET revoked_at = COALESCE(k.revoked_at, now())"
                f" WHERE k.id = %(id)s"
                f" RETURNING {_KEY_COLUMNS}",
                params,
            ).fetchone()
        event.count = 1
        return KeyInfo.from_row(row)
