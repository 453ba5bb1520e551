-- A derived memory rests on what its evidence *said* when it was drawn (0019 retires it when
-- its evidence is retired). An edit can change what an evidence memory says without retiring
-- it: a PATCH of its content keeps the memory's id and gives it a new value (a new value
-- hash; the value replaced is tombstoned as a correction). The inference drawn from the old
-- value is then unchecked against the new one, so a live derived memory resting on it is
-- flagged for review: an active one becomes a candidate (a person promotes or rejects it),
-- its history row caused by 'evidence_changed', in the transaction of the edit, whichever
-- entry point made it. A candidate stays a candidate. Nothing is retired: the evidence still
-- holds, it says something else now.
--
-- Edits that keep the value (importance, tags, meta, a path move) change nothing here, nor
-- do changes of status (0019's cascade), nor a restore that brings back the value a memory
-- had when a derivation was drawn from it -- that is still a change of value, and flagged.
CREATE FUNCTION memories_evidence_changed() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    prior_cause text := current_setting('strata.cause', true);
BEGIN
    PERFORM set_config('strata.cause', 'evidence_changed', true);
    UPDATE memories m SET status = 'candidate', version = m.version + 1, updated_at = now()
    FROM memory_relationships r
    WHERE r.tenant_id = OLD.tenant_id AND r.target_id = OLD.id
      AND r.type IN ('DERIVED_FROM', 'CONSOLIDATES')
      AND m.tenant_id = r.tenant_id AND m.id = r.source_id AND m.status = 'active';
    PERFORM set_config('strata.cause', COALESCE(prior_cause, ''), true);
    RETURN NULL;
END
$$;

CREATE TRIGGER memories_evidence_changed AFTER UPDATE OF value_hash ON memories
    FOR EACH ROW
    WHEN (OLD.value_hash IS DISTINCT FROM NEW.value_hash
          AND NEW.status IN ('active', 'candidate', 'archived'))
    EXECUTE FUNCTION memories_evidence_changed();
