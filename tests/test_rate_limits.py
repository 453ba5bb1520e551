"""Rate limits over HTTP: per API key, per source address, and failed authentications per
source address (strata.api.ratelimit, the local server), and API Gateway's throttling on AWS
(template.yaml).

Requests go through the whole app (TestClient, or uvicorn on loopback where the source
address matters) with keys minted by strata.auth. Limits are set low per test; time is a
clock the test advances (the limiter takes it as a parameter), or limits that do not refill
within a test, so no assertion depends on how fast the machine is.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import shlex
import subprocess
import tomllib
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from cfnlint.decode import cfn_yaml
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, example, given
from hypothesis import settings as hsettings
from hypothesis import strategies as st

import support
from strata.api.app import create_app
from strata.api.ratelimit import Rate, RateLimiter
from strata.auth import create_key
from strata.foundation.config import Settings

ROOT = Path(__file__).resolve().parents[1]
LIST = "/v1/memories?limit=1"
NEVER = 1e-6  # a refill rate that adds no token within any test (one per ~11 days)


class ManualClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


def limiter(*, key=(NEVER, 1000), address=(NEVER, 1000), auth_failures=(NEVER, 1000),
            clock=None) -> RateLimiter:
    kwargs = {"clock": clock} if clock else {}
    return RateLimiter(key=Rate(*key), address=Rate(*address),
                       auth_failures=Rate(*auth_failures), **kwargs)


def app_with(db, embedder, settings, rate_limiter, routers=("health", "memories", "access")):
    return create_app(list(routers), db=db, embedder=embedder, settings=settings,
                      rate_limiter=rate_limiter)


@pytest.fixture
def second_key(db, tenant, caller_for) -> str:
    """Another key of the tenant's admin principal (same tenant, same access)."""
    return create_key(db, caller_for(tenant.key), principal_id=tenant.principal_id).key


def assert_limited(resp, retry_after: int | None = None) -> int:
    support.assert_error(resp, 429, "rate_limited")
    value = resp.headers["retry-after"]
    assert value.isascii() and value.isdigit() and int(value) >= 1, value
    if retry_after is not None:
        assert int(value) == retry_after
    return int(value)


# ------------------------------------------------------------------------------ per key


def test_a_key_past_its_burst_gets_429_while_another_key_of_the_tenant_still_gets_2xx(
        db, embedder, settings, tenant, second_key):
    """Given a key limit of 3 requests (no refill) and two keys of one principal
    When the first key sends 5 requests
    Then 3 are answered 200 and the rest 429 rate_limited with an integer Retry-After, and
    the second key, from the same address, is still answered 200 (control)."""
    app = app_with(db, embedder, settings, limiter(key=(NEVER, 3)))
    client = TestClient(app, raise_server_exceptions=False)
    first = support.bearer(tenant.key)
    codes = [client.get(LIST, headers=first).status_code for _ in range(5)]
    assert codes == [200, 200, 200, 429, 429]
    assert_limited(client.get(LIST, headers=first))
    assert client.get(LIST, headers=support.bearer(second_key)).status_code == 200
    assert app.state.rate_limiter.counts["refused_key"] == 3


def test_the_key_bucket_refills_at_its_rate_and_retry_after_says_when(
        db, embedder, settings, tenant, second_key):
    """Given a key limit of 2 requests refilled at one every 2 s, on a clock the test moves
    When the key spends both, waits 1 s, then 1 s more
    Then it is refused with Retry-After 2, then 1, then admitted once and refused again;
    the other key is admitted all along (control)."""
    clock = ManualClock()
    app = app_with(db, embedder, settings, limiter(key=(0.5, 2), clock=clock))
    client = TestClient(app, raise_server_exceptions=False)
    key, other = support.bearer(tenant.key), support.bearer(second_key)
    assert [client.get(LIST, headers=key).status_code for _ in range(2)] == [200, 200]
    assert_limited(client.get(LIST, headers=key), retry_after=2)
    clock.advance(1)
    assert_limited(client.get(LIST, headers=key), retry_after=1)
    assert client.get(LIST, headers=other).status_code == 200
    clock.advance(1)
    assert client.get(LIST, headers=key).status_code == 200
    assert_limited(client.get(LIST, headers=key), retry_after=2)
    clock.advance(60)  # a long quiet spell refills only up to the burst
    assert [client.get(LIST, headers=key).status_code for _ in range(3)] == [200, 200, 429]


# -------------------------------------------------------------------------- per address


def test_an_address_past_its_burst_gets_429_while_another_address_still_gets_2xx(
        db, embedder, settings, tenant, second_key):
    """Given an address limit of 3 requests (keys unlimited) and two client addresses
    When the first address sends 3 requests with one key and 1 with another
    Then the 4th is 429 whatever the key, and the second address with the first key is
    answered 200 (control)."""
    app = app_with(db, embedder, settings, limiter(address=(NEVER, 3)))
    here = TestClient(app, raise_server_exceptions=False, client=("192.0.2.1", 50000))
    there = TestClient(app, raise_server_exceptions=False, client=("192.0.2.2", 50000))
    key = support.bearer(tenant.key)
    assert [here.get(LIST, headers=key).status_code for _ in range(3)] == [200, 200, 200]
    assert_limited(here.get(LIST, headers=support.bearer(second_key)))
    assert_limited(here.get("/healthz"))
    assert there.get(LIST, headers=key).status_code == 200
    assert app.state.rate_limiter.counts["refused_address"] == 2


# ------------------------------------------------------------------ failed authentication


@pytest.fixture
def live(db, embedder, settings):
    """Every router served with the given limiter by uvicorn on loopback (as the ``server``
    fixture does, which takes no limiter): its base URL."""
    harness = support.load_module("strata_eval_harness", ROOT / "eval" / "harness.py")
    with contextlib.ExitStack() as stack:
        yield lambda rate_limiter: stack.enter_context(harness.serving(create_app(
            db=db, embedder=embedder, settings=settings, rate_limiter=rate_limiter)))


def test_bad_keys_are_slowed_long_before_good_ones(live, tenant, caller_for, caplog):
    """Given a failed-authentication budget of 3 per address and a key and address budget
    of 10, served by uvicorn (source addresses from X-Forwarded-For, which uvicorn trusts
    from loopback)
    When one address sends a wrong key, a malformed key and no key
    Then those are 401, and everything after from that address is 429 with Retry-After,
    /mcp and a good key included, but not /healthz and /readyz, which take no key; another
    address with a good key gets 10 × 200, more than
    the failure budget (control), before its own 429; the failures are counted and the log
    line names the address and the key's public prefix, never a key."""
    rate_limiter = limiter(key=(NEVER, 10), address=(NEVER, 10), auth_failures=(NEVER, 3))
    url = live(rate_limiter)
    wrong = tenant.key[:-4] + ("AAAA" if not tenant.key.endswith("AAAA") else "BBBB")
    prefix = tenant.key.split("_")[1]
    bad, good = {"X-Forwarded-For": "198.51.100.7"}, {"X-Forwarded-For": "198.51.100.8"}
    caplog.set_level(logging.WARNING, logger="strata.api.ratelimit")
    with httpx.Client(base_url=url) as http:
        attempts = [
            http.get(LIST, headers={**bad, **support.bearer(wrong)}),
            http.get(LIST, headers={**bad, **support.bearer("not-a-key")}),
            http.get(LIST, headers=bad),
        ]
        assert [r.status_code for r in attempts] == [401, 401, 401]
        mcp = http.post("/mcp", headers={**bad, **support.bearer(wrong)},
                        json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
        assert_limited(mcp)
        assert_limited(http.get(LIST, headers={**bad, **support.bearer(tenant.key)}))
        # liveness and readiness from the limited address still answer: a probe that
        # shares an address with a key-guesser must not see the service as down
        assert [http.get(p, headers=bad).status_code for p in ("/healthz", "/readyz")] == [200, 200]
        assert_limited(http.get(LIST, headers=bad))  # and the address is still limited
        control = [http.get(LIST, headers={**good, **support.bearer(tenant.key)}).status_code
                   for _ in range(11)]
    assert control == [200] * 10 + [429]
    assert rate_limiter.counts["auth_failures"] == 3
    assert rate_limiter.counts["refused_auth_failures"] == 3
    lines = [r.getMessage() for r in caplog.records if r.name == "strata.api.ratelimit"]
    assert any("auth_failures" in line and "198.51.100.7" in line for line in lines), lines
    assert any(f"sk_{prefix}_" in line for line in lines), lines
    secret = tenant.key.split("_", 2)[2]
    assert not any(secret in line or secret[:8] in line or wrong in line for line in lines)


def test_a_failed_authentication_over_mcp_counts(live, tenant):
    """Given a failed-authentication budget of 1
    When a wrong key is sent to /mcp
    Then it is refused with 403 (/mcp's answer to a bad key: tests/test_mcp_auth.py), and the
    next request from that address, a good key to /v1, is 429; from another address a good
    key's tool list, a 200 at /mcp, takes nothing from its budget (control)."""
    url = live(limiter(auth_failures=(NEVER, 1)))
    rpc = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    accept = {"Accept": "application/json, text/event-stream"}
    with httpx.Client(base_url=url) as http:
        denied = http.post("/mcp", headers=support.bearer("sk_000000000000_nope"), json=rpc)
        assert denied.status_code == 403 and denied.json()["error"]["data"]["code"] == \
            "unauthenticated", denied.text
        assert_limited(http.get(LIST, headers=support.bearer(tenant.key)))
        other = {"X-Forwarded-For": "198.51.100.9", **accept, **support.bearer(tenant.key)}
        assert [http.post("/mcp", headers=other, json=rpc).status_code
                for _ in range(2)] == [200, 200]


# ------------------------------------------------------------------------------ property


@dataclass
class Outcome:
    key: int
    at: float
    status: int
    retry_after: int | None


RATE, BURST = 0.5, 3


@pytest.fixture
def three_keys(db, tenant, caller_for) -> list[str]:
    caller = caller_for(tenant.key)
    return [tenant.key] + [create_key(db, caller, principal_id=tenant.principal_id).key
                           for _ in range(2)]


@hsettings(max_examples=50, deadline=None, derandomize=True, database=None,
           suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=st.lists(st.tuples(st.integers(0, 2), st.sampled_from([0, 0, 0.25, 0.5, 1, 2.5])),
                      min_size=1, max_size=25))
# Spend the burst, be refused, come back after exactly Retry-After (and one step too early).
@example(steps=[(0, 0)] * 4 + [(0, 2)])
@example(steps=[(1, 0)] * 4 + [(1, 1), (1, 1)])
def test_no_key_gets_more_than_its_budget_in_any_window_whatever_the_interleaving(
        db, embedder, settings, three_keys, steps):
    """Given three keys, each limited to a burst of 3 refilled at one per 2 s, on a moved
    clock
    When requests of the three interleave in any order and at any pace
    Then in every window [t1, t2] a key gets at most 3 + (t2 - t1) / 2 answers 200, and a key
    that waited out its Retry-After is admitted (the limit neither leaks nor sticks)."""
    clock = ManualClock()
    app = app_with(db, embedder, settings, limiter(key=(RATE, BURST), clock=clock))
    client = TestClient(app, raise_server_exceptions=False)
    outcomes: list[Outcome] = []
    for key, pause in steps:
        clock.advance(pause)
        resp = client.get(LIST, headers=support.bearer(three_keys[key]))
        assert resp.status_code in (200, 429), resp.text
        retry = int(resp.headers["retry-after"]) if resp.status_code == 429 else None
        outcomes.append(Outcome(key, clock.now, resp.status_code, retry))
    for key in range(3):
        mine = [o for o in outcomes if o.key == key]
        admitted = [o.at for o in mine if o.status == 200]
        for i, start in enumerate(admitted):
            for end in admitted[i:]:
                inside = sum(1 for t in admitted if start <= t <= end)
                assert inside <= BURST + (end - start) * RATE + 1e-9, (key, start, end, mine)
        for before, after in zip(mine, mine[1:]):
            if before.status == 429 and after.at - before.at >= before.retry_after:
                assert after.status == 200, (key, mine)


# ------------------------------------------------------------------------ configuration


def test_limits_come_from_strata_rate_limit_settings(db, embedder, tenant, monkeypatch):
    """Given STRATA_RATE_LIMIT_KEY_BURST=2 and STRATA_RATE_LIMIT_KEY_PER_S=0.001 (the
    README's setting names)
    When the app is built from the environment's settings
    Then a key's third request is 429; with STRATA_RATE_LIMIT=false as well there is no
    limiter and the same burst is all 200 (control)."""
    monkeypatch.setenv("STRATA_RATE_LIMIT_KEY_BURST", "2")
    monkeypatch.setenv("STRATA_RATE_LIMIT_KEY_PER_S", "0.001")
    built = Settings(embedding_dim=384, home=Path("/nonexistent-strata-home"))
    assert (built.rate_limit_key_burst, built.rate_limit_key_per_s) == (2, 0.001)
    client = TestClient(create_app(["memories"], db=db, embedder=embedder, settings=built),
                        raise_server_exceptions=False)
    assert [client.get(LIST, headers=tenant.headers).status_code for _ in range(3)] == [
        200, 200, 429]

    monkeypatch.setenv("STRATA_RATE_LIMIT", "false")
    off = Settings(embedding_dim=384, home=Path("/nonexistent-strata-home"))
    app = create_app(["memories"], db=db, embedder=embedder, settings=off)
    assert not hasattr(app.state, "rate_limiter")
    client = TestClient(app, raise_server_exceptions=False)
    assert [client.get(LIST, headers=tenant.headers).status_code for _ in range(3)] == [200] * 3


def test_default_limits_slow_failed_authentications_first():
    """The defaults: a failed-authentication budget well below the key and address budgets,
    which stay above what the test suite sends from one address with one key."""
    s = Settings()
    assert s.rate_limit is True
    assert s.rate_limit_auth_failures_burst * 10 <= s.rate_limit_key_burst
    assert s.rate_limit_key_burst <= s.rate_limit_address_burst
    assert s.rate_limit_auth_failures_per_s < s.rate_limit_key_per_s <= s.rate_limit_address_per_s


def test_on_aws_the_app_has_no_limiter_and_never_imports_it():
    """Given STRATA_RUNTIME=aws (a Lambda function: API Gateway throttles)
    When the app is built in a fresh interpreter
    Then no rate limiter is installed and strata.api.ratelimit is not even imported (cold start);
    control: the same build locally has one."""
    code = ("import json, sys\n"
            "from strata.api.app import create_app\n"
            "app = create_app(['health', 'search'])\n"
            "print(json.dumps({'limiter': hasattr(app.state, 'rate_limiter'),"
            " 'imported': 'strata.api.ratelimit' in sys.modules}))")
    env = {k: v for k, v in os.environ.items() if not k.startswith("STRATA_")}
    assert support.run_python(code, env={**env, "STRATA_RUNTIME": "aws"}) == {
        "limiter": False, "imported": False}
    assert support.run_python(code, env=env) == {"limiter": True, "imported": True}


# ------------------------------------------------------------------ AWS: API Gateway


@pytest.fixture(scope="module")
def template() -> dict:
    return cfn_yaml.load(str(ROOT / "template.yaml"))


# The expensive routes (a query embedding per search; a pipeline run per ingest; /mcp's
# tools do both) and the parameters their throttling comes from.
EXPENSIVE = {
    ("SearchFunction", "Search"): ("ApiSearchThrottlingRateLimit",
                                   "ApiSearchThrottlingBurstLimit"),
    ("IngestFunction", "Ingest"): ("ApiIngestThrottlingRateLimit",
                                   "ApiIngestThrottlingBurstLimit"),
    ("McpFunction", "Mcp"): ("ApiSearchThrottlingRateLimit", "ApiSearchThrottlingBurstLimit"),
}


def test_template_throttles_the_api_and_tighter_its_expensive_routes(template):
    """Given template.yaml
    Then the HttpApi's default route settings throttle from the two API parameters; search,
    ingest and /mcp each carry route settings from their own parameters; and by default each
    of those is below the API-wide default (a route setting replaces the default for its
    route, so a higher one would loosen it)."""
    params = template["Parameters"]
    [api] = [r for r in template["Resources"].values() if r["Type"] == "AWS::Serverless::HttpApi"]
    default = api["Properties"]["DefaultRouteSettings"]
    assert default == {"ThrottlingRateLimit": {"Ref": "ApiThrottlingRateLimit"},
                       "ThrottlingBurstLimit": {"Ref": "ApiThrottlingBurstLimit"}}
    for (function, event), (rate, burst) in EXPENSIVE.items():
        settings = template["Resources"][function]["Properties"]["Events"][event]["Properties"][
            "RouteSettings"]
        assert settings == {"ThrottlingRateLimit": {"Ref": rate},
                            "ThrottlingBurstLimit": {"Ref": burst}}, function
        assert 0 < params[rate]["Default"] < params["ApiThrottlingRateLimit"]["Default"]
        assert 0 < params[burst]["Default"] < params["ApiThrottlingBurstLimit"]["Default"]
        assert params[rate]["Default"] <= params[burst]["Default"]


def test_each_samconfig_environment_keeps_the_expensive_routes_below_its_api_limits(template):
    """Given samconfig.toml's dev and prod parameters (the template's defaults where unset)
    Then each per-route limit is at most that environment's API-wide limit."""
    config = tomllib.loads((ROOT / "samconfig.toml").read_text(encoding="utf-8"))
    params = template["Parameters"]
    for env in ("dev", "prod"):
        overrides = config[env]["deploy"]["parameters"]["parameter_overrides"]
        given = dict(item.split("=", 1) for item in shlex.split(overrides))

        def value(name: str) -> float:
            return float(given.get(name, params[name]["Default"]))

        for rate, burst in set(EXPENSIVE.values()):
            assert value(rate) <= value("ApiThrottlingRateLimit"), (env, rate)
            assert value(burst) <= value("ApiThrottlingBurstLimit"), (env, burst)


def test_the_deployed_stage_throttles_the_expensive_route_keys(template):
    """After the SAM transform (what CloudFormation deploys): the API's stage carries the
    default throttling and route settings keyed by exactly the route keys of the search,
    ingest and /mcp routes."""
    sam_python = support.sam_python()
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("STRATA_")},
           "AWS_DEFAULT_REGION": "us-east-1", "SAM_CLI_TELEMETRY": "0"}
    out = subprocess.run([str(sam_python), str(ROOT / "tests" / "infra" / "sam_transform.py"),
                          str(ROOT / "template.yaml")], capture_output=True, text=True, env=env,
                         timeout=120)
    assert out.returncode == 0, out.stderr[-3000:]
    resources = json.loads(out.stdout)["Resources"]
    [stage] = [r["Properties"] for r in resources.values() if r["Type"] == "AWS::ApiGatewayV2::Stage"]
    assert stage["DefaultRouteSettings"]["ThrottlingRateLimit"] == {"Ref": "ApiThrottlingRateLimit"}
    [api] = [r["Properties"] for r in resources.values() if r["Type"] == "AWS::ApiGatewayV2::Api"]
    route_keys = {f"{method.upper().replace('X-AMAZON-APIGATEWAY-ANY-METHOD', 'ANY')} {path}"
                  for path, ops in api["Body"]["paths"].items() for method in ops}
    expected = {}
    for (function, event), (rate, burst) in EXPENSIVE.items():
        props = template["Resources"][function]["Properties"]["Events"][event]["Properties"]
        expected[f"{props['Method'].upper()} {props['Path']}"] = {
            "ThrottlingRateLimit": {"Ref": rate}, "ThrottlingBurstLimit": {"Ref": burst}}
    assert stage["RouteSettings"] == expected
    assert set(expected) <= route_keys, sorted(route_keys)
