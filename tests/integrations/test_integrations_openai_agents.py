"""strata.integrations.openai_agents: an OpenAI Agents SDK agent (the real `agents` package,
its chat-completions model over the real `openai` client) against the scripted loopback
OpenAI server (tests/fake_openai.py) and a live strata server."""

from __future__ import annotations

import asyncio

import pytest
from agents import Agent, OpenAIChatCompletionsModel, Runner, set_tracing_disabled
from fake_openai import reply, tool_call
from openai import AsyncOpenAI

from strata.client import AsyncClient, Backoff, Client
from strata.integrations.openai_agents import RememberTurns, memory_tools, turn_messages

PATH = "users.alice"


@pytest.fixture(autouse=True)
def _no_tracing():
    # The SDK exports traces to OpenAI by default: nothing leaves the machine in a test.
    set_tracing_disabled(True)
    yield


def run_agent(server: str, key: str, fake_llm, text: str, **hooks) -> tuple[str, RememberTurns]:
    async def go():
        async with AsyncClient(server, key, backoff=Backoff(base=0.01)) as strata:
            openai = AsyncOpenAI(base_url=fake_llm.base_url, api_key="test-key", max_retries=0)
            model = OpenAIChatCompletionsModel("fake-model", openai)
            agent = Agent(name="assistant", model=model,
                          instructions="Recall what you know about the user before answering.",
                          tools=memory_tools(strata, path=PATH))
            remembering = RememberTurns(strata, path=PATH, wait=True, **hooks)
            async with openai:
                result = await Runner.run(agent, text, hooks=remembering)
            return result.final_output, remembering

    return asyncio.run(go())


def tool_answer(request) -> str:
    return next(m["content"] for m in request.messages if m.get("role") == "tool")


def test_the_agent_recalls_before_answering_and_remembers_after(server, tenant, fake_llm):
    """Given Alice's preferred database in strata
    When she asks the agent, whose model first calls recall and then answers from what the
    tool returned, and in a second run tells it something new
    Then the model was shown the memory (with its id) before it answered, the answer is
    grounded by it, and after each run the hook sent the turn to ingest: the new statement is
    a memory at her path. Control: recall under another path finds nothing of hers."""
    with Client(server, tenant.key) as c:
        held = c.remember("I prefer PostgreSQL", PATH).items[0]

    fake_llm.script(tool_call("recall", query="which database the user prefers"),
                    lambda request: reply("You prefer " + tool_answer(request).split("] ")[1]))
    answer, hooks = run_agent(server, tenant.key, fake_llm, "Which database do I prefer?")
    second = fake_llm.completions[1]
    assert f"[{held.memory_id}] The user prefers PostgreSQL" in tool_answer(second)
    assert answer == "You prefer The user prefers PostgreSQL"
    assert len(hooks.receipts) == 1  # the question was sent to ingest (and kept nothing)

    fake_llm.script("Noted: Redis for caching.")
    answer, hooks = run_agent(server, tenant.key, fake_llm, "I use Redis for caching.")
    assert answer == "Noted: Redis for caching."
    assert [r.status for r in hooks.receipts] == ["wrote"]
    with Client(server, tenant.key) as c:
        contents = [m.content for m in c.memories.list(path=PATH).items]
        assert any("Redis" in text for text in contents), contents
        assert c.recall("Redis caching", paths=["users.bob"]) == []


def test_remember_and_forget_tools(server, tenant, fake_llm):
    """Given an agent whose model calls remember, recall, forget (on the id recall showed)
    and remember again with the same statement
    Then the first is kept, the forget erases it, and the second remember is blocked: the
    model reads that strata did not keep a forgotten value. A forget of an id that is not a
    memory reaches the model as strata's refusal, and the run goes on."""
    def forget_shown(request):
        shown = last_tool_answer(request)
        return tool_call("forget", memory_id=shown.split("]")[0].lstrip("["))

    fake_llm.script(
        tool_call("remember", statement="I prefer Vim"),
        tool_call("recall", query="which editor the user prefers"),
        forget_shown,
        tool_call("remember", statement="I prefer Vim"),
        tool_call("forget", memory_id="not-an-id"),
        lambda request: reply(" | ".join(m["content"] for m in request.messages
                                        if m.get("role") == "tool")))
    answer, _ = run_agent(server, tenant.key, fake_llm, "Remember my editor, then forget it")
    parts = answer.split(" | ")
    assert len(parts) == 5, answer
    first, recalled, forgot, again, refused = parts
    assert "created" in first and "The user prefers Vim" in recalled
    assert forgot.startswith("Forgot ")
    assert "blocked: forgotten" in again, again
    assert refused.startswith("strata refused: invalid_input"), refused
    with Client(server, tenant.key) as c:
        assert c.memories.list(path=PATH, status="all").items  # the turn itself was ingested
        assert not [m for m in c.memories.list(path=PATH, status="all").items if "Vim" in m.content]


def last_tool_answer(request) -> str:
    return [m["content"] for m in request.messages if m.get("role") == "tool"][-1]


def test_turn_messages_keeps_what_was_said():
    items = [{"role": "system", "content": "be brief"},
             {"role": "user", "content": [{"type": "input_text", "text": "I live in Oslo"}]},
             {"type": "function_call_output", "call_id": "x", "output": "nothing"}]
    assert turn_messages(items, "Noted.") == [
        {"role": "user", "content": "I live in Oslo"}, {"role": "assistant", "content": "Noted."}]
    assert turn_messages("hi", "") == [{"role": "user", "content": "hi"}]
    assert turn_messages([], "an answer to nothing") == []
