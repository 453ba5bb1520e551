"""Webhooks over the event outbox, through HTTP on the real database, delivered by the real
dispatcher (strata.events.dispatch) to a receiver on 127.0.0.1 that verifies every
signature with the standardwebhooks library."""

from __future__ import annotations

import json
import threading
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from fastapi.testclient import TestClient
from standardwebhooks import Webhook

from strata.api.app import create_app
from strata.events.dispatch import dispatch_once
from strata.events.targets import check_url
from strata.foundation.errors import InvalidInput


class Receiver:
    """Answers each POST with the next scripted status (200 once the script is out) and
    keeps what it received: headers and raw body."""

    def __init__(self, statuses=()) -> None:
        self.script = deque(statuses)
        self.received: list[tuple[dict[str, str], bytes, int]] = []


@contextmanager
def receiving(statuses=()) -> Iterator[tuple[str, Receiver]]:
    receiver = Receiver(statuses)

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802 (http.server's name)
            body = self.rfile.read(int(self.headers["content-length"]))
            status = receiver.script.popleft() if receiver.script else 200
            receiver.received.append((dict(self.headers), body, status))
            self.send_response(status)
            self.send_header("content-length", "0")
            self.end_headers()

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/hook", receiver
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def local(settings):
    return settings.model_copy(update={"webhooks_allow_private": True,
                                       "webhook_backoff_base_s": 0.0,
                                       "webhook_max_failures": 3})


@pytest.fixture
def web(db, embedder, local):
    with TestClient(create_app(db=db, embedder=embedder, settings=local),
                    raise_server_exceptions=False) as c:
        yield c


def create(web, h, content, path="users.alice"):
    r = web.post("/v1/memories", headers=h, json={"memories": [{"content": content, "path": path}]})
    assert r.status_code == 200, r.text
    return r.json()["results"][0]["id"]


def verified(secret: str, received) -> list[dict]:
    hook = Webhook(secret)
    return [hook.verify(body, headers) for headers, body, _ in received]


def test_deliveries_are_signed_in_order_retried_and_carry_no_content(web, db, tenant, local):
    """Given a webhook on users.alice (types all) whose receiver fails twice, then answers
    200, and a memory created under users.alice, one under users.bob, then the first
    forgotten
    When the dispatcher runs until nothing is due
    Then every delivery verifies with the secret shown at registration; the receiver saw
    the created event three times (two failures, then success: the same webhook-id each
    time), then the forget, and never users.bob's memory (the control: it was written);
    no body holds the content; the delivery log has the two failures and two successes;
    and a further pass delivers nothing again."""
    h = tenant.headers
    with receiving([500, 503]) as (url, receiver):
        r = web.post("/v1/webhooks", headers=h, json={"url": url, "paths": ["users.alice"]})
        assert r.status_code == 201, r.text
        hook = r.json()
        assert hook["secret"].startswith("whsec_")
        alice = create(web, h, "Alice keeps her passport in the blue drawer")
        create(web, h, "Bob keeps his passport at the office", path="users.bob")
        assert web.post(f"/v1/memories/{alice}/forget", headers=h).status_code == 200
        for _ in range(4):
            dispatch_once(db, local)
        got = verified(hook["secret"], receiver.received)
    assert [(p["type"], p["data"]["memory_id"]) for p in got] == [
        ("memory.created", alice)] * 3 + [("memory.forgotten", alice)]
    ids = [headers["webhook-id"] for headers, _, _ in receiver.received]
    assert ids[0] == ids[1] == ids[2] != ids[3]
    assert [s for _, _, s in receiver.received] == [500, 503, 200, 200]
    assert not any(b"passport" in body for _, body, _ in receiver.received)
    log = web.get(f"/v1/webhooks/{hook['id']}/deliveries", headers=h).json()["items"]
    assert [(d["attempt"], d["ok"], d["status"]) for d in reversed(log)] == [
        (1, False, 500), (2, False, 503), (3, True, 200), (1, True, 200)]
    listed = web.get("/v1/webhooks", headers=h).json()["items"]
    assert [w["id"] for w in listed] == [hook["id"]] and "secret" not in listed[0]
    assert listed[0]["after"] == got[-1]["data"]["cursor"] and listed[0]["failures"] == 0


def test_repeated_failure_disables_and_replay_redelivers_with_a_rotated_secret(
        web, db, tenant, local):
    """Given a webhook whose receiver always fails (max failures 3)
    When the dispatcher runs past the limit, then the secret is rotated and the webhook
    replayed from 0 to a receiver that answers
    Then it is disabled after three attempts (no fourth), and after the replay the event
    arrives again, verified with the new secret and not with the old one."""
    h = tenant.headers
    with receiving([500] * 10) as (url, receiver):
        hook = web.post("/v1/webhooks", headers=h, json={
            "url": url, "paths": ["users"], "types": ["created"]}).json()
        create(web, h, "Alice plays the cello")
        for _ in range(5):
            dispatch_once(db, local)
        assert len(receiver.received) == 3
        [state] = web.get("/v1/webhooks", headers=h).json()["items"]
        assert state["disabled_at"] and "3 failed deliveries" in state["disabled_reason"]
        receiver.script.clear()
        rotated = web.post(f"/v1/webhooks/{hook['id']}/rotate", headers=h)
        assert rotated.status_code == 200, rotated.text
        new = rotated.json()["secret"]
        assert new != hook["secret"]
        r = web.post(f"/v1/webhooks/{hook['id']}/replay", headers=h, json={"after": "0"})
        assert r.status_code == 200 and r.json()["disabled_at"] is None, r.text
        dispatch_once(db, local)
        assert len(receiver.received) == 4
        headers, body, status = receiver.received[-1]
    assert status == 200 and Webhook(new).verify(body, headers)["type"] == "memory.created"
    with pytest.raises(Exception):
        Webhook(hook["secret"]).verify(body, headers)


def test_webhooks_need_owner_access_and_a_public_url(client, tenant):
    """Given the default settings (private addresses refused)
    When a webhook is registered to loopback, link-local, private and non-http URLs, and
    one by a key that only writes its path
    Then each URL is a 422 naming `url`, and the narrower key is a 403; the URL check
    passes a public address (the control)."""
    h = tenant.headers
    for url in ("http://127.0.0.1:9/x", "http://169.254.169.254/latest", "http://10.0.0.1/",
                "http://[::1]/", "ftp://example.com/", "http://user:pw@192.0.2.1/",
                "http://localhost/"):
        r = client.post("/v1/webhooks", headers=h, json={"url": url, "paths": ["users"]})
        assert r.status_code == 422, (url, r.text)
        assert r.json()["error"]["field"] == "url", (url, r.text)
    public = [(2, 1, 6, "", ("93.184.215.14", 443))]
    assert check_url("https://hooks.example/x", allow_private=False,
                     resolve=lambda *a, **k: public) == "https://hooks.example/x"
    with pytest.raises(InvalidInput):
        check_url("https://hooks.example/x", allow_private=False,
                  resolve=lambda *a, **k: public + [(2, 1, 6, "", ("10.1.2.3", 443))])
    r = client.post("/v1/keys", headers=h, json={
        "principal_id": str(tenant.principal_id),
        "ceiling": [{"path": "users.alice", "level": "write"}]})
    narrow = {"Authorization": f"Bearer {r.json()['key']}"}
    r = client.post("/v1/webhooks", headers=narrow, json={
        "url": "http://127.0.0.1:9/x", "paths": ["users.alice"]})
    assert r.status_code == 403, r.text
    assert json.loads(r.text)["error"]["field"] == "paths.0"


def test_a_webhook_stops_when_its_key_no_longer_owns_its_paths(web, db, tenant, local):
    """Given a webhook on users.alice registered by a key owning only users.alice, and a
    memory written there
    When that key is revoked and the dispatcher runs, then the root owner replays it
    Then nothing is delivered while the registering key is dead: the webhook is disabled,
    saying why; after the root owner's replay (the control) the event arrives."""
    h = tenant.headers
    r = web.post("/v1/keys", headers=h, json={
        "principal_id": str(tenant.principal_id),
        "ceiling": [{"path": "users.alice", "level": "owner"}]})
    assert r.status_code == 201, r.text
    narrow, narrow_id = {"Authorization": f"Bearer {r.json()['key']}"}, r.json()["id"]
    with receiving() as (url, receiver):
        hook = web.post("/v1/webhooks", headers=narrow, json={
            "url": url, "paths": ["users.alice"]})
        assert hook.status_code == 201, hook.text
        hook = hook.json()
        create(web, h, "Alice waters the fern on Sundays")
        assert web.delete(f"/v1/keys/{narrow_id}", headers=h).status_code == 200
        assert dispatch_once(db, local)["disabled"] == 1
        assert receiver.received == []
        [state] = web.get("/v1/webhooks", headers=h).json()["items"]
        assert state["disabled_at"] and "no longer owns" in state["disabled_reason"]
        r = web.post(f"/v1/webhooks/{hook['id']}/replay", headers=h, json={"after": "0"})
        assert r.status_code == 200, r.text
        assert dispatch_once(db, local)["delivered"] == 1
        [(headers, body, _)] = receiver.received
    assert Webhook(hook["secret"]).verify(body, headers)["type"] == "memory.created"
