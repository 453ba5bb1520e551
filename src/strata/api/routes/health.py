from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

from strata.audit import failure_count
from strata.db.readiness import readiness
from strata.errors import Unavailable
from strata.providers.embedders import describe
from strata.serving import error_body

router = APIRouter()


@router.get("/healthz")
def healthz(request: Request) -> dict:
    """Liveness: the process answers. It asks nothing of the database (readiness does)."""
    runtime = request.app.state.runtime
    return {
        "status": "ok",
        "runtime": runtime.settings.runtime,
        "embedder": runtime.settings.embedder,
        # provider, model (as stamped on rows), dim, and whether it is the hash default
        "embedding": describe(runtime.settings, runtime.embedder),
        "audit_failures": failure_count(),
    }


@router.get("/readyz")
def readyz(request: Request) -> JSONResponse:
    """Readiness: the database answers, at this code's migration level and embedding
    dimension. 503 with Retry-After names the checks that fail."""
    runtime = request.app.state.runtime
    state = readiness(runtime.database, runtime.settings)
    if state.ready:
        return JSONResponse({"status": "ready", "checks": state.checks})
    return JSONResponse(
        error_body("not_ready", f"not ready: {', '.join(state.failing)}", checks=state.checks),
        503, headers={"Retry-After": str(Unavailable.retry_after_s)},
    )
