-- Anchored audit (strata.audit.verify, strata.audit.digests): the rolling full walk keeps its
-- place in a third checkpoint kind, and publishing digests is a scheduled job with its own
-- per-tenant bookkeeping.
ALTER TABLE audit_checkpoints DROP CONSTRAINT audit_checkpoints_kind_check;
ALTER TABLE audit_checkpoints ADD CONSTRAINT audit_checkpoints_kind_check
    CHECK (kind IN ('verified', 'pruned', 'rolling'));

ALTER TABLE maintenance_state DROP CONSTRAINT maintenance_state_job_check;
ALTER TABLE maintenance_state ADD CONSTRAINT maintenance_state_job_check
    CHECK (job IN ('lifecycle', 'audit_verify', 'audit_prune', 'audit_digest'));
