"""The tamper-evident audit trail: an append-only hash chain per tenant."""

from strata.audit.chain import (
    AuditEvent,
    append,
    audited,
    failure_count,
    list_entries,
    row_hash,
    tenants_with_chains,
    verify,
    verify_for,
)

__all__ = ["AuditEvent", "append", "audited", "failure_count", "list_entries", "row_hash",
           "tenants_with_chains", "verify", "verify_for"]
