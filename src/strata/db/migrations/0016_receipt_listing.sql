-- Listing a tenant's receipts newest first (GET /v1/ingest, the console's receipts page):
-- without it every page would sort all of the table's receipts of that tenant.
CREATE INDEX ingest_receipts_listing_idx ON ingest_receipts (tenant_id, created_at DESC, id DESC);
