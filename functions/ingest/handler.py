"""/v1/ingest behind the HTTP API: the core's `ingest` router.

With STRATA_INGEST_STATE_MACHINE_ARN set, POST /v1/ingest opens a receipt, starts one state
machine execution named after it and answers with the queued receipt; GET
/v1/ingest/{receipt_id} polls it. ``"wait": true`` runs the same steps in this function
instead (strata.ingest.service.ingest), so it answers with the final receipt within the
HTTP API's 30 s: meant for small batches, not for bulk imports.
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
asgi = Mangum(create_app(routers=("ingest",)), lifespan="off")


# Responses carry memory content: never copied into the trace.
@logs.lambda_context(correlation_paths.API_GATEWAY_HTTP)
@metrics.log_metrics(capture_cold_start_metric=True)
@tracer.capture_lambda_handler(capture_response=False)
def handler(event, context):
    return asgi(event, context)
