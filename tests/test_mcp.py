"""MCP over Streamable HTTP at /mcp: the official ``mcp`` client over real HTTP against the
app under uvicorn on a loopback port, and the same JSON-RPC calls through the Lambda handler
(functions/mcp/handler.py) with API Gateway HTTP API v2.0 events, into the real database.

A wrong or missing key is refused at the HTTP level (403 with a JSON-RPC error, not the 401
that sends MCP clients into OAuth: tests/test_mcp_auth.py), before any MCP message is read;
everything a key-holder gets wrong comes back as a tool error (``isError``) whose body is the
HTTP API's ``{"error": {"code", ...}}``.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, get_args

import anyio
import httpx
import httpx2
import pytest
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from test_handlers import _reset_logging, http_event, invoke

from strata.api.mcp import tools
from strata.auth import Caller, create_key
from strata.db import get_database
from strata.foundation.config import get_settings
from strata.ingest.models import IngestRequest, Message
from strata.memories.models import MemoryIn, MemoryPatch
from strata.reflection import reflect as reflection
from strata.rules.models import RuleIn
from strata.search.hybrid import SearchRequest

import support

ROOT = Path(__file__).resolve().parents[1]

TOOL_NAMES = {"remember", "recall", "get_memory", "update_memory", "forget", "memory_history",
              "list_review", "review_decision", "set_rule", "list_rules", "reflect",
              "consolidate"}
T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)


@pytest.fixture
def mcp_url(server):
    """The app `strata dev` serves (every router: create_app() without routers), on a port."""
    return f"{server}/mcp"


@contextlib.asynccontextmanager
async def mcp_session(url: str, key: str) -> AsyncIterator[ClientSession]:
    async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {key}"}) as http:
        async with streamable_http_client(url, http_client=http) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                yield session


async def call(session: ClientSession, name: str, **arguments: Any) -> tuple[dict, bool]:
    """One tool call: (structured result, is_error); the text block says the same in JSON."""
    result = await session.call_tool(name, arguments)
    [block] = result.content
    assert json.loads(block.text) == result.structured_content
    return result.structured_content, result.is_error


def run(fn, *args):
    return anyio.run(fn, *args)


def assert_tool_error(outcome: tuple[dict, bool], code: str, field: str | None = None) -> dict:
    body, is_error = outcome
    assert is_error, body
    assert set(body) == {"error"} and body["error"]["code"] == code, body
    assert body["error"]["message"], body
    if field is not None:
        assert body["error"].get("field") == field, body
    return body["error"]


def wrong_secret(key: str) -> str:
    """The same key id with another secret: found by prefix, refused by the hash check."""
    return key[:-1] + ("A" if key[-1] != "A" else "B")


def ok(outcome: tuple[dict, bool]) -> dict:
    body, is_error = outcome
    assert not is_error, body
    return body


def kept(answer: dict) -> str:
    """The id of the one memory a remember answer kept."""
    [item] = answer["items"]
    return item["memory_id"]


def recalled(outcome: tuple[dict, bool]) -> list[str]:
    return [r["content"] for r in ok(outcome)["results"]]


# ----------------------------------------------------------------------- over real HTTP


def stated_tools() -> tuple[int, set[str]]:
    """The count and the names the tools module's docstring states (what docs quote)."""
    import re

    said = re.search(r"The (\d+) tools, as ``tools/list`` answers them: (.*?)\. ",
                     " ".join(tools.__doc__.split()))
    assert said, "the tools module's docstring no longer states the tools"
    return int(said.group(1)), set(re.findall(r"``(\w+)``", said.group(2)))


def test_the_stated_tool_count_is_the_tools_count():
    """Given the tools module's docstring, the one place that counts the MCP tools
    Then its count is the number of tools and of the names it lists, and those names are
    the tools (tools/list in the test below serves exactly these)."""
    count, named = stated_tools()
    assert count == len(named) == len(tools.TOOLS) and named == set(tools.TOOLS)
    assert count >= 12  # control: the parse found the list


def test_initialize_and_tools_with_schemas_an_llm_can_use(mcp_url, tenant):
    """Given the local app
    When the official client initializes and lists tools
    Then the server is strata with instructions, and the tools (as many as the tools
    module's docstring counts, and those it names) each have a title, a
    description, an object schema that forbids unknown arguments, a description on every
    argument, and the arguments the tool cannot work without marked required."""
    async def go():
        async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {tenant.key}"}) as http:
            async with streamable_http_client(mcp_url, http_client=http) as (read, write):
                async with ClientSession(read, write) as session:
                    init = await session.initialize()
                    listed = await session.list_tools()
        return init, listed.tools

    init, listed = run(go)
    assert init.server_info.name == "strata" and "recall" in init.instructions
    assert {t.name for t in listed} == TOOL_NAMES
    count, named = stated_tools()
    assert len(listed) == count and {t.name for t in listed} == named
    required = {t.name: set(t.input_schema.get("required", ())) for t in listed}
    assert required == {
        "remember": set(), "recall": {"query"}, "get_memory": {"id"},
        "update_memory": {"id", "expected_version"}, "forget": {"id"},
        "memory_history": {"id"}, "list_review": set(), "review_decision": {"id", "decision"},
        "set_rule": {"path"}, "list_rules": set(), "reflect": set(), "consolidate": {"ids"},
    }
    for tool in listed:
        schema = tool.input_schema
        assert tool.title and len(tool.description) > 80, tool.name
        assert schema["type"] == "object" and schema["additionalProperties"] is False
        assert set(schema.get("required", ())) <= set(schema["properties"]), tool.name
        for name, prop in schema["properties"].items():
            assert prop.get("description") or name == "id" and prop.get("format"), (tool.name, name)
    annotations = {t.name: t.annotations for t in listed}
    assert annotations["recall"].read_only_hint and annotations["forget"].destructive_hint
    assert not annotations["remember"].read_only_hint


def test_remember_recall_update_forget_round_trip(mcp_url, tenant):
    """Given a control memory and a second memory remembered through MCP
    When the second is recalled, updated (with its version), forgotten, and recall runs again
    Then recall finds both at first and the updated content after the update; after forget
    the memory is gone from recall and get_memory says not_found, while the control is still
    found."""
    async def go():
        async with mcp_session(mcp_url, tenant.key) as s:
            control = ok(await call(s, "remember", statement="The office plants are watered on "
                                    "Mondays", path="shared.office", as_is=True))
            target = ok(await call(s, "remember", statement="The deploy window is Thursday "
                                   "afternoon", path="shared.office", tags=["ops"], as_is=True))
            assert [i["outcome"] for i in control["items"] + target["items"]] == [
                "created", "created"]
            assert target["path"] == "shared.office" and target["items"][0]["version"] == 1
            first = recalled(await call(s, "recall", query="deploy window Thursday"))
            got = ok(await call(s, "get_memory", id=kept(target)))
            updated = ok(await call(s, "update_memory", id=kept(target),
                                    expected_version=got["version"],
                                    content="The deploy window is Wednesday morning"))
            second = recalled(await call(s, "recall", query="deploy window Wednesday"))
            forgotten = ok(await call(s, "forget", id=kept(target)))
            after = recalled(await call(s, "recall", query="deploy window Wednesday", limit=20))
            gone = await call(s, "get_memory", id=kept(target))
            plants = recalled(await call(s, "recall", query="office plants watered"))
        return control, target, first, got, updated, second, forgotten, after, gone, plants

    control, target, first, got, updated, second, forgotten, after, gone, plants = run(go)
    assert first[0] == "The deploy window is Thursday afternoon"
    assert got["tags"] == ["ops"] and got["status"] == "active"
    assert updated["version"] == 2 and updated["content"] == "The deploy window is Wednesday morning"
    assert second[0] == "The deploy window is Wednesday morning"
    assert forgotten["id"] == kept(target)
    assert "The deploy window is Wednesday morning" not in after
    assert "The office plants are watered on Mondays" in after  # control: recall still answers
    assert_tool_error(gone, "not_found")
    assert plants[0] == "The office plants are watered on Mondays"


def test_remember_with_context_is_recalled_by_the_question_it_answers(mcp_url, tenant):
    """A statement remembered with the question it answers as its context is recalled by the
    question's words (the same statement without it, in another path, is not: control), and
    a context with messages is refused naming the field."""
    async def go():
        async with mcp_session(mcp_url, tenant.key) as s:
            with_ctx = ok(await call(s, "remember", statement="Five years already", as_is=True,
                                     path="users.mel", context="How long have you been married?"))
            ok(await call(s, "remember", statement="Five years already", path="users.bob",
                          as_is=True))
            found = ok(await call(s, "recall", query="married", mode="keyword"))
            bad = await call(s, "remember", messages=[{"role": "user", "content": "hi"}],
                             path="users.mel", context="hello")
        return with_ctx, found, bad

    with_ctx, found, bad = run(go)
    assert [(r["id"], r["context"]) for r in found["results"]] == [
        (kept(with_ctx), "How long have you been married?")]
    assert_tool_error(bad, "invalid_input", field="context")


def test_get_and_delete_answer_405_without_a_stream(mcp_url, tenant):
    """Given stateless mode (no server-initiated stream, no session)
    When a client GETs or DELETEs /mcp
    Then it gets 405 with Allow: POST at once (a held-open GET would pin a Lambda until its
    timeout); POST is the method that works (control: previous tests)."""
    for method in ("GET", "DELETE"):
        r = httpx.request(method, mcp_url, headers={"Authorization": f"Bearer {tenant.key}",
                                                    "Accept": "text/event-stream"})
        assert (r.status_code, r.headers["allow"]) == (405, "POST"), r.text


def test_the_stateless_2026_protocol_era_is_served_too(mcp_url, tenant, make_tenant):
    """Given a client that skips the handshake (server/discover, protocol 2026-07-28: every
    request carries its own envelope, which the SDK routes apart from the 2025 transport)
    When it lists tools, remembers, and another tenant reads that id
    Then the key is applied the same way: the tools are listed, the write lands, and the
    other tenant gets a not_found tool error while the owner gets the memory (control)."""
    other = make_tenant("umbrella")

    @contextlib.asynccontextmanager
    async def discovered(key: str) -> AsyncIterator[ClientSession]:
        async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {key}"}) as http:
            async with streamable_http_client(mcp_url, http_client=http) as (read, write):
                async with ClientSession(read, write) as session:
                    assert "2026-07-28" in (await session.discover()).supported_versions
                    yield session

    async def go():
        async with discovered(tenant.key) as s:
            names = {t.name for t in (await s.list_tools()).tools}
            made = ok(await call(s, "remember", statement="Release notes ship with each tag",
                                 path="shared.releases", as_is=True))
            mine = ok(await call(s, "get_memory", id=kept(made)))
        async with discovered(other.key) as b:
            theirs = await call(b, "get_memory", id=kept(made))
        return names, mine, theirs

    names, mine, theirs = run(go)
    assert names == TOOL_NAMES
    assert mine["content"] == "Release notes ship with each tag"
    assert_tool_error(theirs, "not_found")


def test_another_tenants_memory_is_not_found(mcp_url, tenant, make_tenant):
    """Given a memory of tenant A
    When tenant B's key gets, updates, forgets or reads the history of that id
    Then each is a not_found tool error and B's recall does not return it; A still gets it
    (control), unchanged."""
    other = make_tenant("globex")

    async def go():
        async with mcp_session(mcp_url, tenant.key) as a:
            mine = ok(await call(a, "remember", statement="Acme's VPN rotates keys monthly",
                                 path="shared.it", as_is=True))
            mine = {"id": kept(mine)}
            async with mcp_session(mcp_url, other.key) as b:
                theirs = [
                    await call(b, "get_memory", id=mine["id"]),
                    await call(b, "update_memory", id=mine["id"], expected_version=1,
                               content="hijacked"),
                    await call(b, "forget", id=mine["id"]),
                    await call(b, "memory_history", id=mine["id"]),
                ]
                b_recall = recalled(await call(b, "recall", query="VPN rotates keys"))
            owner = ok(await call(a, "get_memory", id=mine["id"]))
        return theirs, b_recall, owner

    theirs, b_recall, owner = run(go)
    for outcome in theirs:
        assert_tool_error(outcome, "not_found")
    assert b_recall == []
    assert owner["content"] == "Acme's VPN rotates keys monthly" and owner["version"] == 1


def test_a_key_is_scoped_to_its_paths(mcp_url, tenant, db):
    """Given a key of the same principal limited to write on users.alice
    When it remembers under users.bob, recalls, and reads a users.bob memory by id
    Then the write is a forbidden tool error, recall returns only users.alice, and the
    users.bob memory is not_found; the same key writes users.alice (control)."""
    scoped = create_key(db, Caller.system(tenant.tenant_id), principal_id=tenant.principal_id,
                        ceiling=[{"path": "users.alice", "level": "write"}]).key

    async def go():
        async with mcp_session(mcp_url, tenant.key) as admin:
            bob = ok(await call(admin, "remember", statement="Bob takes his coffee black",
                                path="users.bob", as_is=True))
        async with mcp_session(mcp_url, scoped) as s:
            refused = await call(s, "remember", statement="Bob likes tea", path="users.bob")
            refused_as_is = await call(s, "remember", statement="Bob likes tea",
                                       path="users.bob", as_is=True)
            alice = ok(await call(s, "remember", statement="Alice takes her coffee with oat "
                                  "milk", path="users.alice", as_is=True))
            found = ok(await call(s, "recall", query="coffee"))["results"]
            hidden = await call(s, "get_memory", id=kept(bob))
        return refused, refused_as_is, alice, found, hidden

    refused, refused_as_is, alice, found, hidden = run(go)
    assert_tool_error(refused, "forbidden", field="path")
    assert_tool_error(refused_as_is, "forbidden", field="path")
    assert alice["items"][0]["outcome"] == "created"
    assert [(r["path"], r["id"]) for r in found] == [("users.alice", kept(alice))]
    assert_tool_error(hidden, "not_found")


def test_stale_expected_version_is_a_version_conflict(mcp_url, tenant):
    """Given a memory at version 1
    When it is updated with expected_version 1 (ok, now 2) and again with expected_version 1
    Then the second is a version_conflict tool error naming expected_version and the current
    version 2, and the memory keeps the first update's content."""
    async def go():
        async with mcp_session(mcp_url, tenant.key) as s:
            m = {"id": kept(ok(await call(s, "remember", statement="Standup is at 9:30",
                                          path="shared.team", as_is=True)))}
            first = await call(s, "update_memory", id=m["id"], expected_version=1,
                               content="Standup is at 9:45")
            stale = await call(s, "update_memory", id=m["id"], expected_version=1,
                               content="Standup is at 10:00")
            now = ok(await call(s, "get_memory", id=m["id"]))
        return first, stale, now

    first, stale, now = run(go)
    assert ok(first)["version"] == 2
    err = assert_tool_error(stale, "version_conflict", field="expected_version")
    assert err["current_version"] == 2
    assert (now["version"], now["content"]) == (2, "Standup is at 9:45")


def test_tool_calls_are_audited_with_surface_mcp(mcp_url, tenant, db):
    """Given one write through MCP and one through the HTTP API, with the same key
    When the tenant's audit trail is read
    Then the MCP write's entry has surface mcp with the key's principal and the memory id,
    a refused MCP read is recorded with its error code as outcome, and the HTTP write's entry
    says http (control: the surface is the entry point's, not a constant)."""
    async def go():
        async with mcp_session(mcp_url, tenant.key) as s:
            m = ok(await call(s, "remember", statement="Invoices go out on the 1st",
                              path="shared.finance", as_is=True))
            missing = str(uuid.uuid4())
            assert_tool_error(await call(s, "get_memory", id=missing), "not_found")
        return kept(m), missing

    memory_id, missing = run(go)
    r = httpx.post(mcp_url.removesuffix("/mcp") + "/v1/memories", headers=tenant.headers,
                   json={"memories": [{"content": "Receipts are kept 7 years",
                                       "path": "shared.finance"}]})
    assert r.status_code == 200, r.text
    http_id = r.json()["results"][0]["id"]
    with db.connection() as conn:
        rows = conn.execute(
            "SELECT surface, operation, outcome, principal_id, memory_ids FROM audit_log"
            " WHERE tenant_id = %s ORDER BY seq", (tenant.tenant_id,)).fetchall()
    by_memory = {(str(m), r["operation"]): r for r in rows for m in r["memory_ids"]}
    mcp_write = by_memory[(memory_id, "memory.create")]
    assert (mcp_write["surface"], mcp_write["outcome"]) == ("mcp", "ok")
    assert mcp_write["principal_id"] == tenant.principal_id
    refused = by_memory[(missing, "memory.get")]
    assert (refused["surface"], refused["outcome"]) == ("mcp", "not_found")
    assert by_memory[(http_id, "memory.create")]["surface"] == "http"


@pytest.mark.parametrize("name, arguments, field", [
    ("recall", {}, "query"),
    ("recall", {"query": "x", "limit": 500}, "limit"),
    ("recall", {"query": "x", "kinds": ["gossip"]}, "kinds[0]"),
    ("remember", {"path": "users.alice"}, "statement"),
    ("remember", {"statement": "a", "messages": [{"role": "user", "content": "b"}]}, "statement"),
    ("remember", {"statement": "   ", "path": "users.alice"}, "statement"),
    ("remember", {"statement": "Fine words", "path": "not a path"}, "path"),
    ("remember", {"statement": "Fine words", "path": "users.alice", "wait": "yes"}, "wait"),
    ("remember", {"statement": "Fine words", "path": "users.alice", "kind": "fact"}, "kind"),
    ("remember", {"statement": "Fine words", "as_is": True, "wait": False}, "wait"),
    ("remember", {"statement": "Fine words", "as_is": True, "idempotency_key": "k"},
     "idempotency_key"),
    ("remember", {"statement": "   ", "as_is": True, "path": "users.alice"}, "statement"),
    ("remember", {"messages": [{"role": "user", "content": "hi"}], "kind": "fact"}, "kind"),
    ("remember", {"statement": "Fine words", "path": "users.alice", "colour": "red"}, "colour"),
    ("remember", {"messages": [{"role": "user", "content": "hi"}], "as_is": True}, "as_is"),
    ("remember", {"statement": "Fine words", "as_is": False, "kind": "fact"}, "kind"),
    ("remember", {"statement": "   ", "as_is": False, "path": "users.alice"}, "statement"),
    ("remember", {"statement": "Fine words", "as_is": "yes"}, "as_is"),
    ("get_memory", {"id": "not-a-uuid"}, "id"),
    ("get_memory", {}, "id"),
    ("update_memory", {"id": str(uuid.uuid4()), "content": "x"}, "expected_version"),
    ("review_decision", {"id": str(uuid.uuid4()), "decision": "merge"}, "into"),
    ("review_decision", {"id": str(uuid.uuid4()), "decision": "approve"}, "decision"),
    ("list_review", {"limit": 0}, "limit"),
    ("no_such_tool", {}, "name"),
])
def test_bad_arguments_are_invalid_input_tool_errors(mcp_url, tenant, name, arguments, field):
    """Given a key-holder
    When a tool is called with missing, malformed, inapplicable or unknown arguments
    Then the answer is an invalid_input tool error naming the argument (never a transport or
    JSON-RPC failure), and a valid recall on the same session still answers (control)."""
    async def go():
        async with mcp_session(mcp_url, tenant.key) as s:
            return await call(s, name, **arguments), await call(s, "recall", query="anything")

    bad, control = run(go)
    assert_tool_error(bad, "invalid_input", field=field)
    assert ok(control)["results"] == []


def test_remember_messages_and_decide_a_review_candidate(mcp_url, tenant):
    """Given a preference that changed (MongoDB, then PostgreSQL), remembered as messages
    When the user says they went back to MongoDB, the candidate is listed and promoted
    Then the receipt holds a candidate, list_review shows it with what it contradicts,
    promote makes it active and recall finds it; promoting it again is a conflict tool error."""
    def said(text: str, weeks: int) -> dict:
        at = (T0 + timedelta(weeks=weeks)).isoformat()
        return {"messages": [{"role": "user", "content": text, "at": at}],
                "path": "users.alice", "wait": True}

    async def go():
        async with mcp_session(mcp_url, tenant.key) as s:
            first = ok(await call(s, "remember", **said("I prefer MongoDB", 0)))
            ok(await call(s, "remember", **said("I've switched to PostgreSQL", 3)))
            back = ok(await call(s, "remember", **said("I've gone back to MongoDB", 6)))
            listed = ok(await call(s, "list_review", path="users.alice"))
            cid = back["items"][0]["memory_id"]
            promoted = ok(await call(s, "review_decision", id=cid, decision="promote"))
            again = await call(s, "review_decision", id=cid, decision="promote")
            now = ok(await call(s, "recall", query="which database do I prefer"))["results"]
        return first, back, listed, promoted, again, now

    first, back, listed, promoted, again, now = run(go)
    assert first["status"] == "wrote" and first["items"][0]["outcome"] == "created"
    assert [i["outcome"] for i in back["items"]] == ["candidate"]
    cid = back["items"][0]["memory_id"]
    assert [m["id"] for m in listed["items"]] == [cid]
    assert listed["items"][0]["contradicts"] and listed["next_cursor"] is None
    assert promoted["status"] == "active"
    assert_tool_error(again, "conflict")
    assert [r["id"] for r in now] == [cid]  # the superseded PostgreSQL is not returned


def test_remember_tells_the_agent_what_was_kept_and_what_was_not(mcp_url, tenant):
    """Given messages holding a fact and a question, a password, a statement extraction
    does not keep, and a statement with a fact and a question
    When each is remembered (messages; a statement with as_is false; a statement as is; a
    statement with the defaults)
    Then the answer lists what was kept with its content, each clause not kept with its
    reason, and a summary; a secret is reported without its text and never stored; a
    statement stored as is is kept verbatim, in the same shape without a receipt (control);
    and a statement by default is extracted and waited for, as messages are."""
    def said(text: str) -> list[dict]:
        return [{"role": "user", "content": text}]

    async def go():
        async with mcp_session(mcp_url, tenant.key) as s:
            mixed = ok(await call(s, "remember", messages=said("I live in Lisbon. Should I move "
                                                               "to Berlin?"),
                                  path="users.alice", wait=True))
            secret = ok(await call(s, "remember", messages=said("Remember that the wifi "
                                                                "password is hunter2"),
                                   path="users.alice", wait=True))
            question = ok(await call(s, "remember", statement="should I move to Berlin?",
                                     as_is=False, path="users.bob", wait=True))
            volvo = ok(await call(s, "remember", statement="I drive a Volvo", as_is=True,
                                  path="users.bob"))
            # the default for a statement: extracted and waited for, like messages
            default = ok(await call(s, "remember", statement="I live in Porto. Should I move "
                                    "to Berlin?", path="users.carol"))
            held = ok(await call(s, "recall", query="wifi password hunter2 drive Volvo",
                                 paths=["users"], limit=50))
        return mixed, secret, question, volvo, default, held

    mixed, secret, question, volvo, default, held = run(go)
    [kept] = mixed["items"]
    assert (kept["outcome"], kept["content"]) == ("created", "The user lives in Lisbon")
    assert [(n["message"], n["reason"]) for n in mixed["not_kept"]] == [(0, "question")]
    assert "Berlin" in mixed["not_kept"][0]["text"]
    assert mixed["summary"] == "kept 1 (1 created); not kept 1 (1 question)"

    assert secret["status"] == "meaningful_no_write" and secret["items"] == []
    assert secret["not_kept"] == [{"message": 0, "reason": "secret", "text": None}]
    assert "secrets are never stored" in secret["summary"]
    assert "as_is" not in secret["summary"]  # storing it as written is no way round
    assert "hunter2" not in json.dumps(secret)
    contents = [r["content"] for r in held["results"]]
    assert "I drive a Volvo" in contents and not any("hunter2" in c for c in contents)

    assert question["summary"].startswith("nothing stored") and question["items"] == []
    assert [n["reason"] for n in question["not_kept"]] == ["question"]
    assert "remember it with as_is" in question["summary"]
    assert (volvo["status"], volvo["summary"]) == ("wrote", "kept as written")
    assert [(i["outcome"], i["content"]) for i in volvo["items"]] == [
        ("created", "I drive a Volvo")]
    assert "receipt_id" not in volvo and volvo["not_kept"] == []
    assert [(i["outcome"], i["content"]) for i in default["items"]] == [
        ("created", "The user lives in Porto")]
    assert default["receipt_id"] and [n["reason"] for n in default["not_kept"]] == ["question"]


def test_a_secret_statement_is_refused_naming_it(mcp_url, tenant):
    """A password given as a statement to store as is is an invalid_input tool error naming
    statement, without the password; another statement is stored (control)."""
    async def go():
        async with mcp_session(mcp_url, tenant.key) as s:
            refused = await call(s, "remember", statement="The wifi password is hunter2",
                                 path="users.alice", as_is=True)
            fine = ok(await call(s, "remember", statement="The wifi is called Home5G",
                                 path="users.alice", as_is=True))
        return refused, fine

    refused, fine = run(go)
    error = assert_tool_error(refused, "invalid_input", field="statement")
    assert "hunter2" not in json.dumps(error)
    assert fine["items"][0]["outcome"] == "created"


# ----------------------------------------------------------- schemas against the core


def test_schemas_offer_what_the_core_models_accept():
    """Given the hand-written tool schemas
    When they are compared with the core request models
    Then every argument is one the model accepts (or one the tool maps), and every model field
    an agent may set is offered, so an LLM is never shown an argument that fails."""
    def props(name: str) -> set[str]:
        return set(tools.TOOLS[name].input_schema["properties"])

    assert props("recall") == set(SearchRequest.model_fields)
    assert props("set_rule") == set(RuleIn.model_fields)
    assert props("reflect") == set(reflection.ReflectRequest.model_fields)
    assert props("consolidate") == set(reflection.ConsolidateRequest.model_fields)
    assert props("update_memory") == set(MemoryPatch.model_fields) | {"id"}
    statement = props("remember") - {"messages", "path", "as_is", *tools.EXTRACTION_ONLY,
                                     *tools.BOTH}
    # name (a unique handle with on_conflict rules) is left to the HTTP API
    assert statement == set(MemoryIn.model_fields) - {"path", "name", "content",
                                                      *tools.BOTH} | {"statement"}
    assert statement == set(tools.AS_IS_ONLY) | {"statement"}
    assert set(tools.BOTH) <= set(MemoryIn.model_fields) & set(IngestRequest.model_fields)
    assert set(tools.EXTRACTION_ONLY) | {"messages", "path", *tools.BOTH} == set(
        IngestRequest.model_fields)
    message = tools.TOOLS["remember"].input_schema["properties"]["messages"]["items"]
    assert set(message["properties"]) == set(Message.model_fields) - {"id"}
    assert message["properties"]["role"]["enum"] == list(get_args(Message.model_fields["role"]
                                                                  .annotation))


# -------------------------------------------------------------------- the Lambda handler


@pytest.fixture
def mcp_handler(db, monkeypatch):
    """functions/mcp/handler.py imported fresh, configured from the environment as on Lambda,
    pointing at this test's database."""
    monkeypatch.setenv("STRATA_DATABASE_URL", db.url)
    monkeypatch.setenv("STRATA_RUNTIME", "aws")
    get_settings.cache_clear()
    get_database.cache_clear()
    yield support.load_module("handler_mcp", ROOT / "functions" / "mcp" / "handler.py").handler
    _reset_logging()
    get_database().close()
    get_settings.cache_clear()
    get_database.cache_clear()
    sys.modules.pop("handler_mcp", None)


def rpc_event(key: str | None, method: str, params: dict | None = None,
              id: int | None = 1) -> dict:
    message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if params is not None:
        message["params"] = params
    if id is not None:
        message["id"] = id
    event = http_event("POST", "/mcp", key=key, body=message)
    event["headers"]["accept"] = "application/json, text/event-stream"
    event["headers"]["mcp-protocol-version"] = "2025-11-25"
    return event


def test_lambda_handler_answers_json_rpc_on_repeated_invocations(mcp_handler, tenant,
                                                                 make_tenant):
    """Given the Mcp function in one warm container
    When API Gateway v2 events carry initialize, notifications/initialized, tools/list and
    several tools/call one after another
    Then every invocation answers (the session manager is rebuilt per invocation): the
    handshake, the tool list, a remembered memory recalled in a later invocation, another
    tenant's id as a not_found tool error next to the owner's success (control), and a wrong
    key or none as 403 (a JSON-RPC error: tests/test_mcp_auth.py says why not 401)."""
    h = mcp_handler
    status, body = invoke(h, rpc_event(tenant.key, "initialize", {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "pytest", "version": "0"}}))
    assert status == 200 and body["result"]["serverInfo"]["name"] == "strata", body
    status, body = invoke(h, rpc_event(tenant.key, "notifications/initialized", id=None))
    assert status == 202, body
    status, body = invoke(h, rpc_event(tenant.key, "tools/list", id=2))
    assert status == 200 and {t["name"] for t in body["result"]["tools"]} == TOOL_NAMES

    def tool(key: str, name: str, n: int, **arguments) -> dict:
        status, body = invoke(h, rpc_event(key, "tools/call",
                                           {"name": name, "arguments": arguments}, id=n))
        assert status == 200 and body["id"] == n, body
        return body["result"]

    # remember's default: extracted within the invocation, and answered with what was kept
    made = tool(tenant.key, "remember", 3, statement="I prefer PostgreSQL", path="users.ops")
    assert not made["isError"] and made["structuredContent"]["status"] == "wrote", made
    [item] = made["structuredContent"]["items"]
    assert (item["outcome"], item["content"]) == ("created", "The user prefers PostgreSQL")
    memory_id = item["memory_id"]
    found = tool(tenant.key, "recall", 4, query="which database")
    assert [r["id"] for r in found["structuredContent"]["results"]] == [memory_id]
    other = make_tenant("initech")
    theirs = tool(other.key, "get_memory", 5, id=memory_id)
    assert theirs["isError"] and theirs["structuredContent"]["error"]["code"] == "not_found"
    mine = tool(tenant.key, "get_memory", 6, id=memory_id)
    assert not mine["isError"] and mine["structuredContent"]["version"] == 1

    status, body = invoke(h, rpc_event(wrong_secret(tenant.key), "tools/list", id=7))
    assert status == 403 and body["error"]["data"]["code"] == "unauthenticated"
    # No key at all: the route has no authorizer on AWS (template.yaml), so the function
    # answers, with the same 403 -- not API Gateway's 401, which starts OAuth in MCP clients.
    status, body = invoke(h, rpc_event(None, "tools/list", id=9))
    assert status == 403 and body["error"]["data"]["code"] == "unauthenticated"
    # ...and the container still serves after a refusal
    assert not tool(tenant.key, "get_memory", 8, id=memory_id)["isError"]


# --------------------------------------------------------------------------- cold start


@pytest.mark.parametrize("routers, loads_mcp", [(("memories", "search"), False), (("mcp",), True)])
def test_only_the_mcp_app_imports_the_mcp_package(routers, loads_mcp):
    """Given a fresh interpreter
    When an app is built for some routers
    Then the mcp package is imported only by an app that serves /mcp (it costs over a second
    at a Lambda cold start); the mcp app does import it (control)."""
    code = ("import sys; from strata.api.app import create_app; "
            f"create_app(routers={routers!r}); print('mcp' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={"PATH": "/usr/bin:/bin", "STRATA_HOME": "/nonexistent-strata-home"})
    assert out.stdout.strip() == str(loads_mcp)


@pytest.fixture
def model_mcp_url(db, embedder, settings, fake_llm) -> Iterator[str]:
    """The MCP endpoint of an app whose model is the scripted one (the real openai client)."""
    from strata.api.app import create_app

    harness = support.load_module("strata_eval_harness", ROOT / "eval" / "harness.py")
    app = create_app(db=db, embedder=embedder, settings=fake_llm.settings(settings))
    with harness.serving(app) as url:
        yield url + "/mcp"


def test_reflect_and_consolidate_through_mcp(model_mcp_url, db, tenant, fake_llm):
    """Given three statements remembered through MCP
    When reflect runs over their path (the scripted model cites what it was shown), then
    consolidate merges two of them with given content, and reflect is asked with both seed_id
    and path
    Then the reflection is llm_derived with a DERIVED_FROM edge to each cited memory; the
    consolidation supersedes the two originals (recall no longer returns them, the merged
    memory it does) and the reflection resting on them is flagged for review or retired by
    the cascade; the bad call is invalid_input."""
    fake_llm.script(lambda rec: {"content": "The user likes quiet outdoor hobbies",
                                 "evidence_ids": rec.shown_ids()})

    async def go():
        async with mcp_session(model_mcp_url, tenant.key) as s:
            ids = [kept(ok(await call(s, "remember", statement=text, path="users.alice",
                                      as_is=True)))
                   for text in ("I enjoy hiking in the hills", "I enjoy birdwatching at dawn",
                                "I enjoy fishing on the lake")]
            reflected = ok(await call(s, "reflect", path="users.alice"))
            merged = ok(await call(s, "consolidate", ids=ids[:2],
                                   content="I enjoy hiking and birdwatching at dawn",
                                   reason="two notes on one habit"))
            both = await call(s, "reflect", path="users.alice", seed_id=ids[2])
            found = ok(await call(s, "recall", query="enjoy hiking birdwatching",
                                  paths=["users.alice"]))
            derived = ok(await call(s, "get_memory", id=reflected["memory"]["id"]))
            return ids, reflected, merged, both, found, derived

    ids, reflected, merged, both, found, derived = run(go)
    assert reflected["memory"]["origin"] == "llm_derived"
    assert sorted(reflected["evidence_ids"]) == sorted(ids)
    with db.connection() as conn:
        edges = {str(r["target_id"]) for r in conn.execute(
            "SELECT target_id FROM memory_relationships WHERE source_id = %s"
            " AND type = 'DERIVED_FROM'", (uuid.UUID(reflected["memory"]["id"]),)).fetchall()}
    assert edges == set(ids)
    assert sorted(merged["superseded_ids"]) == sorted(ids[:2])
    returned = {r["id"] for r in found["results"]}
    assert merged["memory"]["id"] in returned and not returned & set(ids[:2])
    # Two of its three pieces of evidence superseded, the third still active: flagged.
    assert derived["status"] == "candidate"
    assert_tool_error(both, "invalid_input")
