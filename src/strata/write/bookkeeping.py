"""Access bookkeeping for returned search results: how often search returned a memory and
when it last did, in ``memory_access`` (migration 0021) -- never in ``memories``, whose pages
then change only when a memory does, or is first counted (its foreign key's lock: see
``TOUCH``) -- a read that rewrote them made the next reads' index-only scans visit the heap.
Written off the query path by :class:`strata.search.hybrid.AccessLog`.

Readers of a memory's use (the API's ``access_count``/``last_accessed_at``, decay, the
lifecycle's promotion, export) take it from :func:`count_sql` and :func:`last_sql`."""

TOUCH = """
WITH d AS (
    SELECT * FROM unnest(%(tenants)s::uuid[], %(ids)s::uuid[], %(counts)s::int[],
                         %(ats)s::timestamptz[]) AS d(tenant_id, id, n, at)
),
counted AS (
    -- Memories counted before: only their row here changes. The memory's own row is not
    -- even locked, so a search's bookkeeping writes nothing of memories -- a key-share lock
    -- rewrites the tuple's header, dirties its page and logs it (after a checkpoint, the
    -- whole page). Rows another transaction holds (a delete cascading here, another
    -- process's bookkeeping) are skipped, not waited on: retried on the next flush.
    SELECT a.memory_id FROM memory_access a JOIN d ON a.memory_id = d.id
                                               AND a.tenant_id = d.tenant_id
    ORDER BY a.memory_id FOR UPDATE OF a SKIP LOCKED
),
bumped AS (
    UPDATE memory_access a
    SET access_count = a.access_count + d.n,
        last_accessed_at = GREATEST(a.last_accessed_at, d.at)
    FROM d JOIN counted c ON c.memory_id = d.id
    WHERE a.memory_id = d.id
    RETURNING a.memory_id AS id
),
held AS (
    -- First counts: the memory's key-share lock (the foreign key's check takes it anyway),
    -- in id order, skipping rows another transaction holds: bookkeeping never waits on, or
    -- deadlocks with, a real write, and a memory deleted meanwhile is not found (its row
    -- would outlive it). The foreign key's own check then finds the lock already held.
    SELECT m.id, m.tenant_id FROM memories m JOIN d ON m.tenant_id = d.tenant_id AND m.id = d.id
    WHERE NOT EXISTS (SELECT 1 FROM memory_access a WHERE a.memory_id = d.id)
    ORDER BY m.id FOR KEY SHARE OF m SKIP LOCKED
),
added AS (
    INSERT INTO memory_access AS a (memory_id, tenant_id, access_count, last_accessed_at)
    SELECT d.id, d.tenant_id, d.n, d.at FROM d JOIN held h ON h.id = d.id
                                              AND h.tenant_id = d.tenant_id
    ORDER BY d.id
    ON CONFLICT (memory_id) DO UPDATE  -- counted first by another process since the snapshot
    SET access_count = a.access_count + excluded.access_count,
        last_accessed_at = GREATEST(a.last_accessed_at, excluded.last_accessed_at)
    RETURNING a.memory_id AS id
)
SELECT id FROM bumped UNION ALL SELECT id FROM added
"""


def count_sql(alias: str) -> str:
    """How often search returned the memory ``alias`` (0 when never)."""
    return (f"coalesce((SELECT a.access_count FROM memory_access a"
            f" WHERE a.memory_id = {alias}.id), 0)")


def last_sql(alias: str) -> str:
    """When search last returned the memory ``alias`` (NULL when never)."""
    return f"(SELECT a.last_accessed_at FROM memory_access a WHERE a.memory_id = {alias}.id)"
