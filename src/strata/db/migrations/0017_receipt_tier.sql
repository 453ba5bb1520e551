-- The tier an ingest's memories land in (issue 19): a request may ask for short-term memories
-- with a time to live; the receipt carries it to the persist step, which may run later in
-- another process (Step Functions). Existing receipts: long-term, as they were written.
ALTER TABLE ingest_receipts
    ADD COLUMN tier memory_tier NOT NULL DEFAULT 'long_term',
    ADD COLUMN ttl_s integer CONSTRAINT ingest_receipts_ttl_check
        CHECK ((tier = 'short_term') = (ttl_s IS NOT NULL) AND (ttl_s IS NULL OR ttl_s > 0));
