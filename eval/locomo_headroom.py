"""How far ranking alone can take LoCoMo retrieval with the arms search has (issue 17).

Every question of categories 1-4 is asked once, in observations and turns mode, through the
production :func:`strata.search.candidates` (both arms' candidates with both raw scores) and
ordered by the production :func:`strata.ranking.fuse`. Against that (hybrid recall_all@5):

- ``stored_ceiling``: the share of questions whose evidence turns are all cited by some
  stored memory. In observations mode LoCoMo's observations do not cite every turn a
  question rests on, so no ranking can answer the rest.
- ``pool_ceiling``: the candidates that cite an evidence turn put first -- what a perfect
  re-ranker of what the two arms return could reach.
- ``learned``: a logistic re-ranker over the fusion's own per-candidate features (both
  normalised arm scores, the raw cosine and its gap to the query's best, BM25 over the
  query's best, both arm ranks, the time-window match, the query's vector weight and the
  fused score). Chosen on the tuning split only: trained on one tuning conversation and
  scored on the other, both ways (``tune_cross``), then trained on both and scored once on
  the other eight (``rest``). If a different weighting of these features could rank
  better, this is where it shows.

Prints one JSON object. Usage:
    python eval/locomo_headroom.py --data DIR [--embedder local|hash]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import locomo_eval as L  # noqa: E402
from harness import scratch_database  # noqa: E402

MODES = ("observations", "turns")


def collect(db, embedder, settings, convs) -> list[dict[str, Any]]:
    """One row per (mode, question): its conversation, evidence, what memories cite, the
    Found of the production candidates()."""
    from strata.search import SearchRequest, candidates

    cached = L.CachedEmbedder(embedder, [q["question"] for c in convs.values()
                                         for q in L.questions(c)])
    rows = []
    for mode in MODES:
        for cid, conv in convs.items():
            loaded = L.load_conversation(db, cached, settings, cid, conv, mode, "headroom")
            stored = set().union(*loaded["cites"].values()) if loaded["cites"] else set()
            for q in L.questions(conv):
                req = SearchRequest(query=q["question"], limit=L.LIMIT)
                found = candidates(db, loaded["caller"], req, cached, now=loaded["now"])
                rows.append({"mode": mode, "cid": cid, "q": q, "cites": loaded["cites"],
                             "stored": stored, "found": found})
    return rows


def features(row: dict[str, Any]) -> tuple[np.ndarray, list[Any]]:
    """Per candidate: the features the fusion has (see the module docstring)."""
    from strata import ranking

    found = row["found"]
    cands = found.candidates
    fused = ranking.fuse(cands, mode="hybrid", query=row["q"]["question"],
                         idf_sum=found.idf_sum)
    by_id = {h.candidate.id: h for h in fused.ranked}
    top = max((c.cosine or 0.0 for c in cands), default=0.0)
    best = max((c.bm25 or 0.0 for c in cands), default=0.0)
    x = []
    for c in cands:
        h = by_id[c.id]
        x.append([h.vector, h.text, c.cosine or 0.0, (c.cosine or 0.0) - top,
                  (c.bm25 or 0.0) / best if best else 0.0,
                  1 / (10 + c.vec_rank) if c.vec_rank else 0.0,
                  1 / (10 + c.txt_rank) if c.txt_rank else 0.0,
                  float(c.window_match == "starts"), float(c.window_match == "overlaps"),
                  fused.weight, h.vector * fused.weight, h.text * (1 - fused.weight), h.score])
    return np.asarray(x, dtype=np.float64).reshape(len(cands), 13), [c.id for c in cands]


def labels(row: dict[str, Any], ids: list[Any]) -> np.ndarray:
    want = set(row["q"]["evidence"])
    return np.asarray([1.0 if row["cites"].get(i, set()) & want else 0.0 for i in ids])


class Logistic:
    """L2-regularised logistic regression by gradient descent on standardised features."""

    def __init__(self, l2: float = 1e-3, steps: int = 800, rate: float = 0.5):
        self.l2, self.steps, self.rate = l2, steps, rate

    def fit(self, x: np.ndarray, y: np.ndarray) -> "Logistic":
        self.mu, self.sd = x.mean(0), x.std(0) + 1e-9
        z = (x - self.mu) / self.sd
        w, b = np.zeros(z.shape[1]), 0.0
        for _ in range(self.steps):
            p = 1 / (1 + np.exp(-(z @ w + b)))
            w -= self.rate * (z.T @ (p - y) / len(y) + self.l2 * w)
            b -= self.rate * float(np.mean(p - y))
        self.w, self.b = w, b
        return self

    def score(self, x: np.ndarray) -> np.ndarray:
        return ((x - self.mu) / self.sd) @ self.w + self.b


def train(rows: list[dict[str, Any]]) -> Logistic:
    xs, ys = [], []
    for r in rows:
        x, ids = features(r)
        if ids:
            xs.append(x)
            ys.append(labels(r, ids))
    return Logistic().fit(np.vstack(xs), np.concatenate(ys))


def recall(rows: list[dict[str, Any]], order) -> dict[str, Any]:
    """Per mode: mean recall_all@5 and MRR of ``order(row) -> ranked ids``."""
    out = {}
    for mode in MODES:
        scored = [L.score_one(r["q"]["evidence"], order(r), r["cites"])
                  for r in rows if r["mode"] == mode]
        agg = L.aggregate(scored)
        out[mode] = {"recall_all@5": agg["recall_all@5"], "mrr": agg["mrr"], "n": agg["n"]}
    return out


def production(row: dict[str, Any]) -> list[Any]:
    from strata import ranking

    found = row["found"]
    fused = ranking.fuse(found.candidates, mode="hybrid", query=row["q"]["question"],
                         idf_sum=found.idf_sum)
    return [h.candidate.id for h in fused.ranked[:L.LIMIT]]


def pool_oracle(row: dict[str, Any]) -> list[Any]:
    ranked = production(row) + [c.id for c in row["found"].candidates]
    ranked = list(dict.fromkeys(ranked))
    good = set(np.asarray(ranked, dtype=object)[labels(row, ranked) > 0]) if ranked else set()
    return ([i for i in ranked if i in good] + [i for i in ranked if i not in good])[:L.LIMIT]


def stored_ceiling(rows: list[dict[str, Any]]) -> dict[str, float]:
    return {mode: round(float(np.mean([set(r["q"]["evidence"]) <= r["stored"]
                                       for r in rows if r["mode"] == mode])), 4)
            for mode in MODES}


def learned(model: Logistic):
    def order(row: dict[str, Any]) -> list[Any]:
        x, ids = features(row)
        if not ids:
            return []
        return [ids[i] for i in np.argsort(-model.score(x), kind="stable")[:L.LIMIT]]
    return order


def report(rows: list[dict[str, Any]]) -> dict[str, Any]:
    tune = [r for r in rows if r["cid"] in L.TUNE]
    rest = [r for r in rows if r["cid"] not in L.TUNE]
    out: dict[str, Any] = {}
    for name, part in (("tune", tune), ("rest", rest)):
        if part:
            out[name] = {"production": recall(part, production),
                         "pool_ceiling": recall(part, pool_oracle),
                         "stored_ceiling": stored_ceiling(part)}
    tune_ids = sorted({r["cid"] for r in tune})
    if len(tune_ids) == 2:
        cross = {}
        for held in tune_ids:
            model = train([r for r in tune if r["cid"] != held])
            part = [r for r in tune if r["cid"] == held]
            cross[held] = {"learned": recall(part, learned(model)),
                           "production": recall(part, production)}
        out["tune_cross"] = cross
    if tune and rest:
        out["rest"]["learned"] = recall(rest, learned(train(tune)))
    return out


def main(argv: list[str] | None = None) -> int:
    from strata.config import Settings
    from strata.providers.embedders import get_embedder

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    L.data_argument(parser)
    parser.add_argument("--embedder", choices=("local", "hash"), default="local")
    parser.add_argument("--conversations", default=None,
                        help="comma-separated ids (default: all)")
    args = parser.parse_args(argv)
    only = [c.strip() for c in args.conversations.split(",")] if args.conversations else None
    convs = L.read_conversations(args.data, only)
    embedder = get_embedder(Settings(embedder=args.embedder))
    with scratch_database(embedding_dim=embedder.dim, embedder=args.embedder,
                          llm_base_url=None, llm_model=None) as (db, settings):
        rows = collect(db, embedder, settings, convs)
    print(json.dumps({"benchmark": "locomo_headroom", "embedder": embedder.model,
                      "conversations": list(convs), **report(rows)}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
