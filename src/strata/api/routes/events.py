"""/v1/events: the feed of memory changes (strata.events)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query
from pydantic import BaseModel, Field

from strata.api.deps import DB, AuditCursor, CallerDep, csv_pattern, csv_values
from strata.events import feed as core
from strata.events.models import TYPES, Event
from strata.foundation.fields import MemoryPath

router = APIRouter(prefix="/v1/events", tags=["events"])

Types = Annotated[str, Field(json_schema_extra={"pattern": csv_pattern(TYPES)})]


class EventPage(BaseModel):
    """A page of the feed."""

    items: list[Event] = Field(description="The events, in commit order.")
    next_cursor: str = Field(description=(
        "Pass as `after` to read on: the last event's cursor, or `after` itself when no "
        "event has committed since. Polling with it never misses nor repeats an event."))


@router.get("", operation_id="listEvents")
def list_events(
    db: DB,
    caller: CallerDep,
    after: Annotated[AuditCursor, Query(description=(
        "The `next_cursor` (or an event's `cursor`) to read after; absent: from the oldest "
        "event kept."))] = None,
    path: Annotated[MemoryPath | None, Query(description=(
        "Only events of memories in this path's subtree."))] = None,
    types: Annotated[list[Types] | None, Query(description=(
        "Only events of these types, comma-separated or repeated."))] = None,
    limit: Annotated[int, Query(ge=1, le=1000, description="The most events on a page.")] = 100,
) -> EventPage:
    """Read the event feed

    The changes to memories at paths the key can read, in the order they committed: created,
    reinforced, updated, superseded, held for review, promoted, rejected, deleted, restored,
    forgotten, expired, derived memory retired. An event never carries content; read the
    memory with its id. Resume with `after` = the `next_cursor` of the page before. Events
    are kept for `STRATA_EVENT_RETENTION_DAYS` (30 by default).
    """
    items, next_cursor = core.list_events(
        db, caller, after=int(after or 0), path=path,
        types=csv_values(types, TYPES, "types"), limit=limit)
    return {"items": items, "next_cursor": next_cursor}
