-- What an ingest did not keep, and why (issue 15): one entry per user clause that became no
-- candidate, {"message": <index>, "reason": <reason>, "text": <the clause, or null>}. The
-- text is null for a clause withheld as a secret, so a receipt never holds one.
ALTER TABLE ingest_receipts ADD COLUMN not_kept jsonb NOT NULL DEFAULT '[]';
