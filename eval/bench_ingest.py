"""Ingest benchmark: strata's own time per message (rule extractor, hashing embedder: no
model time), for a 1,000-message conversation into a tenant already holding 10,000 memories.

Prints one JSON object. Usage: python eval/bench_ingest.py [--existing 10000] [--messages 1000]
[--chunk 50]   (messages are sent as requests of --chunk messages, as an agent would).
Target (issue 3): under 20 ms per message at 10k existing memories.
"""

from __future__ import annotations

import argparse
import json
import random
import time
from datetime import UTC, datetime, timedelta


from strata.auth import authenticate, create_tenant
from strata.ingest.models import IngestRequest
from strata.ingest.pipeline import IngestRuntime
from strata.ingest.service import ingest
from strata.memories import CreateRequest, create_memories
from strata.providers import HashingEmbedder

from harness import scratch_database

THINGS = ["PostgreSQL", "MongoDB", "Rust", "Python", "vim", "emacs", "coffee", "tea", "Linux",
          "macOS", "AWS", "GCP", "TypeScript", "Go", "Redis", "SQLite"]
PLACES = ["Lisbon", "Berlin", "Paris", "Tokyo", "Austin", "Nairobi", "Lima", "Oslo"]
USER_LINES = [
    "I prefer {thing}", "I've switched to {thing}", "I like {thing}", "I live in {place}",
    "My name is {name}", "I work at {company}", "Tomorrow I have a dentist appointment",
    "Last week I started learning {thing}", "Always answer in short sentences",
    "Never schedule meetings before 10am", "Actually, I prefer {thing}",
    "I'm flying to {place} next week", "Thanks, that helps", "What time is it in {place}?",
]
ASSISTANT_LINES = ["Noted.", "Sure, here is a summary.", "Got it, I'll remember that."]


def conversation(rng: random.Random, n: int, start: datetime) -> list[dict]:
    out = []
    for i in range(n):
        if i % 2:
            text, role = rng.choice(ASSISTANT_LINES), "assistant"
        else:
            role = "user"
            text = rng.choice(USER_LINES).format(
                thing=rng.choice(THINGS), place=rng.choice(PLACES), name=rng.choice(
                    ["Alice", "Sam", "Ana"]), company=rng.choice(["Acme", "Initech", "Globex"]))
        out.append({"role": role, "content": text, "at": (start + timedelta(minutes=i)).isoformat()})
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--existing", type=int, default=10_000)
    parser.add_argument("--messages", type=int, default=1_000)
    parser.add_argument("--chunk", type=int, default=50)
    args = parser.parse_args()
    rng = random.Random(11)

    with scratch_database() as (db, settings):
        report = run(db, settings, args, rng)
    print(json.dumps(report, indent=2))


def run(db, settings, args, rng: random.Random) -> dict:
    embedder = HashingEmbedder(settings.embedding_dim)
    _, key = create_tenant(db, f"bench{rng.randrange(10**9)}")
    caller = authenticate(db, key.key)

    # The tenant's existing memories: spread over 20 users, the bench conversation is one of them.
    t0 = time.perf_counter()
    words = "project deadline budget review release travel family hobby book film music team".split()
    for b in range(0, args.existing, 500):
        batch = [{"content": f"{' '.join(rng.choice(words) for _ in range(10))} #{b + i}",
                  "path": f"users.u{rng.randrange(20)}"} for i in range(min(500, args.existing - b))]
        create_memories(db, caller, CreateRequest(memories=batch), embedder)
    seed_s = time.perf_counter() - t0

    rt = IngestRuntime(db, embedder, settings)
    msgs = conversation(rng, args.messages, datetime(2026, 1, 5, 9, tzinfo=UTC))
    per_request, counts = [], {}
    started = time.perf_counter()
    for i in range(0, len(msgs), args.chunk):
        req = IngestRequest(path="users.u7", wait=True, messages=msgs[i:i + args.chunk])
        t = time.perf_counter()
        receipt, _ = ingest(rt, None, caller, req)
        per_request.append(time.perf_counter() - t)
        for item in receipt.items:
            counts[item.outcome] = counts.get(item.outcome, 0) + 1
        assert receipt.status in ("wrote", "meaningful_no_write"), receipt.status
    total = time.perf_counter() - started
    per_request.sort()
    return {
        "benchmark": "bench_ingest",
        "extractor": "rule", "embedder": embedder.model, "model_time_ms": 0,
        "existing_memories": args.existing, "seed_seconds": round(seed_s, 1),
        "messages": args.messages, "messages_per_request": args.chunk,
        "ms_per_message": round(total * 1000 / args.messages, 2),
        "messages_per_s": round(args.messages / total, 1),
        "request_ms_p50": round(per_request[len(per_request) // 2] * 1000, 1),
        "request_ms_max": round(per_request[-1] * 1000, 1),
        "outcomes": counts,
        "target_ms_per_message": 20,
    }


if __name__ == "__main__":
    main()
