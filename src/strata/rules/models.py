"""Memory rule shapes: what an owner sends, what a rule is, and what a rule decided."""

from __future__ import annotations

import re
import uuid
from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, WithJsonSchema, model_validator,
)

from strata.foundation.fields import ScopePath, Text, Version, _json_number
from strata.rules.categories import Category

Capture = Literal["on", "off", "review_only"]
MAX_PATTERNS = 32
MAX_PATTERN_LEN = 200
MAX_INSTRUCTIONS = 2000

# A quantified group holding a quantifier or an alternation ("(a+)+", "(\w*x)*",
# "(a|aa)*"): the shapes of catastrophic backtracking, which Python's re cannot bound in
# time. Refused, cheaply and conservatively ("(a|b)*" is refused too: write "[ab]*"),
# rather than run on every write.
_NESTED_QUANTIFIER = re.compile(r"\((?:[^()\\]|\\.)*(?:[+*|]|\{\d*,?\d*\})(?:[^()\\]|\\.)*\)"
                                r"\s*(?:[+*]|\{\d*,?\d*\})")


def _pattern_ok(value: str) -> str:
    """A literal (matched case-insensitively anywhere in the statement) or, written between
    slashes, a regular expression (Python ``re``, case-insensitive): ``/\\bproject x\\b/``."""
    if len(value) > MAX_PATTERN_LEN:
        raise ValueError(f"a pattern is at most {MAX_PATTERN_LEN} characters")
    if not value.strip():
        raise ValueError("a pattern cannot be empty")
    if is_regex(value):
        body = value[1:-1]
        try:
            re.compile(body, re.IGNORECASE)
        except re.error as exc:
            raise ValueError(f"not a regular expression: {exc.msg}") from None
        except (OverflowError, RecursionError):
            raise ValueError("not a regular expression this server can run") from None
        if _NESTED_QUANTIFIER.search(body):
            raise ValueError("a quantified group holding a quantifier or an alternation can "
                             "backtrack catastrophically; write it without nesting")
    return value


def is_regex(pattern: str) -> bool:
    return len(pattern) >= 3 and pattern.startswith("/") and pattern.endswith("/")


# Whether a regex compiles is more than a JSON Schema can say: the schema names the format
# (tests/test_schemathesis.py draws valid patterns for it), the validator decides.
Pattern = Annotated[Text, AfterValidator(_pattern_ok), WithJsonSchema({
    "type": "string", "format": "strata-rule-pattern", "minLength": 1,
    "maxLength": MAX_PATTERN_LEN})]
# Bounds inside the types, so the schema states them (on an optional field they would not).
RetentionDays = Annotated[int, Field(ge=1, le=36500), BeforeValidator(lambda v: _json_number(v))]
Instructions = Annotated[Text, Field(min_length=1, max_length=MAX_INSTRUCTIONS)]


class RuleIn(BaseModel):
    """A rule to set at a path (owner there): it replaces the rule at that path, if any."""

    model_config = ConfigDict(extra="forbid", json_schema_extra={"examples": [
        {"path": "users", "exclude_categories": ["health"]},
        {"path": "users.alice", "capture": "review_only", "retention_days": 365,
         "exclude_patterns": ["/\\bproject [a-z]+ codename\\b/"],
         "instructions": "Keep what Alice says about her work; skip small talk."},
    ]})

    path: ScopePath = Field(description=(
        "The subtree the rule governs (`users`, `users.alice`; `\"\"` is the tenant root). "
        "The most specific rule whose path contains a memory's path decides for it."))
    capture: Capture = Field(default="on", description=(
        "`on`: memories are kept as usual; `off`: nothing is stored under the path; "
        "`review_only`: every new memory is stored as a candidate for review."))
    exclude_categories: list[Category] = Field(default_factory=list, max_length=5, description=(
        "Statements touching these categories are not kept (blocked, naming the rule)."))
    exclude_patterns: list[Pattern] = Field(
        default_factory=list, max_length=MAX_PATTERNS, description=(
            "Statements matching any of these are not kept: a literal (case-insensitive "
            "substring) or `/regex/` (Python syntax, case-insensitive; a quantified group "
            "holding a quantifier or an alternation is refused, as is one that does not "
            "compile: 422 naming `exclude_patterns[i]`)."))
    include_categories: list[Category] = Field(default_factory=list, max_length=5, description=(
        "Statements touching these categories are always captured as active memories, even "
        "where `capture` is `off` or `review_only` (exclusions still win). A category both "
        "excluded and included is a 422."))
    instructions: Instructions | None = Field(default=None, description=(
        "Free text handed to the model extractor with every conversation ingested under the "
        "path (the rule extractor does not read it)."))
    retention_days: RetentionDays | None = Field(default=None, description=(
        "Memories under the path older than this are archived by lifecycle (history kept)."))
    expected_version: Version | None = Field(default=None, description=(
        "Compare-and-set: the version of the rule at this path being replaced (409 when it "
        "is not the current one)."))

    @model_validator(mode="after")
    def _unique(self) -> "RuleIn":
        self.exclude_categories = list(dict.fromkeys(self.exclude_categories))
        self.include_categories = list(dict.fromkeys(self.include_categories))
        return self


class Rule(BaseModel):
    """A memory rule as stored (see RuleIn for what each field does)."""

    id: uuid.UUID = Field(description="The rule's id.")
    path: str = Field(description="The subtree the rule governs ('' = the tenant root).")
    capture: Capture = Field(description="on, off or review_only.")
    exclude_categories: list[str] = Field(description="Categories not kept under the path.")
    exclude_patterns: list[str] = Field(description="Literals or /regex/ not kept.")
    include_categories: list[str] = Field(description="Categories always kept as active.")
    instructions: str | None = Field(description="Text handed to the model extractor.")
    retention_days: int | None = Field(description="Age at which lifecycle archives memories.")
    version: int = Field(description="Bumped by every change; history keeps each version.")
    created_at: datetime = Field(description="When the rule was first set at its path.")
    updated_at: datetime = Field(description="When it last changed.")

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> "Rule":
        return cls(**{k: row[k] for k in cls.model_fields})

    def label(self) -> str:
        return f"rule {self.id} at {self.path or '(root)'}"


class RuleVersion(BaseModel):
    """One state of a rule (``set``) or its removal (``delete``), oldest first."""

    version: int = Field(description="The version this entry records.")
    operation: Literal["set", "delete"] = Field(description="set: this state; delete: removed.")
    actor: str | None = Field(description="Who changed it (principal:<id>).")
    changed_at: datetime = Field(description="When.")
    snapshot: dict[str, Any] = Field(description="The rule's fields at this version.")


class RuleDeleted(BaseModel):
    """A rule removed; its history stays readable."""

    id: uuid.UUID = Field(description="The rule's id.")
    deleted: bool = Field(description="Always true.")
    version: int = Field(description="The version that was removed.")
