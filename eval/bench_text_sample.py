"""The text arm's one-lexeme sample: what skipping common lexemes costs and saves.

On a database seeded and kept by ``eval/bench_search.py --keep DIR`` (required: this script
seeds nothing), for one tenant's queries (the same generated queries bench_search measures),
runs every search once per setting of ``strata.search.hybrid.COMMON_LEXEME_ROWS`` -- ``off`` is
"no lexeme is common", the arm as it was; ``5000@500`` also sets the two-lexeme cap
(``TEXT_TWO_LEXEME_CAP``) to 500 -- interleaved (each query runs every setting, in a
rotating order, after one untimed warm-up run), and reports per setting:

  * hybrid and keyword ``search()`` latency p50/p95 (query embedding excluded, bookkeeping
    off: it is the same for every setting);
  * ``*_top10_vs_uncapped``: the share of the top 10 that the same search returns with no
    cap at all on the text arm (every match scored, BM25's N counted in full) -- how close
    the capped arm's sample comes to scoring every match;
  * ``one_lexeme_common_skipped``: the share of queries for which a common lexeme's rows were
    left out (at least one query word common and at least the arm's depth of rows sharing
    two query words).

The caps (``TEXT_TWO_LEXEME_CAP`` unless a setting names one, ``TEXT_ONE_LEXEME_CAP``,
``BM25_STAT_CAP``) are the production constants, imported. Prints one JSON object.

Usage: python eval/bench_text_sample.py --keep DIR [--tenant 0] [--queries 60]
                                        [--settings off,5000,1000,300]
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

import numpy as np
import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_search as B  # noqa: E402
from harness import NoAccessLog, percentile  # noqa: E402
from strata.auth.keys import authenticate  # noqa: E402
from strata.db.vector import register_vector  # noqa: E402
from strata.search import hybrid as S, ranking  # noqa: E402
from strata.search.hybrid import SearchRequest  # noqa: E402

OFF = 10**15  # no lexeme is in that many rows


def _stats(ms: list[float]) -> dict:
    return {"p50_ms": round(percentile(ms, 0.50), 2), "p95_ms": round(percentile(ms, 0.95), 2)}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--keep", required=True, help="a database kept by bench_search.py")
    parser.add_argument("--tenant", type=int, default=0, help="index of the seeded tenant")
    parser.add_argument("--queries", type=int, default=60)
    parser.add_argument("--settings", default="off,5000,1000,300",
                        help="COMMON_LEXEME_ROWS values to compare (off: none is common; "
                             "N@CAP also sets the two-lexeme cap)")
    parser.add_argument("--shared-buffers", default="4GB")
    args = parser.parse_args()
    state_path = Path(args.keep) / "bench_search_state.json"
    if not state_path.exists():
        parser.error(f"{args.keep} holds no seed of eval/bench_search.py --keep")
    labels = [s.strip() for s in args.settings.split(",") if s.strip()]
    values = {label: _setting(label, S.TEXT_TWO_LEXEME_CAP) for label in labels}
    production = (S.TEXT_TWO_LEXEME_CAP, S.TEXT_ONE_LEXEME_CAP, ranking.BM25_STAT_CAP,
                  S.COMMON_LEXEME_ROWS)
    centroids, words = B.make_space()
    with B.database(args.keep, args.shared_buffers) as (db, _settings, url, _path):
        state = json.loads(state_path.read_text())
        tenant = state["tenants"][args.tenant]
        embedder = B.FixedEmbedder()
        with psycopg.connect(url) as conn:
            register_vector(conn)
            rng = np.random.default_rng(zlib.crc32(tenant["name"].encode()))
            _, mat = B.active_rows(conn, tenant["id"])
            texts, _ = B.make_queries(rng, centroids, words, embedder, args.queries,
                                      tenant["name"], mat)
        caller = authenticate(db, tenant["key"], surface="http")
        quiet = NoAccessLog()

        def run(query: str, mode: str, setting: tuple[int, int], *, uncapped: bool = False):
            common_rows, two = setting
            _, one, stat, _ = production
            caps = (10**9, 10**9) if uncapped else (two, one)
            S.TEXT_TWO_LEXEME_CAP, S.TEXT_ONE_LEXEME_CAP = caps
            ranking.BM25_STAT_CAP = 10**9 if uncapped else stat
            S.COMMON_LEXEME_ROWS = common_rows
            t0 = time.perf_counter()
            found = S.search(db, caller, SearchRequest(query=query, mode=mode, limit=10),
                             embedder, access_log=quiet)
            return (time.perf_counter() - t0) * 1000, [r.id for r in found]

        out = {label: {"hybrid": [], "keyword": [], "agree_hybrid": [], "agree_keyword": []}
               for label in labels}
        skipped = {label: 0 for label in labels}
        try:
            for i, query in enumerate(texts):
                reference = {mode: run(query, mode, (OFF, 0), uncapped=True)[1]
                             for mode in ("hybrid", "keyword")}
                for label in labels[i % len(labels):] + labels[:i % len(labels)]:
                    for mode in ("hybrid", "keyword"):
                        run(query, mode, values[label])  # untimed: the plan and the buffers
                        ms, got = run(query, mode, values[label])
                        out[label][mode].append(ms)
                        agree = len(set(got) & set(reference[mode])) / max(1, len(reference[mode]))
                        out[label][f"agree_{mode}"].append(agree)
                    skipped[label] += _skips_common(db, caller, query, *values[label])
        finally:
            (S.TEXT_TWO_LEXEME_CAP, S.TEXT_ONE_LEXEME_CAP, ranking.BM25_STAT_CAP,
             S.COMMON_LEXEME_ROWS) = production
        with db.connection() as conn:
            common_now = len(S.common_lexemes(db, conn, caller))
    report = {
        "benchmark": "bench_text_sample",
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
        "tenant_rows": tenant["rows"], "table_rows": sum(t["rows"] for t in state["tenants"]),
        "queries": len(texts), "text_two_lexeme_cap": production[0],
        "text_one_lexeme_cap": production[1], "bm25_stat_cap": production[2],
        "common_lexeme_rows_in_production": production[3],
        "tenant_common_lexemes_at_production_setting": common_now,
        "settings": {label: {
            "hybrid": _stats(v["hybrid"]), "keyword": _stats(v["keyword"]),
            "hybrid_top10_vs_uncapped": round(float(np.mean(v["agree_hybrid"])), 3),
            "keyword_top10_vs_uncapped": round(float(np.mean(v["agree_keyword"])), 3),
            "one_lexeme_common_skipped": round(skipped[label] / len(texts), 3),
        } for label, v in out.items()},
    }
    print(json.dumps(report, indent=2))


def _setting(label: str, two_cap: int) -> tuple[int, int]:
    """(COMMON_LEXEME_ROWS, TEXT_TWO_LEXEME_CAP) of a ``--settings`` label."""
    rows, _, cap = label.partition("@")
    return (OFF if rows == "off" else int(rows)), (int(cap) if cap else two_cap)


def _skips_common(db, caller, query: str, common_rows: int, two_cap: int) -> int:
    """1 when the arm leaves a common lexeme's rows out for ``query`` at ``common_rows``."""
    S.COMMON_LEXEME_ROWS = common_rows
    req = SearchRequest(query=query, mode="keyword", limit=10)
    params, _ = S._search_params(caller, req, B.FixedEmbedder(), now=None, ignore_status=False)
    with db.connection() as conn:
        common = S.common_lexemes(db, conn, caller)
        row = conn.execute(
            "SELECT t.any_common IS NOT NULL AND (SELECT count(*) FROM (SELECT 1 FROM memories m"
            " WHERE " + S.LEXEMES + " @@ t.two_lexemes::tsquery"
            " AND m.tenant_id = %(tenant)s AND m.status = 'active' LIMIT %(depth)s) s)"
            " >= %(depth)s AND %(two_cap)s >= %(depth)s AS skips"
            f" FROM ({S._QUERY_TERMS}) t", {**params, "common": common, "two_cap": two_cap}
        ).fetchone()
    return int(bool(row["skips"]))


if __name__ == "__main__":
    main()
