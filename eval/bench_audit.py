"""Audit verification and digest benchmark: full-verification throughput and what a digest
costs, on a real PostgreSQL.

Seeds one tenant's chain with correctly linked rows (the real row_hash), then times a full
verification (every row re-hashed and re-linked, the checkpoint and the latest digest
checked), an incremental run over the rows since the checkpoint, and publishing digests
(local HMAC files; the AWS figures are per-request prices, computed, not measured).
Starts an embedded PostgreSQL in a temporary directory (or uses STRATA_DATABASE_URL).
Prints one JSON object. Usage: python eval/bench_audit.py [--rows 200000]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import tempfile
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

from strata import audit
from strata.audit.chain import GENESIS, row_hash
from strata.audit.digests import Digests, FileStore, HmacSigner

from harness import scratch_database, timed

# us-east-1 list prices (2026): KMS asymmetric Sign $0.15 per 10,000 requests; S3 Standard
# PUT $0.005 per 1,000 and storage $0.023 per GB-month; the KMS key $1 per month.
KMS_SIGN_PER_REQUEST = 0.15 / 10_000
S3_PUT_PER_REQUEST = 0.005 / 1_000
S3_GB_MONTH = 0.023
KMS_KEY_MONTH = 1.0
HOURS_PER_MONTH = 730


def seed(db, tenant_id: uuid.UUID, rows: int, start: datetime) -> None:
    prev, step = GENESIS, timedelta(seconds=1)
    with db.connection() as conn, conn.cursor() as cur:
        with cur.copy("COPY audit_log (tenant_id, seq, at, action, surface, operation, principal_id,"
                      " key_id, memory_ids, count, query_len, outcome, prev_hash, row_hash)"
                      " FROM STDIN") as copy:
            for seq in range(1, rows + 1):
                row = {"tenant_id": tenant_id, "seq": seq, "at": start + seq * step,
                       "action": "read", "surface": "http", "operation": "memory.search",
                       "principal_id": tenant_id, "key_id": None,
                       "memory_ids": [uuid.UUID(int=seq), uuid.UUID(int=seq + 1)],
                       "count": 2, "query_len": 40, "outcome": "ok"}
                new = row_hash(prev, row)
                copy.write_row([*row.values(), prev, new])
                prev = new
        conn.execute("INSERT INTO audit_heads (tenant_id, seq, row_hash) VALUES (%s, %s, %s)",
                     (tenant_id, rows, prev))
        conn.commit()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--digests", type=int, default=50)
    args = parser.parse_args()
    with scratch_database() as (db, _settings), tempfile.TemporaryDirectory() as tmp:
        digests = Digests(FileStore(Path(tmp) / "d"), HmacSigner(Path(tmp) / "k"))
        with db.transaction() as cur:
            t = cur.execute("INSERT INTO tenants (name) VALUES ('bench') RETURNING id").fetchone()["id"]
        _, seed_s = timed(lambda: seed(db, t, args.rows, datetime.now(UTC) - timedelta(days=30)))
        first, publish_s = timed(lambda: audit.publish_digest(db, t, digests))
        full, full_s = timed(lambda: audit.verify(db, t, digests=digests))
        assert full["ok"] and full["checked"] == args.rows, full
        rolling, rolling_s = timed(lambda: audit.verify_tenant(
            db, t, rolling=True, digests=digests, rolling_rows=args.rows // 6))
        assert rolling["ok"], rolling
        # Digest publication when the head moved: one new row, then verify-and-publish.
        samples = []
        for i in range(args.digests):
            audit.append(db, audit_caller(t), audit.AuditEvent("read", "bench.touch", count=i))
            out, s = timed(lambda: audit.publish_digest(db, t, digests))
            assert out["published"], out
            samples.append(s)
        size = len(digests.store.get(digests.store.names(t)[-1]))
    samples.sort()
    per_tenant_month = HOURS_PER_MONTH * (KMS_SIGN_PER_REQUEST + S3_PUT_PER_REQUEST)
    print(json.dumps({
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count()},
        "rows": args.rows,
        "seed_s": round(seed_s, 2),
        "full_verify": {"seconds": round(full_s, 3), "rows_per_s": round(args.rows / full_s)},
        "rolling_slice": {"rows": rolling["rolling"]["checked"], "seconds": round(rolling_s, 3)},
        "first_digest_s": round(publish_s, 3),
        "digest_publish_ms": {"p50": round(samples[len(samples) // 2] * 1000, 2),
                              "max": round(samples[-1] * 1000, 2), "n": len(samples)},
        "digest_bytes": size,
        "aws_cost_usd": {
            "per_tenant_month_hourly_digests": round(per_tenant_month, 4),
            "storage_per_tenant_year_gb": round(size * HOURS_PER_MONTH * 12 / 1e9, 5),
            "kms_key_month": KMS_KEY_MONTH,
            "note": "hourly, only when the head moved; plus the KMS interface endpoint "
                    "(2 AZs, ~$14.60/month) when the stack creates its VPC",
        },
    }, indent=2))


def audit_caller(tenant_id: uuid.UUID):
    from strata.auth.access import Caller

    return Caller.system(tenant_id, surface="cli")


if __name__ == "__main__":
    main()
