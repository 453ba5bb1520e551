"""Structured logs on AWS: the ``strata`` logger hierarchy emits Powertools JSON (service,
level, location, the Lambda context and the invocation's correlation id, and the ``extra``
ids each call site passes: tenant, receipt, operation). Call sites never log memory content,
query text or keys; this module only sets the format. Locally the plain stdlib format stays
(readable in a terminal).

On AWS one Powertools ``Logger`` (service: the function's ``POWERTOOLS_SERVICE_NAME``) owns
the handler, and the ``strata`` hierarchy logs through that same handler, so the keys
:func:`lambda_context` appends per invocation (``correlation_id``, ``function_request_id``,
``cold_start``) are on every line the core writes too.
"""

from __future__ import annotations

import functools
import logging
import os
from typing import Any

from strata.foundation.config import Settings, get_settings

_logger: Any = None  # the Powertools Logger, once configure() ran on AWS


def configure(settings: Settings) -> None:
    global _logger
    if _logger is not None or settings.runtime != "aws":
        return
    from aws_lambda_powertools import Logger

    service = os.environ.get("POWERTOOLS_SERVICE_NAME") or "strata"
    _logger = Logger(service=service, level=settings.log_level, utc=True,
                     logger_handler=logging.StreamHandler())
    root = logging.getLogger("strata")
    root.handlers = [_logger.registered_handler]
    root.setLevel(settings.log_level)
    root.propagate = False


def reset() -> None:
    """Forget the configuration (tests switch the runtime back and forth)."""
    global _logger
    if _logger is not None:
        from aws_lambda_powertools.logging.logger import LOGGER_ATTRIBUTE_PRECONFIGURED

        _logger.handlers.clear()
        setattr(_logger._logger, LOGGER_ATTRIBUTE_PRECONFIGURED, False)
    _logger = None
    root = logging.getLogger("strata")
    root.handlers, root.propagate = [], True
    root.setLevel(logging.NOTSET)


def lambda_context(correlation_id_path: str | None = None):
    """Decorate a Lambda handler: on AWS, every log line of the invocation carries the Lambda
    context and the correlation id found at ``correlation_id_path`` in the event (a JMESPath,
    as ``aws_lambda_powertools.logging.correlation_paths``); Powertools'
    ``inject_lambda_context``, which never logs the event. Locally it only calls through."""

    def decorate(handler):
        @functools.wraps(handler)
        def invoke(event, context):
            configure(get_settings())
            if _logger is None:
                return handler(event, context)
            inject = _logger.inject_lambda_context(
                correlation_id_path=correlation_id_path, clear_state=True, log_event=False)
            return inject(handler)(event, context)

        return invoke

    return decorate


class NoQueryStrings(logging.Filter):
    """uvicorn's access log without query strings: ``?q=...&path=users.alice`` carries user
    values, the path alone (ids) does not. uvicorn passes the request line's parts as the
    record's args: (client, method, full path, HTTP version, status)."""

    def filter(self, record: logging.LogRecord) -> bool:
        args = record.args
        if isinstance(args, tuple) and len(args) == 5 and isinstance(args[2], str):
            record.args = (args[0], args[1], args[2].split("?", 1)[0], args[3], args[4])
        return True


def uvicorn_log_config(*, stderr: bool = False) -> dict[str, Any]:
    """uvicorn's own logging configuration, with :class:`NoQueryStrings` on its access log;
    ``stderr``: the access log too goes to stderr (``strata dev --json`` keeps stdout for its
    JSON)."""
    import copy

    from uvicorn.config import LOGGING_CONFIG

    config = copy.deepcopy(LOGGING_CONFIG)
    config.setdefault("filters", {})["no_query_strings"] = {"()": NoQueryStrings}
    config["handlers"]["access"]["filters"] = ["no_query_strings"]
    if stderr:
        config["handlers"]["access"]["stream"] = "ext://sys.stderr"
    return config

