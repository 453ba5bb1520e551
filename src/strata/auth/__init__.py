"""Tenants, principals, API keys and grants, and the effective access of a caller."""

from strata.auth.access import Access, Caller, Level
from strata.auth.keys import authenticate, create_key, generate_key, list_keys, revoke_key
from strata.auth.principals import (
    create_grant,
    create_principal,
    create_tenant,
    delete_grant,
    delete_tenant,
    find_principal,
    find_tenant,
    list_grants,
    list_principals,
    list_tenants,
)

__all__ = [
    "Access", "Caller", "Level", "authenticate", "create_key", "generate_key", "list_keys",
    "revoke_key", "create_grant", "create_principal", "create_tenant", "delete_grant", "delete_tenant",
    "find_principal", "find_tenant", "list_grants", "list_principals", "list_tenants",
]
