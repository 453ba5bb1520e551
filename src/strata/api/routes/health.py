from typing import Literal

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field

from strata.api.serving import error_body
from strata.audit import failure_count
from strata.db.readiness import readiness
from strata.foundation.errors import Unavailable
from strata.providers.embedders import describe

router = APIRouter(tags=["health"])


class Embedding(BaseModel):
    provider: str = Field(description=(
        "The embedder (`hash`, `local`, `openai`, `bedrock`), or `store` when STRATA_EMBEDDER "
        "is unset and this process has not read the store's yet (the first request that "
        "embeds does; liveness never asks the database)."))
    model: str | None = Field(description="The model, as stamped on the rows it embeds.")
    dim: int | None = Field(description="The vectors' dimension.")
    default: bool = Field(description=(
        "True when STRATA_EMBEDDER is not set: the store's embedder (recorded in the database; "
        "a new local store's is `local` when installed, else `hash`)."))


class Health(BaseModel):
    status: Literal["ok"] = Field(description="Always `ok`: the process answers.")
    runtime: Literal["local", "aws"] = Field(description="Where it runs.")
    embedder: str = Field(description="`embedding.provider`.")
    embedding: Embedding = Field(description="The embedder in use.")
    audit_failures: int = Field(description=(
        "Audit entries this process failed to write since it started (audit fails open)."))


class Ready(BaseModel):
    status: Literal["ready"] = Field(description="Always `ready`; otherwise the answer is a 503.")
    checks: dict[str, str] = Field(description=(
        "Each check (`database`, `migrations`, `embedding_dim`) and its state, `ok` here."))


@router.get("/healthz", operation_id="checkLiveness")
def healthz(request: Request) -> Health:
    """Liveness

    The process answers. It asks nothing of the database (readiness does) and takes no key.
    """
    runtime = request.app.state.runtime
    # provider, model (as stamped on rows), dim, and whether STRATA_EMBEDDER was left unset
    embedder = runtime.known_embedder
    embedding = (describe(runtime.settings, embedder) if embedder is not None else
                 {"provider": "store", "model": None, "dim": None, "default": True})
    return {
        "status": "ok",
        "runtime": runtime.settings.runtime,
        "embedder": embedding["provider"],
        "embedding": embedding,
        "audit_failures": failure_count(),
    }


@router.get("/readyz", operation_id="checkReadiness", response_model=Ready, responses={503: {"description": (
    "Not ready (not_ready): the error names the failing checks, and `checks` in it gives "
    "every check's state. Retry after Retry-After seconds.")}})
def readyz(request: Request) -> JSONResponse:
    """Readiness

    The database answers, at this code's migration level and embedding dimension. Takes no
    key; a 503 with Retry-After names the checks that fail.
    """
    runtime = request.app.state.runtime
    state = readiness(runtime.database, runtime.settings)
    if state.ready:
        return JSONResponse({"status": "ready", "checks": state.checks})
    return JSONResponse(
        error_body("not_ready", f"not ready: {', '.join(state.failing)}", checks=state.checks),
        503, headers={"Retry-After": str(Unavailable.retry_after_s)},
    )
