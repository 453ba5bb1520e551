"""The client-only install: `pip install .` of this repository into a fresh virtualenv (no
system site-packages, so a missing dependency cannot hide) gives ``strata.client`` with httpx
and pydantic, and none of the server's packages; that install then talks to a live server.

The wheel is built from a copy of the repository with this interpreter's setuptools (no build
isolation, nothing fetched for the build); its dependencies come from the machine's pip
configuration, as they would for a user.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import textwrap
import typing
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# Top-level import names of the `server` extra (and of what they pull in), none of which the
# client may need.
SERVER_PACKAGES = ("psycopg", "psycopg_pool", "fastapi", "starlette", "uvicorn", "mangum",
                   "boto3", "botocore", "aws_lambda_powertools", "mcp", "openai",
                   "detect_secrets", "simplemma", "tqdm", "yaml", "requests", "httptools",
                   "uvloop", "standardwebhooks")
# The agent frameworks the integration extras pull (strata[langgraph], [langmem],
# [openai-agents]): none is part of the base install either.
FRAMEWORKS = ("langgraph", "langchain_core", "langmem", "agents")


def run(*args: str | Path, **kw) -> subprocess.CompletedProcess:
    done = subprocess.run([str(a) for a in args], capture_output=True, text=True, timeout=300,
                          **kw)
    assert done.returncode == 0, done.stdout + done.stderr
    return done


@pytest.fixture(scope="module")
def venv(tmp_path_factory) -> Path:
    """A virtualenv holding `pip install <wheel of this repository>` and nothing else."""
    tmp = tmp_path_factory.mktemp("client-install")
    source = tmp / "source"
    source.mkdir()
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy(ROOT / name, source / name)
    shutil.copytree(ROOT / "src", source / "src",
                    ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    run(sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation",
        "--wheel-dir", tmp / "wheels", source)
    [wheel] = (tmp / "wheels").glob("strata-*.whl")
    env = tmp / "venv"
    run(sys.executable, "-m", "venv", env)
    run(env / "bin" / "python", "-m", "pip", "install", "--quiet", "--only-binary", ":all:",
        wheel)
    return env


def in_venv(venv: Path, code: str, *args: str) -> str:
    return run(venv / "bin" / "python", "-c", textwrap.dedent(code), *args, cwd=venv).stdout


def test_the_base_install_is_the_client_without_the_server(venv):
    """Given `pip install .` into a fresh virtualenv
    When its interpreter looks for the server's packages and imports the client with every
    model
    Then none of the server's packages nor of the agent frameworks is installed, httpx and pydantic are (control), and
    the client, its errors and all its models import; the distributions installed are
    strata, httpx, pydantic, argcomplete (the CLI's completion) and theirs: 13 today."""
    found = json.loads(in_venv(venv, """
        import importlib.util, json, sys
        import strata.client
        from strata.client import models
        names = sys.argv[1:]
        print(json.dumps({
            "present": [n for n in names if importlib.util.find_spec(n) is not None],
            "models": sorted(models.__all__),
            "loaded": sorted({m.split(".")[0] for m in sys.modules}),
        }))
    """, "httpx", "pydantic", *SERVER_PACKAGES, *FRAMEWORKS))
    assert found["present"] == ["httpx", "pydantic"]
    assert {"Memory", "MemoryIn", "Receipt", "SearchRequest", "SearchResult"} <= set(found["models"])
    assert not set(found["loaded"]) & {*SERVER_PACKAGES, *FRAMEWORKS}

    listed = json.loads(run(venv / "bin" / "python", "-m", "pip", "list", "--format", "json").stdout)
    installed = {p["name"].lower() for p in listed} - {"pip", "setuptools"}
    assert {"strata", "httpx", "pydantic"} <= installed and len(installed) <= 13, installed


def test_the_install_carries_the_license(venv):
    """Given `pip install .` into a fresh virtualenv
    When the installed distribution's metadata and files are read
    Then it declares Apache-2.0 as an SPDX expression (PEP 639, setuptools >= 77) and ships
    the LICENSE text itself (control: the text is the Apache License 2.0's)."""
    found = json.loads(in_venv(venv, """
        import json
        from importlib.metadata import distribution
        d = distribution("strata")
        [lic] = [f for f in d.files if f.name == "LICENSE"]
        print(json.dumps({"expression": d.metadata["License-Expression"],
                          "text": lic.read_text()}))
    """))
    assert found["expression"] == "Apache-2.0"
    assert "Apache License" in found["text"] and "Version 2.0, January 2004" in found["text"]


def test_the_installed_client_works_against_a_live_server(venv, server, tenant):
    """Given the client-only install and a live server
    When it remembers a statement as is, recalls it, reads it back, remembers a conversation
    (ingest), asks for a memory that does not exist, and remembers a password as is
    Then each answer is the typed model with the statement; the missing memory raises
    NotFound; the password is refused by the server (the client has no secret scanner) as
    InvalidInput naming content, without the password in the error."""
    out = json.loads(in_venv(venv, """
        import json, sys, uuid
        from strata.client import Client, InvalidInput, Memory, NotFound, SearchResult

        with Client(sys.argv[1], sys.argv[2]) as strata:
            made = strata.remember("I drive a Volvo", "users.alice", as_is=True)
            hits = strata.recall("which car do I drive", paths=["users.alice"])
            memory = strata.memories.get(made.items[0].memory_id)
            receipt = strata.remember("I live in Lisbon", "users.alice")
            try:
                strata.memories.get(uuid.uuid4())
                missing = None
            except NotFound as exc:
                missing = exc.status
            try:
                strata.remember("the wifi password is hunter2", "users.alice", as_is=True)
                refused = None
            except InvalidInput as exc:
                refused = [exc.status, exc.field, str(exc)]
        print(json.dumps({
            "made": [made.items[0].outcome, str(made.items[0].memory_id)],
            "hits": [[type(h).__name__, str(h.id), h.content] for h in hits],
            "memory": [type(memory).__name__, memory.content, memory.version],
            "receipt": [type(receipt).__name__, receipt.status,
                        [(i.outcome, i.content) for i in receipt.items]],
            "missing": missing, "refused": refused,
        }))
    """, server, tenant.key))
    status, mid = out["made"]
    assert status == "created"
    assert out["hits"][0] == ["SearchResult", mid, "I drive a Volvo"]
    assert out["memory"] == ["Memory", "I drive a Volvo", 1]
    assert out["receipt"] == ["Remembered", "wrote", [["created", "The user lives in Lisbon"]]]
    assert out["missing"] == 404
    status, field, message = out["refused"]
    assert (status, field) == (422, "content") and "does not store secrets" in message
    assert "hunter2" not in message


def test_the_client_models_are_the_server_classes():
    """Given the client's models and the modules the API routes and MCP tools validate with
    Then every shared name is the very same class (not a copy that could drift), and the
    routes' request bodies are those classes (control: the API's route for POST /v1/memories
    takes CreateRequest)."""
    from strata.api.routes import memories as memory_routes
    from strata.client import models
    from strata.ingest import models as ingest
    from strata.memories import models as memories
    from strata.search import hybrid as search, models as search_models

    shared = {
        "CreateRequest": memories, "HistoryEntry": memories, "Memory": memories,
        "MemoryIn": memories, "MemoryPatch": memories, "WriteResult": memories,
        "IngestRequest": ingest, "ItemOutcome": ingest, "Message": ingest, "NotKept": ingest,
        "Receipt": ingest, "SearchRequest": search_models, "SearchResult": search_models,
    }
    for name, module in shared.items():
        assert getattr(models, name) is getattr(module, name), name
    assert search.SearchRequest is models.SearchRequest
    assert issubclass(models.ReviewItem, memories.Memory)
    create = next(r for r in memory_routes.router.routes
                  if getattr(r, "path", "") == "/v1/memories" and "POST" in r.methods)
    assert typing.get_type_hints(create.endpoint)["body"] is models.CreateRequest


def test_each_integration_extra_pulls_its_framework_only():
    """Given pyproject's extras and the Lambda layers' requirements
    Then strata[langgraph] is langgraph, strata[langmem] the store's extra and langmem,
    strata[openai-agents] openai-agents; the base install, the server extra and every layer
    name none of them (the Lambda functions keep their cold start); dev names all three, so
    their tests run in CI."""
    import tomllib

    from packaging.requirements import Requirement

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras = project["optional-dependencies"]

    def names(requirements) -> list[str]:
        return sorted(Requirement(r).name + "".join(f"[{e}]" for e in sorted(Requirement(r).extras))
                      for r in requirements)

    assert names(extras["langgraph"]) == ["langgraph"]
    assert names(extras["langmem"]) == ["langmem", "strata[langgraph]"]
    assert names(extras["openai-agents"]) == ["openai-agents"]
    frameworks = {"langgraph", "langmem", "openai-agents", "langchain-core"}
    layers = [line.split("#")[0].strip() for req in ROOT.glob("layers/*/*requirements.txt")
              for line in req.read_text().splitlines()]
    for requirements in (project["dependencies"], extras["server"], [r for r in layers if r]):
        assert not {Requirement(r).name for r in requirements} & frameworks
    assert "strata[langgraph,langmem,openai-agents]" in extras["dev"]
