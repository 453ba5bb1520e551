-- strata core schema. Runs on PostgreSQL 16+ with pgvector 0.7+ (Aurora): nothing newer.
-- ${embedding_dim} is substituted by the migration runner from settings (an integer).

CREATE EXTENSION IF NOT EXISTS ltree;
CREATE EXTENSION IF NOT EXISTS vector;

CREATE TYPE access_level AS ENUM ('read', 'write', 'owner');  -- ordered: LEAST() clamps
CREATE TYPE memory_kind AS ENUM (
    'fact', 'preference', 'event', 'instruction', 'strategy',
    'assumption', 'failure', 'reflection', 'summary');
CREATE TYPE memory_status AS ENUM ('candidate', 'active', 'superseded', 'archived', 'rejected');
CREATE TYPE memory_origin AS ENUM ('user_stated', 'llm_derived', 'imported', 'system');
CREATE TYPE memory_tier AS ENUM ('short_term', 'long_term');
CREATE TYPE relationship_type AS ENUM (
    'SUPERSEDES', 'REFINES', 'COEXISTS', 'CONTRADICTS', 'CONSOLIDATES', 'DERIVED_FROM', 'DUPLICATE_OF');
CREATE TYPE tombstone_reason AS ENUM ('superseded', 'rejected', 'forgotten');

-- Facts about the schema that code checks at startup (e.g. the embedding dimension).
CREATE TABLE strata_meta (
    key   text PRIMARY KEY,
    value text NOT NULL
);
INSERT INTO strata_meta (key, value) VALUES ('embedding_dim', '${embedding_dim}');

------------------------------------------------------------------------------------------
-- Access
------------------------------------------------------------------------------------------
CREATE TABLE tenants (
    id         uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    name       text NOT NULL CONSTRAINT tenants_name_key UNIQUE
               CONSTRAINT tenants_name_check CHECK (name ~ '^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$'),
    created_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE principals (
    id          uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    tenant_id   uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    name        text NOT NULL CONSTRAINT principals_name_check CHECK (length(name) BETWEEN 1 AND 200),
    kind        text NOT NULL CONSTRAINT principals_kind_check CHECK (kind IN ('user', 'agent')),
    created_at  timestamptz NOT NULL DEFAULT now(),
    disabled_at timestamptz,
    CONSTRAINT principals_tenant_name_key UNIQUE (tenant_id, name),
    UNIQUE (tenant_id, id)
);

-- A grant on a path covers its subtree; the empty path is the tenant root.
CREATE TABLE grants (
    id           uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    tenant_id    uuid NOT NULL,
    principal_id uuid NOT NULL,
    path         ltree NOT NULL,
    level        access_level NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now(),
    created_by   uuid,
    FOREIGN KEY (tenant_id, principal_id) REFERENCES principals (tenant_id, id) ON DELETE CASCADE,
    CONSTRAINT grants_principal_path_key UNIQUE (principal_id, path)
);

-- ceiling: NULL = the holder's access; else a JSON array of {"path", "level"} the key is
-- clamped to. Only the sha256 of the secret is stored; prefix is the public lookup handle.
CREATE TABLE api_keys (
    id           uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    tenant_id    uuid NOT NULL,
    principal_id uuid NOT NULL,
    prefix       text NOT NULL CONSTRAINT api_keys_prefix_key UNIQUE,
    secret_hash  bytea NOT NULL,
    name         text,
    ceiling      jsonb CONSTRAINT api_keys_ceiling_check CHECK (ceiling IS NULL OR jsonb_typeof(ceiling) = 'array'),
    default_path ltree,
    created_at   timestamptz NOT NULL DEFAULT now(),
    created_by   uuid,
    expires_at   timestamptz,
    revoked_at   timestamptz,
    last_used_at timestamptz,
    FOREIGN KEY (tenant_id, principal_id) REFERENCES principals (tenant_id, id) ON DELETE CASCADE
);
CREATE INDEX api_keys_principal_idx ON api_keys (tenant_id, principal_id);

-- Effective access of a key: the holder's grants, clamped by the key's ceiling at the deeper
-- path with the lesser level (least(key, member), in both directions). A ceiling that meets
-- no grant contributes nothing, so an inconsistent key has no access rather than an error.
CREATE FUNCTION effective_access(p_key_id uuid)
RETURNS TABLE (path ltree, level access_level)
LANGUAGE sql STABLE AS $$
    WITH k AS (
        SELECT k.tenant_id, k.principal_id, k.ceiling
        FROM api_keys k JOIN principals p ON p.id = k.principal_id AND p.tenant_id = k.tenant_id
        WHERE k.id = p_key_id AND k.revoked_at IS NULL
          AND (k.expires_at IS NULL OR k.expires_at > now()) AND p.disabled_at IS NULL
    ), g AS (
        SELECT g.path, g.level FROM grants g JOIN k USING (tenant_id, principal_id)
    ), c AS (
        SELECT (e->>'path')::ltree AS path, (e->>'level')::access_level AS level
        FROM k, jsonb_array_elements(k.ceiling) e
    )
    SELECT g.path, g.level FROM g, k WHERE k.ceiling IS NULL
    UNION
    SELECT CASE WHEN c.path <@ g.path THEN c.path ELSE g.path END, LEAST(g.level, c.level)
    FROM g JOIN c ON c.path <@ g.path OR g.path <@ c.path
$$;

------------------------------------------------------------------------------------------
-- Memories
------------------------------------------------------------------------------------------
CREATE TABLE memories (
    id               uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    tenant_id        uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    path             ltree NOT NULL CONSTRAINT memories_path_check CHECK (nlevel(path) >= 1),
    name             text CONSTRAINT memories_name_check CHECK (name IS NULL OR length(name) BETWEEN 1 AND 200),
    content          text NOT NULL CONSTRAINT memories_content_check CHECK (length(btrim(content)) > 0),
    canonical        text NOT NULL,
    value_hash       bytea NOT NULL,
    kind             memory_kind NOT NULL DEFAULT 'fact',
    slot             text,
    value            text,
    status           memory_status NOT NULL DEFAULT 'active',
    origin           memory_origin NOT NULL DEFAULT 'user_stated',
    importance       real NOT NULL DEFAULT 0.5 CONSTRAINT memories_importance_check CHECK (importance BETWEEN 0 AND 1),
    confidence       real NOT NULL DEFAULT 1.0 CONSTRAINT memories_confidence_check CHECK (confidence BETWEEN 0 AND 1),
    pinned           boolean NOT NULL DEFAULT false,
    access_count     integer NOT NULL DEFAULT 0,
    last_accessed_at timestamptz,
    reinforcements   integer NOT NULL DEFAULT 0,
    tier             memory_tier NOT NULL DEFAULT 'long_term',
    expires_at       timestamptz,
    valid            tstzrange NOT NULL DEFAULT tstzrange(now(), NULL)
                     CONSTRAINT memories_valid_check CHECK (NOT isempty(valid) AND NOT lower_inf(valid)),
    recorded_at      timestamptz NOT NULL DEFAULT now(),
    embedding        vector(${embedding_dim}),
    embedding_model  text,
    fts              tsvector GENERATED ALWAYS AS (to_tsvector('english', content)) STORED,
    version          integer NOT NULL DEFAULT 1,
    evidence         jsonb NOT NULL DEFAULT '[]'
                     CONSTRAINT memories_evidence_check CHECK (jsonb_typeof(evidence) = 'array'),
    meta             jsonb NOT NULL DEFAULT '{}'
                     CONSTRAINT memories_meta_check CHECK (jsonb_typeof(meta) = 'object'),
    tags             text[] NOT NULL DEFAULT '{}',
    created_at       timestamptz NOT NULL DEFAULT now(),
    updated_at       timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT memories_short_term_check CHECK (tier = 'long_term' OR expires_at IS NOT NULL),
    CONSTRAINT memories_embedding_model_check CHECK ((embedding IS NULL) = (embedding_model IS NULL))
);
CREATE INDEX memories_scope_idx ON memories (tenant_id, status, created_at, id);
CREATE INDEX memories_path_idx ON memories USING gist (path);
CREATE INDEX memories_value_hash_idx ON memories (tenant_id, value_hash);
CREATE INDEX memories_slot_idx ON memories (tenant_id, slot) WHERE slot IS NOT NULL;
CREATE UNIQUE INDEX memories_name_key ON memories (tenant_id, path, name) WHERE name IS NOT NULL;
CREATE INDEX memories_fts_idx ON memories USING gin (fts);
CREATE INDEX memories_tags_idx ON memories USING gin (tags);
CREATE INDEX memories_embedding_idx ON memories USING hnsw (embedding vector_cosine_ops);

-- Edges reference memories without a foreign key on purpose: deleting a memory must not
-- erase why another memory is current, and restore brings the memory back to its edges.
-- Readers join live memories, so an edge to a deleted memory is simply not shown.
CREATE TABLE memory_relationships (
    id         uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    tenant_id  uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    source_id  uuid NOT NULL,
    target_id  uuid NOT NULL,
    type       relationship_type NOT NULL,
    confidence real NOT NULL DEFAULT 1.0 CHECK (confidence BETWEEN 0 AND 1),
    reason     text,
    decided_by text NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT memory_relationships_key UNIQUE (source_id, target_id, type),
    CONSTRAINT memory_relationships_self_check CHECK (source_id <> target_id)
);
CREATE INDEX memory_relationships_target_idx ON memory_relationships (target_id);

-- A retired value. Keyed on scope + (slot, value hash) or value hash. A forgotten value keeps
-- no content and no embedding: only hashes.
CREATE TABLE tombstones (
    id              uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    tenant_id       uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    path            ltree NOT NULL,
    slot            text,
    slot_value_hash bytea,
    value_hash      bytea NOT NULL,
    reason          tombstone_reason NOT NULL,
    memory_id       uuid,
    replaced_by     uuid,
    embedding       vector(${embedding_dim}),
    until           timestamptz,
    created_at      timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT tombstones_forgotten_check CHECK (reason <> 'forgotten' OR embedding IS NULL)
);
CREATE INDEX tombstones_value_idx ON tombstones (tenant_id, value_hash);
CREATE INDEX tombstones_slot_idx ON tombstones (tenant_id, slot, slot_value_hash) WHERE slot IS NOT NULL;

-- The prior row of every update that changed something, and of every delete.
CREATE TABLE memory_history (
    id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    tenant_id    uuid NOT NULL,
    memory_id    uuid NOT NULL,
    path         ltree NOT NULL,
    version      integer NOT NULL,
    operation    text NOT NULL CHECK (operation IN ('update', 'delete')),
    row_data     jsonb NOT NULL,
    operation_id uuid,
    cause        text,
    actor        text,
    changed_at   timestamptz NOT NULL DEFAULT clock_timestamp(),
    erased       boolean NOT NULL DEFAULT false
);
CREATE INDEX memory_history_memory_idx ON memory_history (tenant_id, memory_id, id);

CREATE FUNCTION memory_history_capture() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    -- The embedding and the generated tsvector are derived data: restore recomputes them.
    INSERT INTO memory_history (tenant_id, memory_id, path, version, operation, row_data,
                                operation_id, cause, actor)
    VALUES (OLD.tenant_id, OLD.id, OLD.path, OLD.version, lower(TG_OP),
            to_jsonb(OLD) - 'embedding' - 'fts',
            nullif(current_setting('strata.operation_id', true), '')::uuid,
            nullif(current_setting('strata.cause', true), ''),
            nullif(current_setting('strata.actor', true), ''));
    RETURN NULL;
END
$$;

CREATE TRIGGER memories_history_update AFTER UPDATE ON memories
    FOR EACH ROW WHEN (OLD.* IS DISTINCT FROM NEW.*) EXECUTE FUNCTION memory_history_capture();
CREATE TRIGGER memories_history_delete AFTER DELETE ON memories
    FOR EACH ROW EXECUTE FUNCTION memory_history_capture();

------------------------------------------------------------------------------------------
-- Audit: append-only, hash-chained per tenant. The head row serialises appends per tenant.
------------------------------------------------------------------------------------------
CREATE TABLE audit_heads (
    tenant_id uuid PRIMARY KEY REFERENCES tenants (id) ON DELETE CASCADE,
    seq       bigint NOT NULL,
    row_hash  bytea NOT NULL
);

CREATE TABLE audit_log (
    tenant_id    uuid NOT NULL,
    seq          bigint NOT NULL,
    at           timestamptz NOT NULL,
    action       text NOT NULL CHECK (action IN ('read', 'write', 'delete', 'admin')),
    surface      text NOT NULL CHECK (surface IN ('http', 'mcp', 'pipeline', 'scheduler', 'cli')),
    operation    text NOT NULL,
    principal_id uuid,
    key_id       uuid,
    memory_ids   uuid[] NOT NULL DEFAULT '{}',
    count        integer NOT NULL DEFAULT 0,
    query_len    integer,
    outcome      text NOT NULL,
    prev_hash    bytea NOT NULL,
    row_hash     bytea NOT NULL,
    PRIMARY KEY (tenant_id, seq)
);

-- Where verification or pruning left off: the chain resumes from (seq, row_hash).
CREATE TABLE audit_checkpoints (
    tenant_id   uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    kind        text NOT NULL CHECK (kind IN ('verified', 'pruned')),
    seq         bigint NOT NULL,
    row_hash    bytea NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, kind)
);

------------------------------------------------------------------------------------------
-- Ingest receipts (filled by the ingest pipeline)
------------------------------------------------------------------------------------------
CREATE TABLE ingest_receipts (
    id              uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    tenant_id       uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    path            ltree NOT NULL,
    principal_id    uuid,
    key_id          uuid,
    status          text NOT NULL DEFAULT 'queued' CHECK (status IN (
                        'queued', 'running', 'wrote', 'meaningful_no_write', 'llm_failed',
                        'embed_failed', 'db_write_failed')),
    idempotency_key text,
    execution_id    text,
    extractor       text,
    items           jsonb NOT NULL DEFAULT '[]' CHECK (jsonb_typeof(items) = 'array'),
    counts          jsonb NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(counts) = 'object'),
    timings         jsonb NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(timings) = 'object'),
    error           text,
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX ingest_receipts_idempotency_key ON ingest_receipts (tenant_id, idempotency_key)
    WHERE idempotency_key IS NOT NULL;
