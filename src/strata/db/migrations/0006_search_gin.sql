-- The full-text arm reads memories_fts_idx on every search. With GIN's default fastupdate,
-- new rows wait in a pending list (up to gin_pending_list_limit, 4 MB) that every search
-- scans linearly until a vacuum merges it ("a large pending list will slow searches
-- significantly": PostgreSQL docs, GIN fast update technique). Searches outnumber writes
-- here, and a write already pays for the HNSW insert, so entries go straight into the
-- index: search latency stays flat between vacuums.
ALTER INDEX memories_fts_idx SET (fastupdate = off);
SELECT gin_clean_pending_list('memories_fts_idx'::regclass);
