-- The write path's guards in the schema: in one (tenant, path) at most one active memory per
-- canonical value and at most one active holder per slot. The write path serialises writers
-- of one value or one slot with transaction-scoped advisory locks (strata.write.locks), so
-- these indexes never fire in normal operation; they are the backstop that turns a missed
-- lock into a retried transaction instead of a second active holder.
--
-- Rows written before this migration may break the rule (concurrent writers raced). They are
-- repaired first: the copy stated last stays active, the others become superseded with a
-- SUPERSEDES edge from the one kept, and the history trigger records the change under the
-- cause below.
SELECT set_config('strata.cause', 'migration.0009_one_active_holder', true),
       set_config('strata.actor', 'system:migration', true);

-- When the statement was made (message time or request time): the age guard compares it.
-- NULL on rows written before this migration; readers fall back to recorded_at.
ALTER TABLE memories ADD COLUMN asserted_at timestamptz;

CREATE TEMPORARY TABLE _strata_repair ON COMMIT DROP AS
WITH ranked AS (
    SELECT id, tenant_id,
           first_value(id) OVER w AS keep,
           row_number() OVER w AS n
    FROM memories WHERE status = 'active'
    WINDOW w AS (PARTITION BY tenant_id, path, value_hash
                 ORDER BY recorded_at DESC, created_at DESC, id DESC)
), by_slot AS (
    SELECT id, tenant_id,
           first_value(id) OVER w AS keep,
           row_number() OVER w AS n
    FROM memories WHERE status = 'active' AND slot IS NOT NULL
      AND id NOT IN (SELECT id FROM ranked WHERE n > 1)
    WINDOW w AS (PARTITION BY tenant_id, path, slot
                 ORDER BY lower(valid) DESC, recorded_at DESC, created_at DESC, id DESC)
)
SELECT id, tenant_id, keep, 'duplicate active copy of the same value' AS reason
FROM ranked WHERE n > 1
UNION ALL
SELECT id, tenant_id, keep, 'second active holder of one slot' FROM by_slot WHERE n > 1;

UPDATE memories m
SET status = 'superseded', version = m.version + 1, updated_at = now(),
    valid = tstzrange(lower(m.valid), GREATEST(lower(m.valid) + interval '1 microsecond', now()))
FROM _strata_repair r WHERE m.id = r.id;

INSERT INTO memory_relationships (tenant_id, source_id, target_id, type, confidence, reason,
                                  decided_by)
SELECT tenant_id, keep, id, 'SUPERSEDES', 1.0, reason || ' (repaired by migration 0009)',
       'migration'
FROM _strata_repair
ON CONFLICT (source_id, target_id, type) DO NOTHING;

CREATE UNIQUE INDEX memories_active_value_key ON memories (tenant_id, path, value_hash)
    WHERE status = 'active';
CREATE UNIQUE INDEX memories_active_slot_key ON memories (tenant_id, path, slot)
    WHERE status = 'active' AND slot IS NOT NULL;

-- A candidate about a state that has already ended ("I lived in Munich in 2024") carries
-- where its validity ends, so the age guard can keep it as history.
ALTER TABLE ingest_candidates ADD COLUMN valid_to timestamptz;
