"""The event drain function (functions/events) under moto: the outbox's events go onto the
stack's EventBridge bus with source ``strata`` and detail-type ``memory.<type>``, in order,
without content, each once; a rule on the bus with an SQS target reads them back as an
operator's own rule would."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

import support
from strata.db import get_database
from strata.foundation.config import get_settings

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def aws(monkeypatch):
    from moto import mock_aws

    support.fake_aws_credentials(monkeypatch)
    with mock_aws():
        yield


@pytest.fixture
def drain(db, aws, monkeypatch):
    import boto3

    events = boto3.client("events")
    bus = events.create_event_bus(Name="strata-events")["EventBusArn"]
    sqs = boto3.client("sqs")
    queue = sqs.create_queue(QueueName="strata-events-seen")["QueueUrl"]
    queue_arn = sqs.get_queue_attributes(QueueUrl=queue, AttributeNames=["QueueArn"])[
        "Attributes"]["QueueArn"]
    events.put_rule(Name="all-strata", EventBusName="strata-events",
                    EventPattern=json.dumps({"source": ["strata"]}))
    events.put_targets(Rule="all-strata", EventBusName="strata-events",
                       Targets=[{"Id": "seen", "Arn": queue_arn}])
    monkeypatch.setenv("STRATA_DATABASE_URL", db.url)
    monkeypatch.setenv("STRATA_RUNTIME", "aws")
    monkeypatch.setenv("STRATA_EVENT_BUS_NAME", "strata-events")
    get_settings.cache_clear()
    get_database.cache_clear()
    module = support.load_module("handler_events", ROOT / "functions" / "events" / "handler.py")
    assert bus
    yield module, sqs, queue
    from strata.foundation import logs

    logs.reset()
    get_database().close()
    get_settings.cache_clear()
    get_database.cache_clear()
    sys.modules.pop("handler_events", None)


def received(sqs, queue) -> list[dict]:
    out = []
    while msgs := sqs.receive_message(QueueUrl=queue, MaxNumberOfMessages=10).get("Messages"):
        for m in msgs:
            out.append(json.loads(m["Body"]))
            sqs.delete_message(QueueUrl=queue, ReceiptHandle=m["ReceiptHandle"])
    return out


def test_the_drain_puts_each_event_on_the_bus_once_in_order_without_content(
        drain, client, tenant):
    """Given a memory created, edited and forgotten through HTTP, and twelve more created
    (more than one PutEvents call of ten)
    When the drain function runs (one pass), and again
    Then the bus's rule delivered every event once, in seq order, as source strata with
    detail-type memory.<type> and the tenant's id, no content; the second run puts nothing."""
    module, sqs, queue = drain
    h = tenant.headers
    r = client.post("/v1/memories", headers=h, json={"memories": [
        {"content": "Alice's locker is by the north stairs", "path": "users.alice"}]})
    assert r.status_code == 200, r.text
    mid = r.json()["results"][0]["id"]
    r = client.patch(f"/v1/memories/{mid}", headers=h, json={
        "expected_version": 1, "content": "Alice's locker is by the south stairs"})
    assert r.status_code == 200, r.text
    assert client.post(f"/v1/memories/{mid}/forget", headers=h).status_code == 200
    r = client.post("/v1/memories", headers=h, json={"memories": [
        {"content": f"Shelf {i} holds the {w} binders", "path": "shared.office"}
        for i, w in enumerate("red blue green amber teal plum gray navy gold pink lime rust".split())]})
    assert r.status_code == 200, r.text

    context = support.LambdaContext("strata-events", remaining_ms=5_000)
    first = module.handler({"scheduled_time": "2026-12-05T07:00:00Z"}, context)
    got = received(sqs, queue)
    assert first["put"] == 15 == len(got)
    assert {e["source"] for e in got} == {"strata"}
    assert [e["detail-type"] for e in got[:3]] == [
        "memory.created", "memory.updated", "memory.forgotten"]
    assert [e["detail"]["memory_id"] for e in got[:3]] == [mid] * 3
    assert [int(e["detail"]["cursor"]) for e in got] == sorted(
        int(e["detail"]["cursor"]) for e in got)
    assert {e["detail"]["tenant_id"] for e in got} == {str(tenant.tenant_id)}
    assert "locker" not in json.dumps(got) and "binders" not in json.dumps(got)
    second = module.handler({}, context)
    assert second["put"] == 0 and received(sqs, queue) == []
