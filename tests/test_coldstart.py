"""strata.coldstart: a function's init runs without the cyclic collector on Lambda, and what
it built is frozen; anywhere else nothing changes. Each case imports a real handler in a
fresh interpreter: freezing this test process's own heap would keep its garbage forever."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HEALTH = ROOT / "functions" / "health" / "handler.py"

# argv: handler file, "off" to turn the collector off before the import. Prints the
# collections run during the import, the state after it, and the first request's answer.
PROBE = r'''
import gc, importlib.util, json, sys
path, before_import = sys.argv[1:3]
if before_import == "off":
    gc.disable()
def collections():
    return sum(s["collections"] for s in gc.get_stats())
start = collections()
spec = importlib.util.spec_from_file_location("handler_under_test", path)
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
during = collections() - start
state = {"collections": during, "frozen": gc.get_freeze_count(), "enabled": gc.isenabled()}
sys.path.insert(0, sys.argv[3])
import support
from test_handlers import http_event
out = module.handler(http_event("GET", "/healthz"), support.LambdaContext())
state["status"] = out["statusCode"]
state["body"] = json.loads(out["body"])
print(json.dumps(state))
'''


def import_health(*, on_lambda: bool, collector: str = "on") -> dict:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("STRATA_", "LAMBDA_TASK_ROOT", "AWS_LAMBDA_"))}
    env.update({"STRATA_RUNTIME": "aws", "POWERTOOLS_SERVICE_NAME": "health",
                "POWERTOOLS_METRICS_NAMESPACE": "strata", "POWERTOOLS_TRACE_DISABLED": "true",
                "AWS_DEFAULT_REGION": "us-east-1"})
    if on_lambda:
        env["LAMBDA_TASK_ROOT"] = str(HEALTH.parent)
    out = subprocess.run([sys.executable, "-c", PROBE, str(HEALTH), collector, str(ROOT / "tests")],
                         capture_output=True, text=True, cwd=ROOT, env=env, timeout=120)
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


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
    Then init leaves it off and freezes nothing: strata.coldstart turns back on only what it
    turned off. Control: with the collector on, it is on afterwards and init froze."""
    off = import_health(on_lambda=True, collector="off")
    on = import_health(on_lambda=True, collector="on")

    assert off["enabled"] is False and off["frozen"] == 0, off
    assert on["enabled"] is True and on["frozen"] > 20_000, on
    assert off["status"] == on["status"] == 200
