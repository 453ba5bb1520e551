"""/v1/keys, /v1/grants and /v1/principals behind the HTTP API: the `access` router."""

from mangum import Mangum

from strata.api.app import create_app

# Built at import so warm containers reuse it; create_app does not touch the database.
handler = Mangum(create_app(routers=("access",)), lifespan="off")
