"""Administration behind the HTTP API: /v1/keys, /v1/grants, /v1/principals (the `access`
router) and /v1/audit, /v1/audit/verify (the `audit` router). Rarely called and never on an
agent's hot path, so one function (one pool of warm containers) serves both."""

from aws_lambda_powertools import Tracer
from mangum import Mangum

from strata.api.app import create_app

# Nothing patched: patching is eager (botocore alone adds about 0.1 s to a cold start)
# and would change library objects only on Lambda, where the tests never run.
tracer = Tracer(auto_patch=False)
# Built at import so warm containers reuse it; create_app does not touch the database.
asgi = Mangum(create_app(routers=("access", "audit")), lifespan="off")


# Responses carry new keys (shown once) and audit entries: never copied into the trace.
@tracer.capture_lambda_handler(capture_response=False)
def handler(event, context):
    return asgi(event, context)
