"""strata.foundation.coldstart: a function's init runs without the cyclic collector on Lambda, and what
it built is frozen; anywhere else nothing changes. Each case imports a real handler in a
fresh interpreter: freezing this test process's own heap would keep its garbage forever."""

from __future__ import annotations

import json
import os
from pathlib import Path

import support

ROOT = Path(__file__).resolve().parents[1]

# argv: handler file, "off" to turn the collector off before the import, the tests folder, and
# the requests to send after it ([method, path, key, body], as API Gateway events). Prints the
# collections run during the import, the state after it, and each answer.
PROBE = r'''
import gc, json, sys
path, before_import, tests, requests = sys.argv[1:5]
sys.path.insert(0, tests)
import support
if before_import == "off":
    gc.disable()
def collections():
    return sum(s["collections"] for s in gc.get_stats())
start = collections()
module = support.load_module("handler_under_test", path)
during = collections() - start
state = {"collections": during, "frozen": gc.get_freeze_count(), "enabled": gc.isenabled()}
from test_handlers import http_event
state["answers"] = []
for method, route, key, body in json.loads(requests):
    out = module.handler(http_event(method, route, key=key, body=body), support.LambdaContext())
    state["answers"].append([out["statusCode"], json.loads(out["body"])])
print(json.dumps(state))
'''


def import_handler(function: str, requests: list, *, on_lambda: bool, collector: str = "on",
                   database_url: str | None = None) -> dict:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("STRATA_", "LAMBDA_TASK_ROOT", "AWS_LAMBDA_"))}
    env.update({"STRATA_RUNTIME": "aws", "POWERTOOLS_SERVICE_NAME": function,
                "POWERTOOLS_METRICS_NAMESPACE": "strata", "POWERTOOLS_TRACE_DISABLED": "true",
                "AWS_DEFAULT_REGION": "us-east-1"})
    if database_url:
        env["STRATA_DATABASE_URL"] = database_url
    path = ROOT / "functions" / function / "handler.py"
    if on_lambda:
        env["LAMBDA_TASK_ROOT"] = str(path.parent)
    return support.run_python(PROBE, str(path), collector, str(ROOT / "tests"), json.dumps(requests),
                              env=env)


def import_health(*, on_lambda: bool, collector: str = "on") -> dict:
    state = import_handler("health", [["GET", "/healthz", None, None]],
                           on_lambda=on_lambda, collector=collector)
    [[state["status"], state["body"]]] = state.pop("answers")
    return state


def test_on_lambda_init_runs_without_the_collector_and_freezes_what_it_built():
    """Given the health function imported as the Lambda runtime imports it
    Then its init ran (almost) no collection, left tens of thousands of objects frozen, and
    the collector on; its first request answers 200.
    Control: the same import outside Lambda ran the collector over a hundred times and froze
    nothing, and answers the same."""
    lam = import_health(on_lambda=True)
    plain = import_health(on_lambda=False)

    assert plain["collections"] > 50 and plain["frozen"] == 0 and plain["enabled"], plain
    assert lam["collections"] <= 2, lam
    assert lam["frozen"] > 20_000 and lam["enabled"], lam
    for state in (lam, plain):
        assert state["status"] == 200 and state["body"]["status"] == "ok", state


def test_a_collector_already_off_stays_off():
    """Given a process whose collector was turned off before the handler's import (on Lambda)
    Then init leaves it off and freezes nothing: strata.foundation.coldstart turns back on only what it
    turned off. Control: with the collector on, it is on afterwards and init froze."""
    off = import_health(on_lambda=True, collector="off")
    on = import_health(on_lambda=True, collector="on")

    assert off["enabled"] is False and off["frozen"] == 0, off
    assert on["enabled"] is True and on["frozen"] > 20_000, on
    assert off["status"] == on["status"] == 200


def test_a_frozen_function_reads_and_writes_the_database(db, tenant):
    """Given the memories function imported as on Lambda (init frozen), pointing at a real
    database
    When a memory is written and the memories listed through API Gateway events
    Then both answer as in an unfrozen process: the pool, the embedder and the routes work
    after init with the collector back on. Control: the same requests (another memory)
    outside Lambda, nothing frozen."""
    def requests(content: str) -> list:
        return [["POST", "/v1/memories", tenant.key,
                 {"memories": [{"content": content, "path": "agents.release"}]}],
                ["GET", "/v1/memories", tenant.key, None]]

    lam = import_handler("memories", requests("Deploys freeze on Fridays"), on_lambda=True,
                         database_url=db.url)
    plain = import_handler("memories", requests("Releases ship on Tuesdays"), on_lambda=False,
                           database_url=db.url)

    assert lam["frozen"] > 20_000 and lam["enabled"] and plain["frozen"] == 0, (lam, plain)
    for state in (lam, plain):
        (created, wrote), (listed, _) = state["answers"]
        assert (created, wrote["results"][0]["status"]) == (200, "inserted"), state
        assert listed == 200, state
    # The two processes wrote to one database: the frozen one listed its memory, the second
    # lists both.
    assert [m["content"] for m in lam["answers"][1][1]["items"]] == ["Deploys freeze on Fridays"]
    assert {m["content"] for m in plain["answers"][1][1]["items"]} == {
        "Deploys freeze on Fridays", "Releases ship on Tuesdays"}
