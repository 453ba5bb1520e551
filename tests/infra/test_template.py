"""template.yaml and the code it points at agree.

Static checks only: no AWS, no network, no PostgreSQL, and no import of the handlers (they
import the core and mangum at module level); handler files are read with ``ast``.
"""

from __future__ import annotations

import ast
import json
import re
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
    "/v1/memories": "memories",
    "/v1/keys": "access",
    "/v1/grants": "access",
    "/v1/principals": "access",
    "/v1/audit": "audit",
    "/v1/ingest": "ingest",
    "/v1/review": "review",
    "/v1/search": "search",
    "/mcp": "mcp",
}

# Routers that start the ingest pipeline (`remember` with messages, over MCP).
INGESTING = {"ingest", "mcp"}

# The v1 routes API Gateway must forward (method, path).
REQUIRED_ROUTES = {
    ("GET", "/healthz"),
    ("ANY", "/v1/memories"),
    ("ANY", "/v1/memories/{proxy+}"),
    ("ANY", "/v1/keys"),
    ("ANY", "/v1/keys/{proxy+}"),
    ("ANY", "/v1/grants"),
    ("ANY", "/v1/grants/{proxy+}"),
    ("ANY", "/v1/principals"),
    ("ANY", "/v1/audit"),
    ("ANY", "/v1/audit/{proxy+}"),
    ("ANY", "/v1/ingest"),
    ("ANY", "/v1/ingest/{proxy+}"),
    ("ANY", "/v1/review"),
    ("ANY", "/v1/review/{proxy+}"),
    ("POST", "/v1/search"),
    ("ANY", "/mcp"),
}

# Package dependencies the layer leaves out on purpose.
NOT_IN_LAYER = {
    "boto3": "the Lambda runtime has it",
    "uvicorn": "the local server only",
    "tqdm": "CLI progress bars only",
}

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
    """Router names passed as a literal to create_app(routers=...) anywhere in the module."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        callee = getattr(node.func, "id", None) or getattr(node.func, "attr", None)
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
    api_ids = set(resources_of(template, "AWS::Serverless::HttpApi"))
    routes = set()
    for name, function in resources_of(template, "AWS::Serverless::Function").items():
        events = function["Properties"].get("Events", {})
        http_events = [e["Properties"] for e in events.values() if e["Type"] == "HttpApi"]
        if not http_events:
            continue
        path, _ = handler_source(template, function)
        served = routers_named(ast.parse(path.read_text(encoding="utf-8")))
        for event in http_events:
            assert event.get("ApiId", {}).get("Ref") in api_ids, f"{name}: route off the HttpApi"
            route = (event["Method"].upper(), event["Path"])
            routes.add(route)
            router = router_for(event["Path"])
            assert router, f"{name}: no core router is known for {event['Path']}"
            assert router in served, f"{name} serves {route} but its app has routers {served}"
    missing = REQUIRED_ROUTES - routes
    assert not missing, f"routes not in template.yaml: {sorted(missing)}"


def test_migrations_run_at_deploy(template):
    custom = [r for r in template["Resources"].values() if r["Type"].startswith("Custom::")]
    assert custom, "no custom resource runs the migrations"
    for resource in custom:
        target = resource["Properties"]["ServiceToken"]["Fn::GetAtt"][0]
        path, _ = handler_source(template, template["Resources"][target])
        tree = ast.parse(path.read_text(encoding="utf-8"))
        calls = {getattr(n.func, "id", None) for n in ast.walk(tree) if isinstance(n, ast.Call)}
        assert "migrate_database" in calls, f"{path.relative_to(ROOT)}: no migrate_database()"


def test_layer_ships_the_strata_package(template):
    runtime = template["Globals"]["Function"]["Runtime"]
    for name, layer in resources_of(template, "AWS::Serverless::LayerVersion").items():
        content = ROOT / layer["Properties"]["ContentUri"]
        assert content.is_dir(), f"{name}: ContentUri {content} is missing"
        # BuildMethod python3.x adds python/ itself, so the package sits at the top.
        assert layer["Metadata"]["BuildMethod"] == runtime
        assert (content / "strata").resolve() == (ROOT / "src" / "strata").resolve()
        assert (content / "strata" / "__init__.py").is_file()
        assert (content / "requirements.txt").is_file()


def test_layer_requirements_cover_the_package_dependencies(template):
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    declared = project["dependencies"] + project.get("optional-dependencies", {}).get("aws", [])
    needed = {
        canonicalize_name(r.name): r.extras
        for r in map(Requirement, declared)
        if canonicalize_name(r.name) not in NOT_IN_LAYER
    }
    assert needed, "pyproject.toml declares no dependencies"
    for name, layer in resources_of(template, "AWS::Serverless::LayerVersion").items():
        text = (ROOT / layer["Properties"]["ContentUri"] / "requirements.txt").read_text()
        lines = [line for line in text.splitlines() if line.strip()[:1] not in ("", "#")]
        shipped = {canonicalize_name(r.name): r.extras for r in map(Requirement, lines)}
        missing = sorted(
            n for n, extras in needed.items() if n not in shipped or not extras <= shipped[n]
        )
        assert not missing, f"{name}: its requirements.txt lacks {missing} (see pyproject.toml)"


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
    from strata.config import Settings

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
    """Every STRATA_* variable the template sets is a field strata.config.Settings reads."""
    from strata.config import Settings

    fields = set(Settings.model_fields)
    env_maps = [template["Globals"]["Function"].get("Environment", {}).get("Variables", {})]
    env_maps += [f["Properties"].get("Environment", {}).get("Variables", {})
                 for f in resources_of(template, "AWS::Serverless::Function").values()]
    names = {n for env in env_maps for n in env if n.startswith("STRATA_")}
    assert "STRATA_INGEST_STATE_MACHINE_ARN" in names
    unknown = sorted(n for n in names if n.removeprefix("STRATA_").lower() not in fields)
    assert not unknown, f"template sets variables strata does not read: {unknown}"
