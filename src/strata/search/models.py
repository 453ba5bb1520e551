"""Search shapes: the request ``POST /v1/search`` and MCP ``recall`` take, and its answer.

Wire shapes, like :mod:`strata.memories.models`: pydantic and :mod:`strata.foundation.fields` only, so
the Python client uses these classes without the server's dependencies; :mod:`strata.search.hybrid`
runs them.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from strata.foundation.fields import (Flag, Fraction, Instant, Integer, Kind, MemoryPath, Meta, Tag,
                                     Text)

Mode = Literal["hybrid", "vector", "keyword"]
Include = Literal["candidates", "history"]


class SearchRequest(BaseModel):
    model_config = ConfigDict(extra="forbid", json_schema_extra={"examples": [
        {"query": "which database does Alice prefer?", "paths": ["users.alice"], "limit": 5},
        {"query": "where did the team meet last week", "kinds": ["event"], "explain": True},
        {"query": "open incidents", "meta": {"priority": {"gte": 2}, "team": "core"},
         "min_score": 0.3},
    ]})

    query: Text = Field(min_length=1, max_length=4000, description=(
        "What to look for, in words; a time it names (\"last week\") favours memories true "
        "then."))
    paths: list[MemoryPath] | None = Field(default=None, max_length=50, description=(
        "Only these paths' subtrees; every path the key can read when absent."))
    kinds: list[Kind] | None = Field(default=None, description="Only memories of these kinds.")
    tags: list[Tag] | None = Field(default=None, max_length=32, description=(
        "Only memories carrying every one of these tags."))
    meta: Meta | None = Field(default=None, description=(
        "Only memories whose meta matches: `{\"team\": \"core\"}` by containment, and a "
        "key whose value is an object of operators a condition on it: `eq`, `ne`, `gt`, "
        "`gte`, `lt`, `lte`, `in` (a list), `exists` (true or false), as in "
        "`{\"priority\": {\"gte\": 2}}`. Every condition must hold."))
    # Integer, Flag: JSON's numbers and booleans (strata.foundation.fields says why).
    limit: Integer = Field(default=10, ge=1, le=100, description="The most results.")
    valid_at: Instant | None = Field(default=None, description=(
        "Only memories true at this instant (their valid time contains it); absent, valid "
        "time does not filter."))
    include: list[Include] = Field(default_factory=list, max_length=2, description=(
        "Statuses to search beside `active`: `candidates` (held for review), `history` "
        "(superseded and archived)."))
    mode: Mode = Field(default="hybrid", description=(
        "`hybrid` ranks by meaning and by words together; `vector` by meaning only, "
        "`keyword` by words only."))
    expand: Flag = Field(default=False, description=(
        "Also return memories related to the hits by an edge (`expanded`)."))
    explain: Flag = Field(default=False, description=(
        "Add each result's score breakdown (`explain`)."))
    # Fraction: JSON's number, 0..1 (strata.foundation.fields).
    min_score: Fraction | None = Field(default=None, description=(
        "Only results whose `score` (the probability that the result is relevant, 0..1) is "
        "at least this. 0.5 keeps most relevant results and drops most others (on held-out "
        "LoCoMo: 83 % of the results citing the answer kept, 72 % of the rest and 99 % of the "
        "results of questions nothing answers dropped); higher is stricter. Applied before "
        "`limit`: up to `limit` results that clear it."))
    exclude_derived: Flag = Field(default=False, description=(
        "Leave out memories a model derived (origin `llm_derived`: reflections, and "
        "consolidations the model wrote), from the hits and from graph expansion."))
    why_not: list[uuid.UUID] | None = Field(default=None, max_length=20, description=(
        "Memory ids to diagnose: for each, whether it was returned, or why not -- its status, "
        "its validity, a filter (paths, kinds, tags, meta), min_score, or its rank below "
        "`limit`. An id this key cannot read answers exactly as an id that does not exist."))


class SearchResult(BaseModel):
    """A memory that matched, with its relevance and its place in the ranking."""

    id: uuid.UUID = Field(description="The memory's id.")
    content: str = Field(description="The statement.")
    context: str | None = Field(default=None, description=(
        "What situates it (the message it answers, the passage it came from), when it has "
        "one: the text arm matched its words too."))
    path: str = Field(description="Where it lives.")
    kind: str = Field(description="What sort of statement it is.")
    status: str = Field(description="`active`, or another status `include` asked for.")
    origin: str = Field(description=(
        "`user_stated`, `llm_derived` (a reflection, or a consolidation the model wrote), "
        "`imported` or `system`: a derived memory is marked as such wherever it is returned."))
    # The probability that the result is relevant, fitted per embedder (strata.search.ranking,
    # "Relevance"); results come in `rank` order, which the fused score sets
    # (explain.rank_score), and the score never changes it. 0 for an expansion.
    score: float = Field(description=(
        "The probability that the memory is relevant to the query, 0 to 1, comparable across "
        "queries (what `min_score` compares with; `explain.relevance` shows how it was "
        "made); 0 for an expansion. Results come in `rank` order, so a lower-ranked result "
        "may score higher."))
    rank: int | None = Field(default=None, description=(  # None for an expansion
        "1-based position in the ranking; null for an expansion."))
    valid_from: datetime = Field(description="When the statement became true.")
    valid_to: datetime | None = Field(description="When it stopped being true; null while it holds.")
    tags: list[str] = Field(description="Its tags.")
    importance: float = Field(description="How much it matters, 0 to 1.")
    confidence: float = Field(description="How sure strata is that it holds, 0 to 1.")
    expanded: bool = Field(default=False, description=(
        "True for a memory found by `expand`, related to a hit rather than matching."))
    expanded_from: uuid.UUID | None = Field(default=None, description=(
        "The hit an expanded memory is related to."))
    edge: str | None = Field(default=None, description="The edge's type, for an expanded memory.")
    explain: dict[str, Any] | None = Field(default=None, description=(
        "With `explain`: the ranking's parts (each arm's raw and normalised score, weights, "
        "boosts, `rank_score`: the fused score that sets the rank, and `later_than`: the "
        "earlier statement of the same words this one was moved up before, for a question "
        "about the present); `relevance`: how `score` was made (the calibration, its "
        "features, each coefficient's contribution, the intercept, the logit, and the "
        "score, its logistic); and `score`, the same number as the result's."))


class WhyNot(BaseModel):
    """Why a memory named in ``why_not`` is or is not among the results."""

    id: uuid.UUID = Field(description="The memory named.")
    returned: bool = Field(description="Whether it is among the results.")
    rank: int | None = Field(default=None, description=(
        "Its place in the fused ranking (1 = best), when either arm found it."))
    reasons: list[Literal["not_visible", "status", "validity", "paths", "kinds", "tags", "meta",
                          "origin", "min_score", "below_limit", "not_found_by_arms"]] = Field(
        description="Empty when returned; `not_visible` alone for an id this key cannot read "
                    "or that does not exist.")
    message: str = Field(description="The verdict in a sentence.")


class SearchResponse(BaseModel):
    results: list[SearchResult] = Field(description="The results, best first (in `rank` order).")
    why_not: list[WhyNot] | None = Field(
        default=None, description="One entry per id in the request's `why_not`, in its order.")
