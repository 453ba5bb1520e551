"""/v1/reflect and /v1/consolidate: memories made from memories (strata.reflection.reflect). Parse,
call one core function, shape the answer."""

from __future__ import annotations

from fastapi import APIRouter, Request

from strata.api.deps import DB, CallerDep, EmbedderDep
from strata.api.openapi import answers
from strata.reflection import reflect as reflection

router = APIRouter(prefix="/v1", tags=["reflect"])


@router.post("/reflect", operation_id="reflectMemories", responses=answers(404, 409))
def reflect(body: reflection.ReflectRequest, request: Request, db: DB, caller: CallerDep,
            embedder: EmbedderDep) -> reflection.ReflectResult:
    """Draw a reflection from memories.

    Stores one `llm_derived` reflection (kind `reflection`) over active `user_stated`
    memories around `seed_id` or under `path`, with a DERIVED_FROM edge to each memory it
    rests on; when any of them is retired, so is the reflection. 409 `model_unavailable`
    (naming the setting) when no model is configured, 409 `conflict` for a derived seed or
    too little evidence."""
    return reflection.reflect(db, caller, body, embedder, request.app.state.runtime.reflector)


@router.post("/consolidate", operation_id="consolidateMemories", responses=answers(404, 409))
def consolidate(body: reflection.ConsolidateRequest, request: Request, db: DB,
                caller: CallerDep, embedder: EmbedderDep) -> reflection.ConsolidateResult:
    """Merge memories into one.

    One new memory (kind `summary`) with a CONSOLIDATES edge to each original; the originals
    are superseded with the reason. Without `content` the model writes it (409
    `model_unavailable` when none is configured)."""
    return reflection.consolidate(db, caller, body, embedder,
                                  request.app.state.runtime.reflector)
