"""The truth-maintenance harness (eval/truth_eval.py) on a tiny scenario file written here
(FORMAT.md's shape; not the dev set), with the hashing embedder and the rule extractor; then
through the HTTP API (its default), which must score exactly as the core called in-process,
on scenarios generated here and on a slice of the dev set; and `strata eval truth`.

The scenarios' sentences are ones the rule extractor certainly keeps ("I moved to Lisbon
last month.") or certainly drops (a question), so which expectations hold is known exactly,
and each kind has a control that must fail: a ``current`` asking for the old value, a
``kept`` of the retired value, an ``absent`` of a word that is stored, and the forget
scenario told again without its ``forget`` step, where the erased street must still be there.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

import support

ROOT = Path(__file__).resolve().parents[1]
TINY = ROOT / "tests" / "data" / "truth_tiny"  # two one-scenario files written for the tests
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
    assert summary["mode"] == "http"  # the script's default: through the API
    assert set(summary["by_category"]) == {"noise"}
    [failure] = [json.loads(line) for line in captured.err.splitlines() if line.startswith("{")]
    assert (failure["scenario"], failure["kind"], failure["words"]) == ("noise-01", "absent",
                                                                        ["nurse"])
    doc = json.loads(out.read_text(encoding="utf-8"))
    assert doc["summary"] == summary and len(doc["failures"]) == 1
    assert doc["scenarios"][0]["held"] == HELD["noise-01"]


# --------------------------------------------------------------------------------------
# Through the API: the same verdicts as the core in-process
# --------------------------------------------------------------------------------------

CITIES = ["Porto", "Tallinn", "Quito", "Leeds", "Osaka", "Ghent", "Cusco", "Bergen"]
JOBS = ["baker", "welder", "pilot", "librarian", "plumber", "surveyor"]
PETS = [("cat", "Miso"), ("dog", "Biscuit"), ("parrot", "Kiwi"), ("rabbit", "Clover"),
        ("hamster", "Nugget")]
LIVES = ["I live in {}.", "I'm living in {} these days.", "I've lived in {} for years."]
MOVES = ["I moved to {} last month.", "We just moved to {}.", "I live in {} now."]
WORKS = ["I work as a {}.", "I'm a {} by trade.", "My job: I'm a {}."]
ASIDES = ["What's the weather like tomorrow?", "Can you recommend a good book?",
          "Is it going to rain on Friday?"]
OWNS = ["I have a {} named {}.", "My {} is called {}.", "We adopted a {} named {}."]


def generated(seed: int) -> list[dict]:
    """Scenarios of FORMAT.md's shape from templates crossed with values (a move, a job beside
    a question, a pet erased then a job kept), in random phrasings and days."""
    rng = random.Random(seed)

    def at(month: int) -> str:
        return f"2026-{month:02d}-{rng.randint(1, 28):02d}T{rng.randint(7, 21):02d}:00:00Z"

    def said(*texts: str) -> list[dict]:
        return [{"role": "user", "content": t} for t in texts]

    out = []
    for n in range(2):
        old, new = rng.sample(CITIES, 2)
        job = rng.choice(JOBS)
        kind, name = rng.choice(PETS)
        out += [
            {"id": f"gen-move-{n}", "category": "change", "sessions": [
                {"at": at(1 + n), "messages": said(rng.choice(LIVES).format(old))},
                {"at": at(5 + n), "messages": said(rng.choice(MOVES).format(new))}],
             "expect": [{"kind": "current", "query": "where does the user live?",
                         "answer": [new]},
                        {"kind": "stale", "words": [old]}, {"kind": "kept", "words": [new]}]},
            {"id": f"gen-noise-{n}", "category": "noise", "sessions": [
                {"at": at(3), "messages": said(rng.choice(WORKS).format(job),
                                               rng.choice(ASIDES))}],
             "expect": [{"kind": "kept", "words": [job]},
                        {"kind": "current", "query": "what is the user's job?",
                         "answer": [job]},
                        {"kind": "absent", "words": [job]}]},  # control: it is kept
            {"id": f"gen-forget-{n}", "category": "forget", "sessions": [
                {"at": at(2), "messages": said(rng.choice(OWNS).format(kind, name))},
                {"at": at(4), "messages": said(rng.choice(WORKS).format(job))}],
             "forget": [{"after_session": 0, "words": [name]}],
             "expect": [{"kind": "absent", "words": [name]}, {"kind": "kept", "words": [job]},
                        {"kind": "kept", "words": [name]}]},  # control: it was erased
        ]
    return out


def verdicts(results: list[dict]) -> list[tuple]:
    """Everything a run decided, per scenario: receipts, forgets, each expectation's verdict
    and what was found: the search's results in their order; the memories in question as a
    multiset (memories written by one request share their created_at, and the listing breaks
    that tie by their random ids, in either mode)."""
    return [(r["id"], r.get("receipts"), r.get("forgotten"), r.get("error"),
             [(e["kind"], e["held"],
               e["found"] if e["kind"] == "current" else sorted(e["found"]), e.get("stored"))
              for e in r["expect"]])
            for r in results]


def assert_timed(summary: dict, ingests: int, searches: int) -> None:
    """Every ingest and search request timed, in positive milliseconds."""
    lat = summary["latency"]
    assert lat["ingest"]["n"] == ingests and lat["search"]["n"] == searches, lat
    for what in ("ingest", "search"):
        assert 0 < lat[what]["p50_ms"] <= lat[what]["p95_ms"] <= lat[what]["max_ms"], lat


def test_http_scores_as_the_core_does(db, embedder, settings):
    """Given scenarios generated from templates (and the hand-written ones above)
    When they run through the HTTP API (uvicorn, httpx, the owner's key) and through the core
    in-process, each in a tenant of its own on one database
    Then every receipt, forget and verdict, with what was found, is the same; the run is not
    empty (verdicts of both values, results found); and each mode timed every ingest (one per
    session) and every search (one per current question)."""
    scenarios = SCENARIOS + generated(seed=35)
    core = truth_eval.run_scenarios(db, embedder, settings, scenarios, mode="in-process")
    api = truth_eval.run_scenarios(db, embedder, settings, scenarios, mode="http")

    assert not [r for r in api + core if "error" in r], [r.get("traceback") for r in api + core]
    assert verdicts(api) == verdicts(core)
    held = [e["held"] for r in api for e in r["expect"]]
    assert True in held and False in held
    assert sum(r["forgotten"] for r in api) >= 3  # the forget steps ran through the API
    assert all(e["found"] for r in api for e in r["expect"] if e["kind"] == "current")

    sessions = sum(len(s["sessions"]) for s in scenarios)
    questions = sum(e["kind"] == "current" for s in scenarios for e in s["expect"])
    assert_timed(truth_eval.summarise(api), sessions, questions)
    assert_timed(truth_eval.summarise(core), sessions, questions)


def dev_set() -> Path:
    """The dev set, ``shared/data/truth/dev.json`` beside the checkout (a git worktree sits a
    folder deeper: the first ancestor of the repository holding it)."""
    for parent in ROOT.parents:
        found = parent / "shared" / "data" / "truth" / "dev.json"
        if found.is_file():
            return found
    pytest.fail(f"no shared/data/truth/dev.json above {ROOT}: the dev set is expected beside "
                "the checkout")


def test_a_dev_slice_through_the_api(db, embedder, settings):
    """Given the dev set's first scenario of each category (read at run time; never copied)
    When they run through the HTTP API, and through the core in-process
    Then every category is there, no scenario raised, every receipt is final, the summary has
    its shape (scores by category and kind, latency), and both modes decided the same."""
    scenarios = truth_eval.read_scenarios(dev_set())
    first: dict[str, tuple[int, dict]] = {}
    for i, s in enumerate(scenarios):
        first.setdefault(s["category"], (i, s))
    picked = [s for _, s in first.values()]
    paths = [f"users.s{i}" for i, _ in first.values()]
    api = truth_eval.run_scenarios(db, embedder, settings, picked, paths=paths, mode="http")
    core = truth_eval.run_scenarios(db, embedder, settings, picked, paths=paths,
                                    mode="in-process")

    assert len(picked) == 12, sorted(first)  # FORMAT.md's twelve categories
    assert not [r for r in api if "error" in r], [r.get("traceback") for r in api]
    assert {st for r in api for st in r["receipts"]} <= {"wrote", "meaningful_no_write"}
    summary = truth_eval.summarise(api)
    assert set(summary["by_category"]) == set(first)
    assert set(summary["by_kind"]) == set(truth_eval.KINDS)
    assert summary["expectations"]["total"] == sum(len(s["expect"]) for s in picked)
    assert 0 <= summary["score"] <= 1 and summary["errors"] == []
    assert_timed(summary, sum(len(s["sessions"]) for s in picked),
                 sum(e["kind"] == "current" for s in picked for e in s["expect"]))
    assert verdicts(api) == verdicts(core)


def test_cli_runs_a_folder(db, monkeypatch, capsys, tmp_path):
    """Given a folder of two scenario files (the throwaway database: this test's)
    When `strata eval truth --data FOLDER --json --out F` runs
    Then it prints one JSON object with a summary per file name, through the API, each
    with its own scenarios, the forget step done, latency timed; --out holds the same."""
    from strata.cli.main import main

    monkeypatch.setenv("STRATA_DATABASE_URL", db.url)
    out = tmp_path / "report.json"
    code = main(["eval", "truth", "--data", str(TINY), "--json", "--out", str(out)])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    summaries = json.loads(captured.out)
    assert set(summaries) == {"home.json", "pets.json"}
    for name, summary in summaries.items():
        assert summary["data"] == name and summary["mode"] == "http"
        assert summary["scenarios"] == 1 and summary["expectations"]["total"] == 3
        assert summary["errors"] == []
        assert_timed(summary, ingests=2, searches=1)
    assert summaries["pets.json"]["forgotten"] >= 1
    assert summaries["home.json"]["forgotten"] == 0  # control: it has no forget step
    doc = json.loads(out.read_text(encoding="utf-8"))
    assert {name: d["summary"] for name, d in doc.items()} == summaries


def test_cli_names_the_data_it_cannot_read(tmp_path, capsys):
    """Given a path that does not exist, a folder without a *.json, and files that are not
    scenario arrays (an object, a scenario without its fields, broken JSON)
    When `strata eval truth --data` names them
    Then it exits 2 naming --data, and no evaluation starts. Control: the folder with a
    scenario file in it passes that check (and runs: test_cli_runs_a_folder)."""
    from strata.cli.main import main

    for data in (tmp_path / "nowhere", tmp_path):
        assert main(["eval", "truth", "--data", str(data), "--json"]) == 2
        err = json.loads(capsys.readouterr().err.strip().splitlines()[-1])["error"]
        assert err["code"] == "not_found" and err["option"] == "--data", err
    bad = tmp_path / "bad.json"
    for text in ('{"not": "a list"}', '[{"id": "x"}]', "[{"):
        bad.write_text(text, encoding="utf-8")
        assert main(["eval", "truth", "--data", str(bad), "--json"]) == 2
        err = json.loads(capsys.readouterr().err.strip().splitlines()[-1])["error"]
        assert err["code"] == "invalid_input" and err["option"] == "--data", err
    assert list(TINY.glob("*.json"))
