-- When each principal last wrote through the API or MCP: the read-after-write rule
-- (strata.db.routing) sends that principal's reads to the writer, not a replica, for a few
-- seconds after. One row per principal, stamped after the write request succeeded (never in
-- the write's own transaction, so concurrent writes of one principal do not queue on it).
CREATE TABLE principal_writes (
    principal_id uuid PRIMARY KEY REFERENCES principals (id) ON DELETE CASCADE,
    tenant_id    uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    at           timestamptz NOT NULL
);
