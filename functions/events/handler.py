"""The event drain (EventBridge Scheduler, every minute -> Lambda): the outbox's events onto
the stack's EventBridge bus (strata.events.bridge) and to webhooks (strata.events.dispatch,
the code ``strata dev`` runs on a thread).

A schedule fires at most once a minute, so one invocation keeps draining, a pass a second,
until ``BUDGET_MS`` of it has run: an event reaches the bus and the webhooks within about a
second while the function runs. Its reserved concurrency is 1, so invocations do not overlap
(the cursors' row locks and the webhooks' leases would keep two apart anyway).
"""

from __future__ import annotations

from strata.foundation import coldstart

coldstart.begin()  # the collector stays off until init is done: strata.foundation.coldstart

import logging
import time

import boto3
from aws_lambda_powertools import Metrics, Tracer
from aws_lambda_powertools.metrics import MetricUnit

from strata.db import get_database
from strata.events.bridge import drain_to_bus
from strata.events.dispatch import dispatch_once
from strata.foundation import logs
from strata.foundation.config import get_settings

BUDGET_MS = 50_000  # of a minute's schedule: the next invocation takes over
RESERVE_MS = 10_000  # never start a pass with less left than this
PAUSE_S = 1.0

log = logging.getLogger("strata.events")
metrics = Metrics(namespace="strata", service="events")
tracer = Tracer(auto_patch=False)
_events = None


def events_client():
    global _events
    if _events is None:
        _events = boto3.client("events")
    return _events


@logs.lambda_context("execution_id")
@metrics.log_metrics(capture_cold_start_metric=True)
@tracer.capture_lambda_handler(capture_response=False)
def handler(event, context):
    settings, db = get_settings(), get_database()
    started = context.get_remaining_time_in_millis()
    totals = {"passes": 0, "put": 0, "delivered": 0, "failed": 0}
    while True:
        if settings.event_bus_name:
            totals["put"] += drain_to_bus(db, events_client(), settings.event_bus_name)["put"]
        done = dispatch_once(db, settings)
        totals["delivered"] += done["delivered"]
        totals["failed"] += done["failed"]
        totals["passes"] += 1
        left = context.get_remaining_time_in_millis()
        if started - left >= BUDGET_MS or left < RESERVE_MS + PAUSE_S * 1000:
            break
        time.sleep(PAUSE_S)
    metrics.add_metric(name="EventsPut", unit=MetricUnit.Count, value=totals["put"])
    metrics.add_metric(name="WebhookDeliveries", unit=MetricUnit.Count, value=totals["delivered"])
    metrics.add_metric(name="WebhookFailures", unit=MetricUnit.Count, value=totals["failed"])
    log.info("events drained", extra=totals)
    return totals


coldstart.end()
