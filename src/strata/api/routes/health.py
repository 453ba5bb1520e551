from fastapi import APIRouter, Request

from strata.audit import failure_count

router = APIRouter()


@router.get("/healthz")
def healthz(request: Request) -> dict:
    runtime = request.app.state.runtime
    return {
        "status": "ok",
        "runtime": runtime.settings.runtime,
        "embedder": runtime.settings.embedder,
        "audit_failures": failure_count(),
    }
