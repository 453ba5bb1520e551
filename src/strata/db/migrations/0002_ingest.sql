-- Ingestion staging. Steps pass only ids; what they hand each other lives here, so a retried
-- step re-reads its input and a replayed request finds its receipt.

ALTER TABLE ingest_receipts
    ADD COLUMN messages     jsonb,                          -- kept only until persist
    ADD COLUMN request_hash bytea,                          -- a replay must be the same request
    ADD COLUMN steps        jsonb NOT NULL DEFAULT '{}',    -- step -> finished marker
    ADD COLUMN notes        jsonb NOT NULL DEFAULT '[]';

CREATE TABLE ingest_candidates (
    receipt_id     uuid NOT NULL REFERENCES ingest_receipts (id) ON DELETE CASCADE,
    idx            integer NOT NULL,
    tenant_id      uuid NOT NULL,
    content        text NOT NULL,
    canonical      text NOT NULL,
    value_hash     bytea NOT NULL,
    kind           memory_kind NOT NULL,
    slot           text,
    value          text,
    valid_from     timestamptz,
    confidence     real NOT NULL,
    asserts_change boolean NOT NULL DEFAULT false,
    evidence       jsonb NOT NULL DEFAULT '[]',
    embedding      vector(${embedding_dim}),
    gate           jsonb,
    verdicts       jsonb,
    PRIMARY KEY (receipt_id, idx)
);
