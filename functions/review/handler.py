"""/v1/review (list candidates; promote, reject, merge) behind the HTTP API: the `review` router."""

from aws_lambda_powertools import Metrics, Tracer
from aws_lambda_powertools.logging import correlation_paths
from mangum import Mangum

from strata import logs
from strata.api.app import create_app

# Nothing patched: patching is eager (botocore alone adds about 0.1 s to a cold start)
# and would change library objects only on Lambda, where the tests never run.
tracer = Tracer(auto_patch=False)
metrics = Metrics(namespace="strata")  # service: POWERTOOLS_SERVICE_NAME
# Built at import so warm containers reuse it; create_app does not touch the database.
asgi = Mangum(create_app(routers=("review",)), lifespan="off")


# Responses carry memory content: never copied into the trace.
@logs.lambda_context(correlation_paths.API_GATEWAY_HTTP)
@metrics.log_metrics(capture_cold_start_metric=True)
@tracer.capture_lambda_handler(capture_response=False)
def handler(event, context):
    return asgi(event, context)
