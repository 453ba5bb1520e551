"""The LoCoMo harness (eval/locomo_eval.py) on a tiny synthetic LoCoMo-shaped conversation
(tests/data/locomo_tiny; not LoCoMo data) with the hashing embedder.

Question 1 (category 4) asks for a fact whose evidence turn is stored in both modes: it must
be found in the top 5 by every arm. Question 2 (category 1) needs two turns, one of which has no
pre-extracted observation: in observations mode it must miss (recall_all 0, and the harness
must say its evidence is uncited), in turns mode it must be found. The category-5 question
is skipped.

Ingest mode (and eval/locomo_extract.py) run on two more synthetic conversations written
below, whose turns the rule extractor either certainly mines ("I moved to Porto last week.")
or certainly does not (questions), so what was kept is known exactly.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from strata.providers import HashingEmbedder

import support

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data" / "locomo_tiny"
locomo_eval = support.load_module("locomo_eval", ROOT / "eval" / "locomo_eval.py", register=True)
locomo_extract = support.load_module("locomo_extract", ROOT / "eval" / "locomo_extract.py",
                                     register=True)

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


def test_what_each_mode_stores_as_context():
    """Turns: each turn with the turn before it in its session (none for a session's first);
    observations: each with the exchanges it cites (the cited turn after the one before it);
    --context none: every item alone."""
    turns = locomo_eval.items_for(TUNE_CONV, "turns")
    assert [[(c, ctx) for _, c, ctx in items] for _, items in turns] == [
        [(["D1:1"], None),
         (["D1:2"], "Ann: I moved to Porto last week. [image: a photo of a harbour]")],
        [(["D2:1"], None), (["D2:2"], "Bob: I moved to Lisbon last week.")]]
    obs = locomo_eval.items_for(TUNE_CONV, "observations")
    assert [(t, ctx) for _, items in obs for t, _, ctx in items] == [
        ("Ann moved to Porto.", "Ann: I moved to Porto last week. [image: a photo of a harbour]"),
        ("Bob asked how Ann was.",
         "Ann: I moved to Porto last week. [image: a photo of a harbour]\nBob: How are you?")]
    for mode in ("turns", "observations"):
        alone = locomo_eval.items_for(TUNE_CONV, mode, context=False)
        assert [c for _, items in alone for c, _, _ in items] == \
            [c for _, items in locomo_eval.items_for(TUNE_CONV, mode) for c, _, _ in items]
        assert {ctx for _, items in alone for _, _, ctx in items} == {None}


# -- ingest mode --------------------------------------------------------------------------

# Conversation 26 (group "tune"): two sessions. D1:1 is mined and bears an observation; D1:2
# bears one but is a question (not mined); D2:1 is mined but bears none; D2:2 neither.
TUNE_CONV = {
    "speaker_a": "Ann", "speaker_b": "Bob",
    "session_1_date_time": "1:56 pm on 8 May, 2023",
    "session_1": [
        {"speaker": "Ann", "dia_id": "D1:1", "text": "I moved to Porto last week.",
         "blip_caption": "a photo of a harbour"},
        {"speaker": "Bob", "dia_id": "D1:2", "text": "How are you?"},
    ],
    "session_2_date_time": "7:10 pm on 20 June, 2023",
    "session_2": [
        {"speaker": "Bob", "dia_id": "D2:1", "text": "I moved to Lisbon last week."},
        {"speaker": "Ann", "dia_id": "D2:2", "text": "Did you see the game?"},
    ],
    "session_3_date_time": "9:00 am on 1 July, 2023",  # a dated session with no turns
    "session_1_observation": {"Ann": [["Ann moved to Porto.", "D1:1"]],
                              "Bob": [["Bob asked how Ann was.", "D1:2"]]},
    "session_2_observation": {"Ann": [], "Bob": []},
    "qa": [
        {"question": "Which city did Ann move to?", "answer": "Porto", "evidence": ["D1:1"],
         "category": 4},
        {"question": "How did Bob greet Ann?", "answer": "He asked how she was",
         "evidence": ["D1:2"], "category": 1},
        {"question": "Which city did Bob leave?", "adversarial_answer": "Oslo",
         "evidence": [], "category": 5},
    ],
}
# Conversation 99 (group "rest"): D1:1 mined and bearing, D1:2 neither.
REST_CONV = {
    "speaker_a": "Cleo", "speaker_b": "Dan",
    "session_1_date_time": "10:00 am on 3 March, 2023",
    "session_1": [
        {"speaker": "Cleo", "dia_id": "D1:1", "text": "I moved to Oslo last week."},
        {"speaker": "Dan", "dia_id": "D1:2", "text": "Did you sleep well?"},
    ],
    "session_1_observation": {"Cleo": [["Cleo moved to Oslo.", "D1:1"]], "Dan": []},
    "qa": [{"question": "Which city did Cleo move to?", "answer": "Oslo",
            "evidence": ["D1:1"], "category": 4}],
}
# What was kept, per group: (covered / observation-bearing turns, precise memories' share,
# turns). "all" is over the summed counts: 2/3 and 2/3, not the groups' mean (0.75).
EXPECTED = {"tune": (0.5, 0.5, 4), "rest": (1.0, 1.0, 2), "all": (0.6667, 0.6667, 6)}


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("locomo_synthetic")
    for cid, conv in (("26", TUNE_CONV), ("99", REST_CONV)):
        (folder / f"{cid}.json").write_text(json.dumps(conv), encoding="utf-8")
    return folder


@pytest.fixture(scope="module")
def ingest_run(module_db, synthetic):
    """``--mode ingest --embedder hash --json`` end to end: the CLI entry, HTTP ingest, the
    turns and observations modes beside it, one JSON object on stdout."""
    import contextlib
    import io

    db, _ = module_db
    out = io.StringIO()
    with pytest.MonkeyPatch.context() as mp, contextlib.redirect_stdout(out):
        mp.setenv("STRATA_DATABASE_URL", db.url)  # the scratch database is this module's
        assert locomo_eval.main(["--data", str(synthetic), "--mode", "ingest",
                                 "--embedder", "hash", "--json"]) == 0
    return json.loads(out.getvalue()), db


def test_ingest_requests_are_per_speaker_with_context():
    """Given a two-speaker session
    When it is shaped for POST /v1/ingest
    Then there is one request per speaker at conv.c<id>.<speaker>, every turn of the session
    in it with the session date, its dia_id and speaker, the speaker's own turns as user
    messages and the other's as assistant; each turn is a user message exactly once, sessions
    in date order, and a session without turns sends nothing."""
    shaped = locomo_eval.ingest_requests(TUNE_CONV, "26")
    assert [d.isoformat() for d, _ in shaped] == ["2023-05-08T13:56:00+00:00",
                                                  "2023-06-20T19:10:00+00:00"]
    (_, first), (_, second) = shaped
    assert [p for p, _ in first] == ["conv.c26.ann", "conv.c26.bob"]
    ann = dict(first)["conv.c26.ann"]
    assert ann == [
        {"role": "user", "content": "I moved to Porto last week. [image: a photo of a harbour]",
         "at": "2023-05-08T13:56:00+00:00", "id": "D1:1", "name": "Ann"},
        {"role": "assistant", "content": "How are you?", "at": "2023-05-08T13:56:00+00:00",
         "id": "D1:2", "name": "Bob"},
    ]
    users = [m["id"] for _, reqs in shaped for _, msgs in reqs for m in msgs
             if m["role"] == "user"]
    assert sorted(users) == ["D1:1", "D1:2", "D2:1", "D2:2"]


def test_kept_counts_over_summed_counts():
    counts = [locomo_eval.kept_counts({"a": {"D1"}, "b": {"D3"}}, {"D1", "D2", "D3", "D4"},
                                      {"D1", "D2", "D9"}),
              locomo_eval.kept_counts({"c": {"D1"}}, {"D1", "D2"}, {"D1"})]
    assert counts[0] == {"turns": 4, "observation_turns": 2, "covered_turns": 1,
                         "memories": 2, "precise_memories": 1}
    total = locomo_eval.kept_ratios(locomo_eval.sum_counts(counts))
    assert (total["turn_coverage"], total["precision_proxy"], total["memories_per_turn"]) == \
        (0.6667, 0.6667, 0.5)


def test_ingest_mode_reports_what_the_pipeline_kept(ingest_run):
    """Given the synthetic conversations sent through POST /v1/ingest
    Then every call answered 200 with a finished receipt from the rule extractor, each memory
    is filed under its speaker and cites the turn it came from, and coverage, precision proxy
    and memories per turn are the known values per group."""
    report, db = ingest_run
    assert set(report["modes"]) == {"ingest", "turns", "observations"}
    ingest = report["modes"]["ingest"]
    stats = ingest["meta"]["ingest"]
    assert stats["calls"] == 6 and stats["http"] == {"200": 6}, stats
    assert set(stats["receipts"]) <= {"wrote", "meaningful_no_write"}, stats
    assert stats["receipts"].get("wrote", 0) == 3  # the three requests with a mined turn
    assert stats["errors"] == [] and stats["memories_citing_another_path"] == 0
    assert stats["extractor"] == report["meta"]["extractor"] and stats["extractor"]
    assert report["meta"]["groups"] == {"tune": ["26"], "rest": ["99"]}
    assert report["meta"]["timings"]["ingest_calls"] == 6
    assert report["meta"]["timings"]["ingest_call_p50_ms"] > 0

    for group, (coverage, precision, turns) in EXPECTED.items():
        kept = ingest["groups"][group]["kept"]
        assert (kept["turn_coverage"], kept["precision_proxy"], kept["turns"]) == \
            (coverage, precision, turns), (group, kept)
        assert kept["memories"] >= {"tune": 2, "rest": 1, "all": 3}[group]
        assert kept["memories_per_turn"] == round(kept["memories"] / turns, 4)
        assert report["targets"][group]["turn_coverage"]["value"] == coverage
        assert report["targets"][group]["turn_coverage"]["met"] is (coverage >= 0.75)
    assert ingest["kept"] == ingest["groups"]["all"]["kept"]

    with db.connection() as conn:
        rows = conn.execute(
            "SELECT m.path::text AS path, m.content, m.evidence FROM memories m"
            " JOIN tenants t ON t.id = m.tenant_id"
            " WHERE t.name LIKE 'locomo-26-ingest-%%' AND m.status = 'active'").fetchall()
    cited = {(r["path"], e["message_id"]) for r in rows for e in r["evidence"]}
    assert cited == {("conv.c26.ann", "D1:1"), ("conv.c26.bob", "D2:1")}, cited
    assert any("Porto" in r["content"] for r in rows if r["path"] == "conv.c26.ann")


def test_ingest_mode_answers_over_what_was_kept(ingest_run):
    """Given only D1:1 and D2:1 kept in conversation 26
    Then the question on D1:1 is found, the one on D1:2 (a question, not mined) cannot be:
    ingest hybrid recall_all@5 is 1 on the held-out group and 0.5 on the tuned one, where the
    turns mode (every turn stored) finds both."""
    report, _ = ingest_run
    ingest, turns = report["modes"]["ingest"], report["modes"]["turns"]
    assert ingest["groups"]["tune"]["questions_with_uncited_evidence"] == 1
    assert ingest["groups"]["tune"]["overall"]["hybrid"]["recall_all@5"] == 0.5
    assert ingest["groups"]["tune"]["per_category"]["4-single-hop"]["hybrid"]["recall_all@5"] \
        == 1.0
    assert ingest["groups"]["rest"]["overall"]["hybrid"]["recall_all@5"] == 1.0
    assert ingest["overall"]["hybrid"]["n"] == 3  # category 5 skipped
    assert turns["groups"]["tune"]["overall"]["hybrid"]["recall_all@5"] == 1.0
    assert report["targets"]["tune"]["recall_all@5"] == \
        {"arm": "hybrid", "ingest": 0.5, "turns": 1.0, "met": False}
    # The baselines' kept measures: every turn is a memory; every observation one.
    assert turns["groups"]["all"]["kept"]["turn_coverage"] == 1.0
    assert turns["groups"]["all"]["kept"]["precision_proxy"] == 0.5
    assert report["modes"]["observations"]["groups"]["all"]["kept"]["precision_proxy"] == 1.0


def test_extract_script_matches_the_known_answer(synthetic):
    """Given the same conversations through the rule extractor alone (no database)
    Then the candidates cover and hit the same turns as the pipeline kept, and --show samples
    the one missed observation-bearing turn (D1:2) and the one imprecise candidate (D2:1)."""
    convs = locomo_eval.read_conversations(synthetic, None)
    report = locomo_extract.evaluate(convs, show=5, group="tune")
    for group, (coverage, precision, turns) in EXPECTED.items():
        g = report["groups"][group]
        assert (g["turn_coverage"], g["precision_proxy"], g["turns"]) == \
            (coverage, precision, turns), (group, g)
        assert g["memories_per_turn"] == round(g["memories"] / turns, 4)
        # The question turns are either explained by the extractor or unaccounted for.
        assert g["unaccounted"] + sum(g["not_kept"].values()) >= {"tune": 2, "rest": 1,
                                                                 "all": 3}[group]
    ex = report["examples"]
    assert [(e["conversation"], e["dia_id"], e["observations"]) for e in ex["missed"]] == \
        [("26", "D1:2", ["Bob asked how Ann was."])]
    assert ex["imprecise"] and {tuple(e["dia_ids"]) for e in ex["imprecise"]} == {("D2:1",)}
    assert all("Lisbon" in e["text"] for e in ex["imprecise"])


def test_extract_script_prints_json(synthetic, capsys):
    assert locomo_extract.main(["--data", str(synthetic), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["groups"]["all"]["turn_coverage"] == EXPECTED["all"][0]
    assert report["conversations"] == {"tune": ["26"], "rest": ["99"]}


def test_retrieval_mode_checks_the_ranking_targets(reports):
    """``--mode retrieval``'s target check over the two modes' reports: hybrid's
    recall_all@5 against the floor and against each single arm; a report built to miss them
    says so (control), one built to meet them says met."""
    checks = locomo_eval.check_retrieval(reports)
    assert set(checks) == {"observations", "turns"}
    for mode, c in checks.items():
        hybrid = reports[mode]["overall"]["hybrid"]["recall_all@5"]
        assert c["hybrid_recall_all@5"] == hybrid
        assert c["target"]["met"] == (hybrid >= locomo_eval.RETRIEVAL_TARGETS[mode])
        assert set(c["beats_each_arm"]["arms"]) == {"vector", "keyword"}

    import copy

    rigged = copy.deepcopy(reports)
    for mode in rigged:
        overall = rigged[mode]["groups"]["all"]["overall"]
        overall["hybrid"]["recall_all@5"], overall["vector"]["recall_all@5"] = 0.1, 0.9
    assert not any(c["beats_each_arm"]["met"] or c["target"]["met"]
                   for c in locomo_eval.check_retrieval(rigged).values())
    for mode in rigged:
        overall = rigged[mode]["groups"]["all"]["overall"]
        overall["hybrid"]["recall_all@5"] = 0.99
        overall["vector"]["recall_all@5"] = overall["keyword"]["recall_all@5"] = 0.5
    assert all(c["beats_each_arm"]["met"] and c["target"]["met"]
               for c in locomo_eval.check_retrieval(rigged).values())


def test_headroom_reports_the_ceilings_over_production(module_db):
    """eval/locomo_headroom.py on the tiny conversation (hash embedder): the stored ceiling says
    one of two questions rests on a turn no observation cites (observations 0.5, turns 1.0);
    the pool ceiling is never below production (it reorders the same candidates, evidence
    first) and reaches what is stored here; the logistic re-ranker separates a separable
    problem (control for the learned column)."""
    import numpy as np

    headroom = support.load_module("locomo_headroom", ROOT / "eval" / "locomo_headroom.py")
    db, settings = module_db
    convs = locomo_eval.read_conversations(DATA, None)
    rows = headroom.collect(db, HashingEmbedder(384), settings, convs)
    assert {r["mode"] for r in rows} == {"observations", "turns"} and len(rows) == 4
    assert headroom.stored_ceiling(rows) == {"observations": 0.5, "turns": 1.0}
    prod = headroom.recall(rows, headroom.production)
    pool = headroom.recall(rows, headroom.pool_oracle)
    for mode in ("observations", "turns"):
        assert pool[mode]["recall_all@5"] >= prod[mode]["recall_all@5"]
        assert pool[mode]["mrr"] >= prod[mode]["mrr"]
    assert pool["observations"]["recall_all@5"] == 0.5 and pool["turns"]["recall_all@5"] == 1.0
    rng = np.random.default_rng(7)
    x = rng.random((400, 3))
    y = (x[:, 0] > 0.5).astype(float)
    model = headroom.Logistic().fit(x, y)
    assert np.mean((model.score(x) > 0) == (y > 0)) > 0.95


def _reorder_row(question: str, memories: list[tuple[str, list[float], str]],
                 cited: int = 0) -> dict:
    """A headroom row over hand-made candidates in fused order (descending cosine, equal
    BM25): (content, vector, the day of valid_from); memory ``cited`` cites the evidence."""
    import types
    import uuid
    from datetime import datetime

    import numpy as np

    from strata.search import ranking

    cands, vectors, cites = [], {}, {}
    for i, (content, vec, day) in enumerate(memories):
        cid = uuid.UUID(int=i + 1)
        vectors[cid] = np.asarray(vec, dtype=np.float64) / np.linalg.norm(vec)
        cites[cid] = {"D1:1" if i == cited else f"D9:{i}"}
        cands.append(ranking.Candidate(
            id=cid, vec_rank=i + 1, cosine=0.9 - 0.05 * i, txt_rank=i + 1, bm25=1.0,
            value_hash=bytes([i]), row={"content": content, "context": None,
                                        "valid_from": datetime.fromisoformat(day)}))
    return {"mode": "observations", "cid": "1", "q": {"question": question, "evidence": ["D1:1"]},
            "cites": cites, "stored": {"D1:1"}, "vectors": vectors,
            "qvec": vectors[cands[0].id], "found": types.SimpleNamespace(
                candidates=cands, idf_sum=2.0, telling=frozenset())}


def test_headroom_reorderings_change_the_order_only_as_each_says(tmp_path):
    """Each re-ordering of eval/locomo_headroom.py against its control on hand-made candidates
    (fused order A, A2, B, C; A2 a near duplicate of A, from the same day): ``diverse`` and
    ``dates`` push A2 to the end, and leave the order as it was at a weight of 0; ``names``
    lifts the one memory naming whom the question names, and changes nothing for a question
    naming no one; ``thesaurus`` (a two-synset WordNet written here, with a license header
    as the real files have) lifts the memory holding "injury" for a question saying "hurt";
    ``feedback`` at a weight of 0 is the production order, and with the query moved toward
    the top three it ranks by the moved query; ``compare_reorderings`` chooses the point that
    scores best on the tuning rows and scores it once on the rest."""
    headroom = support.load_module("locomo_headroom", ROOT / "eval" / "locomo_headroom.py")
    row = _reorder_row("Did Alice get hurt?", [
        ("Bob painted a lake", [1, 0, 0], "2023-05-01"),
        ("Bob painted a lake again", [0.99, 0.1, 0], "2023-05-01"),
        ("Bob has an injury", [0.5, 0.5, 0.7], "2023-06-01"),
        ("Alice rides horses", [0, 1, 0], "2023-07-01"),
    ])
    a, a2, b, c = (m.id for m in row["found"].candidates)
    assert headroom.production(row) == [a, a2, b, c]
    assert headroom.diverse(0.0)(row) == headroom.dates(0.0)(row) == [a, a2, b, c]
    assert headroom.diverse(1.0)(row) == [a, c, b, a2]
    assert headroom.dates(1.0)(row) == [a, b, c, a2]
    assert headroom.names(1.0)(row)[0] == c
    nobody = _reorder_row("what did they paint?", [("Bob painted", [1, 0, 0], "2023-05-01"),
                                                   ("Alice painted", [0, 1, 0], "2023-05-01")])
    assert headroom.names(1.0)(nobody) == headroom.production(nobody)
    assert headroom.feedback(0.0, 3)(row) == headroom.production(row)
    # the query moved most of the way to the mean of A, A2 and B: A2 is now the nearest
    assert headroom.feedback(10.0, 3)(row)[0] == a2

    wordnet = tmp_path / "wordnet"
    wordnet.mkdir()
    header = "  1 This software and database is provided under the following license.  \n"
    for name in ("adj", "adv"):
        (wordnet / f"index.{name}").write_text(header)
        (wordnet / f"data.{name}").write_text(header)
    (wordnet / "index.verb").write_text(header + "hurt v 1 1 + 1 0 00000001  \n")
    (wordnet / "data.verb").write_text(
        header + "00000001 29 v 01 hurt 0 001 + 00000002 n 0101 | feel pain  \n")
    (wordnet / "index.noun").write_text(header + "injury n 1 1 + 1 0 00000002  \n")
    (wordnet / "data.noun").write_text(
        header + "00000002 26 n 01 injury 0 001 + 00000001 v 0101 | harm to the body  \n")
    words = headroom.Thesaurus(wordnet)
    assert words.related("hurt", 1) == {"injury"} and words.related("paint", 1) == set()
    assert headroom.thesaurus(words, 2.0, 1)(row)[0] == b
    assert headroom.thesaurus(words, 0.0, 1)(row) == headroom.production(row)

    seven = [(f"memory {i}", [1, 0.1 * i, 0], "2023-05-01") for i in range(7)]
    # production misses the first (its evidence ranks 7th) and finds the second
    tune = [_reorder_row("Q?", seven, cited=6), row]
    rest = [_reorder_row("Q?", seven, cited=0)]
    grids = {"x": {"production": headroom.production, "oracle": headroom.pool_oracle,
                   "none": lambda r: []}}
    out = headroom.compare_reorderings(tune, rest, grids)["x"]
    assert out["grid_tune_objective"] == {"production": 0.5, "oracle": 1.0, "none": 0.0}
    assert out["chosen"] == "oracle"
    assert out["tune"]["observations"]["recall_all@5"] == 1.0
    assert out["rest"]["observations"] == {"recall_all@5": 1.0, "mrr": 1.0, "n": 1}


def test_arm_depth_bench_asks_every_depth_and_puts_the_depth_back(capsys):
    """eval/bench_arm_depth.py on the tiny conversation (16 turns; hash embedder): every
    depth is reported per mode, and the depth reaches the search: at 30 the fusion orders all
    16 turns, at 1 (raised to the request's limit, 10) fewer -- while both evidence turns of
    question 2 are found either way; the production depth is in place again afterwards."""
    from strata.search import ranking

    bench = support.load_module("bench_arm_depth", ROOT / "eval" / "bench_arm_depth.py")
    production = ranking.ARM_DEPTH, ranking.VECTOR_FETCH
    assert bench.main(["--data", str(DATA), "--conversations", "1", "--embedder", "hash",
                       "--depths", "30,1,1/1"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert (ranking.ARM_DEPTH, ranking.VECTOR_FETCH) == production
    assert (report["production_depth"], report["production_vector_fetch"]) == production
    depths = report["locomo"]["depths"]
    assert set(depths) == {"30", "1", "1/1"}
    for d in depths.values():
        assert set(d) == {"objective", "mrr", "observations", "turns"}
        assert d["turns"]["n"] == d["observations"]["n"] == 2
        assert d["turns"]["recall_all@5"] == 1.0
    assert depths["30"]["turns"]["candidates_mean"] == 16
    assert 10 <= depths["1"]["turns"]["candidates_mean"] < 16
    with pytest.raises(SystemExit):  # a setting that is not D or D/F is refused by name
        bench.main(["--data", str(DATA), "--depths", "30,x/2"])
    assert "'x/2' is not a depth" in capsys.readouterr().err
