"""POST /v1/search behind the HTTP API: the core's `search` router under Mangum."""

from strata.foundation import coldstart

coldstart.begin()  # the collector stays off until init is done: strata.foundation.coldstart
from strata.api.lambda_handler import api_handler

handler = api_handler("search")
coldstart.end()
