"""Event benchmark: the webhook dispatcher's throughput and the feed's page time.

Embedded PostgreSQL (or STRATA_DATABASE_URL), one tenant with N memories created through the
core (so N `created` events), a webhook to a receiver on 127.0.0.1 that answers 204 at once
and verifies nothing (signing is the dispatcher's cost, checking the receiver's), and the
real dispatcher (strata.events.dispatch.dispatch_once) run until nothing is due. Prints one
JSON object. Usage: python eval/bench_events.py [--events 2000]
"""

from __future__ import annotations

import argparse
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from strata.auth import authenticate, create_tenant
from strata.events.dispatch import dispatch_once
from strata.events.feed import list_events
from strata.events.webhook_models import WebhookIn
from strata.events.webhooks import register
from strata.memories import CreateRequest, create_memories
from strata.providers import HashingEmbedder

from harness import percentile, scratch_database


class Sink(BaseHTTPRequestHandler):
    received = 0

    def do_POST(self):  # noqa: N802
        self.rfile.read(int(self.headers["content-length"]))
        Sink.received += 1
        self.send_response(204)
        self.end_headers()

    def log_message(self, *args):
        pass


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--events", type=int, default=2000)
    args = parser.parse_args()
    with scratch_database(webhooks_allow_private=True) as (db, settings):
        print(json.dumps(run(db, settings, args), indent=2))


def run(db, settings, args) -> dict:
    _, key = create_tenant(db, "bench-events")
    caller = authenticate(db, key.key)
    embedder = HashingEmbedder(settings.embedding_dim)
    server = ThreadingHTTPServer(("127.0.0.1", 0), Sink)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/sink"
    register(db, caller, WebhookIn(url=url, paths=["users"]), allow_private=True)
    for start in range(0, args.events, 100):
        create_memories(db, caller, CreateRequest(memories=[
            {"content": f"Bench fact number {i} about the {i % 7} team", "path": f"users.u{i % 10}"}
            for i in range(start, min(start + 100, args.events))]), embedder)
    page_ms = []
    after = 0
    while True:
        t0 = time.perf_counter()
        items, cursor = list_events(db, caller, after=after, limit=100)
        page_ms.append((time.perf_counter() - t0) * 1000)
        if not items:
            break
        after = int(cursor)
    t0 = time.perf_counter()
    delivered = 0
    while (done := dispatch_once(db, settings))["delivered"]:
        delivered += done["delivered"]
    seconds = time.perf_counter() - t0
    server.shutdown()
    return {"benchmark": "bench_events", "events": args.events, "delivered": delivered,
            "received": Sink.received, "dispatch_s": round(seconds, 2),
            "deliveries_per_s": round(delivered / seconds, 1),
            "feed_page_100_ms_p50": round(percentile(page_ms, 50), 2),
            "feed_page_100_ms_p95": round(percentile(page_ms, 95), 2)}


if __name__ == "__main__":
    main()
