"""Every example in README.md and in the documentation (docs/**/*.md) runs as written, in
order, as a newcomer would run it.

Each page's fenced blocks are collected in order. ``bash``/``sh`` blocks run as they are;
``console`` blocks run their ``$ `` lines; ``python`` blocks run with the Python the README's
commands use; ``json`` blocks must parse. They all run in one bash script, so what one block
exports (``STRATA_URL``, ``KEY``) the next one sees, against ``strata dev`` started the way
``make run`` starts it, in a scratch "clone" (the repository's files linked into a temporary
folder, with the virtualenv's bin first on PATH, as after ``make run`` and ``source
.venv/bin/activate``), so ``.strata/admin.key`` is the one that server wrote.

A block the test cannot run says so in the page itself, on the line before it:
``<!-- docs: skip REASON -->`` (a reason is required: deploying to AWS, a third-party
client, the test suite itself, or an excerpt, naming the file or test that runs the whole
thing). Nothing else is skipped, and the test asserts how many blocks ran, so pages that
lose their examples fail too.

The README runs first and must export what it uses itself. Each documentation page then runs
in a shell of its own against the same server, starting where the README's quickstart leaves
a reader: ``STRATA_URL`` and ``STRATA_KEY`` exported.

The server listens on 8080 as the README says when that port is free; when it is not (a
developer's own ``make run``), on a free port, and the blocks' ``:8080`` is rewritten to it
-- the only change made to any block. A curl that answers an HTTP error fails the block
(``--fail-with-body`` is added to each curl call through a shell function).
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOCS = ROOT / "docs"
PAGES = [README, *sorted(p for p in DOCS.rglob("*.md") if "hooks" not in p.parts)]
BLOCK = re.compile(
    r"^(?:<!-- docs: (?P<directive>[^>]*?) -->\n)?```(?P<lang>[\w-]*)\n(?P<body>.*?)^```",
    re.M | re.S)
RUNNABLE = ("bash", "sh", "console", "python")
# The blocks run today (README, and the docs pages); fewer means examples were lost or the
# parser broke.
MIN_RUN = {README: 6, "docs": 8}


def blocks(page: Path = README) -> list[dict]:
    text = page.read_text()
    out = []
    for m in BLOCK.finditer(text):
        out.append({"line": text[:m.start()].count("\n") + 1, "lang": m["lang"],
                    "body": m["body"], "directive": (m["directive"] or "").strip(),
                    "page": page.relative_to(ROOT)})
    return out


def runnable(page: Path) -> list[dict]:
    return [b for b in blocks(page) if b["lang"] in RUNNABLE and not b["directive"]]


def test_every_block_is_run_or_says_why_not():
    """A block is run (a runnable language), parsed (json), plain text (a listing), or skipped
    with a reason written beside it; a directive anywhere else is a typo that would silently
    run or skip nothing (control: the README and the docs each keep their runnable blocks)."""
    for page in PAGES:
        text = page.read_text()
        found = blocks(page)
        for b in found:
            d = b["directive"]
            if d:
                assert re.fullmatch(r"skip \S.{8,}", d), f"{b['page']}:{b['line']}: {d!r} needs a reason"
            if b["lang"] == "json":
                json.loads(b["body"])
        assert text.count("<!-- docs:") == sum(1 for b in found if b["directive"]), (
            f"{page}: a <!-- docs: --> directive not on the line just before a fence")
        assert "<!-- readme:" not in text, f"{page}: the directive is <!-- docs: skip REASON -->"
    assert len(runnable(README)) >= MIN_RUN[README]
    assert sum(len(runnable(p)) for p in PAGES[1:]) >= MIN_RUN["docs"]


def _port() -> tuple[int, bool]:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", 8080))
            return 8080, True
        except OSError:
            pass
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1], False


def _clone(tmp: Path) -> Path:
    """The repository's files, linked, without its own .strata (a fresh clone's state)."""
    clone = tmp / "clone"
    clone.mkdir()
    for entry in ROOT.iterdir():
        if entry.name not in (".strata", ".git"):
            (clone / entry.name).symlink_to(entry)
    return clone


def _script(port: int, run: list[dict], preamble: str = "") -> str:
    parts = ["set -euo pipefail",
             'curl() { command curl --fail-with-body --silent --show-error "$@"; }', preamble]
    for i, b in enumerate(run):
        body = b["body"].replace(":8080", f":{port}")
        parts.append(f"echo '@@block {i}' >&2")
        if b["lang"] == "python":
            parts.append(f"python - <<'README_PYTHON'\n{body}README_PYTHON")
        elif b["lang"] == "console":
            lines, cont = [], False
            for line in body.splitlines():
                if line.startswith("$ ") or cont:
                    cmd = line[2:] if line.startswith("$ ") else line
                    lines.append(cmd)
                    cont = cmd.rstrip().endswith("\\")
            parts.append("\n".join(lines))
        else:
            parts.append(body)
    return "\n".join(parts) + "\n"


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    tmp_path = tmp_path_factory.mktemp("readme")
    port, exact = _port()
    clone = _clone(tmp_path)
    env = {k: v for k, v in os.environ.items() if not k.startswith("STRATA_")}
    env.update(STRATA_PORT=str(port), HOME=str(tmp_path / "home"),
               PATH=f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}")
    proc = subprocess.Popen([sys.executable, "-m", "strata.cli", "dev"], cwd=clone, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.monotonic() + 90
        while True:
            if proc.poll() is not None:
                raise AssertionError(f"strata dev exited:\n{proc.stdout.read()}")
            try:
                if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                raise AssertionError("strata dev did not answer /healthz within 90 s")
            time.sleep(0.3)
        yield clone, env, port
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()


# The README first (it sets up what the pages assume), then each page with runnable blocks.
RUN_PAGES = [p for p in PAGES if runnable(p)]


@pytest.mark.parametrize("page", RUN_PAGES, ids=[str(p.relative_to(ROOT)) for p in RUN_PAGES])
def test_examples_run_as_written(stack, page):
    """Given `strata dev` up in a fresh clone (and, for a docs page, the README's quickstart
    exports: STRATA_URL and STRATA_KEY)
    When every runnable block of the page runs in order in one shell
    Then each exits 0 (a curl answering an HTTP error counts as a failure) and the writes
    they make are there to read (control: the count of blocks run)."""
    clone, env, port = stack
    run = runnable(page)
    preamble = ("" if page == README else
                f"export STRATA_URL=http://127.0.0.1:{port} STRATA_KEY=$(cat .strata/admin.key)")
    proc = subprocess.run(["bash", "-c", _script(port, run, preamble)], cwd=clone, env=env,
                          capture_output=True, text=True, timeout=600)
    marks = re.findall(r"@@block (\d+)", proc.stderr)
    failed = run[int(marks[-1])] if marks else None
    assert proc.returncode == 0, (
        f"{page.name} block at line {failed['line'] if failed else '?'} failed "
        f"(exit {proc.returncode}):\n{proc.stderr[-3000:]}\n--- stdout:\n{proc.stdout[-2000:]}")
    assert len(marks) == len(run)
    assert '{"error"' not in proc.stdout, proc.stdout[-2000:]
