"""The handler of each HTTP API route-group function (``functions/<group>/handler.py``).

``api_handler("search")`` is the core app with only that group's routers under Mangum,
wrapped the way every strata function is (Powertools): JSON logs carrying the API Gateway
request id as ``correlation_id`` (:func:`strata.foundation.logs.lambda_context`), a ``ColdStart``
metric, and an X-Ray ``## handler`` subsegment that never holds the response -- responses
carry memory content, new keys and the caller's access.

Built at import, so a warm container reuses the app, its database pool and its embedder;
``create_app`` touches neither the network nor the database.

Patching: nothing at import. Patching is eager and botocore alone adds ~65 ms to a cold
start; :mod:`strata.foundation.aws` patches it for X-Ray just before the function's first AWS client
(StartExecution, InvokeModel, an RDS token, a secret read), so every function traces its AWS
calls and only the requests that make one pay for botocore.
"""

from __future__ import annotations

from aws_lambda_powertools import Metrics, Tracer
from aws_lambda_powertools.logging import correlation_paths
from mangum import Mangum

from strata.api.app import create_app
from strata.foundation import logs


def api_handler(*routers: str, lifespan: str = "off"):
    """The Lambda handler serving ``routers``; ``handler.asgi`` is its Mangum adapter."""
    tracer = Tracer(auto_patch=False)
    metrics = Metrics(namespace="strata")  # service: the function's POWERTOOLS_SERVICE_NAME
    asgi = Mangum(create_app(routers=routers), lifespan=lifespan)

    @logs.lambda_context(correlation_paths.API_GATEWAY_HTTP)
    @metrics.log_metrics(capture_cold_start_metric=True)
    @tracer.capture_lambda_handler(capture_response=False)
    def handler(event, context):
        return asgi(event, context)

    handler.asgi = asgi
    return handler
