"""What `remember` answers, on every surface: the MCP tool, ``Client.remember`` and
``strata remember`` build this one shape, so one input gives one answer
(tests/test_remember_surfaces.py holds the three to it).

Wire shapes and pure functions, like :mod:`strata.search.models`: pydantic and the shape
modules only, so the Python client assembles the answer itself in a client-only install. Who
reads the kept memories' content differs (the MCP tool in-process, the client over HTTP, both
with the caller's own key, so a memory the key cannot read is never shown); what is shown does
not: :func:`to_show` says which memories, :func:`of_receipt` and :func:`of_write` build the
rest.
"""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, Field

from strata.foundation.fields import Tier
from strata.ingest.models import NotKept, ReceiptStatus
from strata.write.models import Outcome

if TYPE_CHECKING:
    from strata.ingest.models import Receipt
    from strata.memories.models import WriteResult

# The answer reads back at most this many memories to show their content; the rest carry
# their ids (a conversation of 1,000 messages should not cost 1,000 reads).
SHOW_CONTENT = 20
# Item outcomes that leave a memory behind (blocked and skipped do not write one).
STORED = frozenset({"created", "reinforced", "merged", "superseded_existing",
                    "stored_as_superseded", "candidate"})
FAILED = frozenset({"llm_failed", "embed_failed", "db_write_failed"})
PENDING = frozenset({"queued", "running"})
# A direct write's status in the receipt's words, so both ways in answer in one vocabulary.
_OUTCOME_OF_WRITE = {"inserted": "created", "reinforced": "reinforced",
                     "superseded_existing": "superseded_existing", "held": "candidate",
                     "blocked": "blocked", "skipped": "skipped"}


def _absent_if_none(value: Any) -> bool:
    return value is None


class RememberedItem(BaseModel):
    """One memory written, matched or refused."""

    outcome: Outcome = Field(description=(
        "`created`, `reinforced` (it repeats a stored memory), `merged`, `superseded_existing` "
        "(it replaced what held its slot), `stored_as_superseded` (an older statement kept as "
        "history), `candidate` (held for review), `blocked` (a forgotten or rejected value, or "
        "a memory rule: nothing stored) or `skipped`."))
    memory_id: uuid.UUID | None = Field(default=None, exclude_if=_absent_if_none, description=(
        "The memory written or matched."))
    content: str | None = Field(default=None, exclude_if=_absent_if_none, description=(
        "What that memory says, read with the caller's key. Absent for a blocked item (a "
        "forgotten or rejected value is never echoed), for a memory the key cannot read, and "
        "past the first 20 memories."))
    reason: str | None = Field(default=None, exclude_if=_absent_if_none, description=(
        "Why, when the outcome needs a reason."))
    related_ids: list[uuid.UUID] = Field(default_factory=list, description=(
        "The memories it superseded, refined or contradicts."))
    version: int | None = Field(default=None, exclude_if=_absent_if_none, description=(
        "The memory's version after this write."))
    tier: Tier | None = Field(default=None, exclude_if=_absent_if_none, description=(
        "Where the memory is now: `short_term` or `long_term`."))
    rule_id: uuid.UUID | None = Field(default=None, exclude_if=_absent_if_none, description=(
        "The memory rule that decided this item, if one did."))
    tombstone_id: uuid.UUID | None = Field(default=None, exclude_if=_absent_if_none, description=(
        "The tombstone of the retired value that blocked it."))


class Remembered(BaseModel):
    """What `remember` kept, and why the rest was not kept."""

    receipt_id: uuid.UUID | None = Field(default=None, exclude_if=_absent_if_none, description=(
        "The ingest receipt (`GET /v1/ingest/{receipt_id}`); absent with `as_is`, which "
        "writes at once."))
    status: ReceiptStatus = Field(description=(
        "`wrote` (something was stored), `meaningful_no_write` (nothing worth a new memory, "
        "or only refused values), `queued` or `running` (not waited for: what is kept is not "
        "known yet), or a failure: `llm_failed`, `embed_failed`, `db_write_failed`."))
    path: str | None = Field(default=None, exclude_if=_absent_if_none, description=(
        "Where the memories go."))
    summary: str = Field(description="One line: what was kept, refused and not kept.")
    items: list[RememberedItem] = Field(default_factory=list, description=(
        "Each memory written or refused, with its content when it stored one."))
    not_kept: list[NotKept] = Field(default_factory=list, description=(
        "Each clause that became no memory, and why (a secret's text is never shown)."))
    notes: list[str] = Field(default_factory=list, description=(
        "What the pipeline wants said (a degraded step, ...)."))
    error: str | None = Field(default=None, exclude_if=_absent_if_none, description=(
        "Why the pipeline failed, for a failed status."))


def to_show(items: Iterable[Any]) -> list[uuid.UUID]:
    """The memories whose content the answer shows: each item's memory once, in order, the
    first SHOW_CONTENT, never a blocked item's."""
    ids = (i.memory_id for i in items if i.memory_id is not None and i.outcome != "blocked")
    return list(dict.fromkeys(ids))[:SHOW_CONTENT]


def of_receipt(receipt: "Receipt", contents: Mapping[uuid.UUID, str]) -> Remembered:
    """The answer of an extraction: the receipt, each item with the content read for it."""
    items = [RememberedItem(
        outcome=i.outcome, memory_id=i.memory_id, reason=i.reason, related_ids=i.related_ids,
        version=i.version, tier=i.tier, rule_id=i.rule_id,
        tombstone_id=getattr(i, "tombstone_id", None),
        content=None if i.outcome == "blocked" else contents.get(i.memory_id),
    ) for i in receipt.items]
    return Remembered(
        receipt_id=receipt.id, status=receipt.status, path=receipt.path,
        summary=_summary(receipt.status, items, receipt.not_kept, receipt.error),
        items=items, not_kept=receipt.not_kept, notes=receipt.notes, error=receipt.error)


def of_write(result: "WriteResult", path: str | None, content: str | None,
             memory_path: str | None = None) -> Remembered:
    """The answer of a statement stored as is: its one write result, with the content and
    path of the memory it landed in (read back; None when nothing was stored)."""
    outcome = _OUTCOME_OF_WRITE.get(result.status, "skipped")
    item = RememberedItem(
        outcome=outcome, memory_id=result.id, reason=result.reason, version=result.version,
        tier=result.tier, rule_id=result.rule_id, tombstone_id=result.tombstone_id,
        content=None if outcome == "blocked" else content)
    summary = {
        "created": "kept as written", "reinforced": "already held: reinforced",
        "superseded_existing": "kept as written; it supersedes what held its slot",
        "candidate": f"held for review as a candidate ({result.reason})",
    }.get(outcome, f"nothing stored: {outcome} ({result.reason})")
    return Remembered(status="wrote" if outcome in STORED else "meaningful_no_write",
                      path=path or memory_path, summary=summary, items=[item])


def _tally(values: list[str]) -> str:
    return ", ".join(f"{n} {v}" for v, n in Counter(values).items())


def _summary(status: str, items: list[RememberedItem], not_kept: list[NotKept],
             error: str | None) -> str:
    if status in PENDING:
        return (f"{status}: what is kept is not known until extraction finishes (remember "
                "waits for it unless wait is false)")
    if status in FAILED:
        return f"nothing stored: the pipeline failed ({status}): {error or 'no detail'}"
    kept = [i.outcome for i in items if i.outcome in STORED]
    refused = [f"{i.outcome}: {i.reason}" for i in items if i.outcome not in STORED]
    reasons = [n.reason for n in not_kept]
    parts = [f"kept {len(kept)} ({_tally(kept)})" if kept else "nothing stored"]
    if refused:
        parts.append(f"refused {len(refused)} ({'; '.join(refused)})")
    if reasons:
        parts.append(f"not kept {len(reasons)} ({_tally(reasons)})")
    if "secret" in reasons:
        parts.append("secrets are never stored")
    # Storing as written is no way round a secret, nor a blocked (forgotten) value.
    if not kept and (set(reasons) - {"secret"} or not (reasons or items)):
        parts.append("to store the statement exactly as written, remember it with as_is")
    return "; ".join(parts)


__all__ = ["FAILED", "PENDING", "Remembered", "RememberedItem", "SHOW_CONTENT", "STORED",
           "of_receipt", "of_write", "to_show"]
