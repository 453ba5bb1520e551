"""/mcp behind the HTTP API: MCP over Streamable HTTP (stateless, JSON answers), the `mcp` router.

Mangum runs the app's lifespan around every invocation (lifespan="on"): the MCP session
manager it starts cannot be restarted, so each invocation gets a new one, while the app, its
database pool and the embedder stay warm in the container. With STRATA_INGEST_STATE_MACHINE_ARN
set, `remember` with messages starts one state machine execution per receipt.
"""

from mangum import Mangum

from strata.api.app import create_app

# Built at import so warm containers reuse it; create_app does not touch the database.
handler = Mangum(create_app(routers=("mcp",)), lifespan="on")
