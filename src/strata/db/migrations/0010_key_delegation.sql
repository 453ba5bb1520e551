-- Delegation that cannot outlive its delegator (issue 14).
--
-- A key minted through the API records the key that minted it (parent_id; NULL for keys
-- minted by the operator CLI or the tenant bootstrap). Its effective access is its own (the
-- holder's grants clamped by its ceiling) intersected with its parent's live effective
-- access, recursively, so a revoked, expired, de-granted or disabled delegator takes every
-- key minted through it along. Depends only on 0001 (api_keys, principals, grants).

-- The parent is a key of the same tenant: the composite reference makes a cross-tenant
-- parent impossible in the schema. Deleting a key (or, by cascade, its principal or tenant)
-- deletes the keys minted through it.
ALTER TABLE api_keys ADD CONSTRAINT api_keys_tenant_id_key UNIQUE (tenant_id, id);
ALTER TABLE api_keys ADD COLUMN parent_id uuid;
ALTER TABLE api_keys ADD CONSTRAINT api_keys_parent_fkey
    FOREIGN KEY (tenant_id, parent_id) REFERENCES api_keys (tenant_id, id) ON DELETE CASCADE;
ALTER TABLE api_keys ADD CONSTRAINT api_keys_parent_check CHECK (parent_id <> id);
CREATE INDEX api_keys_parent_idx ON api_keys (parent_id) WHERE parent_id IS NOT NULL;

-- A key's own access, ignoring its parent: the holder's grants clamped by the key's ceiling
-- at the deeper path with the lesser level (the definition of effective_access in 0001).
-- Empty for a revoked or expired key or a disabled holder.
CREATE FUNCTION key_own_access(p_key_id uuid)
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

-- Effective access: the key's own access intersected with each ancestor's own access, up the
-- parent chain (same rule at every step: pairs whose paths nest, the deeper path, the lesser
-- level). Intersection is associative on what the pairs cover, so folding the chain from the
-- key upwards equals own(key) ∩ effective_access(parent). The walk carries the running
-- intersection and the next ancestor to meet; only rows that reached the top of the chain
-- (a key without a parent) count. An empty step ends the walk (no access); UNION discards
-- repeated rows, so even a tampered parent cycle terminates -- and, never reaching a top,
-- yields no access rather than an error.
CREATE OR REPLACE FUNCTION effective_access(p_key_id uuid)
RETURNS TABLE (path ltree, level access_level)
LANGUAGE sql STABLE AS $$
    WITH RECURSIVE walk (path, level, next_id) AS (
        SELECT o.path, o.level, k.parent_id
        FROM api_keys k CROSS JOIN LATERAL key_own_access(k.id) o
        WHERE k.id = p_key_id
      UNION
        SELECT CASE WHEN o.path <@ w.path THEN o.path ELSE w.path END, LEAST(w.level, o.level),
               a.parent_id
        FROM walk w JOIN api_keys a ON a.id = w.next_id
        CROSS JOIN LATERAL key_own_access(a.id) o
        WHERE o.path <@ w.path OR w.path <@ o.path
    )
    SELECT DISTINCT w.path, w.level FROM walk w WHERE w.next_id IS NULL
$$;

-- Whether a key may authenticate: it and every ancestor unrevoked, unexpired and held by an
-- enabled principal, and the chain ends (a cycle never does: not live).
CREATE FUNCTION api_key_live(p_key_id uuid)
RETURNS boolean
LANGUAGE sql STABLE AS $$
    WITH RECURSIVE chain (id, parent_id, live) AS (
        SELECT k.id, k.parent_id,
               k.revoked_at IS NULL AND (k.expires_at IS NULL OR k.expires_at > now())
               AND p.disabled_at IS NULL
        FROM api_keys k JOIN principals p ON p.id = k.principal_id AND p.tenant_id = k.tenant_id
        WHERE k.id = p_key_id
      UNION
        SELECT k.id, k.parent_id,
               k.revoked_at IS NULL AND (k.expires_at IS NULL OR k.expires_at > now())
               AND p.disabled_at IS NULL
        FROM chain c JOIN api_keys k ON k.id = c.parent_id
        JOIN principals p ON p.id = k.principal_id AND p.tenant_id = k.tenant_id
        WHERE c.live
    )
    SELECT COALESCE(bool_and(live) AND bool_or(parent_id IS NULL), false) FROM chain
$$;
