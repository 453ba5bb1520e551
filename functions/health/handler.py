"""GET /healthz (liveness) and GET /readyz (readiness) behind the HTTP API: the core's `health`
router under Mangum."""

from strata import coldstart

coldstart.begin()  # the collector stays off until init is done: strata.coldstart
from strata.api.lambda_handler import api_handler

handler = api_handler("health")
coldstart.end()
