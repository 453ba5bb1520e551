"""examples/agent_chat.py, offline (the scripted model), end to end against a real server:
the example runs as its own process with STRATA_URL / STRATA_KEY, as a user would run it."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from strata.client import Client

ROOT = Path(__file__).resolve().parents[1]


def chat(server: str, key: str, *lines: str, path: str = "users.sam") -> subprocess.CompletedProcess:
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("STRATA_")},
           "STRATA_URL": server, "STRATA_KEY": key, "STRATA_PROFILES": "/nonexistent"}
    return subprocess.run(
        [sys.executable, str(ROOT / "examples" / "agent_chat.py"), "--offline", "--path", path],
        input="\n".join(lines) + "\n", capture_output=True, text=True, env=env, timeout=120)


def test_the_agent_recalls_before_answering_and_remembers_after(server, tenant):
    """Given an empty memory
    When the user asks a question, states a preference, and asks again
    Then the first answer is grounded by nothing, the statement is remembered (a memory is
    created), and the second answer is grounded by that memory, printed with its id."""
    out = chat(server, tenant.key, "Which database do I prefer?", "I prefer PostgreSQL.",
               "Which database do I prefer?")
    assert out.returncode == 0, out.stderr
    turns = out.stdout.split("agent> ")[1:]
    assert len(turns) == 3, out.stdout
    assert turns[0].startswith("I don't know") and "grounded by nothing" in turns[0]
    created = re.search(r"remembered: wrote, created \[([0-9a-f-]{36})\]", turns[1])
    assert created, turns[1]
    assert f"grounded by [{created.group(1)}] The user prefers PostgreSQL" in turns[2]
    assert turns[2].startswith("From what I remember: The user prefers PostgreSQL")
    # and it is really in strata, in the path the agent was given (control: not elsewhere)
    with Client(server, tenant.key) as c:
        assert [m.content for m in c.memories.list(path="users.sam").items] == [
            "The user prefers PostgreSQL"]
        assert c.memories.list(path="users.other").items == []


def test_three_sessions_recall_where_the_user_lives_now(server, tenant):
    """Given three sessions of the agent (three processes, nothing shared but strata): in the
    first the user says they live in Berlin, in the second that they moved to Munich
    When the third asks where they live
    Then each remember answered what it kept, with its content, before its session ended (the
    move superseded Berlin), and the third answer is grounded by Munich, not Berlin. Control:
    a question in the second session, before the move, is grounded by Berlin."""
    first = chat(server, tenant.key, "I live in Berlin.")
    second = chat(server, tenant.key, "Where do I live?", "I moved to Munich.")
    third = chat(server, tenant.key, "Where do I live?")
    for out in (first, second, third):
        assert out.returncode == 0, out.stderr
    assert "remembered: wrote, created [" in first.stdout
    assert first.stdout.rstrip().endswith("The user lives in Berlin"), first.stdout
    before, moved = second.stdout.split("agent> ")[1:]
    assert before.startswith("From what I remember: The user lives in Berlin")
    assert "superseded_existing [" in moved and "The user moved to Munich" in moved, moved
    [answer] = third.stdout.split("agent> ")[1:]
    assert answer.startswith("From what I remember: The user moved to Munich"), answer
    assert "Berlin" not in answer


def test_the_agent_reports_a_strata_error_and_stops(server):
    out = chat(server, "sk_wrong", "hello?")
    assert out.returncode == 1 and "unauthenticated" in out.stderr
    assert "Traceback" not in out.stderr


def test_the_online_path_puts_recalled_memories_in_the_models_prompt(server, tenant, fake_llm):
    """With an OpenAI-compatible model (the loopback fake), the recalled memory is in the
    system prompt the model receives, and the model's answer is printed."""
    with Client(server, tenant.key) as c:
        c.remember("I prefer PostgreSQL", "users.sam")
    fake_llm.script("You prefer PostgreSQL.")
    env = {**{k: v for k, v in os.environ.items() if not k.startswith(("STRATA_", "OPENAI_"))},
           "STRATA_URL": server, "STRATA_KEY": tenant.key, "STRATA_PROFILES": "/nonexistent",
           "OPENAI_BASE_URL": fake_llm.base_url, "OPENAI_API_KEY": "test-key"}
    out = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "agent_chat.py"), "--path", "users.sam",
         "--model", "fake-model"],
        input="Which database do I prefer?\n", capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "agent> You prefer PostgreSQL." in out.stdout
    assert "grounded by [" in out.stdout
    [request] = fake_llm.completions
    system = request.messages[0]
    assert system["role"] == "system" and "The user prefers PostgreSQL" in system["content"]
    assert request.messages[-1] == {"role": "user", "content": "Which database do I prefer?"}
