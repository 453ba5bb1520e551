"""Fit and check the relevance score (strata.search.ranking, "Relevance") on LoCoMo.

A search result's ``score`` is the probability that it is relevant, from a few features the
search already has for it (:func:`strata.search.ranking.score_features`) through a logistic
function whose coefficients are constants in :mod:`strata.search.ranking`
(:data:`strata.search.ranking.CALIBRATIONS`, one per embedder: a ``hash`` cosine and a ``local``
one mean different things). This script makes and checks those constants.

What "relevant" means here: LoCoMo's observations mode (every pre-extracted fact a memory
citing the turn it came from; :func:`locomo_eval.load_conversation`), each question of
categories 1-4 asked once through the production path (:func:`strata.search.hybrid.candidates` and
:func:`strata.search.ranking.fuse`, hybrid, ``limit`` 10); each of the top 10 results is *relevant*
when it cites one of the question's evidence turns. Each conversation is also asked the
questions of another conversation of its group (:func:`foreign_of`): nothing in its store
answers them, so all their results are irrelevant -- without them the fit would learn that
the first result is likely relevant because it is first, which holds only when the store
holds the answer.

Fit on the tuning conversations (26 and 30, :data:`locomo_eval.TUNE`), report on the held-out
ones (the rest): at ``min_score`` 0.3 / 0.5 / 0.7, the share of relevant results kept
(recall), of the others dropped, and precision; the expected calibration error (10 equal-width
bins: the mean over results of |mean score - share relevant| of its bin), all over the
conversations' own questions; for the foreign ones (``unanswerable``), the share of results
dropped and of questions left with no result; and the same for the scores the constants in
:mod:`strata.search.ranking` give now (``current``), so a refit can be compared with what ships. The order of the results is the production order: the score only
replaces the number shown and what ``min_score`` compares with.

Usage: python eval/score_calibration.py --data DIR [--embedder local|hash]
           [--mode observations|ingest] [--conversations 26,30,41] [--rows FILE] [--fit]
``--rows FILE`` keeps the collected results (features and labels, no text) in FILE, and
reads them from it when it exists: the fit can be redone without loading LoCoMo again.
``--fit`` adds ``fit``: the coefficients to paste into ``strata.search.ranking.CALIBRATIONS``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import locomo_eval as L  # noqa: E402
from harness import api_client, scratch_database  # noqa: E402

THRESHOLDS = (0.3, 0.5, 0.7)
# The score's prior odds of relevance (strata.search.ranking, "Relevance"): the fit weighs the
# relevant results of the tuning split 1.5 times as much in total as the others, so that a
# score of 0.5 is where dropping a result is right when missing a relevant one costs 1.5
# times as much as showing one more that is not -- whatever share of a store's results is
# relevant. Chosen on the tuning split (local embedder): the smallest of 1, 1.5 and 2 keeping
# 85 % of its relevant results at 0.5 (1 kept 82 %; 2 dropped only 63 % of the others).
PRIOR_ODDS = 1.5
BINS = 10
# The fit's L2 penalty on the coefficients (not the intercept), per result: keeps collinear
# features (cosine and the fused margin) from trading huge opposite weights.
L2 = 1e-3


# --------------------------------------------------------------------------------------
# Collecting
# --------------------------------------------------------------------------------------


def collect(db, embedder, settings, convs: dict[str, dict[str, Any]],
            mode: str = "observations") -> list[dict[str, Any]]:
    """Per question of every conversation, its top ``LIMIT`` results in production order, each
    with its raw parts (:class:`strata.search.ranking.ScoreInputs`) and whether it is relevant.
    ``mode``: how LoCoMo is stored (locomo_eval's ``observations``, or ``ingest``: through
    the real pipeline, a memory citing the turns its evidence names)."""
    import contextlib

    all_q = {cid: L.questions(c) for cid, c in convs.items()}
    cached = L.CachedEmbedder(embedder, [q["question"] for qs in all_q.values() for q in qs])
    foreign = foreign_of(list(convs))
    rows: list[dict[str, Any]] = []
    with contextlib.ExitStack() as stack:
        client = (stack.enter_context(api_client(db, cached, settings))
                  if mode == "ingest" else None)
        for cid, conv in convs.items():
            t0 = time.perf_counter()
            loaded = (L.ingest_conversation(client, db, cid, conv, "score") if mode == "ingest"
                      else L.load_conversation(db, cached, settings, cid, conv, mode, "score"))
            asked = [(q, False) for q in all_q[cid]]
            asked += [(q, True) for q in all_q.get(foreign.get(cid, ""), [])]
            for q, other in asked:
                rows += results_of(db, cached, loaded, cid, q, set() if other else
                                   set(q["evidence"]), other)
            print(f"score_calibration: conversation {cid}: {len(asked)} questions, "
                  f"{time.perf_counter() - t0:.0f} s", file=sys.stderr)
    return rows


def results_of(db, embedder, loaded: dict[str, Any], cid: str, q: dict[str, Any],
               want: set[str], other: bool) -> list[dict[str, Any]]:
    """One question's top ``LIMIT`` results, through the production path, as rows."""
    from strata.search import ranking
    from strata.search.hybrid import SearchRequest, candidates

    req = SearchRequest(query=q["question"], limit=L.LIMIT)
    found = candidates(db, loaded["caller"], req, embedder, now=loaded["now"])
    fused = ranking.fuse(found.candidates, mode="hybrid", query=q["question"],
                         idf_sum=found.idf_sum, telling=found.telling)
    return [{"conv": cid, "q": q["i"], "category": q["category"], "foreign": other,
             "label": int(bool(loaded["cites"].get(hit.candidate.id, set()) & want)),
             **ranking.score_inputs(hit, fused, rank).__dict__}
            for rank, hit in enumerate(fused.ranked[:L.LIMIT], 1)]


def foreign_of(conv_ids: Sequence[str]) -> dict[str, str]:
    """For each conversation, another of its group (tune or rest) whose questions it is asked
    too: questions nothing in its store answers (each result irrelevant), so the fit cannot
    learn that a first result is relevant because it is first. Within the group, so the held-out
    questions never reach the fit."""
    out: dict[str, str] = {}
    for group in (sorted(c for c in conv_ids if c in L.TUNE),
                  sorted(c for c in conv_ids if c not in L.TUNE)):
        if len(group) > 1:
            out.update({c: group[(i + 1) % len(group)] for i, c in enumerate(group)})
    return out


# --------------------------------------------------------------------------------------
# Fitting and reporting
# --------------------------------------------------------------------------------------


def design(rows: Sequence[dict[str, Any]], names: Sequence[str]) -> np.ndarray:
    """One row of features (:func:`strata.search.ranking.score_features`) per result."""
    from strata.search import ranking

    out = []
    for r in rows:
        f = ranking.score_features(inputs_of(r))
        out.append([f[n] for n in names])
    return np.array(out, dtype=float).reshape(len(rows), len(names))


def prior_weights(y: np.ndarray, odds: float = PRIOR_ODDS) -> np.ndarray:
    """Per result, the weight that gives the relevant results ``odds`` times the others' total
    weight (the score's prior; LoCoMo's own is about 1:10), with the mean weight 1."""
    pos = max(int(y.sum()), 1)
    neg = max(len(y) - int(y.sum()), 1)
    share = odds / (1.0 + odds)
    return np.where(y == 1, len(y) * share / pos, len(y) * (1.0 - share) / neg)


def fit(x: np.ndarray, y: np.ndarray, weights: np.ndarray | None = None, l2: float = L2,
        iterations: int = 100) -> tuple[float, np.ndarray]:
    """Weighted logistic regression by Newton's method (IRLS): the intercept and coefficients
    that maximise the weighted likelihood of ``y`` (0/1) given ``x``, less
    ``l2 * n * |coefficients|^2``."""
    n, k = x.shape
    wt = np.ones(n) if weights is None else weights
    a = np.hstack([np.ones((n, 1)), x])
    beta = np.zeros(k + 1)
    penalty = np.full(k + 1, l2 * n)
    penalty[0] = 0.0
    for _ in range(iterations):
        p = 1.0 / (1.0 + np.exp(-(a @ beta)))
        grad = a.T @ (wt * (y - p)) - penalty * beta
        hess = (a * (wt * p * (1 - p))[:, None]).T @ a + np.diag(penalty)
        step = np.linalg.solve(hess, grad)
        beta += step
        if np.max(np.abs(step)) < 1e-10:
            break
    return float(beta[0]), beta[1:]


def report(scores: np.ndarray, y: np.ndarray) -> dict[str, Any]:
    """Recall (relevant kept), drop (others dropped) and precision at each threshold, and the
    expected calibration error over ``BINS`` equal-width bins: ``ece`` at the score's prior
    (the results weighted as the fit weighs them; :func:`group_report` takes it over the
    foreign questions' results too, as the fit does), ``ece_observed`` against the share of
    relevant results as it is (LoCoMo's prior: a score at the prior odds is not calibrated
    to it, and this says by how much)."""
    pos, neg = y == 1, y == 0
    out: dict[str, Any] = {"results": int(len(y)), "relevant": int(pos.sum()),
                           "base_rate": round(float(y.mean()), 4) if len(y) else None}
    for t in THRESHOLDS:
        kept = scores >= t
        out[f"at_{t}"] = {
            "recall": _ratio(int((kept & pos).sum()), int(pos.sum())),
            "dropped": _ratio(int((~kept & neg).sum()), int(neg.sum())),
            "precision": _ratio(int((kept & pos).sum()), int(kept.sum())),
            "kept": int(kept.sum()),
        }
    out["ece"] = round(ece(scores, y, prior_weights(y)), 4) if len(y) else None
    out["ece_observed"] = round(ece(scores, y), 4) if len(y) else None
    return out


def ece(scores: np.ndarray, y: np.ndarray, weights: np.ndarray | None = None,
        bins: int = BINS) -> float:
    """Sum over bins of the bin's share of the (weighted) results times |its mean score - its
    (weighted) share of relevant results|."""
    wt = np.ones(len(y)) if weights is None else weights
    which = np.minimum((scores * bins).astype(int), bins - 1)
    total = 0.0
    for b in range(bins):
        inside = which == b
        if inside.any():
            w = wt[inside]
            total += w.sum() * abs(np.average(scores[inside], weights=w)
                                   - np.average(y[inside], weights=w))
    return total / wt.sum()


def _ratio(a: int, b: int) -> float | None:
    return round(a / b, 4) if b else None


def inputs_of(r: dict[str, Any]):
    from strata.search import ranking

    return ranking.ScoreInputs(**{k: r[k] for k in ranking.ScoreInputs.__dataclass_fields__})


def current_scores(rows: Sequence[dict[str, Any]], embedder_model: str) -> np.ndarray:
    """The scores the constants in strata.search.ranking give these results now."""
    from strata.search import ranking

    cal = ranking.calibration_for(embedder_model)
    return np.array([ranking.calibrated(inputs_of(r), cal).score for r in rows], dtype=float)


def group_report(rows: Sequence[dict[str, Any]], scores: np.ndarray) -> dict[str, Any]:
    """``report`` over the conversations' own questions, and for the questions asked of
    another conversation's store (nothing answers them): the share of their results dropped,
    and of the questions left with no result, at each threshold."""
    own = np.array([not r.get("foreign") for r in rows], dtype=bool)
    y = np.array([r["label"] for r in rows])
    out = report(scores[own], y[own])
    # at the score's prior: every result, weighted as the fit weighs the tuning ones
    out["ece"] = round(ece(scores, y, prior_weights(y)), 4)
    if (~own).any():
        by_q: dict[tuple, list[float]] = {}
        for r, s in zip(rows, scores, strict=True):
            if r.get("foreign"):
                by_q.setdefault((r["conv"], r["q"]), []).append(s)
        out["unanswerable"] = {"results": int((~own).sum()), "questions": len(by_q), **{
            f"at_{t}": {"dropped": _ratio(int((scores[~own] < t).sum()), int((~own).sum())),
                        "questions_empty": _ratio(sum(max(v) < t for v in by_q.values()),
                                                  len(by_q))}
            for t in THRESHOLDS}}
    return out


def evaluate(rows: list[dict[str, Any]], embedder_model: str, do_fit: bool) -> dict[str, Any]:
    from strata.search import ranking

    parts = {"tune": [r for r in rows if r["conv"] in L.TUNE],
             "rest": [r for r in rows if r["conv"] not in L.TUNE]}
    out: dict[str, Any] = {"embedder": embedder_model,
                           "conversations": sorted({r["conv"] for r in rows}, key=int),
                           "prior_odds": PRIOR_ODDS, "current": {}}
    for group, part in parts.items():
        if part:
            out["current"][group] = group_report(part, current_scores(part, embedder_model))
    if do_fit and parts["tune"]:
        names = ranking.FEATURES
        y = np.array([r["label"] for r in parts["tune"]])
        intercept, coef = fit(design(parts["tune"], names), y, prior_weights(y))
        out["fit"] = {"intercept": round(intercept, 4),
                      "coefficients": {n: round(float(c), 4) for n, c in zip(names, coef)}}
        for group, part in parts.items():
            if part:
                z = intercept + design(part, names) @ coef
                out["fit"][group] = group_report(part, 1.0 / (1.0 + np.exp(-z)))
    return out


def main(argv: list[str] | None = None) -> int:
    from strata.foundation.config import Settings
    from strata.providers.embedders import get_embedder

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    L.data_argument(parser)
    parser.add_argument("--embedder", choices=("local", "hash"), default="local")
    parser.add_argument("--mode", choices=("observations", "ingest"), default="observations",
                        help="how LoCoMo is stored (ingest: through the rule pipeline; a "
                        "check of the constants, which are fitted in observations mode)")
    parser.add_argument("--conversations", help="comma-separated ids (default all)")
    parser.add_argument("--rows", type=Path, help="keep the collected results here (JSON)")
    parser.add_argument("--fit", action="store_true", help="fit on tune, print coefficients")
    args = parser.parse_args(argv)
    only = [c.strip() for c in args.conversations.split(",") if c.strip()] \
        if args.conversations else None
    embedder = get_embedder(Settings(embedder=args.embedder))
    if args.rows and args.rows.exists():
        rows = json.loads(args.rows.read_text())
        rows = [r for r in rows if not only or r["conv"] in only]
    else:
        convs = L.read_conversations(args.data, only)
        with scratch_database(embedding_dim=embedder.dim, embedder=args.embedder,
                              llm_base_url=None, llm_model=None) as (db, settings):
            rows = collect(db, embedder, settings, convs, args.mode)
        if args.rows:
            args.rows.write_text(json.dumps(rows))
    print(json.dumps(evaluate(rows, embedder.model, args.fit), indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
