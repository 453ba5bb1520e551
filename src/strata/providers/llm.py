"""Model-backed extractor and conflict judge, through the ``openai`` client against any
OpenAI-compatible endpoint (``STRATA_LLM_BASE_URL`` / ``STRATA_LLM_MODEL``) or through
Bedrock Converse (``STRATA_LLM_PROVIDER=bedrock``, ``strata.providers.bedrock``). The provider
makes the one call; prompts, validation of the answer and what is kept are the same for both.

Retries are the client's own (see ``strata.providers.clients``); ``llm_max_retries`` and
``llm_timeout_s`` set them.
Anything that still fails — transport, refusal, an empty, truncated, malformed or off-schema
answer — raises ``ExtractorFailed`` / ``JudgeFailed``, whose messages name the failure and
never quote the conversation (the chained cause may: log ``str(exc)``, not the traceback,
where that matters).

The answer schema is sent as a strict ``json_schema`` response format built from the same
pydantic model the answer is validated with, minus the keywords strict mode does not accept
(``default``, ``minLength``, ``maxLength``: Azure and some OpenAI-compatible servers refuse the
whole request over them). Validation on our side still enforces every constraint.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, TypeVar

from pydantic import BaseModel, ValidationError

from strata.foundation.config import Settings
from strata.ingest.models import Candidate, Extraction, Message, Neighbour, Verdict
from strata.ingest.prompts import JudgeAnswer, extraction_messages, judge_messages
from strata.providers.clients import (
    Fail,
    Lazy,
    ModelCallFailed,
    openai_client,
    openai_failures,
    strict_schema,
)

if TYPE_CHECKING:
    from openai import OpenAI

    from strata.providers.bedrock import BedrockConverse

# DESIGN "Truth maintenance": model verdicts count only at this confidence or above.
MIN_VERDICT_CONFIDENCE = 0.75

_REASON_MAX = 500

M = TypeVar("M", bound=BaseModel)


class ExtractorFailed(ModelCallFailed):
    pass


class JudgeFailed(ModelCallFailed):
    pass


def make_client(settings: Settings) -> OpenAI:
    """An ``openai.OpenAI`` client for the configured LLM endpoint (key from the setting or
    its Secrets Manager secret)."""
    return openai_client(
        base_url=settings.llm_base_url, api_key=settings.llm_api_key,
        api_key_secret_arn=settings.llm_api_key_secret_arn,
        timeout_s=settings.llm_timeout_s, max_retries=settings.llm_max_retries,
    )


def _response_format(model: type[BaseModel]) -> dict[str, Any]:
    return {
        "type": "json_schema",
        "json_schema": {"name": model.__name__, "schema": strict_schema(model), "strict": True},
    }


def _strip_fence(text: str) -> str:
    """Servers that ignore ``response_format`` often wrap JSON in a Markdown fence."""
    text = text.strip()
    if text.startswith("```") and text.endswith("```") and len(text) >= 6:
        text = text[3:-3]
        if text.startswith("json"):
            text = text[4:]
    return text.strip()


class OpenAIChat:
    """One structured chat completion on an OpenAI-compatible endpoint: the answer schema as a
    strict ``json_schema`` response format, the answer the message's content."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings

    def make_client(self) -> OpenAI:
        return make_client(self.settings)

    def ask(self, client: OpenAI, messages: list[dict[str, str]], answer: type[BaseModel],
            fail: Fail) -> str:
        from openai.types.chat import ChatCompletion

        s = self.settings
        with openai_failures(fail, timeout_s=s.llm_timeout_s, max_retries=s.llm_max_retries,
                             what="a chat completion"):
            completion = client.chat.completions.create(
                model=s.llm_model, messages=messages, response_format=_response_format(answer),
            )

        # Without strict response validation the client returns a plain ``str`` for a
        # non-JSON content type, and a ChatCompletion with ``choices=None`` for any JSON.
        choices = getattr(completion, "choices", None)
        if not isinstance(completion, ChatCompletion) or choices is None:
            raise fail("response is not a chat completion", "malformed")
        if not choices:
            raise fail("answer has no choices", "empty")
        choice = choices[0]
        message = getattr(choice, "message", None)
        if message is None:
            raise fail("response is not a chat completion", "malformed")
        if getattr(message, "refusal", None):
            raise fail("model refused to answer", "refused")
        if choice.finish_reason == "length":
            raise fail("answer cut off at the token limit", "truncated")
        if choice.finish_reason == "content_filter":
            raise fail("answer withheld by a content filter", "filtered")
        content = message.content
        return content if isinstance(content, str) else ""


def chat_provider(settings: Settings) -> OpenAIChat | BedrockConverse:
    """The configured model provider (``Settings.llm_backend``)."""
    if settings.llm_backend == "bedrock":
        from strata.providers.bedrock import BedrockConverse

        return BedrockConverse(settings)
    return OpenAIChat(settings)


class _ModelCaller:
    """What the extractor, judge and reflector share, whichever the provider: a lazily created
    client, one structured call (the provider's ``ask``, which returns the answer's JSON text)
    and the validation of its answer against the pydantic model."""

    failure: type[ModelCallFailed] = ModelCallFailed
    what = "model call"

    def __init__(self, settings: Settings, client: Any = None) -> None:
        if not settings.llm_model:
            raise ValueError("llm_model is not set")
        self.settings = settings
        self.model = settings.llm_model
        self.name = f"llm:{self.model}"
        self.provider = chat_provider(settings)
        self._client = Lazy(self.provider.make_client, client)

    @property
    def client(self) -> Any:
        return self._client.get()

    def _fail(self, detail: str, reason: str, status_code: int | None = None) -> ModelCallFailed:
        return self.failure(
            f"{self.what} failed ({self.name}): {detail}", reason=reason, status_code=status_code
        )

    def _call(self, messages: list[dict[str, str]], answer: type[M]) -> M:
        content = self.provider.ask(self.client, messages, answer, self._fail)
        if not content.strip():
            raise self._fail("answer is empty", "empty")
        try:
            return answer.model_validate_json(_strip_fence(content))
        except ValidationError as exc:
            errors = exc.errors(include_input=False, include_url=False)
            if any(e["type"] == "json_invalid" for e in errors):
                raise self._fail("answer is not valid JSON", "malformed") from exc
            where = sorted({".".join(str(p) for p in e["loc"]) or "(root)" for e in errors})
            raise self._fail(
                f"answer does not match {answer.__name__} ({len(errors)} errors at "
                f"{', '.join(where[:5])})", "invalid",
            ) from exc


class LLMExtractor(_ModelCaller):
    """Messages → candidate memories, by one structured chat completion."""

    failure = ExtractorFailed
    what = "extraction"

    def extract(self, messages: list[Message], now: datetime,
                instructions: str | None = None) -> Extraction:
        if not messages:
            return Extraction()
        answer = self._call(extraction_messages(messages, now, instructions), Extraction)
        kept = []
        for candidate in answer.memories:
            # An index the conversation does not have means the model made the item up, or
            # misattributed it: provenance we cannot show is no provenance.
            if any(i < 0 or i >= len(messages) for i in candidate.evidence):
                continue
            # What only the assistant said is never a fact about the user.
            if not any(messages[i].role == "user" for i in candidate.evidence):
                continue
            kept.append(_tidy(candidate))
        # What the model says it left out, where it names a message it was shown; a secret's
        # text is never kept, whatever the model echoed.
        not_kept = [
            n.model_copy(update={"text": None}) if n.reason == "secret" else n
            for n in answer.not_kept
            if n.message < len(messages) and messages[n.message].role == "user"
        ]
        return Extraction(memories=kept, not_kept=not_kept)


def _tidy(candidate: Candidate) -> Candidate:
    update: dict[str, Any] = {"evidence": sorted(set(candidate.evidence))}
    if candidate.valid_from is not None and candidate.valid_from.tzinfo is None:
        # A timestamp without an offset is UTC, so it compares with stored (aware) ones.
        update["valid_from"] = candidate.valid_from.replace(tzinfo=UTC)
    return candidate.model_copy(update=update)


class LLMJudge(_ModelCaller):
    """A candidate and the memories it is compared with → verdicts, by one structured call."""

    failure = JudgeFailed
    what = "conflict judgement"

    def judge(self, candidate: Candidate, neighbours: list[Neighbour]) -> list[Verdict]:
        if not neighbours:
            return []
        answer = self._call(judge_messages(candidate, neighbours), JudgeAnswer)
        shown = {n.id for n in neighbours}
        best: dict[uuid.UUID, Verdict] = {}
        for v in answer.verdicts:
            try:
                target = uuid.UUID(v.target_id.strip())
            except ValueError:
                continue
            # DESIGN: verdicts count only at >= 0.75 and only for memories the model was shown.
            if target not in shown or v.confidence < MIN_VERDICT_CONFIDENCE:
                continue
            if target in best and best[target].confidence >= v.confidence:
                continue
            reason = " ".join(v.reason.split())[:_REASON_MAX] or f"{v.relation} (no reason given)"
            best[target] = Verdict(
                target_id=target, relation=v.relation, confidence=v.confidence, reason=reason,
                decided_by=self.model,
            )
        return list(best.values())


def get_extractor(settings: Settings) -> LLMExtractor | None:
    """The model-backed extractor when a model provider is configured (OpenAI-compatible or
    Bedrock, ``Settings.llm_backend``); ``None`` means use the rules."""
    return LLMExtractor(settings) if settings.llm_configured else None


def get_judge(settings: Settings) -> LLMJudge | None:
    """The model-backed judge when a model is configured; ``None`` means use the rules."""
    return LLMJudge(settings) if settings.llm_configured else None
