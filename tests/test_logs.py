"""On AWS the strata loggers emit Powertools JSON with the ids passed as extra."""

from __future__ import annotations

import json
import logging

from strata import logs
from strata.config import Settings


def test_aws_runtime_logs_json_with_extra_ids(capsys, monkeypatch):
    """Given the aws runtime
    When a strata module logs with extra ids
    Then stderr carries one JSON object with them (control: locally nothing is reconfigured)."""
    monkeypatch.setattr(logs, "_configured", False)
    root = logging.getLogger("strata")
    saved = (root.handlers[:], root.level, root.propagate)
    try:
        logs.configure(Settings(runtime="local"))
        assert logs._configured is False
        logs.configure(Settings(runtime="aws"))
        logging.getLogger("strata.ingest.pipeline").warning(
            "embedding failed", extra={"receipt_id": "r-1"})
        line = capsys.readouterr().err.strip().splitlines()[-1]
        record = json.loads(line)
        assert record["message"] == "embedding failed"
        assert record["receipt_id"] == "r-1" and record["service"] == "strata"
    finally:
        root.handlers, root.level, root.propagate = saved
        logs._configured = False
