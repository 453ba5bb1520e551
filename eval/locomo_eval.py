"""LoCoMo retrieval: does search put the evidence turns of a LoCoMo question in its top k?

Data: LoCoMo-10 (Maharana et al., ACL 2024; CC BY-NC 4.0), never copied into this
repository: ``--data`` names either ``data/locomo10.json`` of a clone of
https://github.com/snap-research/locomo (a list of ten samples, ``conv-26`` ...; or the
``data/locomo10.zip`` that holds it), or a folder
of one ``<id>.json`` per conversation (a sample's ``conversation``, ``observation`` and
``event_summary`` flattened, plus ``qa``). Both read the same.

Loading (one tenant per conversation, on a throwaway migrated database):

- ``--mode observations``: every pre-extracted fact (``session_N_observation``) becomes a
  memory citing its ``dia_id``;
- ``--mode turns``: every raw turn becomes a memory ``"<speaker>: <text>"`` (plus
  ``[image: <caption>]`` when the turn shares a photo), citing its own ``dia_id``;
- ``--mode ingest``: the conversation goes through the real pipeline, over HTTP
  (``POST /v1/ingest`` with ``wait``, as the conversation's owner): sessions in date order;
  per session one request per speaker at path ``conv.c<id>.<speaker>``, every turn of the
  session a message (``at`` the session date, ``id`` its dia_id, ``name`` its speaker), that
  speaker's turns as ``user`` messages and the other's as ``assistant`` (context). What the
  pipeline kept is then read back: a memory cites every dia_id its evidence names
  (``message_id``; a reinforced memory may name several). ``--mode ingest`` also runs the
  turns and observations modes on the same embedder and reports all three in one object,
  with the issue's targets checked.

Observations and turns go through ``create_memories`` (the core write path, rule judge), one
request per session, at path ``conv.c<id>``, with the session date as valid time
(``valid_from``) and the cited dia_ids in ``meta.dia_ids``. The write path may merge a
near-duplicate into an earlier memory (``reinforced``): the harness then credits that memory
with both dia_ids, and reports the write outcomes in ``load``.

What was kept (``kept``, every mode; over active memories, superseded ones are only counted
in ``load``). A turn is *observation-bearing* when a ``session_N_observation`` fact cites it:

- ``turn_coverage``: share of observation-bearing turns cited by at least one memory;
- ``precision_proxy``: share of memories citing at least one observation-bearing turn;
- ``memories_per_turn``: memories / turns sent (each turn is a user message once).

Ratios over a group of conversations are computed from the summed counts.

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

Every metric is also reported per group of conversations (``groups``): ``tune`` (26 and 30,
the conversations the rule extractor is tuned on), ``rest`` (the others: held out) and
``all``; the top-level ``overall``/``per_category``/``kept`` are ``all``'s.

Latency: ``p50_ms``/``p95_ms`` of the in-process ``search()`` call (SQL plus the audit
event), *excluding* query embedding: every question is embedded once up front and search
receives the cached vector. ``exact`` times the numpy dot product and sort only. In ingest
mode, ``meta.ingest`` times every ``POST /v1/ingest`` call (the whole pipeline, embedding
included) and sums the receipts' step timings.

Usage: ``strata eval locomo --data DIR --embedder local|hash --mode observations|turns|ingest
[--conversations 26,30] [--json]`` (or ``python eval/locomo_eval.py`` with the same options).
For tuning the rule extractor without a database, see ``eval/locomo_extract.py``.
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
from harness import NoAccessLog, api_client, percentile, scratch_database  # noqa: E402

LOAD_MODES = ("observations", "turns", "ingest")
CLI_MODES = (*LOAD_MODES, "retrieval")
CONTEXTS = ("source", "none")  # what a stored turn or observation carries as its context
MODES = ("hybrid", "vector", "keyword")
ARMS = (*MODES, "exact")
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
KS = (5, 10)
LIMIT = 10
BATCH = 500  # CreateRequest's maximum
_SESSION = re.compile(r"^session_(\d+)$")
# The rule extractor is tuned on these two conversations only; the other eight are held out.
TUNE = frozenset({"26", "30"})
GROUPS = ("all", "tune", "rest")
# Issue 15's targets for the rule extractor (hashing and local embedders).
TARGETS = {"turn_coverage": 0.75, "precision_proxy": 0.70}
# Issue 17's targets for ranking (local embedder, all ten conversations): hybrid
# recall_all@5 at least this per mode and at least each single arm's; the held-out
# conversations within HELD_OUT_SLACK of the figure over all ten.
RETRIEVAL_TARGETS = {"observations": 0.59, "turns": 0.55}
HELD_OUT_SLACK = 0.02


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
    """(number, date) of the sessions that have a date, in date order."""
    out = []
    for key in conv:
        m = _SESSION.match(key)
        if m and conv.get(f"{key}_date_time"):
            out.append((int(m.group(1)), parse_date(conv[f"{key}_date_time"])))
    return sorted(out, key=lambda s: (s[1], s[0]))


def turn_text(turn: dict[str, Any]) -> str:
    """What a turn says, with the caption of the photo it shares (the data has no image)."""
    text = (turn.get("text") or "").strip()
    if turn.get("blip_caption"):
        text = f"{text} [image: {turn['blip_caption']}]".strip()
    return text


def session_turns(conv: dict[str, Any]) -> list[tuple[datetime, list[dict[str, Any]]]]:
    """Per dated session, in date order: its date and the turns that say something."""
    return [(date, [t for t in conv.get(f"session_{n}") or [] if turn_text(t)])
            for n, date in sessions(conv)]


def items_for(conv: dict[str, Any], mode: str, context: bool = True
              ) -> list[tuple[datetime, list[tuple[str, list[str], str | None]]]]:
    """Per session: its date and the (content, dia_ids, context) to store. The context (a
    memory's ``context``: matched by search, not part of the content) is what an agent storing
    the memory has at hand: in turns mode the turn before it in the session (the message it
    answers), in observations mode the exchanges the observation was taken from (each turn it
    cites, after the turn before it). ``context=False`` stores each memory alone."""
    from strata.memories.models import MAX_CONTEXT_CHARS

    said: dict[str, str] = {}
    before_turn: dict[str, str] = {}
    for _, turns in session_turns(conv):
        for prev, t in zip([None, *turns], turns):
            said[str(t.get("dia_id"))] = f"{t['speaker']}: {turn_text(t)}"
            if prev is not None:
                before_turn[str(t.get("dia_id"))] = f"{prev['speaker']}: {turn_text(prev)}"
    out = []
    for n, date in sessions(conv):
        items: list[tuple[str, list[str], str | None]] = []
        if mode == "observations":
            for facts in (conv.get(f"session_{n}_observation") or {}).values():
                for fact in facts:
                    text, cited = fact[0], dia_ids(fact[1:])
                    if text and text.strip():
                        source = "\n".join(dict.fromkeys(
                            line for d in cited
                            for line in (before_turn.get(d), said.get(d)) if line))
                        items.append((text.strip(), cited, source or None))
        else:
            for turn in conv.get(f"session_{n}") or []:
                if turn_text(turn):
                    d = str(turn.get("dia_id"))
                    items.append((said[d], dia_ids(turn.get("dia_id")), before_turn.get(d)))
        if items:
            out.append((date, [(text, cited, ctx[:MAX_CONTEXT_CHARS] if ctx and context else None)
                               for text, cited, ctx in items]))
    return out


def conv_path(conv_id: str) -> str:
    return f"conv.c{re.sub(r'[^A-Za-z0-9_]', '_', conv_id)}"


def speaker_label(name: str) -> str:
    """A speaker's path label: "Caroline" -> "caroline"."""
    return re.sub(r"[^a-z0-9]+", "_", name.casefold()).strip("_") or "speaker"


def speakers(conv: dict[str, Any]) -> list[str]:
    """speaker_a, speaker_b, then anyone else who speaks (none in LoCoMo-10)."""
    named = [conv.get("speaker_a"), conv.get("speaker_b")]
    named += [t.get("speaker") for _, turns in session_turns(conv) for t in turns]
    return [s for s in dict.fromkeys(named) if s]


def ingest_requests(conv: dict[str, Any], conv_id: str
                    ) -> list[tuple[datetime, list[tuple[str, list[dict[str, Any]]]]]]:
    """Per session (date order): one (path, messages) per speaker who speaks in it. Every turn
    of the session is a message; the speaker's own are ``user`` messages (what the extractor
    mines), the other's ``assistant`` (context). Each turn is a user message exactly once."""
    base = conv_path(conv_id)
    out = []
    for date, turns in session_turns(conv):
        requests = []
        for who in speakers(conv):
            if not any(t.get("speaker") == who for t in turns):
                continue
            messages = [{"role": "user" if t.get("speaker") == who else "assistant",
                         "content": turn_text(t), "at": date.isoformat(),
                         "id": str(t["dia_id"]), "name": t.get("speaker") or None}
                        for t in turns]
            requests.append((f"{base}.{speaker_label(who)}", messages))
        if requests:
            out.append((date, requests))
    return out


def turn_ids(conv: dict[str, Any]) -> set[str]:
    """The dia_ids of the turns every mode stores or sends (dated sessions, non-empty)."""
    return {d for _, turns in session_turns(conv) for t in turns for d in dia_ids(t.get("dia_id"))}


def observation_turns(conv: dict[str, Any]) -> set[str]:
    """The dia_ids some pre-extracted observation cites (of the dated sessions)."""
    out: set[str] = set()
    for n, _ in sessions(conv):
        for facts in (conv.get(f"session_{n}_observation") or {}).values():
            for fact in facts:
                out.update(dia_ids(fact[1:]))
    return out


def kept_counts(cites: dict[Any, set[str]], turns: set[str], bearing: set[str]) -> dict[str, int]:
    """Counts behind ``kept``, for one conversation: ``cites`` maps each memory to the dia_ids
    it cites. Only bearing turns that were sent count (so coverage can reach 1)."""
    bearing = bearing & turns
    cited = set().union(*cites.values()) if cites else set()
    return {"turns": len(turns), "observation_turns": len(bearing),
            "covered_turns": len(bearing & cited), "memories": len(cites),
            "precise_memories": sum(bool(c & bearing) for c in cites.values())}


def kept_ratios(counts: dict[str, int]) -> dict[str, Any]:
    """``kept`` from (summed) counts."""
    def ratio(a: str, b: str) -> float | None:
        return round(counts[a] / counts[b], 4) if counts.get(b) else None

    return {"turn_coverage": ratio("covered_turns", "observation_turns"),
            "precision_proxy": ratio("precise_memories", "memories"),
            "memories_per_turn": ratio("memories", "turns"), **counts}


def group_members(conv_ids: Sequence[str]) -> dict[str, list[str]]:
    """``all``, ``tune`` and ``rest`` of these conversations; an empty group is left out."""
    members = {"all": list(conv_ids), "tune": [c for c in conv_ids if c in TUNE],
               "rest": [c for c in conv_ids if c not in TUNE]}
    return {g: ids for g, ids in members.items() if ids}


def sum_counts(parts: Sequence[dict[str, int]]) -> dict[str, int]:
    total: Counter[str] = Counter()
    for part in parts:
        total.update(part)
    return dict(total)


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


def load_conversation(db, embedder, settings, conv_id: str, conv: dict[str, Any], mode: str,
                      suffix: str, context: bool = True) -> dict[str, Any]:
    """Store one conversation in its own tenant; return its caller, the dia_ids each memory
    cites and the write outcomes."""
    from strata.auth import authenticate, create_tenant
    from strata.memories.models import CreateRequest, MemoryIn
    from strata.memories.store import create_memories
    from strata.write.conflict import RuleJudge

    _, owner = create_tenant(db, f"locomo-{conv_id}-{mode}-{suffix}")
    caller = authenticate(db, owner.key)
    path = conv_path(conv_id)
    cites: dict[uuid.UUID, set[str]] = defaultdict(set)
    outcomes: Counter[str] = Counter()
    stored_ids: set[str] = set()
    judge = RuleJudge()
    for date, items in items_for(conv, mode, context):
        for start in range(0, len(items), BATCH):
            chunk = items[start:start + BATCH]
            req = CreateRequest(memories=[
                MemoryIn(content=text, context=ctx, path=path, valid_from=date,
                         meta={"dia_ids": cited})
                for text, cited, ctx in chunk])
            results = create_memories(db, caller, req, embedder, judge=judge, settings=settings)
            for (_, cited, _), r in zip(chunk, results, strict=True):
                outcomes[r.status] += 1
                if r.id is not None:
                    cites[r.id].update(cited)
                    stored_ids.update(cited)
    analyze(db)
    active = {r["id"] for r in memory_rows(db, caller.tenant_id) if r["status"] == "active"}
    last = sessions(conv)[-1][1]
    return {"caller": caller, "cites": cites, "outcomes": dict(outcomes),
            "stored_dia_ids": stored_ids, "now": last + timedelta(days=1),
            "kept": {m: cites[m] for m in cites if m in active}}


def analyze(db) -> None:
    """Planner statistics for what was just loaded, as autovacuum would gather them within a
    minute: questions are asked of a store in its steady state, not of a table the planner
    believes empty (which it plans for as if the tenant held a handful of rows)."""
    with db.connection() as conn:
        conn.execute("ANALYZE memories")


def memory_rows(db, tenant_id) -> list[dict[str, Any]]:
    """Every memory of the tenant: id, path, status and evidence."""
    with db.connection() as conn:
        return conn.execute(
            "SELECT id, path::text AS path, status::text AS status, evidence FROM memories"
            " WHERE tenant_id = %s ORDER BY created_at, id", (tenant_id,)).fetchall()


def _error_of(resp) -> str:
    """An error answer's code (the contract's body), else its status."""
    try:
        return resp.json()["error"]["code"]
    except (ValueError, KeyError, TypeError):
        return f"HTTP {resp.status_code}"


def ingest_conversation(client, db, conv_id: str, conv: dict[str, Any],
                        suffix: str) -> dict[str, Any]:
    """Send one conversation through ``POST /v1/ingest`` (see the module docstring) in its own
    tenant, as its owner; return what ``load_conversation`` does, from the memories the
    pipeline kept, plus the calls' statistics."""
    from strata.auth import authenticate, create_tenant

    _, owner = create_tenant(db, f"locomo-{conv_id}-ingest-{suffix}")
    headers = {"Authorization": f"Bearer {owner.key}"}
    http: Counter[str] = Counter()
    receipts: Counter[str] = Counter()
    outcomes: Counter[str] = Counter()
    not_kept: Counter[str] = Counter()
    steps_ms: Counter[str] = Counter()
    extractors: Counter[str] = Counter()
    errors: list[dict[str, Any]] = []
    calls_ms: list[float] = []
    speaker_of: dict[str, str] = {}
    for _, requests in ingest_requests(conv, conv_id):
        for path, messages in requests:
            speaker_of.update((m["id"], path) for m in messages if m["role"] == "user")
            t0 = time.perf_counter()
            resp = client.post("/v1/ingest", headers=headers,
                               json={"path": path, "messages": messages, "wait": True})
            calls_ms.append((time.perf_counter() - t0) * 1000)
            http[str(resp.status_code)] += 1
            if resp.status_code != 200:
                if len(errors) < 5:
                    errors.append({"path": path, "status": resp.status_code,
                                   "error": _error_of(resp)})
                continue
            receipt = resp.json()
            receipts[receipt["status"]] += 1
            outcomes.update(receipt.get("counts") or {})
            not_kept.update(n["reason"] for n in receipt.get("not_kept") or [])
            steps_ms.update(receipt.get("timings") or {})
            extractors[receipt.get("extractor") or "none"] += 1
            if receipt.get("error") and len(errors) < 5:
                errors.append({"path": path, "status": receipt["status"],
                               "error": receipt["error"]})
    caller = authenticate(db, owner.key)
    analyze(db)
    rows = memory_rows(db, caller.tenant_id)
    cites = {r["id"]: {e["message_id"] for e in r["evidence"] if e.get("message_id")}
             for r in rows if r["status"] == "active"}
    # The pipeline must file each memory under the speaker whose turns it cites.
    elsewhere = sum(any(speaker_of.get(d) != r["path"] for d in cites[r["id"]])
                    for r in rows if r["id"] in cites)
    last = sessions(conv)[-1][1]
    return {
        "caller": caller, "cites": cites, "kept": cites, "outcomes": dict(outcomes),
        "stored_dia_ids": set().union(*cites.values()) if cites else set(),
        "now": last + timedelta(days=1), "calls_ms": calls_ms,
        "ingest": {
            "calls": len(calls_ms), "http": dict(http), "receipts": dict(receipts),
            "not_kept": dict(not_kept), "extractor": dict(extractors),
            "steps_ms": {k: round(v, 1) for k, v in steps_ms.items()},
            "memories": dict(Counter(r["status"] for r in rows)),
            "memories_citing_another_path": elsewhere, "errors": errors,
        },
    }


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
    from strata.search.hybrid import SearchRequest, search

    caller = loaded["caller"]
    ids, mat = stored_vectors(db, caller.tenant_id)
    ranked: dict[str, list[list[uuid.UUID]]] = {a: [] for a in ARMS}
    latency: dict[str, list[float]] = {a: [] for a in ARMS}
    for q in qs:
        for mode in MODES:
            req = SearchRequest(query=q["question"], limit=LIMIT, mode=mode)
            t0 = time.perf_counter()
            results = search(db, caller, req, embedder, now=loaded["now"],
                             access_log=NoAccessLog())
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


def summarise(rows: dict[str, list[tuple[str, int, dict[str, float]]]],
              lat: dict[str, list[tuple[str, float]]], conv_ids: Sequence[str]) -> dict[str, Any]:
    """``overall`` and ``per_category`` over the questions of these conversations."""
    ids = set(conv_ids)
    overall = {arm: aggregate([r for c, _, r in rows[arm] if c in ids],
                              [ms for c, ms in lat[arm] if c in ids]) for arm in ARMS}
    per_category = {
        f"{cat}-{name}": {arm: aggregate([r for c, k, r in rows[arm] if c in ids and k == cat])
                          for arm in ARMS}
        for cat, name in CATEGORIES.items()
    }
    return {"overall": overall, "per_category": per_category}


def evaluate(db, embedder, settings, convs: dict[str, dict[str, Any]], mode: str,
             context: bool = True) -> dict[str, Any]:
    import contextlib

    from strata.cli.progress import bar

    suffix = uuid.uuid4().hex[:6]
    all_q = {cid: questions(c) for cid, c in convs.items()}
    cached = CachedEmbedder(embedder, [q["question"] for qs in all_q.values() for q in qs])
    rows: dict[str, list[tuple[str, int, dict[str, float]]]] = {a: [] for a in ARMS}
    lat: dict[str, list[tuple[str, float]]] = {a: [] for a in ARMS}
    load: dict[str, Any] = {}
    calls_ms: list[float] = []
    with contextlib.ExitStack() as stack:
        client = (stack.enter_context(api_client(db, cached, settings))
                  if mode == "ingest" else None)
        progress = bar(f"locomo {mode}", total=len(convs), unit="conversation")
        for cid, conv in convs.items():
            progress.update()
            t0 = time.perf_counter()
            if mode == "ingest":
                loaded = ingest_conversation(client, db, cid, conv, suffix)
                calls_ms += loaded["calls_ms"]
            else:
                loaded = load_conversation(db, cached, settings, cid, conv, mode, suffix,
                                           context)
            qs = all_q[cid]
            t1 = time.perf_counter()
            ranked, latency = ask_all(db, cached, loaded, qs)
            load[cid] = {
                "outcomes": loaded["outcomes"], "questions": len(qs),
                "questions_with_uncited_evidence":
                    sum(not set(q["evidence"]) <= loaded["stored_dia_ids"] for q in qs),
                "kept": kept_counts(loaded["kept"], turn_ids(conv), observation_turns(conv)),
                **({"ingest": loaded["ingest"]} if "ingest" in loaded else {}),
                "load_s": round(t1 - t0, 1), "ask_s": round(time.perf_counter() - t1, 1),
            }
            for arm in ARMS:
                lat[arm] += [(cid, ms) for ms in latency[arm]]
                for q, got in zip(qs, ranked[arm], strict=True):
                    rows[arm].append((cid, q["category"],
                                      score_one(q["evidence"], got, loaded["cites"])))
        progress.close()
    groups = {}
    for group, ids in group_members(list(convs)).items():
        groups[group] = {
            **summarise(rows, lat, ids),
            "kept": kept_ratios(sum_counts([load[c]["kept"] for c in ids])),
            "questions_with_uncited_evidence":
                sum(load[c]["questions_with_uncited_evidence"] for c in ids),
        }
    meta: dict[str, Any] = {
        "mode": mode, "embedder": embedder.model, "conversations": list(convs),
        "context": ("none" if not context or mode == "ingest"
                    else "turn before" if mode == "turns" else "cited turns"),
        "groups": {g: ids for g, ids in group_members(list(convs)).items() if g != "all"},
        "questions": len(rows["hybrid"]), "limit": LIMIT,
        # Evidence turns no stored memory cites (e.g. no observation points at them):
        # these questions cannot reach recall_all in this mode.
        "questions_with_uncited_evidence": groups["all"]["questions_with_uncited_evidence"],
        "latency": "in-process search() incl. audit, excluding query embedding; "
                   "exact = numpy dot + sort",
        "load": load,
    }
    if mode == "ingest":
        meta["ingest"] = ingest_summary(load, calls_ms)
    return {"overall": groups["all"]["overall"], "per_category": groups["all"]["per_category"],
            "kept": groups["all"]["kept"], "groups": groups, "meta": meta}


def ingest_summary(load: dict[str, Any], calls_ms: list[float]) -> dict[str, Any]:
    """The ingest calls of every conversation: what answered, the time, what was kept."""
    stats = [load[c]["ingest"] for c in load]

    def total(key: str) -> dict[str, Any]:
        return dict(sum((Counter(s[key]) for s in stats), Counter()))

    return {
        "extractor": sorted({e for s in stats for e in s["extractor"]}),
        "calls": len(calls_ms), "http": total("http"), "receipts": total("receipts"),
        "outcomes": dict(sum((Counter(load[c]["outcomes"]) for c in load), Counter())),
        "not_kept": total("not_kept"), "memories": total("memories"),
        "memories_citing_another_path": sum(s["memories_citing_another_path"] for s in stats),
        "wall_s": round(sum(load[c]["load_s"] for c in load), 1),
        "call_p50_ms": round(percentile(calls_ms, 0.50), 1) if calls_ms else None,
        "call_p95_ms": round(percentile(calls_ms, 0.95), 1) if calls_ms else None,
        "steps_ms": {k: round(v, 1) for k, v in total("steps_ms").items()},
        "errors": [e for s in stats for e in s["errors"]][:10],
    }


def check_targets(reports: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Issue 15's targets, per group: the ingest mode's coverage and precision proxy, and its
    hybrid recall_all@5 against the turns mode's."""
    out: dict[str, Any] = {}
    for group, g in reports["ingest"]["groups"].items():
        checks: dict[str, Any] = {}
        for metric, floor in TARGETS.items():
            value = g["kept"][metric]
            checks[metric] = {"value": value, "min": floor,
                              "met": value is not None and value >= floor}
        ours = g["overall"]["hybrid"]["recall_all@5"]
        theirs = reports["turns"]["groups"][group]["overall"]["hybrid"]["recall_all@5"]
        checks["recall_all@5"] = {"arm": "hybrid", "ingest": ours, "turns": theirs,
                                  "met": ours is not None and theirs is not None and ours >= theirs}
        out[group] = checks
    return out


def evaluate_all(db, embedder, settings, convs: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Ingest mode beside the turns and observations modes, on the same embedder and database
    (each mode in its own tenants), as one report."""
    all_q = [q["question"] for c in convs.values() for q in questions(c)]
    cached = CachedEmbedder(embedder, all_q)  # the questions are embedded once for all modes
    reports: dict[str, dict[str, Any]] = {}
    seconds: dict[str, float] = {}
    for mode in ("ingest", "turns", "observations"):
        t0 = time.perf_counter()
        # Each turn and observation alone: the pipeline stores no context with what it
        # extracts, and issue 15 measures it against the raw turns.
        reports[mode] = evaluate(db, cached, settings, convs, mode, context=False)
        seconds[mode] = round(time.perf_counter() - t0, 1)
    ingest = reports["ingest"]["meta"]["ingest"]
    return {
        "targets": check_targets(reports),
        "modes": reports,
        "meta": {
            "embedder": embedder.model, "extractor": ingest["extractor"],
            "conversations": list(convs), "groups": reports["ingest"]["meta"]["groups"],
            "timings": {"mode_s": seconds, "ingest_wall_s": ingest["wall_s"],
                        "ingest_calls": ingest["calls"],
                        "ingest_call_p50_ms": ingest["call_p50_ms"],
                        "ingest_call_p95_ms": ingest["call_p95_ms"],
                        "ingest_steps_ms": ingest["steps_ms"]},
        },
    }


def check_retrieval(reports: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Issue 17's targets over the observations and turns reports of one run."""
    out: dict[str, Any] = {}
    for mode, floor in RETRIEVAL_TARGETS.items():
        groups = reports[mode]["groups"]
        overall = groups["all"]["overall"]
        hybrid = overall["hybrid"]["recall_all@5"]
        arms = {arm: overall[arm]["recall_all@5"] for arm in ("vector", "keyword")}
        checks: dict[str, Any] = {
            "hybrid_recall_all@5": hybrid, "mrr": overall["hybrid"]["mrr"],
            "target": {"min": floor, "met": hybrid >= floor},
            "beats_each_arm": {"arms": arms, "met": all(hybrid >= v for v in arms.values())},
        }
        if "rest" in groups:
            rest = groups["rest"]["overall"]["hybrid"]["recall_all@5"]
            checks["held_out"] = {"rest": rest, "tune": groups.get("tune", {}).get(
                "overall", {}).get("hybrid", {}).get("recall_all@5"),
                "met": abs(rest - hybrid) <= HELD_OUT_SLACK}
        out[mode] = checks
    return out


def evaluate_retrieval(db, embedder, settings, convs: dict[str, dict[str, Any]],
                       context: bool = True) -> dict[str, Any]:
    """Observations and turns mode in one run (same embedder and database), with issue 17's
    targets checked."""
    all_q = [q["question"] for c in convs.values() for q in questions(c)]
    cached = CachedEmbedder(embedder, all_q)
    reports = {mode: evaluate(db, cached, settings, convs, mode, context)
               for mode in ("observations", "turns")}
    return {"targets": check_retrieval(reports), "modes": reports,
            "meta": {"embedder": embedder.model, "conversations": list(convs),
                     "context": "source" if context else "none",
                     "groups": reports["turns"]["meta"]["groups"]}}


def _mode_rows(modes: dict[str, Any]) -> list[str]:
    """Every mode's overall rows per group, one line per arm."""
    return [_row(f"{mode} ({group})", arm, m)
            for mode, r in modes.items() for group, g in r["groups"].items()
            for arm, m in g["overall"].items()]


def table_retrieval(report: dict[str, Any]) -> str:
    lines = [_HEAD, *_mode_rows(report["modes"])]
    lines += ["", "Targets (hybrid recall_all@5):"]
    for mode, c in report["targets"].items():
        parts = [f"{c['hybrid_recall_all@5']} (>= {c['target']['min']}:"
                 f" {'met' if c['target']['met'] else 'NOT met'})",
                 f">= each arm {c['beats_each_arm']['arms']}:"
                 f" {'met' if c['beats_each_arm']['met'] else 'NOT met'}"]
        if "held_out" in c:
            parts.append(f"held-out {c['held_out']['rest']} within {HELD_OUT_SLACK}:"
                         f" {'met' if c['held_out']['met'] else 'NOT met'}")
        lines.append(f"  {mode}: " + "; ".join(parts))
    return "\n".join(lines)


def _fmt(v: Any, w: int) -> str:
    return f"{v:>{w}.3f}" if isinstance(v, float) else f"{'-':>{w}}"


def _row(label: str, arm: str, m: dict[str, Any]) -> str:
    lat = (f"{m['p50_ms']:>8.1f}{m['p95_ms']:>8.1f}" if m.get("p50_ms") is not None
           else f"{'':>16}")
    return (f"{label:<22}{arm:<8}{_fmt(m['recall_all@5'], 7)}{_fmt(m['recall_any@5'], 7)}"
            f"{_fmt(m['recall_all@10'], 8)}{_fmt(m['recall_any@10'], 8)}{_fmt(m['mrr'], 7)}{lat}"
            f"{m['n']:>6}")


_HEAD = (f"{'':<22}{'arm':<8}{'all@5':>7}{'any@5':>7}{'all@10':>8}{'any@10':>8}{'MRR':>7}"
         f"{'p50ms':>8}{'p95ms':>8}{'n':>6}")


def _kept_line(label: str, k: dict[str, Any]) -> str:
    return (f"{label:<22}coverage {_fmt(k['turn_coverage'], 6)}  precision "
            f"{_fmt(k['precision_proxy'], 6)}  memories/turn {_fmt(k['memories_per_turn'], 6)}"
            f"  ({k['memories']} memories, {k['turns']} turns,"
            f" {k['observation_turns']} with observations)")


def table(report: dict[str, Any]) -> str:
    lines = [_HEAD]
    for arm, m in report["overall"].items():
        lines.append(_row("overall", arm, m))
    for cat, arms in report["per_category"].items():
        for arm, m in arms.items():
            lines.append(_row(cat, arm, m))
    for group, g in report.get("groups", {}).items():
        if group != "all":
            for arm, m in g["overall"].items():
                lines.append(_row(f"group {group}", arm, m))
    meta = report["meta"]
    lines.append(f"{meta['questions']} questions (categories 1-4), "
                 f"{meta['questions_with_uncited_evidence']} with evidence no memory cites; "
                 f"latency: {meta['latency']}")
    for group, g in report.get("groups", {}).items():
        lines.append(_kept_line(f"kept ({group})", g["kept"]))
    return "\n".join(lines)


def table_all(report: dict[str, Any]) -> str:
    modes = report["modes"]
    lines = ["What was kept:"]
    for mode, r in modes.items():
        for group, g in r["groups"].items():
            lines.append(_kept_line(f"{mode} ({group})", g["kept"]))
    lines += ["", "Retrieval (overall per group; per category in the JSON):", _HEAD,
              *_mode_rows(modes)]
    lines += ["", "Targets (ingest mode):"]
    for group, checks in report["targets"].items():
        parts = [f"{k} {c['value']} (>= {c['min']}: {'met' if c['met'] else 'NOT met'})"
                 for k, c in checks.items() if "min" in c]
        r = checks["recall_all@5"]
        parts.append(f"hybrid recall_all@5 {r['ingest']} vs turns {r['turns']}"
                     f" ({'met' if r['met'] else 'NOT met'})")
        lines.append(f"  {group}: " + "; ".join(parts))
    meta, ingest = report["meta"], modes["ingest"]["meta"]["ingest"]
    t = meta["timings"]
    lines += ["", f"extractor {', '.join(meta['extractor']) or '-'}; embedder {meta['embedder']};"
              f" ingest {t['ingest_calls']} calls in {t['ingest_wall_s']} s"
              f" (p50 {t['ingest_call_p50_ms']} ms, p95 {t['ingest_call_p95_ms']} ms;"
              f" steps ms {t['ingest_steps_ms']}); per mode s {t['mode_s']}",
              f"HTTP {ingest['http']}; receipts {ingest['receipts']}; outcomes"
              f" {ingest['outcomes']}; memories {ingest['memories']}"]
    if ingest["errors"]:
        lines.append(f"errors (first {len(ingest['errors'])}): {ingest['errors']}")
    return "\n".join(lines)


SOURCE = ("LoCoMo-10 comes from https://github.com/snap-research/locomo: pass its "
          "data/locomo10.json, or a folder of one <id>.json per conversation")


class NoConversations(SystemExit):
    """``--data`` holds no (or not the asked) LoCoMo conversations."""


def data_argument(parser) -> None:
    """``--data``, as every LoCoMo script takes it."""
    parser.add_argument("--data", required=True, type=Path,
                        help="LoCoMo-10: data/locomo10.json of a clone of "
                        "https://github.com/snap-research/locomo, or a folder of <id>.json")


def read_conversations(data: Path, only: Sequence[str] | None) -> dict[str, dict[str, Any]]:
    if data.is_file():
        convs = {cid: conv for cid, conv in _samples(data).items() if not only or cid in only}
    else:
        files = sorted(data.glob("*.json"), key=lambda p: (len(p.stem), p.stem))
        convs = {p.stem: json.loads(p.read_text(encoding="utf-8")) for p in files
                 if not only or p.stem in only}
    missing = set(only or ()) - set(convs)
    if missing:
        raise NoConversations(f"strata eval locomo: no {', '.join(sorted(missing))} in {data}")
    if not convs:
        raise NoConversations(f"strata eval locomo: no conversations (*.json) in {data}. {SOURCE}")
    return convs


def _json_text(path: Path) -> str:
    """The file's text; for a zip (upstream also ships data/locomo10.zip), its one .json."""
    import zipfile

    if not zipfile.is_zipfile(path):
        return path.read_text(encoding="utf-8")
    with zipfile.ZipFile(path) as archive:
        names = [n for n in archive.namelist() if n.endswith(".json") and "__MACOSX" not in n]
        if len(names) != 1:
            raise NoConversations(f"strata eval locomo: {path} holds {len(names)} .json files, "
                                  f"not one. {SOURCE}")
        return archive.read(names[0]).decode("utf-8")


def _samples(path: Path) -> dict[str, dict[str, Any]]:
    """The upstream file (a list of samples) in the per-conversation shape, by id
    (``conv-26`` -> ``26``), in the file's order."""
    try:
        samples = json.loads(_json_text(path))
    except (ValueError, UnicodeDecodeError):
        raise NoConversations(f"strata eval locomo: {path} is not JSON. {SOURCE}") from None
    if not isinstance(samples, list) or not all(
            isinstance(s, dict) and "sample_id" in s and "conversation" in s for s in samples):
        raise NoConversations(f"strata eval locomo: {path} is not LoCoMo's list of samples "
                              f"(sample_id, conversation, qa). {SOURCE}")
    return {str(s["sample_id"]).removeprefix("conv-"): {
        **s["conversation"], **(s.get("event_summary") or {}), **(s.get("observation") or {}),
        "qa": s.get("qa", [])} for s in samples}


def run(data: Path, embedder_name: str, mode: str, only: Sequence[str] | None = None,
        context: bool = True) -> dict[str, Any]:
    from strata.foundation.config import Settings
    from strata.providers.embedders import get_embedder

    convs = read_conversations(data, only)
    embedder = get_embedder(Settings(embedder=embedder_name))
    with scratch_database(embedding_dim=embedder.dim, embedder=embedder_name,
                          llm_base_url=None, llm_model=None) as (db, settings):
        if mode == "ingest":
            return evaluate_all(db, embedder, settings, convs)
        if mode == "retrieval":
            return evaluate_retrieval(db, embedder, settings, convs, context)
        return evaluate(db, embedder, settings, convs, mode, context)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="strata eval locomo", description=__doc__.splitlines()[0])
    parser.add_argument("--data", required=True, type=Path,
                        help=f"data/locomo10.json, or a folder of <id>.json. {SOURCE}")
    parser.add_argument("--embedder", choices=("local", "hash"), default="hash")
    parser.add_argument("--mode", choices=CLI_MODES, default="observations",
                        help="ingest also runs turns and observations, in one report;"
                             " retrieval runs observations and turns, in one report")
    parser.add_argument("--conversations", help="comma-separated ids, e.g. 26,30 (default all)")
    parser.add_argument("--context", choices=CONTEXTS, default="source",
                        help="source: store each turn with the turn before it, each observation "
                             "with the turns it cites, as its context; none: each alone")
    parser.add_argument("--json", action="store_true", help="print only the JSON object")
    args = parser.parse_args(argv)
    only = [c.strip() for c in args.conversations.split(",") if c.strip()] \
        if args.conversations else None
    report = run(args.data, args.embedder, args.mode, only, args.context == "source")
    print(json.dumps(report, indent=2, default=str))
    if not args.json:
        print()
        print(table_all(report) if args.mode == "ingest" else
              table_retrieval(report) if args.mode == "retrieval" else table(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
