"""The truth-maintenance harness (eval/truth_eval.py) on a tiny scenario file written here
(FORMAT.md's shape; not the dev set), with the hashing embedder and the rule extractor.

The scenarios' sentences are ones the rule extractor certainly keeps ("I moved to Lisbon
last month.") or certainly drops (a question), so which expectations hold is known exactly,
and each kind has a control that must fail: a ``current`` asking for the old value, a
``kept`` of the retired value, an ``absent`` of a word that is stored, and the forget
scenario told again without its ``forget`` step, where the erased street must still be there.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import support

ROOT = Path(__file__).resolve().parents[1]
truth_eval = support.load_module("truth_eval", ROOT / "eval" / "truth_eval.py", register=True)

ELM = [{"at": "2026-03-01T08:00:00Z",
        "messages": [{"role": "user", "content": "I live on Elm Street."}]},
       {"at": "2026-03-05T08:00:00Z",
        "messages": [{"role": "user", "content": "I have a dog named Rufus.", "name": "Kim"}]}]

SCENARIOS = [
    {"id": "move-01", "about": "a move replaces the city", "category": "change",
     "sessions": [
         {"at": "2026-01-10T09:00:00Z", "messages": [
             {"role": "user", "content": "I live in Berlin."},
             {"role": "assistant", "content": "Nice, Berlin is lovely."}]},
         {"at": "2026-05-02T18:30:00Z", "messages": [
             {"role": "user", "content": "I moved to Lisbon last month."}]}],
     "expect": [
         {"kind": "current", "query": "where does the user live?", "answer": ["Lisbon"]},
         {"kind": "stale", "words": ["Berlin"]},
         {"kind": "kept", "words": ["lisbon"]},
         # controls: the old value is neither the answer nor kept
         {"kind": "current", "query": "where does the user live?", "answer": ["Berlin"]},
         {"kind": "kept", "words": ["Berlin"]}]},
    {"id": "noise-01", "about": "a question beside a fact", "category": "noise",
     "sessions": [{"at": "2026-02-01T10:00:00Z", "messages": [
         {"role": "user", "content": "I work as a nurse at Mercy Hospital."},
         {"role": "user", "content": "What's the weather like tomorrow?"}]}],
     "expect": [
         {"kind": "kept", "words": ["nurse", "Mercy"]},
         {"kind": "absent", "words": ["weather"]},
         {"kind": "absent", "words": ["nurse"]},  # control: it is stored
         {"kind": "current", "query": "what is the user's job?", "answer": ["doctor|NURSE"]}]},
    {"id": "forget-01", "about": "an address erased", "category": "forget",
     "sessions": ELM,
     "forget": [{"after_session": 0, "words": ["elm street"]}],
     "expect": [{"kind": "absent", "words": ["Elm"]}, {"kind": "kept", "words": ["Rufus"]}]},
    {"id": "forget-02", "about": "control: the same without the forget step",
     "category": "forget", "sessions": ELM,
     "expect": [{"kind": "absent", "words": ["Elm"]},
                {"kind": "kept", "words": ["Elm", "street"]}]},
]

HELD = {
    "move-01": [True, True, True, False, False],
    "noise-01": [True, True, False, True],
    "forget-01": [True, True],
    "forget-02": [False, True],
}


# --------------------------------------------------------------------------------------
# Words
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("text, word, held", [
    ("The user lives in Paris", "paris", True),          # case-insensitive
    ("The user lives in PARIS", "Paris", True),
    ("The user lives in Paris", "PA", False),            # whole words only
    ("Tom is a PA now", "pa", True),
    ("a category of its own", "cat", False),
    ("The user's cat, Pepper", "cat", True),             # punctuation ends a word
    ("Zoe's dog Pickles", "Zoe", True),
    ("Noor is seven", "six|6|seven", True),              # alternatives
    ("Noor is 7", "seven|7", True),
    ("Noor is 17", "seven|7", False),
    ("the 11th of May", "11", False),
    ("the 11th of May", "11|11th", True),
    ("lives on Elm  Street now", "elm street", True),     # a phrase, any spacing
    ("Elm and Street", "Elm Street", False),
    ("the user\u2019s driver\u2019s license", "driver's", True),  # typographic apostrophe
    ("smoke-free for 62 days", "smoke-free", True),
    ("a budget of $1,500", "1500|1,500", True),
])
def test_holds(text, word, held):
    assert truth_eval.holds(text, word) is held


@pytest.mark.parametrize("text, words, held", [
    ("The wedding is on 2026-10-04", ["October", "4"], True),   # ISO dates read as words
    ("The wedding is on 2026-10-04", ["Oct", "4th", "2026"], True),
    ("The move is on 2026-09-01", ["Sept|September", "1st"], True),
    ("The move is on 2026-09-01", ["Sep"], True),
    ("The move is on 2026-09-01", ["August"], False),
    ("Dentist on 2026-03-03T10:00", ["March", "3rd"], True),
    ("Dentist on March 3", ["march", "3|3rd"], True),
    ("Dentist on March 3", ["March", "4"], False),
    ("anything", [], True),
])
def test_holds_all(text, words, held):
    assert truth_eval.holds_all(text, words) is held


def test_judge_memories():
    active = ["The user is now pescatarian, no longer vegetarian",
              "The user eats fish again"]
    answers = ["pescatarian"]
    judge = truth_eval.judge
    # a memory holding a current answer word does not assert the old value
    assert judge({"kind": "stale", "words": ["vegetarian"]}, active, [], answers) == (True, [])
    assert judge({"kind": "stale", "words": ["vegetarian"]}, active, [], []) == (False, active[:1])
    assert judge({"kind": "kept", "words": ["fish"]}, active, [], answers)[0] is True
    assert judge({"kind": "kept", "words": ["meat"]}, active, [], answers) == (False, active)
    assert judge({"kind": "absent", "words": ["fish", "again"]}, active, [], answers)[0] is False
    assert judge({"kind": "absent", "words": ["recipes"]}, active, [], answers)[0] is True
    current = {"kind": "current", "query": "q", "answer": ["pescatarian"]}
    assert judge(current, active, active, answers)[0] is True
    assert judge(current, active, active[::-1], answers)[0] is False  # only the first counts
    assert judge(current, active, [], answers)[0] is False


def test_session_messages_keep_order_and_names():
    msgs = truth_eval.session_messages(ELM[1] | {"messages": [
        {"role": "user", "content": "a", "name": "Kim"}, {"role": "assistant", "content": "b"},
        {"role": "user", "content": "c"}]})
    assert [m["at"] for m in msgs] == ["2026-03-05T08:00:00+00:00", "2026-03-05T08:00:20+00:00",
                                       "2026-03-05T08:00:40+00:00"]
    assert [m.get("name") for m in msgs] == ["Kim", None, None]
    assert [m["role"] for m in msgs] == ["user", "assistant", "user"]


# --------------------------------------------------------------------------------------
# The harness against the database
# --------------------------------------------------------------------------------------


@pytest.fixture
def results(db, embedder, settings):
    return truth_eval.run_scenarios(db, embedder, settings, SCENARIOS)


def test_scores(results):
    assert [r["id"] for r in results] == list(HELD)
    assert not [r for r in results if "error" in r], [r.get("traceback") for r in results]
    for r in results:
        assert [e["held"] for e in r["expect"]] == HELD[r["id"]], (r["id"], r["expect"])
        assert set(r["receipts"]) <= {"wrote", "meaningful_no_write"}, r["receipts"]
    by_id = {r["id"]: r for r in results}
    assert by_id["forget-01"]["forgotten"] >= 1
    assert by_id["forget-02"]["forgotten"] == 0

    s = truth_eval.summarise(results)
    assert s["expectations"] == {"held": 9, "total": 13}
    assert s["score"] == round(9 / 13, 4)
    assert s["scenarios"] == 4 and s["scenarios_held"] == 1 and s["scenarios_whole"] == 0.25
    assert s["current_answered_first"] == 2 and s["current_total"] == 3
    assert s["by_kind"] == {
        "current": {"score": round(2 / 3, 4), "held": 2, "total": 3},
        "stale": {"score": 1.0, "held": 1, "total": 1},
        "kept": {"score": 0.8, "held": 4, "total": 5},
        "absent": {"score": 0.5, "held": 2, "total": 4},
    }
    assert s["by_category"]["forget"] == {"score": 0.75, "held": 3, "total": 4,
                                          "scenarios_whole": 0.5, "whole": 1, "scenarios": 2}
    assert s["by_category"]["change"]["whole"] == 0
    assert s["errors"] == []

    failed = truth_eval.failures(results)
    assert len(failed) == 4
    absent_nurse = next(f for f in failed if f["kind"] == "absent" and f["words"] == ["nurse"])
    assert any("nurse" in c.lower() for c in absent_nurse["found"])


def test_main_prints_the_summary(tmp_path, capsys):
    """The script end to end (its own throwaway database): the summary on stdout, failures on
    stderr and in --out."""
    data = tmp_path / "scenarios.json"
    data.write_text(json.dumps(SCENARIOS), encoding="utf-8")
    out = tmp_path / "report.json"
    code = truth_eval.main([str(data), "--only", "noise", "--out", str(out), "--show-failures"])
    assert code == 0
    captured = capsys.readouterr()
    summary = json.loads(captured.out)
    assert summary["scenarios"] == 1 and summary["expectations"] == {"held": 3, "total": 4}
    assert summary["embedder"] == "hash" and summary["elapsed_s"] > 0
    assert set(summary["by_category"]) == {"noise"}
    [failure] = [json.loads(line) for line in captured.err.splitlines() if line.startswith("{")]
    assert (failure["scenario"], failure["kind"], failure["words"]) == ("noise-01", "absent",
                                                                        ["nurse"])
    doc = json.loads(out.read_text(encoding="utf-8"))
    assert doc["summary"] == summary and len(doc["failures"]) == 1
    assert doc["scenarios"][0]["held"] == HELD["noise-01"]
