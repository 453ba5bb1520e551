"""GET /healthz (liveness) and GET /readyz (readiness) behind the HTTP API: the core's `health`
router under Mangum; and the console's static page and assets (GET /console, the `console`
router), which, like the health checks, carry no data and are reached without a key."""

from strata import coldstart

coldstart.begin()  # the collector stays off until init is done: strata.coldstart
from strata.api.lambda_handler import api_handler

handler = api_handler("health", "console")
coldstart.end()
