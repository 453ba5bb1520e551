"""Access bookkeeping for returned search results: how often search returned a memory and
when it last did, in ``memory_access`` (migration 0021) -- never in ``memories``, whose pages
then change only when a memory does (a read that rewrote them made the next reads' index-only
scans visit the heap). Written off the query path by :class:`strata.search.AccessLog`.

Readers of a memory's use (the API's ``access_count``/``last_accessed_at``, decay, the
lifecycle's promotion, export) take it from :func:`count_sql` and :func:`last_sql`."""

TOUCH = """
WITH d AS (
    SELECT * FROM unnest(%(tenants)s::uuid[], %(ids)s::uuid[], %(counts)s::int[],
                         %(ats)s::timestamptz[]) AS d(tenant_id, id, n, at)
),
held AS (
    -- The memories' key-share locks, in id order, skipping rows another transaction holds:
    -- bookkeeping never waits on, or deadlocks with, a real write, and a memory deleted
    -- meanwhile is not found (its row would outlive it). The foreign key's own check then
    -- finds the lock already held.
    SELECT m.id, m.tenant_id FROM memories m JOIN d ON m.tenant_id = d.tenant_id AND m.id = d.id
    ORDER BY m.id FOR KEY SHARE OF m SKIP LOCKED
)
INSERT INTO memory_access AS a (memory_id, tenant_id, access_count, last_accessed_at)
SELECT d.id, d.tenant_id, d.n, d.at FROM d JOIN held h ON h.id = d.id AND h.tenant_id = d.tenant_id
ORDER BY d.id
ON CONFLICT (memory_id) DO UPDATE
SET access_count = a.access_count + excluded.access_count,
    last_accessed_at = GREATEST(a.last_accessed_at, excluded.last_accessed_at)
RETURNING a.memory_id AS id
"""


def count_sql(alias: str) -> str:
    """How often search returned the memory ``alias`` (0 when never)."""
    return (f"coalesce((SELECT a.access_count FROM memory_access a"
            f" WHERE a.memory_id = {alias}.id), 0)")


def last_sql(alias: str) -> str:
    """When search last returned the memory ``alias`` (NULL when never)."""
    return f"(SELECT a.last_accessed_at FROM memory_access a WHERE a.memory_id = {alias}.id)"
