-- Fingerprints of forgotten facts (strata.write.fingerprints, issue 34). A forgotten memory
-- leaves keyed hashes of its features beside its tombstone, so the fact said in other words,
-- in a compound sentence or in passing is still refused.
--
-- The key is the tenant's own: a guess hashed in one tenant confirms nothing in another,
-- and without the key a fingerprint confirms no guess. It is made on the tenant's first
-- forget; a tenant without one has no fingerprint, which lets every write skip the lookup.
CREATE TABLE tenant_secrets (
    tenant_id       uuid PRIMARY KEY REFERENCES tenants (id) ON DELETE CASCADE,
    fingerprint_key bytea NOT NULL CONSTRAINT tenant_secrets_key_check
                    CHECK (octet_length(fingerprint_key) >= 32),
    created_at      timestamptz NOT NULL DEFAULT now()
);

-- Parallel arrays: a feature's keyed hash, its weight, its kind (0 context, 1 identifier,
-- 2 decisive). Only forgotten tombstones carry them.
ALTER TABLE tombstones
    ADD COLUMN fingerprint         bytea[],
    ADD COLUMN fingerprint_weights real[],
    ADD COLUMN fingerprint_kinds   smallint[],
    ADD CONSTRAINT tombstones_fingerprint_check CHECK (
        fingerprint IS NULL OR (reason = 'forgotten'
            AND cardinality(fingerprint) = cardinality(fingerprint_weights)
            AND cardinality(fingerprint) = cardinality(fingerprint_kinds)));

-- A write's probes meet the fingerprints that share one of them (&&).
CREATE INDEX tombstones_fingerprint_idx ON tombstones USING gin (fingerprint)
    WHERE reason = 'forgotten';
