-- The text arm reads memories.fts (BM25's term frequencies and lengths) for every candidate.
-- 1. fts is stored inline (STORAGE MAIN, as 0008 did for the embedding): a row with its
--    384-d vector is over the 2 kB TOAST threshold, so the toaster had moved fts out of line
--    and every read of it was a TOAST fetch (LoCoMo conversation 26 in turns mode, 419 rows:
--    397 fts values out of line; the text arm 10.4 -> 7.0 ms). Rows written from now on are
--    stored this way; older rows move as they are rewritten (no table rewrite here: on a
--    large table that would lock it for the length of a rewrite).
-- 2. The planner's price of strata_tenant_lexemes() per row. It runs to_tsvector over the
--    content (~25 us a row) but was priced as any SQL function (COST 100), so for a tenant of
--    a few hundred rows the planner scanned the tenant's rows and recomputed each one's
--    lexemes instead of using the tenant-keyed GIN index: ~12 ms for 419 rows against
--    0.13 ms through the index. The function is unchanged, so its index stays valid.
ALTER TABLE memories ALTER COLUMN fts SET STORAGE MAIN;
ALTER FUNCTION strata_tenant_lexemes(uuid, text) COST 10000;
