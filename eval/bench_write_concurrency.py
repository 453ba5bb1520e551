"""Concurrent writers of one value and of one slot, through real HTTP: does serialisation
hold, and what does it cost?

Starts an embedded PostgreSQL (or uses STRATA_DATABASE_URL) and the API under uvicorn, then
for each round sends W requests at once (a barrier), in three scenarios: W identical
statements, W values of one single-valued slot, and W unrelated statements (the baseline:
nothing to serialise). Each scenario runs under two designs, in one process:

- ``locks+index`` (what strata does): advisory locks per (path, value) and (path, slot)
  before deciding, the unique partial indexes of migration 0009 as the backstop;
- ``index-only``: the locks disabled (``strata.write.locks.hold`` replaced by a no-op for the
  run), so the indexes alone refuse the second active holder and ``retrying`` runs the
  transaction again.

It reports per design and scenario: wall time per round (median, p95), requests retried
(transactions run again after a guard or deadlock), requests that failed, and the invariant
after each round (active holders of the slot, active copies of the value: 1 is right).
Prints one JSON object. Usage: python eval/bench_write_concurrency.py [--writers 16]
[--rounds 10]
"""

from __future__ import annotations

import argparse
import json
import logging
import statistics
import threading
import time
import uuid
from contextlib import contextmanager

import httpx

from strata.api.app import create_app
from strata.auth import create_tenant
from strata.providers import HashingEmbedder
from strata.write import locks

from harness import percentile, scratch_database, serving


class _Retries(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.count = 0

    def emit(self, record: logging.LogRecord) -> None:
        if record.getMessage().startswith("write retried"):
            self.count += 1


@contextmanager
def design(name: str):
    if name == "locks+index":
        yield
        return
    original = locks.hold
    locks.hold = lambda cur, keys: None
    try:
        yield
    finally:
        locks.hold = original


def burst(base: str, headers: dict, bodies: list[dict]) -> tuple[float, list[int]]:
    barrier = threading.Barrier(len(bodies) + 1)
    codes: list[int] = [0] * len(bodies)

    def send(i: int) -> None:
        with httpx.Client(base_url=base, headers=headers, timeout=120) as http:
            barrier.wait()
            codes[i] = http.post("/v1/memories", json=bodies[i]).status_code

    threads = [threading.Thread(target=send, args=(i,)) for i in range(len(bodies))]
    for t in threads:
        t.start()
    barrier.wait()
    started = time.perf_counter()
    for t in threads:
        t.join()
    return time.perf_counter() - started, codes


SCENARIOS = {
    "one_value": lambda path, i: {"content": "The user prefers PostgreSQL", "path": path,
                                  "slot": "user.preferred_database", "value": "postgresql"},
    "one_slot": lambda path, i: {"content": f"The user's lucky number is {i}", "path": path,
                                 "slot": "user.lucky_number", "value": str(i)},
    "unrelated": lambda path, i: {"content": f"The user visited city number {i}", "path": path},
}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--writers", type=int, default=16)
    parser.add_argument("--rounds", type=int, default=10)
    args = parser.parse_args()
    retries = _Retries()
    logging.getLogger("strata.write.locks").addHandler(retries)
    logging.getLogger("strata.write.locks").setLevel(logging.INFO)
    report: dict = {"writers": args.writers, "rounds": args.rounds, "designs": {}}
    with scratch_database() as (db, settings):
        _, key = create_tenant(db, f"bench{uuid.uuid4().hex[:8]}")
        headers = {"Authorization": f"Bearer {key.key}"}
        app = create_app(db=db, embedder=HashingEmbedder(settings.embedding_dim),
                         settings=settings)
        with serving(app) as base:
            for name in ("locks+index", "index-only"):
                out = report["designs"][name] = {}
                with design(name):
                    for scenario, body in SCENARIOS.items():
                        times, failed, wrong = [], 0, 0
                        before = retries.count
                        for r in range(args.rounds):
                            path = f"bench.{name.replace('+', '_').replace('-', '_')}.{scenario}.r{r}"
                            seconds, codes = burst(base, headers, [
                                {"memories": [body(path, i)]} for i in range(args.writers)])
                            times.append(seconds)
                            failed += sum(1 for c in codes if c >= 400)
                            with db.connection() as conn:
                                active = conn.execute(
                                    "SELECT count(*) AS n FROM memories WHERE path = %s::ltree"
                                    " AND status = 'active'", (path,)).fetchone()["n"]
                            expected = args.writers if scenario == "unrelated" else 1
                            wrong += active != expected
                        out[scenario] = {
                            "round_ms_median": round(statistics.median(times) * 1000, 1),
                            "round_ms_p95": round(percentile(times, 0.95) * 1000, 1),
                            "retried": retries.count - before,
                            "failed_requests": failed,
                            "rounds_breaking_the_invariant": wrong,
                        }
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
