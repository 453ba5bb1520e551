"""The HTTP API Lambda authorizer: API Gateway's REQUEST authorizer events (payload format
2.0) through functions/authorizer/handler.py into the real database, the resolver's TTL
cache on a controllable clock, and the caller the API functions rebuild from the context."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import uuid
from datetime import UTC, datetime, timedelta
from functools import partial
from pathlib import Path

import pytest

from strata.api.authorizer import KeyResolver, caller_from_context, set_resolver, ttl_from_env
from strata.auth import Caller, create_grant, create_key, create_principal, revoke_key
from strata.auth.access import Access, Level
from strata.auth.principals import delete_grant
from strata.db import Database, get_database
from strata.foundation.config import get_settings
from strata.foundation.errors import Unauthenticated

import support

ROOT = Path(__file__).resolve().parents[1]
HANDLER = ROOT / "functions" / "authorizer" / "handler.py"
# A server that is not there: the pool never gets a connection.
UNREACHABLE = "postgresql://postgres@127.0.0.1:1/postgres?connect_timeout=1"


LambdaContext = partial(support.LambdaContext, "strata-authorizer", remaining_ms=5_000,
                        request_id="5b1d6d4e-0d2f-4b7e-9d61-2f7a3c9e1a10")


def authorizer_event(authorization: str | None, method: str = "GET",
                     path: str = "/v1/memories") -> dict:
    """What API Gateway (HTTP API) sends a REQUEST authorizer with payload format 2.0 and
    identity source ``$request.header.Authorization``: header names lowercased."""
    headers = {
        "host": "abc123.execute-api.us-east-1.amazonaws.com",
        "user-agent": "pytest",
        "x-amzn-trace-id": "Root=1-674a1b2c-0746ebee281cfd967db97b64",
        "x-forwarded-for": "203.0.113.7",
        "x-forwarded-proto": "https",
    }
    if authorization is not None:
        headers["authorization"] = authorization
    return {
        "version": "2.0",
        "type": "REQUEST",
        "routeArn": f"arn:aws:execute-api:us-east-1:123456789012:abc123/$default/{method}{path}",
        "identitySource": [authorization] if authorization is not None else [],
        "routeKey": f"{method} {path}",
        "rawPath": path,
        "rawQueryString": "",
        "headers": headers,
        "requestContext": {
            "accountId": "123456789012",
            "apiId": "abc123",
            "domainName": "abc123.execute-api.us-east-1.amazonaws.com",
            "domainPrefix": "abc123",
            "http": {"method": method, "path": path, "protocol": "HTTP/1.1",
                     "sourceIp": "203.0.113.7", "userAgent": "pytest"},
            "requestId": "K3pXbiCvoAMEVbQ=",
            "routeKey": f"{method} {path}",
            "stage": "$default",
            "time": "29/Nov/2026:20:00:00 +0000",
            "timeEpoch": 1796000000000,
        },
    }


def bearer(key: str) -> str:
    return f"Bearer {key}"


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def no_database():
    pytest.fail("the resolver asked for the database although the cache should answer")


class AuthorizerFunction:
    """functions/authorizer/handler.py, loaded fresh as the Lambda loads it on the first
    invocation in the test body (capsys swaps stdout between fixture setup and the test, and
    Powertools binds its stream when the module is imported)."""

    def __init__(self) -> None:
        self._module = None

    @property
    def module(self):
        if self._module is None:
            self._module = support.load_module("handler_authorizer", HANDLER)
        return self._module

    def __call__(self, authorization: str | None) -> dict:
        return self.module.handler(authorizer_event(authorization), LambdaContext())


@pytest.fixture
def authorizer(db, monkeypatch):
    """The authorizer function with its settings from the environment pointing at this
    test's database, and its own Powertools logger (a unique service name: Powertools
    configures a logger once per name)."""
    monkeypatch.setenv("STRATA_DATABASE_URL", db.url)
    monkeypatch.setenv("STRATA_RUNTIME", "aws")
    monkeypatch.setenv("POWERTOOLS_SERVICE_NAME", f"authz-{uuid.uuid4().hex[:8]}")
    monkeypatch.setenv("POWERTOOLS_LOG_LEVEL", "DEBUG")
    get_settings.cache_clear()
    get_database.cache_clear()
    set_resolver(None)
    yield AuthorizerFunction()
    set_resolver(None)
    get_database().close()
    get_settings.cache_clear()
    get_database.cache_clear()
    sys.modules.pop("handler_authorizer", None)


def invoke(function: AuthorizerFunction, authorization: str | None) -> dict:
    return function(authorization)


@pytest.fixture
def alice(db, tenant):
    """A principal with owner on users.alice and read on shared, and a key whose ceiling
    narrows it to write on users.alice and read on shared.docs, with a default path."""
    system = Caller.system(tenant.tenant_id)
    principal = create_principal(db, system, "alice", "user")
    create_grant(db, system, principal.id, "users.alice", "owner")
    shared = create_grant(db, system, principal.id, "shared", "read")
    key = create_key(
        db, system, principal_id=principal.id,
        ceiling=[{"path": "users.alice", "level": "write"}, {"path": "shared.docs", "level": "read"}],
        default_path="users.alice.notes",
    )
    return {"principal_id": principal.id, "key": key, "shared_grant": shared.id}


def test_valid_key_is_authorized_with_its_tenant_and_effective_paths(authorizer, alice, tenant,
                                                                    caller_for, capsys):
    """Given alice's key (ceiling below her grants) and the tenant's root admin key
    When API Gateway asks the authorizer about each
    Then both are authorized with flat string/number context values, alice's access is the
    intersection (write users.alice, read shared.docs) with her default path, the admin's is
    owner on the root, each context rebuilds a Caller equal to authenticate()'s, and neither
    the response nor the logs contain a key."""
    out = invoke(authorizer, bearer(alice["key"].key))
    assert out["isAuthorized"] is True
    ctx = out["context"]
    assert all(isinstance(v, (str, int, bool)) for v in ctx.values()), ctx
    assert ctx["tenant_id"] == str(tenant.tenant_id)
    assert ctx["principal_id"] == str(alice["principal_id"])
    assert ctx["key_id"] == str(alice["key"].id)
    assert sorted(json.loads(ctx["access"])) == [["shared.docs", "read"], ["users.alice", "write"]]
    assert ctx["default_path"] == "users.alice.notes"
    assert caller_from_context(ctx) == caller_for(alice["key"].key)

    admin = invoke(authorizer, bearer(tenant.key))
    assert admin["isAuthorized"] is True
    assert json.loads(admin["context"]["access"]) == [["", "owner"]]
    assert "default_path" not in admin["context"]
    rebuilt = caller_from_context(admin["context"])
    assert rebuilt == caller_for(tenant.key)
    assert rebuilt.can("anything.below", Level.owner)

    logs = capsys.readouterr().out
    assert '"authorized"' in logs  # the debug line was written, so the check below means something
    for key in (alice["key"].key, tenant.key):
        assert key not in json.dumps([out, admin]) and key not in logs
        assert key.split("_", 2)[2] not in logs  # the secret part alone


def test_wrong_revoked_expired_and_missing_keys_are_denied(authorizer, alice, tenant, make_tenant,
                                                           db, caller_for):
    """Given keys that are absent, malformed, of an unknown prefix, with a wrong secret,
    revoked, expired, or held by a disabled principal
    When API Gateway asks the authorizer
    Then each is denied with no context, while a valid key of another tenant asked in the
    same run is allowed with its own tenant."""
    good = alice["key"].key
    revoked = create_key(db, Caller.system(tenant.tenant_id), principal_id=alice["principal_id"])
    revoke_key(db, caller_for(tenant.key), revoked.id)
    expiring = create_key(db, Caller.system(tenant.tenant_id), principal_id=alice["principal_id"],
                          expires_at=datetime.now(UTC) + timedelta(hours=1))
    with db.connection() as conn:
        conn.execute("UPDATE api_keys SET expires_at = now() - interval '1 second' WHERE id = %s",
                     (expiring.id,))
    other = make_tenant("globex")
    bob = create_principal(db, Caller.system(other.tenant_id), "bob", "agent")
    create_grant(db, Caller.system(other.tenant_id), bob.id, "agents.bob", "write")
    bob_key = create_key(db, Caller.system(other.tenant_id), principal_id=bob.id).key
    with db.connection() as conn:
        conn.execute("UPDATE principals SET disabled_at = now() WHERE id = %s", (bob.id,))

    denied = {
        "missing header": None,
        "empty": "",
        "basic scheme": f"Basic {good}",
        "bearer without key": "Bearer ",
        "malformed": "Bearer not-a-strata-key",
        "unknown prefix": bearer("sk_000000000000_" + good.split("_", 2)[2]),
        "wrong secret": bearer(good[:-4] + ("AAAA" if not good.endswith("AAAA") else "BBBB")),
        "revoked": bearer(revoked.key),
        "expired": bearer(expiring.key),
        "disabled principal": bearer(bob_key),
    }
    for label, header in denied.items():
        assert invoke(authorizer, header) == {"isAuthorized": False}, label

    control = invoke(authorizer, bearer(other.key))
    assert control["isAuthorized"] is True
    assert control["context"]["tenant_id"] == str(other.tenant_id)
    assert invoke(authorizer, bearer(good))["isAuthorized"] is True


def test_second_call_is_served_from_the_cache_and_expires_after_the_ttl(db, alice):
    """Given a resolver with a 60 s TTL on a controllable clock
    When the same key is resolved twice within the TTL
    Then the second answer comes without asking for the database (the factory would fail)
    and is the same decision; once the clock passes the TTL the next call looks up again."""
    clock = Clock()
    resolver = KeyResolver(ttl_s=60, clock=clock)
    header = bearer(alice["key"].key)

    first = resolver.resolve(header, db)
    assert first.authorized and not first.cached and resolver.lookups == 1

    clock.now += 59.9
    second = resolver.resolve(header, no_database)
    assert second.authorized and second.cached and resolver.lookups == 1
    assert second.context == first.context

    clock.now += 0.1  # exactly the TTL: expired
    third = resolver.resolve(header, db)
    assert third.authorized and not third.cached and resolver.lookups == 2


def test_revoked_key_keeps_working_until_the_ttl_then_is_denied(db, alice, tenant, caller_for):
    """Given a key resolved (and cached) at t=0 with a 60 s TTL
    When its owner revokes it, and separately a grant behind another key is deleted
    Then until t<60 s the cached answers stand (the documented staleness window), and from
    t=60 s the revoked key is denied and the other key's access no longer holds the path."""
    clock = Clock()
    resolver = KeyResolver(ttl_s=60, clock=clock)
    system = Caller.system(tenant.tenant_id)
    doomed = create_key(db, system, principal_id=alice["principal_id"])
    header = bearer(doomed.key)
    watcher = bearer(alice["key"].key)
    assert resolver.resolve(header, db).authorized
    assert "shared.docs" in caller_from_context(resolver.resolve(watcher, db).context).paths()

    revoke_key(db, caller_for(tenant.key), doomed.id)
    delete_grant(db, caller_for(tenant.key), alice["shared_grant"])
    clock.now += 59
    assert resolver.resolve(header, db).authorized  # stale by design, for < TTL
    assert "shared.docs" in caller_from_context(resolver.resolve(watcher, db).context).paths()

    clock.now += 1
    late = resolver.resolve(header, db)
    assert late.authorized is False and late.reason == "rejected"
    fresh = caller_from_context(resolver.resolve(watcher, db).context)
    assert fresh.paths() == ["users.alice"] and fresh.can("users.alice.x", Level.write)
    assert resolver.lookups == 4


def test_rejections_are_cached_but_outages_are_not(db, alice):
    """Given an unknown key and a database that cannot be reached
    When each is resolved twice
    Then the rejection is answered from the cache the second time, while the outage is a
    deny that is asked again next time, and a valid key is allowed once the database is back."""
    clock = Clock()
    resolver = KeyResolver(ttl_s=60, clock=clock, connect_wait_s=0.3)
    unknown = bearer("sk_0123456789ab_" + "x" * 43)
    assert resolver.resolve(unknown, db).reason == "rejected"
    again = resolver.resolve(unknown, no_database)
    assert again.reason == "rejected" and again.cached and resolver.lookups == 1

    dead = Database(UNREACHABLE, max_size=1)
    try:
        header = bearer(alice["key"].key)
        down = resolver.resolve(header, dead)
        assert (down.authorized, down.reason, down.error) == (False, "unavailable", "PoolTimeout")
        assert down.response() == {"isAuthorized": False}
        back = resolver.resolve(header, db)
        assert back.authorized and not back.cached and resolver.lookups == 3
    finally:
        dead.close()


def test_database_outage_denies_with_one_log_line_and_no_trace(authorizer, alice, db,
                                                                monkeypatch, capsys):
    """Given the authorizer function whose database cannot be reached
    When a request with a valid key arrives
    Then the answer is a plain deny (no exception reaches API Gateway), one error line names
    the failure type and not the key; with the database back the same key is allowed."""
    monkeypatch.setenv("STRATA_DATABASE_URL", UNREACHABLE)
    get_settings.cache_clear()
    get_database.cache_clear()
    set_resolver(KeyResolver(connect_wait_s=0.3))
    key = alice["key"].key

    assert invoke(authorizer, bearer(key)) == {"isAuthorized": False}
    get_database().close()
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.startswith("{")]
    errors = [line for line in lines if line.get("level") == "ERROR"]
    assert len(errors) == 1 and errors[0]["error_type"] == "PoolTimeout", lines
    assert errors[0]["message"] == "database unavailable; denying"
    assert "exception" not in errors[0]
    assert key not in json.dumps(lines)
    denied = [m for m in lines if "_aws" in m and "AuthorizerDenied" in m]  # EMF metrics
    assert [(m["reason"], m["AuthorizerDenied"]) for m in denied] == [("unavailable", [1.0])]

    monkeypatch.setenv("STRATA_DATABASE_URL", db.url)
    get_settings.cache_clear()
    get_database.cache_clear()
    assert invoke(authorizer, bearer(key))["isAuthorized"] is True


def test_misconfigured_function_denies_instead_of_raising(authorizer, alice, monkeypatch, capsys):
    """Given settings that fail validation (a non-numeric embedding dimension)
    When a request with a valid key arrives
    Then the authorizer denies and logs the exception type, never raising to API Gateway."""
    monkeypatch.setenv("STRATA_EMBEDDING_DIM", "many")
    get_settings.cache_clear()
    get_database.cache_clear()
    assert invoke(authorizer, bearer(alice["key"].key)) == {"isAuthorized": False}
    logs = capsys.readouterr().out
    assert "authorizer failed; denying" in logs and "ValidationError" in logs
    assert alice["key"].key not in logs
    monkeypatch.delenv("STRATA_EMBEDDING_DIM")
    get_settings.cache_clear()
    get_database.cache_clear()
    assert invoke(authorizer, bearer(alice["key"].key))["isAuthorized"] is True


def test_cache_is_bounded_and_never_holds_the_key(db, alice, make_tenant):
    """Given a resolver bounded to two entries
    When three keys are resolved
    Then it holds two, the least recently used was evicted (asking again looks up), and no
    entry is keyed by the key or by the SHA-256 stored in api_keys."""
    resolver = KeyResolver(ttl_s=60, max_entries=2, clock=Clock())
    keys = [alice["key"].key, make_tenant().key, make_tenant().key]
    for key in keys:
        assert resolver.resolve(bearer(key), db).authorized
    assert len(resolver) == 2 and resolver.lookups == 3
    assert resolver.resolve(bearer(keys[2]), no_database).cached
    assert resolver.resolve(bearer(keys[0]), db).cached is False and resolver.lookups == 4

    for key in keys:
        stored = hashlib.sha256(key.encode()).digest()
        for digest, (_, decision) in resolver._entries.items():  # the cache's own storage
            assert key.encode() not in digest and digest != stored
            assert key not in json.dumps(decision.context)


def test_ttl_comes_from_the_environment_and_zero_disables_the_cache(db, alice, monkeypatch):
    """Given STRATA_AUTH_CACHE_TTL
    When the process's resolver is built
    Then it takes the TTL from it (60 s when unset); 0 makes every call a lookup; a value out
    of range is refused rather than silently used."""
    assert ttl_from_env() == 60
    monkeypatch.setenv("STRATA_AUTH_CACHE_TTL", "0")
    resolver = KeyResolver(ttl_s=ttl_from_env())
    header = bearer(alice["key"].key)
    assert resolver.resolve(header, db).authorized and resolver.resolve(header, db).authorized
    assert resolver.lookups == 2 and len(resolver) == 0
    monkeypatch.setenv("STRATA_AUTH_CACHE_TTL", "15")
    assert ttl_from_env() == 15
    for bad in ("-1", "86400", "soon"):
        monkeypatch.setenv("STRATA_AUTH_CACHE_TTL", bad)
        with pytest.raises(ValueError):
            ttl_from_env()


def test_caller_from_context_refuses_malformed_contexts():
    """Given contexts that are missing fields, of another version, with bad JSON or an
    unknown level
    When an API function rebuilds its caller from them
    Then each raises Unauthenticated, while the well-formed control rebuilds the caller."""
    tenant_id, principal_id, key_id = uuid.uuid4(), uuid.uuid4(), uuid.uuid4()
    good = {"v": 1, "tenant_id": str(tenant_id), "principal_id": str(principal_id),
            "key_id": str(key_id), "access": '[["users.a","write"],["","read"]]'}
    assert caller_from_context(good, surface="mcp") == Caller(
        tenant_id=tenant_id, principal_id=principal_id, key_id=key_id,
        access=(Access("users.a", Level.write), Access("", Level.read)), surface="mcp",
    )
    bad = [
        {},
        {k: v for k, v in good.items() if k != "tenant_id"},
        {**good, "v": 2},
        {**good, "access": "[[\"users.a\""},
        {**good, "access": '[["users.a","admin"]]'},
        {**good, "access": '[["users.a"]]'},
        {**good, "tenant_id": "not-a-uuid"},
    ]
    for context in bad:
        with pytest.raises(Unauthenticated):
            caller_from_context(context)


def test_authorizer_imports_neither_fastapi_nor_the_database_stack():
    """Given a fresh interpreter
    When the authorizer function's handler module is imported (what a cold start runs)
    Then neither FastAPI, Mangum, pydantic nor psycopg is loaded; the control import of an
    API function's handler in the same way does load FastAPI, so the check can fail."""
    probe = (
        "import importlib.util, sys\n"
        "spec = importlib.util.spec_from_file_location('h', sys.argv[1])\n"
        "spec.loader.exec_module(importlib.util.module_from_spec(spec))\n"
        "print(' '.join(m for m in ('fastapi', 'mangum', 'pydantic', 'psycopg', 'strata.db')"
        " if m in sys.modules))\n"
    )

    def loaded(path: Path) -> set[str]:
        out = subprocess.run([sys.executable, "-c", probe, str(path)], capture_output=True,
                             text=True, check=True, cwd=ROOT)
        return set(out.stdout.split())

    assert loaded(HANDLER) == set()
    assert {"fastapi", "mangum"} <= loaded(ROOT / "functions" / "health" / "handler.py")
