"""Access bookkeeping (``access_count``, ``last_accessed_at``) for returned search results:
the one change to memories that search makes, written off the query path by
:class:`strata.search.AccessLog`. It touches no content, status, value or validity."""

TOUCH = """
WITH d AS (
    SELECT * FROM unnest(%(tenants)s::uuid[], %(ids)s::uuid[], %(counts)s::int[],
                         %(ats)s::timestamptz[]) AS d(tenant_id, id, n, at)
),
locked AS (
    -- Lock in id order and skip rows another transaction holds: bookkeeping never waits
    -- on, or deadlocks with, a real write.
    SELECT m.id FROM memories m JOIN d ON m.tenant_id = d.tenant_id AND m.id = d.id
    ORDER BY m.id FOR NO KEY UPDATE OF m SKIP LOCKED
)
UPDATE memories m
SET access_count = m.access_count + d.n,
    last_accessed_at = GREATEST(m.last_accessed_at, d.at)
FROM d
WHERE m.id = d.id AND m.tenant_id = d.tenant_id AND m.id IN (SELECT id FROM locked)
RETURNING m.id
"""
