"""On AWS the strata loggers emit Powertools JSON with the ids passed as extra, and a
decorated handler's invocation adds the Lambda context and the correlation id."""

from __future__ import annotations

import json
import logging
from functools import partial

import pytest

from strata.foundation import logs
from strata.foundation.config import Settings, get_settings

import support


LambdaContext = partial(support.LambdaContext, "strata-search")


@pytest.fixture
def fresh_logs():
    logs.reset()
    yield
    logs.reset()


def last_json(capsys) -> dict:
    return json.loads(capsys.readouterr().err.strip().splitlines()[-1])


def test_aws_runtime_logs_json_with_extra_ids(capsys, fresh_logs):
    """Given the aws runtime
    When a strata module logs with extra ids
    Then stderr carries one JSON object with them (control: locally nothing is reconfigured)."""
    logs.configure(Settings(runtime="local"))
    assert logs._logger is None and logging.getLogger("strata").handlers == []
    logs.configure(Settings(runtime="aws"))
    logging.getLogger("strata.ingest.pipeline").warning(
        "embedding failed", extra={"receipt_id": "r-1"})
    record = last_json(capsys)
    assert record["message"] == "embedding failed"
    assert record["receipt_id"] == "r-1" and record["service"] == "strata"


def test_a_decorated_handler_logs_its_correlation_id_on_core_lines(
        capsys, fresh_logs, monkeypatch):
    """Given a handler decorated with lambda_context(requestContext.requestId) on AWS
    When the core logs during the invocation
    Then the line carries the request's id as correlation_id and the Lambda request id, and
    the next invocation carries its own (control: locally nothing is configured)."""
    monkeypatch.setenv("POWERTOOLS_SERVICE_NAME", "search")
    core = logging.getLogger("strata.search.hybrid")

    @logs.lambda_context("requestContext.requestId")
    def handler(event, context):
        core.warning("search slow", extra={"tenant_id": "t-1"})
        return "ok"

    monkeypatch.setenv("STRATA_RUNTIME", "aws")
    get_settings.cache_clear()
    try:
        assert handler({"requestContext": {"requestId": "req-1"}}, LambdaContext()) == "ok"
        record = last_json(capsys)
        assert record["correlation_id"] == "req-1" and record["service"] == "search"
        assert record["function_request_id"] == LambdaContext().aws_request_id
        assert record["tenant_id"] == "t-1" and record["message"] == "search slow"
        handler({"requestContext": {"requestId": "req-2"}}, LambdaContext())
        assert last_json(capsys)["correlation_id"] == "req-2"

        logs.reset()
        monkeypatch.setenv("STRATA_RUNTIME", "local")
        get_settings.cache_clear()
        assert handler({"requestContext": {"requestId": "req-3"}}, LambdaContext()) == "ok"
        assert logs._logger is None
    finally:
        get_settings.cache_clear()
