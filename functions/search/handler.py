"""POST /v1/search behind the HTTP API: the core's `search` router under Mangum."""

from mangum import Mangum

from strata.api.app import create_app

# Built at import so warm containers reuse it; create_app does not touch the database.
handler = Mangum(create_app(routers=("search",)), lifespan="off")
