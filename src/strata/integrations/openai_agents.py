"""strata in the OpenAI Agents SDK (``pip install "strata[openai-agents]"``).

::

    from agents import Agent, Runner
    from strata.client import AsyncClient
    from strata.integrations.openai_agents import RememberTurns, memory_tools

    strata = AsyncClient()                                   # STRATA_URL / STRATA_KEY
    agent = Agent(name="assistant", instructions="Recall before answering about the user.",
                  tools=memory_tools(strata, path="users.alice"))
    result = await Runner.run(agent, "Which database do I prefer?",
                              hooks=RememberTurns(strata, path="users.alice"))

:func:`memory_tools` gives the agent three function tools, ``recall``, ``remember`` and
``forget``, each a call of the strata client; :class:`RememberTurns` is a run hook that sends
each finished turn (the user's input and the agent's final answer) to ``/v1/ingest``, so
strata's extraction and truth maintenance decide what is kept whether or not the model
called ``remember``. Both take a :class:`~strata.client.AsyncClient` (the SDK is async) or a
:class:`~strata.client.Client`, whose calls then run in a worker thread.

A tool's failure reaches the model as the tool's result, and the run goes on: strata's
error code and message (``strata refused: not_found: ...``), which hold no memory content,
so the model can say why; any other error as the SDK's opaque text. A value the user had
forgotten is no error: ``remember`` answers that it was blocked.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Sequence
from typing import Any

from agents import FunctionTool, RunHooks, function_tool
from agents.tool import default_tool_error_function

from strata.client import ApiError, AsyncClient, Client

__all__ = ["RememberTurns", "memory_tools", "turn_messages"]


async def _call(client: Client | AsyncClient, method: str, *args: Any, **kwargs: Any) -> Any:
    target: Any = client
    for attr in method.split("."):
        target = getattr(target, attr)
    if isinstance(client, AsyncClient):
        return await target(*args, **kwargs)
    return await asyncio.to_thread(target, *args, **kwargs)


def memory_tools(client: Client | AsyncClient, *, path: str | None = None,
                 limit: int = 5) -> list[FunctionTool]:
    """``recall``, ``remember`` and ``forget`` over strata, scoped to ``path`` (the key's
    default path when None); ``recall`` answers at most ``limit`` memories."""
    paths = [path] if path else None

    async def recall(query: str) -> str:
        """Search long-term memory for what is true now about the user or the task.

        Call this before answering anything that depends on the user's preferences, facts
        about them, or earlier conversations. Answers one memory per line as
        ``[memory id] statement``, most relevant first, or says that nothing is remembered.

        Args:
            query: What you need to know, in plain words (e.g. "which database the user prefers").
        """
        hits = await _call(client, "recall", query, paths=paths, limit=limit)
        if not hits:
            return "Nothing remembered about that."
        return "\n".join(f"[{h.id}] {h.content}" for h in hits)

    async def remember(statement: str) -> str:
        """Remember something the user said that will matter later: a preference, a fact
        about them, a decision. strata decides what is worth keeping, replaces what it
        contradicts (a new value of the same thing), and refuses secrets and forgotten values.

        Args:
            statement: The statement in the user's words (e.g. "I prefer PostgreSQL").
        """
        kept = await _call(client, "remember", statement, path)
        return kept.summary

    async def forget(memory_id: str) -> str:
        """Forget a memory for good, when the user asks you to: its content is erased and
        the same statement will not be remembered again.

        Args:
            memory_id: The memory's id, as recall showed it in brackets.
        """
        done = await _call(client, "memories.forget", memory_id)
        return f"Forgot {done.id}" + (f" and {len(done.also_forgotten)} like it"
                                      if done.also_forgotten else "")

    return [function_tool(f, failure_error_function=_refusal) for f in (recall, remember, forget)]


def _refusal(context: Any, error: Exception) -> str:
    """What the model reads when a tool fails: strata's error code and message (never
    memory content), so it can tell the user why; anything else stays the SDK's opaque text."""
    if isinstance(error, ApiError):
        return f"strata refused: {error}"
    return default_tool_error_function(context, error)


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # input_text / output_text parts
        return "\n".join(p.get("text", "") for p in content if isinstance(p, dict))
    return ""


def turn_messages(turn_input: str | Sequence[Any], output: Any) -> list[dict[str, str]]:
    """A finished turn as strata messages: the user's messages of the input, then the
    agent's final answer (tool calls and their results are the agent's work, not what was
    said)."""
    items = [{"role": "user", "content": turn_input}] if isinstance(turn_input, str) else turn_input
    out = []
    for item in items:
        if isinstance(item, dict) and item.get("role") == "user":
            text = _text(item.get("content")).strip()
            if text:
                out.append({"role": "user", "content": text})
    answer = output if isinstance(output, str) else (
        output.model_dump_json() if hasattr(output, "model_dump_json") else str(output))
    if out and answer and answer.strip():
        out.append({"role": "assistant", "content": answer.strip()})
    return out


class RememberTurns(RunHooks):
    """A run hook that sends each finished turn to strata's ingest when the agent produces
    its final output (``Runner.run(agent, input, hooks=RememberTurns(client, path=...))``).

    ``wait=False`` (the default) answers as soon as strata has the turn: extraction runs on
    the server after the run. ``wait=True`` holds the run's end until the memories are
    written (scripts, tests). Each turn is sent once, under an idempotency key of its own.
    A failure to reach strata propagates out of ``Runner.run`` after the answer was made;
    catch it there to make remembering best-effort.
    """

    def __init__(self, client: Client | AsyncClient, *, path: str | None = None,
                 wait: bool = False) -> None:
        self.client, self.path, self.wait = client, path, wait
        self.receipts: list[Any] = []

    async def on_agent_end(self, context: Any, agent: Any, output: Any) -> None:
        messages = turn_messages(getattr(context, "turn_input", None) or [], output)
        if not messages:
            return
        receipt = await _call(self.client, "ingest", messages, self.path, wait=self.wait,
                              idempotency_key=f"agents-{uuid.uuid4().hex}")
        self.receipts.append(receipt)
