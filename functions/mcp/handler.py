"""/mcp behind the HTTP API: MCP over Streamable HTTP (stateless, JSON answers), the `mcp` router.

Mangum runs the app's lifespan around every invocation (lifespan="on"): the MCP session
manager it starts cannot be restarted, so each invocation gets a new one, while the app, its
database pool and the embedder stay warm in the container. With STRATA_INGEST_STATE_MACHINE_ARN
set, `remember` with messages starts one state machine execution per receipt.
"""

from strata.foundation import coldstart

coldstart.begin()  # the collector stays off until init is done: strata.foundation.coldstart
from strata.api.lambda_handler import api_handler

handler = api_handler("mcp", lifespan="on")
coldstart.end()
