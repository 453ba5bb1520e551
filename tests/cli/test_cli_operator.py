"""What every `strata` command gets from the one place it goes through (strata.cli.main.main and
the parser walk in strata.cli.support.finish), proven by walking every command of the parser:
--json prints JSON on stdout and nothing else, and a closed stdout ends quietly. Then the
operator commands a new user tripped over: --version, tenants list, import --create-tenant,
errors that name the real flag, the embedder-mismatch warning, the LoCoMo data's source, and
shell completion. Real PostgreSQL, a real server on loopback, real subprocesses where the
process boundary matters (dev, completion, the installed entry point)."""

from __future__ import annotations

import json
import os
import platform
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest

from strata.cli.main import build_parser, main
from strata.cli.support import EXIT_CLOSED_PIPE, leaf_parsers

ROOT = Path(__file__).resolve().parents[2]
STRATA = [sys.executable, "-m", "strata.cli"]
T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)


# --------------------------------------------------------------------------------------
# A world every command can run in: a server over the test's database, tenant acme
# --------------------------------------------------------------------------------------


class World:
    def __init__(self, server: str, tenant, db, tmp: Path) -> None:
        from strata.client import Client

        self.server, self.tenant, self.db, self.tmp = server, tenant, db, tmp
        self.client = Client(server, tenant.key)
        self.client_url, self.key = server, tenant.key

    def name(self, prefix: str) -> str:
        return f"{prefix}-{uuid.uuid4().hex[:8]}"

    def rule(self) -> str:
        """A memory rule at a fresh path under users."""
        import httpx as _httpx

        r = _httpx.put(f"{self.client_url}/v1/rules", json={"path": f"users.r{uuid.uuid4().hex[:8]}"},
                       headers={"Authorization": f"Bearer {self.key}"})
        r.raise_for_status()
        return r.json()["id"]

    def memory(self, text: str | None = None, path: str = "users.alice") -> str:
        text = text or f"The deploy region is {uuid.uuid4().hex[:6]}"
        return str(self.client.remember(text, path, as_is=True).items[0].memory_id)

    def candidate(self) -> str:
        """A candidate held for review: a value that comes back after it was superseded."""
        path = f"users.{uuid.uuid4().hex[:8]}"
        for weeks, text in ((0, "I prefer MongoDB"), (3, "I've switched to PostgreSQL"),
                            (6, "I've gone back to MongoDB")):
            receipt = self.client.ingest(
                [{"role": "user", "content": text, "at": (T0 + timedelta(weeks=weeks)).isoformat()}],
                path, wait=True)
        [item] = [i for i in receipt.items if i.outcome == "candidate"]
        return str(item.memory_id)

    def principal(self) -> str:
        from strata.auth import Caller, create_principal

        name = self.name("p")
        create_principal(self.db, Caller.system(self.tenant.tenant_id), name, "user")
        return name

    def key_id(self) -> str:
        from strata.auth import Caller, create_key

        key = create_key(self.db, Caller.system(self.tenant.tenant_id),
                         principal_id=self.tenant.principal_id, ceiling=None, name=self.name("k"),
                         expires_at=None, default_path=None)
        return str(key.id)

    def deleted(self) -> str:
        mid = self.memory()
        self.client.memories.delete(mid)
        return mid

    def export_file(self) -> str:
        path = self.tmp / f"{self.name('acme')}.jsonl"
        self.memory()
        assert main(["export", "--tenant", "acme", "-o", str(path)]) == 0
        return str(path)

    def locomo_file(self) -> str:
        return str(upstream_locomo(self.tmp / self.name("locomo")))


def upstream_locomo(folder: Path) -> Path:
    """The synthetic tiny conversation (tests/data/locomo_tiny; not LoCoMo data) in the shape
    of upstream's data/locomo10.json: a list of samples with sample_id, conversation,
    observation, event_summary and qa."""
    samples = []
    for f in sorted((ROOT / "tests" / "data" / "locomo_tiny").glob("*.json")):
        flat = json.loads(f.read_text(encoding="utf-8"))
        samples.append({
            "sample_id": f"conv-{f.stem}",
            "qa": flat["qa"],
            "conversation": {k: v for k, v in flat.items() if k in ("speaker_a", "speaker_b")
                             or (k.startswith("session_") and not k.endswith("_observation"))},
            "observation": {k: v for k, v in flat.items() if k.endswith("_observation")},
            "event_summary": {k: v for k, v in flat.items() if k.startswith("events_session_")},
            "session_summary": {},
        })
    folder.mkdir(parents=True)
    path = folder / "locomo10.json"
    path.write_text(json.dumps(samples), encoding="utf-8")
    return path


# Every command of the parser, and how to run it successfully in the world (without --json).
# A command added later without an entry here fails test_every_command_is_sampled.
SAMPLES: dict[tuple[str, ...], Callable[[World], list[str]] | None] = {
    ("dev",): None,  # a server: run as a subprocess (test_dev_json_*)
    ("migrate",): lambda w: ["migrate"],
    ("tenants", "create"): lambda w: ["tenants", "create", w.name("t")],
    ("tenants", "list"): lambda w: ["tenants", "list"],
    ("principals", "create"): lambda w: ["principals", "create", "--tenant", "acme", w.name("p")],
    ("grants", "create"): lambda w: ["grants", "create", "--tenant", "acme", "--principal",
                                     w.principal(), "--path", "users.alice", "--level", "read"],
    ("keys", "create"): lambda w: ["keys", "create", "--tenant", "acme", "--principal", "admin"],
    ("keys", "list"): lambda w: ["keys", "list", "--tenant", "acme"],
    ("keys", "revoke"): lambda w: ["keys", "revoke", w.key_id(), "--tenant", "acme"],
    ("reindex",): lambda w: ["reindex"],
    ("audit", "verify"): lambda w: ["audit", "verify", "--tenant", "acme"],
    ("audit", "digest"): lambda w: ["audit", "digest", "--tenant", "acme"],
    ("audit", "prune"): lambda w: ["audit", "prune", "--tenant", "acme", "--dry-run"],
    ("lifecycle", "run"): lambda w: ["lifecycle", "run", "--tenant", "acme", "--dry-run"],
    ("index", "run"): lambda w: ["index", "run", "--dry-run"],
    ("eval", "golden"): lambda w: ["eval", "golden"],
    ("eval", "locomo"): lambda w: ["eval", "locomo", "--data", w.locomo_file()],
    ("eval", "truth"): lambda w: ["eval", "truth", "--data",
                                  str(ROOT / "tests" / "data" / "truth_tiny" / "home.json")],
    ("completion",): lambda w: ["completion", "bash"],
    ("remember",): lambda w: ["remember", "I prefer green tea", "--path", "users.alice"],
    ("recall",): lambda w: ["recall", "tea"],
    ("memories", "show"): lambda w: ["memories", "show", w.memory()],
    ("memories", "list"): lambda w: ["memories", "list"],
    ("memories", "history"): lambda w: ["memories", "history", w.memory()],
    ("memories", "forget"): lambda w: ["memories", "forget", w.memory(), "--yes"],
    ("memories", "restore"): lambda w: ["memories", "restore", w.deleted()],
    ("review", "list"): lambda w: ["review", "list"],
    ("review", "promote"): lambda w: ["review", "promote", w.candidate()],
    ("review", "reject"): lambda w: ["review", "reject", w.candidate()],
    ("review", "merge"): lambda w: ["review", "merge", w.candidate(), "--into", w.memory()],
    ("rules", "set"): lambda w: ["rules", "set", f"users.s{uuid.uuid4().hex[:8]}", "--exclude", "health"],
    ("rules", "list"): lambda w: ["rules", "list"],
    ("events", "tail"): lambda w: ["events", "tail"],
    ("rules", "delete"): lambda w: ["rules", "delete", w.rule()],
    ("export",): lambda w: ["export", "--tenant", "acme"],
    ("import",): lambda w: ["import", w.export_file(), "--tenant", w.name("copy"),
                            "--create-tenant"],
}


def commands() -> list[tuple[str, ...]]:
    return [words for words, _ in leaf_parsers(build_parser())]


@pytest.fixture
def world(server, tenant, db, operator, monkeypatch, tmp_path) -> World:
    monkeypatch.setenv("STRATA_URL", server)
    monkeypatch.setenv("STRATA_KEY", tenant.key)
    monkeypatch.setenv("STRATA_PROFILES", str(tmp_path / "profiles.toml"))
    monkeypatch.setenv("STRATA_HOME", str(tmp_path / "home"))  # local audit digests
    (tmp_path / "home").mkdir()
    w = World(server, tenant, db, tmp_path)
    yield w
    w.client.close()


def _json_documents(out: str) -> list:
    """stdout as JSON: one document, or JSON Lines (export)."""
    try:
        return [json.loads(out)]
    except ValueError:
        return [json.loads(line) for line in out.splitlines()]


def test_every_command_is_sampled():
    """Given the parser Then every command it runs has a sample in SAMPLES (and no sample
    names a command that is gone): the walks below cover commands added later too."""
    assert set(commands()) == set(SAMPLES)
    assert len(SAMPLES) > 30  # control: the walk found the client commands as well


def test_every_command_takes_json_and_prints_only_json(world, capsys):
    """Given every command of the parser (but dev, a server: its own test below)
    When it runs with --json
    Then it succeeds, stdout is JSON and nothing else, stderr shows no traceback; and every
    command also succeeds without --json (the control: --json is what makes stdout JSON;
    `keys list` prints a table then)."""
    plain: dict[tuple[str, ...], str] = {}
    for words in commands():
        sample = SAMPLES[words]
        if sample is None:
            continue
        argv = sample(world)
        capsys.readouterr()
        code = main(argv + ["--json"])
        out, err = capsys.readouterr()
        assert "Traceback" not in err, (words, err)
        assert code == 0, (words, err)
        assert out.strip(), words
        try:
            _json_documents(out)
        except ValueError:
            pytest.fail(f"{' '.join(words)} --json printed more than JSON: {out[:300]!r}")
        code = main(sample(world))
        plain[words], err = capsys.readouterr()
        assert code == 0, (words, err)
    with pytest.raises(ValueError):
        _json_documents(plain[("keys", "list")])


def _closed_pipe():
    read, write = os.pipe()
    os.close(read)
    return os.fdopen(write, "w")


def test_every_command_into_a_closed_pipe_ends_quietly(world, capsys):
    """Given every command of the parser (but dev: its own test below) with --json, and stdout
    a real pipe whose reader has gone (`| head` after its line)
    When it writes its answer
    Then it ends with status 141 (what a shell reports for SIGPIPE) and no traceback or
    "Exception ignored" on stderr. Control: the same command into a readable stdout is 0."""
    for words in commands():
        sample = SAMPLES[words]
        if sample is None:
            continue
        argv = sample(world) + ["--json"]
        pipe, stdout = _closed_pipe(), sys.stdout
        sys.stdout = pipe
        try:
            code = main(argv)
        finally:
            sys.stdout = stdout
            pipe.close()
        _, err = capsys.readouterr()
        assert code == EXIT_CLOSED_PIPE, (words, code, err)
        assert "Traceback" not in err and "Exception ignored" not in err, (words, err)
    assert main(["tenants", "list", "--json"]) == 0


def test_the_installed_command_into_a_closed_pipe_is_quiet(db, tmp_path):
    """The real entry point in a fresh process, stdout a closed pipe: an operator command with
    --json ends with 141, --help with 0 (argparse drops what it cannot write), both with
    nothing on stderr; a readable pipe gives 0 and the JSON (control)."""
    env = {**_env(tmp_path), "STRATA_DATABASE_URL": db.url}
    for argv, status in ((["tenants", "list", "--json"], EXIT_CLOSED_PIPE), (["--help"], 0),
                         (["keys", "list", "--help"], 0)):
        read, write = os.pipe()
        os.close(read)
        try:
            out = subprocess.run(STRATA + argv, stdout=write, stderr=subprocess.PIPE, text=True,
                                 env=env, timeout=120)
        finally:
            os.close(write)
        assert out.returncode == status, (argv, out.stderr)
        assert "Traceback" not in out.stderr and "Exception ignored" not in out.stderr
    ok = subprocess.run(STRATA + ["tenants", "list", "--json"], capture_output=True, text=True,
                        env=env, timeout=120)
    assert ok.returncode == 0 and json.loads(ok.stdout) == [], ok.stderr


# --------------------------------------------------------------------------------------
# strata dev --json (a subprocess on a real port)
# --------------------------------------------------------------------------------------


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("STRATA_")}
    env.update(STRATA_HOME=str(tmp_path / "home"), STRATA_PROFILES=str(tmp_path / "none.toml"),
               HOME=str(tmp_path), STRATA_EMBEDDER="hash")
    env.update(extra)  # STRATA_EMBEDDER="" leaves it unset, as in a shell that never set it
    if not env["STRATA_EMBEDDER"]:
        del env["STRATA_EMBEDDER"]
    return env


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _dev_json(db, tmp_path: Path, **extra: str) -> tuple[dict, str, str]:
    """`strata dev --json` on the test's database: its first stdout line, then (after one
    request and Ctrl-C) the rest of stdout and stderr."""
    port = _free_port()
    proc = subprocess.Popen(STRATA + ["dev", "--json"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True,
                            env=_env(tmp_path, STRATA_DATABASE_URL=db.url, STRATA_PORT=str(port),
                                     **extra))
    try:
        first = proc.stdout.readline()
        assert first, proc.stderr.read()
        started = json.loads(first)  # printed before the server listens: wait for it
        deadline = time.monotonic() + 60
        while True:
            try:
                assert httpx.get(f"{started['url']}/healthz", timeout=5).status_code == 200
                break
            except httpx.TransportError:
                assert time.monotonic() < deadline and proc.poll() is None, "dev did not listen"
                time.sleep(0.2)
    finally:
        proc.send_signal(signal.SIGINT)
        rest, err = proc.communicate(timeout=60)
    return started, rest, err


def test_dev_json_prints_one_json_object_and_logs_on_stderr(db, tmp_path):
    """Given `strata dev --json` When it starts, answers a request and is stopped
    Then stdout held exactly one JSON object (url, MCP url, the default tenant's new key and
    where it is kept, the embedder, no warnings) and the startup text and access log went to
    stderr."""
    started, rest, err = _dev_json(db, tmp_path)
    assert started["url"].startswith("http://127.0.0.1:") and started["mcp_url"].endswith("/mcp")
    assert started["created"] is True and started["key"].startswith("sk_")
    assert Path(started["key_file"]).read_text().strip() == started["key"]
    assert started["embedding"]["provider"] == "hash" and started["warnings"] == []
    assert rest == ""
    assert "GET /healthz" in err and "export STRATA_URL" in err  # control: the text is there


def test_dev_closed_pipe_is_quiet(db, tmp_path):
    read, write = os.pipe()
    os.close(read)
    try:
        out = subprocess.run(STRATA + ["dev", "--json"], stdout=write, stderr=subprocess.PIPE,
                             text=True, timeout=120,
                             env=_env(tmp_path, STRATA_DATABASE_URL=db.url,
                                      STRATA_PORT=str(_free_port())))
    finally:
        os.close(write)
    assert out.returncode == EXIT_CLOSED_PIPE, out.stderr
    assert "Traceback" not in out.stderr and "Exception ignored" not in out.stderr


# --------------------------------------------------------------------------------------
# The embedder is the store's: commands follow it, a server refuses another
# --------------------------------------------------------------------------------------


def _hash_memories(db, tenant, n: int = 3) -> None:
    """n memories written with the owner's key, their vectors the hash embedder's."""
    from strata.auth import authenticate
    from strata.memories.models import CreateRequest
    from strata.memories.store import create_memories
    from strata.providers import HashingEmbedder

    texts = ["Alice keeps bees on the roof", "The office printer is on floor three",
             "Bob drives a red Volvo"][:n]
    results = create_memories(db, authenticate(db, tenant.key), CreateRequest(memories=[
        {"content": text, "path": "shared.ops"} for text in texts]), HashingEmbedder(384))
    assert [r.status for r in results] == ["inserted"] * n


def test_model_mismatch_counts_what_is_stale():
    from strata.maintenance.reindex import model_mismatch

    assert model_mismatch({"strata-hash-v1-384": 3}, "strata-hash-v1-384") is None
    assert model_mismatch({}, "x") is None and model_mismatch(None, "x") is None
    text = model_mismatch({"strata-hash-v1-384": 3, "local:m:384": 1}, "local:m:384")
    assert text.startswith("3 of 4 stored memory vectors were embedded by strata-hash-v1-384")
    assert "`strata reindex`" in text


def test_the_stored_models_count_gives_up_rather_than_wait(db, tenant):
    """Given the memories table locked by another transaction (a count that cannot finish)
    Then stored_models gives up after its statement timeout and answers None (the check is
    skipped); once the lock is gone it counts (control)."""
    import psycopg

    from strata.providers.store_embedder import STORED_MODELS_TIMEOUT_MS, stored_models

    _hash_memories(db, tenant, n=1)
    with psycopg.connect(db.url) as locker:
        locker.execute("LOCK TABLE memories IN ACCESS EXCLUSIVE MODE")
        started = time.monotonic()
        assert stored_models(db) is None
        assert time.monotonic() - started < STORED_MODELS_TIMEOUT_MS / 1000 + 5
    assert stored_models(db) == {"strata-hash-v1-384": 1}


def test_cli_commands_follow_the_store_and_say_when_the_shell_differs(db, tenant, tmp_path):
    """Given memories embedded by the hash embedder (a store from before the record: its rows'
    stamps say whose it is)
    When an operator command runs (a real process) from a shell with no STRATA_EMBEDDER, then
    from one with STRATA_EMBEDDER=openai at the same dimension
    Then the first says nothing about embedders and records the store's embedder (hash); the
    second follows the store too and says on stderr that STRATA_EMBEDDER is not the store's,
    naming both and `strata reindex`, with stdout still the command's JSON."""
    from strata.providers.store_embedder import recorded

    _hash_memories(db, tenant)

    def run(**extra: str) -> subprocess.CompletedProcess:
        return subprocess.run(STRATA + ["tenants", "list", "--json"], capture_output=True,
                              text=True, timeout=120,
                              env=_env(tmp_path, STRATA_DATABASE_URL=db.url, **extra))

    unset = run(STRATA_EMBEDDER="")
    assert unset.returncode == 0 and json.loads(unset.stdout)[0]["memories"] == 3
    assert "strata reindex" not in unset.stderr and "embedder" not in unset.stderr
    assert recorded(db).model == "strata-hash-v1-384"
    changed = run(STRATA_EMBEDDER="openai")
    assert changed.returncode == 0 and json.loads(changed.stdout)[0]["name"] == "acme"
    assert ("STRATA_EMBEDDER=openai (openai:text-embedding-3-small:384) is not this store's "
            "embedder (strata-hash-v1-384): this command uses the store's") in changed.stderr
    assert "`strata reindex`" in changed.stderr
    assert "stored memory vectors were embedded by" not in changed.stderr  # it follows them
    assert recorded(db).model == "strata-hash-v1-384"  # a command never switches the store


def test_dev_refuses_a_configured_embedder_that_is_not_the_stores(db, tenant, tmp_path):
    """Given memories embedded by the hash embedder When `strata dev` starts with
    STRATA_EMBEDDER=openai Then it exits 2 before serving, naming both models and both fixes
    (`strata reindex`, or unset STRATA_EMBEDDER); with STRATA_EMBEDDER unset (control) it
    starts on the store's embedder, hash."""
    _hash_memories(db, tenant)
    refused = subprocess.run(
        STRATA + ["dev", "--json"], capture_output=True, text=True, timeout=120,
        env=_env(tmp_path, STRATA_DATABASE_URL=db.url, STRATA_PORT=str(_free_port()),
                 STRATA_EMBEDDER="openai", STRATA_EMBEDDING_API_KEY="sk-unused"))
    assert refused.returncode == 2 and refused.stdout == "", refused.stderr
    error = json.loads(refused.stderr.strip().splitlines()[-1])["error"]
    assert error["code"] == "embedder_mismatch" and error["field"] == "embedder"
    for part in ("STRATA_EMBEDDER=openai", "openai:text-embedding-3-small:384",
                 "strata-hash-v1-384", "`strata reindex`", "unset STRATA_EMBEDDER"):
        assert part in error["message"], part
    started, _, _ = _dev_json(db, tmp_path, STRATA_EMBEDDER="")
    assert started["embedding"] == {"provider": "hash", "model": "strata-hash-v1-384",
                                    "dim": 384, "default": True}
    assert started["warnings"] == []


# --------------------------------------------------------------------------------------
# --version, tenants list, import --create-tenant
# --------------------------------------------------------------------------------------


def test_version(tmp_path):
    from importlib import metadata

    out = subprocess.run(STRATA + ["--version"], capture_output=True, text=True, env=_env(tmp_path))
    assert out.returncode == 0 and out.stdout.strip() == f"strata {metadata.version('strata')}"
    bare = subprocess.run(STRATA, capture_output=True, text=True, env=_env(tmp_path))
    assert bare.returncode == 2 and "required" in bare.stderr  # control: a command is needed


def test_tenants_list(db, operator, make_tenant, capsys):
    """Given no tenants, then two (one with a memory and a second principal's key)
    Then `tenants list` says how to make one, then lists both by name with their counts."""
    from strata.auth import Caller, create_key, create_principal

    assert main(["tenants", "list"]) == 0
    assert capsys.readouterr().out.startswith("no tenants")
    acme, zeta = make_tenant("acme"), make_tenant("zeta")
    _hash_memories(db, acme, n=2)
    bob = create_principal(db, Caller.system(zeta.tenant_id), "bob", "agent")
    create_key(db, Caller.system(zeta.tenant_id), principal_id=bob.id, ceiling=None, name="b",
               expires_at=None, default_path=None)

    assert main(["tenants", "list"]) == 0
    header, *rows = capsys.readouterr().out.splitlines()
    assert header.split() == ["name", "id", "created", "principals", "keys", "memories"]
    assert [r.split()[0] for r in rows] == ["acme", "zeta"]
    assert main(["tenants", "list", "--json"]) == 0
    listed = {t["name"]: t for t in json.loads(capsys.readouterr().out)}
    assert (listed["acme"]["principals"], listed["acme"]["keys"], listed["acme"]["memories"]) == (1, 1, 2)
    assert (listed["zeta"]["principals"], listed["zeta"]["keys"], listed["zeta"]["memories"]) == (2, 2, 0)
    assert listed["acme"]["id"] == str(acme.tenant_id)


def test_import_into_a_new_tenant_needs_create_tenant(db, tenant, operator, capsys, tmp_path):
    """Given an export of acme
    When it is imported into acme-copy, which does not exist
    Then without --create-tenant: exit 2, the message names --tenant and says to pass
    --create-tenant, and no tenant is made; with it: the tenant is made, every memory
    imported, and its owner key (in the report) works; a second run with the flag imports
    nothing and makes no tenant; a bad file with the flag leaves no tenant behind."""
    from strata.auth import authenticate, find_tenant
    from strata.foundation.errors import NotFound

    _hash_memories(db, tenant, n=2)
    export = tmp_path / "acme.jsonl"
    assert main(["export", "--tenant", "acme", "-o", str(export)]) == 0
    capsys.readouterr()

    code = main(["import", str(export), "--tenant", "acme-copy"])
    out, err = capsys.readouterr()
    assert code == 2 and out == "" and "Traceback" not in err
    assert "tenant 'acme-copy' not found (--tenant)" in err and "--create-tenant" in err
    with pytest.raises(NotFound):
        find_tenant(db, "acme-copy")

    code = main(["import", str(export), "--tenant", "acme-copy", "--create-tenant"])
    out, err = capsys.readouterr()
    report = json.loads(out)
    assert code == 0, err
    assert report["memories"]["inserted"] == 2 and report["tenant"] == "acme-copy"
    created = report["tenant_created"]
    assert authenticate(db, created["key"]).tenant_id == find_tenant(db, "acme-copy").id

    code = main(["import", str(export), "--tenant", "acme-copy", "--create-tenant", "--json"])
    again = json.loads(capsys.readouterr().out)
    assert code == 0 and again["memories"]["inserted"] == 0 and "tenant_created" not in again

    bad = tmp_path / "bad.jsonl"
    bad.write_text("this is not an export\n")
    code = main(["import", str(bad), "--tenant", "never-made", "--create-tenant", "--json"])
    _, err = capsys.readouterr()
    assert code == 2 and json.loads(err)["error"]["code"] == "invalid_input"
    with pytest.raises(NotFound):
        find_tenant(db, "never-made")


def test_import_refuses_a_bad_tenant_name_naming_the_option(db, tenant, operator, capsys, tmp_path):
    export = tmp_path / "acme.jsonl"
    assert main(["export", "--tenant", "acme", "-o", str(export)]) == 0
    capsys.readouterr()
    code = main(["import", str(export), "--tenant", "not valid!", "--create-tenant"])
    _, err = capsys.readouterr()
    assert code == 2 and "(--tenant)" in err and "tenant name" in err and "Traceback" not in err


# --------------------------------------------------------------------------------------
# Messages name the real flags
# --------------------------------------------------------------------------------------


def test_restore_of_a_live_memory_names_the_version_flag(world, capsys):
    """Given a live memory (changed once, so it has a version 1 in history)
    When `memories restore ID` runs without --version
    Then the message names --version (not "(version)") and how to find the versions; with
    --json the error carries "option": "--version"; `--version 1` then works (control)."""
    mid = world.memory("I drive a Volvo")
    world.client.memories.update(mid, 1, importance=0.9)
    code = main(["memories", "restore", mid])
    _, err = capsys.readouterr()
    assert code == 1 and "(--version)" in err and "(version)" not in err
    assert f"strata memories history {mid}" in err and "--version N" in err
    code = main(["memories", "restore", mid, "--json"])
    error = json.loads(capsys.readouterr().err)["error"]
    assert code == 1 and error["field"] == "version" and error["option"] == "--version"
    code = main(["memories", "restore", mid, "--version", "1"])
    out, err = capsys.readouterr()
    assert code == 0 and "restored" in out, err


def test_every_error_names_an_option_the_command_has():
    """Given every command's parser Then each argument's error name is an option string it
    accepts or its positional's name in capitals (what option_for shows)."""
    from strata.cli.support import option_names

    for words, parser in leaf_parsers(build_parser()):
        names = option_names(parser)
        assert names["json"] == "--json", words
        for dest, shown in names.items():
            assert shown in parser._option_string_actions or shown.isupper(), (words, dest)
    restore = dict(leaf_parsers(build_parser()))[("memories", "restore")]
    assert option_names(restore)["version"] == "--version" and option_names(restore)["id"] == "ID"


def test_a_nested_request_field_names_the_option_that_sent_it():
    from strata.cli.support import option_for

    args = build_parser().parse_args(["remember", "--as-is", "x", "--path", "users.a"])
    assert option_for(args, "memories[0].path") == "--path"
    assert option_for(args, "idempotency_key") == "--idempotency-key"
    assert option_for(args, "text") == "TEXT"
    assert option_for(args, "nothing_like_it") is None  # control: no guess


# --------------------------------------------------------------------------------------
# LoCoMo: where the data comes from
# --------------------------------------------------------------------------------------


def test_eval_locomo_says_where_the_data_comes_from(capsys, tmp_path):
    """Given a --data path that does not exist (as the old README's ../shared/... in a clone)
    Then exit 2, naming --data, the LoCoMo repository and data/locomo10.json; --help says so
    too; an empty folder says the same (no traceback)."""
    code = main(["eval", "locomo", "--data", str(tmp_path / "shared" / "locomo10")])
    _, err = capsys.readouterr()
    assert code == 2 and "(--data)" in err and "https://github.com/snap-research/locomo" in err
    assert "data/locomo10.json" in err
    with pytest.raises(SystemExit):
        main(["eval", "locomo", "--help"])
    assert "snap-research/locomo" in capsys.readouterr().out
    code = main(["eval", "locomo", "--data", str(tmp_path)])
    _, err = capsys.readouterr()
    assert code == 2 and "no conversations" in err and "snap-research/locomo" in err
    bad = tmp_path / "locomo10.json"
    bad.write_text('{"not": "a list"}')
    code = main(["eval", "locomo", "--data", str(bad)])
    _, err = capsys.readouterr()
    assert code == 2 and "list of samples" in err and "Traceback" not in err


def test_the_upstream_locomo_file_reads_as_the_folder_does(tmp_path):
    """Given the tiny synthetic conversation as a folder, in upstream's locomo10.json shape,
    and that file zipped Then all three read to the same conversations under the same ids."""
    sys.path.insert(0, str(ROOT / "tests"))
    import support

    locomo_eval = support.load_module("locomo_eval", ROOT / "eval" / "locomo_eval.py",
                                      register=True)
    import zipfile

    folder = locomo_eval.read_conversations(ROOT / "tests" / "data" / "locomo_tiny", None)
    upstream = upstream_locomo(tmp_path / "up")
    assert locomo_eval.read_conversations(upstream, None) == folder and folder
    zipped = tmp_path / "locomo10.zip"
    with zipfile.ZipFile(zipped, "w") as archive:
        archive.write(upstream, "locomo10.json")
    assert locomo_eval.read_conversations(zipped, None) == folder


# --------------------------------------------------------------------------------------
# Shell completion
# --------------------------------------------------------------------------------------


def _complete(tmp_path: Path, line: str) -> set[str]:
    out_file = tmp_path / f"completions-{uuid.uuid4().hex[:6]}"
    env = _env(tmp_path, _ARGCOMPLETE="1", COMP_LINE=line, COMP_POINT=str(len(line)),
               _ARGCOMPLETE_STDOUT_FILENAME=str(out_file), _ARGCOMPLETE_IFS="\n")
    done = subprocess.run(STRATA, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return {w.strip() for w in out_file.read_text().split("\n") if w.strip()}


def test_shell_completion(tmp_path):
    """`strata completion bash` prints shell code registering strata; the process then
    completes commands, subcommands and options as a shell asks it to (argcomplete's
    protocol); an unknown command completes to nothing (control)."""
    code = subprocess.run(STRATA + ["completion", "bash"], capture_output=True, text=True,
                          env=_env(tmp_path))
    assert code.returncode == 0 and "complete " in code.stdout and "strata" in code.stdout
    assert {"tenants", "tasks"} & _complete(tmp_path, "strata ten") == {"tenants"}
    assert {"create", "list"} <= _complete(tmp_path, "strata tenants ")
    assert {"--tenant", "--json"} <= _complete(tmp_path, "strata keys list --")
    assert "--create-tenant" in _complete(tmp_path, "strata import x --cr")
    assert _complete(tmp_path, "strata zzz") == set()


# --------------------------------------------------------------------------------------
# Ctrl-C
# --------------------------------------------------------------------------------------


def _reading_stdin(pid: int) -> bool:
    """Whether the process is blocked in read(2) on fd 0 (x86-64 and arm64: /proc/PID/syscall
    starts with the syscall number and its first argument; elsewhere: waiting on a pipe)."""
    read = {"x86_64": "0", "aarch64": "63"}.get(platform.machine())
    if read is None:
        return "pipe" in Path(f"/proc/{pid}/wchan").read_text()
    try:
        number, fd, *_ = Path(f"/proc/{pid}/syscall").read_text().split()
    except (OSError, ValueError):  # exited, running, or not readable here
        return False
    return number == read and fd == "0x0"


def test_ctrl_c_is_a_line_and_status_130(server, tenant, tmp_path):
    """Given `strata remember -` waiting for its statement on stdin (a real process)
    When it gets SIGINT (Ctrl-C)
    Then it says "interrupted" and ends with 130, no traceback; given the statement instead
    (control), it stores it and ends with 0."""
    env = _env(tmp_path, STRATA_URL=server, STRATA_KEY=tenant.key)
    proc = subprocess.Popen(STRATA + ["remember", "-", "--path", "users.alice"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env)
    try:
        deadline = time.monotonic() + 60
        # Blocked reading stdin: past start-up, inside the command. Its syscall, not only its
        # wait channel: a wait on any other pipe during start-up (seen once, on a loaded
        # machine) would let the signal land before the command reads, and the empty stdin
        # that communicate() then closes is refused as a blank statement.
        while not _reading_stdin(proc.pid):
            assert time.monotonic() < deadline and proc.poll() is None, "never read stdin"
            time.sleep(0.1)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130 and "interrupted" in err and "Traceback" not in err, err
    done = subprocess.run(STRATA + ["remember", "-", "--path", "users.alice"], input="I like tea",
                          capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0 and "created" in done.stdout, done.stderr


def test_an_export_to_a_terminal_goes_under_the_home_and_says_where(db, tenant, tmp_path):
    """Given acme with two memories, and a working directory standing for a checkout
    When `strata export --tenant acme` runs (a real process) with stdout a terminal (a pty)
    Then nothing is written in the working directory; a new file under
    $STRATA_HOME/exports, readable by its owner only, holds the export; the absolute path
    printed is that file. Control: piped, the same command writes the same records to
    stdout and makes no file."""
    import pty

    _hash_memories(db, tenant, n=2)
    checkout = tmp_path / "checkout"
    checkout.mkdir()
    env = _env(tmp_path, STRATA_DATABASE_URL=db.url)
    master, slave = pty.openpty()
    try:
        done = subprocess.run(STRATA + ["export", "--tenant", "acme"], stdout=slave,
                              stderr=subprocess.PIPE, text=True, cwd=checkout, env=env, timeout=120)
        os.close(slave)
        said = b""
        while True:
            try:
                chunk = os.read(master, 4096)
            except OSError:  # EIO: the terminal's other end is closed, all is read
                break
            if not chunk:
                break
            said += chunk
    finally:
        os.close(master)
    assert done.returncode == 0, done.stderr
    report = json.loads(said.decode().replace("\r\n", "\n"))
    written = Path(report["file"])
    assert written.is_absolute() and written.parent == tmp_path / "home" / "exports"
    assert written.name.startswith("acme-") and written.suffix == ".jsonl"
    assert list(checkout.iterdir()) == []
    assert written.stat().st_mode & 0o777 == 0o600
    records = written.read_text().splitlines()
    assert sum('"Alice keeps bees on the roof"' in r for r in records) == 1

    piped = subprocess.run(STRATA + ["export", "--tenant", "acme"], capture_output=True,
                           text=True, cwd=checkout, env=env, timeout=120)
    assert piped.returncode == 0, piped.stderr
    assert len(piped.stdout.splitlines()) == len(records)
    assert sum('"Alice keeps bees on the roof"' in r for r in piped.stdout.splitlines()) == 1
    assert list(checkout.iterdir()) == [] and list(written.parent.iterdir()) == [written]
