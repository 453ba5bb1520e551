-- Memory changes as events: a transactional outbox (issue 40).
--
-- Every change to a memory row appends one row to `events` in the transaction that makes
-- it, written by the same trigger that writes its history row (an update or a delete) or by
-- the insert trigger below (a memory born: created, held for review, restored, imported).
-- A rolled-back change leaves neither. An event names the change, never its content: type,
-- memory id, path, version, status, cause, actor, operation and time, and for a supersession
-- the superseding memory's id (`related`). A consumer reads content through the API with its
-- own key, so access rules and forgets apply to what it reads.
--
-- Order. The feed reads `seq > cursor`, so `seq` must be commit order: a reader that has seen
-- seq n must never later see a row below n commit. An identity or sequence value is taken
-- when the row is inserted, and concurrent transactions commit out of that order, so a
-- cursor over `id` skips the row of a slower transaction that took a smaller id. Filtering
-- on the oldest in-flight transaction (pg_snapshot_xmin over a stored xid8) makes the prefix
-- final but orders by transaction id, which is not commit order either: two changes of one
-- memory can come out reversed (a transaction that took its xid first can commit its change
-- of the memory second), and webhooks promise order per memory. So `seq` is a per-tenant
-- counter allocated at commit: a deferred constraint trigger runs once per transaction just
-- before it commits, takes the tenant's `event_heads` row lock and numbers the
-- transaction's events after the head. The lock is held until the commit is complete (and
-- a commit is visible before its locks are released), so the next transaction of that
-- tenant numbers its events only after this one is visible: seq order is commit order, with
-- no gaps and no holes. The lock is held for the instant of the commit only, not while the
-- transaction works, so writers of one tenant do not queue behind each other's work (the
-- audit head already serialises each audited operation's append in the same way).
CREATE TABLE events (
    id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    tenant_id    uuid NOT NULL,
    seq          bigint,  -- set at commit; NULL only while the writing transaction runs
    type         text NOT NULL CHECK (type IN (
                     'created', 'reinforced', 'updated', 'superseded', 'held_for_review',
                     'promoted', 'rejected', 'deleted', 'restored', 'forgotten', 'expired',
                     'derived_retired')),
    memory_id    uuid NOT NULL,
    path         ltree NOT NULL,
    version      integer NOT NULL,
    status       text,  -- the memory's status after the change; NULL when the row is gone
    cause        text,
    actor        text,
    operation_id uuid,
    related      uuid[] NOT NULL DEFAULT '{}',
    history_id   bigint,  -- the history row this change wrote (updates and deletes)
    txid         xid8 NOT NULL DEFAULT pg_current_xact_id(),
    at           timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE UNIQUE INDEX events_seq_key ON events (tenant_id, seq);
CREATE INDEX events_unnumbered_idx ON events (txid) WHERE seq IS NULL;
CREATE INDEX events_at_idx ON events (tenant_id, at, id);

CREATE TABLE event_heads (
    tenant_id uuid PRIMARY KEY REFERENCES tenants (id) ON DELETE CASCADE,
    seq       bigint NOT NULL
);

CREATE FUNCTION events_number() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    t    uuid;
    n    bigint;
    base bigint;
BEGIN
    -- One firing per event row; the first numbers every event of the transaction.
    IF (SELECT seq FROM events WHERE id = NEW.id) IS NOT NULL THEN
        RETURN NULL;
    END IF;
    -- Tenants in a fixed order, so two transactions spanning tenants cannot deadlock here.
    FOR t, n IN
        SELECT tenant_id, count(*) FROM events
        WHERE txid = pg_current_xact_id() AND seq IS NULL
        GROUP BY tenant_id ORDER BY tenant_id
    LOOP
        INSERT INTO event_heads AS h (tenant_id, seq)
        SELECT t, n WHERE EXISTS (SELECT 1 FROM tenants WHERE id = t)
        ON CONFLICT (tenant_id) DO UPDATE SET seq = h.seq + excluded.seq
        RETURNING h.seq - n INTO base;
        IF base IS NULL THEN  -- the tenant was deleted in this transaction
            DELETE FROM events WHERE txid = pg_current_xact_id() AND tenant_id = t;
            CONTINUE;
        END IF;
        UPDATE events e SET seq = base + o.rn
        FROM (SELECT id, row_number() OVER (ORDER BY id) AS rn FROM events
              WHERE txid = pg_current_xact_id() AND seq IS NULL AND tenant_id = t) o
        WHERE e.id = o.id;
    END LOOP;
    RETURN NULL;
END
$$;

CREATE CONSTRAINT TRIGGER events_number AFTER INSERT ON events
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION events_number();

-- What a change was, from the row before and after it and the transaction's cause.
CREATE FUNCTION memory_event_type(op text, o memories, n memories, cause text) RETURNS text
LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE
        WHEN op = 'INSERT' THEN CASE
            WHEN cause = 'memory.restore' THEN 'restored'
            WHEN n.status = 'candidate' THEN 'held_for_review'
            ELSE 'created' END
        WHEN op = 'DELETE' THEN CASE
            WHEN cause = 'memory.forget' THEN 'forgotten'
            WHEN cause LIKE 'lifecycle.%' THEN 'expired'
            ELSE 'deleted' END
        WHEN cause = 'evidence_retired' THEN 'derived_retired'
        WHEN cause = 'memory.restore' THEN 'restored'
        WHEN n.status IS DISTINCT FROM o.status THEN CASE n.status
            WHEN 'superseded' THEN 'superseded'
            WHEN 'rejected' THEN 'rejected'
            WHEN 'archived' THEN 'expired'
            WHEN 'candidate' THEN 'held_for_review'
            WHEN 'active' THEN 'promoted'
            END
        WHEN o.tier = 'short_term' AND n.tier = 'long_term' THEN 'promoted'
        WHEN n.reinforcements > o.reinforcements THEN 'reinforced'
        ELSE 'updated'
    END
$$;

CREATE FUNCTION memory_event_record(op text, o memories, n memories, history bigint)
RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    cause text := nullif(current_setting('strata.cause', true), '');
    r     memories := CASE WHEN op = 'DELETE' THEN o ELSE n END;
BEGIN
    -- A tenant being deleted takes its memories with it: nobody is left to tell.
    PERFORM 1 FROM tenants WHERE id = r.tenant_id;
    IF NOT FOUND THEN
        RETURN;
    END IF;
    INSERT INTO events (tenant_id, type, memory_id, path, version, status, cause, actor,
                        operation_id, related, history_id)
    VALUES (r.tenant_id, memory_event_type(op, o, n, cause), r.id, r.path, r.version,
            CASE WHEN op = 'DELETE' THEN NULL ELSE n.status::text END, cause,
            nullif(current_setting('strata.actor', true), ''),
            nullif(current_setting('strata.operation_id', true), '')::uuid,
            CASE WHEN op = 'UPDATE' AND n.status = 'superseded' THEN ARRAY(
                SELECT source_id FROM memory_relationships
                WHERE target_id = r.id AND type = 'SUPERSEDES' ORDER BY created_at, source_id)
            ELSE '{}' END,
            history);
END
$$;

-- The history trigger writes the change's event beside its history row.
CREATE OR REPLACE FUNCTION memory_history_capture() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    history bigint;
BEGIN
    -- The embedding and the generated tsvector are derived data: restore recomputes them.
    -- The access columns are no longer the memory's (0021).
    INSERT INTO memory_history (tenant_id, memory_id, path, version, operation, row_data,
                                operation_id, cause, actor)
    VALUES (OLD.tenant_id, OLD.id, OLD.path, OLD.version, lower(TG_OP),
            to_jsonb(OLD) - 'embedding' - 'fts' - 'access_count' - 'last_accessed_at',
            nullif(current_setting('strata.operation_id', true), '')::uuid,
            nullif(current_setting('strata.cause', true), ''),
            nullif(current_setting('strata.actor', true), ''))
    RETURNING id INTO history;
    PERFORM memory_event_record(TG_OP, OLD, CASE WHEN TG_OP = 'UPDATE' THEN NEW END, history);
    RETURN NULL;
END
$$;

CREATE FUNCTION memory_event_insert() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM memory_event_record('INSERT', NULL, NEW, NULL);
    RETURN NULL;
END
$$;

CREATE TRIGGER memories_event_insert AFTER INSERT ON memories
    FOR EACH ROW EXECUTE FUNCTION memory_event_insert();

-- A supersession writes the old memory's status first and the SUPERSEDES edge after it
-- (strata.write.apply.retire): the edge names the superseding memory on the event the
-- transaction has just written, before anyone can read it.
CREATE FUNCTION memory_event_superseded_by() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    UPDATE events SET related = related || NEW.source_id
    WHERE txid = pg_current_xact_id() AND seq IS NULL AND memory_id = NEW.target_id
      AND type = 'superseded' AND NOT NEW.source_id = ANY(related);
    RETURN NULL;
END
$$;

CREATE TRIGGER memory_relationships_event AFTER INSERT ON memory_relationships
    FOR EACH ROW WHEN (NEW.type = 'SUPERSEDES') EXECUTE FUNCTION memory_event_superseded_by();
