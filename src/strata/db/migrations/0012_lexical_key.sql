-- The lexical key of a memory (issue 15): sha256 of its lexical normal form
-- (strata.write.lexical: lemmas, function words dropped, number words as digits, words
-- sorted), so the write gate finds "I have a peanut allergy" when "I'm allergic to peanuts"
-- is stored, whatever the embedder scores the pair (feature hashing: 0.25, far below the
-- band a judge is shown).
--
-- A table beside memories, not a column of it: the key is derived data like the embedding,
-- so it stays out of history snapshots and exports, and goes with its memory (forget and
-- delete remove the row, and the key with it). Written in the statement that inserts the
-- memory (strata.write.apply, strata.write.imports).
--
-- Memories written before this migration have no key: the normal form needs a lemmatiser
-- SQL does not have, so there is no backfill here. They are still recognised as paraphrases
-- when the embedder brings them to the judge (the rule judge compares the normal forms of
-- the texts themselves). A missing or stale key (an edit changes the content, not its key)
-- only ever misses a twin, never makes a false one: the gate checks the text again.
CREATE TABLE memory_lexical_keys (
    memory_id    uuid PRIMARY KEY REFERENCES memories (id) ON DELETE CASCADE,
    tenant_id    uuid NOT NULL,
    lexical_hash bytea NOT NULL
);

-- The gate's lookup: a tenant's memories with this key (then, in memories, the active ones
-- of the candidate's path).
CREATE INDEX memory_lexical_keys_lookup_idx ON memory_lexical_keys (tenant_id, lexical_hash);
