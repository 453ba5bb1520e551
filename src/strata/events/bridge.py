"""Events onto an EventBridge bus: the drain function's half that webhooks do not cover.

Every event of every tenant goes on the stack's custom bus (``STRATA_EVENT_BUS_NAME``) as
``source: strata``, ``detail-type: memory.<type>`` and the event as the detail (with its
tenant id; never content), so an operator attaches rules and targets of their own. Per
tenant, in seq order, ten at a time (PutEvents' limit); the tenant's cursor moves past the
last entry accepted and stops before the first rejected one, so a partial failure is sent
again on the next pass, in order (at least once; ``detail.cursor`` tells repeats apart). A
drain holds the tenant's cursor row (``FOR UPDATE SKIP LOCKED``) while it puts, so two
drains never send one tenant's events twice at once.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from strata.db import Database
from strata.events.models import Event

__all__ = ["SOURCE", "drain_to_bus"]

log = logging.getLogger("strata.events")

SOURCE = "strata"
PUT_LIMIT = 10  # entries per PutEvents call
BATCH = 500     # events per tenant per pass

_BEHIND = """
SELECT h.tenant_id FROM event_heads h
LEFT JOIN event_bus_cursors c ON c.tenant_id = h.tenant_id
WHERE h.seq > COALESCE(c.after_seq, 0)
ORDER BY h.tenant_id
"""
_NEW_CURSOR = ("INSERT INTO event_bus_cursors (tenant_id) VALUES (%(tenant)s)"
               " ON CONFLICT DO NOTHING")
_CURSOR = ("SELECT after_seq FROM event_bus_cursors WHERE tenant_id = %(tenant)s"
           " FOR UPDATE SKIP LOCKED")
_PENDING = """
SELECT seq, type, memory_id, path::text AS path, version, status, cause, actor,
       operation_id, related, at
FROM events WHERE tenant_id = %(tenant)s AND seq > %(after)s ORDER BY seq LIMIT %(limit)s
"""
_MOVE = "UPDATE event_bus_cursors SET after_seq = %(seq)s WHERE tenant_id = %(tenant)s"


def entry(tenant_id: Any, event: Event, bus: str) -> dict[str, Any]:
    detail = {"tenant_id": str(tenant_id), **event.model_dump(mode="json")}
    return {"Source": SOURCE, "DetailType": f"memory.{event.type}", "Time": event.at,
            "Detail": json.dumps(detail, separators=(",", ":")), "EventBusName": bus}


def _drain_tenant(db: Database, events_client: Any, bus: str, tenant_id: Any) -> int:
    sent = 0
    with db.transaction() as cur:
        cur.execute(_NEW_CURSOR, {"tenant": tenant_id})
        row = cur.execute(_CURSOR, {"tenant": tenant_id}).fetchone()
        if row is None:  # another drain holds the tenant: it sends these
            return 0
        rows = cur.execute(_PENDING, {"tenant": tenant_id, "after": row["after_seq"],
                                      "limit": BATCH}).fetchall()
        events = [Event(cursor=str(r["seq"]), **{k: v for k, v in r.items() if k != "seq"})
                  for r in rows]
        for i in range(0, len(events), PUT_LIMIT):
            chunk = events[i:i + PUT_LIMIT]
            answer = events_client.put_events(Entries=[entry(tenant_id, e, bus) for e in chunk])
            results = answer.get("Entries", [])
            accepted = 0
            for result in results:
                if result.get("ErrorCode") or not result.get("EventId"):
                    break
                accepted += 1
            if accepted:
                cur.execute(_MOVE, {"seq": int(chunk[accepted - 1].cursor), "tenant": tenant_id})
                sent += accepted
            if accepted < len(chunk):
                log.warning("the event bus refused an entry; it is sent again next pass",
                            extra={"tenant_id": str(tenant_id),
                                   "error_code": results[accepted].get("ErrorCode")
                                   if accepted < len(results) else None})
                break
    return sent


def drain_to_bus(db: Database, events_client: Any, bus: str) -> dict[str, int]:
    """One pass over every tenant with events the bus has not had. Counts."""
    with db.connection() as conn:
        tenants = [r["tenant_id"] for r in conn.execute(_BEHIND).fetchall()]
    sent = 0
    for tenant_id in tenants:
        sent += _drain_tenant(db, events_client, bus, tenant_id)
    return {"tenants": len(tenants), "put": sent}
