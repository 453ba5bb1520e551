"""The golden leak set (eval/golden) on a real database, in CI.

The corpus is loaded once for the module through the core write paths; every query runs in
hybrid, vector and keyword mode as its caller, with no score floor. What must hold:

- no forbidden memory (superseded, archived, forgotten, rejected, candidate, another
  tenant's, a path the key cannot read) in any query's top 5, in any mode;
- every query returns results in hybrid and vector mode (no score floor);
- recall@5 and MRR of hybrid above the thresholds set from the first honest run;
- hybrid is at least as good as either arm alone (see test_hybrid_against_single_arms);
- the check can fail: with the status filter removed, retired memories of every status
  surface; and the owner key finds the private memories the reader key must not.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from strata.providers import HashingEmbedder

_PATH = Path(__file__).resolve().parents[1] / "eval" / "golden_eval.py"
_spec = importlib.util.spec_from_file_location("golden_eval", _PATH)
golden_eval = importlib.util.module_from_spec(_spec)
sys.modules["golden_eval"] = golden_eval
_spec.loader.exec_module(golden_eval)

# From the first honest run (hashing embedder, 74 queries, 68 scored):
#   hybrid  recall@5 0.965  MRR 0.948
#   vector  recall@5 0.922  MRR 0.909
#   keyword recall@5 0.965  MRR 0.948 (one query returns nothing)
# Thresholds sit a little under the measured values: a drop of one or two queries fails.
RECALL_AT_5_MIN = 0.95
MRR_MIN = 0.93


@pytest.fixture(scope="module")
def golden(module_db):
    db, settings = module_db
    embedder = HashingEmbedder(384)
    loaded = golden_eval.load(db, embedder, settings)
    return loaded, golden_eval.evaluate(db, embedder, loaded)


def test_corpus_holds_every_kind_of_retired_memory(golden):
    loaded, _ = golden
    statuses = set(loaded.statuses.values())
    assert {"superseded", "archived", "forgotten", "rejected", "candidate", "active"} <= statuses
    assert set(loaded.tenant_of.values()) == {"acme", "globex"}
    assert any(k.startswith("hr_") for k in loaded.ids)  # private.hr: the reader key cannot read it
    queries = golden_eval.read(golden_eval.QUERIES)["queries"]
    assert len(queries) >= 30
    assert sum(bool(q.get("decoys")) for q in queries) >= 5
    known = set(loaded.ids)
    for q in queries:
        assert set(q["expected"]) | set(q["forbidden"]) | set(q.get("decoys", [])) <= known, q["id"]
        assert not set(q["expected"]) & set(q["forbidden"]), q["id"]


def test_no_forbidden_memory_in_any_top_5(golden):
    _, report = golden
    for mode, m in report["modes"].items():
        assert m["leaks"] == [], (mode, m["leaks"])


def test_every_query_returns_results_without_a_score_floor(golden):
    _, report = golden
    assert report["modes"]["hybrid"]["empty"] == []
    assert report["modes"]["vector"]["empty"] == []


def test_recall_and_mrr_above_thresholds(golden):
    _, report = golden
    hybrid = report["modes"]["hybrid"]
    assert hybrid["recall@5"] >= RECALL_AT_5_MIN, hybrid
    assert hybrid["mrr"] >= MRR_MIN, hybrid


def test_decoys_rank_below_the_right_answer(golden):
    _, report = golden
    assert report["modes"]["hybrid"]["decoy_inversions"] == []


def test_hybrid_against_single_arms(golden):
    """Hybrid beats vector-only on both metrics, matches or beats keyword-only on recall@5,
    answers every query (keyword-only leaves one empty), and stays within 0.01 MRR of
    keyword-only. With the hashing embedder the vector arm is a weak lexical proxy, so
    hybrid does not strictly beat keyword-only on MRR here: see the xfail below."""
    _, report = golden
    hy, vec, kw = (report["modes"][m] for m in ("hybrid", "vector", "keyword"))
    assert hy["recall@5"] > vec["recall@5"] and hy["mrr"] > vec["mrr"]
    assert hy["recall@5"] >= kw["recall@5"]
    assert len(hy["empty"]) < len(kw["empty"])
    assert hy["mrr"] >= kw["mrr"] - 0.01


@pytest.mark.xfail(strict=True, reason="hashing embedder: hybrid MRR 0.9477 vs keyword 0.9484 "
                   "on the golden set; expected to flip with a sentence-model embedder")
def test_hybrid_strictly_beats_keyword_on_mrr(golden):
    _, report = golden
    assert report["modes"]["hybrid"]["mrr"] > report["modes"]["keyword"]["mrr"]


def test_the_leak_check_discriminates_without_the_status_filter(golden):
    """The same queries with the status filter removed (a core keyword, not reachable over
    HTTP): retired memories of every retired status reach a top 5, so a broken filter would
    fail test_no_forbidden_memory_in_any_top_5."""
    _, report = golden
    d = report["discrimination"]
    assert d["leaks_without_status_filter"], d
    assert set(d["statuses_surfaced"]) >= {"superseded", "archived", "candidate", "rejected"}, d


def test_owner_finds_what_the_reader_key_may_not(golden):
    """Control for the unreadable-path probes: the owner key's top 5 holds the private.hr
    memories the reader key's never does."""
    _, report = golden
    assert report["controls"] and all(c["found"] for c in report["controls"]), report["controls"]


def test_report_shapes(golden):
    _, report = golden
    out = golden_eval.summary(report)
    for mode in ("hybrid", "vector", "keyword"):
        assert {"recall@5", "mrr", "leaks"} <= set(out[mode])
    table = golden_eval.table(report)
    assert table.splitlines()[0].split()[:3] == ["mode", "recall@5", "MRR"]


def test_cli_has_eval_golden():
    from strata.cli import build_parser

    args = build_parser().parse_args(["eval", "golden", "--json"])
    assert args.func.__name__ == "cmd_eval_golden" and args.json
