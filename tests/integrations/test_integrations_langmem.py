"""LangMem's tools and a LangGraph agent over StrataStore, against a live server, with the
real langgraph, langchain-core and langmem packages. The chat model is scripted: a
langchain-core chat model whose answers are functions of the conversation so far (it reads
the memory id a tool answered, as a model would)."""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Callable
from typing import Any

import pytest
from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, create_react_agent

from strata.client import Backoff, Client, Suppressed
from strata.integrations.langgraph import StrataStore, remember_conversation
from strata.integrations.langmem import memory_tools

pytestmark = pytest.mark.filterwarnings(
    # create_react_agent moved to langchain.agents in LangGraph 1.0; it is the API the
    # integration is asked to serve, and it still works.
    "ignore:create_react_agent has been moved:DeprecationWarning")

USER = {"configurable": {"langgraph_user_id": "alice"}}
PATH = "memories.alice"


class Scripted(BaseChatModel):
    """A chat model that answers with the next step of its script, each a function of the
    messages it is shown."""

    steps: list[Callable[[list[BaseMessage]], AIMessage]]

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def bind_tools(self, tools: Any, **kwargs: Any) -> "Scripted":
        return self

    def _generate(self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None,
                  **kwargs: Any) -> ChatResult:
        return ChatResult(generations=[ChatGeneration(message=self.steps.pop(0)(messages))])


def call(name: str, **args: Any) -> Callable[[list[BaseMessage]], AIMessage]:
    return lambda _: AIMessage("", tool_calls=[{"name": name, "args": args,
                                                "id": f"call-{uuid.uuid4().hex[:8]}"}])


def say(text: str | Callable[[list[BaseMessage]], str]) -> Callable[[list[BaseMessage]], AIMessage]:
    return lambda messages: AIMessage(text(messages) if callable(text) else text)


def last_tool_answer(messages: list[BaseMessage]) -> str:
    return next(m.content for m in reversed(messages) if isinstance(m, ToolMessage))


@pytest.fixture
def strata(server, tenant):
    with Client(server, tenant.key, backoff=Backoff(base=0.01)) as c:
        yield c


def test_a_react_agent_manages_and_searches_memories_in_strata(strata):
    """Given create_react_agent with LangMem's manage and search tools over a StrataStore
    When the user states a preference (the model creates a memory), corrects it (the model
    updates that memory by the id the tool answered) and asks (the model searches)
    Then the memory lives in strata at the user's namespace path, named by LangMem's id, at
    version 2 with the first statement in its history, and the answer is the current one."""
    memory_id: dict[str, str] = {}

    def update_it(messages):
        created = next(m.content for m in messages if isinstance(m, ToolMessage))
        memory_id["id"] = re.search(r"memory ([0-9a-f-]{36})", created).group(1)
        return call("manage_memory", content="The user prefers the light theme",
                    action="update", id=memory_id["id"])(messages)

    model = Scripted(steps=[
        call("manage_memory", content="The user prefers the dark theme", action="create"),
        say("Noted."),
        update_it,
        say("Updated."),
        call("search_memory", query="which theme does the user prefer"),
        say(lambda m: "From memory: " + json.loads(last_tool_answer(m))[0]["value"]["content"]),
    ])
    agent = create_react_agent(model, memory_tools(), store=StrataStore(strata))
    state = agent.invoke({"messages": [HumanMessage("I like the dark theme")]}, USER)
    state = agent.invoke({"messages": [*state["messages"], HumanMessage("No, the light one")]}, USER)
    state = agent.invoke({"messages": [*state["messages"], HumanMessage("Which theme?")]}, USER)
    assert state["messages"][-1].content == "From memory: The user prefers the light theme"

    [memory] = strata.memories.list(path=PATH).items
    assert memory.name == memory_id["id"] and memory.content == "The user prefers the light theme"
    assert memory.version == 2 and memory.meta == {"content": "The user prefers the light theme"}
    assert [h.snapshot["content"] for h in strata.memories.history(memory.id)] == [
        "The user prefers the dark theme"]
    assert strata.memories.list(path="memories.bob").items == []  # control: alice's path only


def test_a_forgotten_value_is_refused_to_the_agent(strata):
    """Given a memory the user had forgotten (erased, its value tombstoned)
    When the agent's model creates the same memory again through LangMem's tool
    Then with LangGraph's default tool error handling the run raises strata's Suppressed; with
    handle_tool_errors the model is handed the refusal as the tool's error; nothing is stored
    either way. Control: a different value is created."""
    store = StrataStore(strata)
    store.put(("memories", "alice"), "x", {"content": "The user's blood type is AB negative"})
    store.forget(("memories", "alice"), "x")

    again = call("manage_memory", content="The user's blood type is AB negative")
    agent = create_react_agent(Scripted(steps=[again]), memory_tools(), store=store)
    with pytest.raises(Suppressed):
        agent.invoke({"messages": [HumanMessage("My blood type is AB negative")]}, USER)

    model = Scripted(steps=[again, say(last_tool_answer),
                            call("manage_memory", content="The user's cat is called Miso"),
                            say("Noted.")])
    agent = create_react_agent(model, ToolNode(memory_tools(), handle_tool_errors=True),
                               store=store)
    state = agent.invoke({"messages": [HumanMessage("My blood type is AB negative")]}, USER)
    assert "suppressed" in state["messages"][-1].content.lower()
    agent.invoke({"messages": [HumanMessage("My cat is Miso")]}, USER)
    assert [m.content for m in strata.memories.list(path=PATH).items] == [
        "The user's cat is called Miso"]


def test_remember_conversation_sends_the_turn_to_ingest(strata):
    """Given a graph whose agent node answers and whose next node is remember_conversation
    When a turn runs, and the same turn is replayed
    Then strata's extraction kept what the user said (at the configured user's path, where
    LangMem's search tool finds it), once: the replay carries the same idempotency key.
    A later turn with a new value supersedes the old one."""
    def agent(state: MessagesState) -> dict:
        return {"messages": [AIMessage("Got it.", id=f"ai-{len(state['messages'])}")]}

    graph = StateGraph(MessagesState)
    graph.add_node("agent", agent)
    graph.add_node("remember", remember_conversation(
        strata, path_of_config=lambda c: f"users.{c['configurable']['user_id']}", wait=True))
    graph.add_edge(START, "agent")
    graph.add_edge("agent", "remember")
    graph.add_edge("remember", END)
    app = graph.compile()
    config = {"configurable": {"user_id": "alice"}}

    turn = {"messages": [HumanMessage("I live in Berlin.", id="h-1")]}
    app.invoke(turn, config)
    app.invoke(turn, config)  # replayed: the same messages, the same ids
    held = strata.memories.list(path="users.alice").items
    assert [m.content for m in held] == ["The user lives in Berlin"]

    later = app.invoke({"messages": [HumanMessage("I moved to Munich.", id="h-2")]}, config)
    assert later["messages"][-1].content == "Got it."
    assert [m.content for m in strata.memories.list(path="users.alice").items] == [
        "The user moved to Munich"]
    assert [m.content for m in strata.memories.list(path="users.alice", status="superseded").items] == [
        "The user lives in Berlin"]
    [search] = memory_tools(StrataStore(strata), namespace=("users", "{user_id}"))[1:]
    found = json.loads(search.invoke({"query": "where does the user live"}, config))
    assert [f["value"]["content"] for f in found] == ["The user moved to Munich"]
