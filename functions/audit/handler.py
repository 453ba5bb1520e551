"""/v1/audit and /v1/audit/verify behind the HTTP API: the `audit` router."""

from mangum import Mangum

from strata.api.app import create_app

# Built at import so warm containers reuse it; create_app does not touch the database.
handler = Mangum(create_app(routers=("audit",)), lifespan="off")
