"""Calibrate the similarity bands of the write gate for an embedder, and check that the write
path tells paraphrases from near misses with them.

Scores labelled pairs (eval/data/band_pairs.jsonl) and prints, as JSON:

- each label's similarity range, and the band edges that separate the calibration labels
  (``same`` statement, ``conflict``, ``refines``, ``unrelated``): reinforce at or above the
  lowest "same" score that no conflict reaches, and judge at or above the lowest
  conflict/refinement score. The edges in strata.write.gate.BANDS come from this script;
- for ``paraphrase`` pairs (one fact said differently: "I'm allergic to peanuts" / "I have
  a peanut allergy") and ``near_miss`` pairs (the same shape, another fact: "I use vim" /
  "I use emacs", "I live in Lisbon" / "I lived in Lisbon"), what the write path decides when
  the second statement is written beside the first, with the configured bands: the gate
  (exact text, lexical twin, similarity band; ``gate._decide_one``) and, for a pair in the
  judge band, the rule judge. "same memory" is a reinforcement or a duplicate verdict. It is
  reported with the lexical key and with similarity alone, so the key's share shows:
  ``separated`` is true when every paraphrase is one memory and no near miss is.

Usage: python eval/calibrate_bands.py [--embedder hash|local|...]
"""

from __future__ import annotations

import argparse
import json
import uuid
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

from strata.foundation.config import Settings
from strata.providers import get_embedder
from strata.write import gate as gating
from strata.write import lexical
from strata.write.canonical import canonicalize
from strata.write.conflict import RuleJudge, judge_candidate
from strata.write.models import Candidate, Neighbour

DATA = Path(__file__).parent / "data" / "band_pairs.jsonl"
NOW = datetime(2026, 1, 1, tzinfo=UTC)


def write_path_outcome(a: str, b: str, similarity: float, thresholds: tuple[float, float], *,
                       lexical_key: bool = True) -> str:
    """What writing ``b`` beside an active ``a`` (no slots) ends in: ``reinforce``,
    ``supersede``, ``refine`` or ``new``."""
    held = uuid.uuid4()
    twins = []
    ca, cb = canonicalize(a), canonicalize(b)
    if ca == cb:
        twins.append({"id": held, "slot": None, "content": a, "exact": True})
    elif lexical_key and lexical.lexical_key(ca) == lexical.lexical_key(cb):
        twins.append({"id": held, "slot": None, "content": a, "exact": False})
    item = gating.GateInput(0, "p", cb, None, None, False, None)
    near = [{"id": held, "slot": None, "value": None, "similarity": similarity}]
    decision = gating._decide_one(item, None, None, twins, [], near, thresholds)
    if decision.action == "reinforce":
        return "reinforce"
    if decision.action != "judge":
        return "new"
    shown = [Neighbour(id=held, content=a, kind="fact", valid_from=NOW, recorded_at=NOW,
                       similarity=similarity)]
    candidate = Candidate(content=b)
    if not lexical_key:  # similarity alone: the judge's lexical rule is the key's too
        verdicts = [v for v in judge_candidate(RuleJudge(), candidate, shown)
                    if v.reason != "the same statement in other words"]
    else:
        verdicts = judge_candidate(RuleJudge(), candidate, shown)
    relation = verdicts[0].relation if verdicts else None
    return {"duplicate": "reinforce", "supersedes": "supersede", "refines": "refine"}.get(
        relation, "new")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--embedder", default="hash")
    args = parser.parse_args()
    settings = Settings(embedder=args.embedder)
    embedder = get_embedder(settings)
    pairs = [json.loads(line) for line in DATA.read_text().splitlines() if line.strip()]
    vectors = embedder.embed([p[k] for p in pairs for k in ("a", "b")])
    scores: dict[str, list[float]] = {}
    for i, p in enumerate(pairs):
        p["similarity"] = float(np.dot(vectors[2 * i], vectors[2 * i + 1]))
        scores.setdefault(p["label"], []).append(p["similarity"])
    conflicting = scores["conflict"] + scores["refines"]
    ceiling = max(conflicting)
    same_above = [s for s in scores["same"] if s > ceiling]
    reinforce = round(min(same_above) if same_above else min(1.0, ceiling + 0.01), 2)
    judge = round(min(conflicting) - 0.02, 2)
    current = gating.bands(settings, embedder.model)

    def outcomes(label: str, key: bool) -> list[dict]:
        return [{"a": p["a"], "b": p["b"], "similarity": round(p["similarity"], 3),
                 "outcome": write_path_outcome(p["a"], p["b"], p["similarity"], current,
                                               lexical_key=key)}
                for p in pairs if p["label"] == label]

    report = {}
    for key in (True, False):
        para, miss = outcomes("paraphrase", key), outcomes("near_miss", key)
        report["with_lexical_key" if key else "similarity_alone"] = {
            "paraphrases_one_memory": sum(o["outcome"] == "reinforce" for o in para),
            "paraphrases": len(para),
            "near_misses_merged": sum(o["outcome"] == "reinforce" for o in miss),
            "near_misses": len(miss),
            "separated": all(o["outcome"] == "reinforce" for o in para)
            and not any(o["outcome"] == "reinforce" for o in miss),
            "paraphrases_kept_apart": [o for o in para if o["outcome"] != "reinforce"],
            "near_misses_merged_list": [o for o in miss if o["outcome"] == "reinforce"],
        }
    print(json.dumps({
        "embedder": embedder.model,
        "pairs": len(pairs),
        "ranges": {k: [round(min(v), 3), round(max(v), 3)] for k, v in scores.items()},
        "suggested": {"reinforce_at": reinforce, "judge_at": judge},
        "configured": {"reinforce_at": current[0], "judge_at": current[1]},
        "same_pairs_reinforced_without_judge": sum(s >= current[0] for s in scores["same"]),
        "conflicts_reinforced_wrongly": sum(s >= current[0] for s in conflicting),
        "unrelated_sent_to_judge": sum(s >= current[1] for s in scores["unrelated"]),
        "paraphrases_in_judge_band": sum(s >= current[1] for s in scores["paraphrase"]),
        "near_misses_reinforced_by_similarity": sum(s >= current[0] for s in scores["near_miss"]),
        "write_path": report,
    }, indent=2))


if __name__ == "__main__":
    main()
