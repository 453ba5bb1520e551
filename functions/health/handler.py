"""GET /healthz behind the HTTP API: the core's `health` router under Mangum."""

from strata.api.lambda_handler import api_handler

handler = api_handler("health")
