"""Cold-start benchmark of the Lambda functions: import time in a fresh interpreter, peak
memory, and code size, beside a bare FastAPI+Mangum app and a bare Powertools handler
measured in the same run.

The functions are read from template.yaml at run time (every AWS::Serverless::Function, its
CodeUri and Handler with Globals as fallback), plus any functions/*/handler.py the template
does not reference yet (reported with "in_template": false). Each sample is a new
interpreter that imports one handler module and reports the import's wall time and
ru_maxrss; samples are interleaved across targets so load on a shared machine falls on all
of them alike, and the median of --samples (9) is reported with the spread.

Where no AWS is needed, each sample then makes one invocation against a throwaway migrated
database (embedded PostgreSQL, or STRATA_DATABASE_URL) with a real key: the authorizer gets
an API Gateway REQUEST authorizer event, HTTP API functions a v2 event for one of their
routes. That first invocation is where lazily imported code (the authorizer's database stack)
shows up, so it is reported separately from the import. Other functions are import-only.

The environment is Lambda's as far as the X-Ray SDK can tell (LAMBDA_TASK_ROOT and an
unsampled _X_AMZN_TRACE_ID): the Tracer every handler builds is then enabled and patches what
it patches on Lambda. Outside Lambda the SDK's recorder sets up centralized sampling instead,
which imports botocore: 0.25-0.5 s that no Lambda cold start pays.

Targets (issue 7): the authorizer's import within 1.2x the bare Powertools handler (Logger,
Tracer and Metrics, the three the issue asks of every function); API functions within 1.5x bare
FastAPI+Mangum (one GET route). Reported beside them, not targets: ``bare_api_function``
(the Powertools trio and one route with a typed body) and ``bare_db_function``, the floor of
any API function of strata's (the GET app, the Powertools trio and the PostgreSQL driver,
before any code of strata's), and ``bare_fastapi_mangum_frozen``, the bare app with the init
every strata function has (strata.foundation.coldstart). Whether a target is met is judged on the paired ratio: each round samples a
function right after its baseline and divides the two, and the median of those ratios is
compared with the target. This machine's slow spells last seconds and move a median of 9 by
20 % or more; a pair falls into the same spell. The ratio of medians is reported beside it.

Everything is measured twice: from this checkout's site-packages, and -- when `make build`
has run -- as Lambda loads it (``from_built_layers``): each function from its built code and
layers, the baselines from the core layer (it has FastAPI, Mangum and Powertools), all with
no site-packages (-S), nothing written (-B: /opt is read-only, so only the bytecode a layer
ships is used) and boto3 from a stand-in for the runtime's. Targets are judged on the
second when there is one.
Layers, from the last `make build` in .aws-sam/build: the core layer (the one
every function has) under 60 MB unzipped; the MCP layer and each function's total (its code
and its layers) are reported beside it.

Usage: python eval/bench_coldstart.py [--samples 9] [--no-invoke]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
TEMPLATE = ROOT / "template.yaml"
BUILD = ROOT / ".aws-sam" / "build"
TARGETS = {"authorizer": ("bare_powertools", 1.2), "api": ("bare_fastapi_mangum", 1.5)}
# Paired with the API functions' baseline and reported, not judged: the issue gives MCP a
# function of its own because the mcp package is slow to import.
UNTARGETED = {"mcp": "none: its own function because the mcp package is slow to import (issue 7)"}
CORE_LAYER, CORE_LAYER_TARGET_MB = "layers/strata", 60
# What Lambda sets for an invocation with active tracing; Sampled=0: nothing is recorded.
LAMBDA_ENV = {"LAMBDA_TASK_ROOT": "/var/task",
              "_X_AMZN_TRACE_ID": "Root=1-00000000-000000000000000000000000;Parent=0000000000000000;Sampled=0",
              "AWS_XRAY_CONTEXT_MISSING": "IGNORE_ERROR"}

BARE_POWERTOOLS = '''
from aws_lambda_powertools import Logger, Metrics, Tracer
from aws_lambda_powertools.logging import correlation_paths

log = Logger()
tracer = Tracer(auto_patch=False)
metrics = Metrics(namespace="bare")


@log.inject_lambda_context(correlation_id_path=correlation_paths.API_GATEWAY_HTTP)
@metrics.log_metrics(capture_cold_start_metric=True)
@tracer.capture_lambda_handler(capture_response=False)
def handler(event, context):
    return {"isAuthorized": False}
'''

BARE_FASTAPI_MANGUM = '''
from fastapi import FastAPI
from mangum import Mangum

app = FastAPI()


@app.get("/healthz")
def healthz():
    return {"status": "ok"}


handler = Mangum(app, lifespan="off")
'''

# Reported beside the target's baseline, not a target: the bare app with the init every strata
# function has (strata.foundation.coldstart: the cyclic collector off during the import, what it built
# frozen), so strata's functions can also be read against a bare app given the same treatment.
BARE_FASTAPI_MANGUM_FROZEN = "import gc\ngc.disable()\n" + BARE_FASTAPI_MANGUM + "gc.freeze()\ngc.enable()\n"


def api_function(imports: str, routes: str) -> str:
    """A bare API function's handler source: ``imports``, the Powertools trio the issue asks of
    every function, a FastAPI app with ``routes`` under Mangum, and the handler decorated as
    strata's are."""
    return f'''
{imports}
from aws_lambda_powertools import Logger, Metrics, Tracer
from aws_lambda_powertools.logging import correlation_paths
from fastapi import FastAPI
from mangum import Mangum

log = Logger()
tracer = Tracer(auto_patch=False)
metrics = Metrics(namespace="bare")
app = FastAPI()
{routes}

asgi = Mangum(app, lifespan="off")


@log.inject_lambda_context(correlation_id_path=correlation_paths.API_GATEWAY_HTTP)
@metrics.log_metrics(capture_cold_start_metric=True)
@tracer.capture_lambda_handler(capture_response=False)
def handler(event, context):
    return asgi(event, context)
'''


# Reported beside the target's baseline, not a target: the least any of strata's API functions
# can be -- the Powertools trio and one route with a typed body (its first such parameter
# makes FastAPI import pydantic.v1 to rule out v1 models, ~20 ms that the GET-only bare app
# never pays and strata's functions no longer pay either: strata.api.app).
BARE_API_FUNCTION = api_function("from pydantic import BaseModel", '''

class Query(BaseModel):
    query: str
    limit: int = 10


@app.post("/v1/search")
def search(body: Query):
    return {"results": []}
''')

# Reported beside the target's baseline, not a target: the floor of a strata API function --
# the bare GET app with the Powertools trio and the PostgreSQL driver (psycopg and its pool),
# before any code of strata's. Measured at 1.28-1.45x bare_fastapi_mangum (ratio of medians,
# six runs); strata's API functions, whose init runs without the cyclic collector
# (strata.foundation.coldstart), import in 0.88-1.06x it.
BARE_DB_FUNCTION = api_function("import psycopg\nimport psycopg_pool", '''

@app.get("/healthz")
def healthz():
    return {"status": "ok"}
''')

# Runs in the fresh interpreter: argv = handler file, attribute, event JSON file or "", and
# optionally a JSON list of folders to put first on sys.path (the built layers).
PROBE = r'''
import importlib.util, json, sys, time
path, attribute, event_file = sys.argv[1:4]
sys.path[:0] = json.loads(sys.argv[4]) if len(sys.argv) > 4 else []

def peak_kb():
    # VmHWM, not ru_maxrss: Linux carries ru_maxrss across execve, so a child of this
    # (large) benchmark process would report the parent's peak.
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    import resource
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss

sys.path.insert(0, str(__import__("pathlib").Path(path).parent))  # the function's own dir, as on Lambda
t0 = time.perf_counter()
spec = importlib.util.spec_from_file_location("bench_handler", path)
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
handler = getattr(module, attribute)
out = {"import_ms": (time.perf_counter() - t0) * 1000,
       "rss_import_kb": peak_kb()}
if event_file:
    class Context:
        function_name = "bench"
        memory_limit_in_mb = 1024
        invoked_function_arn = "arn:aws:lambda:us-east-1:123456789012:function:bench"
        aws_request_id = "00000000-0000-4000-8000-000000000000"
        log_stream_name = "bench"
        def get_remaining_time_in_millis(self):
            return 30000
    event = json.load(open(event_file))
    t1 = time.perf_counter()
    answer = handler(event, Context())
    out["invoke_ms"] = (time.perf_counter() - t1) * 1000
    out["rss_invoke_kb"] = peak_kb()
    out["answer"] = (answer.get("statusCode") if "statusCode" in answer
                     else {"isAuthorized": answer.get("isAuthorized")})
print("BENCH " + json.dumps(out))
'''


class _CfnLoader(yaml.SafeLoader):
    """YAML with CloudFormation's short-form tags (!Ref, !GetAtt, !Sub ...) kept as plain
    values: only CodeUri, Handler and Events are read, never resolved."""


def _any_tag(loader: yaml.SafeLoader, tag_suffix: str, node: yaml.Node):
    if isinstance(node, yaml.ScalarNode):
        return loader.construct_scalar(node)
    if isinstance(node, yaml.SequenceNode):
        return loader.construct_sequence(node, deep=True)
    return loader.construct_mapping(node, deep=True)


_CfnLoader.add_multi_constructor("!", _any_tag)


def load_template() -> dict:
    return yaml.load(TEMPLATE.read_text(), Loader=_CfnLoader)


def authorizer_functions(template: dict) -> set[str]:
    """Logical ids the HttpApi authorizers point at (FunctionArn: !GetAtt X.Arn)."""
    names = set()
    for resource in template.get("Resources", {}).values():
        if resource.get("Type") != "AWS::Serverless::HttpApi":
            continue
        auth = (resource.get("Properties") or {}).get("Auth") or {}
        for authorizer in (auth.get("Authorizers") or {}).values():
            arn = authorizer.get("FunctionArn")
            if isinstance(arn, dict):  # the long form, {"Fn::GetAtt": [...]}
                arn = next(iter(arn.values()), None)
            if isinstance(arn, list) and arn:
                arn = arn[0]
            if isinstance(arn, str):
                names.add(arn.split(".")[0])
    return names


def discover(template: dict) -> list[dict]:
    """Every function to measure: the template's, then unreferenced functions/*/handler.py."""
    globals_ = (template.get("Globals") or {}).get("Function") or {}
    authorizers = authorizer_functions(template)
    found, seen = [], set()
    for name, resource in (template.get("Resources") or {}).items():
        if resource.get("Type") != "AWS::Serverless::Function":
            continue
        props = resource.get("Properties") or {}
        code_uri = props.get("CodeUri", globals_.get("CodeUri"))
        handler = props.get("Handler", globals_.get("Handler"))
        if not isinstance(code_uri, str) or not isinstance(handler, str):
            found.append({"name": name, "error": f"CodeUri/Handler not local: {code_uri!r} {handler!r}"})
            continue
        module, attribute = handler.rsplit(".", 1)
        routes = [
            (e["Properties"].get("Method", "ANY"), e["Properties"]["Path"])
            for e in (props.get("Events") or {}).values()
            if e.get("Type") == "HttpApi" and "Path" in (e.get("Properties") or {})
        ]
        kind = ("authorizer" if name in authorizers or Path(code_uri).name == "authorizer"
                else "api" if routes else "other")
        found.append({
            "name": name, "in_template": True, "code_uri": code_uri, "handler": handler,
            "file": ROOT / code_uri / (module.replace(".", "/") + ".py"), "attribute": attribute,
            "kind": kind, "routes": routes, "memory_size": props.get("MemorySize", globals_.get("MemorySize")),
        })
        seen.add((ROOT / code_uri).resolve())
    for path in sorted((ROOT / "functions").glob("*/handler.py")):
        if path.parent.resolve() in seen:
            continue
        code_uri = str(path.parent.relative_to(ROOT))
        found.append({
            "name": code_uri, "in_template": False, "code_uri": code_uri, "handler": "handler.handler",
            "file": path, "attribute": "handler",
            "kind": ("authorizer" if path.parent.name == "authorizer"
                     else "api" if "Mangum" in path.read_text() else "other"),
            "routes": [], "memory_size": None,
        })
    return found


def authorizer_event(key: str) -> dict:
    return {
        "version": "2.0", "type": "REQUEST",
        "routeArn": "arn:aws:execute-api:us-east-1:123456789012:abc123/$default/GET/v1/memories",
        "identitySource": [f"Bearer {key}"], "routeKey": "GET /v1/memories",
        "rawPath": "/v1/memories", "rawQueryString": "",
        "headers": {"authorization": f"Bearer {key}", "host": "abc123.execute-api.us-east-1.amazonaws.com"},
        "requestContext": {
            "accountId": "123456789012", "apiId": "abc123",
            "domainName": "abc123.execute-api.us-east-1.amazonaws.com", "domainPrefix": "abc123",
            "http": {"method": "GET", "path": "/v1/memories", "protocol": "HTTP/1.1",
                     "sourceIp": "203.0.113.7", "userAgent": "bench"},
            "requestId": "bench", "routeKey": "GET /v1/memories", "stage": "$default",
            "time": "29/Nov/2026:20:00:00 +0000", "timeEpoch": 1796000000000,
        },
    }


# The first request of a function whose first route is not a plain GET: one it answers with
# its real work (a search, a receipt poll -- 404 for an unknown receipt, after the key and the
# database -- and an MCP initialize), not a 405 or 422 from the framework.
FIRST_REQUESTS = {
    "/v1/search": ("POST", "/v1/search", {"query": "what does the user drink", "limit": 5}),
    "/v1/ingest": ("GET", "/v1/ingest/00000000-0000-4000-8000-000000000000", None),
    "/mcp": ("POST", "/mcp", {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "bench", "version": "0"}}}),
}


def http_event(routes: list[tuple[str, str]], key: str) -> dict:
    """A v2 event for the function's first request: FIRST_REQUESTS' for its first route, or
    a GET of its first route that takes one (ANY or GET)."""
    body = None
    if routes[0][1] in FIRST_REQUESTS:
        method, path, body = FIRST_REQUESTS[routes[0][1]]
    else:
        method, path = next(((m, p) for m, p in routes if m.upper() in ("GET", "ANY")), routes[0])
        method = "GET" if method.upper() == "ANY" else method.upper()
        path = re.sub(r"\{[^}]+\+?\}", "x", path)
    return {
        "version": "2.0", "routeKey": f"{method} {path}", "rawPath": path, "rawQueryString": "",
        "headers": {"authorization": f"Bearer {key}", "host": "abc123.execute-api.us-east-1.amazonaws.com",
                    "user-agent": "bench", "content-type": "application/json",
                    "accept": "application/json, text/event-stream"},
        "requestContext": {
            "accountId": "123456789012", "apiId": "abc123",
            "domainName": "abc123.execute-api.us-east-1.amazonaws.com", "domainPrefix": "abc123",
            "http": {"method": method, "path": path, "protocol": "HTTP/1.1",
                     "sourceIp": "203.0.113.7", "userAgent": "bench"},
            "requestId": "bench", "routeKey": f"{method} {path}", "stage": "$default",
            "time": "29/Nov/2026:20:00:00 +0000", "timeEpoch": 1796000000000,
        },
        "body": None if body is None else json.dumps(body), "isBase64Encoded": False,
    }


def sample(file: Path, attribute: str, event_file: str, env: dict,
           layers: list[str] | None = None) -> dict:
    # The tree may change under a long run (functions added, moved): report, don't stop.
    if not file.is_file():
        return {"error": f"no handler file at {file.relative_to(ROOT) if file.is_relative_to(ROOT) else file}"}
    try:
        proc = subprocess.run(
            # From built layers: no site-packages (-S) and nothing written (-B: /opt is
            # read-only on Lambda, so only the bytecode the layer ships is used).
            [sys.executable, *(["-S", "-B"] if layers else []), "-c", PROBE, str(file),
             attribute, event_file, *([json.dumps(layers)] if layers else [])],
            capture_output=True, text=True, env=env, cwd=str(file.parent), timeout=120,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return {"error": f"{type(exc).__name__}: {exc}"[:300]}
    lines = [line for line in proc.stdout.splitlines() if line.startswith("BENCH ")]
    if proc.returncode != 0 or not lines:
        tail = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        return {"error": tail[:300]}
    return json.loads(lines[-1][6:])


def dir_bytes(path: Path, bytecode: bool = True) -> int:
    """Bytes of the files under ``path``; ``bytecode=False`` leaves out __pycache__ (a source
    folder's, written by local runs, ships nowhere; a built layer's is part of it)."""
    return sum(f.stat().st_size for f in path.rglob("*")
               if f.is_file() and (bytecode or "__pycache__" not in f.parts))


def summarize(runs: list[dict]) -> dict:
    good = [r for r in runs if "error" not in r]
    if not good:
        return {"error": runs[0]["error"] if runs else "no samples"}
    imports = [r["import_ms"] for r in good]
    out = {
        "import_ms": round(statistics.median(imports), 1),
        "import_ms_min_max": [round(min(imports), 1), round(max(imports), 1)],
        "peak_rss_mb_after_import": round(statistics.median(r["rss_import_kb"] for r in good) / 1024, 1),
        "samples": len(good),
    }
    if "invoke_ms" in good[0]:
        out["invocation"] = {
            "answer": good[0]["answer"],
            "first_invoke_ms": round(statistics.median(r["invoke_ms"] for r in good), 1),
            "import_plus_first_invoke_ms": round(statistics.median(r["import_ms"] + r["invoke_ms"] for r in good), 1),
            "peak_rss_mb": round(max(r["rss_invoke_kb"] for r in good) / 1024, 1),
        }
    if len(good) < len(runs):
        out["failed_samples"] = len(runs) - len(good)
    return out


def measure(functions: list[dict], samples: int, invoke: bool) -> tuple[dict, dict]:
    with tempfile.TemporaryDirectory(prefix="strata-coldstart-") as tmp:
        tmp = Path(tmp)
        (tmp / "bare_powertools").mkdir()
        (tmp / "bare_powertools" / "handler.py").write_text(BARE_POWERTOOLS)
        (tmp / "bare_fastapi_mangum").mkdir()
        (tmp / "bare_fastapi_mangum" / "handler.py").write_text(BARE_FASTAPI_MANGUM)
        for name, source in (("bare_fastapi_mangum_frozen", BARE_FASTAPI_MANGUM_FROZEN),
                             ("bare_api_function", BARE_API_FUNCTION),
                             ("bare_db_function", BARE_DB_FUNCTION)):
            (tmp / name).mkdir()
            (tmp / name / "handler.py").write_text(source)
        env = {k: v for k, v in os.environ.items() if not k.startswith(("STRATA_", "POWERTOOLS_"))}
        # As the template's Globals set them, for the baselines too (PYDANTIC_DISABLE_PLUGINS
        # spares every pydantic app the same entry-point scan: no ratio moves by it).
        env.update({"POWERTOOLS_SERVICE_NAME": "bench", "POWERTOOLS_LOG_LEVEL": "WARNING",
                    "POWERTOOLS_METRICS_NAMESPACE": "bench", "AWS_DEFAULT_REGION": "us-east-1",
                    "PYDANTIC_DISABLE_PLUGINS": "__all__", "STRATA_RUNTIME": "aws", **LAMBDA_ENV})
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        targets = [
            ("bare_powertools", tmp / "bare_powertools" / "handler.py", "handler", ""),
            ("bare_fastapi_mangum", tmp / "bare_fastapi_mangum" / "handler.py", "handler", ""),
            ("bare_fastapi_mangum_frozen", tmp / "bare_fastapi_mangum_frozen" / "handler.py", "handler", ""),
            ("bare_api_function", tmp / "bare_api_function" / "handler.py", "handler", ""),
            ("bare_db_function", tmp / "bare_db_function" / "handler.py", "handler", ""),
        ]
        database = None
        if invoke:
            database = _database(tmp)
            key, url = database.__enter__()
            env["STRATA_DATABASE_URL"] = url
            for fn in functions:
                if "error" in fn:
                    continue
                event = (authorizer_event(key) if fn["kind"] == "authorizer"
                         else http_event(fn["routes"], key) if fn["routes"] else None)
                event_file = ""
                if event is not None:
                    event_file = str(tmp / f"event-{len(targets)}.json")
                    Path(event_file).write_text(json.dumps(event))
                targets.append((fn["name"], fn["file"], fn["attribute"], event_file))
        else:
            targets += [(fn["name"], fn["file"], fn["attribute"], "") for fn in functions if "error" not in fn]
        kinds = {fn["name"]: fn["kind"] for fn in functions}
        try:
            # One unmeasured pass writes the .pyc files a deployment package would carry.
            for _, file, attribute, _ in targets:
                sample(file, attribute, "", env)
            runs, pairs = rounds({name: (file, attribute, event_file, None)
                                  for name, file, attribute, event_file in targets},
                                 kinds, samples, env)
            built = built_targets(functions, targets[:len(BASELINES)], tmp)
            built_runs, built_pairs = rounds(built, kinds, samples, env) if built else ({}, {})
        finally:
            if database is not None:
                database.__exit__(None, None, None)
    baselines = {name: summarize(runs.pop(name)) for name in BASELINES}
    results = {name: summarize(r) for name, r in runs.items()}
    add_pairs(results, pairs)
    built_results = {name: summarize(r) for name, r in built_runs.items()}
    add_pairs(built_results, built_pairs)
    for name, summary in built_results.items():
        keep = {k: v for k, v in summary.items() if k in (
            "import_ms", "import_ms_min_max", "samples", "paired_ratio", "paired_ratio_min_max", "error")}
        (baselines if name in BASELINES else results)[name]["from_built_layers"] = keep
    return baselines, results


BASELINES = ("bare_powertools", "bare_fastapi_mangum", "bare_fastapi_mangum_frozen",
             "bare_api_function", "bare_db_function")


def rounds(targets: dict[str, tuple], kinds: dict[str, str], samples: int,
           env: dict) -> tuple[dict[str, list[dict]], dict[str, list[float]]]:
    """``samples`` rounds over ``targets`` (name -> file, attribute, event file, sys.path
    folders or None). A function with a target is sampled right after its baseline and the
    pair's ratio kept: this machine's slow spells last seconds, so a pair sees the same one."""
    runs: dict[str, list[dict]] = {name: [] for name in targets}
    pairs: dict[str, list[float]] = {}
    for _ in range(samples):
        for name, (file, attribute, event_file, paths) in targets.items():
            base = TARGETS.get(kinds.get(name), (None,))[0]
            if base is None:
                if name not in (b for b, _ in TARGETS.values()):  # those are sampled in pairs
                    runs[name].append(sample(file, attribute, event_file, env, paths))
                continue
            base_file, base_attribute, _, base_paths = targets[base]
            before = sample(base_file, base_attribute, "", env, base_paths)
            after = sample(file, attribute, event_file, env, paths)
            runs[base].append(before)
            runs[name].append(after)
            if "error" not in before and "error" not in after:
                pairs.setdefault(name, []).append(after["import_ms"] / before["import_ms"])
    return runs, pairs


def add_pairs(results: dict[str, dict], pairs: dict[str, list[float]]) -> None:
    for name, ratios in pairs.items():
        results[name]["paired_ratio"] = round(statistics.median(ratios), 2)
        results[name]["paired_ratio_min_max"] = [round(min(ratios), 2), round(max(ratios), 2)]


# What the python3.11 runtime has that the layers leave out (layers/build_layer.py).
RUNTIME_MODULES = ("boto3", "botocore", "s3transfer", "jmespath", "dateutil", "six", "urllib3")


def built_targets(functions: list[dict], baselines: list[tuple], tmp: Path) -> dict[str, tuple]:
    """Each function from its built code and layers as Lambda has them (the layers' bytecode
    or none, no site-packages, boto3 from a stand-in for the runtime's), and the baselines
    from the core layer alike (it has FastAPI, Mangum and Powertools): import only. Empty
    without a build."""
    template_file = BUILD / "template.yaml"
    if not template_file.is_file():
        return {}
    import importlib.util

    runtime = tmp / "runtime"
    runtime.mkdir(exist_ok=True)
    for module in RUNTIME_MODULES:
        spec = importlib.util.find_spec(module)
        if spec is None:
            continue
        origin = Path(spec.submodule_search_locations[0] if spec.submodule_search_locations else spec.origin)
        if not (runtime / origin.name).exists():
            (runtime / origin.name).symlink_to(origin)
    built = yaml.load(template_file.read_text(), Loader=_CfnLoader)
    globals_ = (built.get("Globals") or {}).get("Function") or {}
    resources = built.get("Resources") or {}

    def paths(layers: list) -> list[str]:
        # The built template writes `!Ref X` in its long form, {"Ref": X}; later layers win
        # in /opt, so they come first on the path.
        names = [layer.get("Ref") if isinstance(layer, dict) else layer for layer in layers]
        return [str(BUILD / str(name) / "python") for name in reversed(names)] + [str(runtime)]

    core = paths(list(globals_.get("Layers") or []))
    targets = {name: (file, attribute, "", core) for name, file, attribute, _ in baselines}
    for fn in functions:
        props = (resources.get(fn["name"]) or {}).get("Properties") or {}
        if "error" in fn or not fn.get("in_template") or "CodeUri" not in props:
            continue
        layers = list(globals_.get("Layers") or []) + list(props.get("Layers") or [])
        file = BUILD / props["CodeUri"] / Path(fn["file"]).name
        targets[fn["name"]] = (file, fn["attribute"], "", paths(layers))
    return targets


class _database:
    """A migrated throwaway database with one tenant; yields (its root key, URL)."""

    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp

    def __enter__(self) -> tuple[str, str]:
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        from harness import scratch_database

        from strata.auth import create_tenant

        self._cm = scratch_database(embedding_dim=384)
        db, _ = self._cm.__enter__()
        _, key = create_tenant(db, "bench")
        return key.key, db.url

    def __exit__(self, *exc) -> None:
        self._cm.__exit__(*exc)


def built_sizes(template: dict, functions: list[dict]) -> tuple[dict, object]:
    """Function code (KB) and layers (MB unzipped) from the last `make build`: the core layer
    against its target, the others, and each function's total with its layers."""
    if not BUILD.is_dir():
        return {}, "not built"
    globals_ = (template.get("Globals") or {}).get("Function") or {}
    layers = {name: r for name, r in (template.get("Resources") or {}).items()
              if r.get("Type") == "AWS::Serverless::LayerVersion"}
    layer_mb = {name: round(dir_bytes(BUILD / name) / 2**20, 1) for name in layers
                if (BUILD / name).is_dir()}
    if not layer_mb:
        return {}, "no layer in build"
    code_kb = {fn["name"]: round(dir_bytes(BUILD / fn["name"]) / 1024, 1) for fn in functions
               if fn.get("in_template") and (BUILD / fn["name"]).is_dir()}
    report: dict = {"core": None, "other_layers": {}, "function_totals_mb": {}}
    for name, layer in layers.items():
        uri = str((layer.get("Properties") or {}).get("ContentUri", "")).rstrip("/")
        entry = {"logical_id": name, "content_uri": uri, "mb": layer_mb.get(name, "not built")}
        if uri == CORE_LAYER:
            entry.update(target_mb=CORE_LAYER_TARGET_MB,
                         meets_target=isinstance(entry["mb"], float) and entry["mb"] < CORE_LAYER_TARGET_MB)
            report["core"] = entry
        else:
            report["other_layers"][name] = entry
    for name, resource in (template.get("Resources") or {}).items():
        if resource.get("Type") != "AWS::Serverless::Function" or name not in code_kb:
            continue
        # SAM adds a function's Layers to the Globals' (the !Ref tags are read as plain names).
        used = list(globals_.get("Layers") or []) + list((resource.get("Properties") or {}).get("Layers") or [])
        report["function_totals_mb"][name] = round(
            code_kb[name] / 1024 + sum(layer_mb.get(str(u), 0) for u in used), 1)
        for entry in report["other_layers"].values():
            if entry["logical_id"] in used:
                entry.setdefault("used_by", []).append(name)
    return code_kb, report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--samples", type=int, default=9)
    parser.add_argument("--no-invoke", action="store_true",
                        help="import only: no database, no invocation")
    args = parser.parse_args()

    template = load_template()
    functions = discover(template)
    baselines, results = measure(functions, args.samples, invoke=not args.no_invoke)
    built, layer = built_sizes(template, functions)

    report = {}
    for fn in functions:
        if "error" in fn:
            report[fn["name"]] = {"error": fn["error"]}
            continue
        entry = {"code_uri": fn["code_uri"], "handler": fn["handler"], "kind": fn["kind"],
                 "in_template": fn["in_template"], "memory_size": fn["memory_size"]}
        entry.update(results[fn["name"]])
        if "import_ms" in entry:
            for base in baselines:
                if "import_ms" in baselines[base]:
                    entry[f"ratio_vs_{base}"] = round(entry["import_ms"] / baselines[base]["import_ms"], 2)
                    # Minimums are the least load-sensitive figure on a shared machine.
                    entry.setdefault("ratio_of_minimums", {})[base] = round(
                        entry["import_ms_min_max"][0] / baselines[base]["import_ms_min_max"][0], 2)
            if fn["kind"] in TARGETS and Path(fn["code_uri"]).name in UNTARGETED:
                entry["target"] = UNTARGETED[Path(fn["code_uri"]).name]
            elif fn["kind"] in TARGETS:
                base, limit = TARGETS[fn["kind"]]
                from_layers = entry.get("from_built_layers") or {}
                judged = "from_built_layers" if "paired_ratio" in from_layers else "site-packages"
                entry["target"] = (f"import <= {limit}x {base} (median of paired ratios, "
                                   f"{judged})")
                entry["meets_target"] = (from_layers if judged == "from_built_layers" else entry).get(
                    "paired_ratio", float("inf")) <= limit
        entry["source_bytes"] = dir_bytes(ROOT / fn["code_uri"], bytecode=False) if (ROOT / fn["code_uri"]).is_dir() else None
        entry["built_kb"] = built.get(fn["name"], "not built")
        report[fn["name"]] = entry

    print(json.dumps({
        "python": platform.python_version(),
        "machine": {"cpus": os.cpu_count(), "loadavg_at_end": [round(x, 2) for x in os.getloadavg()]},
        "samples_per_target": args.samples,
        "method": "fresh interpreter per sample, samples interleaved across targets; "
                  "import_ms = wall time of importing the handler module (median); "
                  "paired_ratio = median over rounds of a function's import time over its "
                  "target baseline's, sampled just before it in the same round; "
                  "peak RSS = the process's VmHWM (its own ru_maxrss; Linux's ru_maxrss "
                  "inherits the parent's peak across exec)",
        "baselines": baselines,
        "functions": report,
        "layers_built": layer,
    }, indent=2, default=str))


if __name__ == "__main__":
    main()
