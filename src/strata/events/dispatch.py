"""The dispatcher: delivers the outbox's events to webhooks (and, on AWS, to EventBridge:
:mod:`strata.events.bridge`), the same code locally (a thread of ``strata dev``) and in the
drain function.

Per webhook, events go one at a time in ``seq`` order -- commit order, so in order per
memory -- and the webhook's cursor moves past an event only when the receiver answered 2xx:
at least once, never out of order. A failure (no answer, a timeout, a non-2xx status, a URL
that now resolves somewhere private) is logged in ``webhook_deliveries`` and the same event
is tried again after a backoff (``webhook_backoff_base_s`` * 2^(failures - 1), at most an
hour), with the same ``webhook-id``; after ``webhook_max_failures`` in a row the webhook is
disabled until an owner replays it. A dispatcher takes a webhook by a short lease, so two
dispatchers never deliver one webhook at once and no transaction is held across HTTP.

Deliveries follow Standard Webhooks: a JSON body ``{"type": "memory.<type>", "timestamp",
"data": <the event>}`` (no content, as in the feed) and the ``webhook-id``,
``webhook-timestamp`` and ``webhook-signature`` headers, signed by the ``standardwebhooks``
library with the webhook's secret. Redirects are not followed (a redirect could lead
anywhere the check refused).
"""

from __future__ import annotations

import json
import logging
import threading
import time
import uuid
from datetime import UTC, datetime
from typing import Any

import httpx

from strata.db import Database
from strata.events.models import Event
from strata.events.targets import check_url
from strata.foundation.config import Settings
from strata.foundation.errors import InvalidInput

__all__ = ["Dispatcher", "dispatch_once", "payload"]

log = logging.getLogger("strata.events")

LEASE_S = 120
BATCH = 100
MAX_BACKOFF_S = 3600.0

_CLAIM = """
UPDATE webhooks w SET lease_until = now() + make_interval(secs => %(lease)s)
WHERE w.id = (
    SELECT id FROM webhooks
    WHERE disabled_at IS NULL AND next_attempt_at <= now()
      AND (lease_until IS NULL OR lease_until < now()) AND NOT id = ANY(%(seen)s::uuid[])
    ORDER BY next_attempt_at, id LIMIT 1 FOR UPDATE SKIP LOCKED)
RETURNING id, tenant_id, url, paths::text[] AS paths, types, secret, after_seq, failures,
          registered_by
"""
# Deliveries carry what the registering key could read as an owner: once that key is no
# longer live (revoked, expired, its principal disabled) or no longer owns every path, the
# webhook stops, disabled, until an owner replays it (and answers for it from then on).
_STILL_OWNED = """
SELECT %(key)s::uuid IS NOT NULL AND api_key_live(%(key)s) AND NOT EXISTS (
    SELECT 1 FROM unnest(%(paths)s::ltree[]) p
    WHERE NOT EXISTS (SELECT 1 FROM effective_access(%(key)s) a
                      WHERE p <@ a.path AND a.level = 'owner')) AS ok
"""
_ORPHANED = """
UPDATE webhooks SET disabled_at = now(), lease_until = NULL,
       disabled_reason = 'the key that registered it no longer owns its paths; replay it with an owner''s key'
WHERE id = %(id)s
"""
_PENDING = """
SELECT seq, type, memory_id, path::text AS path, version, status, cause, actor,
       operation_id, related, at
FROM events
WHERE tenant_id = %(tenant)s AND seq > %(after)s AND path <@ %(paths)s::ltree[]
  AND (%(types)s::text[] IS NULL OR type = ANY(%(types)s::text[]))
ORDER BY seq LIMIT %(limit)s
"""
_LOG = """
INSERT INTO webhook_deliveries (webhook_id, tenant_id, seq, attempt, status, error, ok,
                                duration_ms)
VALUES (%(id)s, %(tenant)s, %(seq)s, %(attempt)s, %(status)s, %(error)s, %(ok)s, %(ms)s)
"""
_DELIVERED = "UPDATE webhooks SET after_seq = %(seq)s, failures = 0 WHERE id = %(id)s"
_FAILED = """
UPDATE webhooks SET failures = failures + 1,
       next_attempt_at = now() + make_interval(secs => %(backoff)s),
       disabled_at = CASE WHEN failures + 1 >= %(max)s THEN now() END,
       disabled_reason = CASE WHEN failures + 1 >= %(max)s
                         THEN format('%%s failed deliveries in a row; last: %%s',
                                     failures + 1, %(error)s::text) END,
       lease_until = NULL
WHERE id = %(id)s
"""
_RELEASE = "UPDATE webhooks SET lease_until = NULL WHERE id = %(id)s"


def payload(event: Event) -> bytes:
    return json.dumps({"type": f"memory.{event.type}", "timestamp": event.at.isoformat(),
                       "data": event.model_dump(mode="json")}, separators=(",", ":")).encode()


def message_id(tenant_id: uuid.UUID, seq: str) -> str:
    """One per event and tenant, the same on every attempt: a receiver drops repeats by it."""
    return f"evt_{tenant_id.hex}_{seq}"


def backoff(failures: int, base: float) -> float:
    return min(base * 2 ** max(failures - 1, 0), MAX_BACKOFF_S)


def _send(http: httpx.Client, hook: dict[str, Any], event: Event, settings: Settings
          ) -> tuple[int | None, str | None]:
    from standardwebhooks import Webhook

    try:
        check_url(hook["url"], allow_private=settings.webhooks_allow_private)
    except InvalidInput as exc:
        return None, str(exc)
    body = payload(event)
    msg_id, now = message_id(hook["tenant_id"], event.cursor), datetime.now(UTC)
    headers = {"content-type": "application/json", "webhook-id": msg_id,
               "webhook-timestamp": str(int(now.timestamp())),
               "webhook-signature": Webhook(hook["secret"]).sign(msg_id, now, body)}
    try:
        r = http.post(hook["url"], content=body, headers=headers,
                      timeout=settings.webhook_timeout_s, follow_redirects=False)
    except httpx.HTTPError as exc:
        return None, type(exc).__name__
    return r.status_code, None if 200 <= r.status_code < 300 else f"HTTP {r.status_code}"


def _deliver(db: Database, http: httpx.Client, hook: dict[str, Any], settings: Settings
             ) -> dict[str, int]:
    """The webhook's pending events in order, until one fails or none is left."""
    done = {"delivered": 0, "failed": 0, "disabled": 0}
    with db.connection() as conn:
        owned = conn.execute(_STILL_OWNED, {"key": hook["registered_by"],
                                            "paths": hook["paths"]}).fetchone()["ok"]
    if not owned:
        with db.transaction() as cur:
            cur.execute(_ORPHANED, {"id": hook["id"]})
        done["disabled"] = 1
        return done
    with db.connection() as conn:
        rows = conn.execute(_PENDING, {"tenant": hook["tenant_id"], "after": hook["after_seq"],
                                       "paths": hook["paths"], "types": hook["types"],
                                       "limit": BATCH}).fetchall()
    for r in rows:
        event = Event(cursor=str(r["seq"]), **{k: v for k, v in r.items() if k != "seq"})
        started = time.monotonic()
        status, error = _send(http, hook, event, settings)
        entry = {"id": hook["id"], "tenant": hook["tenant_id"], "seq": r["seq"],
                 "attempt": hook["failures"] + 1, "status": status, "error": error,
                 "ok": error is None, "ms": int((time.monotonic() - started) * 1000)}
        with db.transaction() as cur:
            cur.execute(_LOG, entry)
            if error is None:
                cur.execute(_DELIVERED, {"seq": r["seq"], "id": hook["id"]})
            else:
                cur.execute(_FAILED, {"id": hook["id"], "error": error,
                                      "max": settings.webhook_max_failures,
                                      "backoff": backoff(hook["failures"] + 1,
                                                         settings.webhook_backoff_base_s)})
        if error is not None:
            done["failed"] += 1
            return done
        hook["failures"] = 0
        done["delivered"] += 1
    with db.transaction() as cur:
        cur.execute(_RELEASE, {"id": hook["id"]})
    return done


def dispatch_once(db: Database, settings: Settings, *, http: httpx.Client | None = None
                  ) -> dict[str, int]:
    """One pass: every webhook due now, once each. Counts of what was delivered or failed."""
    own = http is None
    http = http or httpx.Client()
    totals = {"webhooks": 0, "delivered": 0, "failed": 0, "disabled": 0}
    seen: list[uuid.UUID] = []
    try:
        while True:
            with db.transaction() as cur:
                hook = cur.execute(_CLAIM, {"lease": LEASE_S, "seen": seen}).fetchone()
            if hook is None:
                return totals
            seen.append(hook["id"])
            totals["webhooks"] += 1
            try:
                done = _deliver(db, http, dict(hook), settings)
            except Exception:
                log.exception("webhook delivery pass failed", extra={"webhook_id": str(hook["id"])})
                continue  # the lease runs out and the next pass tries again
            totals["delivered"] += done["delivered"]
            totals["failed"] += done["failed"]
            totals["disabled"] += done["disabled"]
    finally:
        if own:
            http.close()


class Dispatcher:
    """``dispatch_once`` every ``interval`` seconds on a daemon thread (``strata dev``)."""

    def __init__(self, db: Database, settings: Settings, interval: float = 1.0) -> None:
        self.db, self.settings, self.interval = db, settings, interval
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, name="webhooks", daemon=True)

    def start(self) -> "Dispatcher":
        self.thread.start()
        return self

    def _run(self) -> None:
        with httpx.Client() as http:
            while not self.stop.is_set():
                try:
                    dispatch_once(self.db, self.settings, http=http)
                except Exception:  # the database is down, say: the next round tries again
                    log.warning("webhook dispatch failed this round")
                self.stop.wait(self.interval)


