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
-- Expand, then contract, so a deploy has no window of errors: migrations run before the
-- functions switch to this version's code, and until they do the old code still reads and
-- writes memories.access_count / last_accessed_at. So the columns stay for now, unread by
-- this version (their values freeze; what the old code counts in the window is lost, the
-- counts being advisory), and a migration of a later release drops them. History snapshots
-- leave them out from here on (memory_history_capture), so no stale count shows there.
CREATE TABLE memory_access (
    memory_id        uuid PRIMARY KEY REFERENCES memories (id) ON DELETE CASCADE,
    tenant_id        uuid NOT NULL,
    access_count     integer NOT NULL CHECK (access_count > 0),
    last_accessed_at timestamptz NOT NULL
);

INSERT INTO memory_access (memory_id, tenant_id, access_count, last_accessed_at)
SELECT id, tenant_id, access_count, coalesce(last_accessed_at, updated_at)
FROM memories WHERE access_count > 0;

COMMENT ON COLUMN memories.access_count IS
    'Unused since migration 0021 (memory_access); dropped by a later migration.';
COMMENT ON COLUMN memories.last_accessed_at IS
    'Unused since migration 0021 (memory_access); dropped by a later migration.';

CREATE OR REPLACE FUNCTION memory_history_capture() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    -- The embedding and the generated tsvector are derived data: restore recomputes them.
    -- The access columns are no longer the memory's (0021).
    INSERT INTO memory_history (tenant_id, memory_id, path, version, operation, row_data,
                                operation_id, cause, actor)
    VALUES (OLD.tenant_id, OLD.id, OLD.path, OLD.version, lower(TG_OP),
            to_jsonb(OLD) - 'embedding' - 'fts' - 'access_count' - 'last_accessed_at',
            nullif(current_setting('strata.operation_id', true), '')::uuid,
            nullif(current_setting('strata.cause', true), ''),
            nullif(current_setting('strata.actor', true), ''));
    RETURN NULL;
END
$$;
