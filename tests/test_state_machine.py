"""The ingest state machine (infra/statemachines/ingest.asl.json) over the real step code.

The ASL is executed by moto's Step Functions interpreter (LocalStack's); its Lambda Tasks
are dispatched in-process to the real ``functions/ingest_step`` handler, which runs the
real pipeline against this test's PostgreSQL database. Lambda-side faults (throttling, a
timed-out or lost invocation) are injected at the Lambda API boundary, where AWS produces
them; step failures come from the database itself.
"""

from __future__ import annotations

import json
import re
import sys
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

import pytest

from strata.db import get_database
from strata.foundation.config import get_settings
from strata.ingest.models import IngestRequest, Message
from strata.ingest.pipeline import STEPS
from strata.ingest.receipts import open_receipt

import support

ROOT = Path(__file__).resolve().parents[1]
ASL_PATH = ROOT / "infra" / "statemachines" / "ingest.asl.json"

REGION = "us-east-1"
ACCOUNT = "123456789012"
STEP_FUNCTION_NAME = "strata-ingest-step"
STEP_FUNCTION_ARN = f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:{STEP_FUNCTION_NAME}"
# What template.yaml's DefinitionSubstitutions provide at deploy time.
SUBSTITUTIONS = {"IngestStepFunctionArn": STEP_FUNCTION_ARN}

PAYLOAD_KEYS = {"receipt_id", "tenant_id", "status", "error"}


def load_asl() -> dict:
    return json.loads(ASL_PATH.read_text(encoding="utf-8"))


def substituted_definition() -> str:
    """The definition as CloudFormation hands it to Step Functions: ${Name} replaced."""
    text = ASL_PATH.read_text(encoding="utf-8")
    placeholders = set(re.findall(r"\$\{([A-Za-z0-9_]+)\}", text))
    assert placeholders == set(SUBSTITUTIONS), placeholders
    for name, value in SUBSTITUTIONS.items():
        text = text.replace("${" + name + "}", value)
    return text


def main_path(asl: dict) -> list[tuple[str, dict]]:
    """The states visited when nothing fails: Next from StartAt, never a Catch."""
    path, name, seen = [], asl["StartAt"], set()
    while name is not None:
        assert name not in seen, f"loop at {name}"
        seen.add(name)
        state = asl["States"][name]
        path.append((name, state))
        if state["Type"] in ("Succeed", "Fail") or state.get("End"):
            break
        name = state["Next"]
    return path


def step_of(state: dict) -> str:
    return state["Parameters"]["Payload"]["step"]


# --------------------------------------------------------------------------------------
# the definition itself
# --------------------------------------------------------------------------------------


def test_asl_tasks_are_the_pipeline_steps_in_order():
    """Given the ASL
    When its states are followed from StartAt along Next (the success path)
    Then its Tasks are exactly pipeline.STEPS, in order, and the path ends in Succeed."""
    path = main_path(load_asl())
    tasks = [step_of(s) for _, s in path if s["Type"] == "Task"]
    assert tasks == list(STEPS)
    assert path[-1][1]["Type"] == "Succeed"
    # control: the walk sees every non-failure state, so a Task added off-path is noticed
    asl = load_asl()
    off_path = set(asl["States"]) - {n for n, _ in path}
    assert off_path == {"RecordFailure", "Failed"}


def test_asl_error_handling():
    """Given the ASL
    Then every step Task catches States.ALL into RecordFailure, the model-calling steps retry
    throttling and timeouts with full jitter, RecordFailure passes only the error name,
    and the step results are ids and status only."""
    asl = load_asl()
    retry_on = {"Lambda.TooManyRequestsException", "Lambda.ServiceException",
                "Sandbox.Timedout", "States.Timeout"}
    for name, state in main_path(asl):
        if state["Type"] != "Task":
            continue
        assert state["Catch"] == [
            {"ErrorEquals": ["States.ALL"], "ResultPath": "$.error", "Next": "RecordFailure"}
        ], name
        assert state["Parameters"]["FunctionName"] == "${IngestStepFunctionArn}", name
        assert set(state["Parameters"]["Payload"]) == {"step", "receipt_id.$", "tenant_id.$"}
        assert set(state["ResultSelector"]) == {"receipt_id.$", "tenant_id.$", "status.$"}
        errors = {e for r in state["Retry"] for e in r["ErrorEquals"]}
        assert "Lambda.TooManyRequestsException" in errors, name
        assert "States.ALL" not in errors, f"{name}: a failing step must reach the Catch"
        for r in state["Retry"]:
            assert (r["JitterStrategy"], r["BackoffRate"]) == ("FULL", 2), name
            assert 2 <= r["MaxAttempts"] <= 4, name
        if step_of(state) in ("extract", "gate", "conflict"):
            assert retry_on <= errors, f"{name} retries {sorted(errors)}"
    record = asl["States"]["RecordFailure"]
    assert record["Parameters"]["Payload"] == {
        "step": "fail", "receipt_id.$": "$.receipt_id", "tenant_id.$": "$.tenant_id",
        "error.$": "$.error.Error",
    }
    assert "Catch" not in record  # a failing failure handler must not loop
    assert asl["States"][record["Next"]]["Type"] == "Fail"


# --------------------------------------------------------------------------------------
# executing it
# --------------------------------------------------------------------------------------


LambdaContext = partial(support.LambdaContext, STEP_FUNCTION_NAME)


@dataclass
class Lambda:
    """moto's Lambda invoke, answered by the real step handler. ``faults[step]`` is a list
    of what happens to that step's next invocations: "throttle" (Lambda refuses it, the
    handler never runs), "timeout" (the handler runs, then Lambda reports Sandbox.Timedout),
    "lost" (the handler runs, then the Invoke call fails with a Lambda service error)."""

    handler: Callable
    faults: dict[str, list[str]] = field(default_factory=dict)
    calls: list[tuple[str, str]] = field(default_factory=list)

    def invoke(self, function_name, qualifier, body, headers, response_headers):
        from moto.core.exceptions import JsonRESTError

        class Throttled(JsonRESTError):
            code = 429

        class ServiceError(JsonRESTError):
            code = 500

        assert function_name.rsplit(":", 1)[-1] == STEP_FUNCTION_NAME, function_name
        event = json.loads(body)
        step = event["step"]
        queue = self.faults.get(step)
        fault = queue.pop(0) if queue else None
        if fault == "throttle":
            self.calls.append((step, "throttled"))
            raise Throttled("TooManyRequestsException", "Rate exceeded")
        try:
            result = self.handler(event, LambdaContext())
        except Exception as exc:  # what the python3.11 runtime returns for an unhandled error
            self.calls.append((step, type(exc).__name__))
            response_headers["x-amz-function-error"] = "Unhandled"
            return json.dumps({"errorType": type(exc).__name__, "errorMessage": str(exc),
                               "stackTrace": []}).encode()
        self.calls.append((step, fault or "ok"))
        if fault == "timeout":
            response_headers["x-amz-function-error"] = "Unhandled"
            return json.dumps({"errorType": "Sandbox.Timedout",
                               "errorMessage": "Task timed out after 300.00 seconds"}).encode()
        if fault == "lost":
            raise ServiceError("ServiceException", "Lambda was unable to return the response")
        return json.dumps(result).encode()


@pytest.fixture
def step_handler(db, monkeypatch):
    """functions/ingest_step/handler.py, imported fresh and configured as on Lambda."""
    monkeypatch.setenv("STRATA_DATABASE_URL", db.url)
    monkeypatch.setenv("STRATA_RUNTIME", "aws")
    get_settings.cache_clear()
    get_database.cache_clear()
    yield support.load_module("handler_ingest_step", ROOT / "functions" / "ingest_step" / "handler.py")
    get_database().close()
    get_settings.cache_clear()
    get_database.cache_clear()
    sys.modules.pop("handler_ingest_step", None)


@pytest.fixture
def aws(step_handler, monkeypatch):
    """moto with the ASL really executed; yields (stepfunctions client, state machine ARN,
    the Lambda stand-in)."""
    import boto3
    from moto import mock_aws
    from moto.awslambda_simple.models import LambdaSimpleBackend

    for name, value in {"AWS_DEFAULT_REGION": REGION, "AWS_ACCESS_KEY_ID": "testing",
                        "AWS_SECRET_ACCESS_KEY": "testing"}.items():
        monkeypatch.setenv(name, value)
    fake = Lambda(step_handler.handler)
    monkeypatch.setattr(
        LambdaSimpleBackend, "invoke",
        lambda self, *args: fake.invoke(*args),
    )
    config = {"stepfunctions": {"execute_state_machine": True}, "lambda": {"use_docker": False}}
    with mock_aws(config=config):
        sfn = boto3.client("stepfunctions", region_name=REGION)
        arn = sfn.create_state_machine(
            name="strata-ingest", definition=substituted_definition(),
            roleArn=f"arn:aws:iam::{ACCOUNT}:role/strata-ingest-sfn", type="STANDARD",
        )["stateMachineArn"]
        yield sfn, arn, fake


def open_ingest(db, caller, *texts: str) -> uuid.UUID:
    req = IngestRequest(messages=[Message(role="user", content=t) for t in texts])
    receipt, created = open_receipt(db, caller, "agents.chat", req)
    assert created
    return receipt.id


def run(sfn, arn: str, receipt_id: uuid.UUID, tenant_id: uuid.UUID, *, name: str | None = None,
        timeout: float = 60) -> dict:
    """Start an execution as StepFunctionsLauncher does and wait for it to finish."""
    execution = sfn.start_execution(
        stateMachineArn=arn, name=name or str(receipt_id),
        input=json.dumps({"receipt_id": str(receipt_id), "tenant_id": str(tenant_id)}),
    )["executionArn"]
    deadline = time.monotonic() + timeout
    while True:
        out = sfn.describe_execution(executionArn=execution)
        if out["status"] != "RUNNING":
            return out
        assert time.monotonic() < deadline, "execution did not finish"
        time.sleep(0.05)


def entered_states(sfn, execution_arn: str) -> list[str]:
    events = sfn.get_execution_history(executionArn=execution_arn, maxResults=1000)["events"]
    return [e["stateEnteredEventDetails"]["name"] for e in events
            if "stateEnteredEventDetails" in e]


def state_payloads(sfn, execution_arn: str) -> list[dict]:
    events = sfn.get_execution_history(executionArn=execution_arn, maxResults=1000)["events"]
    out = []
    for e in events:
        for key, attr in (("stateEnteredEventDetails", "input"),
                          ("stateExitedEventDetails", "output")):
            if key in e and e[key].get(attr):
                out.append(json.loads(e[key][attr]))
    return out


def receipt_row(db, receipt_id: uuid.UUID) -> dict:
    with db.connection() as conn:
        return conn.execute(
            "SELECT status, error, items, counts, steps, updated_at FROM ingest_receipts"
            " WHERE id = %s", (receipt_id,),
        ).fetchone()


def memories_of(db, tenant_id: uuid.UUID) -> list[dict]:
    with db.connection() as conn:
        return conn.execute(
            "SELECT id, content, status::text AS status FROM memories WHERE tenant_id = %s"
            " ORDER BY recorded_at", (tenant_id,),
        ).fetchall()


def test_execution_runs_the_pipeline_into_the_database(aws, db, tenant, caller_for):
    """Given a receipt opened for "I prefer MongoDB"
    When the state machine runs on it (execution named after the receipt)
    Then it succeeds through Extract, Gate, Conflict and Persist, each step invoked once,
    the payload between states is ids and status only, the receipt says wrote with a
    created item, and that memory is active in the database."""
    sfn, arn, fake = aws
    caller = caller_for(tenant.key)
    assert memories_of(db, tenant.tenant_id) == []  # control: nothing before the run
    receipt_id = open_ingest(db, caller, "I prefer MongoDB for new projects.")

    out = run(sfn, arn, receipt_id, tenant.tenant_id)

    assert out["status"] == "SUCCEEDED", out
    assert json.loads(out["output"]) == {
        "receipt_id": str(receipt_id), "tenant_id": str(tenant.tenant_id), "status": "wrote",
    }
    assert entered_states(sfn, out["executionArn"]) == ["Extract", "Gate", "Conflict",
                                                        "Persist", "Done"]
    assert fake.calls == [(s, "ok") for s in STEPS]
    for payload in state_payloads(sfn, out["executionArn"]):
        assert set(payload) <= PAYLOAD_KEYS, payload
        assert len(json.dumps(payload)) < 512

    row = receipt_row(db, receipt_id)
    assert row["status"] == "wrote" and row["error"] is None
    assert set(row["steps"]) == set(STEPS)
    created = [i for i in row["items"] if i["outcome"] == "created"]
    assert created, row["items"]
    stored = {m["id"]: m for m in memories_of(db, tenant.tenant_id)}
    for item in created:
        memory = stored[uuid.UUID(item["memory_id"])]
        assert memory["status"] == "active"
    assert any("mongodb" in m["content"].lower() for m in stored.values())
    # the persist step committed each write's event with it (issue 40's outbox)
    assert events_of(db, tenant.tenant_id) == [
        ("created", uuid.UUID(i["memory_id"]), "ingest.persist") for i in created]


def events_of(db, tenant_id) -> list[tuple[str, uuid.UUID, str]]:
    with db.connection() as conn:
        return [(r["type"], r["memory_id"], r["cause"]) for r in conn.execute(
            "SELECT type, memory_id, cause FROM events WHERE tenant_id = %s ORDER BY seq",
            (tenant_id,)).fetchall()]


def test_failing_step_is_caught_and_recorded_on_the_receipt(aws, db, tenant, caller_for):
    """Given the database refuses new memories (a trigger raising in Persist's transaction)
    When the state machine runs on a receipt
    Then Persist's error reaches the Catch, RecordFailure marks the receipt db_write_failed
    with the error name (never the message), nothing is written, and the execution FAILED
    with that error. Control: once the database accepts writes, a new receipt writes."""
    sfn, arn, fake = aws
    caller = caller_for(tenant.key)
    with db.transaction() as cur:
        cur.execute("""
            CREATE FUNCTION refuse_writes() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN RAISE EXCEPTION 'disk full on host db-secret-host.internal'; END $$;
            CREATE TRIGGER refuse_writes BEFORE INSERT ON memories
                FOR EACH ROW EXECUTE FUNCTION refuse_writes();
        """)
    receipt_id = open_ingest(db, caller, "I prefer MongoDB for new projects.")

    out = run(sfn, arn, receipt_id, tenant.tenant_id)

    assert out["status"] == "FAILED", out
    assert out.get("error") == "RaiseException"
    assert entered_states(sfn, out["executionArn"]) == [
        "Extract", "Gate", "Conflict", "Persist", "RecordFailure", "Failed"]
    # not retried: a database error is not a Lambda service error
    assert fake.calls == [("extract", "ok"), ("gate", "ok"), ("conflict", "ok"),
                          ("persist", "RaiseException"), ("fail", "ok")]
    row = receipt_row(db, receipt_id)
    assert row["status"] == "db_write_failed"
    assert row["error"] == "pipeline step failed (RaiseException)"
    assert "db-secret-host" not in row["error"]
    assert row["items"] == [] and "persist" not in row["steps"]
    assert memories_of(db, tenant.tenant_id) == []

    # control: the same pipeline writes once the database accepts it
    with db.transaction() as cur:
        cur.execute("DROP TRIGGER refuse_writes ON memories")
    second = open_ingest(db, caller, "I prefer MongoDB for new projects.")
    out = run(sfn, arn, second, tenant.tenant_id)
    assert out["status"] == "SUCCEEDED", out
    assert receipt_row(db, second)["status"] == "wrote"
    assert len(memories_of(db, tenant.tenant_id)) >= 1


def test_misconfigured_gate_fails_into_the_catch(aws, db, tenant, caller_for, monkeypatch):
    """Given a step function deployed with an embedding dimension the database does not have
    When the state machine runs
    Then Gate fails (the database rejects the vectors), is not retried, the receipt records
    db_write_failed with the error name, and Conflict and Persist never run."""
    sfn, arn, fake = aws
    caller = caller_for(tenant.key)
    monkeypatch.setenv("STRATA_EMBEDDING_DIM", "64")  # the database holds vector(384)
    get_settings.cache_clear()
    receipt_id = open_ingest(db, caller, "I prefer MongoDB for new projects.")

    out = run(sfn, arn, receipt_id, tenant.tenant_id)

    assert out["status"] == "FAILED", out
    [(step, error)] = [c for c in fake.calls if c[1] != "ok"]
    assert step == "gate"
    assert out.get("error") == error
    assert [c[0] for c in fake.calls] == ["extract", "gate", "fail"]
    row = receipt_row(db, receipt_id)
    assert row["status"] == "db_write_failed"
    assert row["error"] == f"pipeline step failed ({error})"
    assert memories_of(db, tenant.tenant_id) == []


def test_retried_steps_and_a_replayed_execution_write_nothing_twice(aws, db, tenant, caller_for):
    """Given Extract throttled once, Extract's first run reported as timed out, and Persist's
    first answer lost after it committed
    When the state machine runs
    Then Step Functions retries each (Extract and Persist run twice), the execution succeeds,
    and the receipt and memories are those of a single run; running the same input again
    in a new execution writes nothing and leaves the receipt as it was."""
    sfn, arn, fake = aws
    caller = caller_for(tenant.key)
    fake.faults = {"extract": ["throttle", "timeout"], "persist": ["lost"]}
    receipt_id = open_ingest(db, caller, "I prefer MongoDB for new projects.")

    out = run(sfn, arn, receipt_id, tenant.tenant_id)

    assert out["status"] == "SUCCEEDED", out
    assert fake.calls == [
        ("extract", "throttled"), ("extract", "timeout"), ("extract", "ok"),
        ("gate", "ok"), ("conflict", "ok"), ("persist", "lost"), ("persist", "ok"),
    ]
    row = receipt_row(db, receipt_id)
    assert row["status"] == "wrote"
    created = [i for i in row["items"] if i["outcome"] == "created"]
    memories = memories_of(db, tenant.tenant_id)
    # control: the run did write, exactly one memory per created item
    assert created and len(memories) == len(created)
    assert {uuid.UUID(i["memory_id"]) for i in created} == {m["id"] for m in memories}
    events = events_of(db, tenant.tenant_id)
    assert sorted(e[1] for e in events) == sorted(m["id"] for m in memories)  # one per write

    fake.calls.clear()
    again = run(sfn, arn, receipt_id, tenant.tenant_id, name=f"{receipt_id}-replay")

    assert again["status"] == "SUCCEEDED", again
    assert json.loads(again["output"])["status"] == "wrote"
    assert [c[0] for c in fake.calls] == list(STEPS)  # every step ran, and did nothing
    assert memories_of(db, tenant.tenant_id) == memories
    assert receipt_row(db, receipt_id) == row
    assert events_of(db, tenant.tenant_id) == events  # the replay wrote no event either


def test_fail_step_records_only_a_well_formed_error_name(step_handler, db, tenant, caller_for):
    """Given a receipt still running
    When the fail step is invoked with an error 'name' that carries text
    Then the receipt records a neutral name, never that text; a receipt that already
    finished is left as it was."""
    caller = caller_for(tenant.key)
    receipt_id = open_ingest(db, caller, "I prefer MongoDB for new projects.")
    ids = {"receipt_id": str(receipt_id), "tenant_id": str(tenant.tenant_id)}
    step_handler.handler({"step": "fail", **ids, "error": "password=hunter2 at host x"},
                         LambdaContext())
    row = receipt_row(db, receipt_id)
    assert (row["status"], row["error"]) == ("db_write_failed", "pipeline step failed (Unknown)")

    # control: a finished receipt keeps its outcome
    done = open_ingest(db, caller, "I prefer PostgreSQL for new projects.")
    done_ids = {"receipt_id": str(done), "tenant_id": str(tenant.tenant_id)}
    for step in STEPS:
        step_handler.handler({"step": step, **done_ids}, LambdaContext())
    before = receipt_row(db, done)
    assert before["status"] == "wrote"
    step_handler.handler({"step": "fail", **done_ids, "error": "States.Timeout"}, LambdaContext())
    assert receipt_row(db, done) == before


@pytest.fixture
def ingest_function(aws, monkeypatch):
    """functions/ingest/handler.py configured as template.yaml deploys it: the state
    machine's ARN in STRATA_INGEST_STATE_MACHINE_ARN (moto's, executing the real ASL)."""
    from test_handlers import _reset_logging

    _, arn, _ = aws
    monkeypatch.setenv("STRATA_INGEST_STATE_MACHINE_ARN", arn)
    get_settings.cache_clear()
    yield support.load_module("handler_ingest_api", ROOT / "functions" / "ingest" / "handler.py").handler
    _reset_logging()
    sys.modules.pop("handler_ingest_api", None)


def test_ingest_api_function_runs_the_state_machine_end_to_end(aws, ingest_function, db, tenant):
    """Given the ingest API function wired to the state machine
    When API Gateway sends POST /v1/ingest with a conversation, and the same request again
    with its idempotency key
    Then the function answers 202 with the queued receipt, one execution named after the
    receipt runs Extract..Persist through the real step handler, GET /v1/ingest/{id} then
    says wrote, and the replay returns the same receipt without starting a second execution."""
    from test_handlers import http_event, invoke

    sfn, arn, fake = aws
    body = {"path": "agents.chat", "idempotency_key": "conv-42",
            "messages": [{"role": "user", "content": "I prefer MongoDB for new projects."}]}
    status, receipt = invoke(ingest_function, http_event("POST", "/v1/ingest", key=tenant.key,
                                                         body=body))
    assert status == 202, receipt
    assert receipt["status"] in ("queued", "running")

    [execution] = sfn.list_executions(stateMachineArn=arn)["executions"]
    assert execution["name"] == receipt["id"]
    deadline = time.monotonic() + 60
    while sfn.describe_execution(executionArn=execution["executionArn"])["status"] == "RUNNING":
        assert time.monotonic() < deadline, "execution did not finish"
        time.sleep(0.05)
    out = sfn.describe_execution(executionArn=execution["executionArn"])
    assert out["status"] == "SUCCEEDED", out
    assert fake.calls == [(s, "ok") for s in STEPS]

    status, final = invoke(ingest_function, http_event("GET", f"/v1/ingest/{receipt['id']}",
                                                       key=tenant.key))
    assert (status, final["status"]) == (200, "wrote"), final
    assert any(i["outcome"] == "created" for i in final["items"])

    status, replay = invoke(ingest_function, http_event("POST", "/v1/ingest", key=tenant.key,
                                                        body=body))
    assert status in (200, 202) and replay["id"] == receipt["id"]
    assert len(sfn.list_executions(stateMachineArn=arn)["executions"]) == 1
    assert len(memories_of(db, tenant.tenant_id)) == len(
        [i for i in final["items"] if i["outcome"] == "created"])
