"""/mcp behind the HTTP API: MCP over Streamable HTTP (stateless, JSON answers), the `mcp` router.

Mangum runs the app's lifespan around every invocation (lifespan="on"): the MCP session
manager it starts cannot be restarted, so each invocation gets a new one, while the app, its
database pool and the embedder stay warm in the container. With STRATA_INGEST_STATE_MACHINE_ARN
set, `remember` with messages starts one state machine execution per receipt.
"""

from aws_lambda_powertools import Metrics, Tracer
from aws_lambda_powertools.logging import correlation_paths
from mangum import Mangum

from strata import logs
from strata.api.app import create_app

# botocore patched: StartExecution gets a subsegment and carries the trace header, so
# the pipeline execution joins this request's trace (about 0.1 s more cold start).
tracer = Tracer(patch_modules=("botocore",))
metrics = Metrics(namespace="strata")  # service: POWERTOOLS_SERVICE_NAME
# Built at import so warm containers reuse it; create_app does not touch the database.
asgi = Mangum(create_app(routers=("mcp",)), lifespan="on")


# Responses carry memory content: never copied into the trace.
@logs.lambda_context(correlation_paths.API_GATEWAY_HTTP)
@metrics.log_metrics(capture_cold_start_metric=True)
@tracer.capture_lambda_handler(capture_response=False)
def handler(event, context):
    return asgi(event, context)
