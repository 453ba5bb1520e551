"""`make run` is `strata dev`: proven here as a user runs it, in a subprocess on a real port."""

from __future__ import annotations

import json
import os
import signal
import socket
import stat
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

STRATA = [sys.executable, "-m", "strata.cli"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _env(home: Path, port: int, *, embedder: str | None = "hash") -> dict[str, str]:
    """A user's shell: no STRATA_* but these. The embedder is hash unless a test asks for
    make run's own default (None: STRATA_EMBEDDER unset)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("STRATA_")}
    env.update(STRATA_HOME=str(home), STRATA_PORT=str(port))
    if embedder:
        env["STRATA_EMBEDDER"] = embedder
    return env


def _start(home: Path, port: int, env: dict[str, str] | None = None) -> subprocess.Popen:
    proc = subprocess.Popen(
        STRATA + ["dev"], env=env or _env(home, port), stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, text=True,
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"strata dev exited early:\n{proc.stdout.read()}")
        try:
            if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1).status_code == 200:
                return proc
        except httpx.TransportError:
            time.sleep(0.2)
    proc.kill()
    raise AssertionError("strata dev did not answer /healthz within 60 s")


def _stop(proc: subprocess.Popen) -> str:
    proc.send_signal(signal.SIGINT)
    out, _ = proc.communicate(timeout=60)
    return out


def _postgres_running(home: Path) -> bool:
    pid_file = home / "pgdata" / "postmaster.pid"
    if not pid_file.exists():
        return False
    pid = int(pid_file.read_text().splitlines()[0])
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


@pytest.fixture
def home(tmp_path: Path):
    home = tmp_path / "strata-home"
    yield home
    if _postgres_running(home):  # never leave a server behind a failed test
        pid = int((home / "pgdata" / "postmaster.pid").read_text().splitlines()[0])
        os.kill(pid, signal.SIGTERM)


def test_dev_first_start_bootstraps_and_second_start_reuses_data(home: Path):
    """Given an empty STRATA_HOME
    When `strata dev` starts, a memory is written with the printed key, and it is stopped with
    Ctrl-C and started again
    Then the first start printed an owner key (also in admin.key, mode 0600), published a
    signed audit digest the full verification checks against, Ctrl-C stopped PostgreSQL too, and the second start printed no new key and still serves the memory."""
    port = _free_port()
    proc = _start(home, port)
    key_file = home / "admin.key"
    key = key_file.read_text().strip()
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    headers = {"Authorization": f"Bearer {key}"}
    base = f"http://127.0.0.1:{port}"
    created = httpx.post(
        f"{base}/v1/memories", headers=headers,
        json={"memories": [{"content": "The deploy region is eu-west-1", "path": "shared.ops"}]},
    )
    assert created.status_code == 200, created.text
    memory_id = created.json()["results"][0]["id"]

    # Another strata command joins the running server instead of starting a second one.
    joined = subprocess.run(
        STRATA + ["tenants", "create", "second", "--json"], env=_env(home, port),
        capture_output=True, text=True, timeout=60,
    )
    assert joined.returncode == 0, joined.stderr
    assert json.loads(joined.stdout)["key"].startswith("sk_")
    assert _postgres_running(home), "the CLI must not stop the server `strata dev` runs"

    # The local digest schedule published the default tenant's head at start: a read-only
    # file under audit-digests/, signed under a 0600 key beside it.
    deadline = time.monotonic() + 30  # its own thread: give it the time a slow machine needs
    while not (digests := sorted((home / "audit-digests").glob("*/*.json"))) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert digests, "strata dev publishes audit digests at start"
    assert stat.S_IMODE(digests[0].stat().st_mode) == 0o444
    assert stat.S_IMODE((home / "audit-digests.key").stat().st_mode) == 0o600
    verified = subprocess.run(STRATA + ["audit", "verify", "--full"], env=_env(home, port),
                              capture_output=True, text=True, timeout=60)
    assert verified.returncode == 0, verified.stdout + verified.stderr
    anchors = [t["anchor"]["ok"] for t in json.loads(verified.stdout)["tenants"]]
    assert True in anchors, anchors  # checked against a digest, not merely unanchored

    # The access log names the route, never the query string's user values.
    listed = httpx.get(f"{base}/v1/memories", params={"path": "users.quillonwhisk"}, headers=headers)
    assert listed.status_code == 200, listed.text

    first_out = _stop(proc)
    assert key in first_out, "the first start prints the owner key once"
    assert '"GET /v1/memories HTTP/1.1" 200' in first_out  # control: the access log is on
    assert "quillonwhisk" not in first_out
    assert not _postgres_running(home), "Ctrl-C stops PostgreSQL too"

    proc = _start(home, port)
    try:
        again = httpx.get(f"{base}/v1/memories/{memory_id}", headers=headers)
        assert again.status_code == 200
        assert again.json()["content"] == "The deploy region is eu-west-1"
        bad = httpx.get(f"{base}/v1/memories/{memory_id}", headers={"Authorization": "Bearer x"})
        assert bad.status_code == 401
    finally:
        second_out = _stop(proc)
    assert key not in second_out, "the key is shown once, not on every start"
    assert key_file.read_text().strip() == key


def test_cli_starts_embedded_server_when_none_runs(home: Path):
    """Given no running server
    When `strata tenants create` runs
    Then it starts the embedded server, creates the tenant, prints JSON, and stops the server."""
    env = _env(home, _free_port())
    out = subprocess.run(
        STRATA + ["tenants", "create", "solo", "--json"], env=env, capture_output=True, text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    body = json.loads(out.stdout)
    assert set(body) >= {"tenant_id", "key"}
    assert not _postgres_running(home)
    dup = subprocess.run(
        STRATA + ["tenants", "create", "solo", "--json"], env=env, capture_output=True, text=True,
        timeout=120,
    )
    assert dup.returncode == 2
    assert json.loads(dup.stderr.strip().splitlines()[-1])["error"]["code"] == "conflict"


def test_make_run_recalls_by_meaning_with_the_local_embedder(home: Path):
    """Given a fresh STRATA_HOME, strata[local] installed (as `make run` installs it) and
    STRATA_EMBEDDER unset
    When `strata dev` starts and the README's terminal example runs (remember, remember,
    remember --as-is, recall "which database"), and a memory of an allergy is searched for
    by the word "allergy"
    Then /healthz names the local embedder (the store's, not configured), the meant memory
    ranks first with a score above the other's (so not by a tie's order), and a command from
    another shell without STRATA_EMBEDDER agrees with the server (no warning)."""
    from strata.providers.embedders import local_available

    if not local_available():
        pytest.skip("strata[local] is not installed: `make install-local` (CI installs it)")
    port = _free_port()
    env = _env(home, port, embedder=None)
    proc = _start(home, port, env)
    try:
        base = f"http://127.0.0.1:{port}"
        health = httpx.get(f"{base}/healthz").json()
        assert health["embedder"] == "local"
        assert health["embedding"] == {"provider": "local", "model": "local:all-MiniLM-L6-v2:384",
                                       "dim": 384, "default": True}
        key = (home / "admin.key").read_text().strip()
        client = {**env, "STRATA_URL": base, "STRATA_KEY": key,
                  "STRATA_PROFILES": str(home / "none.toml")}

        def strata(*argv: str) -> str:
            out = subprocess.run(STRATA + list(argv), env=client, capture_output=True,
                                 text=True, timeout=300)
            assert out.returncode == 0, (argv, out.stderr)
            return out.stdout

        strata("remember", "I prefer MongoDB", "--path", "users.carol")
        strata("remember", "I've switched to PostgreSQL", "--path", "users.carol")
        strata("remember", "--as-is", "I drive a Volvo", "--path", "users.carol")
        hits = json.loads(strata("recall", "which database", "--path", "users.carol", "--json"))["results"]
        assert "PostgreSQL" in hits[0]["content"], hits
        assert any("Volvo" in h["content"] for h in hits[1:]), hits  # control: it was there
        assert hits[0]["score"] > max(h["score"] for h in hits[1:])

        headers = {"Authorization": f"Bearer {key}"}
        written = httpx.post(f"{base}/v1/memories", headers=headers, json={"memories": [
            {"content": "The user is allergic to peanuts", "path": "users.dave"},
            {"content": "The user lives in Lisbon", "path": "users.dave"}]}, timeout=60)
        assert written.status_code == 200, written.text
        found = httpx.post(f"{base}/v1/search", headers=headers, timeout=60,
                           json={"query": "allergy", "paths": ["users.dave"]}).json()["results"]
        assert [r["content"] for r in found] == ["The user is allergic to peanuts",
                                                 "The user lives in Lisbon"]
        assert found[0]["score"] > found[1]["score"]

        # An operator command from a shell that never set STRATA_EMBEDDER: the store's.
        listed = subprocess.run(STRATA + ["tenants", "list", "--json"], env=env,
                                capture_output=True, text=True, timeout=120)
        assert listed.returncode == 0, listed.stderr
        assert "embedder" not in listed.stderr and "reindex" not in listed.stderr
    finally:
        out = _stop(proc)
    assert "embedder: local, model local:all-MiniLM-L6-v2:384 (the store's)" in out
