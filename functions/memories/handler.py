"""/v1/memories and /v1/memories/{id}/... behind the HTTP API: the core's `memories` router."""

from mangum import Mangum

from strata.api.app import create_app

# Built at import so warm containers reuse it; create_app does not touch the database.
handler = Mangum(create_app(routers=("memories",)), lifespan="off")
