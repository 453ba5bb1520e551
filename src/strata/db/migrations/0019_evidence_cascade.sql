-- Inferences that stay honest (issue 19): a memory derived from others (a reflection's
-- DERIVED_FROM edges, a consolidation's CONSOLIDATES edges) is only as good as its evidence.
-- Every retirement of a memory -- superseded, rejected, deleted (and so forgotten, which
-- deletes) -- passes through this table's rows, whichever entry point made it (ingest,
-- direct create, PATCH, review, restore, forget, delete, lifecycle), so the cascade lives
-- here, in the same transaction as the retirement, and no entry point can skip it.
--
-- What happens to a live (active or candidate) memory derived from the retired one:
-- * when none of its other evidence still holds, it is retired: status superseded, its
--   validity closed now (nothing replaces it, so no SUPERSEDES edge and no tombstone: the
--   same inference from new evidence may be drawn again);
-- * when other evidence still holds (a DERIVED_FROM target still active; a CONSOLIDATES
--   target still active or superseded, as a consolidation leaves its originals), it is
--   flagged for review: status candidate, so a person promotes or rejects it.
-- Either way the history row of that change carries the cause 'evidence_retired'. A
-- forgotten memory's derived memories are erased by forget itself
-- (strata.write.changes.forget): this trigger has retired them first.
--
-- Archival (decay, lifecycle) is not a retirement here: an archived memory went unused, it
-- did not stop being true. A consolidation supersedes its originals *before* it adds its
-- CONSOLIDATES edges (strata.write.derive), so its own supersession does not retire it.
CREATE FUNCTION memories_evidence_cascade() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    prior_cause text := current_setting('strata.cause', true);
    derived record;
    holds boolean;
BEGIN
    FOR derived IN
        SELECT m.id, r.type
        FROM memory_relationships r
        JOIN memories m ON m.tenant_id = r.tenant_id AND m.id = r.source_id
        WHERE r.tenant_id = OLD.tenant_id AND r.target_id = OLD.id
          AND r.type IN ('DERIVED_FROM', 'CONSOLIDATES')
          AND m.status IN ('active', 'candidate')
        ORDER BY m.id
        FOR UPDATE OF m
    LOOP
        SELECT EXISTS (
            SELECT 1 FROM memory_relationships r
            JOIN memories e ON e.tenant_id = r.tenant_id AND e.id = r.target_id
            WHERE r.tenant_id = OLD.tenant_id AND r.source_id = derived.id
              AND r.type = derived.type AND r.target_id <> OLD.id
              AND (e.status = 'active'
                   OR (r.type = 'CONSOLIDATES' AND e.status = 'superseded'))
        ) INTO holds;
        PERFORM set_config('strata.cause', 'evidence_retired', true);
        IF holds THEN
            UPDATE memories SET status = 'candidate', version = version + 1, updated_at = now()
            WHERE id = derived.id AND tenant_id = OLD.tenant_id AND status = 'active';
        ELSE
            UPDATE memories SET status = 'superseded', version = version + 1, updated_at = now(),
                valid = tstzrange(lower(valid),
                                  GREATEST(lower(valid) + interval '1 microsecond', now()))
            WHERE id = derived.id AND tenant_id = OLD.tenant_id;
        END IF;
        PERFORM set_config('strata.cause', COALESCE(prior_cause, ''), true);
    END LOOP;
    RETURN NULL;
END
$$;

CREATE TRIGGER memories_evidence_retired AFTER UPDATE OF status ON memories
    FOR EACH ROW
    WHEN (NEW.status IN ('superseded', 'rejected') AND OLD.status IS DISTINCT FROM NEW.status)
    EXECUTE FUNCTION memories_evidence_cascade();
CREATE TRIGGER memories_evidence_deleted AFTER DELETE ON memories
    FOR EACH ROW EXECUTE FUNCTION memories_evidence_cascade();

-- The cascade looks edges up by target and type.
CREATE INDEX memory_relationships_derived_idx ON memory_relationships (target_id, type)
    WHERE type IN ('DERIVED_FROM', 'CONSOLIDATES');
