"""The model-backed extractor and judge on Bedrock Converse (STRATA_LLM_PROVIDER=bedrock).

A real ``boto3`` ``bedrock-runtime`` client under botocore's Stubber: requests are validated
against the service model and matched with ``expected_params``, answers have Converse's real
shape (``output.message.content`` with ``toolUse`` {toolUseId, name, input}, ``stopReason``,
``usage``, ``metrics``). Only the model is scripted: the request we build, the parsing,
validation, failure mapping and the pipeline are ours, as in production.
"""

from __future__ import annotations

import socket
import threading
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import pytest
from botocore.config import Config
from botocore.stub import ANY, Stubber

from strata.api.app import create_app
from strata.foundation.config import Settings
from strata.ingest.llm import (
    ExtractorFailed, JudgeFailed, LLMExtractor, LLMJudge, get_extractor, get_judge,
)
from strata.ingest.models import Candidate, Neighbour
from strata.providers.bedrock import MAX_TOKENS

from test_llm_providers import NOW, PRIVATE, conversation  # the OpenAI path's conversation

MODEL = "us.amazon.nova-lite-v1:0"
REGION = "us-east-1"


def memory(content: str, evidence: list[int], **kw: Any) -> dict:
    return {"content": content, "kind": kw.get("kind", "preference"), "slot": kw.get("slot"),
            "value": kw.get("value"), "valid_from": kw.get("valid_from"),
            "valid_to": kw.get("valid_to"), "confidence": kw.get("confidence", 0.9),
            "asserts_change": kw.get("asserts_change", False), "evidence": evidence}


POSTGRES = memory("The user prefers PostgreSQL.", [2], slot="user.preferred_database",
                  value="postgresql", valid_from="2025-03-13T12:00:00", asserts_change=True)


def converse_response(*content: dict, stop: str = "tool_use") -> dict:
    """A Converse answer as the service returns it."""
    return {
        "output": {"message": {"role": "assistant", "content": list(content)}},
        "stopReason": stop,
        "usage": {"inputTokens": 812, "outputTokens": 96, "totalTokens": 908},
        "metrics": {"latencyMs": 1290},
    }


def tool_use(name: str, arguments: Any) -> dict:
    return {"toolUse": {"toolUseId": f"tooluse_{uuid.uuid4().hex[:22]}", "name": name,
                        "input": arguments}}


def answered(name: str, arguments: Any) -> dict:
    return converse_response(tool_use(name, arguments))


def expected_request(tool: str, choice: dict | None = None) -> dict:
    """What every structured call must send: the prompt as system + user text, temperature
    0, and one tool named after the answer model, forced with toolChoice any (the default)."""
    return {
        "modelId": MODEL,
        "system": [{"text": ANY}],
        "messages": [{"role": "user", "content": [{"text": ANY}]}],
        "inferenceConfig": {"maxTokens": MAX_TOKENS, "temperature": 0},
        "toolConfig": {
            "tools": [{"toolSpec": {"name": tool, "description": ANY,
                                    "inputSchema": {"json": ANY}}}],
            "toolChoice": choice or {"any": {}},
        },
    }


def bedrock_settings(base: Settings | None = None, **overrides: Any) -> Settings:
    values: dict[str, Any] = {"llm_provider": "bedrock", "llm_model": MODEL,
                              "bedrock_region": REGION, "llm_max_retries": 0, **overrides}
    return base.model_copy(update=values) if base is not None else Settings(**values)


@pytest.fixture
def aws_env(monkeypatch):
    for name, value in {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
                        "AWS_DEFAULT_REGION": REGION}.items():
        monkeypatch.setenv(name, value)


@pytest.fixture
def bedrock(aws_env):
    """A real bedrock-runtime client under Stubber, and the Converse parameters it was sent."""
    client = boto3.client("bedrock-runtime", region_name=REGION)
    sent: list[dict] = []
    client.meta.events.register("before-parameter-build.bedrock-runtime.Converse",
                                lambda params, **kw: sent.append(params))
    with Stubber(client) as stub:
        yield client, stub, sent
        stub.assert_no_pending_responses()


@pytest.fixture
def aws_clients(bedrock, monkeypatch):
    """``boto3.client("bedrock-runtime", ...)`` hands out the stubbed client wherever strata
    builds one from its settings (the extractor, the judge, the embedder), and records the
    arguments it was built with; other services are built as usual."""
    client, stub, sent = bedrock
    built: list[dict] = []
    real = boto3.client

    def make(*args: Any, **kwargs: Any) -> Any:
        service = args[0] if args else kwargs.get("service_name")
        if service != "bedrock-runtime":
            return real(*args, **kwargs)
        built.append(kwargs)
        return client

    monkeypatch.setattr(boto3, "client", make)
    return client, stub, sent, built


def extract_fails(client, reason: str) -> ExtractorFailed:
    """Extraction raises ExtractorFailed with ``reason``; its message keeps the conversation
    out and names the model."""
    with pytest.raises(ExtractorFailed) as info:
        LLMExtractor(bedrock_settings(), client=client).extract(conversation(), NOW)
    exc = info.value
    assert exc.reason == reason, exc
    assert MODEL in str(exc)
    assert "Zanzibar" not in str(exc) and "Zanzibar" not in repr(exc)
    return exc


# --- the request and good answers ---------------------------------------------------------

def test_extraction_sends_a_forced_tool_and_reads_its_input(bedrock):
    """Given a model that calls the Extraction tool with two memories
    When the conversation is extracted
    Then the request is Converse with the prompt as system + user text and one closed,
    $ref-free tool schema forced with toolChoice any; both memories come back as Candidates
    (naive valid_from read as UTC), tidied as on the OpenAI path."""
    client, stub, sent = bedrock
    stub.add_response("converse", answered("Extraction", {
        "memories": [POSTGRES, memory("The user has a cat.", [2, 2], kind="fact")],
        "not_kept": []}), expected_request("Extraction"))

    result = LLMExtractor(bedrock_settings(), client=client).extract(conversation(), NOW)

    first, second = result.memories
    assert isinstance(first, Candidate)
    assert (first.slot, first.value, first.kind) == ("user.preferred_database", "postgresql",
                                                    "preference")
    assert first.valid_from == datetime(2025, 3, 13, 12, 0, tzinfo=UTC)
    assert second.evidence == [2]
    [request] = sent
    assert PRIVATE in request["messages"][0]["content"][0]["text"]
    assert "durable memories" in request["system"][0]["text"]
    schema = request["toolConfig"]["tools"][0]["toolSpec"]["inputSchema"]["json"]
    assert schema["type"] == "object" and schema["required"] == ["memories", "not_kept"]
    item = schema["properties"]["memories"]["items"]
    assert item["type"] == "object" and item["additionalProperties"] is False
    assert set(item["required"]) == set(POSTGRES)
    text = repr(schema)
    for refused in ("$ref", "$defs", "'pattern'", "'format'", "'minimum'", "'maximum'"):
        assert refused not in text, refused


def test_judge_verdict_through_the_tool(bedrock):
    """Given an active memory and a model that calls the JudgeAnswer tool with a confident
    supersedes for it and one for an id it was not shown
    When the judge runs
    Then only the shown one is a Verdict, decided by the Bedrock model id; throttling is a
    JudgeFailed (rate_limited)."""
    client, stub, sent = bedrock
    mongo = Neighbour(id=uuid.uuid4(), content="The user prefers MongoDB.", kind="preference",
                      slot="user.preferred_database", value="mongodb", similarity=0.91,
                      valid_from=NOW - timedelta(days=30), recorded_at=NOW - timedelta(days=30))
    stub.add_response("converse", answered("JudgeAnswer", {"verdicts": [
        {"target_id": str(mongo.id), "relation": "supersedes", "confidence": 0.92,
         "reason": "moved  to\nPostgreSQL"},
        {"target_id": str(uuid.uuid4()), "relation": "supersedes", "confidence": 0.99,
         "reason": "not shown"}]}), expected_request("JudgeAnswer"))

    [verdict] = LLMJudge(bedrock_settings(), client=client).judge(Candidate(**POSTGRES), [mongo])

    assert (verdict.target_id, verdict.relation, verdict.decided_by) == (mongo.id, "supersedes",
                                                                         MODEL)
    assert verdict.reason == "moved to PostgreSQL"
    assert str(mongo.id) in sent[0]["messages"][0]["content"][0]["text"]

    # a judge failure is the judge's own exception, with the same reasons
    stub.add_client_error("converse", service_error_code="ThrottlingException",
                          http_status_code=429, expected_params=expected_request("JudgeAnswer"))
    with pytest.raises(JudgeFailed) as info:
        LLMJudge(bedrock_settings(), client=client).judge(Candidate(**POSTGRES), [mongo])
    assert info.value.reason == "rate_limited"


def test_a_text_answer_is_read_as_json(bedrock):
    """Given a model that ignores the tool and answers JSON in prose, then in a fence
    When each is extracted
    Then both parse, as a tool answer would."""
    client, stub, _ = bedrock
    body = '{"memories": [%s], "not_kept": []}' % (
        '{"content": "The user prefers PostgreSQL.", "kind": "preference", "slot": null, '
        '"value": null, "valid_from": null, "valid_to": null, "confidence": 0.8, '
        '"asserts_change": false, "evidence": [2]}')
    for text in (f"Here is the extraction:\n{body}\nDone.", f"```json\n{body}\n```"):
        stub.add_response("converse", converse_response({"text": text}, stop="end_turn"),
                          expected_request("Extraction"))
    extractor = LLMExtractor(bedrock_settings(), client=client)
    for _ in range(2):
        [only] = extractor.extract(conversation(), NOW).memories
        assert only.content == "The user prefers PostgreSQL."


# --- answers that are no answer -------------------------------------------------------------

def test_unusable_answers_have_their_reason(bedrock):
    """Given, in turn: a guardrail intervening, a content filter, the token limit, tool input
    of the wrong types, prose with no JSON, an empty message, a call of another tool
    When each is extracted
    Then each raises ExtractorFailed with its own reason (refused, filtered, truncated,
    invalid, malformed, empty, malformed) and no conversation text."""
    client, stub, _ = bedrock
    cases = [
        (converse_response({"text": "Sorry, the model cannot answer."},
                           stop="guardrail_intervened"), "refused"),
        (converse_response({"text": ""}, stop="content_filtered"), "filtered"),
        (converse_response(tool_use("Extraction", {"memories": [POSTGRES]}), stop="max_tokens"),
         "truncated"),
        (answered("Extraction", {"memories": [{**POSTGRES, "confidence": "very", "evidence": "2"}],
                                 "not_kept": []}), "invalid"),
        (converse_response({"text": "I found a preference for PostgreSQL."}, stop="end_turn"),
         "malformed"),
        (converse_response(stop="end_turn"), "empty"),
        (answered("search_web", {"query": "x"}), "malformed"),
    ]
    for response, _ in cases:
        stub.add_response("converse", response, expected_request("Extraction"))
    reasons = []
    for _, reason in cases:
        reasons.append(extract_fails(client, reason).reason)
    assert reasons == [r for _, r in cases]


def test_service_errors_have_their_reason_and_name_the_model(bedrock):
    """Given Bedrock answering ThrottlingException, AccessDeniedException,
    ResourceNotFoundException and ValidationException
    When extraction runs (no retries)
    Then the reasons are rate_limited, credentials, not_found and client, each message
    naming the error code and the model id; the service's own message is never quoted."""
    client, stub, _ = bedrock
    cases = [("ThrottlingException", 429, "rate_limited"),
             ("AccessDeniedException", 403, "credentials"),
             ("ResourceNotFoundException", 404, "not_found"),
             ("ValidationException", 400, "client")]
    for code, status, _ in cases:
        stub.add_client_error("converse", service_error_code=code, http_status_code=status,
                              service_message=f"echo: {PRIVATE}",
                              expected_params=expected_request("Extraction"))
    for code, status, reason in cases:
        exc = extract_fails(client, reason)
        assert code in str(exc) and exc.status_code == status
    assert "STRATA_LLM_TOOL_CHOICE" in str(exc)  # what a refused toolChoice needs


def test_tool_choice_follows_the_setting(bedrock):
    """Given STRATA_LLM_TOOL_CHOICE=tool, then auto (for models that refuse any)
    When extraction runs
    Then the request names the tool, then leaves the choice to the model, whose text answer
    is read (expected_params fail the test on any other toolChoice)."""
    client, stub, _ = bedrock
    stub.add_response("converse", answered("Extraction", {"memories": [POSTGRES], "not_kept": []}),
                      expected_request("Extraction", {"tool": {"name": "Extraction"}}))
    stub.add_response("converse", converse_response(
        {"text": '{"memories": [], "not_kept": [{"message": 0, "reason": "past", '
                 '"text": "I used to prefer MongoDB."}]}'}, stop="end_turn"),
        expected_request("Extraction", {"auto": {}}))
    named = LLMExtractor(bedrock_settings(llm_tool_choice="tool"), client=client)
    assert [m.value for m in named.extract(conversation(), NOW).memories] == ["postgresql"]
    auto = LLMExtractor(bedrock_settings(llm_tool_choice="auto"), client=client)
    assert [n.reason for n in auto.extract(conversation(), NOW).not_kept] == ["past"]


@pytest.fixture
def silent_endpoint():
    """A loopback endpoint that accepts connections and never answers."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        server.settimeout(0.1)
        while not stop.is_set():
            try:
                held.append(server.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.getsockname()[1]}"
    stop.set()
    thread.join()
    for conn in held:
        conn.close()
    server.close()


def test_a_model_that_never_answers_is_a_timeout(aws_env, silent_endpoint):
    """Given a Bedrock endpoint that never answers and llm_timeout_s=0.3, no retries
    When extraction runs
    Then it fails with reason timeout (control: the request did reach the endpoint)."""
    settings = bedrock_settings(llm_timeout_s=0.3)
    client = boto3.client("bedrock-runtime", region_name=REGION, endpoint_url=silent_endpoint,
                          config=Config(read_timeout=0.3, retries={"max_attempts": 1}))
    sent: list[str] = []
    client.meta.events.register("before-send.bedrock-runtime.Converse",
                                lambda request, **kw: sent.append(request.url))
    with pytest.raises(ExtractorFailed) as info:
        LLMExtractor(settings, client=client).extract(conversation(), NOW)
    assert info.value.reason == "timeout" and "0.3 s" in str(info.value)
    assert sent and sent[0].startswith(silent_endpoint)


# --- settings ---------------------------------------------------------------------------------

def test_bedrock_is_chosen_by_settings_and_built_with_its_timeouts(aws_clients):
    """Given STRATA_LLM_PROVIDER=bedrock with a model, region, timeout and retries
    When the extractor and judge are taken from the settings and first used
    Then both are the model-backed ones, built lazily, with a bedrock-runtime client in that
    region whose botocore Config has standard retries (retries + 1 attempts) and the read
    timeout; the inferred provider still picks openai for a base URL + model, and none
    without (control)."""
    client, stub, _, built = aws_clients
    settings = bedrock_settings(llm_timeout_s=12, llm_max_retries=3, bedrock_region="eu-west-1")
    extractor, judge = get_extractor(settings), get_judge(settings)
    assert isinstance(extractor, LLMExtractor) and isinstance(judge, LLMJudge)
    assert built == [] and not extractor._client.built
    stub.add_response("converse", answered("Extraction", {"memories": [], "not_kept": []}),
                      expected_request("Extraction"))

    extractor.extract(conversation(), NOW)

    [kwargs] = built
    assert kwargs["region_name"] == "eu-west-1"
    config = kwargs["config"]
    assert config.retries == {"mode": "standard", "max_attempts": 4}
    assert config.read_timeout == 12
    assert Settings(llm_base_url="http://127.0.0.1:1/v1", llm_model="m").llm_backend == "openai"
    assert Settings().llm_backend == "none" and get_extractor(Settings()) is None


def test_a_provider_without_what_it_needs_is_refused_naming_the_variable():
    """Bedrock without a model, openai without a base URL: a validation error on
    llm_provider naming the missing variable (and never another setting's value)."""
    from pydantic import ValidationError

    for values, missing in ((dict(llm_provider="bedrock", llm_api_key="sk-never-shown"),
                             "STRATA_LLM_MODEL"),
                            (dict(llm_provider="openai", llm_model="m"), "STRATA_LLM_BASE_URL")):
        with pytest.raises(ValidationError) as info:
            Settings(**values)
        [error] = info.value.errors()
        assert error["loc"] == ("llm_provider",) and missing in error["msg"]
        assert "sk-never-shown" not in str(info.value)
    assert Settings(llm_provider="none", llm_base_url="http://x/v1", llm_model="m").llm_configured \
        is False
    assert Settings(llm_provider="bedrock", llm_model=MODEL).llm_configured  # control


# --- through the HTTP ingest API ------------------------------------------------------------

@pytest.fixture
def bedrock_api(db, embedder, settings, aws_clients):
    """The app over this test's database with STRATA_LLM_PROVIDER=bedrock; its model client
    is the stubbed one (built from the settings, handed out by ``aws_clients``)."""
    from fastapi.testclient import TestClient
    from log_scan import Witness

    app = create_app(db=db, embedder=embedder, settings=bedrock_settings(settings))
    app.add_middleware(Witness)
    with TestClient(app, raise_server_exceptions=False) as c:
        yield c


def ingest(client, tenant, text: str) -> dict:
    r = client.post("/v1/ingest", headers=tenant.headers, json={
        "path": "users.alice", "wait": True,
        "messages": [{"role": "user", "content": text, "at": NOW.isoformat()}]})
    assert r.status_code == 200, r.text
    return r.json()


def active(client, tenant) -> list[str]:
    r = client.get("/v1/memories", headers=tenant.headers,
                   params={"path": "users.alice", "status": "active"})
    assert r.status_code == 200, r.text
    return [m["content"] for m in r.json()["items"]]


def test_ingest_api_stores_what_bedrock_extracts(bedrock_api, aws_clients, tenant):
    """Given the app with the Bedrock extractor, and a model that extracts a memory in words
    the rules would not write
    When a conversation is ingested over HTTP
    Then the receipt names the Bedrock model as extractor and the model's memory is stored."""
    _, stub, sent, _ = aws_clients
    stub.add_response("converse", answered("Extraction", {"memories": [memory(
        "The user's favourite database is PostgreSQL.", [0], slot="user.preferred_database",
        value="postgresql")], "not_kept": []}), expected_request("Extraction"))

    receipt = ingest(bedrock_api, tenant, "Postgres, always Postgres.")

    assert receipt["status"] == "wrote" and receipt["extractor"] == f"llm:{MODEL}"
    assert [i["outcome"] for i in receipt["items"]] == ["created"]
    assert active(bedrock_api, tenant) == ["The user's favourite database is PostgreSQL."]
    assert "Postgres, always Postgres." in sent[0]["messages"][0]["content"][0]["text"]


def test_ingest_api_falls_back_to_rules_when_bedrock_fails(bedrock_api, aws_clients, tenant):
    """Given the app with the Bedrock extractor, llm_fallback=rule (the default), and Bedrock
    throttling
    When a conversation is ingested over HTTP
    Then the rule extractor runs, the receipt says so and why, and the memory is stored."""
    _, stub, _, _ = aws_clients
    stub.add_client_error("converse", service_error_code="ThrottlingException",
                          http_status_code=429, expected_params=expected_request("Extraction"))

    receipt = ingest(bedrock_api, tenant, "My name is Alice")

    assert receipt["status"] == "wrote"
    assert receipt["extractor"] == f"rule (fallback from llm:{MODEL})"
    assert any("model extraction failed (rate_limited)" in n for n in receipt["notes"])
    assert len(active(bedrock_api, tenant)) == 1


def test_reflection_runs_on_bedrock_too(aws_clients):
    """Given STRATA_LLM_PROVIDER=bedrock and a model that calls the ReflectionAnswer tool
    citing two of the memories shown and one it was not shown
    When the reflector (taken from the settings) reflects
    Then it is the Bedrock-backed reflector and keeps only the two shown ids."""
    from strata.reflection.reflector import get_reflector

    _, stub, _, built = aws_clients
    shown = [{"id": uuid.uuid4(), "kind": "preference", "content": f"The user prefers {x}."}
             for x in ("tea", "green tea", "oolong")]
    stub.add_response("converse", answered("ReflectionAnswer", {
        "content": "The user  prefers tea.",
        "evidence_ids": [str(shown[0]["id"]), str(shown[2]["id"]), str(uuid.uuid4())]}),
        expected_request("ReflectionAnswer"))

    content, cited = get_reflector(bedrock_settings()).reflect(shown)

    assert content == "The user prefers tea."
    assert cited == [shown[0]["id"], shown[2]["id"]]
    assert len(built) == 1  # its client came from the settings
