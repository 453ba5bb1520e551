-- Memory rules: the owner's policy for what the write path keeps under a path subtree
-- (strata.rules). One rule per (tenant, path); the most specific rule containing a memory's
-- path decides for it, with no merging up the tree. Every version is kept in
-- memory_rule_history, written by strata.rules.store in the transaction that changes the rule.
CREATE TABLE memory_rules (
    id                 uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    tenant_id          uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    path               ltree NOT NULL,
    capture            text NOT NULL DEFAULT 'on'
                       CHECK (capture IN ('on', 'off', 'review_only')),
    exclude_categories text[] NOT NULL DEFAULT '{}',
    exclude_patterns   text[] NOT NULL DEFAULT '{}',
    include_categories text[] NOT NULL DEFAULT '{}',
    instructions       text,
    retention_days     integer CHECK (retention_days > 0),
    version            integer NOT NULL DEFAULT 1,
    created_by         uuid,
    created_at         timestamptz NOT NULL DEFAULT now(),
    updated_at         timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT memory_rules_path_key UNIQUE (tenant_id, path)
);

-- Every state a rule has had (operation 'set') and its removal ('delete'), in version order.
-- Not keyed to memory_rules: a deleted rule's history stays readable.
CREATE TABLE memory_rule_history (
    id         bigserial PRIMARY KEY,
    tenant_id  uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    rule_id    uuid NOT NULL,
    version    integer NOT NULL,
    operation  text NOT NULL CHECK (operation IN ('set', 'delete')),
    snapshot   jsonb NOT NULL,
    actor      text,
    changed_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX memory_rule_history_rule_idx ON memory_rule_history (tenant_id, rule_id, id);
