"""The fit behind the relevance score (eval/score_calibration.py) on synthetic results, not
LoCoMo: what it fits is what strata.search.ranking computes from the pasted constants, it recovers
a known logistic model, its prior weighting moves only the intercept, and its report counts
as it says."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from strata.search import ranking

import support

ROOT = Path(__file__).resolve().parents[2]
support.load_module("locomo_eval", ROOT / "eval" / "locomo_eval.py", register=True)
calib = support.load_module("score_calibration", ROOT / "eval" / "score_calibration.py")

TRUE_INTERCEPT = -3.0
TRUE = {"cosine": 1.0, "text": 1.5, "rank_match": 2.0, "margin_match": 1.0}


def synthetic_rows(n: int, seed: int) -> list[dict]:
    """Results whose inputs are drawn at random and whose labels are drawn from the known
    logistic model TRUE, half in a tuning conversation and half in a held-out one."""
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(n):
        best = float(rng.uniform(0.3, 1.5))
        x = ranking.ScoreInputs(
            cosine=float(rng.uniform(-0.2, 1.0)), text=float(rng.uniform(0, 1)),
            fused=best - float(rng.uniform(0, 1.2)),
            best=best, rank=int(rng.integers(1, 11)))
        f = ranking.score_features(x)
        z = TRUE_INTERCEPT + sum(TRUE[k] * f[k] for k in TRUE)
        label = int(rng.uniform() < 1 / (1 + math.exp(-z)))
        rows.append({"conv": "26" if i % 2 else "41", "q": i // 10, "category": 4,
                     "foreign": False, "label": label, **x.__dict__})
    return rows


def test_fit_recovers_a_known_model_and_prior_weighting_moves_only_the_intercept():
    """Given results labelled by a known logistic model
    When fitted plainly, and at prior odds of 2:1
    Then the plain fit recovers the model's coefficients (within sampling error), and the
    weighted fit the same coefficients with the intercept moved by the change in prior log
    odds (control: the two intercepts differ by about that much, not by nothing)."""
    rows = synthetic_rows(20_000, seed=7)
    x = calib.design(rows, ranking.FEATURES)
    y = np.array([r["label"] for r in rows])
    b0, b = calib.fit(x, y, l2=0.0)
    for name, got in zip(ranking.FEATURES, b, strict=True):
        assert got == pytest.approx(TRUE[name], abs=0.45), name
    assert b0 == pytest.approx(TRUE_INTERCEPT, abs=0.4)
    w0, w = calib.fit(x, y, calib.prior_weights(y), l2=0.0)
    shift = math.log(calib.PRIOR_ODDS) - math.log(y.mean() / (1 - y.mean()))
    assert shift > 1.0  # the synthetic base rate is far below 2:1
    assert w0 - b0 == pytest.approx(shift, abs=0.35)
    assert np.allclose(w, b, atol=0.35)


def test_what_the_script_fits_is_what_search_computes_from_the_pasted_constants():
    """Given the script's fit on a tiny synthetic tuning split
    When its printed coefficients become a ranking.Calibration (as they are pasted into
    CALIBRATIONS)
    Then ranking.calibrated gives every held-out result the probability the script reports
    with (to the rounding of what it prints), and the script's ``current`` scores are those
    of the shipped constants."""
    rows = synthetic_rows(400, seed=3)
    out = calib.evaluate(rows, "strata-hash-v1-384", do_fit=True)
    fitted = out["fit"]
    cal = ranking.Calibration("pasted", fitted["intercept"],
                              tuple(fitted["coefficients"].items()))
    assert [n for n, _ in cal.coefficients] == list(ranking.FEATURES)
    rest = [r for r in rows if r["conv"] != "26"]
    z = fitted["intercept"] + calib.design(rest, ranking.FEATURES) @ np.array(
        list(fitted["coefficients"].values()))
    script = 1 / (1 + np.exp(-z))
    runtime = [ranking.calibrated(calib.inputs_of(r), cal).score for r in rest]
    assert np.allclose(runtime, script, atol=1e-12)
    shipped = calib.current_scores(rest, "strata-hash-v1-384")
    assert np.allclose(shipped, [ranking.calibrated(calib.inputs_of(r), ranking.CALIBRATIONS[
        "hash"]).score for r in rest])
    assert set(out["fit"]) >= {"tune", "rest"} and out["fit"]["rest"]["results"] == len(rest)


def test_report_counts_kept_dropped_precision_and_calibration_error():
    """Given four results with known scores and labels
    Then at 0.5 half the relevant are kept and half the others dropped, and the calibration
    error is the results-weighted gap of each bin (control: a perfectly calibrated set has
    none)."""
    scores = np.array([0.95, 0.65, 0.45, 0.15])
    y = np.array([1, 0, 1, 0])
    rep = calib.report(scores, y)
    assert rep["at_0.5"] == {"recall": 0.5, "dropped": 0.5, "precision": 0.5, "kept": 2}
    assert rep["at_0.3"] == {"recall": 1.0, "dropped": 0.5, "precision": 0.6667, "kept": 3}
    assert rep["at_0.7"] == {"recall": 0.5, "dropped": 1.0, "precision": 1.0, "kept": 1}
    # four bins of one result each: |0.95-1|, |0.65-0|, |0.45-1|, |0.15-0|
    assert rep["ece_observed"] == pytest.approx((0.05 + 0.65 + 0.55 + 0.15) / 4, abs=1e-4)
    assert calib.ece(np.array([0.25, 0.25, 0.25, 0.25]), np.array([1, 0, 0, 0])) == 0.0


def test_foreign_questions_stay_within_their_group():
    """Each conversation is asked another's questions of its own group: the held-out
    questions never reach the tuning conversations' fit."""
    pairs = calib.foreign_of(["26", "30", "41", "42", "43"])
    assert pairs == {"26": "30", "30": "26", "41": "42", "42": "43", "43": "41"}
    assert calib.foreign_of(["26", "41"]) == {}


def test_collect_labels_results_by_their_evidence_through_the_production_path(module_db):
    """Given the tiny LoCoMo-shaped conversation (tests/data/locomo_tiny), in observations
    mode with the hashing embedder
    When the script collects its questions' results
    Then the single-hop question's evidence is among them, labelled relevant, and the other
    results are labelled irrelevant (control: both labels occur); every row carries what the
    score is computed from, and each question's ranks run 1, 2, ... as search returns them."""
    from strata.providers import HashingEmbedder

    db, settings = module_db
    convs = calib.L.read_conversations(ROOT / "tests" / "data" / "locomo_tiny", None)
    rows = calib.collect(db, HashingEmbedder(384), settings, convs)
    labels = {r["label"] for r in rows}
    assert labels == {0, 1}
    assert any(r["label"] == 1 and r["category"] == 4 for r in rows)
    for q in {r["q"] for r in rows}:
        assert [r["rank"] for r in rows if r["q"] == q] == list(
            range(1, 1 + sum(r["q"] == q for r in rows)))
    scores = calib.current_scores(rows, "strata-hash-v1-384")
    assert ((scores > 0) & (scores < 1)).all()
