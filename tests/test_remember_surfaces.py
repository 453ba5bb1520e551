"""One `remember` (issue 34): MCP `remember` (real HTTP through the app, the official mcp
client), `Client.remember` (the Python client against the same server) and `strata remember
--json` (the CLI's entry point) give the same answer for the same input. Each surface runs
the same story in a tenant of its own at the same path; the answers are compared with every
id replaced by its order of first appearance, so an id that comes back (a repeat reinforcing
the memory made before) must come back in the same place on every surface."""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Callable
from typing import Any

import pytest
from test_mcp import assert_tool_error, call, mcp_session, ok, run

from strata.cli.main import main
from strata.client import Client, InvalidInput

PATH = "users.alice"
UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")

# One story: extraction with a clause not kept, a change of value, a secret, a conversation,
# a question, a statement as is and its repeat, and (after the Volvo is forgotten) the
# forgotten value as is. Each step: the arguments as MCP takes them, and whether the Volvo
# memory is forgotten first (through the client: setting, not the surface under test).
STORY: list[dict[str, Any]] = [
    {"statement": "I live in Lisbon. Should I move to Berlin?"},
    {"statement": "I moved to Munich"},
    {"statement": "Remember that the wifi password is hunter2"},
    {"messages": [{"role": "user", "content": "I prefer tea"},
                  {"role": "assistant", "content": "Noted: tea."}]},
    {"statement": "should I get a dog?"},
    {"statement": "I drive a Volvo", "as_is": True},
    {"statement": "I drive a Volvo", "as_is": True},
    {"statement": "I drive a Volvo", "as_is": True, "forget_volvo_first": True},
]


def normalised(answer: dict[str, Any]) -> str:
    """The answer as JSON with each id replaced by the order it first appeared in."""
    seen: dict[str, str] = {}
    text = json.dumps(answer, sort_keys=True)
    return UUID.sub(lambda m: seen.setdefault(m.group(0), f"<id{len(seen) + 1}>"), text)


def through_mcp(url: str, key: str, steps: list[dict[str, Any]],
                forget: Callable[[str], None]) -> list[dict]:
    async def go():
        answers = []
        async with mcp_session(url, key) as s:
            for step in steps:
                args = {k: v for k, v in step.items() if k != "forget_volvo_first"}
                if step.get("forget_volvo_first"):
                    forget(answers[-2]["items"][0]["memory_id"])
                answers.append(ok(await call(s, "remember", path=PATH, **args)))
        return answers

    return run(go)


def through_client(server: str, key: str, steps: list[dict[str, Any]],
                   forget: Callable[[str], None]) -> list[dict]:
    answers = []
    with Client(server, key) as c:
        for step in steps:
            if step.get("forget_volvo_first"):
                forget(answers[-2]["items"][0]["memory_id"])
            said = step.get("statement", step.get("messages"))
            got = c.remember(said, PATH, as_is=step.get("as_is", False))
            answers.append(got.model_dump(mode="json"))
    return answers


def through_cli(server: str, key: str, steps: list[dict[str, Any]], forget: Callable[[str], None],
                capsys, monkeypatch, tmp_path) -> list[dict]:
    monkeypatch.setenv("STRATA_URL", server)
    monkeypatch.setenv("STRATA_KEY", key)
    monkeypatch.setenv("STRATA_PROFILES", str(tmp_path / "profiles.toml"))
    answers = []
    for n, step in enumerate(steps):
        if step.get("forget_volvo_first"):
            forget(answers[-2]["items"][0]["memory_id"])
        argv = ["remember", "--path", PATH, "--json"]
        if "messages" in step:
            file = tmp_path / f"messages-{n}.json"
            file.write_text(json.dumps(step["messages"]))
            argv += ["--messages", str(file)]
        else:
            argv += [step["statement"]]
        if step.get("as_is"):
            argv.append("--as-is")
        code = main(argv)
        out, err = capsys.readouterr()
        assert "Traceback" not in err
        answers.append(json.loads(out))
        # exit 0, except a statement as is that was blocked (the forgotten Volvo): 1
        assert code == (1 if answers[-1]["items"][:1] and answers[-1]["items"][0]["outcome"]
                        == "blocked" else 0), (argv, out, err)
    return answers


def forgetter(server: str, key: str) -> Callable[[str], None]:
    def forget(memory_id: str) -> None:
        with Client(server, key) as c:
            c.memories.forget(memory_id)
    return forget


def test_one_input_gives_one_answer_on_every_surface(server, make_tenant, capsys, monkeypatch,
                                                     tmp_path):
    """Given one story told to each surface (MCP, the Python client, the CLI), each in a
    tenant of its own at the same path
    When each step is remembered with the surface's defaults (extract and wait) or as is
    Then every step's answer is the same on the three surfaces, ids aside (and an id that
    returns returns in the same place); the answers say what was kept with its content, each
    clause not kept with its reason, a secret without its text, and a forgotten value as
    blocked with its tombstone and no content. Control: the comparison sees a difference —
    the same story with one word changed gives another answer."""
    keys = {s: make_tenant().key for s in ("mcp", "client", "cli", "control")}
    mcp = through_mcp(f"{server}/mcp", keys["mcp"], STORY, forgetter(server, keys["mcp"]))
    client = through_client(server, keys["client"], STORY, forgetter(server, keys["client"]))
    cli = through_cli(server, keys["cli"], STORY, forgetter(server, keys["cli"]), capsys,
                      monkeypatch, tmp_path)

    for n, step in enumerate(STORY):
        assert normalised(mcp[n]) == normalised(client[n]) == normalised(cli[n]), (
            step, mcp[n], client[n], cli[n])

    lisbon, munich, secret, tea, dog, volvo, again, forgotten = mcp
    assert lisbon["status"] == "wrote" and lisbon["receipt_id"]
    assert [(i["outcome"], i["content"]) for i in lisbon["items"]] == [
        ("created", "The user lives in Lisbon")]
    assert [(n["reason"], "Berlin" in n["text"]) for n in lisbon["not_kept"]] == [
        ("question", True)]
    assert [(i["outcome"], i["content"], i["related_ids"]) for i in munich["items"]] == [
        ("superseded_existing", "The user moved to Munich", [lisbon["items"][0]["memory_id"]])]
    assert secret["items"] == [] and secret["not_kept"] == [
        {"message": 0, "reason": "secret", "text": None}]
    assert "hunter2" not in json.dumps([mcp, client, cli])
    assert [(i["outcome"], i["content"]) for i in tea["items"]] == [
        ("created", "The user prefers tea")]
    assert dog["status"] == "meaningful_no_write" and dog["items"] == []
    assert dog["summary"].endswith("to store the statement exactly as written, remember it "
                                   "with as_is")
    assert "receipt_id" not in volvo and volvo["path"] == PATH
    assert volvo["items"] == [{"outcome": "created", "memory_id": volvo["items"][0]["memory_id"],
                               "content": "I drive a Volvo", "related_ids": [], "version": 1,
                               "tier": "long_term"}]
    assert (again["items"][0]["outcome"], again["items"][0]["memory_id"],
            again["items"][0]["version"]) == ("reinforced", volvo["items"][0]["memory_id"], 2)
    [blocked] = forgotten["items"]
    assert forgotten["status"] == "meaningful_no_write" and blocked["outcome"] == "blocked"
    assert blocked["tombstone_id"] and "content" not in blocked and "memory_id" not in blocked
    assert "Volvo" not in json.dumps(forgotten)

    # control: one word changed, and the comparison tells the answers apart
    changed = [dict(STORY[0], statement="I live in Porto. Should I move to Berlin?")]
    other = through_client(server, keys["control"], changed, forgetter(server, keys["control"]))
    assert normalised(other[0]) != normalised(client[0])
    assert normalised({**other[0], "items": [{**other[0]["items"][0], "content": "The user "
                                             "lives in Lisbon"}]}) == normalised(client[0])


def test_wait_false_answers_the_receipt_at_once_on_every_surface(server, tenant, capsys,
                                                                 monkeypatch, tmp_path):
    """Given a statement remembered without waiting (MCP wait false, client wait=False, CLI
    --no-wait)
    Then each answers a receipt id, and either still pending with no items and a summary that
    says what is kept is not known yet, or (the pipeline was quicker than the answer) what was
    kept; every receipt finishes with the statement kept (control)."""
    async def go():
        async with mcp_session(f"{server}/mcp", tenant.key) as s:
            return ok(await call(s, "remember", statement="I have a cat named Tom", wait=False,
                                 path=PATH))

    answers = [run(go)]
    with Client(server, tenant.key) as c:
        answers.append(c.remember("I have a dog named Rex", PATH, wait=False)
                       .model_dump(mode="json"))
    monkeypatch.setenv("STRATA_URL", server)
    monkeypatch.setenv("STRATA_KEY", tenant.key)
    monkeypatch.setenv("STRATA_PROFILES", str(tmp_path / "profiles.toml"))
    assert main(["remember", "I have a parrot named Polly", "--path", PATH, "--no-wait",
                 "--json"]) == 0
    answers.append(json.loads(capsys.readouterr().out))

    with Client(server, tenant.key) as c:
        for answer in answers:
            assert uuid.UUID(answer["receipt_id"]) and answer["path"] == PATH
            if answer["status"] in ("queued", "running"):
                assert answer["items"] == [] and "not known" in answer["summary"], answer
            else:
                assert answer["items"][0]["content"], answer
            done = c.wait_for(answer["receipt_id"], timeout=30, interval=0.05)
            assert done.status == "wrote" and done.items[0].outcome == "created"


@pytest.mark.parametrize("mcp_args, client_kwargs, cli_argv, field, option", [
    # the fields of a memory are as_is's: extraction decides them
    ({"statement": "I like tea", "kind": "fact"}, {"kind": "fact"}, ["--kind", "fact"], "kind",
     "--kind"),
    # as_is writes at once: not waiting is extraction's
    ({"statement": "I like tea", "as_is": True, "wait": False}, {"as_is": True, "wait": False},
     ["--as-is", "--no-wait"], "wait", "--no-wait"),
    ({"statement": "I like tea", "as_is": True, "idempotency_key": "k"},
     {"as_is": True, "idempotency_key": "k"}, ["--as-is", "--idempotency-key", "k"],
     "idempotency_key", "--idempotency-key"),
])
def test_arguments_that_do_not_apply_are_refused_alike(server, tenant, capsys, monkeypatch,
                                                       tmp_path, mcp_args, client_kwargs,
                                                       cli_argv, field, option):
    """Given an argument that does not apply to the way chosen
    Then MCP answers an invalid_input tool error naming it, the client raises InvalidInput
    naming it before sending, and the CLI exits 2 naming its option; nothing is stored
    (control: the same statement without it is)."""
    async def go():
        async with mcp_session(f"{server}/mcp", tenant.key) as s:
            return await call(s, "remember", path=PATH, **mcp_args)

    assert_tool_error(run(go), "invalid_input", field=field)
    with Client(server, tenant.key) as c, pytest.raises(InvalidInput) as refused:
        c.remember("I like tea", PATH, **client_kwargs)
    assert refused.value.field == field and refused.value.status is None
    monkeypatch.setenv("STRATA_URL", server)
    monkeypatch.setenv("STRATA_KEY", tenant.key)
    monkeypatch.setenv("STRATA_PROFILES", str(tmp_path / "profiles.toml"))
    assert main(["remember", "I like tea", "--path", PATH, *cli_argv]) == 2
    assert f"({option})" in capsys.readouterr().err
    with Client(server, tenant.key) as c:
        assert c.memories.list(path=PATH).items == []
        assert c.remember("I like tea", PATH).items[0].content == "The user likes tea"


def test_a_statement_with_wait_true_is_extracted_not_a_tool_error(server, tenant):
    """`{"statement": ..., "wait": true}` (a tool error before) is the default made explicit:
    the same answer as without wait (control: both keep the statement, with its content)."""
    async def go():
        async with mcp_session(f"{server}/mcp", tenant.key) as s:
            explicit = ok(await call(s, "remember", statement="I prefer PostgreSQL",
                                     wait=True, path=PATH))
            implicit = ok(await call(s, "remember", statement="I prefer Python",
                                     path="users.bob"))
        return explicit, implicit

    explicit, implicit = run(go)
    assert [(i["outcome"], i["content"]) for i in explicit["items"]] == [
        ("created", "The user prefers PostgreSQL")]
    assert [(i["outcome"], i["content"]) for i in implicit["items"]] == [
        ("created", "The user prefers Python")]


def test_three_sessions_recall_where_the_user_lives_now(server, tenant):
    """Given three agent sessions over MCP, each with its own connection, using remember's
    defaults: session 1 is told "I live in Berlin", session 2 "I moved to Munich"
    When session 3 recalls where the user lives
    Then Munich ranks first and Berlin is not returned as current (it was superseded before
    session 2's remember answered). Control: between sessions 1 and 2 the same recall finds
    Berlin."""
    url = f"{server}/mcp"

    async def session(**remember: Any) -> tuple[dict | None, list[str]]:
        async with mcp_session(url, tenant.key) as s:
            said = ok(await call(s, "remember", path=PATH, **remember)) if remember else None
            found = ok(await call(s, "recall", query="where does the user live",
                                  paths=[PATH]))["results"]
        return said, [r["content"] for r in found]

    first, after_first = run(lambda: session(statement="I live in Berlin"))
    second, _ = run(lambda: session(statement="I moved to Munich"))
    _, third = run(session)
    assert after_first[:1] == ["The user lives in Berlin"]
    assert second["status"] == "wrote"
    assert second["items"][0]["outcome"] == "superseded_existing"
    assert third and "Munich" in third[0], third
    assert not any("Berlin" in c for c in third), third


def test_the_answer_shows_content_only_for_what_was_read_and_never_for_a_blocked_item():
    """Given a receipt with a created item, a blocked one (a forgotten value: a tombstone,
    and an id the contents hold by mistake), an item whose memory the key could not read, and
    more memories than the answer reads back
    Then the created item shows its content (control), the blocked one shows none and keeps
    its tombstone, the unread one shows none, and only the first SHOW_CONTENT memories (never
    the blocked one) are asked for."""
    from types import SimpleNamespace

    from strata.ingest.remember import SHOW_CONTENT, of_receipt, to_show

    def item(outcome: str, memory_id: uuid.UUID, **more: Any) -> SimpleNamespace:
        # the fields of a receipt item (ItemOutcome), with a forgotten value's tombstone
        return SimpleNamespace(**{"outcome": outcome, "memory_id": memory_id, "reason": None,
                                  "related_ids": [], "version": 1, "tier": "long_term",
                                  "rule_id": None, "tombstone_id": None, **more})

    made, refused, unread = uuid.uuid4(), uuid.uuid4(), uuid.uuid4()
    tomb = uuid.uuid4()
    items = [item("created", made),
             item("blocked", refused, tombstone_id=tomb,
                  reason=f"tombstoned: forgotten (tombstone {tomb})"),
             item("reinforced", unread)]
    receipt = SimpleNamespace(id=uuid.uuid4(), path=PATH, status="wrote", items=items,
                              not_kept=[], notes=[], error=None)
    assert to_show(items) == [made, unread]
    answer = of_receipt(receipt, {made: "The user lives in Lisbon", refused: "12 Elm Street"})
    shown = answer.model_dump(mode="json")
    assert shown["items"][0]["content"] == "The user lives in Lisbon"
    assert "content" not in shown["items"][1] and shown["items"][1]["tombstone_id"] == str(tomb)
    assert "content" not in shown["items"][2]
    assert "12 Elm Street" not in json.dumps(shown)
    many = [item("created", uuid.uuid4()) for _ in range(SHOW_CONTENT + 5)]
    assert to_show(many) == [i.memory_id for i in many[:SHOW_CONTENT]]
