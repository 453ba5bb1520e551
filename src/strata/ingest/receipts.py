"""Ingest receipts: one per request, the record of what the pipeline decided and why."""

from __future__ import annotations

import hashlib
import json
import uuid
from typing import Any

import psycopg
from psycopg.types.json import Jsonb

from strata.auth.access import Caller, Level
from strata.db import Database
from strata.foundation.errors import Conflict, NotFound
from strata.ingest.models import IngestRequest, Receipt

COLUMNS = """id, path::text AS path, status, extractor, items, not_kept, counts, timings, notes, error,
    idempotency_key, execution_id, created_at, updated_at"""


def request_hash(path: str, req: IngestRequest) -> bytes:
    body = {"path": path, "messages": [m.model_dump(mode="json") for m in req.messages]}
    if req.tier != "long_term":  # the digest of a long-term request is what it always was
        body.update(tier=req.tier, ttl=req.ttl)
    return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).digest()


def open_receipt(db: Database, caller: Caller, path: str, req: IngestRequest) -> tuple[Receipt, bool]:
    """Create the receipt (status queued, messages staged), or return the one this
    idempotency key already made. Returns (receipt, created)."""
    digest = request_hash(path, req)
    params = {
        "tenant": caller.tenant_id, "path": path, "principal": caller.principal_id,
        "key": caller.key_id, "idem": req.idempotency_key, "hash": digest,
        "messages": Jsonb([m.model_dump(mode="json") for m in req.messages]),
        "tier": req.tier, "ttl": req.ttl,
    }
    with db.transaction(cause="ingest.receive", actor=caller.actor) as cur:
        row = cur.execute(
            f"""
            INSERT INTO ingest_receipts (tenant_id, path, principal_id, key_id, idempotency_key,
                                         request_hash, messages, tier, ttl_s)
            VALUES (%(tenant)s, %(path)s::ltree, %(principal)s, %(key)s, %(idem)s, %(hash)s,
                    %(messages)s, %(tier)s::memory_tier, %(ttl)s)
            ON CONFLICT (tenant_id, idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING
            RETURNING {COLUMNS}
            """,
            params,
        ).fetchone()
        if row is not None:
            return Receipt.from_row(row), True
        row = cur.execute(
            f"SELECT {COLUMNS}, request_hash FROM ingest_receipts"
            " WHERE tenant_id = %(tenant)s AND idempotency_key = %(idem)s",
            params,
        ).fetchone()
    if bytes(row["request_hash"]) != digest:
        raise Conflict(
            "idempotency_key was already used for a different request", field="idempotency_key"
        )
    return Receipt.from_row(row), False


def get_receipt(db: Database, caller: Caller, receipt_id: uuid.UUID) -> Receipt:
    with db.connection() as conn:
        row = conn.execute(
            f"SELECT {COLUMNS} FROM ingest_receipts WHERE tenant_id = %s AND id = %s"
            " AND path <@ %s::ltree[]",
            (caller.tenant_id, receipt_id, caller.paths(Level.read)),
        ).fetchone()
    if row is None:
        raise NotFound("receipt", receipt_id)
    return Receipt.from_row(row)


def lock(cur: psycopg.Cursor, receipt_id: uuid.UUID) -> dict[str, Any]:
    row = cur.execute(
        "SELECT id, tenant_id, path::text AS path, principal_id, key_id, status, steps, notes,"
        " messages, created_at, tier::text AS tier, ttl_s FROM ingest_receipts"
        " WHERE id = %s FOR UPDATE",
        (receipt_id,),
    ).fetchone()
    if row is None:
        raise NotFound("receipt", receipt_id)
    return row


def finish_step(
    cur: psycopg.Cursor, receipt_id: uuid.UUID, step: str, *, status: str | None = None,
    notes: list[str] | None = None, timing_ms: float | None = None, **fields: Any,
) -> None:
    """Mark a step done (idempotence marker), optionally moving status and adding notes."""
    sets = ["steps = steps || jsonb_build_object(%(step)s::text, now())", "updated_at = now()"]
    params: dict[str, Any] = {"id": receipt_id, "step": step}
    if status is not None:
        sets.append("status = %(status)s")
        params["status"] = status
    if notes:
        sets.append("notes = notes || %(notes)s")
        params["notes"] = Jsonb(notes)
    if timing_ms is not None:
        sets.append("timings = timings || jsonb_build_object(%(step)s::text, %(ms)s::float8)")
        params["ms"] = round(timing_ms, 2)
    for name, value in fields.items():
        sets.append(f"{name} = %({name})s")
        params[name] = Jsonb(value) if isinstance(value, (dict, list)) else value
    cur.execute(f"UPDATE ingest_receipts SET {', '.join(sets)} WHERE id = %(id)s", params)


def list_receipts(
    db: Database, caller: Caller, *, path: str | None = None,
    statuses: list[str] | None = None, cursor: str | None = None, limit: int = 50,
) -> tuple[list[Receipt], str | None]:
    """Receipts written where the caller can read, newest first (created_at, id), optionally
    under ``path`` and of ``statuses``; the second value is the next page's cursor."""
    from strata.memories.store import decode_cursor, encode_cursor

    after = decode_cursor(cursor) if cursor else None
    with db.connection() as conn:
        rows = conn.execute(
            f"""
            SELECT {COLUMNS} FROM ingest_receipts
            WHERE tenant_id = %(tenant)s AND path <@ %(readable)s::ltree[]
              AND (%(path)s::ltree IS NULL OR path <@ %(path)s::ltree)
              AND (%(statuses)s::text[] IS NULL OR status = ANY(%(statuses)s::text[]))
              AND (%(after_at)s::timestamptz IS NULL
                   OR (created_at, id) < (%(after_at)s::timestamptz, %(after_id)s::uuid))
            ORDER BY created_at DESC, id DESC
            LIMIT %(limit)s
            """,
            {"tenant": caller.tenant_id, "readable": caller.paths(Level.read), "path": path,
             "statuses": statuses, "after_at": after[0] if after else None,
             "after_id": after[1] if after else None, "limit": limit + 1},
        ).fetchall()
    more = len(rows) > limit
    rows = rows[:limit]
    next_cursor = encode_cursor(rows[-1]["created_at"], rows[-1]["id"]) if more else None
    return [Receipt.from_row(r) for r in rows], next_cursor
