"""``POST /v1/ingest`` in the core: open (or replay) a receipt, then run or launch the pipeline."""

from __future__ import annotations

import json
import logging
import uuid
from concurrent.futures import ThreadPoolExecutor
from typing import Protocol

from strata.audit import audited
from strata.auth.access import Caller, Level
from strata.db import deadline
from strata.foundation.errors import InvalidInput
from strata.foundation.paths import validate_path
from strata.ingest.models import TERMINAL, IngestRequest, Receipt
from strata.ingest.pipeline import IngestRuntime, run_pipeline
from strata.ingest.receipts import get_receipt, open_receipt

log = logging.getLogger(__name__)


class Launcher(Protocol):
    def start(self, rt: IngestRuntime, receipt_id: uuid.UUID, tenant_id: uuid.UUID) -> str | None:
        """Start the pipeline for a receipt without waiting; return an execution id."""


class ThreadLauncher:
    """Local runtime: the same steps in-process, on a small background pool."""

    def __init__(self, workers: int = 2) -> None:
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="strata-ingest")

    def start(self, rt: IngestRuntime, receipt_id: uuid.UUID, tenant_id: uuid.UUID) -> str | None:
        self._pool.submit(run_pipeline, rt, receipt_id, tenant_id)
        return None

    def drain(self) -> None:
        """Wait for queued pipelines (tests, shutdown)."""
        self._pool.shutdown(wait=True)
        self._pool = ThreadPoolExecutor(max_workers=2, thread_name_prefix="strata-ingest")


class StepFunctionsLauncher:
    """AWS runtime: one state machine execution per receipt. The execution name is the
    receipt id, so a retried start cannot run the pipeline twice."""

    def __init__(self, state_machine_arn: str) -> None:
        self.arn = state_machine_arn
        self._client = None

    def start(self, rt: IngestRuntime, receipt_id: uuid.UUID, tenant_id: uuid.UUID) -> str | None:
        if self._client is None:
            from strata.foundation import aws

            self._client = aws.client("stepfunctions")
        out = self._client.start_execution(
            stateMachineArn=self.arn, name=str(receipt_id),
            input=json.dumps({"receipt_id": str(receipt_id), "tenant_id": str(tenant_id)}),
        )
        return out["executionArn"]


def ingest(rt: IngestRuntime, launcher: Launcher, caller: Caller, req: IngestRequest) -> tuple[Receipt, bool]:
    """Returns (receipt, finished_now). A replayed idempotency key returns the first receipt
    and writes nothing."""
    with audited(rt.db, caller, "write", "ingest.receive") as event:
        path = req.path if req.path is not None else caller.default_path
        if path is None:
            raise InvalidInput("path is required (this key has no default path)", field="path")
        validate_path(path)
        caller.require(path, Level.write)
        receipt, created = open_receipt(rt.db, caller, path, req)
        event.count = len(req.messages)
        if created:
            if req.wait:
                # Processed within the request: its database budget grows with the
                # conversation, as a batch write's does with its items (strata.db.deadline).
                deadline.extend(rt.settings.db_request_deadline_per_item_s * len(req.messages))
                run_pipeline(rt, receipt.id, caller.tenant_id)
            else:
                execution = launcher.start(rt, receipt.id, caller.tenant_id)
                if execution:
                    with rt.db.transaction() as cur:
                        cur.execute("UPDATE ingest_receipts SET execution_id = %s WHERE id = %s",
                                    (execution, receipt.id))
        receipt = get_receipt(rt.db, caller, receipt.id)
    return receipt, receipt.status in TERMINAL


def receipt(rt: IngestRuntime, caller: Caller, receipt_id: uuid.UUID) -> Receipt:
    with audited(rt.db, caller, "read", "ingest.receipt") as event:
        event.count = 1
        return get_receipt(rt.db, caller, receipt_id)


def receipts(
    rt: IngestRuntime, caller: Caller, *, path: str | None = None,
    statuses: list[str] | None = None, cursor: str | None = None, limit: int = 50,
) -> tuple[list[Receipt], str | None]:
    """A page of the receipts the caller can read, newest first."""
    from strata.ingest.receipts import list_receipts

    if path is not None:
        validate_path(path)
    with audited(rt.db, caller, "read", "ingest.list") as event:
        items, next_cursor = list_receipts(rt.db, caller, path=path, statuses=statuses,
                                           cursor=cursor, limit=limit)
        event.count = len(items)
    return items, next_cursor
