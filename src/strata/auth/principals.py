"""Tenants, principals and grants. Admin operations are audited like data operations."""

from __future__ import annotations

import uuid
from typing import Literal

from strata.audit import audited
from strata.auth.access import Caller, Level
from strata.auth.keys import insert_key
from strata.auth.models import CreatedKey, Grant, Principal, Tenant, TenantSummary
from strata.db import Database
from strata.foundation.errors import NotFound
from strata.foundation.paths import validate_path

ADMIN_PRINCIPAL = "admin"
_GRANT_COLUMNS = "id, principal_id, path::text AS path, level::text AS level, created_at"


def create_tenant(db: Database, name: str) -> tuple[Tenant, CreatedKey]:
    """A tenant, its ``admin`` principal with owner on the root, and that principal's key."""
    with db.transaction(cause="tenant.create", actor="cli") as cur:
        tenant = Tenant.from_row(
            cur.execute("INSERT INTO tenants (name) VALUES (%s) RETURNING *", (name,)).fetchone()
        )
        principal = cur.execute(
            "INSERT INTO principals (tenant_id, name, kind) VALUES (%s, %s, 'user') RETURNING id",
            (tenant.id, ADMIN_PRINCIPAL),
        ).fetchone()["id"]
        cur.execute(
            "INSERT INTO grants (tenant_id, principal_id, path, level) VALUES (%s, %s, '', 'owner')",
            (tenant.id, principal),
        )
        key = insert_key(cur, tenant_id=tenant.id, principal_id=principal, ceiling=None, name="admin")
    with audited(db, Caller.system(tenant.id), "admin", "tenant.create") as event:
        event.count = 1
    return tenant, key


def delete_tenant(db: Database, tenant_id: uuid.UUID, *, cause: str, actor: str) -> None:
    """Remove a tenant and everything it holds (every tenant table cascades from tenants).
    For undoing a tenant that never became usable, such as a first tenant whose key could
    not be stored; there is no route to it."""
    with db.transaction(cause=cause, actor=actor) as cur:
        cur.execute("DELETE FROM tenants WHERE id = %s", (tenant_id,))


def find_tenant(db: Database, name_or_id: str) -> Tenant:
    with db.connection() as conn:
        row = conn.execute(
            "SELECT * FROM tenants WHERE name = %s OR id::text = %s", (name_or_id, name_or_id)
        ).fetchone()
    if row is None:
        raise NotFound("tenant", name_or_id, field="tenant")
    return Tenant.from_row(row)


_LIST_TENANTS = """
SELECT t.id, t.name, t.created_at,
       (SELECT count(*) FROM principals p WHERE p.tenant_id = t.id) AS principals,
       (SELECT count(*) FROM api_keys k WHERE k.tenant_id = t.id AND k.revoked_at IS NULL
          AND (k.expires_at IS NULL OR k.expires_at > now())) AS keys,
       (SELECT count(*) FROM memories m WHERE m.tenant_id = t.id AND m.status = 'active')
          AS memories
FROM tenants t
ORDER BY t.name
"""


def list_tenants(db: Database) -> list[TenantSummary]:
    """Every tenant of the database, by name: an operator's view (no key reaches it), so
    it is not audited, and it shows counts, never a memory or a key."""
    with db.connection() as conn:
        return [TenantSummary.from_row(r) for r in conn.execute(_LIST_TENANTS).fetchall()]


def find_principal(db: Database, tenant_id: uuid.UUID, name_or_id: str) -> Principal:
    with db.connection() as conn:
        row = conn.execute(
            "SELECT * FROM principals WHERE tenant_id = %s AND (name = %s OR id::text = %s)",
            (tenant_id, name_or_id, name_or_id),
        ).fetchone()
    if row is None:
        raise NotFound("principal", name_or_id, field="principal")
    return Principal.from_row(row)


def create_principal(
    db: Database, caller: Caller, name: str, kind: Literal["user", "agent"]
) -> Principal:
    with audited(db, caller, "admin", "principal.create") as event:
        if caller.key_id is not None:
            caller.require_owner()
        with db.transaction(cause="principal.create", actor=caller.actor) as cur:
            row = cur.execute(
                "INSERT INTO principals (tenant_id, name, kind) VALUES (%s, %s, %s) RETURNING *",
                (caller.tenant_id, name, kind),
            ).fetchone()
        event.count = 1
        return Principal.from_row(row)


def list_principals(db: Database, caller: Caller) -> list[Principal]:
    with audited(db, caller, "admin", "principal.list") as event:
        caller.require_owner()
        with db.connection() as conn:
            rows = conn.execute(
                "SELECT * FROM principals WHERE tenant_id = %s ORDER BY created_at, id",
                (caller.tenant_id,),
            ).fetchall()
        event.count = len(rows)
        return [Principal.from_row(r) for r in rows]


def create_grant(
    db: Database, caller: Caller, principal_id: uuid.UUID, path: str,
    level: Literal["read", "write", "owner"],
) -> Grant:
    """Grant ``level`` on ``path``. A key-holding caller must own the path it grants on."""
    with audited(db, caller, "admin", "grant.create") as event:
        validate_path(path, allow_root=True)
        if caller.key_id is not None:
            caller.require(path, Level.owner)
        with db.transaction(cause="grant.create", actor=caller.actor) as cur:
            if cur.execute(
                "SELECT 1 FROM principals WHERE tenant_id = %s AND id = %s",
                (caller.tenant_id, principal_id),
            ).fetchone() is None:
                raise NotFound("principal", principal_id, field="principal_id")
            row = cur.execute(
                f"INSERT INTO grants (tenant_id, principal_id, path, level, created_by)"
                f" VALUES (%s, %s, %s::ltree, %s, %s) RETURNING {_GRANT_COLUMNS}",
                (caller.tenant_id, principal_id, path, level, caller.principal_id),
            ).fetchone()
        event.count = 1
        return Grant.from_row(row)


def list_grants(db: Database, caller: Caller, principal_id: uuid.UUID | None = None) -> list[Grant]:
    """Grants on paths the caller owns."""
    with audited(db, caller, "admin", "grant.list") as event:
        caller.require_owner()
        with db.connection() as conn:
            rows = conn.execute(
                f"SELECT {_GRANT_COLUMNS} FROM grants WHERE tenant_id = %(tenant)s"
                " AND path <@ %(owned)s::ltree[]"
                " AND (%(principal)s::uuid IS NULL OR principal_id = %(principal)s)"
                " ORDER BY created_at, id",
                {"tenant": caller.tenant_id, "owned": caller.paths(Level.owner),
                 "principal": principal_id},
            ).fetchall()
        event.count = len(rows)
        return [Grant.from_row(r) for r in rows]


def delete_grant(db: Database, caller: Caller, grant_id: uuid.UUID) -> Grant:
    with audited(db, caller, "admin", "grant.delete") as event:
        caller.require_owner()
        with db.transaction(cause="grant.delete", actor=caller.actor) as cur:
            row = cur.execute(
                f"DELETE FROM grants WHERE tenant_id = %(tenant)s AND id = %(id)s"
                f" AND path <@ %(owned)s::ltree[] RETURNING {_GRANT_COLUMNS}",
                {"tenant": caller.tenant_id, "id": grant_id, "owned": caller.paths(Level.owner)},
            ).fetchone()
        if row is None:
            raise NotFound("grant", grant_id)
        event.count = 1
        return Grant.from_row(row)
