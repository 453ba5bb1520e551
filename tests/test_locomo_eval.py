"""The LoCoMo harness (eval/locomo_eval.py) on a tiny synthetic LoCoMo-shaped conversation
(tests/data/locomo_tiny; not LoCoMo data) with the hashing embedder.

Question 1 (category 4) asks for a fact whose evidence turn is stored in both modes: it must
be found in the top 5 by every arm. Question 2 (category 1) needs two turns, one of which has no
pre-extracted observation: in observations mode it must miss (recall_all 0, and the harness
must say its evidence is uncited), in turns mode it must be found. The category-5 question
is skipped.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from strata.providers import HashingEmbedder

import support

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data" / "locomo_tiny"
locomo_eval = support.load_module("locomo_eval", ROOT / "eval" / "locomo_eval.py", register=True)

ARMS = {"hybrid", "vector", "keyword", "exact"}
METRICS = {"recall_all@5", "recall_any@5", "recall_all@10", "recall_any@10", "mrr"}


@pytest.fixture(scope="module")
def reports(module_db):
    db, settings = module_db
    convs = locomo_eval.read_conversations(DATA, None)
    return {mode: locomo_eval.evaluate(db, HashingEmbedder(384), settings, convs, mode)
            for mode in ("observations", "turns")}


@pytest.mark.parametrize("mode", ["observations", "turns"])
def test_json_shape(reports, mode):
    r = reports[mode]
    assert set(r["overall"]) == ARMS
    for m in r["overall"].values():
        assert METRICS | {"p50_ms", "p95_ms"} <= set(m)
        assert m["n"] == 2  # the category-5 question is skipped
    assert set(r["per_category"]) == {"1-multi-hop", "2-temporal", "3-open-domain",
                                      "4-single-hop"}
    assert r["per_category"]["2-temporal"]["hybrid"]["n"] == 0


@pytest.mark.parametrize("mode", ["observations", "turns"])
def test_stored_evidence_is_found(reports, mode):
    single = reports[mode]["per_category"]["4-single-hop"]
    for arm in ARMS:
        assert single[arm]["recall_all@5"] == 1.0, arm
        assert single[arm]["mrr"] >= 0.5, arm  # the hashing embedder ranks a sibling first


def test_evidence_without_observation_misses(reports):
    obs = reports["observations"]
    assert obs["meta"]["questions_with_uncited_evidence"] == 1
    multi = obs["per_category"]["1-multi-hop"]
    for arm in ARMS:
        assert multi[arm]["recall_all@10"] == 0.0, arm
    assert obs["overall"]["hybrid"]["recall_all@10"] == 0.5


def test_turns_find_both_evidence_turns(reports):
    turns = reports["turns"]
    assert turns["meta"]["questions_with_uncited_evidence"] == 0
    assert turns["per_category"]["1-multi-hop"]["hybrid"]["recall_all@10"] == 1.0
    assert turns["per_category"]["1-multi-hop"]["keyword"]["recall_all@10"] == 1.0


def test_dia_id_parsing():
    assert locomo_eval.dia_ids(["D8:6; D9:17", "D1:2"]) == ["D8:6", "D9:17", "D1:2"]
    assert locomo_eval.parse_date("1:56 pm on 8 May, 2023").isoformat() == \
        "2023-05-08T13:56:00+00:00"
