"""Model-backed extractor and judge through the real ``openai`` client over real loopback HTTP.

Only the model is scripted (``fake_openai``); retries, timeouts, the wire format and parsing
are the client's and ours, as in production.
"""

from __future__ import annotations

import time
import uuid
from datetime import UTC, datetime, timedelta

import boto3
import pytest
from moto import mock_aws

import support
from fake_openai import FakeLLM, Recorded, error, raw, refuse, reply, slow
from strata.foundation.config import Settings
from strata.ingest.llm import (
    ExtractorFailed, JudgeFailed, LLMExtractor, LLMJudge, get_extractor, get_judge,
)
from strata.ingest.models import Candidate, Extraction, Message, Neighbour

NOW = datetime(2025, 3, 14, 12, 0, tzinfo=UTC)
# A phrase that appears only in the conversation: it must reach the prompt and never an
# exception message.
PRIVATE = "my cat Zanzibar-7781 hates Mondays"


def conversation() -> list[Message]:
    return [
        Message(role="user", content="I used to prefer MongoDB.", at=NOW - timedelta(days=30)),
        Message(role="assistant", content="Noted."),
        Message(role="user", content=f"I've switched to PostgreSQL yesterday; {PRIVATE}.", at=NOW),
    ]


def memory(content: str, evidence: list[int], **kw) -> dict:
    return {
        "content": content, "kind": kw.get("kind", "preference"), "slot": kw.get("slot"),
        "value": kw.get("value"), "valid_from": kw.get("valid_from"),
        "confidence": kw.get("confidence", 0.9), "asserts_change": kw.get("asserts_change", False),
        "evidence": evidence,
    }


POSTGRES = memory(
    "The user prefers PostgreSQL.", [2], slot="user.preferred_database", value="postgresql",
    valid_from="2025-03-13T12:00:00", asserts_change=True,
)


def extract_fails(fake: FakeLLM, reason: str, **settings) -> ExtractorFailed:
    """Extraction raises ExtractorFailed with ``reason``, and its message keeps the
    conversation out."""
    extractor = LLMExtractor(fake.settings(**settings))
    with pytest.raises(ExtractorFailed) as info:
        extractor.extract(conversation(), NOW)
    exc = info.value
    assert exc.reason == reason, exc
    assert PRIVATE not in str(exc) and PRIVATE not in repr(exc)
    assert "Zanzibar" not in " ".join(map(str, exc.args))
    return exc


# --- extraction ---------------------------------------------------------------------------

def test_extraction_parses_candidates_and_sends_the_conversation(fake_llm):
    # Given a model that answers two memories
    fake_llm.script({"memories": [POSTGRES, memory("The user has a cat.", [2], kind="fact")]})
    extractor = LLMExtractor(fake_llm.settings())

    # When the conversation is extracted
    result = extractor.extract(conversation(), NOW)

    # Then both come back as Candidates, the naive valid_from read as UTC
    assert isinstance(result, Extraction)
    first, second = result.memories
    assert isinstance(first, Candidate)
    assert (first.slot, first.value, first.kind) == ("user.preferred_database", "postgresql", "preference")
    assert first.asserts_change is True and first.evidence == [2]
    assert first.valid_from == datetime(2025, 3, 13, 12, 0, tzinfo=UTC)
    assert second.content == "The user has a cat." and second.kind == "fact"
    assert extractor.name == "llm:fake-model"

    # And one request carried the conversation, the message times and the strict schema
    (req,) = fake_llm.completions
    body = req.json
    assert body["model"] == "fake-model"
    assert req.authorization == "Bearer test-key"
    assert req.schema_name == "Extraction"
    fmt = body["response_format"]
    assert fmt["type"] == "json_schema" and fmt["json_schema"]["strict"] is True
    assert "default" not in str(fmt["json_schema"]["schema"])
    assert PRIVATE in req.prompt and "I used to prefer MongoDB." in req.prompt
    assert (NOW - timedelta(days=30)).isoformat() in req.prompt
    assert NOW.isoformat() in req.prompt  # the assistant message has no time: taken as now


def test_empty_conversation_makes_no_call(fake_llm):
    assert LLMExtractor(fake_llm.settings()).extract([], NOW) == Extraction()
    assert fake_llm.requests == []


def test_rate_limited_then_answered_succeeds_on_the_clients_retry(fake_llm):
    # Given a 429 (Retry-After) and then an answer
    fake_llm.script(429, {"memories": [POSTGRES]})

    # When extracting with retries allowed
    result = LLMExtractor(fake_llm.settings(llm_max_retries=2)).extract(conversation(), NOW)

    # Then the retry got the answer: two attempts, the second marked as a retry
    assert [m.value for m in result.memories] == ["postgresql"]
    assert len(fake_llm.completions) == 2
    assert [r.retry_count for r in fake_llm.completions] == [0, 1]
    assert fake_llm.pending == 0


def test_server_errors_past_the_retries_fail(fake_llm):
    fake_llm.script(500, 503, {"memories": [POSTGRES]})
    exc = extract_fails(fake_llm, "http_error", llm_max_retries=1)
    assert exc.status_code == 503
    assert len(fake_llm.completions) == 2 and fake_llm.pending == 1


def test_rate_limit_past_the_retries_is_reported_as_such(fake_llm):
    fake_llm.script(429)
    exc = extract_fails(fake_llm, "rate_limited", llm_max_retries=0)
    assert exc.status_code == 429


def test_timeout_fails_without_waiting_for_the_answer(fake_llm):
    # Given a model slower than the client's timeout, and no retries
    fake_llm.script(slow(2.0, then={"memories": [POSTGRES]}))
    started = time.monotonic()

    # Then extraction fails as a timeout, after about the timeout, with one attempt
    extract_fails(fake_llm, "timeout", llm_timeout_s=0.3, llm_max_retries=0)
    assert time.monotonic() - started < 1.5
    assert len(fake_llm.completions) == 1


def test_malformed_json_fails_and_is_not_retried(fake_llm):
    fake_llm.script('{"memories": [{"content": "The user prefers', {"memories": [POSTGRES]})
    extract_fails(fake_llm, "malformed")
    assert len(fake_llm.completions) == 1


def test_schema_invalid_answer_fails_naming_the_field_not_the_content(fake_llm):
    bad = {**POSTGRES, "content": f"The user says {PRIVATE}", "kind": "banana"}
    fake_llm.script({"memories": [bad]})
    exc = extract_fails(fake_llm, "invalid")
    assert "memories.0.kind" in str(exc)


@pytest.mark.parametrize(
    ("answer", "reason"),
    [
        pytest.param(refuse(), "refused", id="refusal"),
        pytest.param(reply(""), "empty", id="empty-content"),
        pytest.param(reply({"memories": [POSTGRES]}, finish_reason="length"), "truncated", id="length"),
        pytest.param(raw("<html>gateway</html>", content_type="text/html"), "malformed", id="html-body"),
        pytest.param(raw("{not json"), "malformed", id="json-body-not-json"),
        pytest.param(raw('{"unexpected": true}'), "malformed", id="json-not-a-completion"),
        pytest.param(reply("[]"), "invalid", id="json-array"),
        pytest.param(error(400, f"bad request: {PRIVATE}"), "http_error", id="400-echoing-input"),
    ],
)
def test_unusable_answers_fail_without_leaking_the_conversation(fake_llm, answer, reason):
    fake_llm.script(answer)
    extract_fails(fake_llm, reason)


def test_fenced_json_from_a_server_that_ignores_response_format_is_accepted(fake_llm):
    fake_llm.script('```json\n{"memories": [%s]}\n```' % reply(POSTGRES).content)
    result = LLMExtractor(fake_llm.settings()).extract(conversation(), NOW)
    assert [m.value for m in result.memories] == ["postgresql"]


def test_candidates_citing_messages_that_do_not_exist_are_dropped(fake_llm):
    # Given one memory with valid evidence and three citing indexes outside the conversation
    fake_llm.script({"memories": [
        memory("The user invented this.", [7]),
        memory("The user prefers PostgreSQL.", [2, 0, 2]),
        memory("Also invented.", [0, 3]),
        memory("Negative.", [-1]),
    ]})

    result = LLMExtractor(fake_llm.settings()).extract(conversation(), NOW)

    # Then only the control survives, its evidence deduplicated and ordered
    assert [(m.content, m.evidence) for m in result.memories] == [
        ("The user prefers PostgreSQL.", [0, 2]),
    ]


# --- judge --------------------------------------------------------------------------------

def neighbour(content: str, slot: str | None = None, value: str | None = None) -> Neighbour:
    return Neighbour(
        id=uuid.uuid4(), content=content, kind="preference", slot=slot, value=value,
        valid_from=NOW - timedelta(days=30), recorded_at=NOW - timedelta(days=30), similarity=0.88,
    )


def test_judge_keeps_only_confident_verdicts_about_memories_it_was_shown(fake_llm):
    mongo = neighbour("The user prefers MongoDB.", "user.preferred_database", "mongodb")
    cat = neighbour("The user has a cat.")
    candidate = Candidate(**POSTGRES)
    invented = str(uuid.uuid4())

    def answer(req: Recorded) -> dict:
        # The ids come from the prompt, as a model's would.
        assert req.schema_name == "JudgeAnswer"
        shown = req.shown_ids()
        assert shown == [str(mongo.id), str(cat.id)]
        return {"verdicts": [
            {"target_id": shown[0], "relation": "supersedes", "confidence": 0.93,
             "reason": "Same slot, new value:\n the user switched to PostgreSQL."},
            {"target_id": shown[1], "relation": "coexists", "confidence": 0.6, "reason": "unsure"},
            {"target_id": invented, "relation": "supersedes", "confidence": 0.99, "reason": "made up"},
            {"target_id": "memory-1", "relation": "duplicate", "confidence": 0.99, "reason": "alias"},
        ]}

    fake_llm.script(answer)
    judge = LLMJudge(fake_llm.settings())

    verdicts = judge.judge(candidate, [mongo, cat])

    # Then only the confident verdict about a shown memory remains (the control), attributed
    # to the model
    assert len(verdicts) == 1
    (v,) = verdicts
    assert (v.target_id, v.relation, v.confidence) == (mongo.id, "supersedes", 0.93)
    assert v.decided_by == "fake-model"
    assert v.reason == "Same slot, new value: the user switched to PostgreSQL."
    # And the prompt showed the candidate and both memories
    (req,) = fake_llm.completions
    assert "The user prefers MongoDB." in req.prompt and "The user has a cat." in req.prompt
    assert "The user prefers PostgreSQL." in req.prompt


def test_judge_keeps_the_most_confident_of_two_verdicts_on_one_memory(fake_llm):
    mongo = neighbour("The user prefers MongoDB.")
    fake_llm.script({"verdicts": [
        {"target_id": str(mongo.id), "relation": "refines", "confidence": 0.8, "reason": "a"},
        {"target_id": str(mongo.id).upper(), "relation": "supersedes", "confidence": 0.9, "reason": "b"},
    ]})
    (v,) = LLMJudge(fake_llm.settings()).judge(Candidate(**POSTGRES), [mongo])
    assert (v.relation, v.confidence) == ("supersedes", 0.9)


def test_judge_without_neighbours_makes_no_call(fake_llm):
    assert LLMJudge(fake_llm.settings()).judge(Candidate(**POSTGRES), []) == []
    assert fake_llm.requests == []


@pytest.mark.parametrize(
    "answer",
    [
        pytest.param('{"verdicts": [', id="malformed"),
        pytest.param({"verdicts": [{"target_id": "x", "relation": "replaces", "confidence": 1,
                                    "reason": "r"}]}, id="unknown-relation"),
        pytest.param(500, id="server-error"),
    ],
)
def test_judge_failures_raise_judge_failed(fake_llm, answer):
    fake_llm.script(answer)
    judge = LLMJudge(fake_llm.settings(llm_max_retries=0))
    with pytest.raises(JudgeFailed) as info:
        judge.judge(Candidate(content=f"The user says {PRIVATE}"), [neighbour(PRIVATE)])
    assert PRIVATE not in str(info.value)
    assert PRIVATE in fake_llm.completions[0].prompt


# --- client and configuration -------------------------------------------------------------

@pytest.fixture
def aws(monkeypatch):
    support.fake_aws_credentials(monkeypatch, region="eu-west-1")
    from aws_lambda_powertools.utilities import parameters

    parameters.clear_caches()
    with mock_aws():
        yield boto3.client("secretsmanager")
    parameters.clear_caches()


def test_api_key_is_read_from_secrets_manager(fake_llm, aws):
    # Given the key only in Secrets Manager
    arn = aws.create_secret(Name="strata/llm-key", SecretString="sk-from-secrets-manager")["ARN"]
    fake_llm.script({"memories": [POSTGRES]})
    settings = fake_llm.settings(llm_api_key=None, llm_api_key_secret_arn=arn)

    # When extracting
    result = LLMExtractor(settings).extract(conversation(), NOW)

    # Then the endpoint received that key
    assert [m.value for m in result.memories] == ["postgresql"]
    assert fake_llm.completions[0].authorization == "Bearer sk-from-secrets-manager"


def test_unreadable_key_secret_fails_before_sending(fake_llm, aws):
    missing = "arn:aws:secretsmanager:eu-west-1:123456789012:secret:strata/none-AbCdEf"
    settings = fake_llm.settings(llm_api_key=None, llm_api_key_secret_arn=missing)
    with pytest.raises(ExtractorFailed) as info:
        LLMExtractor(settings).extract(conversation(), NOW)
    assert info.value.reason == "credentials"
    assert fake_llm.requests == []


def test_without_a_key_the_openai_env_key_is_not_sent_to_the_endpoint(fake_llm, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-real-openai-key")
    fake_llm.script({"memories": []})
    LLMExtractor(fake_llm.settings(llm_api_key=None)).extract(conversation(), NOW)
    assert "sk-real-openai-key" not in (fake_llm.completions[0].authorization or "")


def test_providers_exist_only_when_a_model_is_configured(fake_llm):
    bare = Settings(llm_base_url=None, llm_model=None)
    assert get_extractor(bare) is None and get_judge(bare) is None
    assert get_extractor(Settings(llm_base_url=fake_llm.base_url)) is None

    extractor, judge = get_extractor(fake_llm.settings()), get_judge(fake_llm.settings())
    assert isinstance(extractor, LLMExtractor) and isinstance(judge, LLMJudge)
    assert judge.name == "llm:fake-model"
    # The client is created on first use, not by the factory.
    assert not extractor._client.built and not judge._client.built
