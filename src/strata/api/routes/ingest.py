"""/v1/ingest: send a conversation, get a receipt."""

from __future__ import annotations

import uuid
from typing import Annotated, get_args

from fastapi import APIRouter, Path, Query, Request
from fastapi.responses import JSONResponse
from fastapi.encoders import jsonable_encoder
from pydantic import Field

from strata.api.deps import CallerDep, Cursor, csv_pattern, csv_values
from strata.api.openapi import Page, answers
from strata.foundation.fields import MemoryPath
from strata.ingest import service
from strata.ingest.models import IngestRequest, Receipt, ReceiptStatus

router = APIRouter(prefix="/v1/ingest", tags=["ingest"])

# ?status=: receipt statuses, comma-separated or repeated. The schema states the pattern; the
# route checks it itself, so an unknown status is named in the 422.
Statuses = Annotated[str, Field(json_schema_extra={"pattern": csv_pattern(get_args(ReceiptStatus))})]


@router.post("", operation_id="ingestConversation", status_code=202, response_model=Receipt, responses={
    202: {"description": (
        "The receipt of a conversation still queued or being processed: read it again at "
        "`GET /v1/ingest/{receipt_id}` until its `status` is final.")},
    200: {"model": Receipt, "description": (
        "The receipt of a conversation already processed when the answer is sent: with "
        "`wait: true` (processed within the request), on a repeated `idempotency_key` whose "
        "first request has finished, or when the pipeline finished before the answer.")},
    **answers(409)})
def ingest(body: IngestRequest, request: Request, caller: CallerDep) -> JSONResponse:
    """Ingest a conversation

    strata extracts the durable memories from the user's messages, resolves them against
    what the path already holds (duplicate, refinement, contradiction, correction) and writes
    them; the receipt says what became of each candidate and of each clause not kept.

    The answer is **202** with the receipt while the conversation is still queued or being
    processed (read it again at `GET /v1/ingest/{receipt_id}` until its `status` is final),
    and **200** when it is already finished: with `wait: true`, which processes it within the
    request; when the same `idempotency_key` was sent before and that request has finished
    (nothing is written twice); or when processing happened to finish before the answer.

    Without a `path`, the conversation goes to the key's default path; without one, `path`
    is required (422).
    """
    runtime = request.app.state.runtime
    receipt, finished = service.ingest(runtime.ingest, runtime.launcher, caller, body)
    return JSONResponse(jsonable_encoder(receipt), status_code=200 if finished else 202)


@router.get("/{receipt_id}", operation_id="getIngestReceipt")
def get(receipt_id: Annotated[uuid.UUID, Path(description="The receipt's id.")],
        request: Request, caller: CallerDep) -> Receipt:
    """Read an ingest receipt

    The receipt of one ingest request: its `status` (final once it is not `queued` or
    `running`), what became of each candidate memory, and counts and timings.
    """
    return service.receipt(request.app.state.runtime.ingest, caller, receipt_id)


@router.get("", operation_id="listIngestReceipts")
def list_(
    request: Request, caller: CallerDep,
    path: Annotated[MemoryPath | None, Query(description=(
        "Only receipts of conversations sent under this path."))] = None,
    status: Annotated[list[Statuses] | None, Query(description=(
        "Only receipts in these statuses."))] = None,
    cursor: Cursor = None,
    limit: Annotated[int, Query(ge=1, le=200, description="The most receipts on a page.")] = 50,
) -> Page[Receipt]:
    """List ingest receipts

    Receipts of conversations sent to paths the key can read, newest first; `path` keeps
    those under it, `status` those of the given statuses (comma-separated or repeated).
    """
    statuses = csv_values(status, get_args(ReceiptStatus), "status")
    items, next_cursor = service.receipts(request.app.state.runtime.ingest, caller, path=path,
                                          statuses=statuses, cursor=cursor, limit=limit)
    return {"items": items, "next_cursor": next_cursor}
