"""template.yaml and the code it points at agree.

No AWS, no network, no PostgreSQL. Handlers are read with ``ast`` and imported once in a
fresh interpreter (probe_handlers.py); aws-sam-cli (its own virtualenv, ``make tools``) and
asl-validator (npx) check what cfn-lint does not, and tell the SAM transform's output apart
from what template.yaml spells out.
"""

from __future__ import annotations

import ast
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from cfnlint import api as cfnlint_api
from cfnlint.data import AdditionalSpecs
from cfnlint.decode import cfn_yaml
from cfnlint.helpers import load_resource
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[2]
TEMPLATE_PATH = ROOT / "template.yaml"

# The core router (strata.api.app.create_app) that must serve each API path and its subtree.
ROUTER_FOR_PREFIX = {
    "/healthz": "health",
    "/readyz": "health",
    "/openapi.json": "docs",
    "/docs": "docs",
    "/redoc": "docs",
    "/v1/memories": "memories",
    "/v1/reflect": "reflect",
    "/v1/consolidate": "reflect",
    "/v1/keys": "access",
    "/v1/grants": "access",
    "/v1/principals": "access",
    "/v1/access": "access",
    "/v1/audit": "audit",
    "/v1/ingest": "ingest",
    "/v1/review": "review",
    "/v1/search": "search",
    "/v1/me": "browse",
    "/v1/paths": "browse",
    "/v1/rules": "rules",
    "/v1/events": "events",
    "/v1/webhooks": "webhooks",
    "/console": "console",
    "/mcp": "mcp",
    "/.well-known": "mcp",
}

# Routers that start the ingest pipeline (`remember` with messages, over MCP).
INGESTING = {"ingest", "mcp"}

# The v1 routes API Gateway must forward (method, path).
REQUIRED_ROUTES = {
    ("GET", "/healthz"),
    ("GET", "/readyz"),
    ("GET", "/openapi.json"),
    ("GET", "/docs"),
    ("GET", "/docs/{proxy+}"),
    ("GET", "/redoc"),
    ("ANY", "/v1/memories"),
    ("ANY", "/v1/memories/{proxy+}"),
    ("ANY", "/v1/keys"),
    ("ANY", "/v1/keys/{proxy+}"),
    ("ANY", "/v1/grants"),
    ("ANY", "/v1/grants/{proxy+}"),
    ("ANY", "/v1/principals"),
    ("ANY", "/v1/access/{proxy+}"),
    ("ANY", "/v1/audit"),
    ("ANY", "/v1/audit/{proxy+}"),
    ("ANY", "/v1/events"),
    ("ANY", "/v1/webhooks"),
    ("ANY", "/v1/webhooks/{proxy+}"),
    ("ANY", "/v1/ingest"),
    ("ANY", "/v1/ingest/{proxy+}"),
    ("ANY", "/v1/review"),
    ("ANY", "/v1/review/{proxy+}"),
    ("POST", "/v1/search"),
    ("POST", "/v1/reflect"),
    ("POST", "/v1/consolidate"),
    ("GET", "/v1/me"),
    ("GET", "/v1/paths"),
    ("ANY", "/v1/rules"),
    ("ANY", "/v1/rules/{proxy+}"),
    ("GET", "/console"),
    ("GET", "/console/{proxy+}"),
    ("ANY", "/mcp"),
}

# Package dependencies the layer leaves out on purpose.
NOT_IN_LAYER = {
    "boto3": "the Lambda runtime has it",
    "uvicorn": "the local server only",
    "httptools": "the local server's HTTP parser (uvicorn's)",
    "uvloop": "the local server's event loop (uvicorn's)",
    "tqdm": "CLI progress bars only",
    "argcomplete": "CLI shell completion only",
}
# Dependencies in a layer of their own, beside the strata layer, for the one function that
# needs them: the strata layer every function carries stays under its 60 MB.
OWN_LAYER = {"mcp": "layers/mcp", "fastapi-offline": "layers/docs"}
CORE_LAYER = "layers/strata"
# The core router whose function alone carries each own layer.
LAYER_ROUTER = {"layers/mcp": "mcp", "layers/docs": "docs"}

# AWS moved python3.11's deprecation to 2027-06-30. cfn-lint releases whose runtime data
# still says 2026-06-30 (1.51 among them) report E2533 for a runtime Lambda still accepts;
# with current data the rule stays in force and fires when the real date comes.
PYTHON311_DEPRECATED = "2027-06-30"


@pytest.fixture(scope="module")
def template() -> dict:
    return cfn_yaml.load(str(TEMPLATE_PATH))


def resources_of(template: dict, type_: str) -> dict[str, dict]:
    found = {name: r for name, r in template["Resources"].items() if r["Type"] == type_}
    assert found, f"template.yaml has no {type_}"
    return found


def function_property(template: dict, function: dict, name: str):
    """A function property, falling back to Globals as SAM does."""
    properties = function.get("Properties", {})
    if name in properties:
        return properties[name]
    return template.get("Globals", {}).get("Function", {}).get(name)


def handler_source(template: dict, function: dict) -> tuple[Path, str]:
    """The handler file of a function and the attribute it must define."""
    code_uri = function_property(template, function, "CodeUri")
    handler = function_property(template, function, "Handler")
    assert isinstance(code_uri, str), f"CodeUri must be a local folder, got {code_uri!r}"
    assert isinstance(handler, str) and "." in handler, f"bad Handler {handler!r}"
    module, attribute = handler.rsplit(".", 1)
    return ROOT / code_uri / (module.replace(".", "/") + ".py"), attribute


def defines(tree: ast.Module, name: str) -> bool:
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == name:
            return True
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == name for t in node.targets
        ):
            return True
        if isinstance(node, ast.AnnAssign) and getattr(node.target, "id", None) == name:
            return True
    return False


def routers_named(tree: ast.Module) -> set[str]:
    """Router names passed as literals to api_handler(*routers) or create_app(routers=...)
    anywhere in the module."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        callee = getattr(node.func, "id", None) or getattr(node.func, "attr", None)
        if callee == "api_handler":
            names |= {a.value for a in node.args if isinstance(a, ast.Constant)}
            continue
        if callee != "create_app":
            continue
        values = [k.value for k in node.keywords if k.arg == "routers"] + node.args[:1]
        for value in values:
            if isinstance(value, (ast.Tuple, ast.List, ast.Set)):
                names |= {e.value for e in value.elts if isinstance(e, ast.Constant)}
    return names


def router_for(path: str) -> str | None:
    for prefix, router in ROUTER_FOR_PREFIX.items():
        if path == prefix or path.startswith(prefix + "/"):
            return router
    return None


def is_stale_python311_verdict(match) -> bool:
    lifecycle = load_resource(AdditionalSpecs, "LmbdRuntimeLifecycle.json").get("python3.11", {})
    return (
        match.rule.id == "E2533"
        and "python3.11" in match.message
        and lifecycle.get("deprecated", PYTHON311_DEPRECATED) < PYTHON311_DEPRECATED
    )


def test_cfn_lint_reports_no_errors_or_warnings():
    matches = cfnlint_api.lint_file(TEMPLATE_PATH)
    matches = [m for m in matches if not is_stale_python311_verdict(m)]
    assert not matches, "\n".join(str(m) for m in matches)


def test_every_function_has_its_handler(template):
    for name, function in resources_of(template, "AWS::Serverless::Function").items():
        path, attribute = handler_source(template, function)
        assert path.is_file(), f"{name}: {path.relative_to(ROOT)} is missing"
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        assert defines(tree, attribute), f"{name}: {path.relative_to(ROOT)} defines no {attribute}"


def test_every_route_is_served_by_the_matching_router(template):
    """Static: every HttpApi event of a function names a path whose core router is one its
    handler passes to create_app(routers=...), and the v1 contract's routes are all there."""
    api_ids = set(resources_of(template, "AWS::Serverless::HttpApi"))
    routes = set()
    for name, function in resources_of(template, "AWS::Serverless::Function").items():
        http_events = [e["Properties"] for e in function["Properties"].get("Events", {}).values()
                       if e["Type"] == "HttpApi"]
        if not http_events:
            continue
        path, _ = handler_source(template, function)
        served = routers_named(ast.parse(path.read_text(encoding="utf-8")))
        for event in http_events:
            assert event.get("ApiId", {}).get("Ref") in api_ids, f"{name}: route off the HttpApi"
            route = (event["Method"].upper(), event["Path"])
            assert route not in routes, f"{route} is declared twice"
            routes.add(route)
            router = router_for(event["Path"])
            assert router, f"{name}: no core router is known for {event['Path']}"
            assert router in served, f"{name} serves {route} but its app has routers {served}"
    missing = REQUIRED_ROUTES - routes
    assert not missing, f"routes not in template.yaml: {sorted(missing)}"


# ------------------------------------------------------------------ handlers, imported


def http_routes(template: dict) -> list[tuple[str, str, str]]:
    """(method, path, function) for every HttpApi event in the template."""
    return [(e["Properties"]["Method"].upper(), e["Properties"]["Path"], name)
            for name, f in resources_of(template, "AWS::Serverless::Function").items()
            for e in f["Properties"].get("Events", {}).values() if e["Type"] == "HttpApi"]


def gateway_match(route_path: str, path: str) -> tuple[int, int] | None:
    """How an HTTP API route path matches a request path: None, or a rank (greedy last,
    then more literal segments first), as API Gateway picks the most specific route."""
    want, have = route_path.strip("/").split("/"), path.strip("/").split("/")
    literal = 0
    for i, segment in enumerate(want):
        if segment.endswith("+}"):
            return (1, -literal) if len(have) > i else None
        if i >= len(have):
            return None
        if segment.startswith("{"):
            continue
        if segment != have[i]:
            return None
        literal += 1
    return (0, -literal) if len(want) == len(have) else None


def gateway_route(routes, method: str, path: str) -> list[tuple[str, str, str]]:
    """The template routes API Gateway would pick for a request, best first; more than one
    at the best rank means the request is ambiguous."""
    # The core's own path parameters are concrete values here: {memory_id} -> one segment.
    concrete = re.sub(r"\{[^}]+\}", "x", path)
    ranked = []
    for r_method, r_path, function in routes:
        if r_method not in (method, "ANY"):
            continue
        rank = gateway_match(r_path, concrete)
        if rank is not None:
            ranked.append(((*rank, r_method == "ANY"), (r_method, r_path, function)))
    ranked.sort()
    return [r for key, r in ranked if key == ranked[0][0]] if ranked else []


def test_gateway_matching_prefers_the_most_specific_route():
    """Control for the matcher the route test relies on: exact beats greedy, an explicit
    method beats ANY, and a path outside every route matches nothing."""
    routes = [("ANY", "/v1/memories/{proxy+}", "A"), ("GET", "/v1/memories/{id}", "B"),
              ("ANY", "/v1/memories", "C"), ("POST", "/v1/search", "D")]
    assert gateway_route(routes, "GET", "/v1/memories/{memory_id}") == [
        ("GET", "/v1/memories/{id}", "B")]
    assert gateway_route(routes, "PATCH", "/v1/memories/{memory_id}")[0][2] == "A"
    assert gateway_route(routes, "GET", "/v1/memories/{memory_id}/history")[0][2] == "A"
    assert gateway_route(routes, "GET", "/v1/memories")[0][2] == "C"
    assert gateway_route(routes, "GET", "/v1/search") == []
    assert gateway_route(routes, "GET", "/v1/memoriesx") == []


@pytest.fixture(scope="module")
def probed(template) -> dict:
    """Every function's handler imported in a fresh interpreter, as Lambda does it (see
    probe_handlers.py), with the environment the template gives it at runtime."""
    specs = []
    for name, function in resources_of(template, "AWS::Serverless::Function").items():
        code_uri = function_property(template, function, "CodeUri")
        specs.append({"name": name, "code_uri": str(ROOT / code_uri),
                      "handler": function_property(template, function, "Handler")})
    env = {k: v for k, v in os.environ.items() if not k.startswith("STRATA_")}
    # What the Lambda environment carries; an import that tried to use it would hang or fail.
    env.update(STRATA_RUNTIME="aws", STRATA_DB_HOST="proxy.invalid",
               STRATA_DB_SECRET_ARN="arn:aws:secretsmanager:us-east-1:123456789012:secret:x",
               AWS_DEFAULT_REGION="us-east-1", POWERTOOLS_METRICS_NAMESPACE="strata")
    out = subprocess.run(
        [sys.executable, str(ROOT / "tests" / "infra" / "probe_handlers.py")],
        input=json.dumps(specs), capture_output=True, text=True, env=env, timeout=120,
        cwd=str(ROOT / "tests" / "infra"),
    )
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout)


def test_every_handler_imports_and_is_callable(probed, template):
    """Given each function's CodeUri and Handler
    When the handler module is imported from that folder in a fresh interpreter
    Then it imports without touching the database or AWS and the handler is callable."""
    functions = resources_of(template, "AWS::Serverless::Function")
    assert set(probed["functions"]) == set(functions)
    for name, result in probed["functions"].items():
        assert result["imported"], f"{name}: {result.get('error')}"
        assert result["callable"], f"{name}: its Handler attribute is not callable"


def test_every_core_route_is_routed_once_to_a_function_that_serves_it(probed, template):
    """Given every route of the full core app (all routers)
    When API Gateway's route selection picks the template route for it
    Then exactly one route wins, its function's app really answers that route, and no
    other function's app serves it too; and every template route reaches some core route."""
    routes = http_routes(template)
    core = [tuple(r) for r in probed["core_routes"]]
    assert ("POST", "/v1/search") in core and ("ANY", "/mcp") in core  # control: all routers
    served_by: dict[tuple[str, str], set[str]] = {}
    for name, result in probed["functions"].items():
        for route in result.get("served") or []:
            served_by.setdefault(tuple(route), set()).add(name)
    used = set()
    for method, path in core:
        winners = gateway_route(routes, method, path)
        assert winners, f"{method} {path}: no route in template.yaml"
        assert len(winners) == 1, f"{method} {path}: ambiguous between {winners}"
        r_method, r_path, function = winners[0]
        used.add((r_method, r_path))
        assert served_by.get((method, path)) == {function}, (
            f"{method} {path} goes to {function}; apps serving it: {served_by.get((method, path))}")
        if method == "ANY":  # /mcp: GET and DELETE must reach the app for its 405
            assert r_method == "ANY", f"{path} needs an ANY route"
    dead = {(m, p) for m, p, _ in routes} - used
    assert not dead, f"template routes no core route answers: {sorted(dead)}"


def test_migrations_run_at_deploy(template):
    custom = [r for r in template["Resources"].values() if r["Type"].startswith("Custom::")]
    assert custom, "no custom resource runs the migrations"
    for resource in custom:
        target = resource["Properties"]["ServiceToken"]["Fn::GetAtt"][0]
        path, _ = handler_source(template, template["Resources"][target])
        tree = ast.parse(path.read_text(encoding="utf-8"))
        calls = {getattr(n.func, "id", None) for n in ast.walk(tree) if isinstance(n, ast.Call)}
        assert "migrate_database" in calls, f"{path.relative_to(ROOT)}: no migrate_database()"


def layers_of(template: dict, function: dict) -> list[str]:
    """Logical ids of a function's layers, the Globals' first (SAM concatenates the lists)."""
    refs = template["Globals"]["Function"].get("Layers", []) + function["Properties"].get("Layers", [])
    return [ref_target(r) for r in refs]


def make_targets() -> set[str]:
    text = (ROOT / "Makefile").read_text()
    return set(re.findall(r"^([A-Za-z][\w-]*):", text, flags=re.M))


def test_layers_are_built_by_the_makefile_for_the_functions_platform(template):
    """Each layer is a makefile build (ContextPath: the repository) whose Makefile target
    exists and runs layers/build_layer.py, for the runtime and architecture of the functions,
    which is the platform build_layer.py installs wheels for."""
    runtime = template["Globals"]["Function"]["Runtime"]
    [arch] = template["Globals"]["Function"]["Architectures"]
    script = (ROOT / "layers" / "build_layer.py").read_text()
    assert f'"manylinux2014_{arch}"' in script and f'"--python-version", "{runtime[6:]}"' in script
    targets = make_targets()
    for name, layer in resources_of(template, "AWS::Serverless::LayerVersion").items():
        props, meta = layer["Properties"], layer["Metadata"]
        content = ROOT / props["ContentUri"]
        assert (content / "requirements.txt").is_file(), f"{name}: no requirements.txt"
        assert meta["BuildMethod"] == "makefile" and meta["ContextPath"] == ".", name
        assert f"build-{name}" in targets, f"the Makefile has no build-{name} target"
        assert props["CompatibleRuntimes"] == [runtime], name
        assert props["CompatibleArchitectures"] == [arch] == [meta["BuildArchitecture"]], name


def test_every_function_has_the_core_layer_and_only_mcp_the_mcp_layer(template):
    """The strata layer (the package, through the symlink) reaches every function through
    the Globals; each layer of its own, beside it, only the function serving its router (the
    MCP layer /mcp, the docs layer /docs): every other function stays within the core layer's
    budget and without the mcp package or the documentation's bundles."""
    layers = resources_of(template, "AWS::Serverless::LayerVersion")
    by_uri = {l["Properties"]["ContentUri"].rstrip("/"): n for n, l in layers.items()}
    assert len(by_uri) == len(layers) and set(by_uri) == {CORE_LAYER, *LAYER_ROUTER}
    core = by_uri[CORE_LAYER]
    content = ROOT / CORE_LAYER
    assert (content / "strata").resolve() == (ROOT / "src" / "strata").resolve()
    assert (content / "strata" / "__init__.py").is_file()
    for uri in LAYER_ROUTER:
        # An own layer's build leaves out what the core layer has: it reads the same file.
        beside = ROOT / uri / "core-requirements.txt"
        assert beside.resolve() == (content / "requirements.txt").resolve(), uri
    own = set()
    for name, function in resources_of(template, "AWS::Serverless::Function").items():
        routers = {router_for(e["Properties"]["Path"])
                   for e in function["Properties"].get("Events", {}).values()
                   if e["Type"] == "HttpApi"}
        expected = [core] + [by_uri[uri] for uri, router in LAYER_ROUTER.items()
                             if router in routers]
        assert layers_of(template, function) == expected, name
        own.update(expected[1:])
    assert own == {by_uri[uri] for uri in LAYER_ROUTER}  # control: each is on some function


def test_core_layer_ships_what_the_tracer_imports(template):
    """Every handler builds a Powertools Tracer, which imports aws_xray_sdk even where tracing
    is off: the core layer must ship it (directly or as Powertools' `tracer` extra)."""
    shipped = layer_requirements(CORE_LAYER)
    assert "aws-xray-sdk" in shipped or "tracer" in shipped.get("aws-lambda-powertools", set()), (
        f"{CORE_LAYER}/requirements.txt: add aws-lambda-powertools[tracer] (see pyproject.toml)")


def layer_requirements(content_uri: str) -> dict[str, set[str]]:
    """Name -> extras of each requirement in a layer's requirements.txt."""
    text = (ROOT / content_uri / "requirements.txt").read_text()
    lines = [line for line in text.splitlines() if line.strip()[:1] not in ("", "#")]
    return {canonicalize_name(r.name): r.extras for r in map(Requirement, lines)}


def test_layer_requirements_cover_the_package_dependencies(template):
    """Every runtime dependency in pyproject.toml ships in one layer of the template: the
    strata layer, or for those in OWN_LAYER their own layer and not the strata layer; numpy
    is in none (the runtime imports no numpy)."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    extras = project.get("optional-dependencies", {})
    # The base install is the client; the server's dependencies are the `server` extra.
    declared = project["dependencies"] + extras.get("server", []) + extras.get("aws", [])
    needed = {
        canonicalize_name(r.name): r.extras
        for r in map(Requirement, declared)
        if canonicalize_name(r.name) not in NOT_IN_LAYER
    }
    assert needed, "pyproject.toml declares no dependencies"
    uris = [layer["Properties"]["ContentUri"].rstrip("/")
            for layer in resources_of(template, "AWS::Serverless::LayerVersion").values()]
    layers = {uri: layer_requirements(uri) for uri in uris}
    assert CORE_LAYER in layers, f"no layer with ContentUri {CORE_LAYER} in the template"
    for name, extras in sorted(needed.items()):
        home = OWN_LAYER.get(name, CORE_LAYER)
        shipped = layers.get(home, {})
        assert name in shipped and extras <= shipped[name], \
            f"{home}/requirements.txt lacks {name}{sorted(extras) or ''} (see pyproject.toml)"
        if home != CORE_LAYER:
            assert name not in layers[CORE_LAYER], f"{name} belongs in {home}, not {CORE_LAYER}"
    assert not any("numpy" in shipped for shipped in layers.values())
    assert "numpy" not in needed and "pgvector" not in needed


# ------------------------------------------------------------------ ingest state machine


def ref_target(value) -> str | None:
    """The logical id behind !Ref X or !GetAtt X.Attr."""
    if isinstance(value, dict):
        if "Ref" in value:
            return value["Ref"]
        if "Fn::GetAtt" in value:
            target = value["Fn::GetAtt"]
            return target[0] if isinstance(target, list) else str(target).split(".")[0]
    return None


def policy_args(resource: dict, template_name: str) -> list[dict]:
    return [p[template_name] for p in resource["Properties"].get("Policies", [])
            if isinstance(p, dict) and template_name in p]


def test_state_machine_definition_matches_its_substitutions(template):
    """Every ${Name} in a state machine file has a DefinitionSubstitutions entry and every
    entry is used; a substituted function is in the template, the role may invoke it, and
    the Tasks calling it wait longer than the function's own timeout."""
    functions = resources_of(template, "AWS::Serverless::Function")
    for name, machine in resources_of(template, "AWS::Serverless::StateMachine").items():
        props = machine["Properties"]
        path = ROOT / props["DefinitionUri"]
        text = path.read_text(encoding="utf-8")
        asl = json.loads(text)
        placeholders = set(re.findall(r"\$\{([A-Za-z0-9_]+)\}", text))
        substitutions = props.get("DefinitionSubstitutions", {})
        assert placeholders == set(substitutions), f"{name}: {placeholders} vs {set(substitutions)}"
        invocable = {a["FunctionName"]["Ref"] for a in policy_args(machine, "LambdaInvokePolicy")}
        for key, value in substitutions.items():
            target = ref_target(value)
            if target not in functions:
                continue
            assert target in invocable, f"{name}: its role cannot invoke {target}"
            timeout = function_property(template, functions[target], "Timeout")
            tasks = [s for s in asl["States"].values() if s["Type"] == "Task"
                     and s["Parameters"]["FunctionName"] == "${" + key + "}"]
            assert tasks, f"{name}: no Task invokes {target}"
            for state in tasks:
                assert state["TimeoutSeconds"] > timeout, (
                    f"{name}: a Task gives up on {target} before the function's {timeout} s")


def test_ingest_api_starts_the_state_machine(template):
    """Each function that ingests (/v1/ingest, and /mcp whose `remember` takes messages) knows
    the state machine (the setting the core reads), may start executions of it, and can reach
    Step Functions from the private subnets."""
    from strata.foundation.config import Settings

    assert "ingest_state_machine_arn" in Settings.model_fields
    machines = resources_of(template, "AWS::Serverless::StateMachine")
    serving = [
        (name, f) for name, f in resources_of(template, "AWS::Serverless::Function").items()
        if any(e["Type"] == "HttpApi" and router_for(e["Properties"]["Path"]) in INGESTING
               for e in f["Properties"].get("Events", {}).values())
    ]
    served = {router_for(e["Properties"]["Path"]) for _, f in serving
              for e in f["Properties"]["Events"].values()}
    assert INGESTING <= served, f"no function serves {sorted(INGESTING - served)}"
    for name, function in serving:
        env = function["Properties"].get("Environment", {}).get("Variables", {})
        machine = ref_target(env.get("STRATA_INGEST_STATE_MACHINE_ARN"))
        assert machine in machines, f"{name}: STRATA_INGEST_STATE_MACHINE_ARN is {machine!r}"
        allowed = {ref_target(a["StateMachineName"])
                   for a in policy_args(function, "StepFunctionsExecutionPolicy")}
        assert machine in allowed, f"{name} may not start {machine}"
        if function_property(template, function, "VpcConfig"):
            endpoints = [
                r["Properties"] for r in template["Resources"].values()
                if r["Type"] == "AWS::EC2::VPCEndpoint"
                and r["Properties"].get("VpcEndpointType") == "Interface"
                and str(r["Properties"]["ServiceName"].get("Fn::Sub", "")).endswith(".states")
            ]
            assert endpoints and endpoints[0].get("PrivateDnsEnabled"), (
                f"{name} runs in the VPC but no states interface endpoint is there")


def test_strata_environment_variables_are_settings(template):
    """Every STRATA_* variable the template sets is a field strata.foundation.config.Settings reads."""
    from strata.foundation.config import Settings

    fields = set(Settings.model_fields)
    env_maps = [template["Globals"]["Function"].get("Environment", {}).get("Variables", {})]
    env_maps += [f["Properties"].get("Environment", {}).get("Variables", {})
                 for f in resources_of(template, "AWS::Serverless::Function").values()]
    names = {n for env in env_maps for n in env if n.startswith("STRATA_")}
    assert "STRATA_INGEST_STATE_MACHINE_ARN" in names
    unknown = sorted(n for n in names if n.removeprefix("STRATA_").lower() not in fields)
    assert not unknown, f"template sets variables strata does not read: {unknown}"


def test_every_asl_task_names_a_function_of_the_template(template):
    """Every Task of every state machine file invokes ${Name} whose substitution is a
    function of this template (not an ARN typed in, not a function defined elsewhere)."""
    functions = resources_of(template, "AWS::Serverless::Function")
    for name, machine in resources_of(template, "AWS::Serverless::StateMachine").items():
        props = machine["Properties"]
        asl = json.loads((ROOT / props["DefinitionUri"]).read_text(encoding="utf-8"))
        tasks = {n: s for n, s in asl["States"].items() if s["Type"] == "Task"}
        assert tasks, f"{name}: no Task states"
        for state_name, state in tasks.items():
            assert state["Resource"] == "arn:aws:states:::lambda:invoke", state_name
            placeholder = re.fullmatch(r"\$\{(\w+)\}", state["Parameters"]["FunctionName"])
            assert placeholder, f"{name}.{state_name}: FunctionName is not a substitution"
            target = ref_target(props["DefinitionSubstitutions"][placeholder.group(1)])
            assert target in functions, f"{name}.{state_name} invokes {target!r}, not a function"


# ------------------------------------------------------------------ maintenance schedules


def maintenance_constant(name: str) -> int:
    tree = ast.parse((ROOT / "functions" / "maintenance" / "handler.py").read_text())
    for node in tree.body:
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", None) == name:
            return ast.literal_eval(node.value)
    raise AssertionError(f"functions/maintenance/handler.py defines no {name}")


def test_maintenance_jobs_are_scheduled_with_retries_and_a_dead_letter_queue(template):
    """Given the maintenance module's four entry points
    Then each is a function with its own EventBridge Scheduler schedule (lifecycle hourly,
    audit verify daily, digests every minute, prune at most weekly) whose Input carries the scheduler's context
    attributes, with a retry policy and the dead-letter queue, and the function's own async
    failures go to that queue too; its timeout leaves the handler's reserve to finish."""
    functions = resources_of(template, "AWS::Serverless::Function")
    queues = resources_of(template, "AWS::SQS::Queue")
    reserve_s = maintenance_constant("RESERVE_MS") / 1000
    expected = {"handler.lifecycle": {"rate(1 hour)"},
                "handler.audit_verify": {"rate(1 day)", "cron(15 3 * * ? *)"},
                "handler.audit_digest": {"rate(1 minute)"},
                "handler.audit_prune": {"rate(1 day)", "rate(7 days)", "cron(45 4 ? * SUN *)"}}
    seen = {}
    for name, function in functions.items():
        if function_property(template, function, "CodeUri") != "functions/maintenance":
            continue
        handler = function_property(template, function, "Handler")
        schedules = [e["Properties"] for e in function["Properties"].get("Events", {}).values()
                     if e["Type"] == "ScheduleV2"]
        assert len(schedules) == 1, f"{name}: {len(schedules)} schedules"
        [schedule] = schedules
        seen[handler] = schedule["ScheduleExpression"]
        assert json.loads(schedule["Input"]) == {
            "scheduled_time": "<aws.scheduler.scheduled-time>",
            "execution_id": "<aws.scheduler.execution-id>"}, name
        assert schedule["RetryPolicy"]["MaximumRetryAttempts"] >= 1, name
        assert ref_target(schedule["DeadLetterConfig"]["Arn"]) in queues, name
        assert "AWS::StackName" in schedule["Name"]["Fn::Sub"], f"{name}: fixed schedule name"
        on_failure = function["Properties"]["EventInvokeConfig"]["DestinationConfig"]["OnFailure"]
        assert on_failure["Type"] == "SQS"
        assert ref_target(on_failure["Destination"]) == ref_target(schedule["DeadLetterConfig"]["Arn"])
        timeout = function_property(template, function, "Timeout")
        assert timeout >= reserve_s + 60, f"{name}: {timeout} s leaves no time past the reserve"
    assert set(seen) == set(expected), f"scheduled entry points: {sorted(seen)}"
    for handler, expression in seen.items():
        assert expression in expected[handler], f"{handler} runs on {expression}"


# ------------------------------------------------------------------------------ alarms


def alarm_actions_ok(alarm: dict) -> bool:
    """Notifies AlarmTopicArn when it is set, nobody otherwise."""
    want = {"Fn::If": ["HasAlarmTopic", [{"Ref": "AlarmTopicArn"}], {"Ref": "AWS::NoValue"}]}
    return alarm.get("AlarmActions") == want


def test_alarms_watch_what_the_issue_names(template):
    """Given the alarms
    Then there is one on the audit chain break metric exactly as the maintenance handler
    publishes it (namespace, name, service dimension; alarms at 1), one on the ingest state
    machine's failed executions, one on the HTTP API's 5xx and one on the dead-letter
    queue; each notifies the AlarmTopicArn parameter when it is set."""
    alarms = resources_of(template, "AWS::CloudWatch::Alarm")
    assert template["Parameters"]["AlarmTopicArn"]["Default"] == ""
    found = {}
    for name, alarm in alarms.items():
        props = alarm["Properties"]
        assert alarm_actions_ok(props), f"{name}: AlarmActions {props.get('AlarmActions')}"
        dims = {d["Name"]: d["Value"] for d in props.get("Dimensions", [])}
        found[(props["Namespace"], props["MetricName"])] = (name, props, dims)

    source = (ROOT / "functions" / "maintenance" / "handler.py").read_text()
    tree = ast.parse(source)
    metrics_call = next(n for n in ast.walk(tree) if isinstance(n, ast.Call)
                        and getattr(n.func, "id", None) == "Metrics")
    kw = {k.arg: k.value.value for k in metrics_call.keywords}
    assert 'name="AuditChainBroken"' in source
    _, chain, dims = found[(kw["namespace"], "AuditChainBroken")]
    assert dims == {"service": kw["service"]}
    assert (chain["Threshold"], chain["ComparisonOperator"]) == (1, "GreaterThanOrEqualToThreshold")

    _, failed, dims = found[("AWS/States", "ExecutionsFailed")]
    assert ref_target(dims["StateMachineArn"]) in resources_of(template, "AWS::Serverless::StateMachine")
    _, api5xx, dims = found[("AWS/ApiGateway", "5xx")]
    assert ref_target(dims["ApiId"]) in resources_of(template, "AWS::Serverless::HttpApi")
    assert dims["Stage"] == "$default"
    _, dlq, dims = found[("AWS/SQS", "ApproximateNumberOfMessagesVisible")]
    assert ref_target(dims["QueueName"]) in resources_of(template, "AWS::SQS::Queue")
    # control: the action check rejects an alarm that always notifies a fixed topic
    assert not alarm_actions_ok({"AlarmActions": ["arn:aws:sns:us-east-1:123456789012:x"]})


# ------------------------------------------------------------------ API, logs, tracing


def test_http_api_has_the_authorizer_throttling_cors_and_access_logs(template):
    """Given the HttpApi
    Then its default authorizer is the authorizer function (payload 2.0, simple responses,
    keyed and cached on the Authorization header), only GET /healthz, GET /readyz, the
    console's static files (GET /console, /console/{proxy+}), OAuth discovery (GET
    /.well-known/{proxy+}: a 404 for MCP clients) and the documentation (the OpenAPI document,
    its two viewers and their assets) opt out, routes are throttled, CORS origins come from
    a parameter, and access logs are JSON that
    names no header (the key travels in one)."""
    [(api_name, api)] = resources_of(template, "AWS::Serverless::HttpApi").items()
    props = api["Properties"]
    auth = props["Auth"]
    authorizer = auth["Authorizers"][auth["DefaultAuthorizer"]]
    function = template["Resources"][ref_target(authorizer["FunctionArn"])]
    path, attribute = handler_source(template, function)
    assert path == ROOT / "functions" / "authorizer" / "handler.py" and attribute == "handler"
    assert authorizer["AuthorizerPayloadFormatVersion"] == "2.0"
    assert authorizer["EnableSimpleResponses"] is True
    assert authorizer["Identity"]["Headers"] == ["Authorization"]
    assert 0 < authorizer["Identity"]["ReauthorizeEvery"] <= 300
    # API Gateway gives an authorizer 10 s at most.
    assert function_property(template, function, "Timeout") <= 10

    open_routes = [(m, p) for m, p, f in http_routes(template)
                   if template["Resources"][f]["Properties"]["Events"]
                   and any(e["Properties"].get("Auth", {}).get("Authorizer") == "NONE"
                           and (e["Properties"]["Method"].upper(), e["Properties"]["Path"]) == (m, p)
                           for e in template["Resources"][f]["Properties"]["Events"].values())]
    # The console's static files and the documentation: no data, and a browser's navigation
    # sends no key. OAuth discovery (/.well-known): MCP clients probe it without a key; it
    # answers only a 404. /mcp checks the key in its function (a missing one is the
    # transport's 403 naming API keys, not API Gateway's 401, which starts OAuth in MCP
    # clients): tests/test_mcp.py sends its handler Lambda events without an authorizer context.
    assert sorted(open_routes) == [
        ("ANY", "/mcp"),
        ("GET", "/.well-known/{proxy+}"), ("GET", "/console"), ("GET", "/console/{proxy+}"),
        ("GET", "/docs"), ("GET", "/docs/{proxy+}"), ("GET", "/healthz"),
        ("GET", "/openapi.json"), ("GET", "/readyz"), ("GET", "/redoc")]

    throttle = props["DefaultRouteSettings"]
    assert {"ThrottlingRateLimit", "ThrottlingBurstLimit"} <= set(throttle)
    # CORS is all or nothing on the parameter (tests/test_cors.py checks the rest).
    condition, cors, absent = props["CorsConfiguration"]["Fn::If"]
    assert (condition, absent) == ("HasCorsOrigins", {"Ref": "AWS::NoValue"})
    assert "CorsAllowedOrigins" in json.dumps(cors["AllowOrigins"])
    assert "authorization" in cors["AllowHeaders"]

    logs = props["AccessLogSettings"]
    assert ref_target(logs["DestinationArn"]) in resources_of(template, "AWS::Logs::LogGroup")
    record = json.loads(logs["Format"])
    assert {"requestId", "status", "routeKey"} <= set(record)
    assert not [v for v in record.values() if "header" in v.lower() or "authorization" in v.lower()]


def test_state_machine_logs_without_content_and_is_traced(template):
    for name, machine in resources_of(template, "AWS::Serverless::StateMachine").items():
        props = machine["Properties"]
        logging_ = props["Logging"]
        assert logging_["Level"] in ("ERROR", "FATAL", "ALL"), name
        assert logging_["IncludeExecutionData"] is False, f"{name}: execution data in logs"
        [dest] = logging_["Destinations"]
        group = ref_target(dest["CloudWatchLogsLogGroup"]["LogGroupArn"])
        assert group in resources_of(template, "AWS::Logs::LogGroup")
        assert props["Tracing"]["Enabled"] is True, name


def test_every_function_is_traced_named_and_has_a_log_group_with_retention(template):
    """Tracing Active for all; each function sets its own POWERTOOLS_SERVICE_NAME; each has
    an explicit /aws/lambda/<function> log group whose retention is the stack parameter;
    no Tracer decorator copies a response into a trace (the Powertools default)."""
    env = template["Globals"]["Function"]["Environment"]["Variables"]
    assert env["POWERTOOLS_TRACER_CAPTURE_RESPONSE"] == "false"
    groups = {json.dumps(g["Properties"]["LogGroupName"]): g["Properties"]
              for g in resources_of(template, "AWS::Logs::LogGroup").values()}
    for name, function in resources_of(template, "AWS::Serverless::Function").items():
        assert function_property(template, function, "Tracing") == "Active", name
        env = function["Properties"].get("Environment", {}).get("Variables", {})
        service = env.get("POWERTOOLS_SERVICE_NAME")
        assert service and service != "strata", f"{name}: no service name of its own"
        group = groups.get(json.dumps({"Fn::Sub": f"/aws/lambda/${{{name}}}"}))
        assert group, f"{name}: no log group"
        assert group["RetentionInDays"] == {"Ref": "LogRetentionDays"}, name


def call_name(node) -> str | None:
    func = node.func if isinstance(node, ast.Call) else node
    return getattr(func, "attr", None) or getattr(func, "id", None)


def traced_handler(tree: ast.Module, name: str, where: str) -> ast.FunctionDef:
    """The function ``name`` in ``tree``: decorated with capture_lambda_handler and
    capture_response=False, and with metrics.log_metrics (the ColdStart metric)."""
    [handler] = [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == name]
    decorators = [d for d in handler.decorator_list if isinstance(d, ast.Call)]
    traced = [d for d in decorators if call_name(d) == "capture_lambda_handler"]
    assert len(traced) == 1, f"{where}: {name} is not traced"
    assert {k.arg: getattr(k.value, "value", None) for k in traced[0].keywords} == {
        "capture_response": False}, f"{where}: the response may go into the trace"
    assert [d for d in decorators if call_name(d) == "log_metrics"], f"{where}: no metrics"
    return handler


def test_every_handler_is_traced_without_its_response(template):
    """Given each function's handler module
    Then an API function's handler is ``api_handler(...)`` (strata.api.lambda_handler), whose
    handler is traced with capture_response=False, measured and calls the Mangum adapter,
    and whose Tracer patches nothing at import (strata.foundation.aws patches botocore before the first
    AWS client); every other handler builds one
    Powertools Tracer that patches nothing or names what it patches (never the default
    patch-everything) and is decorated the same way."""
    factory = ROOT / "src/strata/api/lambda_handler.py"
    tree = ast.parse(factory.read_text(encoding="utf-8"))
    inner = traced_handler(tree, "handler", "api_handler")
    [ret] = [n for n in ast.walk(inner) if isinstance(n, ast.Return)]
    assert call_name(ret.value) == "asgi", "api_handler's handler skips the Mangum adapter"
    [tracer] = [n for n in ast.walk(tree) if isinstance(n, ast.Call) and call_name(n) == "Tracer"]
    assert {k.arg: getattr(k.value, "value", None) for k in tracer.keywords} == {"auto_patch": False}
    api, other = set(), set()
    for name, function in resources_of(template, "AWS::Serverless::Function").items():
        path, attribute = handler_source(template, function)
        tree = ast.parse(path.read_text(encoding="utf-8"))
        [assign] = [n for n in tree.body if isinstance(n, ast.Assign)
                    and any(getattr(t, "id", None) == attribute for t in n.targets)] or [None]
        if assign is not None and call_name(assign.value) == "api_handler":
            kwargs = {k.arg: k.value for k in assign.value.keywords}
            assert set(kwargs) <= {"lifespan"}, name
            api.add(name)
            continue
        tracers = [n.value for n in tree.body if isinstance(n, ast.Assign)
                   and isinstance(n.value, ast.Call) and call_name(n.value) == "Tracer"]
        assert len(tracers) == 1, f"{path.relative_to(ROOT)}: {len(tracers)} Tracer()s"
        kwargs = {k.arg: k.value for k in tracers[0].keywords}
        assert (getattr(kwargs.get("auto_patch"), "value", None) is False
                or isinstance(kwargs.get("patch_modules"), ast.Tuple)), f"{name}: patches everything"
        traced_handler(tree, attribute, name)
        other.add(name)
    assert len(api) == 7 and len(other) >= 6, (api, other)


def test_every_handler_inits_without_the_collector(template):
    """Given each function's handler module
    Then, after its docstring and ``from __future__`` imports, it imports
    strata.foundation.coldstart and calls ``coldstart.begin()`` before any other statement, and
    ``coldstart.end()`` is its last statement: all of init runs without the cyclic collector on
    Lambda (strata.foundation.coldstart)."""
    seen = set()
    for name, function in resources_of(template, "AWS::Serverless::Function").items():
        path, _ = handler_source(template, function)
        body = ast.parse(path.read_text(encoding="utf-8")).body
        if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
            body = body[1:]  # the docstring
        body = [n for n in body if not (isinstance(n, ast.ImportFrom) and n.module == "__future__")]
        where = path.relative_to(ROOT)
        first, begin, last = body[0], body[1], body[-1]
        assert isinstance(first, ast.ImportFrom) and first.module == "strata.foundation" and [
            a.name for a in first.names] == ["coldstart"], f"{where}: does not start by importing coldstart"
        for statement, call in ((begin, "begin"), (last, "end")):
            assert (isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Call)
                    and ast.unparse(statement.value.func) == f"coldstart.{call}"), (
                f"{where}: line {statement.lineno} is not coldstart.{call}()")
        seen.add(path)
    assert len(seen) >= 10, seen


def test_database_is_encrypted_protected_and_sized_by_parameters(template):
    [(_, cluster)] = resources_of(template, "AWS::RDS::DBCluster").items()
    props = cluster["Properties"]
    assert props["StorageEncrypted"] is True
    assert props["DeletionProtection"] == {"Ref": "DeletionProtection"}
    assert props["BackupRetentionPeriod"] == {"Ref": "BackupRetentionDays"}
    assert props["ServerlessV2ScalingConfiguration"] == {
        "MinCapacity": {"Ref": "DbMinCapacity"}, "MaxCapacity": {"Ref": "DbMaxCapacity"}}
    assert props["EngineVersion"].startswith("17.")
    [(_, proxy)] = resources_of(template, "AWS::RDS::DBProxy").items()
    assert proxy["Properties"]["RequireTLS"] is True


# ------------------------------------------------------------------------------ network

NETWORK_TYPES = {"AWS::EC2::VPC", "AWS::EC2::Subnet", "AWS::EC2::RouteTable",
                 "AWS::EC2::SubnetRouteTableAssociation", "AWS::EC2::VPCEndpoint",
                 "AWS::EC2::InternetGateway", "AWS::EC2::VPCGatewayAttachment",
                 "AWS::EC2::NatGateway", "AWS::EC2::EIP", "AWS::EC2::Route"}
CREATED_OR_GIVEN_SUBNETS = {"Fn::If": ["CreateNetwork",
                                       [{"Ref": "PrivateSubnetA"}, {"Ref": "PrivateSubnetB"}],
                                       {"Ref": "ExistingPrivateSubnetIds"}]}
CREATED_OR_GIVEN_VPC = {"Fn::If": ["CreateNetwork", {"Ref": "Vpc"}, {"Ref": "ExistingVpcId"}]}


# Conditions that hold only with the stack's own network: CreateNetwork, and the ones that
# add to it (the bedrock-runtime endpoint, the NAT gateway) as !And [CreateNetwork, ...].
def network_conditions(template: dict) -> set[str]:
    found = {"CreateNetwork"}
    for name, expr in template["Conditions"].items():
        if {"Condition": "CreateNetwork"} in expr.get("Fn::And", []):
            found.add(name)
    return found


NETWORK_CONDITIONS = {"CreateNetwork", "CreateBedrockEndpoint", "CreateNatGateway"}


def unguarded_refs(node, conditional: set[str], guarded: bool = False) -> list[str]:
    """Refs and GetAtts to `conditional` resources outside the true branch of
    !If [CreateNetwork, ...] (or of a condition that implies it)."""
    if isinstance(node, list):
        return [r for item in node for r in unguarded_refs(item, conditional, guarded)]
    if not isinstance(node, dict):
        return []
    if "Fn::If" in node:
        condition, yes, no = node["Fn::If"]
        return (unguarded_refs(yes, conditional, guarded or condition in NETWORK_CONDITIONS)
                + unguarded_refs(no, conditional, guarded))
    target = ref_target(node)
    if target in conditional and not guarded:
        return [target]
    return [r for value in node.values() for r in unguarded_refs(value, conditional, guarded)]


def test_network_is_created_unless_existing_subnets_are_given(template):
    """Given ExistingVpcId and ExistingPrivateSubnetIds (both empty by default)
    Then the VPC, its subnets, route table and endpoints exist only under CreateNetwork, which
    holds when no subnet ids are given; the functions, RDS Proxy and the database subnet group
    take the created subnets under it and the given ones otherwise, the security groups the
    created or given VPC; nothing else refers to a conditional resource outside that !If (a
    DependsOn could not: it goes through NetworkReady); and the Rules refuse one parameter
    without the other."""
    params = template["Parameters"]
    assert params["ExistingVpcId"]["Default"] == ""
    assert params["ExistingPrivateSubnetIds"]["Type"] == "CommaDelimitedList"
    assert params["ExistingPrivateSubnetIds"]["Default"] == ""
    assert template["Conditions"]["CreateNetwork"] == {
        "Fn::Equals": [{"Fn::Join": ["", {"Ref": "ExistingPrivateSubnetIds"}]}, ""]}
    resources = template["Resources"]
    assert network_conditions(template) == NETWORK_CONDITIONS
    conditional = {n for n, r in resources.items() if r.get("Condition") in NETWORK_CONDITIONS}
    network = {n for n, r in resources.items() if r["Type"] in NETWORK_TYPES}
    assert network and network <= conditional, f"always created: {sorted(network - conditional)}"
    assert {"Vpc", "PrivateSubnetA", "PrivateSubnetB"} <= conditional

    assert template["Globals"]["Function"]["VpcConfig"]["SubnetIds"] == CREATED_OR_GIVEN_SUBNETS
    [group] = resources_of(template, "AWS::RDS::DBSubnetGroup").values()
    assert group["Properties"]["SubnetIds"] == CREATED_OR_GIVEN_SUBNETS
    [proxy] = resources_of(template, "AWS::RDS::DBProxy").values()
    assert proxy["Properties"]["VpcSubnetIds"] == CREATED_OR_GIVEN_SUBNETS
    for name, sg in resources_of(template, "AWS::EC2::SecurityGroup").items():
        if name not in conditional:
            assert sg["Properties"]["VpcId"] == CREATED_OR_GIVEN_VPC, name

    problems = unguarded_refs(template["Globals"], conditional)
    for name, resource in resources.items():
        if name in conditional:
            continue
        problems += [f"{name} -> {t}" for t in unguarded_refs(resource, conditional)]
        depends = resource.get("DependsOn", [])
        problems += [f"{name} DependsOn {d}" for d in ([depends] if isinstance(depends, str)
                                                      else depends) if d in conditional]
    problems += unguarded_refs(template.get("Outputs", {}), conditional)
    assert not problems, problems
    # control: the walker sees a reference outside the guard
    assert unguarded_refs({"SubnetIds": [{"Ref": "PrivateSubnetA"}]}, conditional)
    assert not unguarded_refs(CREATED_OR_GIVEN_SUBNETS, conditional)
    # The migration's reply path still waits for the endpoints when the stack creates them.
    ready = resources["NetworkReady"]["Metadata"]["DependsOnWhenCreated"]["Fn::If"]
    assert ready[0] == "CreateNetwork" and {"SecretsManagerEndpoint", "S3Endpoint"} <= {
        ref_target(r) for r in ready[1]}
    assert "NetworkReady" in resources["DbMigrations"]["DependsOn"]

    rules = json.dumps(template["Rules"])
    assert rules.count("ExistingVpcId") >= 2 and rules.count("ExistingPrivateSubnetIds") >= 2


# ----------------------------------------------------------------------------- samconfig


def samconfig_parameters(env: str) -> dict[str, str]:
    config = tomllib.loads((ROOT / "samconfig.toml").read_text(encoding="utf-8"))
    overrides = config[env]["deploy"]["parameters"]["parameter_overrides"]
    return dict(item.split("=", 1) for item in shlex.split(overrides))


def test_samconfig_environments_set_declared_parameters(template):
    """dev and prod set only parameters the template declares, with allowed values; prod
    keeps deletion protection, more capacity, more backups and longer logs than dev."""
    declared = template["Parameters"]
    envs = {env: samconfig_parameters(env) for env in ("dev", "prod")}
    for env, values in envs.items():
        unknown = set(values) - set(declared)
        assert not unknown, f"{env}: parameters the template does not declare: {unknown}"
        for key, value in values.items():
            allowed = declared[key].get("AllowedValues")
            if allowed:
                assert value in [str(a) for a in allowed], f"{env}: {key}={value}"
    dev, prod = envs["dev"], envs["prod"]
    assert prod["DeletionProtection"] == "true" and dev["DeletionProtection"] == "false"
    for key in ("DbMaxCapacity", "BackupRetentionDays", "LogRetentionDays"):
        assert float(prod[key]) > float(dev[key]), key
    assert prod["Stage"] == "prod" and dev["Stage"] == "dev"


# -------------------------------------------------------------------------------- IAM

# Actions AWS offers no resource-level permissions for, so Resource "*" is the only form.
# Each entry says where the template (or SAM) grants it.
STAR_RESOURCE_ALLOWED = {
    # Step Functions' log delivery (IngestStateMachine's Logging): "CloudWatch Logs delivery
    # ... does not support resource-level permissions".
    "logs:CreateLogDelivery", "logs:GetLogDelivery", "logs:UpdateLogDelivery",
    "logs:DeleteLogDelivery", "logs:ListLogDeliveries", "logs:PutResourcePolicy",
    "logs:DescribeResourcePolicies", "logs:DescribeLogGroups",
}
# AWS managed policies SAM attaches by itself; each holds "*" resources AWS requires.
MANAGED_POLICIES_ALLOWED = {
    # Logs to the function's own group (CreateLogGroup/Stream, PutLogEvents).
    "service-role/AWSLambdaBasicExecutionRole",
    # VPC functions: Lambda creates and deletes ENIs; ec2 Describe*/CreateNetworkInterface
    # take no resource ARNs.
    "service-role/AWSLambdaVPCAccessExecutionRole",
    # Tracing Active: xray:PutTraceSegments and PutTelemetryRecords take no resource ARNs.
    "AWSXrayWriteOnlyAccess",
}


def policy_violations(statements: list[dict]) -> list[str]:
    """Statements granting a wildcard action, or a resource of "*" for an action that has
    resource-level permissions."""
    found = []
    for s in statements:
        if s.get("Effect") != "Allow":
            continue
        actions = s.get("Action", [])
        actions = [actions] if isinstance(actions, str) else actions
        resources = s.get("Resource", [])
        resources = [resources] if not isinstance(resources, list) else resources
        wild = [a for a in actions if "*" in a]
        if wild:
            found.append(f"wildcard action {wild}")
        if "*" in resources:
            extra = sorted(set(actions) - STAR_RESOURCE_ALLOWED)
            if extra:
                found.append(f'Resource "*" for {extra}')
    return found


def statements_of_policies(policies) -> list[dict]:
    out = []
    for policy in policies or []:
        if isinstance(policy, dict) and "Statement" in policy:
            out += policy["Statement"]
        elif isinstance(policy, dict) and "PolicyDocument" in policy:
            out += policy["PolicyDocument"]["Statement"]
    return out


def test_policy_check_catches_wildcards():
    """Control for the IAM tests: the checker flags what it must and passes the exceptions."""
    assert policy_violations([{"Effect": "Allow", "Action": "s3:*", "Resource": "arn:x"}])
    assert policy_violations([{"Effect": "Allow", "Action": "*", "Resource": "*"}])
    assert policy_violations([{"Effect": "Allow", "Action": ["secretsmanager:GetSecretValue"],
                               "Resource": "*"}])
    assert not policy_violations([{"Effect": "Allow", "Action": ["logs:CreateLogDelivery"],
                                   "Resource": "*"}])


def test_inline_policies_are_least_privilege(template):
    """Every statement the template writes itself (function and state machine Policies, IAM
    roles) grants named actions, on named resources unless AWS allows no other way."""
    checked = 0
    for name, resource in template["Resources"].items():
        props = resource.get("Properties", {})
        if resource["Type"] in ("AWS::Serverless::Function", "AWS::Serverless::StateMachine"):
            statements = statements_of_policies(props.get("Policies"))
            named = [p for p in props.get("Policies") or [] if isinstance(p, str)]
            assert not named, f"{name}: managed policy by name {named}"
        elif resource["Type"] == "AWS::IAM::Role":
            statements = statements_of_policies(props.get("Policies"))
            assert not props.get("ManagedPolicyArns"), f"{name}: managed policies"
        else:
            continue
        checked += len(statements)
        problems = policy_violations(statements)
        assert not problems, f"{name}: {problems}"
    assert checked, "no statement checked"


# --------------------------------------------------------------- external tools (offline)
# aws-sam-cli lives in its own virtualenv (its pins clash with ours) and asl-validator comes
# through npx; `make tools` installs both, and .ci/run runs it before `make test`. In CI a
# missing tool fails its test; on a developer's machine it skips, saying how to install it.

SAM = Path(os.environ.get("SAM_BINARY", ROOT / ".venv-sam" / "bin" / "sam"))
ASL_VALIDATOR = "asl-validator@4.0.0"  # keep in step with the Makefile's ASL_VALIDATOR
TOOL_ENV = {"AWS_DEFAULT_REGION": "us-east-1", "SAM_CLI_TELEMETRY": "0"}


def require_tool(available: bool, what: str) -> None:
    if available:
        return
    message = f"{what} is not installed: run `make tools`"
    if os.environ.get("CI"):
        pytest.fail(message)
    pytest.skip(message)


def tool_env() -> dict[str, str]:
    return {**{k: v for k, v in os.environ.items() if not k.startswith("STRATA_")}, **TOOL_ENV}


@pytest.fixture(scope="module")
def transformed() -> dict:
    """template.yaml after the SAM transform, by the samtranslator aws-sam-cli ships."""
    python = SAM.parent / "python"
    require_tool(python.is_file(), "aws-sam-cli")
    out = subprocess.run([str(python), str(ROOT / "tests" / "infra" / "sam_transform.py"),
                          str(TEMPLATE_PATH)], capture_output=True, text=True, env=tool_env(),
                         timeout=120)
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout)


def test_sam_validate_lint_is_clean():
    require_tool(SAM.is_file(), "aws-sam-cli")
    out = subprocess.run([str(SAM), "validate", "--lint", "--template-file", str(TEMPLATE_PATH)],
                         capture_output=True, text=True, env=tool_env(), cwd=ROOT, timeout=180)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    assert "is a valid SAM Template" in out.stdout + out.stderr


def run_asl_validator(*args: str) -> subprocess.CompletedProcess | None:
    """asl-validator from npx's cache (``make tools`` fetched it); None when it is not there."""
    npx = shutil.which("npx")
    if not npx:
        return None
    out = subprocess.run([npx, "--offline", "--yes", ASL_VALIDATOR, *args],
                         capture_output=True, text=True, timeout=120)
    if out.returncode != 0 and ("ENOTCACHED" in out.stderr or "npm error" in out.stderr):
        return None
    return out


def test_asl_validator_is_clean_on_every_state_machine_file():
    files = sorted((ROOT / "infra" / "statemachines").glob("*.asl.json"))
    assert files
    out = run_asl_validator(*[a for f in files for a in ("--json-path", str(f))])
    require_tool(out is not None, ASL_VALIDATOR)
    assert out.returncode == 0, out.stdout + out.stderr
    assert out.stdout.count("is valid") == len(files), out.stdout
    # control: the validator does fail a definition with a dangling Next
    broken = json.loads(files[0].read_text())
    broken["States"][broken["StartAt"]]["Next"] = "NoSuchState"
    out = run_asl_validator("--json-definition", json.dumps(broken))
    assert out.returncode != 0 and "NoSuchState" in out.stdout + out.stderr


def test_makefile_pins_the_asl_validator_the_tests_use():
    assert f"ASL_VALIDATOR := {ASL_VALIDATOR}" in (ROOT / "Makefile").read_text()


def test_transformed_roles_are_one_per_function_and_least_privilege(transformed):
    """After the SAM transform (what CloudFormation deploys): every Lambda function has a
    role of its own; every role's statements pass the wildcard check, and the only managed
    policies are the ones SAM attaches for logs, VPC networking and X-Ray."""
    resources = transformed["Resources"]
    functions = {n: r for n, r in resources.items() if r["Type"] == "AWS::Lambda::Function"}
    roles = {n: r for n, r in resources.items() if r["Type"] == "AWS::IAM::Role"}
    assert len(functions) >= 10 and roles
    role_of = {n: ref_target(f["Properties"]["Role"]) for n, f in functions.items()}
    assert len(set(role_of.values())) == len(role_of), f"shared roles: {role_of}"
    assert set(role_of.values()) <= set(roles)
    # The stack's own ModelAccessPolicy (tests/infra/test_models.py checks whom it goes to and
    # which models it names): attached under its condition, and as clean as inline statements.
    own = {n: r for n, r in resources.items() if r["Type"] == "AWS::IAM::ManagedPolicy"}
    assert set(own) == {"ModelAccessPolicy"}
    own_attached = {"Fn::If": ["CallsModels", {"Ref": "ModelAccessPolicy"}, {"Ref": "AWS::NoValue"}]}
    model_statements = [s["Fn::If"][1] if "Fn::If" in s else s for s in
                        own["ModelAccessPolicy"]["Properties"]["PolicyDocument"]["Statement"]]
    assert not policy_violations(model_statements)
    for name, role in roles.items():
        props = role["Properties"]
        for arn in props.get("ManagedPolicyArns", []):
            if arn == own_attached:
                continue
            text = arn if isinstance(arn, str) else json.dumps(arn)
            policy = re.sub(r"^.*:policy/", "", text).rstrip('"}')
            assert policy in MANAGED_POLICIES_ALLOWED, f"{name}: managed policy {text}"
        problems = policy_violations(statements_of_policies(props.get("Policies")))
        assert not problems, f"{name}: {problems}"


def test_transformed_schedules_and_authorizer(transformed):
    """What SAM generates from the ScheduleV2 events and the authorizer: every schedule's role
    may invoke only its own function and send only to the dead-letter queue, and the HTTP API
    authorizer is a REQUEST authorizer on the Authorization header."""
    resources = transformed["Resources"]
    schedules = {n: r["Properties"] for n, r in resources.items()
                 if r["Type"] == "AWS::Scheduler::Schedule"}
    assert len(schedules) == 5  # one per maintenance entry point, and the event drain
    for name, props in schedules.items():
        target = props["Target"]
        role = resources[ref_target(target["RoleArn"])]["Properties"]
        granted = {(s["Action"] if isinstance(s["Action"], str) else s["Action"][0],
                    json.dumps(s["Resource"]))
                   for s in statements_of_policies(role["Policies"])}
        assert granted == {("lambda:InvokeFunction", json.dumps(target["Arn"])),
                           ("sqs:SendMessage", json.dumps(target["DeadLetterConfig"]["Arn"]))}, name
    api = next(r for r in resources.values() if r["Type"] == "AWS::ApiGatewayV2::Api")
    [scheme] = api["Properties"]["Body"]["components"]["securitySchemes"].values()
    authorizer = scheme["x-amazon-apigateway-authorizer"]
    assert authorizer["type"] == "request"
    assert authorizer["identitySource"] == ["$request.header.Authorization"]
    assert authorizer["enableSimpleResponses"] is True
    assert authorizer["authorizerResultTtlInSeconds"] > 0


# ------------------------------------------------------------------- sam build (offline)
# A real `sam build` into a fresh directory (no cache: what a deploy from this tree ships),
# then the built layers are weighed and their handlers imported from them alone.

CORE_LAYER_BUDGET_MB = 60
# What the python3.11 runtime provides: layers/build_layer.py leaves it out of the layers.
RUNTIME_SHIPS = {"boto3", "botocore", "s3transfer", "jmespath", "python-dateutil", "six",
                 "urllib3"}
RUNTIME_MARKERS = {"python_version": "3.11", "python_full_version": "3.11.0",
                   "sys_platform": "linux", "platform_system": "Linux", "os_name": "posix",
                   "platform_machine": "x86_64", "implementation_name": "cpython",
                   "platform_python_implementation": "CPython"}


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    require_tool(SAM.is_file(), "aws-sam-cli")
    out = tmp_path_factory.mktemp("sam-build")
    proc = subprocess.run(
        [str(SAM), "build", "--template-file", str(TEMPLATE_PATH), "--build-dir",
         str(out / "build"), "--cache-dir", str(out / "cache"), "--parallel"],
        capture_output=True, text=True, env=tool_env(), cwd=ROOT, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return out / "build"


def tree_bytes(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def distributions(site: Path) -> dict:
    import importlib.metadata

    return {canonicalize_name(d.metadata["Name"]): d
            for d in importlib.metadata.distributions(path=[str(site)])}


def built_layer(built: Path, content_uri: str) -> Path:
    template = cfn_yaml.load(str(TEMPLATE_PATH))
    by_uri = {l["Properties"]["ContentUri"].rstrip("/"): name
              for name, l in resources_of(template, "AWS::Serverless::LayerVersion").items()}
    return built / by_uri[content_uri] / "python"


def built_layers(built: Path) -> tuple[Path, Path]:
    return built_layer(built, CORE_LAYER), built_layer(built, OWN_LAYER["mcp"])


def test_built_layers_fit_their_budget_and_share_nothing(built):
    """Given the built template
    Then the core layer (the strata package, its SQL migrations, its dependencies) is under
    60 MB unzipped and has no mcp; the MCP layer has mcp and no distribution the core layer
    already has; neither carries what the runtime ships; each function's own code is only
    its handler folder."""
    core, mcp = built_layers(built)
    core_mb, mcp_mb = tree_bytes(core) / 2**20, tree_bytes(mcp) / 2**20
    assert core_mb < CORE_LAYER_BUDGET_MB, f"core layer {core_mb:.1f} MB unzipped"
    assert (core / "strata" / "__init__.py").is_file()
    assert list((core / "strata" / "db" / "migrations").glob("*.sql"))
    # The console's page and assets are package data the layer must carry too.
    assert {p.name for p in (core / "strata" / "console").iterdir()} >= {
        "index.html", "console.js", "console.css"}
    core_dists, mcp_dists = distributions(core), distributions(mcp)
    assert "mcp" in mcp_dists and "mcp" not in core_dists
    assert "pydantic" in core_dists  # control: the overlap check sees shared names
    shared = sorted(set(core_dists) & set(mcp_dists))
    assert not shared, f"in both layers (Lambda would mix their files in /opt): {shared}"
    shipped_twice = sorted((set(core_dists) | set(mcp_dists)) & {"boto3", "botocore", "s3transfer"})
    assert not shipped_twice, f"the runtime has these: {shipped_twice}"
    assert mcp_mb + core_mb < 250, "Lambda's limit for a function and its layers"
    # The docs layer: the viewers' bundles alone; FastAPI, which fastapi-offline requires, is
    # the core layer's.
    docs = built_layer(built, OWN_LAYER["fastapi-offline"])
    docs_dists = distributions(docs)
    assert set(docs_dists) == {"fastapi-offline"}, sorted(docs_dists)
    assert "fastapi" in core_dists and "fastapi-offline" not in core_dists
    assert (docs / "fastapi_offline" / "static" / "swagger-ui-bundle.js").is_file()
    assert tree_bytes(docs) / 2**20 < 10
    assert not unmet_requirements(docs_dists, {**core_dists, **docs_dists})
    built_template = cfn_yaml.load(str(built / "template.yaml"))
    for name, function in resources_of(built_template, "AWS::Serverless::Function").items():
        code = built / function["Properties"]["CodeUri"]
        assert tree_bytes(code) < 64 * 1024, f"{name}: {tree_bytes(code)} bytes of its own"


def test_built_layers_carry_bytecode_lambda_uses_as_it_is(built):
    """Given the built layers (read-only in /opt on Lambda: nothing compiled there is kept)
    Then every Python source in them has its CPython 3.11 bytecode beside it, unchecked-hash
    (used without comparing the source's time, which zipping changes), so a cold start
    compiles nothing (control: the layer's sources are found, so the check sees them)."""
    import importlib.util

    for layer in built_layers(built):
        sources = list(layer.rglob("*.py"))
        assert len(sources) > 300, layer
        missing, checked = [], []
        for source in sources:
            cached = Path(importlib.util.cache_from_source(str(source)))
            if not cached.is_file():
                missing.append(str(source.relative_to(layer)))
                continue
            header = cached.read_bytes()[:8]
            flags = int.from_bytes(header[4:8], "little")
            if header[:4] != importlib.util.MAGIC_NUMBER or flags != 0b01:
                checked.append(str(source.relative_to(layer)))
        assert not missing, f"{layer.parent.name}: no bytecode for {missing[:5]} ({len(missing)})"
        assert not checked, f"{layer.parent.name}: not 3.11 unchecked-hash: {checked[:5]}"


def _layer_builder():
    """layers/build_layer.py as a module: its constants are the ones the tests check."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("build_layer", ROOT / "layers" / "build_layer.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def unmet_requirements(dists: dict, available: dict, unused: frozenset = frozenset()) -> list[str]:
    """Requirements (with extras, for Lambda's python3.11 on x86_64 Linux) of `dists` that
    neither `available` nor the runtime satisfies, leaving out the `unused` ones."""
    unmet = []
    for name, dist in dists.items():
        todo = [(r, "") for r in map(Requirement, dist.requires or [])]
        while todo:
            req, extra = todo.pop()
            if req.marker and not req.marker.evaluate({**RUNTIME_MARKERS, "extra": extra}):
                continue
            dep = canonicalize_name(req.name)
            if (dep in RUNTIME_SHIPS or dep in unused) and dep not in available:
                continue
            if dep not in available or not req.specifier.contains(available[dep].version,
                                                                  prereleases=True):
                unmet.append(f"{name} needs {req}")
                continue
            todo += [(r, e) for e in req.extras for r in map(Requirement, available[dep].requires or [])]
    return unmet


def test_built_layers_satisfy_every_requirement_they_carry(built):
    """Every distribution in the core layer has its requirements met by the core layer (or
    the runtime), and every one in the MCP layer by the two layers together, at versions in
    range: leaving the shared ones to the core layer lost nothing."""
    core, mcp = built_layers(built)
    core_dists, mcp_dists = distributions(core), distributions(mcp)
    # What the builder leaves out on purpose (imported only by parts of a dependency strata
    # never uses; the handlers import from the built layers alone below) is all that is unmet.
    unused = frozenset(_layer_builder().UNUSED)
    assert not unmet_requirements(core_dists, core_dists, unused)
    assert {u.split(" needs ")[1] for u in unmet_requirements(core_dists, core_dists)} <= unused
    assert not unmet_requirements(mcp_dists, {**core_dists, **mcp_dists}, unused)
    # control: without the core layer, the MCP layer misses pydantic
    assert any("pydantic" in u for u in unmet_requirements(mcp_dists, mcp_dists))


IMPORT_FROM_LAYERS = r'''
import importlib, json, sys
paths, specs = json.loads(sys.argv[1]), json.loads(sys.argv[2])
sys.path[:0] = paths
out = {}
for name, code, handler in specs:
    module_name, attribute = handler.rsplit(".", 1)
    sys.path.insert(0, code)
    try:
        sys.modules.pop(module_name, None)
        out[name] = callable(getattr(importlib.import_module(module_name), attribute))
    except Exception as exc:
        out[name] = f"{type(exc).__name__}: {exc}"
    finally:
        sys.path.remove(code)
import importlib.util
print(json.dumps({"functions": out, "mcp_loaded": "mcp" in sys.modules,
                  "docs_assets": importlib.util.find_spec("fastapi_offline") is not None}))
'''


def test_built_handlers_import_from_their_layers_alone(built, tmp_path):
    """Given each built function and the built layers the template gives it (plus the boto3
    the runtime has)
    When its handler is imported by an interpreter without site-packages (python -S)
    Then it imports: the layers miss nothing; the functions without the MCP layer import
    without the mcp package; and the documentation's bundles are found where the docs layer
    is (the health function), and only there."""
    import importlib.util

    runtime = tmp_path / "runtime"  # the python3.11 runtime's boto3 and its dependencies
    runtime.mkdir()
    for module in ("boto3", "botocore", "s3transfer", "jmespath", "dateutil", "six", "urllib3"):
        spec = importlib.util.find_spec(module)
        origin = Path(spec.submodule_search_locations[0] if spec.submodule_search_locations
                      else spec.origin)
        (runtime / origin.name).symlink_to(origin)
    template = cfn_yaml.load(str(built / "template.yaml"))
    groups: dict[tuple, list] = {}
    for name, function in resources_of(template, "AWS::Serverless::Function").items():
        layers = tuple(str(built / ref_target(l) / "python") for l in reversed(
            template["Globals"]["Function"]["Layers"] + function["Properties"].get("Layers", [])))
        groups.setdefault(layers, []).append(
            (name, str(built / function["Properties"]["CodeUri"]),
             function_property(template, function, "Handler")))
    assert len(groups) == 3  # the core layer alone, with the MCP layer, with the docs layer
    mcp_layer = str(built_layer(built, OWN_LAYER["mcp"]))
    docs_layer = str(built_layer(built, OWN_LAYER["fastapi-offline"]))
    env = {**{k: v for k, v in os.environ.items() if not k.startswith(("STRATA_", "PYTHON"))},
           "STRATA_RUNTIME": "aws", "STRATA_DB_HOST": "proxy.invalid",
           "AWS_DEFAULT_REGION": "us-east-1", "POWERTOOLS_SERVICE_NAME": "import-check"}
    imported = {}
    for layers, specs in groups.items():
        # Later layers win in /opt, so they come first on the path.
        proc = subprocess.run([sys.executable, "-S", "-B", "-c", IMPORT_FROM_LAYERS,
                               json.dumps([*layers, str(runtime)]), json.dumps(specs)],
                              capture_output=True, text=True, env=env, timeout=300, cwd=tmp_path)
        assert proc.returncode == 0, proc.stderr[-3000:]
        report = json.loads(proc.stdout)
        failed = {n: r for n, r in report["functions"].items() if r is not True}
        assert not failed, failed
        assert report["mcp_loaded"] == (mcp_layer in layers), (layers, report)
        assert report["docs_assets"] == (docs_layer in layers), (layers, report)
        imported.update(report["functions"])
    assert len(imported) >= 10


# ----------------------------------------------------------------- audit anchoring


def test_audit_digests_are_locked_signed_and_only_the_digest_job_may_write_them(template):
    """Given the audit anchoring resources
    Then the digest bucket has Object Lock in compliance mode with a default retention of at
    least the 90-day floor, versioning, no public access and is retained with the stack; the
    key is asymmetric (ECC_NIST_P256, SIGN_VERIFY) and retained; only the digest function may
    sign or put digests, the verifying functions (daily verify, the admin API) may only read
    and verify, and each of the three gets the bucket and key through its environment."""
    [bucket] = resources_of(template, "AWS::S3::Bucket").items()
    name, bucket = bucket
    props = bucket["Properties"]
    assert props["ObjectLockEnabled"] is True and bucket["DeletionPolicy"] == "Retain"
    retention = props["ObjectLockConfiguration"]["Rule"]["DefaultRetention"]
    assert retention["Mode"] == "COMPLIANCE"
    days = template["Parameters"][retention["Days"]["Ref"]]
    assert days["MinValue"] >= 90 and days["Default"] >= days["MinValue"]
    assert props["VersioningConfiguration"]["Status"] == "Enabled"
    assert all(props["PublicAccessBlockConfiguration"].values())
    [(key_name, key)] = resources_of(template, "AWS::KMS::Key").items()
    assert (key["Properties"]["KeySpec"], key["Properties"]["KeyUsage"]) == ("ECC_NIST_P256", "SIGN_VERIFY")
    assert key["DeletionPolicy"] == "Retain"

    functions = resources_of(template, "AWS::Serverless::Function")
    grants: dict[str, set[str]] = {}
    for fname, function in functions.items():
        for statement in statements_of_policies(function["Properties"].get("Policies")):
            actions = statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]]
            if json.dumps(statement["Resource"]).count(name) or json.dumps(statement["Resource"]).count(key_name):
                grants.setdefault(function_property(template, function, "Handler")
                                  if function["Properties"].get("CodeUri") == "functions/maintenance"
                                  else fname, set()).update(actions)
    assert grants == {
        "handler.audit_digest": {"s3:ListBucket", "s3:GetObject", "s3:PutObject",
                                 "s3:PutObjectRetention", "kms:Sign", "kms:Verify"},
        "handler.audit_verify": {"s3:ListBucket", "s3:GetObject", "kms:Verify", "kms:GetPublicKey"},
        "AdminFunction": {"s3:ListBucket", "s3:GetObject", "kms:Verify", "kms:GetPublicKey"},
    }, grants
    for fname, function in functions.items():
        env = function["Properties"].get("Environment", {}).get("Variables", {})
        named = function_property(template, function, "Handler") if function["Properties"].get(
            "CodeUri") == "functions/maintenance" else fname
        if named in grants:
            assert env.get("STRATA_AUDIT_DIGEST_BUCKET") == {"Ref": name}, fname
            assert env.get("STRATA_AUDIT_DIGEST_KEY_ID") == {"Fn::GetAtt": [key_name, "Arn"]}, fname
