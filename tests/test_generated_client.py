"""A client generated from the OpenAPI document reads well and works: openapi-python-client
names each function after the operation's operationId (``create_memories``, not
``create_v1_memories_post``), and the generated create and search talk to a live server.

openapi-python-client 0.29 pins httpx < 0.29 and typer < 0.28, below this project's own
pins, so it is not in the dev extra: `make tools` installs it apart, in .venv-opc (or name
another directory in OPENAPI_PYTHON_CLIENT_PATH). The generator runs in a subprocess with
that directory on its path; the client it writes needs only httpx and attrs, which the
project has. Without it the test skips on a developer's machine and fails under CI (env CI
set), where .ci/run runs `make tools`.
"""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from strata.api.app import create_app
from strata.foundation.config import Settings

PACKAGE = "strata_generated"
ROOT = Path(__file__).resolve().parents[1]


def generator_env() -> dict[str, str]:
    env = dict(os.environ)
    apart = Path(os.environ.get("OPENAPI_PYTHON_CLIENT_PATH") or ROOT / ".venv-opc")
    if (apart / "openapi_python_client").is_dir():
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(apart), env.get("PYTHONPATH")) if p)
        return env
    if importlib.util.find_spec("openapi_python_client") is None:
        message = f"openapi-python-client is not in {apart} (`make tools` installs it there)"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    return env


def snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


@pytest.fixture
def generated(tmp_path: Path):
    """The client generated from the document, importable as ``strata_generated``."""
    import json

    document = create_app(settings=Settings(embedding_dim=384, rate_limit=False)).openapi()
    spec = tmp_path / "openapi.json"
    spec.write_text(json.dumps(document))
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"package_name_override": PACKAGE, "post_hooks": []}))
    made = subprocess.run(
        [sys.executable, "-m", "openapi_python_client", "generate", "--path", str(spec),
         "--output-path", str(tmp_path / PACKAGE), "--meta", "none", "--config", str(config)],
        capture_output=True, text=True, env=generator_env(), timeout=120)
    assert made.returncode == 0, made.stdout + made.stderr
    # The generator warns about what it cannot express; the document should give it nothing.
    assert "Warning" not in made.stdout + made.stderr, made.stdout + made.stderr
    sys.path.insert(0, str(tmp_path))
    try:
        yield document, tmp_path / PACKAGE
    finally:
        sys.path.remove(str(tmp_path))
        for name in [m for m in sys.modules if m == PACKAGE or m.startswith(PACKAGE + ".")]:
            del sys.modules[name]


def test_a_generated_client_is_named_from_the_operation_ids_and_works(generated, server, tenant):
    """Given the client openapi-python-client generates from the document
    Then its function modules are the operationIds in snake case, one per operation
    (create_memories, search_memories, ...); and against a live server its create_memories
    stores a memory that its search_memories then finds. Control: the same search with a
    key the server does not know answers 401."""
    document, root = generated
    ids = {op["operationId"] for ops in document["paths"].values() for op in ops.values()}
    modules = {p.stem for p in (root / "api").glob("*/*.py") if p.stem != "__init__"}
    assert modules == {snake(i) for i in ids}
    assert {"create_memories", "search_memories", "list_memories", "get_memory"} <= modules

    from strata_generated.api.memories import create_memories
    from strata_generated.api.search import search_memories
    from strata_generated.client import AuthenticatedClient
    from strata_generated.models.create_request import CreateRequest
    from strata_generated.models.search_request import SearchRequest

    client = AuthenticatedClient(base_url=server, token=tenant.key)
    made = create_memories.sync(client=client, body=CreateRequest.from_dict({"memories": [
        {"content": "The team ships releases on Tuesdays", "path": "agents.release"}]}))
    [result] = made.results
    assert str(result.status) == "inserted"
    query = SearchRequest.from_dict({"query": "when does the team ship releases"})
    found = search_memories.sync(client=client, body=query)
    assert [(str(r.id), r.content) for r in found.results][:1] == [
        (str(result.id), "The team ships releases on Tuesdays")]

    stranger = AuthenticatedClient(base_url=server, token="sk_000000000000_" + "x" * 43)
    assert search_memories.sync_detailed(client=stranger, body=query).status_code == 401
