"""/v1/review (list candidates; promote, reject, merge) behind the HTTP API: the `review` router."""

from strata.foundation import coldstart

coldstart.begin()  # the collector stays off until init is done: strata.foundation.coldstart
from strata.api.lambda_handler import api_handler

handler = api_handler("review")
coldstart.end()
