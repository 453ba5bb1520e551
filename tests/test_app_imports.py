"""What building the API app imports: not pydantic.v1 (FastAPI would import it only to refuse v1
models) and not pydantic-settings, each a measurable share of an API function's cold start."""

from __future__ import annotations

import os

import pytest

from support import run_python

ROUTERS = ["health", "memories", "access", "audit", "ingest", "review", "search"]


def test_building_every_api_router_loads_neither_pydantic_v1_nor_pydantic_settings():
    """Given a fresh interpreter
    When the app is built with every router but mcp (the mcp package brings its own)
    Then neither module is loaded (control: a bare FastAPI app with one typed route, in the
    same kind of interpreter, does load pydantic.v1 -- so the check can see it)."""
    bare = run_python(
        "import json, sys\n"
        "from fastapi import FastAPI\nfrom pydantic import BaseModel\n"
        "class Body(BaseModel):\n    query: str\n"
        "app = FastAPI()\n"
        "@app.post('/x')\ndef x(body: Body):\n    return {}\n"
        "print(json.dumps({'v1': 'pydantic.v1' in sys.modules}))")
    assert bare == {"v1": True}

    ours = run_python(
        "import json, sys\n"
        "from strata.api.app import create_app\n"
        f"app = create_app(routers={ROUTERS!r})\n"
        "loaded = {'v1': 'pydantic.v1' in sys.modules, 'settings': 'pydantic_settings' in sys.modules}\n"
        "print(json.dumps({**loaded, 'paths': len(app.openapi()['paths'])}))")
    assert ours["paths"] > 20
    assert ours == {"v1": False, "settings": False, "paths": ours["paths"]}


@pytest.mark.parametrize("where", ["parameter", "response"])
def test_a_v1_model_is_still_refused_once_pydantic_v1_is_loaded(where):
    """Given a strata app (its guard installed) and then pydantic.v1 imported
    When a route takes or returns a v1 model
    Then FastAPI refuses it as before (control: the same route with a v2 model is accepted)."""
    outcome = run_python(
        "import json\n"
        "from fastapi.exceptions import PydanticV1NotSupportedError\n"
        "from pydantic import BaseModel\n"
        "from strata.api.app import create_app\n"
        "app = create_app(routers=['health'])\n"
        "from pydantic import v1\n"
        "class Old(v1.BaseModel):\n    x: int\n"
        "class New(BaseModel):\n    x: int\n"
        "def route(model):\n"
        f"    if {where!r} == 'parameter':\n"
        "        def endpoint(body: model): return {}\n"
        "        app.post('/p')(endpoint)\n"
        "    else:\n"
        "        app.get('/r', response_model=model)(lambda: {'x': 1})\n"
        "result = {}\n"
        "for name, model in (('new', New), ('old', Old)):\n"
        "    try:\n        route(model)\n        result[name] = 'accepted'\n"
        "    except PydanticV1NotSupportedError:\n        result[name] = 'refused'\n"
        "print(json.dumps(result))")
    assert outcome == {"new": "accepted", "old": "refused"}


LAMBDA_ENV = {
    "LAMBDA_TASK_ROOT": "/var/task", "AWS_XRAY_CONTEXT_MISSING": "IGNORE_ERROR",
    "_X_AMZN_TRACE_ID": "Root=1-00000000-000000000000000000000000;Parent=0000000000000000;Sampled=0",
    "AWS_DEFAULT_REGION": "us-east-1", "AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
}
FIRST_AWS_CLIENT = (
    "import json, sys\n"
    "sys.path.insert(0, 'functions/ingest')\n"
    "import handler\n"
    "before = 'botocore.client' in sys.modules\n"
    "from strata.foundation import aws\n"
    "aws.client('stepfunctions')\n"
    "from aws_xray_sdk.core import patcher\n"
    "import botocore.client\n"
    "wrapped = type(botocore.client.BaseClient._make_api_call).__name__\n"
    "print(json.dumps({'botocore_at_import': before,"
    " 'patched': 'botocore' in patcher._PATCHED_MODULES, 'wrapped': 'Wrapper' in wrapped}))")


@pytest.mark.parametrize("on_lambda", [True, False])
def test_botocore_loads_with_the_first_aws_client_and_is_traced_on_lambda(on_lambda, monkeypatch):
    """Given the ingest function (it starts the state machine) imported as Lambda would
    Then botocore's client machinery is not loaded by the import (Powertools imports only the
    bare package), and the first AWS client patches it for X-Ray (control: outside Lambda
    tracing is off, nothing is patched -- and the X-Ray recorder's sampling loads botocore)."""
    env = {k: v for k, v in os.environ.items() if k not in LAMBDA_ENV}
    env.update(LAMBDA_ENV if on_lambda else {k: LAMBDA_ENV[k] for k in (
        "AWS_DEFAULT_REGION", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY")})
    outcome = run_python(FIRST_AWS_CLIENT, env=env)
    assert outcome == {"botocore_at_import": not on_lambda, "patched": on_lambda, "wrapped": on_lambda}
