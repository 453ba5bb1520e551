"""GET /healthz (liveness) and GET /readyz (readiness) behind the HTTP API: the core's `health`
router under Mangum; the console's static page and assets (GET /console, the `console`
router); and the API's own documentation (/openapi.json, /docs, /redoc and their assets, the
`docs` router, whose document describes every route of the API, not only these). Like the
health checks they carry no data and are reached without a key."""

from strata.foundation import coldstart

coldstart.begin()  # the collector stays off until init is done: strata.foundation.coldstart
from strata.api.lambda_handler import api_handler

handler = api_handler("health", "console", "docs")
coldstart.end()
