-- Search's access bookkeeping (how often a memory was returned, and when last) moves out of
-- `memories` into a table of its own. Every search result updated its memory's row, so a
-- tenant that is read often had the pages of its memories rewritten all the time: each update
-- clears the page's all-visible bit until the next vacuum, and the index-only scans search
-- itself runs (BM25's corpus count over the tenant's readable rows) then read the heap for
-- most rows. Measured on eval/bench_search.py's 10k-row tenant: 200 searches with the
-- bookkeeping on raised the next searches' p50 from 8.5 to 10.1 ms (the corpus count from
-- 0.4 to 1.7-2.3 ms). Now reads write only here; `memories` changes when a memory does.
--
-- One row per memory that search has returned; none is a count of 0. The key is the memory:
-- deleting (forgetting) a memory deletes its row. The writer (strata.write.bookkeeping) holds
-- the memory's key-share lock while it upserts, skipping memories a writer holds, so it never
-- waits on a real write and a deleted memory never keeps a row.
--
-- On Aurora: the table is new and the columns' drop is a catalog change (no rewrite); the
-- code of this version reads and writes only the new table, so deploy it with the migration
-- (the deploy's custom resource runs migrations before the functions' new versions serve).
CREATE TABLE memory_access (
    memory_id        uuid PRIMARY KEY REFERENCES memories (id) ON DELETE CASCADE,
    tenant_id        uuid NOT NULL,
    access_count     integer NOT NULL CHECK (access_count > 0),
    last_accessed_at timestamptz NOT NULL
);

INSERT INTO memory_access (memory_id, tenant_id, access_count, last_accessed_at)
SELECT id, tenant_id, access_count, coalesce(last_accessed_at, updated_at)
FROM memories WHERE access_count > 0;

-- 0004 kept bookkeeping updates out of memory_history by comparing those two columns; with
-- them gone, every update of a row is a change again.
DROP TRIGGER memories_history_update ON memories;
CREATE TRIGGER memories_history_update AFTER UPDATE ON memories
    FOR EACH ROW WHEN (OLD.* IS DISTINCT FROM NEW.*) EXECUTE FUNCTION memory_history_capture();

ALTER TABLE memories DROP COLUMN access_count, DROP COLUMN last_accessed_at;
