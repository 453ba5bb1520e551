"""/v1/review (list candidates; promote, reject, merge) behind the HTTP API: the `review` router."""

from mangum import Mangum

from strata.api.app import create_app

# Built at import so warm containers reuse it; create_app does not touch the database.
handler = Mangum(create_app(routers=("review",)), lifespan="off")
