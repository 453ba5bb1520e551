"""Faults in the ingest pipeline, at every step and at persist's commit, on both runners.

The runners: the local one (``strata.ingest.service.ingest`` with ``wait``: the steps
in-process) and the state machine (infra/statemachines/ingest.asl.json executed by moto, its
Tasks answered by the real functions/ingest_step handler, started by the real
``StepFunctionsLauncher``). The providers are the real ``openai`` client for the model (the
extractor and the judge) and for the embedder, against the scripted OpenAI-compatible server
on loopback (tests/fake_openai.py). Every fault is real at its boundary:

- ``provider_timeout`` / ``provider_5xx``: the server answers the calls the step makes (extract:
  the extraction, gate: the embeddings, conflict: the judgement) only after the client's
  timeout, or with 500/503;
- ``connection_dropped``: PostgreSQL ends the step's transaction. A trigger makes it wait on
  an advisory lock this test holds -- at the step's last write (the receipt's step marker), or
  inside COMMIT (a deferred constraint trigger) -- and another session terminates its backend
  with ``pg_terminate_backend``. The step raises ``Unavailable`` and both runners run it
  again (the state machine's Retry on ``Unavailable``, the local runner's
  ``UNAVAILABLE_RETRIES``): the outcome is the fault-free one;
- ``commit_answer_lost``: persist's COMMIT reaches PostgreSQL and commits, and the connection
  drops before the answer gets back (a TCP proxy in front of the server cuts it there); the
  retried persist finds its work done;
- ``run_twice``: the step's input is delivered again after the step ran (Step Functions: the
  invocation's answer was lost and the Task is retried);
- ``run_twice_overlapping``: delivered again while the first delivery is still running; the
  first then fails (its model or embedder call is held until the rest of the pipeline has
  finished; persist's is held inside its transaction until the second delivery waits on it).

After each, ``assert_accounted`` checks the invariant: the receipt is final; every user
message is reflected in a memory that cites it, or listed in the receipt's ``not_kept`` with a
reason -- or, when the receipt failed, the receipt says why (``error``) and keeps the
conversation, and nothing of the batch was written; no memory twice, no evidence, history or
audit entry twice. A fault that leaves the outcome unchanged (a re-delivery) must leave
exactly what the same conversation leaves without the fault (``fingerprint``).
"""

from __future__ import annotations

import json
import socket
import struct
import threading
import time
import uuid
from collections import Counter
from contextlib import suppress
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
import pytest
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict, make_conninfo
from psycopg.types.json import Jsonb

from fake_openai import FakeLLM, Recorded, error, slow
from strata.db import Database, get_database
from strata.foundation.config import Settings, get_settings
from strata.ingest.models import TERMINAL, IngestRequest
from strata.ingest.pipeline import STEPS, IngestRuntime, run_pipeline, run_step
from strata.ingest.service import StepFunctionsLauncher, ingest
from strata.providers import get_embedder, HashingEmbedder

from test_state_machine import (  # noqa: F401  (step_handler is a fixture used here)
    ACCOUNT, REGION, Lambda, LambdaContext, step_handler, substituted_definition,
)

PATH = "users.alice"
T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
FAILED = frozenset({"llm_failed", "embed_failed", "db_write_failed"})

# -- the conversation and the scripted model ----------------------------------------------

BASELINE = ("I have a dog named Rex",)  # said first: what the conflict step judges against
CONVERSATION = (
    ("user", "I have a dog named Rex and a cat named Tom"),  # judged against the baseline
    ("user", "I prefer PostgreSQL for new projects"),
    ("assistant", "Noted: PostgreSQL."),
    ("user", "What time is it?"),                            # not kept: a question
    ("user", "Again: PostgreSQL for new projects, please"),  # the same memory: merged
    ("user", "My password is hunter2-Zebra!"),               # not kept: a secret
    ("user", "I live in Berlin"),
)
# What the model extracts from each message (by its text); a message it is silent about is
# accounted by the pipeline (model_skipped, or secret).
PREFERENCE = {"content": "User prefers PostgreSQL for new projects", "kind": "preference",
              "slot": "user.preferred_database", "value": "postgresql"}
EXTRACTS = {
    "I have a dog named Rex": {"content": "User has a dog named Rex"},
    "I have a dog named Rex and a cat named Tom": {
        "content": "User has a dog named Rex and a cat named Tom"},
    "I prefer PostgreSQL for new projects": PREFERENCE,
    "Again: PostgreSQL for new projects, please": PREFERENCE,
    "I live in Berlin": {"content": "User lives in Berlin", "slot": "user.location",
                         "value": "berlin"},
}


def _json_lines(text: str) -> list[dict]:
    return [json.loads(line) for line in text.splitlines() if line.startswith("{")]


def model_extraction(rec: Recorded) -> dict:
    memories, not_kept = [], []
    for line in _json_lines(rec.messages[-1]["content"]):
        if line["role"] != "user":
            continue
        if line["content"].endswith("?"):
            not_kept.append({"message": line["index"], "reason": "question", "text": None})
        elif (found := EXTRACTS.get(line["content"])) is not None:
            memories.append({"kind": "fact", "slot": None, "value": None, "valid_from": None,
                             "confidence": 0.9, "asserts_change": False, **found,
                             "evidence": [line["index"]]})
    return {"memories": memories, "not_kept": not_kept}


def model_judgement(rec: Recorded) -> dict:
    candidate, *shown = _json_lines(rec.messages[-1]["content"])
    return {"verdicts": [
        {"target_id": n["id"], "confidence": 0.9, "reason": "adds to it",
         "relation": "refines" if n["content"] in candidate["content"] else "coexists"}
        for n in shown]}


# -- faults at the providers ---------------------------------------------------------------

CLIENT_TIMEOUT_S = 0.25  # the model's and embedder's client timeout in the timeout cases


class Provider:
    """The scripted model and embedder: a working provider, until ``arm`` makes the calls of
    one step fail. Vectors are the hashing embedder's, so similarity behaves as in the other
    ingest tests (the similarity bands are set to that embedder's)."""

    CALLS = {"extract": "Extraction", "gate": "embeddings", "conflict": "JudgeAnswer"}

    def __init__(self, fake: FakeLLM, dim: int) -> None:
        self.fake, self.vectors = fake, HashingEmbedder(dim)
        self.fault: tuple[str, str] | None = None
        self.faulted: list[str] = []  # the steps whose calls were answered with the fault
        self.held = threading.Event()
        self.release = threading.Event()
        fake.fallback = self._chat
        fake.embedding_fallback = self._embeddings

    def arm(self, step: str, kind: str) -> None:
        assert step in self.CALLS, step
        self.fault = (step, kind)

    def _chat(self, rec: Recorded):
        step = "extract" if rec.schema_name == "Extraction" else "conflict"
        healthy = model_extraction if step == "extract" else model_judgement
        return self._answer(step, rec, healthy)

    def _embeddings(self, rec: Recorded):
        return self._answer("gate", rec, lambda r: [list(v) for v in self.vectors.embed(r.inputs)])

    def _answer(self, step: str, rec: Recorded, healthy):
        if self.fault is None or self.fault[0] != step:
            return healthy(rec)
        kind = self.fault[1]
        self.faulted.append(step)
        if kind == "timeout":
            return slow(CLIENT_TIMEOUT_S * 8)
        if kind == "5xx":
            return error(503 if step == "gate" else 500)
        assert kind == "hold"
        # The first delivery's call: held until the test lets it fail; later calls work.
        self.fault = None
        self.held.set()
        assert self.release.wait(30), "the held call was never released"
        return error(500, headers={"x-should-retry": "false"})


# -- faults at the database ----------------------------------------------------------------

FAULT_LOCK = 16_016  # the advisory lock the held transaction waits on


class Backend:
    """Holds one pipeline transaction of ``tenant`` at a chosen point, by PostgreSQL itself:
    a trigger on ``ingest_receipts`` makes the transaction that sets ``step``'s marker wait on
    an advisory lock this session holds -- at that UPDATE, or with ``at_commit`` inside
    COMMIT (a deferred constraint trigger). Then ``then``: "terminate" its backend from this
    session, or "release" it once another session waits on the receipt it has locked (a
    second delivery of the same step). One shot: a sequence, which no rollback undoes, lets
    only the first transaction wait."""

    def __init__(self, url: str, tenant_id: uuid.UUID, step: str, *, at_commit: bool = False,
                 then: str = "terminate") -> None:
        self.url, self.then = url, then
        self.entered = threading.Event()
        self.terminated: list[int] = []
        self.released = False
        self._stop = threading.Event()
        self._ready = threading.Event()
        marker = sql.SQL("NEW.steps ? {s} AND NOT OLD.steps ? {s} AND NEW.tenant_id = {t}").format(
            s=sql.Literal(step), t=sql.Literal(str(tenant_id)))
        when = (sql.SQL("CONSTRAINT TRIGGER pipeline_fault AFTER UPDATE ON ingest_receipts"
                        " DEFERRABLE INITIALLY DEFERRED") if at_commit else
                sql.SQL("TRIGGER pipeline_fault BEFORE UPDATE ON ingest_receipts"))
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(sql.SQL("""
                CREATE SEQUENCE pipeline_fault_shots;
                CREATE FUNCTION pipeline_fault() RETURNS trigger LANGUAGE plpgsql AS $$
                BEGIN
                    IF nextval('pipeline_fault_shots') = 1 THEN
                        PERFORM pg_advisory_xact_lock({key});
                    END IF;
                    RETURN NEW;
                END $$;
                CREATE {when} FOR EACH ROW WHEN ({marker}) EXECUTE FUNCTION pipeline_fault();
            """).format(key=sql.Literal(FAULT_LOCK), when=when, marker=marker))
        self._thread = threading.Thread(target=self._watch, name="pipeline-fault", daemon=True)
        self._thread.start()
        assert self._ready.wait(10)

    def _watch(self) -> None:
        with psycopg.connect(self.url, autocommit=True) as conn:
            conn.execute("SELECT pg_advisory_lock(%s)", (FAULT_LOCK,))
            self._ready.set()
            here = "(SELECT oid FROM pg_database WHERE datname = current_database())"
            while not self._stop.is_set():
                row = conn.execute(
                    f"SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND NOT granted"
                    f" AND objid = %s AND database = {here}", (FAULT_LOCK,)).fetchone()
                if row is not None:
                    self.entered.set()
                    if self.then == "terminate":
                        conn.execute("SELECT pg_terminate_backend(%s, 10000)", (row[0],))
                        self.terminated.append(row[0])
                        break
                    waiting = conn.execute(
                        f"SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'"
                        f" AND wait_event <> 'advisory' AND datid = {here}").fetchone()[0]
                    if waiting:
                        self.released = True
                        break
                time.sleep(0.005)
            conn.execute("SELECT pg_advisory_unlock(%s)", (FAULT_LOCK,))

    def close(self) -> None:
        self._stop.set()
        self._thread.join(10)


class CommitAnswerDropper:
    """A TCP proxy in front of PostgreSQL that, once, lets the COMMIT of persist's
    transaction through and closes the connection when the server answers it: the
    transaction is committed, and the client only sees its connection drop."""

    SSL_REQUEST, GSS_REQUEST = 80877103, 80877104

    def __init__(self, url: str) -> None:
        params = conninfo_to_dict(url)
        host, port = params.get("host") or "localhost", int(params.get("port") or 5432)
        self._upstream = ((socket.AF_UNIX, f"{host}/.s.PGSQL.{port}") if host.startswith("/")
                          else (socket.AF_INET, (host, port)))
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.url = make_conninfo(url, host="127.0.0.1", port=self._listener.getsockname()[1],
                                 sslmode="disable", gssencmode="disable")
        self.fired = threading.Event()
        self._sockets: list[socket.socket] = []
        threading.Thread(target=self._accept, name="commit-dropper", daemon=True).start()

    def _accept(self) -> None:
        with suppress(OSError):
            while True:
                client, _ = self._listener.accept()
                server = socket.socket(self._upstream[0], socket.SOCK_STREAM)
                server.connect(self._upstream[1])
                self._sockets += [client, server]
                cut = threading.Event()
                for target in (self._requests, self._answers):
                    threading.Thread(target=target, args=(client, server, cut),
                                     daemon=True).start()

    @staticmethod
    def _read(sock: socket.socket, n: int) -> bytes:
        data = b""
        while len(data) < n:
            chunk = sock.recv(n - len(data))
            if not chunk:
                raise EOFError
            data += chunk
        return data

    def _requests(self, client: socket.socket, server: socket.socket, cut: threading.Event):
        with suppress(OSError, EOFError):
            while True:  # the untyped start: SSL/GSS requests (declined), then the startup
                head = self._read(client, 8)
                length, code = struct.unpack("!ii", head)
                server.sendall(head + self._read(client, length - 8))
                if code not in (self.SSL_REQUEST, self.GSS_REQUEST):
                    break
            persist = False
            while True:
                kind = self._read(client, 1)
                size = self._read(client, 4)
                body = self._read(client, struct.unpack("!i", size)[0] - 4)
                # The persist transaction sets strata.cause = 'ingest.persist' first.
                persist = persist or b"ingest.persist" in body
                if persist and kind == b"Q" and body == b"COMMIT\x00" and not self.fired.is_set():
                    self.fired.set()
                    cut.set()
                server.sendall(kind + size + body)
        self._close(client, server)

    def _answers(self, client: socket.socket, server: socket.socket, cut: threading.Event):
        with suppress(OSError):
            while data := server.recv(65536):
                if cut.is_set():  # the answer to that COMMIT: it never arrives
                    break
                client.sendall(data)
        self._close(client, server)

    @staticmethod
    def _close(*socks: socket.socket) -> None:
        for s in socks:
            with suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)
            with suppress(OSError):
                s.close()

    def close(self) -> None:
        self._close(self._listener, *self._sockets)


# -- the fault x step matrix ----------------------------------------------------------------

WHERE = (*STEPS, "commit")  # "commit": persist's COMMIT


@dataclass(frozen=True)
class Case:
    fault: str
    where: str
    fallback: str = "rule"  # llm_fallback

    def __str__(self) -> str:
        return f"{self.fault}@{self.where}" + ("[fallback=fail]" if self.fallback == "fail" else "")


FAULTS = ("provider_timeout", "provider_5xx", "connection_dropped", "commit_answer_lost",
          "run_twice", "run_twice_overlapping")
# Cells where the fault cannot happen, and why.
NOT_APPLICABLE = {
    **{(f, w): "persist calls no model and no embedder (the gate's vectors are staged)"
       for f in ("provider_timeout", "provider_5xx") for w in ("persist", "commit")},
    **{(f, "commit"): "a commit is not delivered: persist is (the persist column)"
       for f in ("run_twice", "run_twice_overlapping")},
    **{("commit_answer_lost", w): "an answer lost after the commit: the commit column"
       for w in STEPS},
}
# The variants of llm_fallback that decide a cell's outcome: with "fail" the extract step's
# model failure ends the receipt, with "rule" it does not.
FALLBACKS = {("provider_timeout", "extract"): ("rule", "fail"),
             ("run_twice_overlapping", "extract"): ("fail",)}
CASES = [Case(f, w, fb) for f in FAULTS for w in WHERE if (f, w) not in NOT_APPLICABLE
         for fb in FALLBACKS.get((f, w), ("rule",))]


def expected_status(case: Case) -> str:
    """What the receipt says after the fault (and the retries that follow it)."""
    if case.fault in ("provider_timeout", "provider_5xx") and case.where == "extract":
        return "llm_failed" if case.fallback == "fail" else "wrote"
    if case.fault in ("provider_timeout", "provider_5xx") and case.where == "gate":
        return "embed_failed"
    return "wrote"


def test_the_matrix_covers_every_fault_at_every_step():
    """Given the faults and the places (each step, persist's commit)
    Then every cell is explored or says why it cannot happen, and none is both."""
    cells = {(c.fault, c.where) for c in CASES}
    assert cells.isdisjoint(NOT_APPLICABLE)
    assert cells | set(NOT_APPLICABLE) == {(f, w) for f in FAULTS for w in WHERE}
    assert len(cells) == 20  # control: the explored cells are not vacuous


# -- the invariant ---------------------------------------------------------------------------


def assert_accounted(db: Database, tenant_id: uuid.UUID, receipt_id: uuid.UUID, *,
                     audit_may_miss: bool = False) -> dict:
    """The receipt is final, and every user message of the request is reflected in memories
    or accounted for by the receipt; no partial batch; nothing written twice. Each finished
    persist has one audit entry (``audit_may_miss``: at most one)."""
    user = [i for i, (role, _) in enumerate(CONVERSATION) if role == "user"]
    with db.connection() as conn:
        r = conn.execute(
            "SELECT status, error, items, not_kept, messages FROM ingest_receipts WHERE id = %s",
            (receipt_id,)).fetchone()
        cited = conn.execute(
            "SELECT id, status::text AS status, version, evidence FROM memories"
            " WHERE tenant_id = %s AND evidence @> %s",
            (tenant_id, Jsonb([{"receipt_id": str(receipt_id)}]))).fetchall()
        staged = conn.execute("SELECT count(*) AS n FROM ingest_candidates WHERE receipt_id = %s",
                              (receipt_id,)).fetchone()["n"]
        persisted = conn.execute(
            "SELECT count(*) AS n FROM ingest_receipts WHERE tenant_id = %s AND steps ? 'persist'",
            (tenant_id,)).fetchone()["n"]
        audited = conn.execute(
            "SELECT count(*) AS n FROM audit_log WHERE tenant_id = %s"
            " AND operation = 'ingest.persist'", (tenant_id,)).fetchone()["n"]
        tenant_rows = conn.execute(
            "SELECT m.id, m.status::text AS status, m.path::text AS path, m.value_hash, m.slot,"
            " m.version,"
            " (SELECT count(*) FROM memory_history h WHERE h.memory_id = m.id) AS changes"
            " FROM memories m WHERE m.tenant_id = %s", (tenant_id,)).fetchall()
    assert r["status"] in TERMINAL, r["status"]  # nothing left half-way

    if r["status"] in FAILED:
        assert r["error"], "a failed receipt says why"
        assert cited == [] and r["items"] == [], "a failed receipt wrote part of its batch"
        assert [m["content"] for m in r["messages"]] == [c for _, c in CONVERSATION], (
            "a failed receipt keeps the conversation")
    else:
        items = r["items"]
        named = {uuid.UUID(i["memory_id"]) for i in items if i["memory_id"]}
        assert {m["id"] for m in cited} == named, "a memory the receipt does not name, or back"
        assert staged == 0 and r["messages"] is None
        evidence = [(e["receipt_id"], e.get("message")) for m in cited for e in m["evidence"]
                    if e.get("receipt_id") == str(receipt_id)]
        assert len(evidence) == len(set(evidence)), "a message's evidence was appended twice"
        reflected = {message for _, message in evidence}
        told = {n["message"]: n["reason"] for n in r["not_kept"]}
        assert all(told.values())
        unaccounted = [i for i in user if i not in reflected and i not in told]
        # An item blocked or skipped has no memory to cite its message: it must say why.
        excused = [i for i in items if i["outcome"] in ("blocked", "skipped") and i["reason"]]
        assert len(unaccounted) <= len(excused), (unaccounted, items, r["not_kept"])

    active = [m for m in tenant_rows if m["status"] == "active"]
    values = Counter((m["path"], bytes(m["value_hash"])) for m in active)
    holders = Counter((m["path"], m["slot"]) for m in active if m["slot"])
    assert max(values.values(), default=1) == 1, "the same memory is active twice"
    assert max(holders.values(), default=1) == 1, "a slot has two active holders"
    for m in tenant_rows:  # each change is one history row: no change was applied twice
        assert m["changes"] == m["version"] - 1, m
    if audit_may_miss:
        assert persisted - 1 <= audited <= persisted, (audited, persisted)
    else:
        assert audited == persisted, (audited, persisted)
    return r


def fingerprint(db: Database, tenant_id: uuid.UUID) -> dict[str, Any]:
    """The tenant's ingest results without ids or times: what a fault-free run and a run
    with a harmless fault must both leave."""
    with db.connection() as conn:
        receipts = conn.execute(
            "SELECT id, status, items, not_kept FROM ingest_receipts WHERE tenant_id = %s"
            " ORDER BY created_at", (tenant_id,)).fetchall()
        order = {str(r["id"]): n for n, r in enumerate(receipts)}
        memories = conn.execute(
            "SELECT id, content, status::text AS status, version, reinforcements, evidence"
            " FROM memories WHERE tenant_id = %s", (tenant_id,)).fetchall()
        content = {m["id"]: m["content"] for m in memories}
        edges = conn.execute(
            "SELECT source_id, target_id, type::text AS type FROM memory_relationships"
            " WHERE tenant_id = %s", (tenant_id,)).fetchall()
        counts = conn.execute(
            "SELECT (SELECT count(*) FROM memory_history WHERE tenant_id = %(t)s) AS history,"
            " (SELECT count(*) FROM tombstones WHERE tenant_id = %(t)s) AS tombstones",
            {"t": tenant_id}).fetchone()
        audit = conn.execute(
            "SELECT operation, outcome, count FROM audit_log WHERE tenant_id = %s",
            (tenant_id,)).fetchall()
    return {
        "receipts": [(r["status"], sorted(i["outcome"] for i in r["items"]),
                      sorted((n["message"], n["reason"]) for n in r["not_kept"]))
                     for r in receipts],
        "memories": sorted(
            (m["content"], m["status"], m["version"], m["reinforcements"],
             sorted((order[e["receipt_id"]], e.get("message") or -1) for e in m["evidence"]))
            for m in memories),
        "edges": sorted((content[e["source_id"]], content[e["target_id"]], e["type"])
                        for e in edges),
        **counts,
        "audit": sorted(Counter((a["operation"], a["outcome"], a["count"]) for a in audit).items()),
    }


# -- running a case ---------------------------------------------------------------------------


def ingest_request(texts, *, wait: bool, at: datetime = T0) -> IngestRequest:
    return IngestRequest(path=PATH, wait=wait, messages=[
        {"role": role, "content": text, "at": (at + timedelta(minutes=i)).isoformat()}
        for i, (role, text) in enumerate(texts)])


def provider_settings(base: Settings, fake: FakeLLM, case: Case) -> dict[str, Any]:
    """The model, the embedder and the similarity bands of the hashing vectors, as settings
    (and, for the state machine, as the step function's STRATA_* environment)."""
    # A held call (the overlapping cases) fails when the test releases it, never by timing out.
    timeout = {"provider_timeout": CLIENT_TIMEOUT_S, "run_twice_overlapping": 60.0}.get(
        case.fault, 5.0)
    # The client retries 5xx (at once: the fake's Retry-After), not a timeout: the fault under
    # test is the timeout, and a retry would only add its back-off.
    retries = 0 if case.fault == "provider_timeout" else 1
    return {
        "llm_base_url": fake.base_url, "llm_model": "fake-model", "llm_api_key": "test-key",
        "llm_timeout_s": timeout, "llm_max_retries": retries, "llm_fallback": case.fallback,
        "embedder": "openai", "embedding_base_url": fake.base_url,
        "embedding_model": "fake-embed", "embedding_api_key": "test-key",
        "embedding_timeout_s": timeout, "embedding_max_retries": retries,
        "embedding_dim": base.embedding_dim, "reinforce_threshold": 0.92,
        "conflict_threshold": 0.55,
    }


class FaultyLambda(Lambda):
    """The state machine test's Lambda stand-in, plus "detach": the handler starts on its own
    thread and keeps running (held in its model, embedder or database call) while the
    Invoke fails with a Lambda service error, so Step Functions delivers the step again."""

    def __init__(self, handler, hold: threading.Event) -> None:
        super().__init__(handler)
        self.hold = hold
        self.detached: list[threading.Thread] = []
        self.answers: list[Any] = []

    def invoke(self, function_name, qualifier, body, headers, response_headers):
        from moto.core.exceptions import JsonRESTError

        event = json.loads(body)
        queue = self.faults.get(event["step"])
        if queue and queue[0] == "detach":
            queue.pop(0)
            thread = threading.Thread(
                target=lambda: self.answers.append(self.handler(event, LambdaContext())),
                name="detached-invocation", daemon=True)
            thread.start()
            self.detached.append(thread)
            assert self.hold.wait(30), "the first delivery never reached its held call"
            self.calls.append((event["step"], "detached"))

            class Lost(JsonRESTError):
                code = 500

            raise Lost("ServiceException", "Lambda was unable to return the response")
        return super().invoke(function_name, qualifier, body, headers, response_headers)


class Redelivering:
    """The local runner with one step delivered twice: a ``Launcher`` that runs the steps as
    ``run_step`` (the step handler's core call) up to ``step``, delivers ``step``'s input
    again -- after it ran, or ``overlapping``, while the first delivery is held on its own
    thread -- and lets ``run_pipeline`` finish the receipt as the local runner does."""

    def __init__(self, step: str, *, overlapping: bool, hold: threading.Event,
                 release: threading.Event) -> None:
        self.step, self.overlapping, self.hold, self.release = step, overlapping, hold, release
        self.reported: str | None = None
        self.stray: str | None = None

    def start(self, rt: IngestRuntime, receipt_id: uuid.UUID, tenant_id: uuid.UUID) -> None:
        payload = {"receipt_id": str(receipt_id), "tenant_id": str(tenant_id)}
        for earlier in STEPS[:STEPS.index(self.step)]:
            payload = run_step(rt, earlier, payload)
        if not self.overlapping:
            run_step(rt, self.step, payload)
            run_step(rt, self.step, payload)  # the same input, delivered again
            self.reported = run_pipeline(rt, receipt_id, tenant_id)
            return None
        answers: list[dict] = []
        first = threading.Thread(target=lambda: answers.append(run_step(rt, self.step, payload)),
                                 name="first-delivery", daemon=True)
        first.start()
        assert self.hold.wait(30), "the first delivery never reached its held call"
        self.reported = run_pipeline(rt, receipt_id, tenant_id)  # while the first still runs
        self.release.set()
        first.join(30)
        self.stray = answers[0]["status"] if answers else None
        return None


@pytest.fixture(scope="module")
def fault_free(module_db, settings) -> dict[str, Any]:
    """Control: the fingerprint the conversation leaves without a fault, through the local
    runner, in a database and against a provider of its own. Fingerprints hold no ids, so
    a faulted run on either runner is compared with it."""
    from fake_openai import serve
    from strata.auth import authenticate, create_tenant

    db = module_db[0]
    with serve() as fake:
        Provider(fake, settings.embedding_dim)
        config = settings.model_copy(update=provider_settings(settings, fake, Case("none", "-")))
        rt = IngestRuntime(db, get_embedder(config), config)
        tenant, key = create_tenant(db, "control")
        caller = authenticate(db, key.key)
        for texts, at in (([("user", t) for t in BASELINE], T0 - timedelta(days=7)),
                          (CONVERSATION, T0)):
            done, _ = ingest(rt, None, caller, ingest_request(texts, wait=True, at=at))
        assert_accounted(db, tenant.id, done.id)
        expected = fingerprint(db, tenant.id)
    status, outcomes, not_kept = expected["receipts"][-1]
    assert status == "wrote" and {"created", "merged"} <= set(outcomes), expected
    assert {(3, "question"), (5, "secret")} <= set(not_kept), expected
    assert [e[2] for e in expected["edges"]] == ["REFINES"], expected  # the judge ran
    return expected


@pytest.fixture
def fake_provider(fake_llm, settings) -> Provider:
    return Provider(fake_llm, settings.embedding_dim)


@dataclass
class Run:
    """One case's run: the receipt, what the runner reported, what fired."""

    receipt_id: uuid.UUID
    reported: Any = None  # local: run_pipeline's answer; state machine: the execution
    stray: Any = None     # the overlapping first delivery's answer


class Harness:
    """One case on one runner: the pipeline's runtime with the case's provider settings and,
    for the state machine, moto executing the ASL with the step handler behind its Tasks."""

    def __init__(self, runner: str, request_, db, settings, fake_llm, provider, case):
        self.runner, self.fixtures, self.db, self.provider = runner, request_, db, provider
        self.overrides = provider_settings(settings, fake_llm, case)
        self.settings = settings.model_copy(update=self.overrides)
        self.rt = IngestRuntime(db, get_embedder(self.settings), self.settings)
        self.hold = threading.Event()
        self.lambda_: FaultyLambda | None = None
        if runner == "state_machine":
            self._state_machine()

    # the state machine under moto, configured as template.yaml deploys the step function
    def _state_machine(self) -> None:
        import boto3
        from moto import mock_aws
        from moto.awslambda_simple.models import LambdaSimpleBackend

        monkeypatch = self.fixtures.getfixturevalue("monkeypatch")
        handler = self.fixtures.getfixturevalue("step_handler")
        for name, value in {"AWS_DEFAULT_REGION": REGION, "AWS_ACCESS_KEY_ID": "testing",
                            "AWS_SECRET_ACCESS_KEY": "testing", **{
                                f"STRATA_{k.upper()}": str(v) for k, v in self.overrides.items()}
                            }.items():
            monkeypatch.setenv(name, value)
        get_settings.cache_clear()
        self.lambda_ = FaultyLambda(handler.handler, self.hold)
        fake = self.lambda_
        monkeypatch.setattr(LambdaSimpleBackend, "invoke", lambda self, *args: fake.invoke(*args))
        mock = mock_aws(config={"stepfunctions": {"execute_state_machine": True},
                                "lambda": {"use_docker": False}})
        mock.start()
        self.fixtures.addfinalizer(mock.stop)
        self.sfn = boto3.client("stepfunctions", region_name=REGION)
        self.arn = self.sfn.create_state_machine(
            name="strata-ingest", definition=substituted_definition(),
            roleArn=f"arn:aws:iam::{ACCOUNT}:role/strata-ingest-sfn", type="STANDARD",
        )["stateMachineArn"]

    def hold_on(self, event: threading.Event) -> None:
        """The first delivery counts as running (the second may start) once ``event`` is set."""
        self.hold = event
        if self.lambda_ is not None:
            self.lambda_.hold = event

    def use_database(self, url: str) -> None:
        """Pipeline connections go to ``url`` (the commit-dropping proxy)."""
        self.rt = IngestRuntime(Database(url, max_size=8), self.rt.embedder, self.settings)
        self.fixtures.addfinalizer(self.rt.db.close)
        if self.runner == "state_machine":
            self.fixtures.getfixturevalue("monkeypatch").setenv("STRATA_DATABASE_URL", url)
            get_settings.cache_clear()
            get_database.cache_clear()

    def baseline(self, caller) -> None:
        local = IngestRuntime(self.db, self.rt.embedder, self.settings)
        receipt, _ = ingest(local, None, caller, ingest_request(
            [("user", t) for t in BASELINE], wait=True, at=T0 - timedelta(days=7)))
        assert receipt.status == "wrote", receipt

    # the request, through the runner
    def run(self, caller, *, twice: str | None = None, overlap: str | None = None) -> Run:
        if self.runner == "local":
            return self._local(caller, twice, overlap)
        return self._sfn(caller, twice, overlap)

    def _local(self, caller, twice, overlap) -> Run:
        if twice is None and overlap is None:
            receipt, _ = ingest(self.rt, None, caller, ingest_request(CONVERSATION, wait=True))
            return Run(receipt.id, receipt.status)
        launcher = Redelivering(twice or overlap, overlapping=overlap is not None,
                                hold=self.hold, release=self.provider.release)
        receipt, _ = ingest(self.rt, launcher, caller, ingest_request(CONVERSATION, wait=False))
        return Run(receipt.id, launcher.reported, launcher.stray)

    def _sfn(self, caller, twice, overlap) -> Run:
        if twice:
            self.lambda_.faults = {twice: ["lost"]}
        if overlap:
            self.lambda_.faults = {overlap: ["detach"]}
        receipt, _ = ingest(self.rt, StepFunctionsLauncher(self.arn), caller,
                            ingest_request(CONVERSATION, wait=False))
        execution = receipt.execution_id
        assert execution
        deadline = time.monotonic() + 120  # a guard against a hang, not a measurement
        while (out := self.sfn.describe_execution(executionArn=execution))["status"] == "RUNNING":
            assert time.monotonic() < deadline, "execution did not finish"
            time.sleep(0.02)
        self.provider.release.set()
        for thread in self.lambda_.detached:
            thread.join(30)
        stray = self.lambda_.answers[0]["status"] if self.lambda_.answers else None
        return Run(receipt.id, out, stray)


RUNNERS = ("local", "state_machine")


@pytest.mark.parametrize("case", CASES, ids=str)
@pytest.mark.parametrize("runner", RUNNERS)
def test_a_fault_leaves_every_message_accounted(runner, case, request, db, settings, fake_llm,
                                                fake_provider, make_tenant, caller_for,
                                                fault_free):
    """Given a tenant holding "User has a dog named Rex", and a model, an embedder and a
    database that work
    When a conversation of seven messages is ingested through the runner with the fault
    injected at its place (and the retries that follow it, where the pipeline retries)
    Then the receipt is final with the status the fault leads to, every user message is
    reflected in memories or accounted for by the receipt, nothing of a failed batch was
    written, and nothing was written twice; a fault that changes nothing leaves exactly what
    the fault-free run of the same conversation leaves (control: ``fault_free``, through the
    local runner, so on the state machine this also holds the two runners to one outcome)."""
    h = Harness(runner, request, db, settings, fake_llm, fake_provider, case)
    tenant = make_tenant("faulted")
    caller = caller_for(tenant.key)
    h.baseline(caller)
    if h.lambda_ is not None:
        h.lambda_.calls.clear()

    if case.fault in ("provider_timeout", "provider_5xx"):
        fake_provider.arm(case.where, case.fault.removeprefix("provider_"))
        out = h.run(caller)
    elif case.fault == "connection_dropped":
        at_commit = case.where == "commit"
        fault = Backend(db.url, tenant.tenant_id, "persist" if at_commit else case.where,
                        at_commit=at_commit)
        try:
            out = h.run(caller)
        finally:
            fault.close()
        assert fault.terminated, "no backend was terminated"
    elif case.fault == "commit_answer_lost":
        fault = CommitAnswerDropper(db.url)
        request.addfinalizer(fault.close)
        h.use_database(fault.url)
        out = h.run(caller)
        assert fault.fired.is_set(), "persist's COMMIT never went through the proxy"
    elif case.fault == "run_twice":
        out = h.run(caller, twice=case.where)
    else:  # run_twice_overlapping: the first delivery is held in its call, then fails
        held = None
        if case.where == "persist":  # no provider call: held inside its transaction
            held = Backend(db.url, tenant.tenant_id, "persist", then="release")
            h.hold_on(held.entered)
        else:
            fake_provider.arm(case.where, "hold")
            h.hold_on(fake_provider.held)
        try:
            out = h.run(caller, overlap=case.where)
        finally:
            if held is not None:
                held.close()
        assert held is None or held.released, "the second delivery never waited on the first"

    receipt = assert_accounted(db, tenant.tenant_id, out.receipt_id,
                               audit_may_miss=case.fault == "commit_answer_lost")
    assert receipt["status"] == expected_status(case), (receipt["status"], receipt["error"])

    # the fault fired where it was meant to
    if case.fault in ("provider_timeout", "provider_5xx"):
        assert fake_provider.faulted and set(fake_provider.faulted) == {case.where}
    if runner == "state_machine":
        # A step that raised (the database went away under it) fails the execution through
        # the Catch; every other fault ends in Done, the receipt holding the outcome.
        # A step that lost its database (before its commit, or after it with the answer
        # lost) is retried on Unavailable, like any other, and the execution succeeds.
        assert out.reported["status"] == "SUCCEEDED", out.reported
        calls = h.lambda_.calls
        if case.fault == "run_twice":
            assert (case.where, "lost") in calls and calls.count((case.where, "ok")) == 1, calls
        if case.fault == "run_twice_overlapping":
            assert (case.where, "detached") in calls, calls
    if case.fault.startswith("run_twice") or case.fault == "connection_dropped":
        # A re-delivery changes nothing: the same memories, edges, history, tombstones,
        # audit entries and receipt outcome as the fault-free run.
        assert fingerprint(db, tenant.tenant_id) == fault_free
    if case.fault == "run_twice_overlapping":
        # The first delivery, finishing last, leaves and reports the outcome it found.
        assert out.stray == "wrote", out.stray
