"""A minimal chat agent with strata as its memory: recall before answering, remember after.

Each turn: search strata for what is relevant to the user's message, answer with those
memories in the prompt, print which memories grounded the reply, then remember the exchange
(strata extracts what is worth keeping, resolves it against what it already holds, retires
what stopped being true, and answers what it kept once that is done, so the next turn, or the
next session, recalls it).

    export STRATA_URL=http://127.0.0.1:8080 STRATA_KEY=...   # `strata dev` prints these
    python examples/agent_chat.py --path users.me --offline  # a scripted model, no network
    python examples/agent_chat.py --path users.me --model gpt-4o-mini
        # any OpenAI-compatible endpoint: OPENAI_API_KEY, and OPENAI_BASE_URL for others

Type a message per line; an empty line or end of input stops.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any, Protocol, TextIO

from strata.client import ApiError, Client

SYSTEM = (
    "You are a helpful assistant with a long-term memory. The memories below were recalled "
    "for this message; use them when they are relevant, and say so when you do not know."
)


class Model(Protocol):
    name: str

    def reply(self, user: str, memories: Sequence[Any], history: list[dict[str, str]]) -> str: ...


def prompt(user: str, memories: Sequence[Any], history: list[dict[str, str]]) -> list[dict[str, str]]:
    recalled = "\n".join(f"- {m.content} (valid since {m.valid_from:%Y-%m-%d})" for m in memories)
    system = f"{SYSTEM}\n\nMemories:\n{recalled or '(none)'}"
    return [{"role": "system", "content": system}, *history, {"role": "user", "content": user}]


class ScriptedModel:
    """Offline stand-in for a model: answers from the memories it is shown, deterministically."""

    name = "scripted"

    def reply(self, user: str, memories: Sequence[Any], history: list[dict[str, str]]) -> str:
        if user.rstrip().endswith("?"):
            if not memories:
                return "I don't know that yet."
            return "From what I remember: " + "; ".join(m.content for m in memories[:2]) + "."
        return "Noted."


class OpenAIModel:
    """Any OpenAI-compatible chat-completions endpoint (the ``openai`` package reads
    OPENAI_API_KEY and OPENAI_BASE_URL)."""

    def __init__(self, model: str) -> None:
        from openai import OpenAI

        self.client = OpenAI()
        self.name = model

    def reply(self, user: str, memories: Sequence[Any], history: list[dict[str, str]]) -> str:
        out = self.client.chat.completions.create(model=self.name,
                                                  messages=prompt(user, memories, history))
        return out.choices[0].message.content or ""


def turn(strata: Client, model: Model, path: str, user: str, history: list[dict[str, str]],
         limit: int = 3):
    """One exchange: recall, answer, remember. Returns (reply, grounding memories, what was
    remembered)."""
    memories = strata.recall(user, paths=[path], limit=limit)
    reply = model.reply(user, memories, history)
    receipt = strata.remember(
        [{"role": "user", "content": user}, {"role": "assistant", "content": reply}], path)
    history += [{"role": "user", "content": user}, {"role": "assistant", "content": reply}]
    del history[:-12]  # a short window of the conversation; strata holds the rest
    return reply, memories, receipt


def main(argv: list[str] | None = None, stdin: TextIO = sys.stdin, stdout: TextIO = sys.stdout) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--path", default="users.me", help="whose memories (default users.me)")
    parser.add_argument("--offline", action="store_true", help="use the scripted model")
    parser.add_argument("--model", default="gpt-4o-mini", help="the chat model (online)")
    parser.add_argument("--limit", type=int, default=3, help="memories recalled per turn")
    args = parser.parse_args(argv)

    model: Model = ScriptedModel() if args.offline else OpenAIModel(args.model)
    interactive = stdin.isatty()
    history: list[dict[str, str]] = []
    try:
        with Client() as strata:
            while True:
                if interactive:
                    print("you> ", end="", file=stdout, flush=True)
                line = stdin.readline()
                if not line.strip():
                    return 0
                reply, memories, receipt = turn(strata, model, args.path, line.strip(), history,
                                                args.limit)
                print(f"agent> {reply}", file=stdout)
                for m in memories:
                    print(f"  grounded by [{m.id}] {m.content}", file=stdout)
                if not memories:
                    print("  grounded by nothing (no memories yet)", file=stdout)
                kept = [i for i in receipt.items if i.outcome != "blocked"]
                print(f"  remembered: {receipt.status}, "
                      + (", ".join(f"{i.outcome} [{i.memory_id}] {i.content or ''}".rstrip()
                                   for i in kept) or "nothing new"),
                      file=stdout, flush=True)
    except ApiError as exc:
        print(f"agent: strata said {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
