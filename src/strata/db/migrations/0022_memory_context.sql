-- A memory's context (issue 17): text that situates it -- the message it answers, the
-- passage it was taken from -- found by the text arm with the content, never part of the
-- content (its hash, its slot's value, its duplicate check and its embedding are the
-- content's alone). LoCoMo's questions are often answered by a reply ("5 years already!")
-- whose words are in the question before it ("How long have you been married?").
--
-- No table rewrite on any step, so none locks a large table for longer than a catalogue
-- change, except building the new text index (see below):
-- 1. context is a new nullable column without a default (a catalogue change).
-- 2. fts stops being a generated column and is kept by a trigger from content and context
--    (DROP EXPRESSION keeps every stored value: with no context yet, each is what the
--    trigger computes). PostgreSQL 16 cannot change a generation expression in place, and
--    dropping and re-adding the column would rewrite the table and rebuild every index.
-- 3. The tenant-keyed text index (0007) is built again, from fts (so over content and
--    context), under the same name. CREATE INDEX holds off writes (not reads) while it
--    builds: on a large table, run this file's CREATE FUNCTION strata_keyed_lexemes and its
--    CREATE INDEX (with CONCURRENTLY) first, outside the migration; the migration then
--    finds both and only swaps the index names.
ALTER TABLE memories ADD COLUMN context text;

ALTER TABLE memories ALTER COLUMN fts DROP EXPRESSION;

-- What the text arm reads of a memory: its content, then its context.
CREATE FUNCTION strata_memory_text(content text, context text) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT CASE WHEN context IS NULL THEN content ELSE content || E'\n' || context END
$$;

CREATE FUNCTION memories_fts() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    NEW.fts := to_tsvector('english', strata_memory_text(NEW.content, NEW.context));
    RETURN NEW;
END
$$;

CREATE TRIGGER memories_fts BEFORE INSERT OR UPDATE OF content, context, fts ON memories
    FOR EACH ROW EXECUTE FUNCTION memories_fts();

-- The tenant-keyed lexemes, now read from fts (which holds content and context) rather than
-- recomputed from the text: each lexeme of fts prefixed with the tenant id, the same set
-- strata_tenant_lexemes (0007) made of the content. Where a plan evaluates it per row (a
-- bitmap scan's recheck, or a scan of a small table whose rows mostly match: the speakers'
-- names of a conversation are in every exchange a context quotes), it costs a few
-- microseconds, not a parse and stemming of the text: ~55 us a row once a context doubles
-- the text. LoCoMo conversation 26, observations with context, alone in its database:
-- keyword p50 / p95 10.6 / 24.6 ms from the text, 5.2 / 7.5 ms from fts. Priced as 0014
-- priced the function it replaces, so no plan recomputes it for a large table's every row.
CREATE OR REPLACE FUNCTION strata_keyed_lexemes(tenant uuid, fts tsvector) RETURNS tsvector
LANGUAGE sql IMMUTABLE PARALLEL SAFE STRICT COST 10000 AS $$
    SELECT array_to_tsvector(ARRAY(
        SELECT tenant::text || ':' || l FROM unnest(tsvector_to_array(fts)) AS l))
$$;

CREATE INDEX IF NOT EXISTS memories_tenant_text_ctx_idx ON memories
    USING gin (strata_keyed_lexemes(tenant_id, fts)) WITH (fastupdate = off);
DROP INDEX memories_tenant_text_idx;
ALTER INDEX memories_tenant_text_ctx_idx RENAME TO memories_tenant_text_idx;
DROP FUNCTION strata_tenant_lexemes(uuid, text);
