"""CORS: the local server for the origins in STRATA_CORS_ORIGINS (strata.api.cors), and the
same policy in template.yaml's HttpApi CorsConfiguration, which API Gateway applies on AWS.

Requests go through the whole app: the TestClient, and uvicorn on loopback for the preflight
a browser sends.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import httpx
import pytest
from cfnlint.decode import cfn_yaml
from fastapi.testclient import TestClient

import support
from strata.api import cors
from strata.api.app import create_app
from strata.api.ratelimit import Rate, RateLimiter
from strata.foundation.config import Settings

ROOT = Path(__file__).resolve().parents[1]
APP = "https://app.example"
ELSEWHERE = "https://elsewhere.example"
LIST = "/v1/memories?limit=1"


def preflight(origin: str, method: str = "POST", headers: str = "authorization, content-type"):
    return {"Origin": origin, "Access-Control-Request-Method": method,
            "Access-Control-Request-Headers": headers}


def settings_with(origins: str) -> Settings:
    return Settings(embedding_dim=384, home=Path("/nonexistent-strata-home"), cors_origins=origins)


def tight_limiter() -> RateLimiter:
    """One request per address and one failed authentication, never refilled."""
    never = 1e-6
    return RateLimiter(key=Rate(never, 1000), address=Rate(never, 1),
                       auth_failures=Rate(never, 1))


@pytest.fixture
def cors_client(db, embedder):
    def make(origins: str = f"{APP}, https://second.example", rate_limiter=None) -> TestClient:
        app = create_app(db=db, embedder=embedder, settings=settings_with(origins),
                         rate_limiter=rate_limiter)
        return TestClient(app, raise_server_exceptions=False)

    return make


def test_a_preflight_from_a_configured_origin_is_204_with_the_allow_headers(db, embedder):
    """Given STRATA_CORS_ORIGINS with two origins, served by uvicorn
    When a browser preflights POST /v1/search with Authorization and Content-Type, from
    either origin, without a key
    Then each is 204 with no body, its own origin allowed, the API's methods and headers,
    and a 10-minute max age; the same preflight from another origin gets no
    Access-Control-Allow-Origin (control: the configured ones do)."""
    harness = support.load_module("strata_eval_harness", ROOT / "eval" / "harness.py")
    app = create_app(db=db, embedder=embedder,
                     settings=settings_with(f"{APP},https://second.example"))
    with harness.serving(app) as url, httpx.Client(base_url=url) as http:
        for origin in (APP, "https://second.example"):
            r = http.options("/v1/search", headers=preflight(origin))
            assert r.status_code == 204, r.text
            assert r.content == b""
            assert r.headers["access-control-allow-origin"] == origin
            methods = {m.strip() for m in r.headers["access-control-allow-methods"].split(",")}
            assert methods == set(cors.ALLOW_METHODS)
            allowed = {h.strip().lower() for h in r.headers["access-control-allow-headers"].split(",")}
            assert set(cors.ALLOW_HEADERS) <= allowed
            assert r.headers["access-control-max-age"] == str(cors.MAX_AGE)
            assert "access-control-allow-credentials" not in r.headers
        refused = http.options("/v1/search", headers=preflight(ELSEWHERE))
    assert "access-control-allow-origin" not in refused.headers
    support.assert_error(refused, 400, "cors_refused")


def test_a_preflight_asking_for_a_header_the_api_does_not_read_is_refused(cors_client):
    """Given a configured origin
    When it preflights with a request header the API does not accept (X-Custom)
    Then the preflight is refused (400 cors_refused naming headers); control: with
    If-Match, which PATCH /v1/memories/{id} reads, it is 204."""
    client = cors_client()
    refused = client.options("/v1/memories/x", headers=preflight(APP, "PATCH", "x-custom"))
    err = support.assert_error(refused, 400, "cors_refused")
    assert "headers" in err["message"]
    ok = client.options("/v1/memories/x", headers=preflight(APP, "PATCH", "if-match"))
    assert ok.status_code == 204


def test_preflight_is_answered_before_auth_and_rate_limits(cors_client, tenant):
    """Given an address budget of 1 request and a failed-authentication budget of 1
    When the address spends both (a 200, then a 401 is refused as 429 already), then
    preflights
    Then the preflights are still 204 and the limiter counted none of them; control: the
    address's next real request is 429."""
    limiter = tight_limiter()
    client = cors_client(rate_limiter=limiter)
    assert client.get(LIST, headers=tenant.headers).status_code == 200
    assert client.get(LIST, headers=support.bearer("sk_000000000000_wrong")).status_code == 429
    counted = dict(limiter.counts)
    for _ in range(5):
        r = client.options("/v1/ingest", headers=preflight(APP))
        assert r.status_code == 204 and r.headers["access-control-allow-origin"] == APP
    assert dict(limiter.counts) == counted
    limited = client.get(LIST, headers={**tenant.headers, "Origin": APP})
    support.assert_error(limited, 429, "rate_limited")


def test_answers_to_a_configured_origin_carry_cors_headers_even_401_429_and_500(
        cors_client, tenant):
    """Given a configured origin and a one-request failed-authentication budget
    When it sends a good request, hits a route that raises, sends a bad key, then one more
    Then the 200, the guard's JSON 500, the 401 and the 429 each allow that origin, and
    expose ETag and Retry-After to the page; another origin's 200 allows no origin (control)."""
    client = cors_client(rate_limiter=RateLimiter(
        key=Rate(1e-6, 1000), address=Rate(1e-6, 1000), auth_failures=Rate(1e-6, 1)))

    def boom() -> None:
        raise RuntimeError("a bug")

    client.app.add_api_route("/boom", boom)
    origin = {"Origin": APP}
    answers = [
        client.get(LIST, headers={**tenant.headers, **origin}),
        client.get("/boom", headers=origin),
        client.get(LIST, headers={**support.bearer("sk_000000000000_wrong"), **origin}),
        client.get(LIST, headers={**tenant.headers, **origin}),
    ]
    assert [r.status_code for r in answers] == [200, 500, 401, 429]
    support.assert_error(answers[1], 500, "internal")
    for r in answers:
        assert r.headers["access-control-allow-origin"] == APP, r.status_code
        exposed = {h.strip() for h in r.headers["access-control-expose-headers"].split(",")}
        assert {"etag", "retry-after"} <= exposed
    other = cors_client().get(LIST, headers={**tenant.headers, "Origin": ELSEWHERE})
    assert other.status_code == 200
    assert "access-control-allow-origin" not in other.headers


def test_without_configured_origins_there_is_no_cors(db, embedder, tenant):
    """Given no STRATA_CORS_ORIGINS (the default)
    When a page preflights and then calls the API
    Then nothing allows its origin (a browser refuses; agents and servers are unaffected)."""
    client = TestClient(create_app(db=db, embedder=embedder, settings=settings_with("")),
                        raise_server_exceptions=False)
    r = client.options("/v1/search", headers=preflight(APP))
    assert "access-control-allow-origin" not in r.headers and r.status_code != 204
    r = client.get(LIST, headers={**tenant.headers, "Origin": APP})
    assert r.status_code == 200 and "access-control-allow-origin" not in r.headers


def test_origins_come_from_strata_cors_origins(monkeypatch):
    """STRATA_CORS_ORIGINS is a comma-separated list; blanks around the commas do not count."""
    monkeypatch.setenv("STRATA_CORS_ORIGINS", f" {APP} ,https://second.example,, ")
    assert cors.origins(Settings()) == [APP, "https://second.example"]
    monkeypatch.delenv("STRATA_CORS_ORIGINS")
    assert cors.origins(Settings()) == []


# ------------------------------------------------------------------ AWS: API Gateway


def test_template_cors_is_the_local_policy_for_the_parameters_origins():
    """Given template.yaml's HttpApi
    Then CORS is on exactly when CorsAllowedOrigins is set, with those origins and the same
    headers, methods, exposed headers and max age as the local server, without credentials."""
    template = cfn_yaml.load(str(ROOT / "template.yaml"))
    [api] = [r for r in template["Resources"].values() if r["Type"] == "AWS::Serverless::HttpApi"]
    condition, config, absent = api["Properties"]["CorsConfiguration"]["Fn::If"]
    assert template["Conditions"][condition] == {
        "Fn::Not": [{"Fn::Equals": [{"Ref": "CorsAllowedOrigins"}, ""]}]}
    assert absent == {"Ref": "AWS::NoValue"}
    assert config == {
        "AllowOrigins": {"Fn::Split": [",", {"Ref": "CorsAllowedOrigins"}]},
        "AllowHeaders": cors.ALLOW_HEADERS,
        "AllowMethods": cors.ALLOW_METHODS,
        "ExposeHeaders": cors.EXPOSE_HEADERS,
        "MaxAge": cors.MAX_AGE,
    }
    assert template["Parameters"]["CorsAllowedOrigins"]["Default"] == ""


TRANSFORM = """
import json, sys
from samcli.yamlhelper import yaml_parse
from samtranslator.parser.parser import Parser
from samtranslator.translator.translator import Translator
sys.path.insert(0, sys.argv[2])
from sam_transform import URI_PROPERTIES
template = yaml_parse(open(sys.argv[1]).read())
for resource in template["Resources"].values():
    prop = URI_PROPERTIES.get(resource.get("Type"))
    if prop and isinstance(resource.get("Properties", {}).get(prop), str):
        resource["Properties"][prop] = "s3://placeholder-bucket/placeholder-key"
out = Translator(managed_policy_map=None, sam_parser=Parser(), plugins=[]).translate(
    sam_template=template, parameter_values=json.loads(sys.argv[3]),
    get_managed_policy_map=lambda: {})
print(json.dumps(out, default=str))
"""


def test_the_deployed_api_has_the_whole_cors_configuration():
    """After the SAM transform with CorsAllowedOrigins set (what CloudFormation deploys):
    the API's x-amazon-apigateway-cors, under the parameter's condition, holds the origins
    and every other key; SAM drops the others when only AllowOrigins is an intrinsic, which
    this guards against."""
    sam_python = support.sam_python()
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("STRATA_")},
           "AWS_DEFAULT_REGION": "us-east-1", "SAM_CLI_TELEMETRY": "0"}
    params = {"CorsAllowedOrigins": f"{APP},https://second.example"}
    out = subprocess.run([str(sam_python), "-c", TRANSFORM, str(ROOT / "template.yaml"),
                          str(ROOT / "tests" / "infra"), json.dumps(params)],
                         capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 0, out.stderr[-3000:]
    resources = json.loads(out.stdout)["Resources"]
    [api] = [r["Properties"] for r in resources.values() if r["Type"] == "AWS::ApiGatewayV2::Api"]
    condition, config, absent = api["Body"]["x-amazon-apigateway-cors"]["Fn::If"]
    assert condition == "HasCorsOrigins" and absent == {"Ref": "AWS::NoValue"}
    assert config == {
        "allowOrigins": {"Fn::Split": [",", params["CorsAllowedOrigins"]]},
        "allowHeaders": cors.ALLOW_HEADERS,
        "allowMethods": cors.ALLOW_METHODS,
        "exposeHeaders": cors.EXPOSE_HEADERS,
        "maxAge": cors.MAX_AGE,
    }
