"""/v1/ingest: send a conversation, get a receipt."""

from __future__ import annotations

import uuid
from typing import Annotated, get_args

from fastapi import APIRouter, Query, Request
from fastapi.responses import JSONResponse
from fastapi.encoders import jsonable_encoder
from pydantic import Field

from strata.api.deps import CallerDep, Cursor
from strata.api.openapi import Page, answers
from strata.errors import InvalidInput
from strata.fields import SPACE_CLASS, MemoryPath
from strata.ingest import service
from strata.ingest.models import IngestRequest, Receipt, ReceiptStatus

router = APIRouter(prefix="/v1/ingest", tags=["ingest"])

# ?status=: receipt statuses, comma-separated or repeated. The schema states the pattern; the
# route checks it itself, so an unknown status is named in the 422.
_STATUS_PIECE = rf"[{SPACE_CLASS}]*({'|'.join(get_args(ReceiptStatus))})?[{SPACE_CLASS}]*"
Statuses = Annotated[str, Field(json_schema_extra={"pattern": rf"^{_STATUS_PIECE}(,{_STATUS_PIECE})*$"})]


@router.post("", response_model=Receipt, responses={
    202: {"model": Receipt, "description": "Accepted: the receipt of a conversation still being "
                                           "processed (read it again at GET /v1/ingest/{id})."},
    **answers(409)}, description=(
    "Without a `path`, the conversation goes to the key's default path; without one, `path` "
    "is required (422)."))
def ingest(body: IngestRequest, request: Request, caller: CallerDep) -> JSONResponse:
    runtime = request.app.state.runtime
    receipt, finished = service.ingest(runtime.ingest, runtime.launcher, caller, body)
    return JSONResponse(jsonable_encoder(receipt), status_code=200 if finished else 202)


@router.get("/{receipt_id}")
def get(receipt_id: uuid.UUID, request: Request, caller: CallerDep) -> Receipt:
    return service.receipt(request.app.state.runtime.ingest, caller, receipt_id)


@router.get("", description=(
    "Receipts of conversations sent to paths the key can read, newest first; `path` keeps "
    "those under it, `status` those of the given statuses (comma-separated or repeated)."))
def list_(
    request: Request, caller: CallerDep, path: MemoryPath | None = None,
    status: Annotated[list[Statuses] | None, Query()] = None, cursor: Cursor = None,
    limit: Annotated[int, Query(ge=1, le=200)] = 50,
) -> Page[Receipt]:
    statuses = None
    if status:
        statuses = [s.strip() for raw in status for s in raw.split(",") if s.strip()]
        for s in statuses:
            if s not in get_args(ReceiptStatus):
                raise InvalidInput(f"unknown status {s!r}; one of: "
                                   f"{', '.join(get_args(ReceiptStatus))}", field="status")
    items, next_cursor = service.receipts(request.app.state.runtime.ingest, caller, path=path,
                                          statuses=statuses or None, cursor=cursor, limit=limit)
    return {"items": items, "next_cursor": next_cursor}
