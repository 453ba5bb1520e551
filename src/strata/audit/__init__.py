"""The tamper-evident audit trail: an append-only hash chain per tenant, its verification
and its retention."""

from strata.audit.chain import (
    AuditEvent,
    append,
    audited,
    failure_count,
    list_entries,
    row_hash,
)
from strata.audit.retention import prune
from strata.audit.verify import publish_digest, verify, verify_for, verify_tenant

__all__ = ["AuditEvent", "append", "audited", "failure_count", "list_entries", "prune",
           "publish_digest", "row_hash", "verify", "verify_for", "verify_tenant"]
