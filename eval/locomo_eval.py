"""LoCoMo retrieval: does search put the evidence turns of a LoCoMo question in its top k?

Data: the LoCoMo-10 folder (one ``<id>.json`` per conversation; see its README). It is
never copied into the repository: the folder is an argument.

Loading (one tenant per conversation, on a throwaway migrated database):

- ``--mode observations``: every pre-extracted fact (``session_N_observation``) becomes a
  memory citing its ``dia_id``;
- ``--mode turns``: every raw turn becomes a memory ``"<speaker>: <text>"`` (plus
  ``[image: <caption>]`` when the turn shares a photo), citing its own ``dia_id``.

Both go through ``create_memories`` (the core write path, rule judge), one request per
session, at path ``conv.c<id>``, with the session date as valid time (``valid_from``) and the
cited dia_ids in ``meta.dia_ids``. The write path may merge a near-duplicate into an earlier
memory (``reinforced``): the harness then credits that memory with both dia_ids, and reports
the write outcomes in ``load``.

Questions: categories 1-4 (1 multi-hop, 2 temporal, 3 open-domain, 4 single-hop);
category 5 (adversarial: the answer is not in the conversation) is skipped, as are questions
with no evidence. Each question is asked as the conversation's owner with ``limit=10`` in
``hybrid``, ``vector`` and ``keyword`` mode, with ``now`` = one day after the last session
(so relative dates in a question resolve inside the conversation's time), plus ``exact``:
exact cosine in numpy over the same stored vectors (active memories), the ceiling of the
vector arm's approximate (HNSW) search.

Metrics (per category and overall, mean over questions):

- ``recall_all@k``: every evidence dia_id is cited by the top k (the headline);
- ``recall_any@k``: at least one is;
- ``mrr``: 1 / rank of the first result citing an evidence dia_id within the top 10.

Latency: ``p50_ms``/``p95_ms`` of the in-process ``search()`` call (SQL plus the audit
event), *excluding* query embedding: every question is embedded once up front and search
receives the cached vector. ``exact`` times the numpy dot product and sort only.

Usage: ``strata eval locomo --data DIR --embedder local|hash --mode observations|turns
[--conversations 26,30] [--json]``.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
import uuid
from collections import Counter, defaultdict
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness import percentile, scratch_database  # noqa: E402

MODES = ("hybrid", "vector", "keyword")
ARMS = (*MODES, "exact")
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
KS = (5, 10)
LIMIT = 10
BATCH = 500  # CreateRequest's maximum
_SESSION = re.compile(r"^session_(\d+)$")


# --------------------------------------------------------------------------------------
# Reading a conversation
# --------------------------------------------------------------------------------------


def parse_date(text: str) -> datetime:
    """ "1:56 pm on 8 May, 2023" -> an aware datetime (UTC)."""
    return datetime.strptime(" ".join(text.split()), "%I:%M %p on %d %B, %Y").replace(tzinfo=UTC)


def dia_ids(value: Any) -> list[str]:
    """Evidence as written in the data: a dia_id, a list of them, or "D8:6; D9:17"."""
    if value is None:
        return []
    if isinstance(value, (list, tuple)):
        return [d for v in value for d in dia_ids(v)]
    return [p for p in re.split(r"[;,\s]+", str(value)) if p]


def sessions(conv: dict[str, Any]) -> list[tuple[int, datetime]]:
    """(number, date) of the sessions that have a date, in order."""
    out = []
    for key in conv:
        m = _SESSION.match(key)
        if m and conv.get(f"{key}_date_time"):
            out.append((int(m.group(1)), parse_date(conv[f"{key}_date_time"])))
    return sorted(out)


def items_for(conv: dict[str, Any], mode: str) -> list[tuple[datetime, list[tuple[str, list[str]]]]]:
    """Per session: its date and the (content, dia_ids) to store."""
    out = []
    for n, date in sessions(conv):
        items: list[tuple[str, list[str]]] = []
        if mode == "observations":
            for facts in (conv.get(f"session_{n}_observation") or {}).values():
                for fact in facts:
                    text, cited = fact[0], dia_ids(fact[1:])
                    if text and text.strip():
                        items.append((text.strip(), cited))
        else:
            for turn in conv.get(f"session_{n}") or []:
                text = (turn.get("text") or "").strip()
                if turn.get("blip_caption"):
                    text = f"{text} [image: {turn['blip_caption']}]".strip()
                if text:
                    items.append((f"{turn['speaker']}: {text}", dia_ids(turn.get("dia_id"))))
        if items:
            out.append((date, items))
    return out


def questions(conv: dict[str, Any]) -> list[dict[str, Any]]:
    out = []
    for i, q in enumerate(conv.get("qa", [])):
        cat = q.get("category")
        evidence = dia_ids(q.get("evidence"))
        if cat in CATEGORIES and evidence:
            out.append({"i": i, "question": q["question"], "category": cat,
                        "evidence": sorted(set(evidence))})
    return out


# --------------------------------------------------------------------------------------
# Loading and asking
# --------------------------------------------------------------------------------------


class CachedEmbedder:
    """The real embedder, with the questions' vectors computed up front (in one batch), so
    the measured search latency excludes query embedding."""

    def __init__(self, inner, texts: Sequence[str]):
        self.inner, self.model, self.dim = inner, inner.model, inner.dim
        uniq = list(dict.fromkeys(texts))
        self.cache = dict(zip(uniq, inner.embed(uniq), strict=True)) if uniq else {}

    def embed(self, texts: Sequence[str]) -> list[np.ndarray]:
        missing = [t for t in texts if t not in self.cache]
        if missing:
            self.cache.update(zip(missing, self.inner.embed(missing), strict=True))
        return [self.cache[t] for t in texts]


class _NoAccessLog:
    """The evaluation does not count as use of the memories."""

    def record(self, db, tenant_id, ids) -> None:
        pass


def load_conversation(db, embedder, settings, conv_id: str, conv: dict[str, Any], mode: str,
                      suffix: str) -> dict[str, Any]:
    """Store one conversation in its own tenant; return its caller, the dia_ids each memory
    cites and the write outcomes."""
    from strata.auth import authenticate, create_tenant
    from strata.write.conflict import RuleJudge
    from strata.memories.models import CreateRequest, MemoryIn
    from strata.memories.store import create_memories

    _, owner = create_tenant(db, f"locomo-{conv_id}-{mode}-{suffix}")
    caller = authenticate(db, owner.key)
    path = f"conv.c{re.sub(r'[^A-Za-z0-9_]', '_', conv_id)}"
    cites: dict[uuid.UUID, set[str]] = defaultdict(set)
    outcomes: Counter[str] = Counter()
    stored_ids: set[str] = set()
    judge = RuleJudge()
    for date, items in items_for(conv, mode):
        for start in range(0, len(items), BATCH):
            chunk = items[start:start + BATCH]
            req = CreateRequest(memories=[
                MemoryIn(content=text, path=path, valid_from=date, meta={"dia_ids": cited})
                for text, cited in chunk])
            results = create_memories(db, caller, req, embedder, judge=judge, settings=settings)
            for (_, cited), r in zip(chunk, results, strict=True):
                outcomes[r.status] += 1
                if r.id is not None:
                    cites[r.id].update(cited)
                    stored_ids.update(cited)
    last = sessions(conv)[-1][1]
    return {"caller": caller, "cites": cites, "outcomes": dict(outcomes),
            "stored_dia_ids": stored_ids, "now": last + timedelta(days=1)}


def stored_vectors(db, tenant_id) -> tuple[list[uuid.UUID], np.ndarray]:
    """The active memories' vectors as stored (what the vector arm searches)."""
    with db.connection() as conn:
        rows = conn.execute(
            "SELECT id, embedding::text AS e FROM memories WHERE tenant_id = %s"
            " AND status = 'active' AND embedding IS NOT NULL ORDER BY id",
            (tenant_id,)).fetchall()
    ids = [r["id"] for r in rows]
    mat = np.array([json.loads(r["e"]) for r in rows], dtype=np.float32)
    if len(ids):
        mat /= np.maximum(np.linalg.norm(mat, axis=1, keepdims=True), 1e-12)
    return ids, mat


def ask_all(db, embedder, loaded: dict[str, Any], qs: list[dict[str, Any]]):
    """Per question and arm, the ranked memory ids (top 10) and the latency in ms."""
    from strata.search import SearchRequest, search

    caller = loaded["caller"]
    ids, mat = stored_vectors(db, caller.tenant_id)
    ranked: dict[str, list[list[uuid.UUID]]] = {a: [] for a in ARMS}
    latency: dict[str, list[float]] = {a: [] for a in ARMS}
    for q in qs:
        for mode in MODES:
            req = SearchRequest(query=q["question"], limit=LIMIT, mode=mode)
            t0 = time.perf_counter()
            results = search(db, caller, req, embedder, now=loaded["now"],
                             access_log=_NoAccessLog())
            latency[mode].append((time.perf_counter() - t0) * 1000)
            ranked[mode].append([r.id for r in results])
        qv = embedder.embed([q["question"]])[0]
        t0 = time.perf_counter()
        if len(ids):
            sims = mat @ np.asarray(qv, dtype=np.float32)
            top = np.argsort(-sims, kind="stable")[:LIMIT]
            got = [ids[i] for i in top]
        else:
            got = []
        latency["exact"].append((time.perf_counter() - t0) * 1000)
        ranked["exact"].append(got)
    return ranked, latency


# --------------------------------------------------------------------------------------
# Scoring
# --------------------------------------------------------------------------------------


def score_one(evidence: Sequence[str], got: Sequence[uuid.UUID],
              cites: dict[uuid.UUID, set[str]]) -> dict[str, float]:
    want = set(evidence)
    out: dict[str, float] = {}
    for k in KS:
        cited = set().union(*(cites.get(m, set()) for m in got[:k]))
        out[f"recall_all@{k}"] = float(want <= cited)
        out[f"recall_any@{k}"] = float(bool(want & cited))
    rank = next((i + 1 for i, m in enumerate(got[:LIMIT]) if cites.get(m, set()) & want), None)
    out["mrr"] = 1.0 / rank if rank else 0.0
    return out


METRICS = ("recall_all@5", "recall_any@5", "recall_all@10", "recall_any@10", "mrr")


def aggregate(rows: list[dict[str, float]], latencies: list[float] | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {m: round(sum(r[m] for r in rows) / len(rows), 4) if rows else None
                           for m in METRICS}
    if latencies is not None:
        out["p50_ms"] = round(percentile(latencies, 0.50), 2) if latencies else None
        out["p95_ms"] = round(percentile(latencies, 0.95), 2) if latencies else None
    out["n"] = len(rows)
    return out


def evaluate(db, embedder, settings, convs: dict[str, dict[str, Any]], mode: str) -> dict[str, Any]:
    suffix = uuid.uuid4().hex[:6]
    all_q = {cid: questions(c) for cid, c in convs.items()}
    cached = CachedEmbedder(embedder, [q["question"] for qs in all_q.values() for q in qs])
    rows: dict[str, list[tuple[int, dict[str, float]]]] = {a: [] for a in ARMS}
    lat: dict[str, list[float]] = {a: [] for a in ARMS}
    load: dict[str, Any] = {}
    unreachable = 0
    from strata.progress import bar

    progress = bar("locomo", total=len(convs), unit="conversation")
    for cid, conv in convs.items():
        progress.update()
        t0 = time.perf_counter()
        loaded = load_conversation(db, cached, settings, cid, conv, mode, suffix)
        qs = all_q[cid]
        unreachable += sum(not set(q["evidence"]) <= loaded["stored_dia_ids"] for q in qs)
        t1 = time.perf_counter()
        ranked, latency = ask_all(db, cached, loaded, qs)
        load[cid] = {"outcomes": loaded["outcomes"], "questions": len(qs),
                     "load_s": round(t1 - t0, 1), "ask_s": round(time.perf_counter() - t1, 1)}
        for arm in ARMS:
            lat[arm] += latency[arm]
            for q, got in zip(qs, ranked[arm], strict=True):
                rows[arm].append((q["category"], score_one(q["evidence"], got, loaded["cites"])))
    progress.close()
    overall = {arm: aggregate([r for _, r in rows[arm]], lat[arm]) for arm in ARMS}
    per_category = {
        f"{c}-{name}": {arm: aggregate([r for cat, r in rows[arm] if cat == c]) for arm in ARMS}
        for c, name in CATEGORIES.items()
    }
    return {
        "overall": overall,
        "per_category": per_category,
        "meta": {
            "mode": mode, "embedder": embedder.model, "conversations": list(convs),
            "questions": len(rows["hybrid"]), "limit": LIMIT,
            # Evidence turns no stored memory cites (e.g. no observation points at them):
            # these questions cannot reach recall_all in this mode.
            "questions_with_uncited_evidence": unreachable,
            "latency": "in-process search() incl. audit, excluding query embedding; "
                       "exact = numpy dot + sort",
            "load": load,
        },
    }


def table(report: dict[str, Any]) -> str:
    head = (f"{'':<22}{'arm':<8}{'all@5':>7}{'any@5':>7}{'all@10':>8}{'any@10':>8}{'MRR':>7}"
            f"{'p50ms':>8}{'p95ms':>8}{'n':>6}")
    lines = [head]

    def row(label: str, arm: str, m: dict[str, Any]) -> str:
        f = lambda v, w: f"{v:>{w}.3f}" if isinstance(v, float) else f"{'-':>{w}}"  # noqa: E731
        lat = (f"{m['p50_ms']:>8.1f}{m['p95_ms']:>8.1f}" if m.get("p50_ms") is not None
               else f"{'':>16}")
        return (f"{label:<22}{arm:<8}{f(m['recall_all@5'], 7)}{f(m['recall_any@5'], 7)}"
                f"{f(m['recall_all@10'], 8)}{f(m['recall_any@10'], 8)}{f(m['mrr'], 7)}{lat}"
                f"{m['n']:>6}")

    for arm, m in report["overall"].items():
        lines.append(row("overall", arm, m))
    for cat, arms in report["per_category"].items():
        for arm, m in arms.items():
            lines.append(row(cat, arm, m))
    meta = report["meta"]
    lines.append(f"{meta['questions']} questions (categories 1-4), "
                 f"{meta['questions_with_uncited_evidence']} with evidence no memory cites; "
                 f"latency: {meta['latency']}")
    return "\n".join(lines)


def read_conversations(data: Path, only: Sequence[str] | None) -> dict[str, dict[str, Any]]:
    files = sorted(data.glob("*.json"), key=lambda p: (len(p.stem), p.stem))
    convs = {p.stem: json.loads(p.read_text(encoding="utf-8")) for p in files
             if not only or p.stem in only}
    missing = set(only or ()) - set(convs)
    if missing:
        raise SystemExit(f"strata eval locomo: no {', '.join(sorted(missing))} in {data}")
    if not convs:
        raise SystemExit(f"strata eval locomo: no conversations (*.json) in {data}")
    return convs


def run(data: Path, embedder_name: str, mode: str, only: Sequence[str] | None = None) -> dict[str, Any]:
    from strata.config import Settings
    from strata.providers.embedders import get_embedder

    convs = read_conversations(data, only)
    embedder = get_embedder(Settings(embedder=embedder_name))
    with scratch_database(embedding_dim=embedder.dim, embedder=embedder_name,
                          llm_base_url=None, llm_model=None) as (db, settings):
        return evaluate(db, embedder, settings, convs, mode)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="strata eval locomo", description=__doc__.splitlines()[0])
    parser.add_argument("--data", required=True, type=Path, help="the LoCoMo-10 folder")
    parser.add_argument("--embedder", choices=("local", "hash"), default="hash")
    parser.add_argument("--mode", choices=("observations", "turns"), default="observations")
    parser.add_argument("--conversations", help="comma-separated ids, e.g. 26,30 (default all)")
    parser.add_argument("--json", action="store_true", help="print only the JSON object")
    args = parser.parse_args(argv)
    only = [c.strip() for c in args.conversations.split(",") if c.strip()] \
        if args.conversations else None
    report = run(args.data, args.embedder, args.mode, only)
    print(json.dumps(report, indent=2, default=str))
    if not args.json:
        print()
        print(table(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
