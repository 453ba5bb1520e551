"""Memory rules in the write path: what the rule governing an item's path says about it.

Every entry point that creates memories passes here (``apply.write`` for ingest, direct
create and MCP ``remember``; ``imports.write`` for import), so a rule is obeyed whichever
door a statement comes in by. The rule deciding for an item is the most specific one whose
path contains the item's path (``strata.rules.store.effective``); its parts apply in this
order, the first that speaks deciding:

1. ``exclude_patterns``, then ``exclude_categories``: the item is blocked;
2. ``include_categories``: the item is kept as usual, even where capture is off or
   review-only (an include is the owner saying "always keep these");
3. ``capture``: ``off`` blocks, ``review_only`` holds the item as a candidate (a tombstone
   still blocks first: a rule never lets a retired value back in).

Each decision names the rule (``rule <id> at <path>: ...``) in the item's reason, and its
id in ``rule_id``. The reason names the category or the pattern's index, never the text
that matched.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

import psycopg

from strata.rules import store
from strata.rules.categories import classify
from strata.rules.models import Rule, is_regex


@dataclass(frozen=True)
class RuleDecision:
    action: Literal["block", "hold", "keep"]
    rule_id: uuid.UUID
    reason: str


@lru_cache(maxsize=1024)
def _compiled(pattern: str) -> re.Pattern[str]:
    body = pattern[1:-1] if is_regex(pattern) else re.escape(pattern)
    return re.compile(body, re.IGNORECASE)


def judge(rule: Rule, content: str) -> RuleDecision | None:
    """What ``rule`` decides about a statement; None when it leaves it to the write path."""
    def decided(action, what: str) -> RuleDecision:
        return RuleDecision(action, rule.id, f"{rule.label()}: {what}")

    for i, pattern in enumerate(rule.exclude_patterns):
        if _compiled(pattern).search(content):
            return decided("block", f"excluded (exclude_patterns[{i}])")
    if rule.exclude_categories:
        touched = [c for c in classify(content) if c in rule.exclude_categories]
        if touched:
            return decided("block", f"excluded ({', '.join(touched)})")
    if rule.include_categories and rule.capture != "on":
        wanted = [c for c in classify(content, strong_only=True) if c in rule.include_categories]
        if wanted:
            return decided("keep", f"included ({', '.join(wanted)}) although capture is "
                                   f"{rule.capture}")
    if rule.capture == "off":
        return decided("block", "capture off")
    if rule.capture == "review_only":
        return decided("hold", "review only: held as a candidate")
    return None


def decide(cur: psycopg.Cursor, tenant_id: uuid.UUID,
           items: Sequence[tuple[str, str]]) -> list[RuleDecision | None]:
    """One decision per (path, content), in order (one statement resolves every path's
    rule)."""
    rules = store.effective(cur, tenant_id, [path for path, _ in items])
    return [judge(rules[path], content) if path in rules else None for path, content in items]
