"""Store benchmark: batch insert throughput and point-read latency through real HTTP.

Starts an embedded PostgreSQL in a temporary directory (or uses STRATA_DATABASE_URL), the
API under uvicorn on a loopback port, and drives it with httpx like a client would.
Prints one JSON object. Usage: python eval/bench_store.py [--batches 50] [--reads 2000]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import statistics
import time

import httpx

from strata.api.app import create_app
from strata.auth import create_tenant
from strata.providers import HashingEmbedder

from harness import percentile, scratch_database, serving

WORDS = (
    "user prefers postgres deploys region team project deadline meeting coffee python rust "
    "budget travel flight hotel dentist birthday sister manager review release incident "
    "dashboard alert latency customer invoice contract vacation allergy peanut vegetarian"
).split()


def sentence(rng: random.Random) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(8, 20))).capitalize() + "."


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--batches", type=int, default=50)
    parser.add_argument("--batch-size", type=int, default=100)
    parser.add_argument("--reads", type=int, default=2000)
    args = parser.parse_args()
    rng = random.Random(7)

    with scratch_database() as (db, settings):
        report = run(db, settings, args, rng)
    print(json.dumps(report, indent=2))


def run(db, settings, args, rng: random.Random) -> dict:
    _, key = create_tenant(db, f"bench{rng.randrange(10**9)}")
    app = create_app(db=db, embedder=HashingEmbedder(settings.embedding_dim), settings=settings)

    headers = {"Authorization": f"Bearer {key.key}"}
    ids: list[str] = []
    batch_seconds: list[float] = []
    with serving(app) as base, httpx.Client(base_url=base, headers=headers, timeout=60) as http:
        for b in range(args.batches):
            body = {"memories": [
                {"content": f"{sentence(rng)} #{b}-{i}", "path": f"users.u{rng.randrange(20)}",
                 "kind": rng.choice(["fact", "preference", "event"]), "tags": ["bench"]}
                for i in range(args.batch_size)
            ]}
            t0 = time.perf_counter()
            r = http.post("/v1/memories", json=body)
            batch_seconds.append(time.perf_counter() - t0)
            r.raise_for_status()
            ids += [x["id"] for x in r.json()["results"] if x["status"] == "inserted"]

        for memory_id in rng.sample(ids, min(50, len(ids))):  # warm the pool and caches
            http.get(f"/v1/memories/{memory_id}").raise_for_status()
        read_ms: list[float] = []
        for _ in range(args.reads):
            memory_id = rng.choice(ids)
            t0 = time.perf_counter()
            r = http.get(f"/v1/memories/{memory_id}")
            read_ms.append((time.perf_counter() - t0) * 1000)
            r.raise_for_status()


    inserted = args.batches * args.batch_size
    return {
        "benchmark": "bench_store",
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
        "embedder": f"hash-{settings.embedding_dim}",
        "insert": {
            "batches": args.batches, "batch_size": args.batch_size, "memories": inserted,
            "memories_per_s": round(inserted / sum(batch_seconds), 1),
            "batch_ms_p50": round(statistics.median(batch_seconds) * 1000, 1),
            "batch_ms_p95": round(percentile(batch_seconds, 0.95) * 1000, 1),
        },
        "point_read_http": {
            "requests": args.reads,
            "p50_ms": round(percentile(read_ms, 0.50), 2),
            "p95_ms": round(percentile(read_ms, 0.95), 2),
            "p99_ms": round(percentile(read_ms, 0.99), 2),
        },
    }


if __name__ == "__main__":
    main()
