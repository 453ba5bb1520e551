"""/v1/ingest and /v1/review behind the HTTP API: the `ingest` and `review` routers. With
STRATA_INGEST_STATE_MACHINE_ARN set, a request starts one state machine execution per receipt."""

from mangum import Mangum

from strata.api.app import create_app

# Built at import so warm containers reuse it; create_app does not touch the database.
handler = Mangum(create_app(routers=("ingest", "review")), lifespan="off")
