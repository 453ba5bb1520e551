-- The lexical key of a memory (issue 15): sha256 of its lexical normal form
-- (strata.write.lexical: lemmas, function words dropped, number words as digits, words
-- sorted), so the write gate finds "I have a peanut allergy" when "I'm allergic to peanuts"
-- is stored, whatever the embedder scores the pair (feature hashing: 0.25).
--
-- Written by the write path's inserts (strata.write.apply, strata.write.imports). Rows
-- written before this migration keep NULL: the normal form needs a lemmatiser SQL does not
-- have, so there is no backfill here. Those rows are still recognised as paraphrases when
-- the embedder brings them to the judge (the rule judge compares normal forms of the text
-- itself); a NULL or stale key only ever misses a twin, it never makes a false one (the gate
-- checks the text again).
ALTER TABLE memories ADD COLUMN lexical_hash bytea;

-- The gate's lookup: active twins in one (tenant, path). Not unique: rows from before this
-- migration, or of different slots, may share a normal form.
CREATE INDEX memories_active_lexical_idx ON memories (tenant_id, path, lexical_hash)
    WHERE status = 'active' AND lexical_hash IS NOT NULL;

-- Like the embedding, the key is derived from the content: history snapshots leave it out,
-- and an update that changes only the key (a recomputation) writes no history row.
CREATE OR REPLACE FUNCTION memory_history_capture() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    -- The embedding, the generated tsvector and the lexical key are derived data: restore
    -- recomputes them.
    INSERT INTO memory_history (tenant_id, memory_id, path, version, operation, row_data,
                                operation_id, cause, actor)
    VALUES (OLD.tenant_id, OLD.id, OLD.path, OLD.version, lower(TG_OP),
            to_jsonb(OLD) - 'embedding' - 'fts' - 'lexical_hash',
            nullif(current_setting('strata.operation_id', true), '')::uuid,
            nullif(current_setting('strata.cause', true), ''),
            nullif(current_setting('strata.actor', true), ''));
    RETURN NULL;
END
$$;

DROP TRIGGER memories_history_update ON memories;

CREATE TRIGGER memories_history_update AFTER UPDATE ON memories
    FOR EACH ROW WHEN (
        OLD.* IS DISTINCT FROM NEW.*
        AND (
            (OLD.access_count IS NOT DISTINCT FROM NEW.access_count
             AND OLD.last_accessed_at IS NOT DISTINCT FROM NEW.last_accessed_at
             AND OLD.lexical_hash IS NOT DISTINCT FROM NEW.lexical_hash)
            OR (to_jsonb(OLD) - 'access_count' - 'last_accessed_at' - 'lexical_hash')
               IS DISTINCT FROM (to_jsonb(NEW) - 'access_count' - 'last_accessed_at' - 'lexical_hash')
        )
    )
    EXECUTE FUNCTION memory_history_capture();
