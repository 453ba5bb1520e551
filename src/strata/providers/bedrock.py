"""Bedrock Converse as the model provider for extraction, judging and reflection
(``STRATA_LLM_PROVIDER=bedrock``, ``STRATA_LLM_MODEL`` a model id or inference profile,
``STRATA_BEDROCK_REGION``). No key: the caller's AWS role invokes the model.

The answer is asked for as a tool call: one tool whose input schema is the answer model's
(``tool_schema``), and ``toolChoice: {"any": {}}``. With a single tool, ``any`` forces that
tool exactly as ``{"tool": {"name": ...}}`` would, and it is the portable choice: Bedrock
documents ``any`` for Anthropic Claude 3+, Mistral Large and Amazon Nova (since Nova's tool
choice update of March 2025), while the named ``tool`` choice is Claude 3+ and Nova only.
Models that refuse both with a ValidationException (Meta Llama, Cohere) take
``STRATA_LLM_TOOL_CHOICE=auto``: a setting, not a retry on the error's wording. A model that
answers in text anyway is read as JSON text, as the OpenAI path reads its content.

Retries are botocore's standard mode (throttling and 5xx, exponential backoff with jitter),
``llm_max_retries`` of them, each attempt bounded by ``llm_timeout_s``; what still fails is
mapped by ``strata.providers.clients.bedrock_failures``.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel

from strata.foundation.config import Settings
from strata.providers.clients import Fail, bedrock_client, bedrock_failures, strict_schema

# Enough for an extraction of a long conversation, and within every tool-capable model's
# output limit (Claude 3 Haiku's 4096 is the lowest).
MAX_TOKENS = 4096

# Keywords tool input schemas do not reliably accept (Bedrock's structured-output validation
# refuses the numeric and pattern constraints; $schema/$id are refused outright) or that only
# add noise; validation on our side still enforces every one of them.
_TOOL_UNSUPPORTED = frozenset({
    "$schema", "$id", "title", "pattern", "format", "minimum", "maximum", "exclusiveMinimum",
    "exclusiveMaximum", "multipleOf",
})


def tool_schema(model: type[BaseModel]) -> dict[str, Any]:
    """``model``'s strict schema (``strict_schema``) as a tool input schema: ``$ref``s
    inlined (not every model resolves them) and ``_TOOL_UNSUPPORTED`` keywords dropped. The
    root stays ``{"type": "object", ...}``, which Converse requires. The answer models are not
    recursive, so inlining ends."""
    schema = strict_schema(model)
    defs = schema.pop("$defs", {})

    def walk(node: Any) -> Any:
        if isinstance(node, list):
            return [walk(v) for v in node]
        if not isinstance(node, dict):
            return node
        if "$ref" in node:
            target = defs[node["$ref"].rsplit("/", 1)[-1]]
            return walk({**target, **{k: v for k, v in node.items() if k != "$ref"}})
        out = {}
        for key, value in node.items():
            if key in _TOOL_UNSUPPORTED:
                continue
            if key == "properties":  # a mapping of names, not schema keywords
                out[key] = {name: walk(sub) for name, sub in value.items()}
            else:
                out[key] = walk(value)
        return out

    return walk(schema)


def converse_request(model_id: str, messages: list[dict[str, str]], answer: type[BaseModel],
                     tool_choice: str = "any") -> dict[str, Any]:
    """The Converse parameters for one structured answer: the prompt's system messages as
    ``system``, the rest as text turns, one tool named after the answer model, forced as
    ``tool_choice`` says (``Settings.llm_tool_choice``)."""
    choice = {"tool": {"name": answer.__name__}} if tool_choice == "tool" else {tool_choice: {}}
    request: dict[str, Any] = {
        "modelId": model_id,
        "messages": [{"role": m["role"], "content": [{"text": m["content"]}]}
                     for m in messages if m["role"] != "system"],
        "inferenceConfig": {"maxTokens": MAX_TOKENS, "temperature": 0},
        "toolConfig": {
            "tools": [{"toolSpec": {
                "name": answer.__name__,
                "description": f"Record the answer: one {answer.__name__} object.",
                "inputSchema": {"json": tool_schema(answer)},
            }}],
            "toolChoice": choice,
        },
    }
    system = [{"text": m["content"]} for m in messages if m["role"] == "system"]
    if system:
        request["system"] = system
    return request


def _json_text(text: str) -> str:
    """A text answer's JSON object: models that ignore the tool often wrap it in prose."""
    text = text.strip()
    start, end = text.find("{"), text.rfind("}")
    if not text.startswith(("{", "```")) and 0 <= start < end:
        return text[start:end + 1]
    return text


class BedrockConverse:
    """One structured answer through ``bedrock-runtime`` Converse (see the module)."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings

    def make_client(self) -> Any:
        s = self.settings
        return bedrock_client(s.bedrock_region, max_retries=s.llm_max_retries,
                              timeout_s=s.llm_timeout_s)

    def ask(self, client: Any, messages: list[dict[str, str]], answer: type[BaseModel],
            fail: Fail) -> str:
        s = self.settings
        model_id = s.llm_model or ""
        with bedrock_failures(fail, model_id=model_id, timeout_s=s.llm_timeout_s,
                              max_retries=s.llm_max_retries,
                              invalid_hint="a model that refuses toolChoice "
                                           f"{s.llm_tool_choice} needs another "
                                           "STRATA_LLM_TOOL_CHOICE (auto for Llama)"):
            response = client.converse(
                **converse_request(model_id, messages, answer, s.llm_tool_choice))

        stop = response.get("stopReason")
        if stop == "guardrail_intervened":
            raise fail("answer blocked by a Bedrock guardrail", "refused")
        if stop == "content_filtered":
            raise fail("answer withheld by a content filter", "filtered")
        if stop in ("max_tokens", "model_context_window_exceeded"):
            raise fail(f"answer cut off at the token limit ({stop})", "truncated")
        content = ((response.get("output") or {}).get("message") or {}).get("content")
        if not isinstance(content, list):
            raise fail("response has no message", "malformed")
        calls = [b["toolUse"] for b in content if isinstance(b, dict) and "toolUse" in b]
        for call in calls:
            if call.get("name") != answer.__name__:
                continue
            given = call.get("input")
            # Some models pass the arguments as a JSON string rather than an object.
            return given if isinstance(given, str) else json.dumps(given)
        if calls:
            raise fail("model called a tool it was not given", "malformed")
        text = "".join(b["text"] for b in content
                       if isinstance(b, dict) and isinstance(b.get("text"), str))
        return _json_text(text)
