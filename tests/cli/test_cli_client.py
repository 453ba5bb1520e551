"""The client-side `strata` commands, run through `strata.cli.main.main` against a real server
(uvicorn on loopback over the test's database), and `strata export` / `strata import` on the
test's database. Bad input must give a message and a non-zero status, never a traceback."""

from __future__ import annotations

import io
import json
import subprocess
import sys
import uuid
from datetime import UTC, datetime, timedelta

import pytest

from strata.cli.main import main


PATH = "users.alice"
T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)


@pytest.fixture
def env(server, tenant, monkeypatch, tmp_path):
    """A user's shell: STRATA_URL and STRATA_KEY set, no profile file."""
    monkeypatch.setenv("STRATA_URL", server)
    monkeypatch.setenv("STRATA_KEY", tenant.key)
    monkeypatch.setenv("STRATA_PROFILES", str(tmp_path / "profiles.toml"))
    return tenant


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    return code, out, err


def remember(capsys, text: str, at: datetime | None = None, path: str = PATH) -> dict:
    if at is None:
        code, out, _ = run(capsys, "remember", text, "--path", path, "--json")
    else:
        code, out, _ = run(capsys, "remember", "--path", path, "--json", "--messages", "-")
    assert code == 0, out
    return json.loads(out)


def remember_at(capsys, monkeypatch, text: str, at: datetime, path: str = PATH) -> dict:
    monkeypatch.setattr(sys, "stdin", io.StringIO(json.dumps(
        [{"role": "user", "content": text, "at": at.isoformat()}])))
    code, out, err = run(capsys, "remember", "--path", path, "--json", "--messages", "-")
    assert code == 0, err
    return json.loads(out)


def test_remember_then_recall_as_a_table_json_and_explained(env, capsys):
    """Given a remembered preference (and a memory in another path)
    When it is recalled
    Then the table shows its score, kind, path, content and id; --json is the API's answer;
    --explain adds each score's breakdown; --path excludes the other path (control: it is
    found without the filter)."""
    code, out, _ = run(capsys, "remember", "I prefer PostgreSQL", "--path", PATH)
    assert code == 0 and "wrote" in out and "created" in out
    rid = remember(capsys, "I have a cat named Tom", path="users.bob")["items"][0]["memory_id"]

    code, out, _ = run(capsys, "recall", "which database", "--path", PATH)
    header, *rows = out.strip().splitlines()
    assert header.split() == ["#", "score", "kind", "path", "content", "id"]
    assert len(rows) == 1 and "The user prefers PostgreSQL" in rows[0] and PATH in rows[0]

    code, out, _ = run(capsys, "recall", "cat", "--json")
    results = json.loads(out)["results"]
    assert rid in [r["id"] for r in results] and all("score" in r for r in results)

    code, out, _ = run(capsys, "recall", "which database", "--path", PATH, "--explain")
    assert code == 0 and "vector #1" in out and "weights vector" in out and "text" in out
    assert "score = σ(" in out and "rank_match" in out

    code, out, _ = run(capsys, "recall", "nothing like this", "--path", "users.nobody")
    assert code == 0 and out.strip() == "no memories match"


def test_recall_json_is_the_api_answer_and_min_score_filters_by_the_score(env, server, capsys):
    """Given three memories
    When recalled with --json (and --explain), and with --min-score between two results' scores
    Then --json prints exactly what POST /v1/search answers for the same request; --min-score
    keeps the results scoring at least it, in their ranks (control: without it a result
    below the floor comes back), and the table shows only those."""
    import httpx

    for text in ("I prefer PostgreSQL", "I have a cat named Tom", "I live in Berlin"):
        remember(capsys, text)
    code, out, _ = run(capsys, "recall", "which database do I prefer", "--json", "--explain")
    cli = json.loads(out)
    api = httpx.post(f"{server}/v1/search", headers=env.headers, json={
        "query": "which database do I prefer", "explain": True}).json()
    assert code == 0 and set(cli) == {"results", "why_not"} and cli == api
    results = cli["results"]
    assert len(results) >= 2 and results[0]["score"] > results[-1]["score"]
    assert all(r["score"] == r["explain"]["score"] for r in results)

    floor = (results[0]["score"] + results[-1]["score"]) / 2
    code, out, _ = run(capsys, "recall", "which database do I prefer", "--json",
                       "--min-score", str(floor))
    kept = json.loads(out)["results"]
    assert code == 0 and kept and [r["id"] for r in kept] == [
        r["id"] for r in results if r["score"] >= floor]
    assert results[-1]["id"] not in {r["id"] for r in kept}
    assert [r["rank"] for r in kept] == [r["rank"] for r in results if r["score"] >= floor]
    code, out, _ = run(capsys, "recall", "which database do I prefer", "--min-score", str(floor))
    assert code == 0 and len(out.strip().splitlines()) == 1 + len(kept)


def test_memories_show_history_forget_restore(env, capsys, monkeypatch):
    mid = remember(capsys, "I live in Berlin")["items"][0]["memory_id"]
    code, out, _ = run(capsys, "memories", "show", mid)
    assert code == 0 and "The user lives in Berlin" in out and "status      active" in out

    code, out, _ = run(capsys, "memories", "history", mid)
    assert code == 0 and "no history" in out
    # a change, through the API, so history has a row
    from strata.client import Client

    with Client() as c:
        c.memories.update(mid, 1, importance=0.9)
    code, out, _ = run(capsys, "memories", "history", mid)
    assert code == 0 and "The user lives in Berlin" in out.splitlines()[1]

    code, out, _ = run(capsys, "memories", "list", "--path", PATH)
    assert mid in out

    # forget asks for --yes when it cannot ask (stdin is not a terminal)
    monkeypatch.setattr(sys, "stdin", io.StringIO(""))
    code, _, err = run(capsys, "memories", "forget", mid)
    assert code == 2 and "--yes" in err
    code, out, _ = run(capsys, "memories", "show", mid)
    assert code == 0  # still there: nothing was forgotten
    code, out, _ = run(capsys, "memories", "forget", mid, "--yes")
    assert code == 0 and "forgotten" in out
    code, _, err = run(capsys, "memories", "show", mid)
    assert code == 1 and "not_found" in err

    other = remember(capsys, "I have a dog named Rex")["items"][0]["memory_id"]
    with Client() as c:
        c.memories.delete(other)
    code, out, _ = run(capsys, "memories", "restore", other)
    assert code == 0 and "restored" in out
    code, _, err = run(capsys, "memories", "restore", mid)
    assert code == 1 and "[gone]" in err


def test_review_list_promote_reject(env, capsys, monkeypatch):
    remember_at(capsys, monkeypatch, "I prefer MongoDB", T0)
    remember_at(capsys, monkeypatch, "I've switched to PostgreSQL", T0 + timedelta(weeks=3))
    back = remember_at(capsys, monkeypatch, "I've gone back to MongoDB", T0 + timedelta(weeks=6))
    cid = back["items"][0]["memory_id"]
    code, out, _ = run(capsys, "review", "list")
    assert code == 0 and cid in out and "MongoDB" in out
    code, out, _ = run(capsys, "review", "promote", cid)
    assert code == 0 and "active" in out
    code, out, _ = run(capsys, "review", "list")
    assert out.strip() == "nothing to review"
    code, _, err = run(capsys, "review", "reject", cid)
    assert code == 1 and "[conflict]" in err  # no longer a candidate

    remember_at(capsys, monkeypatch, "I use vim", T0, path="users.bob")
    remember_at(capsys, monkeypatch, "I've switched to emacs", T0 + timedelta(weeks=3), path="users.bob")
    vim = remember_at(capsys, monkeypatch, "I've gone back to vim", T0 + timedelta(weeks=6), path="users.bob")
    code, out, _ = run(capsys, "review", "reject", vim["items"][0]["memory_id"], "--suppress", "--json")
    assert code == 0 and json.loads(out)["status"] == "rejected"


def test_remember_lists_what_was_kept_with_its_content_and_what_was_not_with_why(env, capsys):
    """Given a statement with a fact and a question in it
    When it is remembered
    Then the output lists the kept memory with its outcome, id and content (read back with
    the same key), and the question as "not kept (question)"; --json is the answer MCP and
    the client give, with the same not_kept and the content."""
    code, out, _ = run(capsys, "remember", "I live in Lisbon. Should I move to Berlin?",
                       "--path", PATH)
    assert code == 0 and out.startswith("receipt ") and "wrote" in out, out
    [kept] = [line for line in out.splitlines() if line.startswith("created")]
    assert "The user lives in Lisbon" in kept  # control: the fact is kept, with its content
    assert "not kept (question): Should I move to Berlin" in out
    assert "nothing stored" not in out and "--as-is" not in out

    receipt = remember(capsys, "Should I move to Berlin?", path="users.bob")
    assert receipt["items"] == [] and receipt["status"] == "meaningful_no_write"
    assert [(n["reason"], "Berlin" in n["text"]) for n in receipt["not_kept"]] == [("question", True)]


def test_remember_that_keeps_nothing_says_so_first_and_why(env, capsys):
    """Given a question, and a statement asking to remember a password
    When each is remembered
    Then the first line says nothing was stored, the next why (question: its text; secret:
    withheld, the password is never printed), the question is told how to store it anyway
    (--as-is) and the secret that it never will be; the exit status is 0 (the request was
    carried out) and nothing is in the path (control: a plain statement is stored there)."""
    code, out, _ = run(capsys, "remember", "should I move to Berlin?", "--path", PATH)
    lines = out.splitlines()
    assert code == 0 and lines[0].startswith(f"nothing stored in {PATH}"), out
    assert "not kept (question): should I move to Berlin" in out
    assert "run the same command with --as-is" in out

    code, out, _ = run(capsys, "remember", "Remember that the wifi password is hunter2",
                       "--path", PATH)
    lines = out.splitlines()
    assert code == 0 and lines[0].startswith(f"nothing stored in {PATH}"), out
    assert "not kept (secret): [withheld]" in lines
    assert "a secret is never stored, not even with --as-is" in out
    assert "hunter2" not in out

    code, out, _ = run(capsys, "memories", "list", "--path", PATH)
    assert out.strip() == "no memories"
    code, out, _ = run(capsys, "remember", "I live in Lisbon", "--path", PATH)
    assert code == 0 and "The user lives in Lisbon" in out and "nothing stored" not in out
    code, out, _ = run(capsys, "memories", "list", "--path", PATH)
    assert "The user lives in Lisbon" in out


def test_remember_as_is_stores_the_statement_verbatim(env, capsys):
    """Given a statement extraction does not keep as a memory of its own
    When it is remembered --as-is (twice, and another with --kind)
    Then it is stored verbatim, listed with its id and content; the repeat reinforces that
    memory (same id, version 2); --kind sets the kind; --json is the answer, its one item
    with the content."""
    code, out, _ = run(capsys, "remember", "--as-is", "I drive a Volvo", "--path", PATH)
    assert code == 0 and out.startswith(f"stored as written in {PATH}"), out
    [row] = [line for line in out.splitlines() if line.startswith("created")]
    assert row.endswith("I drive a Volvo")
    mid = row.split()[1]

    code, out, _ = run(capsys, "remember", "--as-is", "I drive a Volvo", "--path", PATH)
    assert code == 0 and "already held" in out and "version 2" in out and mid in out, out

    code, out, _ = run(capsys, "remember", "--as-is", "Always answer in French", "--kind",
                       "instruction", "--path", PATH, "--json")
    [made] = json.loads(out)["items"]
    assert code == 0 and made["outcome"] == "created" and made["memory_id"] != mid
    assert made["content"] == "Always answer in French"
    code, out, _ = run(capsys, "memories", "show", made["memory_id"], "--json")
    assert json.loads(out)["kind"] == "instruction"
    assert json.loads(out)["content"] == "Always answer in French"


def test_remember_as_is_with_context_is_recalled_by_the_question(env, capsys):
    """A statement remembered --as-is with --context is recalled by the context's words, which
    are not part of it (control: the same words find nothing before it is stored); --context
    without --as-is is bad input naming it."""
    code, out, _ = run(capsys, "recall", "married", "--path", PATH, "--json")
    assert code == 0 and json.loads(out)["results"] == []
    code, out, _ = run(capsys, "remember", "--as-is", "Five years already", "--context",
                       "How long have you been married?", "--path", PATH, "--json")
    assert code == 0 and json.loads(out)["items"][0]["outcome"] == "created", out
    code, out, _ = run(capsys, "recall", "married", "--path", PATH, "--json")
    [hit] = json.loads(out)["results"]
    assert (hit["content"], hit["context"]) == ("Five years already",
                                                "How long have you been married?")
    code, _, err = run(capsys, "remember", "Five years", "--context", "When?", "--path", PATH)
    assert code == 2 and "--context applies only with --as-is" in err, err


def test_remember_as_is_refuses_a_secret_and_a_forgotten_value(env, capsys):
    """Given a password, and a statement that was forgotten
    When either is remembered --as-is
    Then the secret is refused as bad input naming content (exit 2, the password not
    echoed) and the forgotten value is blocked (exit 1, with its tombstone); neither is
    stored (control: a plain statement --as-is is)."""
    code, out, err = run(capsys, "remember", "--as-is", "Remember that the wifi password is "
                         "hunter2", "--path", PATH)
    assert code == 2 and "(content)" in err and "hunter2" not in out + err, err

    code, out, _ = run(capsys, "remember", "--as-is", "I drive a Volvo", "--path", PATH, "--json")
    volvo = json.loads(out)["items"][0]["memory_id"]
    code, _, _ = run(capsys, "memories", "forget", volvo, "--yes")
    assert code == 0
    code, out, err = run(capsys, "remember", "--as-is", "I drive a Volvo", "--path", PATH)
    assert code == 1 and "nothing stored" in err and "[blocked]" in err and out == "", err

    code, out, _ = run(capsys, "memories", "list", "--path", PATH)
    assert out.strip() == "no memories"
    code, out, _ = run(capsys, "remember", "--as-is", "I drive a Saab", "--path", PATH)
    assert code == 0 and "I drive a Saab" in out


def test_remember_json_into_a_closed_pipe_is_quiet(server, tenant, tmp_path):
    """Given `strata remember ... --json | head -c1`, once head has gone (stdout is a pipe
    nobody reads)
    When the real entry point writes the receipt
    Then it ends with the status a shell reports for SIGPIPE and prints no traceback (the
    memory is stored all the same)."""
    import os

    env = {"PATH": "/usr/bin:/bin", "STRATA_URL": server, "STRATA_KEY": tenant.key,
           "STRATA_PROFILES": str(tmp_path / "none.toml"), "HOME": str(tmp_path)}
    read, write = os.pipe()
    os.close(read)
    try:
        out = subprocess.run([sys.executable, "-m", "strata.cli", "remember", "I live in Lisbon",
                              "--path", PATH, "--json"], stdout=write, stderr=subprocess.PIPE,
                             text=True, env=env, timeout=120)
    finally:
        os.close(write)
    assert "Traceback" not in out.stderr and "Exception ignored" not in out.stderr, out.stderr
    assert out.returncode == 141
    from strata.client import Client

    with Client(server, tenant.key) as c:
        assert [m.content for m in c.memories.list(path=PATH).items] == ["The user lives in Lisbon"]


@pytest.mark.parametrize("argv, status, message", [
    (["memories", "show", "not-a-uuid"], 2, "is not a memory id"),
    (["recall", "q", "--limit", "0"], 2, "must be at least 1"),
    (["recall", "q", "--valid-at", "yesterday"], 2, "not an ISO date"),
    (["remember"], 2, "give a statement"),
    (["remember", "   ", "--path", PATH], 2, "content must not be empty"),
    (["remember", "I like tea", "--path", "Not Valid!"], 2, "path"),
    (["memories", "show", str(uuid.uuid4())], 1, "memory not found"),
    (["remember", "--messages", "/nonexistent/file.json"], 2, "cannot read"),
    (["remember", "I like tea", "--kind", "fact", "--path", PATH], 2, "only with --as-is"),
    (["remember", "--as-is", "--messages", "-", "--path", PATH], 2, "give TEXT"),
    (["remember", "--as-is", "I like tea", "--no-wait", "--path", PATH], 2, "--no-wait"),
    (["remember", "--as-is", "--path", PATH], 2, "give the statement"),
    (["remember", "--as-is", "I like tea", "--kind", "gossip"], 2, "invalid choice"),
    (["recall", "tea", "--min-score", "1.5"], 2, "must be between 0 and 1"),
    (["recall", "tea", "--min-score", "high"], 2, "is not a number"),
])
def test_bad_input_is_a_message_and_a_status(env, capsys, argv, status, message):
    try:
        code = main(argv)
    except SystemExit as exc:  # argparse refuses before running
        code = exc.code
    _, err = capsys.readouterr()
    assert code == status and message in err and "Traceback" not in err


def test_errors_as_json_for_scripts(env, capsys):
    code, _, err = run(capsys, "memories", "show", str(uuid.uuid4()), "--json")
    assert code == 1 and json.loads(err)["error"]["code"] == "not_found"


def test_no_key_and_no_server_say_what_to_do(server, capsys, monkeypatch, tmp_path):
    monkeypatch.setenv("STRATA_PROFILES", str(tmp_path / "none.toml"))
    monkeypatch.setenv("STRATA_URL", server)
    code, _, err = run(capsys, "recall", "anything")
    assert code == 2 and "STRATA_KEY" in err
    monkeypatch.setenv("STRATA_KEY", "sk_wrong")
    code, _, err = run(capsys, "recall", "anything")
    assert code == 1 and "unauthenticated" in err and "sk_wrong" not in err
    code, _, err = run(capsys, "recall", "anything", "--url", "http://127.0.0.1:9")
    assert code == 1 and "cannot reach" in err and "strata dev" in err


def test_a_profile_supplies_url_and_key(server, tenant, capsys, monkeypatch, tmp_path):
    (tmp_path / "key").write_text(tenant.key)
    profiles = tmp_path / "profiles.toml"
    profiles.write_text(f'[work]\nurl = "{server}"\nkey_file = "key"\n')
    monkeypatch.setenv("STRATA_PROFILES", str(profiles))
    code, out, err = run(capsys, "remember", "I prefer tea", "--path", PATH, "--profile", "work")
    assert code == 0 and "created" in out, err
    code, _, err = run(capsys, "recall", "tea", "--profile", "home")
    assert code == 2 and "no profile 'home'" in err


def test_the_installed_command_never_shows_a_traceback(tmp_path):
    """The real `strata` entry point in a fresh process: an unreachable server and a bad id
    each give one line and a status."""
    env = {"PATH": "/usr/bin:/bin", "STRATA_URL": "http://127.0.0.1:9", "STRATA_KEY": "sk_x",
           "STRATA_PROFILES": str(tmp_path / "none.toml"), "HOME": str(tmp_path)}
    strata = [sys.executable, "-m", "strata.cli"]
    out = subprocess.run([*strata, "recall", "tea"], capture_output=True, text=True, env=env)
    assert out.returncode == 1 and "cannot reach" in out.stderr and "Traceback" not in out.stderr
    out = subprocess.run([*strata, "memories", "forget", "x"], capture_output=True, text=True, env=env)
    assert out.returncode == 2 and "not a memory id" in out.stderr and "Traceback" not in out.stderr


# --------------------------------------------------------------------------------------
# export / import (operator commands, on the database)
# --------------------------------------------------------------------------------------


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_export_then_import_twice_through_the_cli(env, operator, make_tenant, capsys, tmp_path):
    """Given a tenant with memories
    When `strata export` writes a file and `strata import` loads it into a fresh tenant twice
    Then the first import inserts every memory, the second inserts nothing, and neither
    draws a progress bar when stderr is not a terminal (control: on a terminal it does)."""
    remember(capsys, "I prefer PostgreSQL")
    remember(capsys, "I have a cat named Tom")
    out_file = tmp_path / "acme.jsonl"
    code, out, err = run(capsys, "export", "--tenant", "acme", "-o", str(out_file))
    assert code == 0 and json.loads(out)["counts"]["memory"] == 2, err
    assert err == ""  # quiet when piped
    make_tenant("copy")

    code, out, err = run(capsys, "import", str(out_file), "--tenant", "copy")
    report = json.loads(out)
    assert code == 0 and report["memories"]["inserted"] == 2 and report["complete"], err
    assert report["memories"]["embedded"] == 0
    assert "import" not in err

    captured, sys.stderr = sys.stderr, Terminal()
    try:
        code = main(["import", str(out_file), "--tenant", "copy"])
    finally:
        bar, sys.stderr = sys.stderr.getvalue(), captured
    out, _ = capsys.readouterr()
    again = json.loads(out)
    assert code == 0 and again["memories"]["inserted"] == 0 and again["memories"]["existing"] == 2
    assert "import" in bar and "rec" in bar  # the bar, on a terminal


def test_export_to_stdout_and_import_from_stdin(env, operator, make_tenant, capsys, monkeypatch):
    remember(capsys, "I prefer PostgreSQL")
    code, out, _ = run(capsys, "export", "--tenant", "acme")
    assert code == 0 and out.splitlines()[0].startswith('{"type": "header"')
    make_tenant("copy")
    monkeypatch.setattr(sys, "stdin", io.StringIO(out))
    code, out, _ = run(capsys, "import", "-", "--tenant", "copy")
    assert code == 0 and json.loads(out)["memories"]["inserted"] == 1


@pytest.mark.parametrize("content, status, message", [
    (None, 2, "cannot read"),
    ("this is not an export\n", 2, "not JSON"),
    ('{"type": "header"}\n', 2, "header record"),
])
def test_import_of_a_bad_file_is_a_message(operator, make_tenant, capsys, tmp_path,
                                           content, status, message):
    make_tenant("copy")
    path = tmp_path / "in.jsonl"
    if content is not None:
        path.write_text(content)
    code, out, err = run(capsys, "import", str(path), "--tenant", "copy")
    assert code == status and message in err and out == ""


def test_import_of_a_truncated_file_says_so(env, operator, make_tenant, capsys, tmp_path):
    remember(capsys, "I prefer PostgreSQL")
    code, out, _ = run(capsys, "export", "--tenant", "acme")
    cut = tmp_path / "cut.jsonl"
    cut.write_text("\n".join(out.splitlines()[:-1]) + "\n")
    make_tenant("copy")
    code, out, err = run(capsys, "import", str(cut), "--tenant", "copy")
    assert code == 1 and "ended before its end record" in err
    assert json.loads(out)["memories"]["inserted"] == 1


def test_export_of_an_unknown_tenant(operator, capsys):
    code, out, err = run(capsys, "export", "--tenant", "nobody")
    assert code == 2 and "not found" in err and out == ""


def test_events_tail_prints_changes_without_content_and_resumes_from_its_cursor(env, capsys):
    """Given a memory remembered as is, then forgotten
    When `strata events tail` runs, then again with the cursor it printed, and with --json
    Then the first prints its created and forgotten events (never the content) and the cursor;
    the second prints nothing new; --json gives one event per line; an unknown type is a
    usage error naming the types."""
    code, out, _ = run(capsys, "remember", "I keep my bike in the garage", "--as-is",
                       "--path", PATH, "--json")
    assert code == 0, out
    mid = json.loads(out)["items"][0]["memory_id"]
    code, out, _ = run(capsys, "memories", "forget", mid, "--yes")
    assert code == 0, out
    code, out, err = run(capsys, "events", "tail")
    assert code == 0, err
    lines = [line for line in out.splitlines() if mid in line]
    assert [line.split()[2] for line in lines] == ["created", "forgotten"], out
    assert "bike" not in out
    cursor = err.strip().rsplit(" ", 1)[-1]
    assert err.startswith("resume: --after ") and cursor == lines[-1].split()[0]
    code, out, err = run(capsys, "events", "tail", "--after", cursor)
    assert code == 0 and out == "" and err.strip().endswith(cursor)
    code, out, _ = run(capsys, "events", "tail", "--json", "--types", "forgotten")
    assert [json.loads(line)["memory_id"] for line in out.splitlines()] == [mid]
    with pytest.raises(SystemExit) as exit_:
        main(["events", "tail", "--types", "made"])
    assert exit_.value.code == 2 and "derived_retired" in capsys.readouterr().err
