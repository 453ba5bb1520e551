-- Fingerprints of forgotten facts (strata.write.fingerprints, issue 34). A forgotten memory
-- leaves keyed hashes of its features beside its tombstone, so the fact said in other words,
-- in a compound sentence or in passing is still refused.
--
-- The keys are the tenant's own: a guess hashed in one tenant confirms nothing in another,
-- and without the key a fingerprint confirms no guess. The first is made on the tenant's
-- first forget; an import brings the keys its fingerprints were made with (a tenant may so
-- hold more than one, and each tombstone names its own). A tenant without a key has no
-- fingerprint, which lets every write skip the lookup.
CREATE TABLE fingerprint_keys (
    id         uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    tenant_id  uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    secret     bytea NOT NULL CONSTRAINT fingerprint_keys_secret_check
               CHECK (octet_length(secret) >= 32),
    created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX fingerprint_keys_tenant_idx ON fingerprint_keys (tenant_id, created_at, id);

-- Parallel arrays: a feature's keyed hash, its weight, its kind (0 context, 1 identifier,
-- 2 decisive). Only forgotten tombstones carry them.
ALTER TABLE tombstones
    ADD COLUMN fingerprint_key_id  uuid REFERENCES fingerprint_keys (id) ON DELETE CASCADE,
    ADD COLUMN fingerprint         bytea[],
    ADD COLUMN fingerprint_weights real[],
    ADD COLUMN fingerprint_kinds   smallint[],
    ADD CONSTRAINT tombstones_fingerprint_check CHECK (
        fingerprint IS NULL OR (reason = 'forgotten' AND fingerprint_key_id IS NOT NULL
            AND cardinality(fingerprint) = cardinality(fingerprint_weights)
            AND cardinality(fingerprint) = cardinality(fingerprint_kinds)));

-- A write's probes meet the fingerprints that share one of them (&&).
CREATE INDEX tombstones_fingerprint_idx ON tombstones USING gin (fingerprint)
    WHERE reason = 'forgotten';
