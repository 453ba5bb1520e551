"""GET /healthz (liveness) and GET /readyz (readiness) behind the HTTP API, and the API's own
documentation (/openapi.json, /docs, /redoc and their assets): the core's `health` and `docs`
routers under Mangum. The document describes every route of the API, not only these."""

from strata import coldstart

coldstart.begin()  # the collector stays off until init is done: strata.coldstart
from strata.api.lambda_handler import api_handler

handler = api_handler("health", "docs")
coldstart.end()
