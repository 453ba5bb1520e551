from fastapi import APIRouter, Request

from strata.audit import failure_count
from strata.providers.embedders import describe

router = APIRouter()


@router.get("/healthz")
def healthz(request: Request) -> dict:
    runtime = request.app.state.runtime
    return {
        "status": "ok",
        "runtime": runtime.settings.runtime,
        "embedder": runtime.settings.embedder,
        # provider, model (as stamped on rows), dim, and whether it is the hash default
        "embedding": describe(runtime.settings, runtime.embedder),
        "audit_failures": failure_count(),
    }
