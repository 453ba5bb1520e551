"""The ingest pipeline: extract -> gate -> conflict -> persist.

Each step takes and returns a ``StepPayload`` (ids only), keeps its state in PostgreSQL and is
idempotent: it does nothing when the receipt says it already ran, or when the receipt has
reached a final status. Locally the steps run in-process in ``STEPS`` order; on AWS each is a
Task of ``infra/statemachines/ingest.asl.json`` (a test keeps the two lists equal).
Model and embedder calls happen outside any transaction.
"""

from __future__ import annotations

import logging
import re
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import cached_property
from typing import Any

from psycopg.types.json import Jsonb

from strata.audit import audited
from strata.auth.access import Access, Caller, Level
from strata.db import Database
from strata.foundation.config import Settings
from strata.foundation.errors import Unavailable
from strata.ingest import receipts
from strata.ingest.models import (
    TERMINAL,
    Candidate,
    Extraction,
    Message,
    NotKept,
    StepPayload,
    Verdict,
)
from strata.providers import Embedder
from strata.rules import secrets
from strata.write import gate as gating
from strata.write import apply as persist
from strata.write import fingerprints, locks
from strata.write.canonical import canonicalize, value_hash
from strata.write.conflict import ConflictJudge, NoJudge, RuleJudge, judge_candidate

log = logging.getLogger(__name__)

STEPS = ("extract", "gate", "conflict", "persist")


@dataclass
class IngestRuntime:
    db: Database
    embedder: Embedder
    settings: Settings
    _extractor: Any = None
    _judge: Any = None

    @cached_property
    def extractor(self):
        """The model-backed extractor when configured, else None (the rule extractor runs)."""
        if self._extractor is not None:
            return self._extractor
        from strata.ingest.llm import get_extractor

        return get_extractor(self.settings)

    @cached_property
    def judge(self) -> ConflictJudge:
        if self._judge is not None:
            return self._judge
        from strata.ingest.llm import get_judge

        return get_judge(self.settings) or RuleJudge()

    @cached_property
    def rule_extractor(self):
        from strata.ingest.rules import RuleExtractor

        return RuleExtractor()


def _done(row: dict[str, Any], step: str) -> bool:
    return row["status"] in TERMINAL or step in row["steps"]


def _payload(p: StepPayload, status: str) -> StepPayload:
    return StepPayload(receipt_id=p.receipt_id, tenant_id=p.tenant_id, status=status)


def _failed(rt: IngestRuntime, p: StepPayload, step: str, status: str,
            **fields: Any) -> StepPayload:
    """End the receipt with a provider failure of ``step``, unless another delivery of the
    step finished it first. Step Functions re-delivers a Task whose invocation it lost while
    that invocation still runs; the re-delivery can finish the whole pipeline before the first
    one's model call fails, and that late failure must not relabel a receipt whose memories
    are written (tests/test_pipeline_faults.py, run_twice_overlapping)."""
    with rt.db.transaction(cause=f"ingest.{step}") as cur:
        row = receipts.lock(cur, p.receipt_id)
        if _done(row, step):
            return _payload(p, row["status"])
        receipts.finish_step(cur, p.receipt_id, step, status=status, **fields)
    return _payload(p, status)


# --------------------------------------------------------------------------------------
# extract
# --------------------------------------------------------------------------------------


def extract(rt: IngestRuntime, p: StepPayload) -> StepPayload:
    with rt.db.transaction(cause="ingest.extract") as cur:
        row = receipts.lock(cur, p.receipt_id)
        if _done(row, "extract"):
            return _payload(p, row["status"])
    started = time.perf_counter()
    messages = [Message.model_validate(m) for m in row["messages"]]
    now = row["created_at"]
    notes: list[str] = []
    extraction: Extraction | None = None
    name = rt.rule_extractor.name
    rule = _rule(rt, p, row["path"])
    # Where the governing rule captures nothing (and includes nothing), the conversation is
    # not sent to a model: the rule extractor accounts for it locally, and the write path
    # blocks each item naming the rule.
    model = None if rule is not None and rule.capture == "off" \
        and not rule.include_categories else rt.extractor
    if model is not None:
        from strata.ingest.llm import ExtractorFailed

        try:
            extraction = model.extract(_withheld(messages), now,
                                       instructions=rule.instructions if rule else None)
            name = model.name
        except ExtractorFailed as exc:
            cause = getattr(exc, "reason", None) or type(exc).__name__
            if rt.settings.llm_fallback == "fail":
                return _failed(rt, p, "extract", "llm_failed", extractor=model.name,
                               error=f"model extraction failed ({cause})")
            notes.append(f"model extraction failed ({cause}); the rule extractor ran instead")
            name = f"{rt.rule_extractor.name} (fallback from {model.name})"
    if extraction is None:
        extraction = rt.rule_extractor.extract(messages, now, _stored(rt, p, row["path"]))
    extraction = _without_secrets(extraction)
    extraction = _apart_from_forgotten(rt, p, row["path"], extraction)
    not_kept = accounted(extraction, messages)
    rows = [_stage(p, i, c, messages, now) for i, c in enumerate(extraction.memories)]
    with rt.db.transaction(cause="ingest.extract") as cur:
        row = receipts.lock(cur, p.receipt_id)
        if _done(row, "extract"):  # a concurrent retry finished first
            return _payload(p, row["status"])
        cur.execute("DELETE FROM ingest_candidates WHERE receipt_id = %s", (p.receipt_id,))
        if rows:
            cur.executemany(
                """
                INSERT INTO ingest_candidates (receipt_id, idx, tenant_id, content, canonical,
                    value_hash, kind, slot, value, valid_from, valid_to, confidence, asserts_change,
                    evidence)
                VALUES (%(receipt)s, %(idx)s, %(tenant)s, %(content)s, %(canonical)s, %(hash)s,
                        %(kind)s, %(slot)s, %(value)s, %(valid_from)s, %(valid_to)s,
                        %(confidence)s, %(asserts_change)s, %(evidence)s)
                """,
                rows,
            )
        receipts.finish_step(cur, p.receipt_id, "extract", status="running", notes=notes,
                             extractor=name, timing_ms=(time.perf_counter() - started) * 1000,
                             not_kept=[n.model_dump(mode="json") for n in not_kept])
    return _payload(p, "running")


# The scope's latest slotted memories, oldest first: what a correction of an earlier
# session ("it's May 21st, not the 12th") may put right. Bounded: a correction reaches for
# what was said lately, and the extract step stays one cheap read.
_STORED = """
SELECT content, kind::text AS kind, slot, value FROM (
    SELECT content, kind, slot, value, recorded_at FROM memories
    WHERE tenant_id = %(tenant)s AND path = %(path)s::ltree AND status = 'active'
      AND slot IS NOT NULL AND value IS NOT NULL
    ORDER BY recorded_at DESC LIMIT %(limit)s) latest
ORDER BY recorded_at
"""
STORED_LIMIT = 50


def _stored(rt: IngestRuntime, p: StepPayload, path: str) -> list[Candidate]:
    """What the rule extractor is shown of the scope's stored memories (``_STORED``)."""
    with rt.db.transaction(cause="ingest.extract") as cur:
        rows = cur.execute(_STORED, {"tenant": p.tenant_id, "path": path,
                                     "limit": STORED_LIMIT}).fetchall()
    return [Candidate(content=r["content"], kind=r["kind"], slot=r["slot"], value=r["value"])
            for r in rows]


def _rule(rt: IngestRuntime, p: StepPayload, path: str):
    """The memory rule governing the receipt's path (its instructions go to the model)."""
    from strata.rules.store import effective_for

    return effective_for(rt.db, p.tenant_id, path)


def _withheld(messages: list[Message]) -> list[Message]:
    """The messages with their secrets masked: a model never sees a password or a key."""
    return [m.model_copy(update={"content": secrets.redact(m.content)}) for m in messages]


def _without_secrets(extraction: Extraction) -> Extraction:
    """Whatever extracted it, a candidate holding a secret is not kept (reason ``secret``)."""
    kept, withheld = [], []
    for c in extraction.memories:
        if secrets.contains_secret(c.content):
            withheld.extend(NotKept(message=i, reason="secret") for i in c.evidence[:1])
        else:
            kept.append(c)
    return Extraction(memories=kept, not_kept=[*extraction.not_kept, *withheld])


def _apart_from_forgotten(rt: IngestRuntime, p: StepPayload, path: str,
                          extraction: Extraction) -> Extraction:
    """A candidate that carries a forgotten fact beside something new ("I live at <the
    forgotten address>, and I started pottery") is cut into clauses: the clauses that carry
    it stay one candidate, which the write path refuses naming the tombstone; every other
    clause becomes a candidate of its own, so the rest of the message is kept. The slot
    stays with the clause that names its value."""
    if not extraction.memories:
        return extraction
    with rt.db.transaction(cause="ingest.extract") as cur:
        cut = fingerprints.split(cur, p.tenant_id, path, [c.content for c in extraction.memories])
    memories: list[Candidate] = []
    for c, pieces in zip(extraction.memories, cut, strict=True):
        carrying = [text for text, hit in pieces if hit]
        if not carrying or len(carrying) == len(pieces):
            memories.append(c)
            continue
        memories.append(c.model_copy(update={"content": ", ".join(carrying)}))
        value = canonicalize(c.value) if c.value else None
        for text, hit in pieces:
            if not hit:
                named = value is not None and value in canonicalize(text)
                memories.append(Candidate(
                    content=text, kind=c.kind, slot=c.slot if named else None,
                    value=c.value if named else None, valid_from=c.valid_from,
                    valid_to=c.valid_to, confidence=c.confidence,
                    asserts_change=c.asserts_change, evidence=c.evidence))
    return extraction.model_copy(update={"memories": memories})


def accounted(extraction: Extraction, messages: list[Message]) -> list[NotKept]:
    """What the extraction did not keep: its own account; every user message holding a
    secret (withheld before a model saw it), unless the extractor said so already; and every
    user message that no candidate cites and the extractor said nothing about (a model's
    silence)."""
    cited = {i for c in extraction.memories for i in c.evidence}
    said_secret = {n.message for n in extraction.not_kept if n.reason == "secret"}
    extraction = extraction.model_copy(update={"not_kept": [*extraction.not_kept, *(
        NotKept(message=i, reason="secret") for i, m in enumerate(messages)
        if m.role == "user" and i not in said_secret and secrets.contains_secret(m.content))]})
    told = {n.message for n in extraction.not_kept}
    silent = [
        NotKept(message=i, reason="model_skipped")
        for i, m in enumerate(messages)
        if m.role == "user" and i not in cited and i not in told
    ]
    return sorted([*extraction.not_kept, *silent], key=lambda n: n.message)


def _stage(p: StepPayload, idx: int, c: Candidate, messages: list[Message], now: datetime) -> dict:
    # valid_from is staged only when the statement gives its start ("since May 2025"); NULL
    # when its start is only when it was said, which persist takes from the evidence. The
    # rule extractor stamps an undated statement with its message's time (a correction with
    # its antecedent's), so a start at the time of any message of the request, or at the
    # request's time, is not one the statement gave.
    said = {m.at for m in messages if m.at} | {now}
    explicit = c.valid_from if c.valid_from is not None and c.valid_from not in said else None
    canonical = canonicalize(c.content) or c.content.strip().casefold()
    return {
        "receipt": p.receipt_id, "idx": idx, "tenant": p.tenant_id, "content": c.content,
        "canonical": canonical, "hash": value_hash(canonical), "kind": c.kind,
        "slot": c.slot, "value": gating.normalise_value(c.value),
        "valid_from": explicit, "valid_to": c.valid_to,
        "confidence": c.confidence,
        "asserts_change": c.asserts_change,
        "evidence": Jsonb([
            {"source": "ingest", "receipt_id": str(p.receipt_id), "message": i,
             "role": messages[i].role, "message_id": messages[i].id,
             "at": messages[i].at.isoformat() if messages[i].at else None}
            for i in c.evidence if 0 <= i < len(messages)
        ] or [{"source": "ingest", "receipt_id": str(p.receipt_id)}]),
    }


# --------------------------------------------------------------------------------------
# gate
# --------------------------------------------------------------------------------------


def gate(rt: IngestRuntime, p: StepPayload) -> StepPayload:
    with rt.db.transaction(cause="ingest.gate") as cur:
        row = receipts.lock(cur, p.receipt_id)
        if _done(row, "gate"):
            return _payload(p, row["status"])
        staged = cur.execute(
            "SELECT idx, content, canonical, slot, value, asserts_change FROM ingest_candidates"
            " WHERE receipt_id = %s ORDER BY idx",
            (p.receipt_id,),
        ).fetchall()
    started = time.perf_counter()
    first: dict[tuple, int] = {}
    survivors = []
    merged: dict[int, int] = {}
    for c in staged:
        key = gating.merge_key(c["slot"], c["value"], c["canonical"])
        if key in first:
            merged[c["idx"]] = first[key]
        else:
            first[key] = c["idx"]
            survivors.append(c)
    try:
        vectors = rt.embedder.embed([c["content"] for c in survivors]) if survivors else []
    except Exception as exc:  # any provider failure: nothing has been written
        log.warning("embedding failed", extra={"receipt_id": str(p.receipt_id)})
        return _failed(rt, p, "gate", "embed_failed",
                       error=f"embedding failed ({type(exc).__name__})")
    inputs = [
        gating.GateInput(c["idx"], row["path"], c["canonical"], c["slot"], c["value"],
                         c["asserts_change"], vec)
        for c, vec in zip(survivors, vectors, strict=True)
    ]
    with rt.db.transaction(cause="ingest.gate") as cur:
        row = receipts.lock(cur, p.receipt_id)
        if _done(row, "gate"):
            return _payload(p, row["status"])
        decisions = gating.decide(cur, p.tenant_id, inputs,
                                  gating.bands(rt.settings, rt.embedder.model))
        for item, decision in zip(inputs, decisions, strict=True):
            cur.execute(
                "UPDATE ingest_candidates SET embedding = %s, gate = %s"
                " WHERE receipt_id = %s AND idx = %s",
                (item.embedding, Jsonb(decision.to_json()), p.receipt_id, item.idx),
            )
        for idx, into in merged.items():
            cur.execute(
                "UPDATE ingest_candidates SET gate = %s WHERE receipt_id = %s AND idx = %s",
                (Jsonb({"action": "merged", "into": into}), p.receipt_id, idx),
            )
        receipts.finish_step(cur, p.receipt_id, "gate",
                             timing_ms=(time.perf_counter() - started) * 1000)
    return _payload(p, "running")


# --------------------------------------------------------------------------------------
# conflict
# --------------------------------------------------------------------------------------


def conflict(rt: IngestRuntime, p: StepPayload) -> StepPayload:
    with rt.db.transaction(cause="ingest.conflict") as cur:
        row = receipts.lock(cur, p.receipt_id)
        if _done(row, "conflict"):
            return _payload(p, row["status"])
        todo = []
        for c in cur.execute(
            "SELECT idx, content, kind::text AS kind, slot, value, valid_from, confidence,"
            " asserts_change, gate FROM ingest_candidates"
            " WHERE receipt_id = %s AND gate->>'action' = 'judge' ORDER BY idx",
            (p.receipt_id,),
        ).fetchall():
            shown = gating.load_neighbours(cur, p.tenant_id, c["gate"])
            candidate = Candidate(
                content=c["content"], kind=c["kind"], slot=c["slot"], value=c["value"],
                valid_from=c["valid_from"], confidence=c["confidence"],
                asserts_change=c["asserts_change"],
            )
            todo.append((c["idx"], candidate, shown))
    started = time.perf_counter()
    results: dict[int, list[Verdict]] = {}
    notes: list[str] = []
    failed: str | None = None
    for idx, candidate, shown in todo:
        try:
            results[idx] = judge_candidate(rt.judge if failed is None else NoJudge(),
                                           candidate, shown)
        except Exception as exc:  # the memories are still stored; the receipt says why
            failed = getattr(exc, "reason", None) or type(exc).__name__
            log.warning("conflict analysis failed", extra={"receipt_id": str(p.receipt_id)})
            results[idx] = judge_candidate(NoJudge(), candidate, shown)
    if failed is not None:
        notes.append(f"conflict analysis did not run ({failed}): memories were stored without "
                     "it (slot rules still applied)")
    with rt.db.transaction(cause="ingest.conflict") as cur:
        row = receipts.lock(cur, p.receipt_id)
        if _done(row, "conflict"):
            return _payload(p, row["status"])
        for idx, verdicts in results.items():
            cur.execute(
                "UPDATE ingest_candidates SET verdicts = %s WHERE receipt_id = %s AND idx = %s",
                (Jsonb([v.model_dump(mode="json") for v in verdicts]), p.receipt_id, idx),
            )
        receipts.finish_step(cur, p.receipt_id, "conflict", notes=notes,
                             timing_ms=(time.perf_counter() - started) * 1000)
    return _payload(p, "running")


# --------------------------------------------------------------------------------------
# persist
# --------------------------------------------------------------------------------------


def persist_step(rt: IngestRuntime, p: StepPayload) -> StepPayload:
    started = time.perf_counter()
    done = locks.retrying(rt.db, lambda cur: _persist(rt, p, cur, started),
                          cause="ingest.persist", actor=None)
    if done is None:  # a previous run finished it
        return _payload(p, _status(rt, p))
    row, items, status = done
    caller = pipeline_caller(row)
    with audited(rt.db, caller, "write", "ingest.persist") as event:
        event.memory_ids = [m for o in items for m in ([o.memory_id] if o.memory_id else [])]
        event.count = len(items)
    return _payload(p, status)


def _status(rt: IngestRuntime, p: StepPayload) -> str:
    with rt.db.transaction(cause="ingest.persist") as cur:
        return receipts.lock(cur, p.receipt_id)["status"]


def _persist(rt: IngestRuntime, p: StepPayload, cur, started: float):
    """The persist transaction: the staged candidates through the write path, the receipt's
    outcomes. Runs again from the start when a concurrent writer forced an abort."""
    row = receipts.lock(cur, p.receipt_id)
    if _done(row, "persist"):
        return None
    cur.execute(
        "SELECT set_config('strata.actor', %s, true)",
        (f"principal:{row['principal_id']}" if row["principal_id"] else "pipeline",),
    )
    staged = [
        persist.Staged(
            idx=c["idx"], path=row["path"], content=c["content"], canonical=c["canonical"],
            value_hash=bytes(c["value_hash"]), kind=c["kind"], slot=c["slot"],
            value=c["value"],
            valid_from=c["valid_from"] or _said_at(c["evidence"]) or row["created_at"],
            valid_from_explicit=c["valid_from"] is not None, valid_to=c["valid_to"],
            confidence=c["confidence"], evidence=c["evidence"], embedding=c["embedding"],
            gate=c["gate"], asserts_change=c["asserts_change"],
            asserted_at=_said_at(c["evidence"]) or row["created_at"],
            tier=row["tier"], expires_at=(datetime.now(UTC) + timedelta(seconds=row["ttl_s"])
                                          if row["ttl_s"] is not None else None),
            verdicts=[Verdict.model_validate(v) for v in c["verdicts"]]
            if c["verdicts"] is not None else None,
        )
        for c in cur.execute(
            "SELECT * FROM ingest_candidates WHERE receipt_id = %s ORDER BY idx",
            (p.receipt_id,),
        ).fetchall()
    ]
    items = persist.write(cur, tenant_id=p.tenant_id, items=staged, model=rt.embedder.model,
                          recorded_at=datetime.now(row["created_at"].tzinfo),
                          thresholds=gating.bands(rt.settings, rt.embedder.model),
                          embed=rt.embedder.embed)
    counts: dict[str, int] = {}
    for o in items:
        counts[o.outcome] = counts.get(o.outcome, 0) + 1
    wrote = any(o.outcome not in ("blocked", "skipped") for o in items)
    status = "wrote" if wrote else "meaningful_no_write"
    cur.execute("DELETE FROM ingest_candidates WHERE receipt_id = %s", (p.receipt_id,))
    receipts.finish_step(
        cur, p.receipt_id, "persist", status=status,
        items=[o.model_dump(mode="json") for o in items], counts=counts, messages=None,
        timing_ms=(time.perf_counter() - started) * 1000,
    )
    return row, items, status


def _said_at(evidence: list[dict[str, Any]]) -> datetime | None:
    """When the statement was said: the latest time of the messages it cites."""
    times = [datetime.fromisoformat(e["at"]) for e in evidence if e.get("at")]
    return max(times, default=None)


def pipeline_caller(row: dict[str, Any]) -> Caller:
    """The pipeline acts for the principal who sent the request, on that request's path."""
    return Caller(
        tenant_id=row["tenant_id"], principal_id=row["principal_id"], key_id=row["key_id"],
        access=(Access(row["path"], Level.write),), surface="pipeline",
    )


STEP_FUNCTIONS: dict[str, Callable[[IngestRuntime, StepPayload], StepPayload]] = {
    "extract": extract, "gate": gate, "conflict": conflict, "persist": persist_step,
}
assert tuple(STEP_FUNCTIONS) == STEPS


def run_step(rt: IngestRuntime, name: str, payload: dict[str, Any]) -> dict[str, Any]:
    """One step from a JSON payload (a Step Functions task, or the local runner)."""
    return STEP_FUNCTIONS[name](rt, StepPayload.model_validate(payload)).model_dump(mode="json")


# A step the database could not serve runs again after these pauses (seconds), as the state
# machine's Retry on ``Unavailable`` does: steps are idempotent, so a step whose connection
# was lost -- before its commit, or after it with the answer lost -- is safe to run again.
UNAVAILABLE_RETRIES = (1.0, 2.0, 4.0)


def _run_retrying(rt: IngestRuntime, name: str, payload: dict[str, Any]) -> dict[str, Any]:
    for pause in UNAVAILABLE_RETRIES:
        try:
            return run_step(rt, name, payload)
        except Unavailable:
            log.warning("ingest step retried: the database was unavailable",
                        extra={"receipt_id": payload["receipt_id"], "step": name})
            time.sleep(pause)
    return run_step(rt, name, payload)  # the last try: its failure is the receipt's


def run_pipeline(rt: IngestRuntime, receipt_id: uuid.UUID, tenant_id: uuid.UUID) -> str:
    """All steps in order, in-process; a step failure is recorded on the receipt."""
    payload = {"receipt_id": str(receipt_id), "tenant_id": str(tenant_id)}
    try:
        for name in STEPS:
            payload = _run_retrying(rt, name, payload)
    except Exception as exc:
        log.exception("ingest step failed", extra={"receipt_id": str(receipt_id)})
        record_failure(rt.db, receipt_id, exc)
        return "db_write_failed"
    return payload["status"]


_ERROR_NAME = re.compile(r"[A-Za-z0-9_.:-]{1,128}")


def record_failure(db: Database, receipt_id: uuid.UUID, exc: BaseException | str) -> None:
    """The Catch of the state machine and the local runner both end here. Only an error
    *name* is recorded (a message can carry content); anything else becomes "Unknown"."""
    name = exc if isinstance(exc, str) else type(exc).__name__
    if not _ERROR_NAME.fullmatch(name):
        name = "Unknown"
    with db.transaction(cause="ingest.failed") as cur:
        cur.execute(
            "UPDATE ingest_receipts SET status = 'db_write_failed', error = %s, updated_at = now()"
            " WHERE id = %s AND status IN ('queued', 'running')",
            (f"pipeline step failed ({name})", receipt_id),
        )
