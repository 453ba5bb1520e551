"""The integration examples, offline (scripted models), each run as its own process with
STRATA_URL / STRATA_KEY against a live server, as a user would run them."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from strata.client import Client

ROOT = Path(__file__).resolve().parents[2]


def example(server: str, key: str, name: str, *args: str, lines: tuple[str, ...] = ()) -> str:
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("STRATA_")},
           "STRATA_URL": server, "STRATA_KEY": key, "STRATA_PROFILES": "/nonexistent"}
    done = subprocess.run([sys.executable, str(ROOT / "examples" / name), *args],
                          input="\n".join(lines) + "\n", capture_output=True, text=True,
                          env=env, timeout=180)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def test_the_langgraph_example_files_and_finds_a_memory(server, tenant):
    """Given an empty memory
    When the LangGraph example's user asks, states a preference, and asks again
    Then the first answer knows nothing, the statement is filed by manage_memory at
    memories.<user> (and the turn ingested), and the second answer is grounded by it."""
    out = example(server, tenant.key, "langgraph_agent.py", "--offline", "--user", "sam",
                  lines=("Which editor do I use?", "I use Helix as my editor.",
                         "Which editor do I use?"))
    turns = out.split("agent> ")[1:]
    assert len(turns) == 3, out
    assert turns[0].startswith("I don't know") and "search_memory" in turns[0]
    assert turns[1].startswith("Noted.") and "manage_memory" in turns[1]
    assert turns[2].startswith("From what I remember: ") and "Helix" in turns[2]
    with Client(server, tenant.key) as c:
        held = [m.content for m in c.memories.list(path="memories.sam").items]
        assert "I use Helix as my editor." in held, held  # LangMem's, verbatim
        assert c.memories.list(path="memories.other").items == []


def test_the_openai_agents_example_recalls_and_remembers(server, tenant):
    """Given the Agents SDK example offline
    When the user states something and then asks about it
    Then the statement was remembered by the run hook (ingest wrote it), and the question
    ran recall, which returned that memory with its id."""
    out = example(server, tenant.key, "openai_agents_chat.py", "--offline", "--path", "users.sam",
                  lines=("I prefer PostgreSQL.", "Which database do I prefer?"))
    assert "agent> Noted.\n  remembered: wrote" in out, out
    assert re.search(r"recalled: \[[0-9a-f-]{36}\] The user prefers PostgreSQL", out), out


def test_the_mcp_example_lists_tools_and_recalls(server, tenant):
    """Given a memory remembered through the MCP example (bearer key over Streamable HTTP)
    When the example recalls
    Then it listed strata's tools and prints the memory with its id; under another path it
    recalls nothing (control)."""
    out = example(server, tenant.key, "mcp_client.py", "which database?", "--path", "users.kim",
                  "--remember", "I prefer PostgreSQL")
    tools = re.search(r"tools: (.*)", out).group(1).split(", ")
    assert {"recall", "remember"} <= set(tools)
    assert "remembered: kept 1" in out, out
    assert re.search(r"\[[0-9a-f-]{36}\] The user prefers PostgreSQL", out), out
    other = example(server, tenant.key, "mcp_client.py", "which database?", "--path", "users.lee")
    assert "nothing recalled" in other
