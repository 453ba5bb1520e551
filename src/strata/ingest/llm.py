"""Model-backed extractor and conflict judge: the prompts of :mod:`strata.ingest.prompts` sent
through the configured chat model (:class:`strata.providers.llm.ModelCaller`), and what is
kept of its answer.

Anything that fails — transport, refusal, an empty, truncated, malformed or off-schema
answer — raises ``ExtractorFailed`` / ``JudgeFailed``, whose messages name the failure and
never quote the conversation (the chained cause may: log ``str(exc)``, not the traceback,
where that matters).
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any

from strata.foundation.config import Settings
from strata.ingest.models import Candidate, Extraction, Message, Neighbour, Verdict
from strata.ingest.prompts import JudgeAnswer, extraction_messages, judge_messages
from strata.providers.clients import ModelCallFailed
from strata.providers.llm import ModelCaller

# DESIGN "Truth maintenance": model verdicts count only at this confidence or above.
MIN_VERDICT_CONFIDENCE = 0.75

_REASON_MAX = 500


class ExtractorFailed(ModelCallFailed):
    pass


class JudgeFailed(ModelCallFailed):
    pass


class LLMExtractor(ModelCaller):
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


class LLMJudge(ModelCaller):
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
