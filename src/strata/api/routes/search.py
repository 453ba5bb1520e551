"""/v1/search: hybrid retrieval over what the caller may read."""

from __future__ import annotations

from fastapi import APIRouter

from strata import search as core
from strata.api.deps import DB, CallerDep, EmbedderDep

router = APIRouter(prefix="/v1/search", tags=["search"])


@router.post("")
def search(body: core.SearchRequest, db: DB, caller: CallerDep, embedder: EmbedderDep) -> dict:
    return {"results": core.search(db, caller, body, embedder)}
