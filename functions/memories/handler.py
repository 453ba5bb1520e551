"""/v1/memories and /v1/memories/{id}/... behind the HTTP API: the core's `memories` router."""

from strata import coldstart

coldstart.begin()  # the collector stays off until init is done: strata.coldstart
from strata.api.lambda_handler import api_handler

handler = api_handler("memories")
coldstart.end()
