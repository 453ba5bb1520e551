"""The Lambda handlers in functions/, invoked with real API Gateway HTTP API (v2.0) event
shapes, end to end into the real database: one function per route group (health, memories,
search, ingest, review, admin), the authorizer in front of them, and the migrations custom
resource."""

from __future__ import annotations

import json
import sys
from functools import partial
from pathlib import Path

import pytest

from strata.api.authorizer import set_resolver
from strata.db import get_database
from strata.foundation.config import get_settings

import support

ROOT = Path(__file__).resolve().parents[1]
# The HTTP API route-group functions (functions/<name>/handler.py), as template.yaml routes them.
API_FUNCTIONS = ("health", "memories", "search", "ingest", "review", "admin")


LambdaContext = partial(support.LambdaContext, remaining_ms=30_000)


def http_event(method: str, path: str, *, key: str | None = None, body: dict | None = None,
               query: str = "", authorizer: dict | None = None) -> dict:
    """An HTTP API payload 2.0 event; ``authorizer`` is the Lambda authorizer's context,
    which API Gateway forwards as requestContext.authorizer.lambda."""
    headers = {"host": "abc123.execute-api.us-east-1.amazonaws.com", "user-agent": "pytest"}
    if key:
        headers["authorization"] = f"Bearer {key}"
    if body is not None:
        headers["content-type"] = "application/json"
    return {
        "version": "2.0",
        "routeKey": f"{method} {path}",
        "rawPath": path,
        "rawQueryString": query,
        "headers": headers,
        "requestContext": {
            "accountId": "123456789012", "apiId": "abc123",
            "domainName": "abc123.execute-api.us-east-1.amazonaws.com", "domainPrefix": "abc123",
            "http": {"method": method, "path": path, "protocol": "HTTP/1.1",
                     "sourceIp": "203.0.113.7", "userAgent": "pytest"},
            "requestId": "JKJaXmPLvHcESHA=", "routeKey": f"{method} {path}", "stage": "$default",
            "time": "29/Nov/2026:20:00:00 +0000", "timeEpoch": 1796000000000,
            **({"authorizer": {"lambda": authorizer}} if authorizer is not None else {}),
        },
        "body": json.dumps(body) if body is not None else None,
        "isBase64Encoded": False,
    }


@pytest.fixture
def handlers(db, monkeypatch):
    """Import each function's handler module fresh, configured as the Lambda would be
    (settings from the environment), pointing at this test's database."""
    monkeypatch.setenv("STRATA_DATABASE_URL", db.url)
    monkeypatch.setenv("STRATA_RUNTIME", "aws")
    get_settings.cache_clear()
    get_database.cache_clear()
    set_resolver(None)
    loaded = {}
    for name in API_FUNCTIONS + ("authorizer",):
        loaded[name] = support.load_module(
            f"handler_{name}", ROOT / "functions" / name / "handler.py").handler
    yield loaded
    set_resolver(None)
    _reset_logging()
    get_database().close()
    get_settings.cache_clear()
    get_database.cache_clear()
    for name in list(sys.modules):
        if name.startswith("handler_"):
            del sys.modules[name]


def _reset_logging() -> None:
    """The aws runtime switches the strata loggers to JSON; give later tests the default."""
    from strata.foundation import logs

    logs.reset()


def invoke(handler, event) -> tuple[int, dict]:
    out = handler(event, LambdaContext())
    return out["statusCode"], json.loads(out["body"]) if out.get("body") else {}


def test_health_handler(handlers):
    """Given the health function
    When API Gateway sends GET /healthz without a key
    Then it answers 200 with status ok."""
    status, body = invoke(handlers["health"], http_event("GET", "/healthz"))
    assert status == 200
    assert body["status"] == "ok"
    assert body["runtime"] == "aws"


def test_health_handler_answers_readiness(handlers):
    """Given the health function over the migrated test database
    When API Gateway sends GET /readyz without a key
    Then it answers 200 ready with every check ok (the database answers, at this code's
    migration level and embedding dimension)."""
    status, body = invoke(handlers["health"], http_event("GET", "/readyz"))
    assert (status, body) == (200, {"status": "ready", "checks": {
        "database": "ok", "migrations": "ok", "embedding_dim": "ok"}})


def test_health_handler_serves_the_whole_document_and_its_viewers(handlers):
    """Given the health function (the one template.yaml routes the documentation to)
    When API Gateway sends GET /openapi.json, /docs, /redoc and the viewers' assets, without
         a key
    Then each answers 200: the document describes every route of the API, those of the other
         functions too (control: POST /v1/search, which the search function serves), and the
         JavaScript bundle comes back whole, as text."""
    status, doc = invoke(handlers["health"], http_event("GET", "/openapi.json"))
    assert status == 200 and "post" in doc["paths"]["/v1/search"]
    assert len(doc["paths"]) >= 20
    for page in ("/docs", "/redoc"):
        out = handlers["health"](http_event("GET", page), LambdaContext())
        assert out["statusCode"] == 200 and "/docs/assets/" in out["body"], page
    out = handlers["health"](http_event("GET", "/docs/assets/swagger-ui-bundle.js"),
                             LambdaContext())
    assert out["statusCode"] == 200 and not out["isBase64Encoded"]
    assert len(out["body"]) > 1_000_000 and "SwaggerUIBundle" in out["body"]
    out = handlers["health"](http_event("GET", "/docs/assets/favicon.png"), LambdaContext())
    assert out["statusCode"] == 200 and out["isBase64Encoded"]


def test_memories_handler_round_trip(handlers, tenant):
    """Given the memories function and a tenant key
    When a memory is created, read, patched and listed through API Gateway events
    Then each step answers like the local API and the data is in the database."""
    h = handlers["memories"]
    status, body = invoke(h, http_event(
        "POST", "/v1/memories", key=tenant.key,
        body={"memories": [{"content": "Ship on Thursdays", "path": "agents.release"}]}))
    assert status == 200, body
    memory_id = body["results"][0]["id"]

    status, body = invoke(h, http_event("GET", f"/v1/memories/{memory_id}", key=tenant.key))
    assert (status, body["content"], body["version"]) == (200, "Ship on Thursdays", 1)

    status, body = invoke(h, http_event(
        "PATCH", f"/v1/memories/{memory_id}", key=tenant.key,
        body={"content": "Ship on Wednesdays", "expected_version": 1}))
    assert (status, body["version"]) == (200, 2)

    status, body = invoke(h, http_event("GET", "/v1/memories", key=tenant.key,
                                         query="path=agents"))
    assert status == 200
    assert [m["content"] for m in body["items"]] == ["Ship on Wednesdays"]


def test_memories_handler_errors_keep_the_contract(handlers, tenant):
    """Given the memories function
    When the key is missing, the JSON is broken, or the route belongs to another function
    Then the answers are 401, 400 and 404 with the error body, never a 500."""
    h = handlers["memories"]
    status, body = invoke(h, http_event("GET", "/v1/memories"))
    assert status == 401 and body["error"]["code"] == "unauthenticated"

    event = http_event("POST", "/v1/memories", key=tenant.key, body={})
    event["body"] = "{not json"
    status, body = invoke(h, event)
    assert status == 400 and body["error"]["code"] == "invalid_json"

    status, body = invoke(h, http_event("GET", "/v1/keys", key=tenant.key))
    assert status == 404
    # control: the admin function serves that route
    status, body = invoke(handlers["admin"], http_event("GET", "/v1/keys", key=tenant.key))
    assert status == 200 and len(body["items"]) == 1


def test_admin_handler_verifies_the_chain_written_through_other_functions(handlers, tenant):
    """Given writes made through the memories function
    When the admin function lists the audit log and verifies the chain
    Then it is ok and counts every entry, including those writes."""
    invoke(handlers["memories"], http_event(
        "POST", "/v1/memories", key=tenant.key,
        body={"memories": [{"content": "Prefers dark mode", "path": "users.ann"}]}))
    status, listed = invoke(handlers["admin"], http_event("GET", "/v1/audit", key=tenant.key))
    assert status == 200
    assert "memory.create" in [e["operation"] for e in listed["items"]]
    status, report = invoke(handlers["admin"], http_event("POST", "/v1/audit/verify",
                                                          key=tenant.key))
    assert status == 200
    assert report["ok"] is True
    assert report["checked"] >= len(listed["items"])


def test_search_handler_finds_what_the_memories_handler_stored(handlers, tenant, make_tenant):
    """Given a memory stored through the memories function, and another tenant's memory
    When the search function gets POST /v1/search
    Then it returns the tenant's memory and never the other tenant's."""
    other = make_tenant("globex")
    for owner, content in ((tenant, "The staging database runs PostgreSQL 17"),
                           (other, "The staging database runs PostgreSQL 16")):
        status, _ = invoke(handlers["memories"], http_event(
            "POST", "/v1/memories", key=owner.key,
            body={"memories": [{"content": content, "path": "shared.infra"}]}))
        assert status == 200
    status, body = invoke(handlers["search"], http_event(
        "POST", "/v1/search", key=tenant.key, body={"query": "staging database PostgreSQL"}))
    assert status == 200, body
    contents = [r["content"] for r in body["results"]]
    assert "The staging database runs PostgreSQL 17" in contents  # control: found
    assert "The staging database runs PostgreSQL 16" not in contents
    # the search function serves only search
    status, _ = invoke(handlers["search"], http_event("GET", "/v1/memories", key=tenant.key))
    assert status == 404


def test_ingest_and_review_handlers(handlers, tenant):
    """Given the ingest function without a state machine (the in-process pipeline)
    When API Gateway posts a conversation with wait, then reads the receipt, and the review
    function lists candidates
    Then the receipt is final with its items, the GET returns the same receipt, and the
    review queue answers with a list."""
    status, receipt = invoke(handlers["ingest"], http_event(
        "POST", "/v1/ingest", key=tenant.key,
        body={"path": "users.ann", "wait": True,
              "messages": [{"role": "user", "content": "I prefer PostgreSQL for new projects."}]}))
    assert status in (200, 201), receipt
    assert receipt["status"] == "wrote", receipt
    status, again = invoke(handlers["ingest"], http_event(
        "GET", f"/v1/ingest/{receipt['id']}", key=tenant.key))
    assert (status, again["id"], again["status"]) == (200, receipt["id"], "wrote")
    status, queue = invoke(handlers["review"], http_event("GET", "/v1/review", key=tenant.key))
    assert status == 200 and isinstance(queue["items"], list)
    # control: the review function does not serve ingest
    status, _ = invoke(handlers["review"], http_event("GET", f"/v1/ingest/{receipt['id']}",
                                                      key=tenant.key))
    assert status == 404


def authorize(handlers, event: dict) -> dict:
    """API Gateway's first hop: the authorizer function gets the REQUEST event (payload 2.0)
    built from the same request."""
    from test_authorizer import LambdaContext as AuthorizerContext
    from test_authorizer import authorizer_event

    headers = event["headers"]
    request = authorizer_event(headers.get("authorization"), event["requestContext"]["http"]["method"],
                               event["rawPath"])
    return handlers["authorizer"](request, AuthorizerContext())


def test_requests_pass_the_authorizer_then_reach_the_route_function(handlers, tenant):
    """Given API Gateway's flow (the authorizer first, then the route's function with the
    authorizer's context under requestContext.authorizer.lambda)
    When a request carries the tenant's key, and another carries a wrong key
    Then the first is authorized with the tenant's context and the function answers it;
    the second is denied by the authorizer (API Gateway answers 403 and never calls the
    function), and the function would refuse it too."""
    event = http_event("POST", "/v1/memories", key=tenant.key,
                       body={"memories": [{"content": "Deploys freeze on Fridays",
                                           "path": "agents.release"}]})
    decision = authorize(handlers, event)
    assert decision["isAuthorized"] is True
    assert decision["context"]["tenant_id"] == str(tenant.tenant_id)
    event["requestContext"]["authorizer"] = {"lambda": decision["context"]}
    status, body = invoke(handlers["memories"], event)
    assert status == 200 and body["results"][0]["status"] == "inserted", body

    wrong = http_event("GET", "/v1/memories", key=tenant.key[:-4] + "xxxx")
    assert authorize(handlers, wrong) == {"isAuthorized": False}
    status, body = invoke(handlers["memories"], wrong)
    assert status == 401, body


@pytest.fixture
def response_sink():
    """A loopback HTTP server standing in for CloudFormation's pre-signed response URL."""
    import threading
    from http.server import BaseHTTPRequestHandler, HTTPServer

    received: list[dict] = []

    class Sink(BaseHTTPRequestHandler):
        def do_PUT(self):  # noqa: N802 - http.server's naming
            length = int(self.headers["content-length"])
            received.append(json.loads(self.rfile.read(length)))
            self.send_response(200)
            self.end_headers()

        def log_message(self, *args):
            pass

    server = HTTPServer(("127.0.0.1", 0), Sink)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}/response", received
    server.shutdown()


def custom_resource_event(request_type: str, url: str) -> dict:
    return {
        "RequestType": request_type, "ResponseURL": url,
        "StackId": "arn:aws:cloudformation:us-east-1:123456789012:stack/strata-dev/1",
        "RequestId": "5d478078-13e9-baf0-464a-7ef285ecc786", "LogicalResourceId": "DbMigrations",
        "ResourceType": "Custom::DbMigrations", "ResourceProperties": {"ServiceToken": "arn"},
    }


def test_migrate_custom_resource_applies_migrations(empty_db_url, response_sink, monkeypatch):
    """Given an empty database and the migrate function
    When CloudFormation sends Create, then Update
    Then the first applies every migration and answers SUCCESS, the second applies none."""
    import psycopg

    url, received = response_sink
    monkeypatch.setenv("STRATA_DATABASE_URL", empty_db_url)
    get_settings.cache_clear()
    module = support.load_module("handler_migrate", ROOT / "functions/migrate/handler.py")

    module.handler(custom_resource_event("Create", url), LambdaContext())
    module.handler(custom_resource_event("Update", url), LambdaContext())
    get_settings.cache_clear()

    assert [r["Status"] for r in received] == ["SUCCESS", "SUCCESS"]
    assert received[0]["Data"]["Applied"].startswith("0001_")
    assert received[1]["Data"]["Applied"] == ""
    with psycopg.connect(empty_db_url) as conn:
        assert conn.execute("SELECT count(*) FROM schema_migrations").fetchone()[0] >= 1
        assert conn.execute("SELECT to_regclass('memories')").fetchone()[0] == "memories"


def test_migrate_custom_resource_reports_failure_without_secrets(response_sink, monkeypatch):
    """Given a database URL with a password that cannot be reached
    When CloudFormation sends Create
    Then the function answers FAILED, and the reason names no host, user or password."""
    url, received = response_sink
    monkeypatch.setenv(
        "STRATA_DATABASE_URL",
        "postgresql://strata_admin:hunter2secret@127.0.0.1:1/strata?connect_timeout=1",
    )
    get_settings.cache_clear()
    module = support.load_module("handler_migrate_fail", ROOT / "functions/migrate/handler.py")

    # no time left to retry
    module.handler(custom_resource_event("Create", url), LambdaContext(remaining_ms=1_000))
    get_settings.cache_clear()
    [answer] = received
    assert answer["Status"] == "FAILED"
    for secret in ("hunter2secret", "strata_admin", "127.0.0.1"):
        assert secret not in answer["Reason"]
    assert "OperationalError" in answer["Reason"]


def test_health_handler_serves_the_console_without_a_key(handlers):
    """Given the health function (API Gateway routes /console there without the authorizer)
    When it is sent GET /console and GET /console/console.js without a key
    Then it answers the page and the script with the console's content security policy; an
    unknown asset is the JSON 404."""
    out = handlers["health"](http_event("GET", "/console"), LambdaContext())
    assert out["statusCode"] == 200, out
    headers = {k.lower(): v for k, v in out["headers"].items()}
    assert headers["content-type"].startswith("text/html")
    assert "script-src 'self'" in headers["content-security-policy"]
    assert "console/console.js" in out["body"]
    out = handlers["health"](http_event("GET", "/console/console.js"), LambdaContext())
    assert out["statusCode"] == 200 and "sessionStorage" in out["body"]
    status, body = invoke(handlers["health"], http_event("GET", "/console/missing.js"))
    assert (status, body["error"]["code"]) == (404, "not_found")


def test_memories_handler_serves_me_and_paths(handlers, tenant):
    """Given the memories function (API Gateway routes /v1/me and /v1/paths there)
    When a key asks who it is and which paths it reads, after storing one memory
    Then it is told its access and the path with its count; without a key, 401."""
    h = handlers["memories"]
    status, _ = invoke(h, http_event("POST", "/v1/memories", key=tenant.key, body={
        "memories": [{"content": "Deploys freeze on Fridays", "path": "agents.release"}]}))
    assert status == 200
    status, body = invoke(h, http_event("GET", "/v1/me", key=tenant.key))
    assert (status, body["access"]) == (200, [{"path": "", "level": "owner"}])
    status, body = invoke(h, http_event("GET", "/v1/paths", key=tenant.key))
    assert status == 200
    assert body["items"] == [{"path": "agents.release", "counts": {"active": 1}, "total": 1}]
    status, _ = invoke(h, http_event("GET", "/v1/paths"))
    assert status == 401
