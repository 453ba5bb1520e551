-- The write gate looks up active memories by exact path (duplicates, slot holders, nearest
-- neighbours by exact scan). Without this the planner walks the whole tenant per candidate.
CREATE INDEX memories_tenant_path_active_idx ON memories (tenant_id, path) WHERE status = 'active';
