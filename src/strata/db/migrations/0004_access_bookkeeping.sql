-- Access bookkeeping (search results: access_count + 1, last_accessed_at) is not a change
-- of the memory: it must not write a history row. The update trigger keeps its condition
-- (something changed) and adds one: something other than those two columns changed. The
-- jsonb comparison runs only when an access column differs, so every other update costs
-- what it did.

DROP TRIGGER memories_history_update ON memories;

CREATE TRIGGER memories_history_update AFTER UPDATE ON memories
    FOR EACH ROW WHEN (
        OLD.* IS DISTINCT FROM NEW.*
        AND (
            (OLD.access_count IS NOT DISTINCT FROM NEW.access_count
             AND OLD.last_accessed_at IS NOT DISTINCT FROM NEW.last_accessed_at)
            OR (to_jsonb(OLD) - 'access_count' - 'last_accessed_at')
               IS DISTINCT FROM (to_jsonb(NEW) - 'access_count' - 'last_accessed_at')
        )
    )
    EXECUTE FUNCTION memory_history_capture();
