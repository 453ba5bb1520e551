"""How many candidates each arm hands the fusion (``strata.search.ranking.ARM_DEPTH``): what a
smaller depth saves and what it changes.

Two measurements, each optional, every depth against the same questions:

- ``--data DIR`` (LoCoMo): the tuning conversations (26 and 30; never the held-out eight
  unless ``--conversations`` names them), observations and turns mode, every question
  asked through the production :func:`strata.search.hybrid.candidates` at each depth and ordered
  by the production :func:`strata.search.ranking.fuse` with :data:`strata.search.ranking.DEFAULT`
  (``eval/tune_fusion.py``'s scoring): hybrid recall_all@5, MRR and the mean number of
  candidates the fusion ordered, per mode. A search's depth is never below its ``limit``
  (10 here).
- ``--keep DIR`` (a seed kept by ``eval/bench_search.py --keep``; ``--tenant`` picks which of
  its tenants, 0 being a large one): the seed's generated queries for that tenant, each run
  at every depth in a rotating order after one untimed run of all (interleaved, so the
  machine's drift falls on every depth alike), ``rounds`` times: in-process hybrid
  ``search()`` p50/p95 (query embedding excluded, bookkeeping off), and the share of each
  query's top 10 at that depth that the first depth listed also returns (``top10_vs_first``)
  and how many queries return the very same ten in the same order; and the vector arm's
  recall@10 against exact search over the tenant's active rows (``mode=vector, limit=10``).
  The arm's ranking fetches ``max(ranking.VECTOR_FETCH, depth)`` rows whatever the depth (an
  HNSW walk stopped at fewer loses recall), so ``--depths 50,30`` with a fetch of 50 compares
  the depth alone; ``D/F`` sets the fetch too (``30/30``: a walk that stops at 30, as the
  arm ran before the two were split).

The depth is set on ``strata.search.ranking.ARM_DEPTH`` and the fetch on ``VECTOR_FETCH`` (which
the search reads per request), and both put back after. Prints one JSON object.

Usage: python eval/bench_arm_depth.py [--data DIR] [--keep DIR] [--tenant 0]
                                      [--depths 50,30,30/30] [--queries 200] [--rounds 2]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
import zlib
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness import NoAccessLog, percentile, scratch_database  # noqa: E402
from strata.search import ranking  # noqa: E402


PRODUCTION = (ranking.ARM_DEPTH, ranking.VECTOR_FETCH)


def use(setting: str) -> None:
    """Set the search's depth (and fetch, for ``D/F``) to ``setting``."""
    depth, _, fetch = setting.partition("/")
    ranking.ARM_DEPTH = int(depth)
    ranking.VECTOR_FETCH = int(fetch) if fetch else PRODUCTION[1]


def locomo(data: Path, conversations: list[str], depths: list[str], embedder_name: str
           ) -> dict[str, Any]:
    """Hybrid recall_all@5 and MRR per depth and mode on the named conversations: each
    conversation loaded once per mode, every question asked at every depth."""
    import locomo_eval as L
    import tune_fusion as T
    from strata.foundation.config import Settings
    from strata.providers.embedders import get_embedder
    from strata.search.hybrid import SearchRequest, candidates

    convs = L.read_conversations(data, conversations)
    embedder = get_embedder(Settings(embedder=embedder_name))
    cached = L.CachedEmbedder(embedder, [q["question"] for c in convs.values()
                                         for q in L.questions(c)])
    asked: dict[str, dict[str, list]] = {d: {} for d in depths}
    with scratch_database(embedding_dim=embedder.dim, embedder=embedder_name,
                          llm_base_url=None, llm_model=None) as (db, settings):
        for mode in ("observations", "turns"):
            for cid, conv in convs.items():
                loaded = L.load_conversation(db, cached, settings, cid, conv, mode, "depth")
                for q in L.questions(conv):
                    req = SearchRequest(query=q["question"], limit=L.LIMIT)
                    for depth in depths:
                        use(depth)
                        found = candidates(db, loaded["caller"], req, cached, now=loaded["now"])
                        asked[depth].setdefault(mode, []).append((q, loaded["cites"], found))
    out = {}
    for depth in depths:
        scored = T.score(asked[depth], ranking.DEFAULT)  # the production fusion
        out[depth] = {"objective": scored["objective"], "mrr": scored["mrr"], **{
            mode: {**{k: m[k] for k in ("recall_all@5", "mrr", "n")},
                   "candidates_mean": round(float(np.mean(
                       [len(found.candidates) for _, _, found in asked[depth][mode]])), 1)}
            for mode, m in scored["modes"].items()}}
    return {"conversations": list(convs), "embedder": embedder.model, "depths": out}


def latency(keep: str, tenant_index: int, depths: list[str], queries: int, rounds: int
            ) -> dict[str, Any]:
    """Per depth: interleaved in-process hybrid latency, agreement with the first depth, and
    the vector arm's recall@10 against exact search."""
    import bench_search as B
    import psycopg

    from strata.auth.keys import authenticate
    from strata.db.vector import register_vector
    from strata.search import hybrid as S
    from strata.search.hybrid import SearchRequest

    state_path = Path(keep) / "bench_search_state.json"
    if not state_path.exists():
        raise SystemExit(f"{keep} holds no seed of eval/bench_search.py --keep")
    centroids, words = B.make_space()
    with B.database(keep, "4GB") as (db, _settings, url, _path):
        state = json.loads(state_path.read_text())
        tenant = state["tenants"][tenant_index]
        embedder = B.FixedEmbedder()
        with psycopg.connect(url) as conn:
            register_vector(conn)
            rng = np.random.default_rng(zlib.crc32(tenant["name"].encode()))
            ids, mat = B.active_rows(conn, tenant["id"])
            texts, vecs = B.make_queries(rng, centroids, words, embedder, queries,
                                         tenant["name"], mat)
        exact = B.exact_top(ids, mat, vecs)
        caller = authenticate(db, tenant["key"], surface="http")
        quiet = NoAccessLog()

        def run(query: str, depth: str) -> tuple[float, list]:
            use(depth)
            t0 = time.perf_counter()
            found = S.search(db, caller, SearchRequest(query=query, limit=10), embedder,
                             access_log=quiet)
            return (time.perf_counter() - t0) * 1000, [r.id for r in found]

        recall: dict[str, list[float]] = {d: [] for d in depths}
        for i, query in enumerate(texts):  # untimed: the plans and the buffers
            for depth in depths:
                run(query, depth)  # sets the depth
                # the vector arm alone, against exact search: the fetch is how many rows an
                # HNSW walk finds before the arm re-sorts them
                got = S.search(db, caller, SearchRequest(query=query, mode="vector", limit=10),
                               embedder, access_log=quiet)
                recall[depth].append(len({str(r.id) for r in got} & set(exact[i])) / 10)
        ms: dict[str, list[float]] = {d: [] for d in depths}
        tops: dict[str, list[list]] = {d: [] for d in depths}
        for r in range(rounds):
            for i, query in enumerate(texts):
                turn = (i + r) % len(depths)
                for depth in depths[turn:] + depths[:turn]:
                    took, top = run(query, depth)
                    ms[depth].append(took)
                    if r == 0:
                        tops[depth].append(top)
    first = depths[0]
    return {
        "tenant_rows": tenant["rows"], "table_rows": sum(t["rows"] for t in state["tenants"]),
        "queries": len(texts), "rounds": rounds,
        "depths": {d: {
            "hybrid_p50_ms": round(percentile(ms[d], 0.50), 2),
            "hybrid_p95_ms": round(percentile(ms[d], 0.95), 2),
            "top10_vs_first": round(float(np.mean([
                len(set(a) & set(b)) / max(1, len(b)) for a, b in zip(tops[d], tops[first])])), 3),
            "same_ten_same_order": sum(a == b for a, b in zip(tops[d], tops[first])),
            "vector_recall_at_10": round(float(np.mean(recall[d])), 4),
            "vector_recall_at_10_min": round(float(np.min(recall[d])), 2),
        } for d in depths},
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=None, help="LoCoMo (see locomo_eval)")
    parser.add_argument("--conversations", default="26,30")
    parser.add_argument("--embedder", choices=("local", "hash"), default="local")
    parser.add_argument("--keep", default=None, help="a seed kept by bench_search.py --keep")
    parser.add_argument("--tenant", type=int, default=0)
    parser.add_argument("--depths", default="50,30,30/30",
                        help="depths to compare; D/F also sets the vector arm's fetch")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args(argv)
    if args.data is None and args.keep is None:
        parser.error("name --data, --keep or both")
    depths = [d.strip() for d in args.depths.split(",") if d.strip()]
    for d in depths:
        if not all(part.isdigit() and int(part) > 0 for part in d.split("/", 1)):
            parser.error(f"--depths: {d!r} is not a depth (D or D/F, positive integers)")
    report: dict[str, Any] = {
        "benchmark": "bench_arm_depth", "production_depth": PRODUCTION[0],
        "production_vector_fetch": PRODUCTION[1],
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version()}}
    try:
        # Latency first: once the local embedder has run in this process, its threads slowed
        # every search measured after it (10k-row tenant: p50 12.4 ms against 9.3 alone).
        if args.keep is not None:
            report["latency"] = latency(args.keep, args.tenant, depths, args.queries,
                                        args.rounds)
        if args.data is not None:
            report["locomo"] = locomo(args.data, args.conversations.split(","), depths,
                                      args.embedder)
    finally:
        ranking.ARM_DEPTH, ranking.VECTOR_FETCH = PRODUCTION
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
