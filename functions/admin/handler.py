"""Administration behind the HTTP API: /v1/keys, /v1/grants, /v1/principals (the `access`
router), /v1/audit, /v1/audit/verify (the `audit` router), /v1/rules (the `rules` router), and the
event feed and webhooks (/v1/events, /v1/webhooks). Rarely called and never on an
agent's hot path, so one function (one pool of warm containers) serves both."""

from strata.foundation import coldstart

coldstart.begin()  # the collector stays off until init is done: strata.foundation.coldstart
from strata.api.lambda_handler import api_handler

handler = api_handler("access", "audit", "rules", "events", "webhooks")
coldstart.end()
