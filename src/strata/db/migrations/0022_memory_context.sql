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
-- 3. The tenant-keyed text index (0007) is built again over content and context, under the
--    same name. CREATE INDEX holds off writes (not reads) while it builds: on a large table
--    build it first, CONCURRENTLY and outside this migration, under the name
--    memories_tenant_text_ctx_idx (the statement below, with CONCURRENTLY); this migration
--    then finds it and only swaps the names.
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

CREATE INDEX IF NOT EXISTS memories_tenant_text_ctx_idx ON memories
    USING gin (strata_tenant_lexemes(tenant_id, strata_memory_text(content, context)))
    WITH (fastupdate = off);
DROP INDEX memories_tenant_text_idx;
ALTER INDEX memories_tenant_text_ctx_idx RENAME TO memories_tenant_text_idx;
