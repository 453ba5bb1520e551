"""Truth maintenance on realistic conversations: after a person's sessions are ingested, does
strata hold what is now true, and nothing it should not?

Data: a JSON array of scenarios in the shape of ``FORMAT.md`` beside the data (the dev set
``dev.json``, or the held-out set of the same form), named on the command line and never
copied into this repository; or a folder, each ``*.json`` in it run alone (one tenant each)
and reported by file name. Each scenario is one person's sessions with an assistant, in time
order, with optional ``forget`` steps and the ``expect``\\ ations scored afterwards.

Through the API (the default): one throwaway migrated database (eval/harness.py), the app
``strata dev`` serves (every router) under uvicorn on a free loopback port, one new tenant
whose owner key makes every request, over httpx. Each scenario in its own fresh path
``users.s<n>``, ``n`` its position in the file: every session is one ``POST /v1/ingest``
with ``wait`` (a receipt still queued or running is read again until final) holding all of
its messages, roles as given (the assistant's too: the extractor decides what to keep) with
``name`` when present, and each message's ``at`` the session's ``at`` plus 20 s per message
before it (so order is kept). A ``forget`` step after session N lists the path's memories
(``GET /v1/memories``, every page) and forgets (``POST /v1/memories/{id}/forget``, erasure)
every one whose content holds all of its words -- of any status by default (``--forget
active``: active ones only, FORMAT.md's letter; forgetting is idempotent, and one forget may
erase others with it). ``--in-process`` calls the same core functions directly
(``strata.ingest.service.ingest``, ``strata.memories.forget``, ``strata.search.hybrid.search``,
the memories table) and must give the same scores: tests/test_truth_eval.py holds the two
equal, expectation by expectation.

Scoring (FORMAT.md): words match case-insensitively as whole words (a word of several words
matches them in sequence), ``a|b`` is either alternative, and an ISO date in a memory
(``2026-03-03``) also reads as its month name and abbreviation, its day with and without its
ordinal suffix, and its year. Over the scenario's path:

- ``current``: the FIRST result of searching ``query`` (``POST /v1/search``, hybrid, as the
  tenant's owner) holds every ``answer`` word. A search request cannot set the moment its
  date expressions ("next week") are read against: the server's clock reads them, and the
  in-process mode passes the clock too, so both ask at the same "now";
- ``stale``: no active memory holds all ``words``, unless it also holds an answer word (any
  one) of one of the scenario's ``current`` expectations;
- ``kept``: some active memory holds all ``words``;
- ``absent``: no active memory holds all ``words``.

Reported (one JSON object on stdout; for a folder, one per file name): the expectation score
(held / total), the share of scenarios held whole, both per category, the score per kind, how
many ``current`` questions were answered first and how many had their answer stored at all,
the receipts' statuses, scenarios that raised, the mode, the embedder, the elapsed seconds,
and ``latency``: n, p50, p95 and max milliseconds of the ingest and of the search requests
as the caller timed them (over HTTP, the round trip). ``--show-failures`` writes every failed
expectation with what was found (the first results, the offending memories, or the path's
active memories) to stderr, and into ``--out`` when given: that text comes from the data and
stays out of the repository.

Usage: ``python eval/truth_eval.py DATA [--in-process] [--embedder hash|local] [--only
CATEGORY] [--limit N] [--out report.json] [--show-failures]``, or ``strata eval truth --data
DATA ...`` (through the API).
"""

from __future__ import annotations

import argparse
import calendar
import contextlib
import json
import logging
import re
import sys
import time
import traceback
import uuid
from collections import Counter, defaultdict
from collections.abc import Iterator
from datetime import datetime, timedelta
from functools import lru_cache
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness import NoAccessLog, percentile, scratch_database, serving  # noqa: E402

KINDS = ("current", "stale", "kept", "absent")
MESSAGE_STEP = timedelta(seconds=20)  # FORMAT.md: a message's at = its session's + 20 s each
SEARCH_LIMIT = 5  # the first result is scored; the rest is shown with a failure
ACTIVE = ("active",)


# --------------------------------------------------------------------------------------
# Words
# --------------------------------------------------------------------------------------

_ISO_DATE = re.compile(r"(?<!\d)(\d{4})-(\d{2})-(\d{2})(?!\d)")
_QUOTES = str.maketrans({"\u2019": "'", "\u2018": "'", "\u201c": '"', "\u201d": '"'})


def ordinal(day: int) -> str:
    suffix = "th" if 10 <= day % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(day % 10, "th")
    return f"{day}{suffix}"


def date_words(text: str) -> list[str]:
    """What the ISO dates in ``text`` also read as: month name and abbreviation(s), the day
    with and without its suffix, the year ("2026-09-03" -> September Sep Sept 3 3rd 2026)."""
    out: list[str] = []
    for y, m, d in _ISO_DATE.findall(text):
        month, day = int(m), int(d)
        if not (1 <= month <= 12 and 1 <= day <= 31):
            continue
        out += [calendar.month_name[month], calendar.month_abbr[month]]
        if month == 9:
            out.append("Sept")
        out += [str(day), ordinal(day), y]
    return out


def readable(text: str) -> str:
    """The text words are looked for in: typographic quotes made plain, ISO dates' other
    readings appended."""
    text = text.translate(_QUOTES)
    extra = date_words(text)
    return f"{text} {' '.join(extra)}" if extra else text


@lru_cache(maxsize=4096)
def _pattern(word: str) -> re.Pattern[str]:
    alternatives = []
    for alt in word.translate(_QUOTES).split("|"):
        parts = alt.split()
        if parts:
            alternatives.append(r"\s+".join(re.escape(p) for p in parts))
    if not alternatives:
        raise ValueError(f"an empty word: {word!r}")
    return re.compile(r"(?<!\w)(?:" + "|".join(alternatives) + r")(?!\w)", re.IGNORECASE)


def holds(text: str, word: str) -> bool:
    """``text`` holds ``word`` (case-insensitive, whole words; ``a|b`` either one)."""
    return _pattern(word).search(readable(text)) is not None


def holds_all(text: str, words: list[str]) -> bool:
    text = readable(text)
    return all(_pattern(w).search(text) is not None for w in words)


# --------------------------------------------------------------------------------------
# Data
# --------------------------------------------------------------------------------------


def read_scenarios(path: Path) -> list[dict[str, Any]]:
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    if not isinstance(data, list):
        raise ValueError(f"{path}: a JSON array of scenarios is expected")
    ids = Counter(s["id"] for s in data)
    dupes = [i for i, n in ids.items() if n > 1]
    if dupes:
        raise ValueError(f"{path}: duplicate scenario ids {dupes}")
    for s in data:
        for e in s["expect"]:
            if e["kind"] not in KINDS:
                raise ValueError(f"{s['id']}: unknown expectation kind {e['kind']!r}")
    return data


def parse_at(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def session_messages(session: dict[str, Any]) -> list[dict[str, Any]]:
    """A session's messages as ingest takes them: ``at`` its session's plus 20 s each."""
    start = parse_at(session["at"])
    out = []
    for i, m in enumerate(session["messages"]):
        msg = {"role": m["role"], "content": m["content"],
               "at": (start + i * MESSAGE_STEP).isoformat()}
        if m.get("name"):
            msg["name"] = m["name"]
        out.append(msg)
    return out


# --------------------------------------------------------------------------------------
# The store under test: the core in-process, or the API over HTTP
# --------------------------------------------------------------------------------------


class _Timed:
    """Each ingest and search request's seconds, per scenario (:meth:`take`)."""

    def __init__(self) -> None:
        self.seconds: dict[str, list[float]] = defaultdict(list)

    def timed(self, what: str, fn):
        t0 = time.perf_counter()
        try:
            return fn()
        finally:
            self.seconds[what].append(time.perf_counter() - t0)

    def take(self) -> dict[str, list[float]]:
        """The seconds recorded since the last call, by request kind."""
        out, self.seconds = dict(self.seconds), defaultdict(list)
        return out


class InProcess(_Timed):
    """The core functions, called in this process as the tenant's owner."""

    mode = "in-process"

    def __init__(self, db, embedder, settings, owner_key: str) -> None:
        from strata.auth import authenticate
        from strata.ingest.pipeline import IngestRuntime

        super().__init__()
        self.db, self.embedder = db, embedder
        self.caller = authenticate(db, owner_key)
        self.runtime = IngestRuntime(db, embedder, settings)

    def ingest(self, path: str, messages: list[dict[str, Any]]) -> str:
        """The receipt's status of one conversation, processed within the call."""
        from strata.ingest import service
        from strata.ingest.models import IngestRequest

        req = IngestRequest(path=path, wait=True, messages=messages)
        receipt, _ = self.timed("ingest", lambda: service.ingest(self.runtime, None,
                                                                 self.caller, req))
        return receipt.status

    def memories(self, path: str, statuses: tuple[str, ...] | None = ACTIVE
                 ) -> list[dict[str, Any]]:
        """The path's memories, oldest first (``statuses`` None: any status)."""
        with self.db.connection() as conn:
            rows = conn.execute(
                "SELECT id, content, status::text AS status FROM memories"
                " WHERE tenant_id = %s AND path <@ %s::ltree ORDER BY created_at, id",
                (self.caller.tenant_id, path)).fetchall()
        return [r for r in rows if statuses is None or r["status"] in statuses]

    def forget(self, memory_id) -> None:
        from strata.memories import forget

        forget(self.db, self.caller, memory_id)

    def search(self, query: str, path: str) -> list[str]:
        """The contents search returns for ``query`` over ``path``, best first."""
        from strata.search.hybrid import SearchRequest, search

        req = SearchRequest(query=query, paths=[path], limit=SEARCH_LIMIT)
        # now=None: the clock, as the API's search has it (a request cannot set it).
        found = self.timed("search", lambda: search(self.db, self.caller, req, self.embedder,
                                                    now=None, access_log=NoAccessLog()))
        return [r.content for r in found]


class OverHttp(_Timed):
    """The public API of a running server, as an agent calls it with the owner's key."""

    mode = "http"
    FINAL_WAIT_S = 300  # a receipt not final by then is an error, not a hang

    def __init__(self, http) -> None:
        super().__init__()
        self.http = http

    def _ok(self, response):
        if response.status_code >= 400:
            raise RuntimeError(f"{response.request.method} {response.request.url.path}: "
                               f"{response.status_code} {response.text[:500]}")
        return response.json()

    def ingest(self, path: str, messages: list[dict[str, Any]]) -> str:
        """The receipt's status of one conversation sent with ``wait``; a receipt still
        queued or running (202) is read again until it is final."""
        def send():
            receipt = self._ok(self.http.post("/v1/ingest", json={
                "path": path, "wait": True, "messages": messages}))
            deadline = time.monotonic() + self.FINAL_WAIT_S
            while receipt["status"] in ("queued", "running"):
                if time.monotonic() > deadline:
                    raise TimeoutError(f"receipt {receipt['id']} still {receipt['status']}")
                time.sleep(0.05)
                receipt = self._ok(self.http.get(f"/v1/ingest/{receipt['id']}"))
            return receipt

        return self.timed("ingest", send)["status"]

    def memories(self, path: str, statuses: tuple[str, ...] | None = ACTIVE
                 ) -> list[dict[str, Any]]:
        """The path's memories, oldest first, every page of ``GET /v1/memories``."""
        params: dict[str, Any] = {"path": path, "limit": 200,
                                  "status": ",".join(statuses) if statuses else "all"}
        out: list[dict[str, Any]] = []
        while True:
            page = self._ok(self.http.get("/v1/memories", params=params))
            out += [{"id": m["id"], "content": m["content"], "status": m["status"]}
                    for m in page["items"]]
            if not page.get("next_cursor"):
                return out
            params["cursor"] = page["next_cursor"]

    def forget(self, memory_id) -> None:
        self._ok(self.http.post(f"/v1/memories/{memory_id}/forget"))

    def search(self, query: str, path: str) -> list[str]:
        found = self.timed("search", lambda: self._ok(self.http.post("/v1/search", json={
            "query": query, "paths": [path], "limit": SEARCH_LIMIT})))
        return [r["content"] for r in found["results"]]


@contextlib.contextmanager
def store_over(db, embedder, settings, mode: str) -> Iterator[InProcess | OverHttp]:
    """A new tenant's store, in ``mode``: ``in-process`` (the core functions) or ``http``
    (the app ``strata dev`` serves, every router, under uvicorn on a free loopback port over
    ``db``, called with httpx)."""
    from strata.auth import create_tenant

    _, owner = create_tenant(db, f"truth-{uuid.uuid4().hex[:8]}")
    if mode == "in-process":
        yield InProcess(db, embedder, settings, owner.key)
        return
    if mode != "http":
        raise ValueError(f"unknown mode {mode!r}")
    import httpx

    from strata.api.app import create_app

    app = create_app(db=db, embedder=embedder, settings=settings)
    with serving(app) as base, httpx.Client(
            base_url=base, headers={"Authorization": f"Bearer {owner.key}"},
            timeout=OverHttp.FINAL_WAIT_S) as http:
        yield OverHttp(http)


# --------------------------------------------------------------------------------------
# Running a scenario
# --------------------------------------------------------------------------------------


def load_scenario(store, scenario: dict[str, Any], path: str,
                  forget_statuses: tuple[str, ...] | None = None) -> dict[str, Any]:
    """Ingest the scenario's sessions at ``path``, forgetting after the sessions its
    ``forget`` steps name. Returns the receipts' statuses and what was forgotten."""
    steps = defaultdict(list)
    for f in scenario.get("forget", []):
        steps[f["after_session"]].append(f["words"])
    statuses, forgotten = [], 0
    for n, session in enumerate(scenario["sessions"]):
        statuses.append(store.ingest(path, session_messages(session)))
        for words in steps.get(n, []):
            for m in store.memories(path, forget_statuses):
                if holds_all(m["content"], words):
                    store.forget(m["id"])
                    forgotten += 1
    return {"receipts": statuses, "forgotten": forgotten}


def judge(e: dict[str, Any], active: list[str], results: list[str], answers: list[str]
          ) -> tuple[bool, list[str]]:
    """Whether expectation ``e`` holds, and what was found: ``active`` the contents of the
    path's active memories, ``results`` the search's contents for a ``current`` query (best
    first), ``answers`` every answer word of the scenario's ``current`` expectations."""
    kind = e["kind"]
    if kind == "current":
        return bool(results) and holds_all(results[0], e["answer"]), results
    holding = [c for c in active if holds_all(c, e["words"])]
    if kind == "stale":
        found = [c for c in holding if not any(holds(c, a) for a in answers)]
        return not found, found
    if kind == "kept":
        return (True, holding) if holding else (False, active)  # what the path holds instead
    if kind == "absent":
        return not holding, holding
    raise ValueError(f"unknown expectation kind {kind!r}")


def score_scenario(store, scenario: dict[str, Any], path: str) -> list[dict[str, Any]]:
    """Every expectation of the scenario, scored over ``path``: {kind, held, found, ...}."""
    active = [m["content"] for m in store.memories(path)]
    answers = [a for e in scenario["expect"] if e["kind"] == "current" for a in e["answer"]]
    out = []
    for e in scenario["expect"]:
        results = store.search(e["query"], path) if e["kind"] == "current" else []
        held, found = judge(e, active, results, answers)
        scored = {"kind": e["kind"], "held": held, "found": found,
                  **{k: e[k] for k in ("query", "answer", "words") if k in e}}
        if e["kind"] == "current":
            # Stored at all (some active memory holds the answer), first or not: tells an
            # extraction miss from a ranking miss.
            scored["stored"] = any(holds_all(c, e["answer"]) for c in active)
        out.append(scored)
    return out


def run_scenarios(db, embedder, settings, scenarios: list[dict[str, Any]], *,
                  paths: list[str] | None = None, forget_statuses: tuple[str, ...] | None = None,
                  mode: str = "in-process") -> list[dict[str, Any]]:
    """Load and score every scenario (one new tenant, through ``mode``: ``in-process`` or
    ``http``; scenario i at ``paths[i]``, default ``users.s<i>``). One result per scenario:
    id, category, receipts, expectations, the requests' seconds, error."""
    paths = paths or [f"users.s{i}" for i in range(len(scenarios))]
    results = []
    with store_over(db, embedder, settings, mode) as store:
        for scenario, path in zip(scenarios, paths):
            result: dict[str, Any] = {"id": scenario["id"], "category": scenario["category"],
                                      "path": path}
            try:
                result.update(load_scenario(store, scenario, path, forget_statuses))
                result["expect"] = score_scenario(store, scenario, path)
            except Exception as exc:  # a scenario that breaks the stack scores nothing
                result["error"] = f"{type(exc).__name__}: {exc}"
                result["traceback"] = traceback.format_exc()
                result["expect"] = [{"kind": e["kind"], "held": False, "found": [],
                                     "error": True} for e in scenario["expect"]]
            result["seconds"] = store.take()
            results.append(result)
    return results


# --------------------------------------------------------------------------------------
# Report
# --------------------------------------------------------------------------------------


def _ratio(held: int, total: int) -> float | None:
    return round(held / total, 4) if total else None


def summarise(results: list[dict[str, Any]]) -> dict[str, Any]:
    """Scores over the results of :func:`run_scenarios` (no content in it)."""
    def tally(rs):
        exps = [e for r in rs for e in r["expect"]]
        held = sum(e["held"] for e in exps)
        whole = sum(all(e["held"] for e in r["expect"]) for r in rs)
        return {"score": _ratio(held, len(exps)), "held": held, "total": len(exps),
                "scenarios_whole": _ratio(whole, len(rs)), "whole": whole, "scenarios": len(rs)}

    overall = tally(results)
    by_category = {}
    for cat in sorted({r["category"] for r in results}):
        by_category[cat] = tally([r for r in results if r["category"] == cat])
    by_kind = {}
    for kind in KINDS:
        exps = [e for r in results for e in r["expect"] if e["kind"] == kind]
        held = sum(e["held"] for e in exps)
        by_kind[kind] = {"score": _ratio(held, len(exps)), "held": held, "total": len(exps)}
    return {
        "score": overall["score"],
        "expectations": {"held": overall["held"], "total": overall["total"]},
        "scenarios_whole": overall["scenarios_whole"],
        "scenarios_held": overall["whole"],
        "scenarios": overall["scenarios"],
        "current_answered_first": by_kind["current"]["held"],
        "current_total": by_kind["current"]["total"],
        "current_stored": sum(e.get("stored", False) for r in results for e in r["expect"]),
        "by_kind": by_kind,
        "by_category": by_category,
        "receipts": dict(Counter(s for r in results for s in r.get("receipts", []))),
        "forgotten": sum(r.get("forgotten", 0) for r in results),
        "errors": [r["id"] for r in results if "error" in r],
        "latency": latency(results),
    }


def latency(results: list[dict[str, Any]]) -> dict[str, Any]:
    """Each request kind's milliseconds over every scenario: n, p50, p95, max (as the caller
    measured them: over HTTP, the round trip)."""
    out = {}
    for what in ("ingest", "search"):
        ms = [s * 1000 for r in results for s in r.get("seconds", {}).get(what, [])]
        out[what] = ({"n": len(ms), "p50_ms": round(percentile(ms, 0.5), 1),
                      "p95_ms": round(percentile(ms, 0.95), 1), "max_ms": round(max(ms), 1)}
                     if ms else {"n": 0})
    return out


def failures(results: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every failed expectation with what was found (data text: never into the repo)."""
    out = []
    for r in results:
        if "error" in r:
            out.append({"scenario": r["id"], "category": r["category"], "kind": "error",
                        "error": r["error"], "traceback": r["traceback"]})
        for e in r["expect"]:
            if not e["held"] and not e.get("error"):
                out.append({"scenario": r["id"], "category": r["category"], **e})
    return out


def data_files(data: Path) -> list[Path]:
    """The scenario files ``data`` names: itself, or a folder's ``*.json`` by name."""
    data = Path(data)
    if not data.is_dir():
        return [data]
    files = sorted(data.glob("*.json"))
    if not files:
        raise ValueError(f"{data}: no *.json scenario file in it")
    return files


def run(data: Path, embedder_name: str = "hash", only: str | None = None,
        limit: int | None = None, forget_statuses: tuple[str, ...] | None = None,
        mode: str = "http") -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The whole evaluation of one scenario file on a throwaway database: (summary,
    per-scenario results)."""
    [(summary, results)] = run_files([data], embedder_name, only, limit, forget_statuses,
                                     mode).values()
    return summary, results


def run_files(files: list[Path], embedder_name: str = "hash", only: str | None = None,
              limit: int | None = None, forget_statuses: tuple[str, ...] | None = None,
              mode: str = "http") -> dict[str, tuple[dict[str, Any], list[dict[str, Any]]]]:
    """Each scenario file, a tenant of its own on one throwaway database: (summary,
    per-scenario results) by file name."""
    from strata.providers import get_embedder

    # Each request and migration is logged at INFO: hundreds of lines around the one JSON
    # answer (and the failures, on stderr with --show-failures).
    for name in ("httpx", "strata.db.migrate", "mcp.server.streamable_http_manager"):
        logging.getLogger(name).setLevel(logging.WARNING)
    out = {}
    with scratch_database(embedder=embedder_name) as (db, settings):
        embedder = get_embedder(settings)
        # A model loads on first use: not in the first request's latency.
        embedder.embed(["warm up"])
        for data in files:
            t0 = time.perf_counter()
            scenarios = read_scenarios(data)
            indexed = [(i, s) for i, s in enumerate(scenarios)
                       if only is None or s["category"] == only]
            if limit is not None:
                indexed = indexed[:limit]
            results = run_scenarios(db, embedder, settings, [s for _, s in indexed],
                                    paths=[f"users.s{i}" for i, _ in indexed],
                                    forget_statuses=forget_statuses, mode=mode)
            summary = summarise(results)
            summary.update({
                "mode": mode, "embedder": embedder_name, "embedding_model": embedder.model,
                "extractor": "model" if settings.llm_configured else "rule",
                "forget": "active" if forget_statuses else "any", "data": Path(data).name,
                "elapsed_s": round(time.perf_counter() - t0, 1)})
            out[Path(data).name] = (summary, results)
    return out


def report(summary: dict[str, Any], results: list[dict[str, Any]], failed: list | None
           ) -> dict[str, Any]:
    """What ``--out`` holds of one file: the summary, each scenario's verdicts and (with
    ``--show-failures``) the failures."""
    per_scenario = [{"id": r["id"], "category": r["category"],
                     "receipts": r.get("receipts"), "forgotten": r.get("forgotten"),
                     "error": r.get("error"),
                     "held": [e["held"] for e in r["expect"]]} for r in results]
    doc = {"summary": summary, "scenarios": per_scenario}
    if failed is not None:
        doc["failures"] = failed
    return doc


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="truth_eval", description=__doc__.splitlines()[0])
    parser.add_argument("data", type=Path, help="a scenario file (FORMAT.md), or a folder: "
                        "each *.json in it, one result per file name")
    parser.add_argument("--embedder", default="hash", choices=("hash", "local"),
                        help="hash (the default, as `make run`) or local (sentence-transformers)")
    parser.add_argument("--only", metavar="CATEGORY", help="only this category's scenarios")
    parser.add_argument("--limit", type=int, help="at most this many scenarios (per file)")
    parser.add_argument("--out", type=Path, help="write the summary, per-scenario scores and "
                        "(with --show-failures) the failures here")
    parser.add_argument("--show-failures", action="store_true",
                        help="every failed expectation and what was found, on stderr")
    parser.add_argument("--forget", choices=("any", "active"), default="any",
                        help="what a forget step erases: matching memories of any status "
                        "(default) or active ones only")
    parser.add_argument("--in-process", dest="mode", action="store_const", const="in-process",
                        default="http", help="call the core functions in this process "
                        "instead of the API over HTTP (the same scores, less overhead)")
    args = parser.parse_args(argv)

    folder = Path(args.data).is_dir()
    runs = run_files(data_files(args.data), args.embedder, args.only, args.limit,
                     ACTIVE if args.forget == "active" else None, args.mode)
    summaries, docs = {}, {}
    for name, (summary, results) in runs.items():
        failed = failures(results) if args.show_failures else None
        for f in failed or []:
            print(json.dumps({"file": name, **f} if folder else f, ensure_ascii=False,
                             default=str), file=sys.stderr)
        summaries[name], docs[name] = summary, report(summary, results, failed)
    if folder:
        print(json.dumps(summaries, indent=2))
    else:
        [summary] = summaries.values()
        print(json.dumps(summary, indent=2))
    if args.out:
        doc = docs if folder else next(iter(docs.values()))
        args.out.write_text(json.dumps(doc, indent=2, ensure_ascii=False, default=str),
                            encoding="utf-8")
    return 1 if any(s["errors"] for s in summaries.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
