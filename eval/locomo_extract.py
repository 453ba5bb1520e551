"""LoCoMo through the rule extractor alone: what it would keep, in seconds, without a database.

For tuning the extractor. The messages are shaped as ``locomo_eval.py --mode ingest`` sends
them (per session and speaker, that speaker's turns as ``user`` messages with ``name``, ``at``
and ``id``, the other's as context), and each candidate credits the dia_ids of the messages
its ``evidence`` indexes. The measures are the ingest mode's ``kept`` ones
(``turn_coverage``, ``precision_proxy``, ``memories_per_turn``; see ``locomo_eval.py``), but
over candidates: nothing is merged, reinforced or superseded, so memories per turn is an
upper bound on what the pipeline keeps, and coverage and precision are close to its.

Also reported: the extractor's own account of what it did not keep (``not_kept`` reasons),
and ``unaccounted``: user messages no candidate cites and no ``not_kept`` entry explains
(the pipeline records these as ``model_skipped``).

``--show N`` prints N random examples (``--seed``) of (a) ``missed``: observation-bearing
turns no candidate cites, with the observations that cite them and any ``not_kept`` reasons;
(b) ``imprecise``: candidates citing no observation-bearing turn. ``--group`` picks the
conversations they come from: ``tune`` (26 and 30, the default: the extractor is tuned on
these), ``rest`` (held out) or ``all``.

Usage: ``python eval/locomo_extract.py --data DIR [--conversations 26,30] [--show N]
[--group tune|rest|all] [--seed S] [--json]``.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from locomo_eval import (  # noqa: E402
    data_argument,
    group_members,
    ingest_requests,
    kept_counts,
    kept_ratios,
    observation_turns,
    read_conversations,
    session_turns,
    sum_counts,
    turn_ids,
)


def rule_extractor():
    """The rule extractor, from ``strata.ingest.rules`` once it has moved there, else from
    ``strata.ingest.extract_rules``. A ``rules`` package that does not import (it may be half
    written) falls back too, but says so on stderr: the report's ``source`` names the module
    that ran."""
    try:
        from strata.ingest.rules import RuleExtractor
    except ImportError as exc:
        if not (isinstance(exc, ModuleNotFoundError) and exc.name == "strata.ingest.rules"):
            print(f"locomo_extract: strata.ingest.rules did not import ({exc}); "
                  "using strata.ingest.extract_rules", file=sys.stderr)
        from strata.ingest.extract_rules import RuleExtractor
    return RuleExtractor()


def extract_conversation(extractor, conv_id: str, conv: dict[str, Any]) -> dict[str, Any]:
    """Every candidate of one conversation with the dia_ids it cites, and what was not kept."""
    from strata.ingest.models import Message

    candidates: list[dict[str, Any]] = []
    not_kept: Counter[str] = Counter()
    reasons: dict[str, list[dict[str, Any]]] = defaultdict(list)
    unaccounted = 0
    for date, requests in ingest_requests(conv, conv_id):
        for path, raw in requests:
            messages = [Message.model_validate(m) for m in raw]
            extraction = extractor.extract(messages, date)
            cited_idx: set[int] = set()
            for c in extraction.memories:
                idx = [i for i in c.evidence if 0 <= i < len(messages)]
                cited_idx.update(idx)
                candidates.append({"conversation": conv_id, "path": path, "content": c.content,
                                   "dia_ids": sorted({messages[i].id for i in idx
                                                      if messages[i].id})})
            for n in extraction.not_kept:
                not_kept[n.reason] += 1
                if 0 <= n.message < len(messages) and messages[n.message].id:
                    reasons[messages[n.message].id].append({"reason": n.reason, "text": n.text})
            told = {n.message for n in extraction.not_kept}
            unaccounted += sum(m.role == "user" and i not in cited_idx and i not in told
                               for i, m in enumerate(messages))
    cites = {k: set(c["dia_ids"]) for k, c in enumerate(candidates)}
    return {"candidates": candidates, "not_kept": dict(not_kept), "reasons": reasons,
            "unaccounted": unaccounted,
            "kept": kept_counts(cites, turn_ids(conv), observation_turns(conv))}


def examples(convs: dict[str, dict[str, Any]], results: dict[str, dict[str, Any]],
             ids: list[str], n: int, seed: int) -> dict[str, list[dict[str, Any]]]:
    """``n`` random missed turns and ``n`` random imprecise candidates from conversations
    ``ids``."""
    missed: list[dict[str, Any]] = []
    imprecise: list[dict[str, Any]] = []
    for cid in ids:
        conv, result = convs[cid], results[cid]
        turns = {str(t["dia_id"]): t for _, ts in session_turns(conv) for t in ts}
        facts: dict[str, list[str]] = defaultdict(list)
        for key, value in conv.items():
            if key.endswith("_observation") and isinstance(value, dict):
                for fs in value.values():
                    for f in fs:
                        for d in f[1:]:
                            facts[str(d)].append(f[0])
        bearing = observation_turns(conv) & set(turns)
        cited = {d for c in result["candidates"] for d in c["dia_ids"]}
        for d in sorted(bearing - cited):
            missed.append({"conversation": cid, "dia_id": d, "speaker": turns[d].get("speaker"),
                           "text": turns[d].get("text"), "observations": facts[d],
                           "not_kept": result["reasons"].get(d, [])})
        for c in result["candidates"]:
            if not set(c["dia_ids"]) & bearing:
                imprecise.append({"conversation": cid, "dia_ids": c["dia_ids"],
                                  "text": " | ".join(turns[d].get("text") or ""
                                                     for d in c["dia_ids"] if d in turns),
                                  "memory": c["content"]})
    rng = random.Random(seed)
    return {"missed": rng.sample(missed, min(n, len(missed))),
            "imprecise": rng.sample(imprecise, min(n, len(imprecise)))}


def evaluate(convs: dict[str, dict[str, Any]], show: int = 0, group: str = "tune",
             seed: int = 0) -> dict[str, Any]:
    t0 = time.perf_counter()
    extractor = rule_extractor()
    results = {cid: extract_conversation(extractor, cid, conv) for cid, conv in convs.items()}
    members = group_members(list(convs))
    groups = {}
    for g, ids in members.items():
        groups[g] = {
            **kept_ratios(sum_counts([results[c]["kept"] for c in ids])),
            "not_kept": dict(sum((Counter(results[c]["not_kept"]) for c in ids), Counter())),
            "unaccounted": sum(results[c]["unaccounted"] for c in ids),
        }
    report: dict[str, Any] = {
        "extractor": extractor.name, "source": type(extractor).__module__,
        "groups": groups,
        "per_conversation": {cid: kept_ratios(r["kept"]) for cid, r in results.items()},
        "conversations": {g: ids for g, ids in members.items() if g != "all"},
        "seconds": round(time.perf_counter() - t0, 2),
    }
    if show:
        if group not in members:
            raise SystemExit(f"locomo_extract: no {group} conversations among {list(convs)}")
        report["examples"] = {"group": group,
                              **examples(convs, results, members[group], show, seed)}
    return report


def table(report: dict[str, Any]) -> str:
    f = lambda v: f"{v:.3f}" if isinstance(v, float) else "-"  # noqa: E731
    lines = [f"extractor {report['extractor']} ({report['source']}), {report['seconds']} s"]
    for g, m in report["groups"].items():
        lines.append(f"{g:<5} coverage {f(m['turn_coverage'])}"
                     f"  precision {f(m['precision_proxy'])}"
                     f"  memories/turn {f(m['memories_per_turn'])}  ({m['memories']} candidates,"
                     f" {m['turns']} turns, {m['observation_turns']} with observations)")
        lines.append(f"      not kept {m['not_kept']};"
                     f" unaccounted user messages {m['unaccounted']}")
    ex = report.get("examples")
    if ex:
        lines.append(f"\nmissed ({ex['group']}): observation-bearing turns no candidate cites")
        for e in ex["missed"]:
            lines.append(f"  c{e['conversation']} {e['dia_id']} {e['speaker']}: {e['text']}")
            for o in e["observations"]:
                lines.append(f"      observation: {o}")
            for n in e["not_kept"]:
                lines.append(f"      not kept: {n['reason']}: {n['text']}")
        lines.append(f"\nimprecise ({ex['group']}): candidates from turns without observations")
        for e in ex["imprecise"]:
            lines.append(f"  c{e['conversation']} {','.join(e['dia_ids'])}: {e['text']}")
            lines.append(f"      memory: {e['memory']}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="locomo_extract", description=__doc__.splitlines()[0])
    data_argument(parser)
    parser.add_argument("--conversations", help="comma-separated ids, e.g. 26,30 (default all)")
    parser.add_argument("--show", type=int, default=0, metavar="N",
                        help="N random missed turns and N imprecise candidates")
    parser.add_argument("--group", choices=("tune", "rest", "all"), default="tune",
                        help="the conversations --show samples from (default tune)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", action="store_true", help="print only the JSON object")
    args = parser.parse_args(argv)
    only = [c.strip() for c in args.conversations.split(",") if c.strip()] \
        if args.conversations else None
    report = evaluate(read_conversations(args.data, only), args.show, args.group, args.seed)
    print(json.dumps(report, indent=2, default=str))
    if not args.json:
        print()
        print(table(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
