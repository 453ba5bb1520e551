"""Assertions and helpers shared by the test modules."""

from __future__ import annotations

import contextlib
import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def fake_aws_credentials(monkeypatch, region: str = "us-east-1") -> None:
    """What moto needs in the environment: credentials that cannot reach AWS, and a region."""
    for name, value in {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
                        "AWS_SESSION_TOKEN": "testing", "AWS_DEFAULT_REGION": region}.items():
        monkeypatch.setenv(name, value)


def bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


def assert_error(resp, status: int, code: str, field: str | None = None) -> dict:
    """The contract's error body: {"error": {"code", "message", "field"?}} with a fitting
    status; ``field`` is checked when given."""
    assert resp.status_code == status, resp.text
    body = resp.json()
    assert set(body) == {"error"}, body
    err = body["error"]
    assert err["code"] == code, body
    assert isinstance(err["message"], str) and err["message"], body
    if field is not None:
        assert err.get("field") == field, body
    return err


class LambdaContext:
    """A Lambda context: what the handlers and Powertools read of one, with a chosen
    amount of time left."""

    memory_limit_in_mb = 1024
    log_stream_name = "2026/11/29/[$LATEST]0123456789abcdef"

    def __init__(self, function_name: str = "strata-test", *, remaining_ms: int = 300_000,
                 request_id: str = "c6af9ac6-7b61-11e6-9a41-93e812345678") -> None:
        self.function_name = function_name
        self.invoked_function_arn = (
            f"arn:aws:lambda:us-east-1:123456789012:function:{function_name}")
        self.aws_request_id = request_id
        self.remaining_ms = remaining_ms

    def get_remaining_time_in_millis(self) -> int:
        return self.remaining_ms


def load_module(name: str, path: Path, *, register: bool = False) -> ModuleType:
    """The module at ``path`` (a function's handler, an eval script), executed afresh under
    ``name``; ``register`` puts it in sys.modules first (dataclasses in it need that)."""
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    if register:
        sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def run_python(code: str, *args: str, env: dict[str, str] | None = None) -> dict:
    """``code`` run by a fresh interpreter in the repository (``args`` its argv): the JSON
    object its last line of output prints. Fails with the interpreter's stderr."""
    proc = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True,
                          timeout=120, cwd=ROOT, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


# -- HTTP helpers shared by the memory, access and write-path tests ----------------------


def create(client, headers, *items: dict, on_conflict: str | None = None):
    body: dict[str, Any] = {"memories": list(items)}
    if on_conflict is not None:
        body["on_conflict"] = on_conflict
    return client.post("/v1/memories", headers=headers, json=body)


def create_ok(client, headers, *items: dict, on_conflict: str | None = None) -> list[dict]:
    r = create(client, headers, *items, on_conflict=on_conflict)
    assert r.status_code == 200, r.text
    results = r.json()["results"]
    assert len(results) == len(items), results
    return results


def write(client, key: str, content: str, path: str | None = None):
    item: dict[str, Any] = {"content": content}
    if path is not None:
        item["path"] = path
    return client.post("/v1/memories", headers=bearer(key), json={"memories": [item]})


def write_ok(client, key: str, content: str, path: str | None = None) -> str:
    r = write(client, key, content, path)
    assert r.status_code == 200, r.text
    [res] = r.json()["results"]
    assert res["status"] == "inserted", res
    return res["id"]


def read(client, key: str, memory_id: str):
    return client.get(f"/v1/memories/{memory_id}", headers=bearer(key))


def effective(db, key_id: str) -> set[tuple[str, str]]:
    """The key's effective access as the SQL function computes it."""
    with db.connection() as conn:
        rows = conn.execute(
            "SELECT path::text AS path, level::text AS level FROM effective_access(%s)", (key_id,)
        ).fetchall()
    return {(r["path"], r["level"]) for r in rows}


def sam_python() -> Path:
    """The Python of aws-sam-cli's own virtualenv (``make tools``): skipped locally without
    it, a failure under CI, where the checks that need it must run."""
    import os

    import pytest

    python = Path(__file__).resolve().parents[1] / ".venv-sam" / "bin" / "python"
    if not python.is_file():
        message = "aws-sam-cli is not installed: run `make tools`"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    return python


def explain(conn, sql: str, params: dict) -> dict:
    """The root node of ``sql``'s EXPLAIN ANALYZE (JSON), run on ``conn`` as it is."""
    row = conn.execute("EXPLAIN (ANALYZE, FORMAT JSON) " + sql, params).fetchone()
    plan = next(iter(row.values())) if isinstance(row, dict) else row[0]
    return (json.loads(plan) if isinstance(plan, str) else plan)[0]["Plan"]


def search_plan(conn, params: dict) -> dict:
    """The search statement's plan for ``params`` (``strata.search.hybrid``: the prelude's settings
    and terms first, in one transaction); ``params`` gains the prelude's terms."""
    from strata.search import hybrid as S

    with conn.transaction():
        terms = conn.execute(S._prelude(params["iterative"]), params).fetchone()
        params.update({k: terms[k] for k in ("lexemes", "any_rare", "any_common",
                                              "two_lexemes", "has_own_index")})
        return explain(conn, S._statement(params), params)


def plan_nodes(plan: dict):
    """Every node of a plan, the root first."""
    yield plan
    for child in plan.get("Plans", []):
        yield from plan_nodes(child)


def rows_read(plan: dict, index_names) -> int:
    """Rows the plan's scans of the named indexes returned, over all their loops
    (``index_names``: a predicate on the index name)."""
    return sum(round(n["Actual Rows"] * n["Actual Loops"]) for n in plan_nodes(plan)
               if n.get("Index Name") and index_names(n["Index Name"]))


@contextlib.contextmanager
def prefer_an_index(conn):
    """``conn`` with the planner's other ways to a top-k (sequential and bitmap scans, sorts)
    switched off, so that an index able to order by vector distance wins, as it does on a
    large table; a sort is still what ranks exactly (disabled, it is only priced higher).
    Reset afterwards: the pool hands the connection on."""
    for setting in ("enable_seqscan", "enable_bitmapscan", "enable_sort"):
        conn.execute(f"SET {setting} = off")
    try:
        yield conn
    finally:
        conn.execute("RESET ALL")
