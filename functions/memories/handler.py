"""/v1/memories and /v1/memories/{id}/... behind the HTTP API: the core's `memories` router;
/v1/me and /v1/paths (the `browse` router), reads of the same store; and /v1/reflect and
/v1/consolidate (the `reflect` router), memories made from memories."""

from strata.foundation import coldstart

coldstart.begin()  # the collector stays off until init is done: strata.foundation.coldstart
from strata.api.lambda_handler import api_handler

handler = api_handler("memories", "browse", "reflect")
coldstart.end()
