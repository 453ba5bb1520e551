"""A LangGraph agent with strata as its store: LangMem's memory tools over StrataStore, and
each turn sent to strata's ingest after the agent answers.

The graph is LangGraph's prebuilt ReAct agent (``create_react_agent``) with LangMem's
``manage_memory`` and ``search_memory`` tools, given ``store=StrataStore(...)``, followed by
``remember_conversation``, a node that sends the turn to ``/v1/ingest``: the model files what
it decides to keep, and strata extracts, judges and supersedes on its own as well.

    pip install "strata[langmem]"
    export STRATA_URL=http://127.0.0.1:8080 STRATA_KEY=...     # `strata dev` prints these
    python examples/langgraph_agent.py --user alice --offline  # a scripted model, no network
    python examples/langgraph_agent.py --user alice --model gpt-4o-mini  # needs OPENAI_API_KEY

Type a message per line; an empty line or end of input stops. Memories live at the path of
the namespace ``("memories", <user>)``: ``memories.<user>``.
"""

from __future__ import annotations

import argparse
import json
import sys
import uuid
import warnings
from typing import Any

from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langgraph.graph import END, START, MessagesState, StateGraph

from strata.client import Client
from strata.integrations.langgraph import StrataStore, remember_conversation
from strata.integrations.langmem import memory_tools

PROMPT = ("You are a helpful assistant with a long-term memory. Search it before answering "
          "about the user; file what they tell you about themselves.")


class ScriptedModel(BaseChatModel):
    """Offline stand-in for a model: a question searches memory and answers from what the
    tool returned; a statement is filed with manage_memory."""

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def bind_tools(self, tools: Any, **kwargs: Any) -> "ScriptedModel":
        return self

    def _generate(self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None,
                  **kwargs: Any) -> ChatResult:
        last_human = max(i for i, m in enumerate(messages) if isinstance(m, HumanMessage))
        user, since = messages[last_human].content, messages[last_human + 1:]
        tool_results = [m for m in since if isinstance(m, ToolMessage)]
        if tool_results:
            if user.rstrip().endswith("?"):
                found = json.loads(tool_results[-1].content)
                text = ("From what I remember: " + "; ".join(f["value"]["content"] for f in found[:2])
                        if found else "I don't know that yet.")
            else:
                text = "Noted."
            return _answer(AIMessage(text))
        if user.rstrip().endswith("?"):
            call = {"name": "search_memory", "args": {"query": user}}
        else:
            call = {"name": "manage_memory", "args": {"content": user, "action": "create"}}
        return _answer(AIMessage("", tool_calls=[{**call, "id": f"call-{uuid.uuid4().hex[:8]}"}]))


def _answer(message: AIMessage) -> ChatResult:
    return ChatResult(generations=[ChatGeneration(message=message)])


def build(strata: Client, model: BaseChatModel, user: str) -> Any:
    from langgraph.prebuilt import create_react_agent

    store = StrataStore(strata)
    with warnings.catch_warnings():  # moved to langchain.agents in LangGraph 1.0; still works
        warnings.simplefilter("ignore", DeprecationWarning)
        agent = create_react_agent(model, memory_tools(namespace=("memories", "{langgraph_user_id}")),
                                   prompt=PROMPT)
    graph = StateGraph(MessagesState)
    graph.add_node("agent", agent)
    graph.add_node("remember", remember_conversation(strata, path=f"memories.{user}", wait=True))
    graph.add_edge(START, "agent")
    graph.add_edge("agent", "remember")
    graph.add_edge("remember", END)
    return graph.compile(store=store)  # the store of the whole graph, its subgraphs too


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--user", default="me", help="whose memories (a path label)")
    parser.add_argument("--offline", action="store_true", help="a scripted model, no network")
    parser.add_argument("--model", default="gpt-4o-mini", help="an OpenAI chat model")
    args = parser.parse_args(argv)
    if args.offline:
        model: BaseChatModel = ScriptedModel()
    else:
        from langchain_openai import ChatOpenAI

        model = ChatOpenAI(model=args.model)
    config = {"configurable": {"langgraph_user_id": args.user}}
    with Client() as strata:
        app = build(strata, model, args.user)
        messages: list[BaseMessage] = []
        for line in sys.stdin:
            if not line.strip():
                break
            state = app.invoke({"messages": [*messages, HumanMessage(line.strip(), id=str(uuid.uuid4()))]},
                               config)
            messages = state["messages"]
            used = [m.name for m in messages[-3:] if isinstance(m, ToolMessage)]
            print(f"agent> {messages[-1].content}" + (f"  [tools: {', '.join(used)}]" if used else ""))
            sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
