"""Structured logs on AWS: the ``strata`` logger hierarchy emits Powertools JSON (service,
level, location, and the ``extra`` ids each call site passes: tenant, receipt, operation).
Call sites never log memory content, query text or keys; this module only sets the format.
Locally the plain stdlib format stays (readable in a terminal)."""

from __future__ import annotations

import logging

from strata.config import Settings

_configured = False


def configure(settings: Settings) -> None:
    global _configured
    if _configured or settings.runtime != "aws":
        return
    from aws_lambda_powertools.logging.formatter import LambdaPowertoolsFormatter

    handler = logging.StreamHandler()
    handler.setFormatter(LambdaPowertoolsFormatter(service="strata", utc=True))
    root = logging.getLogger("strata")
    root.handlers = [handler]
    root.setLevel(settings.log_level)
    root.propagate = False
    _configured = True
