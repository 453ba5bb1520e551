"""/v1/ingest: send a conversation, get a receipt."""

from __future__ import annotations

import uuid

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse
from fastapi.encoders import jsonable_encoder

from strata.api.deps import CallerDep
from strata.api.openapi import answers
from strata.ingest import service
from strata.ingest.models import IngestRequest, Receipt

router = APIRouter(prefix="/v1/ingest", tags=["ingest"])


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
