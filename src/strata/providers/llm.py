"""One structured call to a chat model, through the ``openai`` client against any
OpenAI-compatible endpoint (``STRATA_LLM_BASE_URL`` / ``STRATA_LLM_MODEL``) or through
Bedrock Converse (``STRATA_LLM_PROVIDER=bedrock``, ``strata.providers.bedrock``). The provider
makes the one call; validation of the answer is the same for both. What is asked and what is
kept of the answer belong to the capability that asks: extraction and judging
(``strata.ingest.llm``), reflection (``strata.reflection.reflector``).

Retries are the client's own (see ``strata.providers.clients``); ``llm_max_retries`` and
``llm_timeout_s`` set them.
Anything that still fails — transport, refusal, an empty, truncated, malformed or off-schema
answer — raises the caller's ``failure`` (``ExtractorFailed``, ``JudgeFailed``, ...), whose
messages name the failure and never quote the conversation (the chained cause may: log
``str(exc)``, not the traceback, where that matters).

The answer schema is sent as a strict ``json_schema`` response format built from the same
pydantic model the answer is validated with, minus the keywords strict mode does not accept
(``default``, ``minLength``, ``maxLength``: Azure and some OpenAI-compatible servers refuse the
whole request over them). Validation on our side still enforces every constraint.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypeVar

from pydantic import BaseModel, ValidationError

from strata.foundation.config import Settings
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

M = TypeVar("M", bound=BaseModel)


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


class ModelCaller:
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
