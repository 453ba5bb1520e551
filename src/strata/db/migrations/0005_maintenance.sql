-- Scheduled maintenance (strata.lifecycle, strata.audit.retention): indexes for the jobs'
-- selections, and per-tenant bookkeeping so a run that ran out of time resumes with the
-- tenants it did not finish instead of starting over with the first.

-- Short-term expiry and promotion scan short-term rows only (a small share of a tenant);
-- the other lifecycle selections ride memories_scope_idx (tenant_id, status, created_at, id).
CREATE INDEX memories_short_term_idx ON memories (tenant_id, expires_at, id)
    WHERE tier = 'short_term';

-- Tombstones with an expiry: few, so a partial index keeps the sweep off the whole table.
CREATE INDEX tombstones_until_idx ON tombstones (tenant_id, until) WHERE until IS NOT NULL;

-- History retention deletes a tenant's oldest rows in batches.
CREATE INDEX memory_history_changed_idx ON memory_history (tenant_id, changed_at, id);

CREATE TABLE maintenance_state (
    tenant_id    uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    job          text NOT NULL CHECK (job IN ('lifecycle', 'audit_verify', 'audit_prune')),
    started_at   timestamptz NOT NULL,
    completed_at timestamptz,   -- NULL until a run finished this tenant
    report       jsonb,         -- the last finished run's report (counts and ids only)
    PRIMARY KEY (tenant_id, job)
);
