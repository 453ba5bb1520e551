"""Choose the fusion's weights (strata.search.ranking.FusionParams) on LoCoMo's tuning split.

Loads the tuning conversations (26 and 30 by default: never the held-out eight unless asked
with ``--conversations``) in observations and turns mode, asks every question once through
the production :func:`strata.search.hybrid.candidates` (both arms, both raw scores), then orders the
same candidates with the production :func:`strata.search.ranking.fuse` under every point of a grid
around :data:`strata.search.ranking.DEFAULT`. Nothing here ranks by itself: a weight found here
reaches search only by being written into ``strata.search.ranking.DEFAULT``.

The objective is the mean of hybrid recall_all@5 over the two modes (ties: mean MRR). Prints
one JSON object: the default's score, the best point, and the grid sorted best first.

Usage: python eval/tune_fusion.py --data DIR [--embedder local|hash] [--conversations 26,30]
                                  [--top 15]
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import locomo_eval as L  # noqa: E402
from harness import scratch_database  # noqa: E402

GRID = {
    "text_by_idf": (True, False),
    "vector_weight": (0.3, 0.4, 0.5, 0.6),
    "by_text_strength": (0.0, 0.2, 0.4, 0.6, 0.8, 1.0),
    "by_vector_top": (0.0, 0.5, 1.0, 2.0),
    "time_start": (0.1, 0.2),
}


def collect(db, embedder, settings, convs, modes=("observations", "turns")) -> dict[str, list]:
    """Per mode: for every question, (question, evidence, cites, Found)."""
    from strata.search.hybrid import SearchRequest, candidates

    all_q = [q["question"] for c in convs.values() for q in L.questions(c)]
    cached = L.CachedEmbedder(embedder, all_q)
    out: dict[str, list] = {}
    for mode in modes:
        rows = []
        for cid, conv in convs.items():
            loaded = L.load_conversation(db, cached, settings, cid, conv, mode, "tune")
            for q in L.questions(conv):
                req = SearchRequest(query=q["question"], limit=L.LIMIT)
                found = candidates(db, loaded["caller"], req, cached, now=loaded["now"])
                rows.append((q, loaded["cites"], found))
        out[mode] = rows
    return out


def score(collected: dict[str, list], params) -> dict[str, Any]:
    from strata.search.ranking import fuse

    per_mode = {}
    for mode, rows in collected.items():
        scores = []
        for q, cites, found in rows:
            fused = fuse(found.candidates, mode="hybrid", query=q["question"],
                         idf_sum=found.idf_sum, params=params, telling=found.telling)
            got = [r.candidate.id for r in fused.ranked[:L.LIMIT]]
            scores.append(L.score_one(q["evidence"], got, cites))
        per_mode[mode] = L.aggregate(scores)
    objective = sum(m["recall_all@5"] for m in per_mode.values()) / len(per_mode)
    mrr = sum(m["mrr"] for m in per_mode.values()) / len(per_mode)
    return {"objective": round(objective, 4), "mrr": round(mrr, 4), "modes": per_mode}


def main(argv: list[str] | None = None) -> int:
    from strata.foundation.config import Settings
    from strata.providers.embedders import get_embedder
    from strata.search.ranking import DEFAULT

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    L.data_argument(parser)
    parser.add_argument("--embedder", choices=("local", "hash"), default="local")
    parser.add_argument("--conversations", default=",".join(sorted(L.TUNE)))
    parser.add_argument("--top", type=int, default=15)
    parser.add_argument("--within", type=float, default=None,
                        help="list every point within this of the best objective instead of --top")
    args = parser.parse_args(argv)
    only = [c.strip() for c in args.conversations.split(",") if c.strip()]
    convs = L.read_conversations(args.data, only)
    embedder = get_embedder(Settings(embedder=args.embedder))
    with scratch_database(embedding_dim=embedder.dim, embedder=args.embedder,
                          llm_base_url=None, llm_model=None) as (db, settings):
        collected = collect(db, embedder, settings, convs)
    grid = []
    keys = list(GRID)
    for values in itertools.product(*(GRID[k] for k in keys)):
        params = replace(DEFAULT, **dict(zip(keys, values)),
                         time_overlap=dict(zip(keys, values))["time_start"] / 2)
        grid.append({"params": {k: getattr(params, k) for k in keys}, **score(collected, params)})
    grid.sort(key=lambda g: (-g["objective"], -g["mrr"]))
    print(json.dumps({
        "conversations": list(convs), "embedder": embedder.model,
        "default": {"params": asdict(DEFAULT), **score(collected, DEFAULT)},
        "best": grid[0], "points": len(grid),
        "grid": ([g for g in grid if g["objective"] >= grid[0]["objective"] - args.within]
                 if args.within is not None else grid[:args.top]),
    }, indent=2, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
