"""An OpenAI Agents SDK agent with strata as its memory: recall, remember and forget as
function tools, and every finished turn sent to strata's ingest by a run hook.

    pip install "strata[openai-agents]"
    export STRATA_URL=http://127.0.0.1:8080 STRATA_KEY=...   # `strata dev` prints these
    python examples/openai_agents_chat.py --path users.me --offline   # a scripted model
    python examples/openai_agents_chat.py --path users.me --model gpt-4o-mini  # OPENAI_API_KEY

Type a message per line; an empty line or end of input stops. Offline, the SDK's own
``ScriptedModel`` plays the model: a question calls ``recall`` and the answer quotes what the
tool returned; anything else is answered "Noted." and remembered by the hook.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import uuid

from agents import Agent, Runner, set_tracing_disabled
from agents.items import ToolCallOutputItem

from strata.client import AsyncClient
from strata.integrations.openai_agents import RememberTurns, memory_tools

INSTRUCTIONS = ("You are a helpful assistant with a long-term memory. Call recall before "
                "answering anything about the user; say when you do not know.")


def scripted(line: str):
    """The SDK's ScriptedModel, scripted for one user line."""
    from agents.testing import ScriptedModel, assistant_message, function_call

    if line.rstrip().endswith("?"):
        return ScriptedModel([[function_call("recall", {"query": line}, call_id=f"c-{uuid.uuid4().hex[:8]}")],
                              [assistant_message("Here is what I remember.")]])
    return ScriptedModel([[assistant_message("Noted.")]])


async def chat(path: str, offline: bool, model_name: str) -> None:
    if offline:
        set_tracing_disabled(True)
    async with AsyncClient() as strata:
        hooks = RememberTurns(strata, path=path, wait=True)
        for line in sys.stdin:
            line = line.strip()
            if not line:
                break
            agent = Agent(name="assistant", instructions=INSTRUCTIONS,
                          model=scripted(line) if offline else model_name,
                          tools=memory_tools(strata, path=path))
            result = await Runner.run(agent, line, hooks=hooks)
            recalled = [str(i.output) for i in result.new_items if isinstance(i, ToolCallOutputItem)]
            print(f"agent> {result.final_output}")
            for text in recalled:
                print("  recalled: " + text.replace("\n", "\n  recalled: "))
            print(f"  remembered: {hooks.receipts[-1].status}" if hooks.receipts else "")
            sys.stdout.flush()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--path", default=None, help="where memories live (default: the key's)")
    parser.add_argument("--offline", action="store_true", help="a scripted model, no network")
    parser.add_argument("--model", default="gpt-4o-mini", help="an OpenAI model")
    args = parser.parse_args(argv)
    asyncio.run(chat(args.path, args.offline, args.model))
    return 0


if __name__ == "__main__":
    sys.exit(main())
