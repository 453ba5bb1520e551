"""Calibrate the similarity bands of the write gate for an embedder.

Scores labelled pairs (eval/data/band_pairs.jsonl: same statement, conflicting, refining,
unrelated) and prints, as JSON, each label's similarity range and the band edges that
separate them: reinforce at or above the lowest "same" score that no conflict reaches, and
judge at or above the lowest conflict/refinement score. The edges in
strata.write.gate.BANDS come from this script.

Usage: python eval/calibrate_bands.py [--embedder hash]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from strata.config import Settings
from strata.write.gate import bands
from strata.providers import get_embedder

DATA = Path(__file__).parent / "data" / "band_pairs.jsonl"


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
        a, b = vectors[2 * i], vectors[2 * i + 1]
        scores.setdefault(p["label"], []).append(float(np.dot(a, b)))
    conflicting = scores["conflict"] + scores["refines"]
    ceiling = max(conflicting)
    same_above = [s for s in scores["same"] if s > ceiling]
    reinforce = round(min(same_above) if same_above else min(1.0, ceiling + 0.01), 2)
    judge = round(min(conflicting) - 0.02, 2)
    current = bands(settings, embedder.model)
    print(json.dumps({
        "embedder": embedder.model,
        "pairs": len(pairs),
        "ranges": {k: [round(min(v), 3), round(max(v), 3)] for k, v in scores.items()},
        "suggested": {"reinforce_at": reinforce, "judge_at": judge},
        "configured": {"reinforce_at": current[0], "judge_at": current[1]},
        "same_pairs_reinforced_without_judge": sum(s >= current[0] for s in scores["same"]),
        "conflicts_reinforced_wrongly": sum(s >= current[0] for s in conflicting),
        "unrelated_sent_to_judge": sum(s >= current[1] for s in scores["unrelated"]),
    }, indent=2))


if __name__ == "__main__":
    main()
