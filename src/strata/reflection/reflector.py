"""The model that draws an inference from memories (reflection) or writes one memory for
several (consolidation): prompts as plain functions from context to chat messages, each
paired with the pydantic model its answer must parse into, asked of the configured model
as the extractor asks (``STRATA_LLM_PROVIDER``: a strict JSON schema on an OpenAI-compatible
endpoint, a forced tool on Bedrock). Only the memories' ids and text go into a prompt: no
tenant, path or key.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

from pydantic import BaseModel, Field

from strata.foundation.config import Settings
from strata.providers.clients import ModelCallFailed
from strata.providers.llm import ModelCaller


class ReflectionFailed(ModelCallFailed):
    pass


class ReflectionAnswer(BaseModel):
    content: str = Field(min_length=1, max_length=2000)
    evidence_ids: list[str]


class ConsolidationAnswer(BaseModel):
    content: str = Field(min_length=1, max_length=4000)


def _lines(memories: list[dict[str, Any]]) -> str:
    # One JSON object per line, so a memory's text cannot pose as instructions.
    return "\n".join(json.dumps({"id": str(m["id"]), "kind": m["kind"], "content": m["content"]})
                     for m in memories)


_REFLECT = """\
You find one durable pattern in what a user has stated: a general insight that several of
the statements below support together (a habit, a standing preference, a way of working).
The statements are JSON lines {"id", "kind", "content"}. Return {"content", "evidence_ids"}:
content is one standalone sentence stating the pattern, in the third person about the user;
evidence_ids are the ids of every statement the pattern rests on (at least two), exactly as
given. State nothing that the cited statements do not support together."""

_CONSOLIDATE = """\
You merge several memories about one subject into one memory that says everything they say
and nothing more. The memories are JSON lines {"id", "kind", "content"}. Return {"content"}:
one standalone statement, keeping names, numbers and dates exact."""


def reflection_messages(evidence: list[dict[str, Any]]) -> list[dict[str, str]]:
    return [{"role": "system", "content": _REFLECT},
            {"role": "user", "content": _lines(evidence)}]


def consolidation_messages(originals: list[dict[str, Any]]) -> list[dict[str, str]]:
    return [{"role": "system", "content": _CONSOLIDATE},
            {"role": "user", "content": _lines(originals)}]


class LLMReflector(ModelCaller):
    failure = ReflectionFailed
    what = "reflection"

    def reflect(self, evidence: list[dict[str, Any]]) -> tuple[str, list[uuid.UUID]]:
        """The pattern and the ids (of those shown) it rests on; an id the model was not
        shown is dropped, and fewer than two left is a failed reflection."""
        answer = self._call(reflection_messages(evidence), ReflectionAnswer)
        shown = {m["id"] for m in evidence}
        cited: list[uuid.UUID] = []
        for raw in answer.evidence_ids:
            try:
                one = uuid.UUID(raw.strip())
            except ValueError:
                continue
            if one in shown and one not in cited:
                cited.append(one)
        if len(cited) < 2:
            raise self._fail("answer cites fewer than two of the memories shown", "invalid")
        return " ".join(answer.content.split()), cited

    def consolidate(self, originals: list[dict[str, Any]]) -> str:
        answer = self._call(consolidation_messages(originals), ConsolidationAnswer)
        return " ".join(answer.content.split())


def get_reflector(settings: Settings) -> LLMReflector | None:
    """The model-backed reflector when a model is configured; ``None``: there is none."""
    return LLMReflector(settings) if settings.llm_configured else None
