"""Golden leak set: a committed corpus with every way a memory stops being retrievable, and
queries whose forbidden answers must never reach the top 5.

The corpus (eval/golden/corpus.json) is loaded in order through the core write paths:
direct create (slot supersession retires the older value), ingest with the rule extractor
(a supersession, then an explicit change back held as a candidate), forget, review reject,
reflect (a reflection over a path by a scripted model that cites every memory it is shown:
retiring its evidence afterwards retires it, and forgetting evidence erases it).
Archiving has no route yet, so ``archive`` is a plain SQL status change. After loading, every
memory must be in the status the corpus names, so the set really contains superseded,
archived, forgotten, rejected and candidate memories, another tenant's, and a path the
querying key cannot read.

Every query (eval/golden/queries.json) runs in each mode (hybrid, vector, keyword) with
limit 10 and no score floor, as its caller. Reported per mode:

- ``recall@5``: mean over queries with expected keys of |expected in top 5| / |expected|;
- ``mrr``: mean over the same queries of 1 / rank of the first expected key in the top 10;
- ``leaks``: forbidden keys found in a top 5 (must be none);
- ``empty``: queries that returned nothing; ``decoy_inversions``: a decoy ranked above an
  expected key.

``discrimination`` reruns hybrid with the status filter removed (the core's
``ignore_status``, which no request can set) and lists the retired memories that then reach
a top 5: proof that the leak check can fail. ``controls`` run as the tenant owner, who can
read the path the reader key cannot, and must find what the reader may not.

Usage: ``strata eval golden [--json]`` or ``python eval/golden_eval.py [--json]`` -- on a
throwaway embedded PostgreSQL with the hashing embedder.
"""

from __future__ import annotations

import argparse
import json
import sys
import uuid
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
CORPUS = HERE / "golden" / "corpus.json"
QUERIES = HERE / "golden" / "queries.json"
MODES = ("hybrid", "vector", "keyword")
TOP = 5
LIMIT = 10
RETIRED = ("superseded", "archived", "candidate", "rejected")


def read(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text(encoding="utf-8"))


@dataclass
class Golden:
    ids: dict[str, uuid.UUID] = field(default_factory=dict)
    keys: dict[uuid.UUID, str] = field(default_factory=dict)
    callers: dict[str, Any] = field(default_factory=dict)
    statuses: dict[str, str] = field(default_factory=dict)
    tenant_of: dict[str, str] = field(default_factory=dict)


def load(db, embedder, settings, corpus: dict[str, Any] | None = None) -> Golden:
    """Write the corpus through the core; check every memory ended where the corpus says."""
    from strata.auth import Caller, authenticate, create_key, create_tenant
    from strata.ingest import service
    from strata.ingest.models import IngestRequest
    from strata.ingest.pipeline import IngestRuntime
    from strata.memories import forget
    from strata.memories.models import CreateRequest, MemoryIn
    from strata.memories.store import create_memories
    from strata.reflection.reflect import ReflectRequest, reflect
    from strata.review import queue as review
    from strata.write.conflict import RuleJudge

    corpus = corpus or read(CORPUS)
    g = Golden()
    suffix = uuid.uuid4().hex[:6]
    for name, spec in corpus["tenants"].items():
        tenant, owner = create_tenant(db, f"{name}-{suffix}")
        g.callers[f"{name}.owner"] = authenticate(db, owner.key)
        for key_name, key_spec in spec.get("keys", {}).items():
            key = create_key(db, Caller.system(tenant.id), principal_id=owner.principal_id,
                             ceiling=key_spec.get("ceiling"), name=key_name)
            g.callers[f"{name}.{key_name}"] = authenticate(db, key.key)

    runtime = IngestRuntime(db, embedder, settings, _judge=RuleJudge())
    for step in corpus["steps"]:
        op, key = step["op"], step["key"]
        where = f"corpus step {op} {key!r}"
        if op == "create":
            owner = g.callers[f"{step['tenant']}.owner"]
            # Every memory has a valid time in the corpus (default_valid_from when the step
            # names none), so date words in queries resolve the same way on any day.
            fields = {"valid_from": corpus.get("default_valid_from"), **step}
            item = MemoryIn(**{k: fields[k] for k in (
                "content", "path", "kind", "slot", "value", "valid_from", "tags", "meta",
                "importance") if fields.get(k) is not None})
            [result] = create_memories(db, owner, CreateRequest(memories=[item]), embedder,
                                       judge=RuleJudge(), settings=settings)
            if result.status != step.get("expect", "inserted"):
                raise RuntimeError(f"{where}: {result.status} ({result.reason})")
            g.ids[key] = result.id
        elif op == "ingest":
            owner = g.callers[f"{step['tenant']}.owner"]
            req = IngestRequest(path=step["path"], wait=True, messages=[
                {"role": "user", "content": step["text"], "at": step["at"]}])
            receipt, _ = service.ingest(runtime, None, owner, req)
            [item] = receipt.items
            if item.outcome != step["expect"]:
                raise RuntimeError(f"{where}: {item.outcome} ({item.reason})")
            g.ids[key] = item.memory_id
        elif op == "forget":
            forget(db, _owner_of(g, key), g.ids[key])
        elif op == "reflect":
            owner = g.callers[f"{step['tenant']}.owner"]
            done = reflect(db, owner, ReflectRequest(path=step["path"]), embedder,
                           _CitingReflector(step["content"]))
            g.ids[key] = done["memory"].id
        elif op == "reject":
            review.reject(db, _owner_of(g, key), g.ids[key])
        elif op == "archive":
            # No route archives a memory yet (lifecycle will): the status is set in SQL.
            with db.transaction(cause="eval.archive", actor="eval") as cur:
                cur.execute("UPDATE memories SET status = 'archived', version = version + 1,"
                            " updated_at = now() WHERE id = %s", (g.ids[key],))
        else:
            raise ValueError(f"{where}: unknown op")
        if "tenant" in step:
            g.statuses[key] = step["status"]
            g.tenant_of[key] = step["tenant"]
    g.keys = {v: k for k, v in g.ids.items()}

    with db.connection() as conn:
        actual = {r["id"]: r["status"] for r in conn.execute(
            "SELECT id, status::text AS status FROM memories WHERE id = ANY(%s)",
            (list(g.ids.values()),)).fetchall()}
    wrong = {k: (want, actual.get(g.ids[k], "forgotten")) for k, want in g.statuses.items()
             if actual.get(g.ids[k], "forgotten") != want}
    if wrong:
        raise RuntimeError(f"corpus did not load as described (key: (wanted, got)): {wrong}")
    return g


class _CitingReflector:
    """A stand-in model for the corpus: the reflection's text is the corpus's; it rests on
    every memory it is shown."""

    model = "golden-corpus"

    def __init__(self, content: str) -> None:
        self.content = content

    def reflect(self, evidence: list[dict[str, Any]]) -> tuple[str, list[uuid.UUID]]:
        return self.content, [m["id"] for m in evidence]


def _owner_of(g: Golden, key: str):
    return g.callers[f"{g.tenant_of[key]}.owner"]


class _NoAccessLog:
    """The evaluation does not count as use of the memories."""

    def record(self, db, tenant_id, ids) -> None:
        pass


def ask(db, embedder, g: Golden, q: dict[str, Any], mode: str, now: datetime,
        ignore_status: bool = False) -> list[str]:
    from strata.search.hybrid import SearchRequest, search

    req = SearchRequest(query=q["query"], limit=LIMIT, mode=mode, paths=q.get("paths"))
    results = search(db, g.callers[q["as"]], req, embedder, now=now,
                     access_log=_NoAccessLog(), ignore_status=ignore_status)
    return [g.keys.get(r.id, f"?{r.id}") for r in results]


def score(queries: list[dict[str, Any]], answers: dict[str, list[str]]) -> dict[str, Any]:
    recalls, rranks, leaks, empty, inversions, misses = [], [], [], [], [], []
    for q in queries:
        got = answers[q["id"]]
        top = got[:TOP]
        if not got:
            empty.append(q["id"])
        for key in q.get("forbidden", []):
            if key in top:
                leaks.append({"query": q["id"], "key": key, "rank": top.index(key) + 1})
        expected = q.get("expected", [])
        if expected:
            recalls.append(sum(k in top for k in expected) / len(expected))
            ranks = [got.index(k) + 1 for k in expected if k in got]
            rranks.append(1 / min(ranks) if ranks else 0.0)
            if not any(k in top for k in expected):
                misses.append(q["id"])
            worst = max((got.index(k) for k in expected if k in got), default=len(got))
            for d in q.get("decoys", []):
                if d in got and got.index(d) < worst:
                    inversions.append({"query": q["id"], "decoy": d})
    return {
        "recall@5": round(sum(recalls) / len(recalls), 4),
        "mrr": round(sum(rranks) / len(rranks), 4),
        "leaks": leaks, "empty": empty, "decoy_inversions": inversions, "missed@5": misses,
        "queries": len(queries), "scored": len(recalls),
    }


def evaluate(db, embedder, g: Golden, queries_doc: dict[str, Any] | None = None,
             modes=MODES) -> dict[str, Any]:
    doc = queries_doc or read(QUERIES)
    now = datetime.fromisoformat(doc["now"])
    queries = doc["queries"]
    report: dict[str, Any] = {"modes": {}}
    answers_by_mode = {}
    for mode in modes:
        answers = {q["id"]: ask(db, embedder, g, q, mode, now) for q in queries}
        answers_by_mode[mode] = answers
        report["modes"][mode] = score(queries, answers)

    # The same hybrid queries with the status filter removed: retired memories must surface.
    unfiltered = {q["id"]: ask(db, embedder, g, q, "hybrid", now, ignore_status=True)
                  for q in queries}
    surfaced = score(queries, unfiltered)["leaks"]
    report["discrimination"] = {
        "leaks_without_status_filter": surfaced,
        "statuses_surfaced": sorted({g.statuses[x["key"]] for x in surfaced}),
    }
    report["controls"] = []
    for c in doc.get("controls", []):
        got = ask(db, embedder, g, c, "hybrid", now)
        report["controls"].append({"id": c["id"], "top5": got[:TOP],
                                   "found": all(k in got[:TOP] for k in c["expected"])})
    report["answers"] = answers_by_mode
    return report


def summary(report: dict[str, Any]) -> dict[str, Any]:
    """What the CLI prints as JSON: per mode recall@5, MRR, leaks (and the checks)."""
    out = {mode: {k: m[k] for k in ("recall@5", "mrr", "leaks", "empty", "decoy_inversions",
                                   "missed@5")}
           for mode, m in report["modes"].items()}
    return {
        **out,
        "queries": report["modes"]["hybrid"]["queries"],
        "scored": report["modes"]["hybrid"]["scored"],
        "discrimination": report["discrimination"],
        "controls": report["controls"],
    }


def table(report: dict[str, Any]) -> str:
    rows = [f"{'mode':<8} {'recall@5':>8} {'MRR':>6} {'leaks':>5} {'empty':>5} {'decoy inv':>9}"]
    for mode, m in report["modes"].items():
        rows.append(f"{mode:<8} {m['recall@5']:>8.3f} {m['mrr']:>6.3f} {len(m['leaks']):>5} "
                    f"{len(m['empty']):>5} {len(m['decoy_inversions']):>9}")
    d = report["discrimination"]
    rows.append(f"without the status filter: {len(d['leaks_without_status_filter'])} leaks "
                f"({', '.join(d['statuses_surfaced']) or 'none'})")
    return "\n".join(rows)


def run_throwaway(embedder_name: str = "hash") -> dict[str, Any]:
    """A throwaway migrated database (eval/harness.py), loaded and evaluated."""
    sys.path.insert(0, str(HERE))
    from harness import scratch_database

    from strata.providers import get_embedder

    with scratch_database(embedder=embedder_name) as (db, settings):
        embedder = get_embedder(settings)
        return evaluate(db, embedder, load(db, embedder, settings))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="strata eval golden", description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print only the JSON summary")
    parser.add_argument("--embedder", default="hash", choices=("hash", "local"))
    args = parser.parse_args(argv)
    report = run_throwaway(args.embedder)
    print(json.dumps(summary(report), indent=2, default=str))
    if not args.json:
        print()
        print(table(report))
    hybrid = report["modes"]["hybrid"]
    return 0 if not hybrid["leaks"] and not hybrid["empty"] else 1


if __name__ == "__main__":
    sys.exit(main())
