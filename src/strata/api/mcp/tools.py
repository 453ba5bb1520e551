"""The MCP tools: a JSON schema and description an LLM reads, and one call into the core each.

Arguments are validated by the core's own request models (``MemoryIn``, ``SearchRequest``,
``MemoryPatch``, ``IngestRequest``), so a tool accepts exactly what the HTTP route accepts; the
schemas are written for a model to read (enums, bounds, one sentence a field) rather than
generated, and a test holds them to the models. Every outcome is a JSON object: the result, or
``{"error": {"code", "message", "field"?}}`` with the codes the HTTP API uses. ``call`` never
raises, so a refused call reaches the agent as a tool error it can act on.

The 12 tools, as ``tools/list`` answers them: ``remember``, ``recall``, ``get_memory``,
``update_memory``, ``forget``, ``memory_history``, ``list_review``, ``review_decision``,
``set_rule``, ``list_rules``, ``reflect``, ``consolidate``. This sentence is the count the
documentation quotes; tests/test_mcp.py fails when a tool is added or removed without it.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from pydantic_core import to_jsonable_python

from strata import memories as core
from strata.api.serving import error_body, error_body_for, field_name
from strata.auth import Caller
from strata.foundation.errors import InvalidInput, StrataError, Unauthenticated
from strata.foundation.paths import validate_path
from strata.ingest import service
from strata.ingest import remember as answers
from strata.ingest.models import IngestRequest, Role
from strata.ingest.remember import Remembered, to_show
from strata.memories.history import history as history_of
from strata.memories.models import MAX_CONTEXT_CHARS, Instant, Kind
from strata.providers.clients import ModelCallFailed
from strata.reflection import reflect as reflection
from strata.review import queue as review
from strata.rules import store as rules
from strata.rules.models import RuleIn
from strata.search import hybrid as search

if TYPE_CHECKING:
    from strata.api.serving import Runtime

log = logging.getLogger(__name__)

INSTRUCTIONS = """\
strata is long-term memory that knows which of its memories are still true.
- Before answering anything that may depend on the user, the project or earlier decisions, \
call `recall` with a short query.
- When you learn something durable (a preference, a fact, a decision, an instruction), call \
`remember` with what the user said as `statement`, or the conversation's `messages`: strata \
extracts what is worth keeping, waits, and answers what it kept (with content) and what it \
did not keep and why. `as_is: true` stores a self-contained statement exactly as written.
- Memories live under dot-separated paths (users.alice, shared.project_x); this key reads and \
writes only where it was granted access.
- A new value for the same thing supersedes the old one (history is kept): do not delete \
memories that merely changed. `forget` is erasure, for when the user asks you to forget.
- Errors are {"error": {"code", "message", "field"}}; `version_conflict` means: read the memory \
again with `get_memory` and retry with its current version."""

Decision = Literal["promote", "reject", "suppress", "merge"]

# ---------------------------------------------------------------------------------- schemas

UUID_FORMAT = {"type": "string", "format": "uuid"}
PATH_PATTERN = r"^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$"
ROOT_OR_PATH_PATTERN = r"^([A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*)?$"
TIMESTAMP = {"type": "string", "format": "date-time"}


def _path(description: str) -> dict[str, Any]:
    return {"type": "string", "pattern": PATH_PATTERN, "description": description}


def _id(description: str = "The memory's id (a UUID from recall, remember or get_memory).") -> dict:
    return {**UUID_FORMAT, "description": description}


def _tags(description: str) -> dict[str, Any]:
    return {"type": "array", "maxItems": 32, "description": description,
            "items": {"type": "string", "minLength": 1, "maxLength": 64}}


def _kind(description: str) -> dict[str, Any]:
    return {"type": "string", "enum": list(get_args(Kind)), "description": description}


def _object(properties: dict[str, Any], required: tuple[str, ...] = ()) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "object", "properties": properties,
                              "additionalProperties": False}
    if required:
        schema["required"] = list(required)
    return schema


# A statement stored as is takes the fields of a memory; extraction decides those itself.
AS_IS_ONLY = ("context", "kind", "slot", "value", "tags", "meta", "importance", "valid_from")
# Extraction's own (IngestRequest): with as_is, wait true is accepted (the write is immediate).
EXTRACTION_ONLY = ("wait", "idempotency_key")
# Either way: where the new memories land.
BOTH = ("tier", "ttl")

REMEMBER_SCHEMA = _object({
    "statement": {
        "type": "string", "minLength": 1, "maxLength": 32768,
        "description": "What the user said that is worth keeping, e.g. 'I moved to Munich and "
                       "I prefer PostgreSQL now.' strata extracts the durable memories from it "
                       "as from one user message (see as_is). Give either statement or "
                       "messages.",
    },
    "as_is": {
        "type": "boolean", "default": False,
        "description": "statement only: true stores it verbatim as one memory, through the "
                       "same checks, with no extraction (then kind, slot, value, tags, meta, "
                       "importance, valid_from and context apply, and idempotency_key does "
                       "not). Make it self-contained, e.g. 'Alice prefers PostgreSQL for new "
                       "services.' Default false: extracted.",
    },
    "messages": {
        "type": "array", "minItems": 1, "maxItems": 1000,
        "description": "Conversation turns to extract durable memories from; strata decides what "
                       "is worth keeping and resolves it against what it already holds. Give "
                       "either statement or messages.",
        "items": _object({
            "role": {"type": "string", "enum": list(get_args(Role))},
            "content": {"type": "string", "minLength": 1},
            "at": {**TIMESTAMP, "description": "When it was said (ISO 8601); default now."},
            "name": {"type": "string", "minLength": 1, "maxLength": 100,
                     "description": "Who is speaking, when known, e.g. Caroline."},
        }, required=("role", "content")),
    },
    "path": _path("Where the memory lives, e.g. users.alice or shared.project_x. Optional only "
                  "when this key has a default path."),
    "context": {"type": ["string", "null"], "minLength": 1, "maxLength": MAX_CONTEXT_CHARS,
                "description": "as_is only: what situates the statement when it does not say "
                               "it itself, e.g. the question it answers ('How long have you "
                               "been married?' for '5 years already'). Recall matches its "
                               "words; it is not part of the statement."},
    "kind": _kind("as_is only: what sort of memory it is (default fact)."),
    "slot": {"type": "string", "minLength": 1, "maxLength": 200,
             "description": "as_is only: what the memory is about when it has one current "
                            "value, e.g. user.preferred_database. A new value of the same slot "
                            "supersedes the old one."},
    "value": {"type": "string", "minLength": 1, "maxLength": 500,
              "description": "as_is only, with slot: the value in normal form, e.g. "
                             "postgresql (default: the statement)."},
    "tags": _tags("as_is only: labels to filter on later."),
    "meta": {"type": "object", "description": "as_is only: a JSON object kept with the "
                                              "memory (recall can filter on it)."},
    "importance": {"type": "number", "minimum": 0, "maximum": 1,
                   "description": "as_is only: 0 to 1 (default 0.5)."},
    "valid_from": {**TIMESTAMP, "description": "as_is only: when it became true in the "
                                               "world (ISO 8601); default now."},
    "wait": {"type": "boolean", "default": True,
             "description": "true (default): wait for extraction to finish and answer what was "
                            "kept and what was not. false: answer at once with status queued "
                            "and the receipt_id; what is kept is not known yet (recall finds "
                            "it once extracted). as_is writes at once: false does not apply "
                            "there."},
    "idempotency_key": {"type": "string", "minLength": 1, "maxLength": 200,
                        "description": "Extraction only: a retry with the same key writes "
                                       "nothing twice and answers as the first did."},
    "tier": {"type": "string", "enum": ["long_term", "short_term"], "default": "long_term",
             "description": "short_term: kept for ttl seconds, then expired, unless it is used "
                            "often enough to be promoted to long_term (same id). For context "
                            "that matters now, e.g. what the user is doing this week."},
    "ttl": {"type": "integer", "minimum": 60, "maximum": 366 * 24 * 3600,
            "description": "short_term only (and required there): seconds to keep it."},
})

RECALL_SCHEMA = _object({
    "query": {"type": "string", "minLength": 1, "maxLength": 4000,
              "description": "What you want to know, in words, e.g. 'which database does Alice "
                             "prefer'. Dates in it ('last week') favour what was true then."},
    "paths": {"type": "array", "maxItems": 50, "items": {"type": "string",
                                                         "pattern": PATH_PATTERN},
              "description": "Only these paths and their subtrees (default: all this key may "
                             "read)."},
    "kinds": {"type": "array", "items": _kind("A memory kind."),
              "description": "Only these kinds."},
    "tags": _tags("Only memories carrying all of these tags."),
    "meta": {"type": "object", "description": (
        "Only memories whose meta matches: {\"key\": value} is equality (containment for an "
        "object); {\"key\": {\"gte\": 3}} compares, with eq, ne, gt, gte, lt, lte, in (a "
        "list), exists (true/false).")},
    "limit": {"type": "integer", "minimum": 1, "maximum": 100, "default": 10,
              "description": "How many results at most."},
    "min_score": {"type": "number", "minimum": 0, "maximum": 1,
                  "description": "Only results at least this likely to be relevant (each "
                                 "result's score, 0..1: the probability that it is; 0.5 "
                                 "keeps most relevant results and drops most others); "
                                 "leave it out to always get the nearest ones."},
    "valid_at": {**TIMESTAMP, "description": "What was true at this instant instead of now."},
    "include": {"type": "array", "items": {"type": "string",
                                           "enum": ["candidates", "history"]},
                "description": "Also return candidates awaiting review and/or superseded and "
                               "archived memories (default: only what is currently true)."},
    "mode": {"type": "string", "enum": ["hybrid", "vector", "keyword"], "default": "hybrid",
             "description": "Ranking: hybrid (default), vector only, or keyword only."},
    "expand": {"type": "boolean", "default": False,
               "description": "Also return memories linked to the hits (refinements, related "
                              "facts)."},
    "explain": {"type": "boolean", "default": False,
                "description": "Include each result's score breakdown."},
    "exclude_derived": {"type": "boolean", "default": False,
                        "description": "Leave out what a model inferred (each result's origin "
                                       "says llm_derived): only what was stated."},
    "why_not": {"type": "array", "maxItems": 20, "items": {"type": "string", "format": "uuid"},
                "description": "Memory ids you expected: the answer says for each whether it "
                               "was returned or why not (status, validity, a filter, "
                               "min_score, ranked below limit)."},
}, required=("query",))

ID_SCHEMA = _object({"id": _id()}, required=("id",))

UPDATE_SCHEMA = _object({
    "id": _id(),
    "expected_version": {"type": "integer", "minimum": 1,
                         "description": "The version you last read (get_memory, or the answer "
                                        "of a previous update). If the memory changed since, "
                                        "the call fails with version_conflict."},
    "content": {"type": "string", "minLength": 1, "maxLength": 32768,
                "description": "The corrected text (re-embedded and checked against "
                               "forgotten/retired values)."},
    "context": {"type": ["string", "null"], "minLength": 1, "maxLength": MAX_CONTEXT_CHARS,
                "description": "New context (null: none); see remember's context."},
    "path": _path("Move the memory to this path (needs write access there)."),
    "kind": _kind("New kind."),
    "slot": {"type": "string", "minLength": 1, "maxLength": 200, "description": "New slot."},
    "value": {"type": "string", "minLength": 1, "maxLength": 500,
              "description": "The slot's value (derived from the new content when omitted)."},
    "importance": {"type": "number", "minimum": 0, "maximum": 1, "description": "0 to 1."},
    "confidence": {"type": "number", "minimum": 0, "maximum": 1, "description": "0 to 1."},
    "pinned": {"type": "boolean",
               "description": "Keep it from being archived when it goes unused."},
    "tags": _tags("Replaces the tags."),
    "meta": {"type": "object", "description": "Replaces the meta object."},
    "valid_from": {**TIMESTAMP, "description": "When it became true (ISO 8601)."},
    "valid_to": {**TIMESTAMP, "description": "When it stopped being true (ISO 8601)."},
}, required=("id", "expected_version"))

LIST_REVIEW_SCHEMA = _object({
    "path": _path("Only candidates under this path."),
    "cursor": {"type": "string", "description": "next_cursor from the previous page."},
    "limit": {"type": "integer", "minimum": 1, "maximum": 200, "default": 50,
              "description": "Page size."},
})

REVIEW_DECISION_SCHEMA = _object({
    "id": _id("The candidate's id (from list_review)."),
    "decision": {
        "type": "string", "enum": list(get_args(Decision)),
        "description": "promote: the change is real; the candidate becomes current and what it "
                       "contradicts is superseded. reject: not true; the candidate is rejected. "
                       "suppress: reject, and block this value from coming back in this path. "
                       "merge: it says what an existing memory says; its evidence joins that "
                       "memory (give into).",
    },
    "into": _id("merge only: the id of the existing memory the candidate duplicates."),
    "until": {**TIMESTAMP, "description": "suppress only: block the value until this instant "
                                          "(ISO 8601); after it, it may come back as a "
                                          "candidate for review. Without it: for good."},
}, required=("id", "decision"))


def _rule_schema() -> dict[str, Any]:
    """set_rule's arguments: RuleIn's own schema, so HTTP and MCP offer one shape."""
    schema = RuleIn.model_json_schema()
    assert "$defs" not in schema, "set_rule's schema must be self-contained"
    return _object({k: {kk: vv for kk, vv in v.items() if kk != "title"}
                    for k, v in schema["properties"].items()}, required=("path",))


SET_RULE_SCHEMA = _rule_schema()

LIST_RULES_SCHEMA = _object({
    "path": {"type": "string", "pattern": ROOT_OR_PATH_PATTERN,
             "description": "Only rules at or under this path ('' is the tenant root)."},
})

# Written out rather than taken from ReflectRequest's schema: its "exactly one of seed_id and
# path" is a top-level oneOf there, which tool schemas may not hold; the model says it.
REFLECT_SCHEMA = _object({
    "seed_id": _id("Reflect around this memory: it and its nearest active statements in its "
                   "path. Give seed_id or path, not both."),
    "path": _path("Reflect over the active statements at this path and below; the reflection "
                  "is stored here. Give path or seed_id, not both."),
    "limit": {"type": "integer", "minimum": 2, "maximum": reflection.MAX_EVIDENCE,
              "default": 20, "description": "At most this many memories are shown to the model."},
})

CONSOLIDATE_SCHEMA = _object({
    "ids": {"type": "array", "items": UUID_FORMAT, "minItems": 2,
            "maxItems": reflection.MAX_EVIDENCE, "uniqueItems": True,
            "description": "The active memories to merge (ids from recall); each is superseded "
                           "by the merged one."},
    "content": {"type": "string", "minLength": 1, "maxLength": 8000,
                "description": "What the merged memory says; without it the configured model "
                               "writes it."},
    "path": _path("Where the merged memory lives; by default the originals' path when they "
                  "share one."),
    "reason": {"type": "string", "minLength": 1, "maxLength": 500,
               "description": "Why they are merged, recorded with each superseded original."},
}, required=("ids",))


# -------------------------------------------------------------------------------- arguments


def _parse(model: type[BaseModel], data: dict[str, Any], rename: dict[str, str] | None = None):
    """Validate with a core model; the first problem becomes invalid_input naming the field."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        # The HTTP helper drops a leading request part (body, query, path): tool arguments
        # are all "body", and one of them is called query, another path.
        field = field_name(("body", *first.get("loc", ())))
        raise InvalidInput(first.get("msg", "invalid value"),
                           field=(rename or {}).get(field, field)) from None


class _IdArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")
    id: uuid.UUID


class _ReviewListArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")
    path: str | None = None
    cursor: str | None = None
    limit: int = Field(default=50, ge=1, le=200)


class _ReviewDecisionArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")
    id: uuid.UUID
    decision: Decision
    into: uuid.UUID | None = None
    until: Instant | None = None


# ------------------------------------------------------------------------------------ tools


def remember(rt: Runtime, caller: Caller, args: dict[str, Any]) -> Any:
    """Extract and wait by default; ``as_is`` stores a statement verbatim; ``wait: false``
    answers the queued receipt. Every way answers a ``Remembered`` (strata.ingest.remember),
    as the client and the CLI do."""
    as_is = args.pop("as_is", False)
    if not isinstance(as_is, bool):
        raise InvalidInput("as_is must be true or false", field="as_is")
    if ("statement" in args) == ("messages" in args):
        raise InvalidInput("give either statement or messages (exactly one)", field="statement")
    if as_is:
        if "messages" in args:
            raise InvalidInput("as_is stores one statement as written: messages are always "
                               "extracted", field="as_is")
        return _as_is(rt, caller, args)
    for name in AS_IS_ONLY:
        if name in args:
            raise InvalidInput(f"{name} applies only with as_is true (extraction decides it)",
                               field=name)
    rename = None
    if "statement" in args:
        said = {"role": "user", "content": args.pop("statement")}
        args["messages"] = [said]
        rename = {"messages[0].content": "statement"}
    return _extracted(rt, caller, _parse(IngestRequest, {"wait": True, **args}, rename))


def _as_is(rt: Runtime, caller: Caller, args: dict[str, Any]) -> Remembered:
    wait = args.pop("wait", True)
    if wait is not True:  # the write is immediate: there is nothing to leave queued
        raise InvalidInput("as_is writes at once: wait false applies to extraction only"
                           if wait is False else "wait must be true or false", field="wait")
    if "idempotency_key" in args:
        raise InvalidInput("idempotency_key applies to extraction only, not with as_is "
                           "(a repeated statement reinforces what is held)",
                           field="idempotency_key")
    item = _parse(core.MemoryIn, {"content" if k == "statement" else k: v
                                  for k, v in args.items()}, {"content": "statement"})
    req = core.CreateRequest(memories=[item])
    try:
        [result] = core.create_memories(rt.db, caller, req, rt.embedder,
                                        judge=rt.ingest.judge, settings=rt.settings)
    except StrataError as exc:
        # The batch core names fields memories[0].x: this tool takes one statement.
        if exc.field and exc.field.startswith("memories[0]."):
            exc.field = exc.field.removeprefix("memories[0].").replace("content", "statement")
        raise
    # A blocked write names no memory of its own: nothing of a refused value is read back.
    memory = (_readable(rt, caller, result.id)
              if result.id is not None and result.status != "blocked" else None)
    return answers.of_write(result, item.path, memory.content if memory else None,
                            memory.path if memory else None)


def _readable(rt: Runtime, caller: Caller, memory_id: uuid.UUID) -> core.Memory | None:
    try:
        return core.get_memory(rt.db, caller, memory_id)
    except StrataError:  # gone, moved or out of this key's reach: the id says enough
        return None


def _extracted(rt: Runtime, caller: Caller, req: IngestRequest) -> Remembered:
    """Ingest, answered as an agent reads it: each item kept (outcome, memory id, content),
    each clause not kept with its reason, and a summary line. A secret's clause has no text
    anywhere, and a blocked item no content."""
    receipt, _ = service.ingest(rt.ingest, rt.launcher, caller, req)
    contents = {}
    for memory_id in to_show(receipt.items):
        memory = _readable(rt, caller, memory_id)
        if memory is not None:
            contents[memory_id] = memory.content
    return answers.of_receipt(receipt, contents)


def recall(rt: Runtime, caller: Caller, args: dict[str, Any]) -> Any:
    req = _parse(search.SearchRequest, args)
    found = search.run(rt.db, caller, req, rt.embedder, reads=rt.reads)
    if found.why_not is None:
        return {"results": found.results}
    return {"results": found.results, "why_not": found.why_not}


def get_memory(rt: Runtime, caller: Caller, args: dict[str, Any]) -> Any:
    return core.get_memory(rt.db, caller, _parse(_IdArgs, args).id)


def update_memory(rt: Runtime, caller: Caller, args: dict[str, Any]) -> Any:
    memory_id = _parse(_IdArgs, {k: v for k, v in args.items() if k == "id"}).id
    changes = {k: v for k, v in args.items() if k != "id"}
    if changes.get("expected_version") is None:
        raise InvalidInput("expected_version is required: the version you last read "
                           "(get_memory)", field="expected_version")
    patch = _parse(core.MemoryPatch, changes)
    return core.update_memory(rt.db, caller, memory_id, patch, rt.embedder)


def forget(rt: Runtime, caller: Caller, args: dict[str, Any]) -> Any:
    return core.forget(rt.db, caller, _parse(_IdArgs, args).id)


def memory_history(rt: Runtime, caller: Caller, args: dict[str, Any]) -> Any:
    return {"items": history_of(rt.db, caller, _parse(_IdArgs, args).id)}


def list_review(rt: Runtime, caller: Caller, args: dict[str, Any]) -> Any:
    a = _parse(_ReviewListArgs, args)
    if a.path is not None:
        validate_path(a.path)
    items, next_cursor = review.list_candidates(rt.db, caller, path=a.path, cursor=a.cursor,
                                                limit=a.limit)
    return {"items": items, "next_cursor": next_cursor}


class _RuleListArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")
    path: str | None = None


def set_rule(rt: Runtime, caller: Caller, args: dict[str, Any]) -> Any:
    return rules.set_rule(rt.db, caller, _parse(RuleIn, args))


def list_rules(rt: Runtime, caller: Caller, args: dict[str, Any]) -> Any:
    return {"items": rules.list_rules(rt.db, caller, path=_parse(_RuleListArgs, args).path)}


def reflect(rt: Runtime, caller: Caller, args: dict[str, Any]) -> Any:
    return reflection.reflect(rt.db, caller, _parse(reflection.ReflectRequest, args),
                              rt.embedder, rt.reflector)


def consolidate(rt: Runtime, caller: Caller, args: dict[str, Any]) -> Any:
    return reflection.consolidate(rt.db, caller, _parse(reflection.ConsolidateRequest, args),
                                  rt.embedder, rt.reflector)


def review_decision(rt: Runtime, caller: Caller, args: dict[str, Any]) -> Any:
    a = _parse(_ReviewDecisionArgs, args)
    if (a.decision == "merge") != (a.into is not None):
        raise InvalidInput("into is required with merge, and only with merge", field="into")
    if a.decision == "promote":
        return review.promote(rt.db, caller, a.id)
    if a.decision == "merge":
        return review.merge(rt.db, caller, a.id, a.into)
    if a.until is not None and a.decision != "suppress":
        raise InvalidInput("until applies to suppress only", field="until")
    return review.reject(rt.db, caller, a.id, suppress=a.decision == "suppress", until=a.until)


@dataclass(frozen=True)
class Tool:
    name: str
    title: str
    description: str
    input_schema: dict[str, Any]
    run: Callable[[Any, Caller, dict[str, Any]], Any]
    read_only: bool = False
    destructive: bool = False
    idempotent: bool = False


TOOLS: dict[str, Tool] = {t.name: t for t in (
    Tool(
        "remember", "Remember",
        "Remember what the user said: a `statement` (extracted as one user message) or the "
        "conversation's `messages`. strata extracts the durable memories, checks each against "
        "what it holds (a paraphrase reinforces the existing memory, a new value for the same "
        "thing supersedes the old one, kept in history, and a value that was forgotten or "
        "rejected is blocked), waits for that, and answers {receipt_id, status, path, "
        "summary, items: each memory written or refused (outcome, memory_id, content, "
        "reason), not_kept: each clause not kept with its reason (question, hypothetical, "
        "secret, ...)}. `as_is: true` stores a statement verbatim as one memory through the "
        "same checks, with kind, slot, tags, ... (the same answer, without receipt_id). "
        "`wait: false` answers at once with status queued and the receipt_id: what is kept "
        "is not known yet. Secrets (passwords, keys, tokens) are never stored: a secret "
        "clause is not kept and its text is not echoed; a secret statement as_is is refused; "
        "a blocked item never shows the refused value.",
        REMEMBER_SCHEMA, remember,
    ),
    Tool(
        "recall", "Recall",
        "Search the memories this key may read, ranked by relevance (semantic and keyword). "
        "Returns what is currently true unless `include` asks for candidates or history. Each "
        "result has id, content, path, kind, status, score, valid_from, valid_to, tags, "
        "importance and confidence. Filters: paths, kinds, tags, meta, valid_at.",
        RECALL_SCHEMA, recall, read_only=True,
    ),
    Tool(
        "get_memory", "Get a memory",
        "One memory by id, with its current `version` (needed by update_memory), status, "
        "valid time, evidence, tags and meta. A memory this key cannot read answers not_found.",
        ID_SCHEMA, get_memory, read_only=True,
    ),
    Tool(
        "update_memory", "Update a memory",
        "Correct one memory in place: only the fields given change. Requires `expected_version` "
        "(the version you last read); if it changed since, the call fails with version_conflict "
        "and the current version: read it again and retry. Every change bumps the version and "
        "keeps the prior state in memory_history. When something changed in the world (a new "
        "preference), prefer `remember` with the new value: the old one is superseded.",
        UPDATE_SCHEMA, update_memory,
    ),
    Tool(
        "forget", "Forget a memory",
        "Erase one memory for good: it is removed with its content everywhere, and the fact "
        "is blocked from being stored again in this path however it is worded (remember "
        "answers `blocked`, reason `forgotten`); other memories saying it are forgotten with "
        "it. Use it when the user asks you to forget something, not for facts that merely "
        "changed. Forgetting twice answers the same.",
        ID_SCHEMA, forget, destructive=True, idempotent=True,
    ),
    Tool(
        "memory_history", "Memory history",
        "Prior states of one memory, oldest first: version, operation (update or delete), "
        "cause, actor, when, and a snapshot of the fields at that version. Forgotten memories "
        "show erased entries without content.",
        ID_SCHEMA, memory_history, read_only=True,
    ),
    Tool(
        "list_review", "List review candidates",
        "Candidates held back for a decision: new statements that contradict what is current "
        "(for example a user going back to a value they had moved away from). Each item is the "
        "memory plus `contradicts` (the current memories it conflicts with, and why). Page with "
        "next_cursor. Decide with review_decision.",
        LIST_REVIEW_SCHEMA, list_review, read_only=True,
    ),
    Tool(
        "review_decision", "Decide on a review candidate",
        "Decide one candidate from list_review: promote (it is true now; what it contradicts is "
        "superseded), reject (not true), suppress (reject and block the value from coming back "
        "in this path), or merge (it repeats an existing memory given as `into`). Returns the "
        "candidate after the decision; a memory that is not a candidate answers conflict.",
        REVIEW_DECISION_SCHEMA, review_decision,
    ),
    Tool(
        "set_rule", "Set a memory rule",
        "Set the memory rule at a path (owner there): what strata keeps from now on under "
        "that subtree. capture: on, off (nothing stored) or review_only (every new memory a "
        "candidate for review); exclude_categories (health, credentials, finances, "
        "other_people, location) and exclude_patterns (literal text or /regex/) keep matching "
        "statements out; include_categories are kept even where capture is off; instructions "
        "go to the model extractor; retention_days archives older memories. It replaces the "
        "rule at that path (its next version); the most specific rule containing a path "
        "decides there. Use it only when the user asks for such a policy.",
        SET_RULE_SCHEMA, set_rule, idempotent=True,
    ),
    Tool(
        "list_rules", "List memory rules",
        "The memory rules on paths this key can read, in path order: id, path, capture, "
        "exclusions, inclusions, instructions, retention_days, version.",
        LIST_RULES_SCHEMA, list_rules, read_only=True,
    ),
    Tool(
        "reflect", "Reflect on memories",
        "Draw one pattern from what the user has said (around seed_id, or under path) with the "
        "configured model, and store it as a reflection (origin llm_derived) linked to each "
        "memory it rests on. When any of those is superseded, rejected or forgotten, the "
        "reflection is retired or flagged for review with it. Returns {memory, evidence_ids}. "
        "Needs a model (model_unavailable otherwise) and at least two statements to look at.",
        REFLECT_SCHEMA, reflect,
    ),
    Tool(
        "consolidate", "Consolidate memories",
        "Merge several memories that say parts of one thing into one memory (kind summary): "
        "the originals are superseded by it and kept in history. Give the merged `content`, "
        "or let the configured model write it. Returns {memory, superseded_ids}.",
        CONSOLIDATE_SCHEMA, consolidate,
    ),
)}


def call(runtime: Runtime, caller: Caller | None, name: str,
         arguments: dict[str, Any] | None) -> tuple[dict[str, Any], bool]:
    """Run one tool for ``caller``: (JSON object, is_error). Never raises."""
    try:
        tool = TOOLS.get(name)
        if tool is None:
            raise InvalidInput(f"unknown tool {name!r}; tools: {', '.join(TOOLS)}", field="name")
        if caller is None:
            raise Unauthenticated("missing or malformed API key")
        result = tool.run(runtime, caller, dict(arguments or {}))
        if not tool.read_only:  # the caller's reads stay on the writer a while (db.routing)
            runtime.reads.wrote(caller)
        return to_jsonable_python(result), False
    except StrataError as exc:
        return to_jsonable_python(error_body_for(exc)), True
    except ModelCallFailed as exc:
        return error_body("provider_unavailable", f"a model provider failed ({exc.reason})"), True
    except Exception:
        log.exception("mcp tool failed", extra={"tool": name})
        return error_body("internal", "internal error"), True
