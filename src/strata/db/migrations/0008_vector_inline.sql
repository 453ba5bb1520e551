-- Keep embeddings in the row. pgvector's vector type defaults to EXTERNAL storage, so a row
-- over the ~2 kB TOAST threshold (a 384-d vector alone is 1.5 kB, plus content, tsvector and
-- meta) has its vector moved out of line: every exact distance then reads the TOAST index
-- and chunk (measured: 32,636 buffer reads to rank 8,033 rows exactly, four per vector,
-- where the rows themselves sit on 877 pages). MAIN keeps the vector inline unless the row
-- would not fit a page at all (over ~2,000 dimensions), and vectors do not compress anyway.
-- Metadata only: rows written from now on are stored inline; existing rows move when they
-- are next updated (or at once with VACUUM FULL / pg_repack, which rewrite the table).
ALTER TABLE memories ALTER COLUMN embedding SET STORAGE MAIN;
