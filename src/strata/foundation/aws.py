"""strata's AWS calls: boto3 clients made on first use, with botocore traced by then.

Nothing here imports boto3 or botocore until a client is wanted (~65 ms): the first request
that calls AWS pays for it -- starting the state machine, a Bedrock embedding, a secret read,
or, with IAM database auth, minting the token for the function's first connection -- not
the import, and a deployment without those never loads botocore's client machinery.

:func:`trace_aws_calls` patches botocore for X-Ray once, through the function's Powertools
Tracer (shared configuration), before the first client or secret read: each AWS call then gets
a subsegment and carries the trace header, so a pipeline execution joins the request's trace.
Where tracing is off -- locally, in tests, ``POWERTOOLS_TRACE_DISABLED`` -- the patch does
nothing. Subsegments record the operation, never parameters or responses.
"""

from __future__ import annotations

from functools import cache
from typing import Any


@cache
def trace_aws_calls() -> None:
    """Patch botocore for X-Ray (once per process); a no-op where tracing is disabled."""
    from aws_lambda_powertools import Tracer

    Tracer(auto_patch=False).patch(["botocore"])


def client(service: str, **kwargs: Any) -> Any:
    """``boto3.client(service, **kwargs)`` with botocore traced first."""
    trace_aws_calls()
    import boto3

    return boto3.client(service, **kwargs)
