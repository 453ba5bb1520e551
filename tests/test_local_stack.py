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


def _env(home: Path, port: int) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("STRATA_")}
    env.update(STRATA_HOME=str(home), STRATA_PORT=str(port), STRATA_EMBEDDER="hash")
    return env


def _start(home: Path, port: int) -> subprocess.Popen:
    proc = subprocess.Popen(
        STRATA + ["dev"], env=_env(home, port), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        text=True,
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
