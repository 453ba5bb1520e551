"""Administration behind the HTTP API: /v1/keys, /v1/grants, /v1/principals (the `access`
router) and /v1/audit, /v1/audit/verify (the `audit` router). Rarely called and never on an
agent's hot path, so one function (one pool of warm containers) serves both."""

from mangum import Mangum

from strata.api.app import create_app

# Built at import so warm containers reuse it; create_app does not touch the database.
handler = Mangum(create_app(routers=("access", "audit")), lifespan="off")
