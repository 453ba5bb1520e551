"""IAM authentication to RDS Proxy: every new connection signs in with a token minted for
that connect (boto3's generate_db_auth_token, a local SigV4 presign: no network), over TLS.

Real boto3 with fake credentials, and real connects through the pool to the embedded test
PostgreSQL, which trusts local connections and so ignores the password. A connection class
between ours and psycopg's records the parameters psycopg is asked to connect with, then
stands in for the proxy's DNS name: it sends the connect to the test server's Unix socket
(where libpq accepts sslmode=require without TLS), keeping every other parameter.
"""

from __future__ import annotations

import datetime as dt
import json
from urllib.parse import parse_qs, urlsplit

import boto3
import botocore.auth
import psycopg
import pytest
from moto import mock_aws
from psycopg import conninfo

from strata.db import Database
from strata.db.pool import (
    IamAuthConnection,
    _rds_client,
    connection_class,
    database_url,
)
from strata.foundation.config import Settings

PROXY = "strata-dev.proxy-c0ffee123456.us-east-1.rds.amazonaws.com"
T0 = dt.datetime(2026, 11, 29, 20, 0, 0, tzinfo=dt.UTC)


@pytest.fixture
def aws(monkeypatch):
    """Fake credentials and a region, as a Lambda function's environment has them."""
    for name, value in {"AWS_ACCESS_KEY_ID": "AKIAIOSFODNN7EXAMPLE",
                        "AWS_SECRET_ACCESS_KEY": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
                        "AWS_DEFAULT_REGION": "us-east-1"}.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("AWS_SESSION_TOKEN", raising=False)
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    # boto3's default session keeps the credentials it first resolved: one left by an earlier
    # test (with other fake keys) would sign these tokens.
    monkeypatch.setattr(boto3, "DEFAULT_SESSION", None)
    _rds_client.cache_clear()
    yield
    _rds_client.cache_clear()


class Clock:
    """botocore's signing clock, under the test's control."""

    def __init__(self) -> None:
        self.now = T0

    def advance(self, **delta) -> None:
        self.now += dt.timedelta(**delta)


@pytest.fixture
def clock(monkeypatch) -> Clock:
    clock = Clock()
    monkeypatch.setattr(botocore.auth, "get_current_datetime", lambda *a, **k: clock.now)
    return clock


def token_fields(token: str) -> dict[str, str]:
    """The presigned URL's parts: host:port, the DB user, the signing date and region."""
    url = urlsplit("https://" + token)
    query = {k: v[0] for k, v in parse_qs(url.query).items()}
    return {"endpoint": url.netloc, "user": query["DBUser"], "action": query["Action"],
            "date": query["X-Amz-Date"], "expires": query["X-Amz-Expires"],
            "scope": query["X-Amz-Credential"]}


class Recording(psycopg.Connection):
    """Between IamAuthConnection and psycopg: records the parameters psycopg connects with;
    with ``route_to`` set, connects to that socket directory whatever the host is."""

    seen: list[dict] = []
    route_to: str | None = None

    @classmethod
    def connect(cls, conninfo_str: str = "", **kwargs):
        cls.seen.append({**conninfo.conninfo_to_dict(conninfo_str), **kwargs})
        if cls.route_to:
            kwargs.update(host=cls.route_to, port=None)
        return super().connect(conninfo_str, **kwargs)


class RecordedIam(IamAuthConnection, Recording):
    pass


class RecordedPlain(Recording):
    pass


@pytest.fixture
def recorded():
    Recording.seen, Recording.route_to = [], None
    yield Recording.seen
    Recording.seen, Recording.route_to = [], None


@pytest.fixture
def proxy_url(db, recorded) -> str:
    """The test database's URL with the proxy's host name, routed to the test server."""
    params = conninfo.conninfo_to_dict(db.url)
    Recording.route_to = params.pop("host")
    return conninfo.make_conninfo(**{**params, "host": PROXY, "port": 5432})


def test_every_new_pooled_connection_signs_in_with_a_fresh_token_over_tls(
        aws, clock, proxy_url, recorded):
    """Given the test database behind a pool of IamAuthConnections
    When the pool opens one connection, and a minute later a second one while the first is
    in use
    Then psycopg receives, for each connect, sslmode=require and a password that is an RDS
    connect token for that host, port and user, signed at that connect's time (so the two
    differ); both connections work."""
    params = conninfo.conninfo_to_dict(proxy_url)
    database = Database(proxy_url, max_size=2, connection_class=RecordedIam)
    try:
        with database.connection() as first:
            assert first.execute("SELECT 1 AS one").fetchone()["one"] == 1
            clock.advance(minutes=1)
            with database.connection() as second:
                assert second.execute("SELECT current_user AS u").fetchone()["u"] == params["user"]
    finally:
        database.close()

    assert len(recorded) == 2
    tokens = [token_fields(seen["password"]) for seen in recorded]
    assert [seen["sslmode"] for seen in recorded] == ["require", "require"]
    assert [t["date"] for t in tokens] == ["20261129T200000Z", "20261129T200100Z"]
    assert recorded[0]["password"] != recorded[1]["password"]
    for token in tokens:
        assert token["endpoint"] == f"{PROXY}:5432"
        assert token["user"] == params["user"] and token["action"] == "connect"
        assert token["expires"] == "900"
        assert token["scope"].startswith("AKIAIOSFODNN7EXAMPLE/20261129/us-east-1/rds-db/")


def test_the_same_pool_without_iam_auth_connects_with_its_url_unchanged(aws, proxy_url, recorded):
    """Control: given the same database behind a pool of plain connections (the setting off)
    When a connection opens
    Then psycopg receives the URL's parameters as they are: no password, no sslmode."""
    database = Database(proxy_url, max_size=2, connection_class=RecordedPlain)
    try:
        with database.connection() as conn:
            assert conn.execute("SELECT 1 AS one").fetchone()["one"] == 1
    finally:
        database.close()

    [seen] = recorded
    assert {k: seen[k] for k in conninfo.conninfo_to_dict(proxy_url)} == \
        conninfo.conninfo_to_dict(proxy_url)
    assert not seen.get("password") and "sslmode" not in seen


def test_a_password_in_the_url_is_replaced_and_a_verifying_sslmode_kept(aws, clock, recorded):
    """Given a URL that carries a stale password and sslmode=verify-full
    When IamAuthConnection connects (to a host that is not there; the attempt is what counts)
    Then psycopg receives a fresh token instead of the password, and verify-full stays."""
    url = conninfo.make_conninfo(host="127.0.0.1", port=1, dbname="strata", user="strata_admin",
                                 password="stale-token", sslmode="verify-full", connect_timeout=1)
    with pytest.raises(psycopg.OperationalError):
        RecordedIam.connect(url)

    [seen] = recorded
    assert seen["password"] != "stale-token"
    assert token_fields(seen["password"])["endpoint"] == "127.0.0.1:1"
    assert seen["sslmode"] == "verify-full"


def aws_settings(**overrides) -> Settings:
    return Settings(runtime="aws", db_host=PROXY, db_port=5432, db_name="strata", **overrides)


def test_database_url_with_iam_auth_signs_for_the_configured_user_without_the_secret(
        aws, clock):
    """Given STRATA_DB_IAM_AUTH with STRATA_DB_USER and no secret ARN (the deployed stack)
    When the process builds its database URL and picks its connection class
    Then the URL names the proxy, the user and sslmode=require, its password is a token for
    that proxy and user (for one-shot connects such as the migrations), and the pool opens
    IamAuthConnections."""
    settings = aws_settings(db_iam_auth=True, db_user="strata_admin")

    params = conninfo.conninfo_to_dict(database_url(settings))

    assert params["host"] == PROXY and params["user"] == "strata_admin"
    assert params["dbname"] == "strata" and params["sslmode"] == "require"
    token = token_fields(params["password"])
    assert token["endpoint"] == f"{PROXY}:5432" and token["user"] == "strata_admin"
    assert connection_class(settings) is IamAuthConnection


def test_database_url_takes_the_user_from_the_secret_and_ignores_its_password(aws, clock):
    """Given STRATA_DB_IAM_AUTH with the Aurora secret (moto) and no STRATA_DB_USER
    When the process builds its database URL
    Then the user is the secret's username and the password a token, not the secret's;
    and, control, with the setting off the same secret gives the password and a plain pool."""
    from aws_lambda_powertools.utilities import parameters

    parameters.clear_caches()
    with mock_aws():
        arn = boto3.client("secretsmanager").create_secret(
            Name="strata-dev/master", SecretString='{"username": "strata_admin", '
                                                   '"password": "hunter2-master"}')["ARN"]
        with_iam = conninfo.conninfo_to_dict(
            database_url(aws_settings(db_iam_auth=True, db_secret_arn=arn)))
        without = conninfo.conninfo_to_dict(database_url(aws_settings(db_secret_arn=arn)))
    parameters.clear_caches()

    assert with_iam["user"] == "strata_admin" and with_iam["sslmode"] == "require"
    assert with_iam["password"] != "hunter2-master"
    assert token_fields(with_iam["password"])["user"] == "strata_admin"
    assert without == {"host": PROXY, "port": "5432", "dbname": "strata",
                       "user": "strata_admin", "password": "hunter2-master", "sslmode": "require"}
    assert connection_class(aws_settings(db_secret_arn=arn)) is psycopg.Connection


def test_iam_auth_without_a_host_is_a_configuration_error():
    """Given STRATA_DB_IAM_AUTH but neither a proxy host nor a URL (the embedded server)
    Then building the URL fails with a message naming the settings, instead of signing in to
    a local server with a token; control: the URL setting alone is accepted."""
    with pytest.raises(ValueError, match="STRATA_DB_HOST"):
        database_url(Settings(db_iam_auth=True, db_user="strata_admin"))
    explicit = "postgresql://app@db.internal:5432/strata"
    assert database_url(Settings(database_url=explicit)) == explicit


# --------------------------------------------------------------------------- the template


@pytest.fixture(scope="module")
def template() -> dict:
    from pathlib import Path

    from cfnlint.decode import cfn_yaml

    return cfn_yaml.load(str(Path(__file__).resolve().parents[1] / "template.yaml"))


def rds_connect_users(function: dict) -> list[str]:
    """The database users a function's rds-db:connect statements name on the stack's proxy."""
    users = []
    for policy in function["Properties"].get("Policies") or []:
        for statement in policy.get("Statement", []) if isinstance(policy, dict) else []:
            if statement.get("Action") != "rds-db:connect":
                continue
            arn, variables = statement["Resource"]["Fn::Sub"]
            assert variables == {"ProxyId": {"Fn::Select": [6, {"Fn::Split": [
                ":", {"Fn::GetAtt": ["DbProxy", "DBProxyArn"]}]}]}}
            prefix = "arn:${AWS::Partition}:rds-db:${AWS::Region}:${AWS::AccountId}:dbuser:${ProxyId}/"
            assert arn.startswith(prefix), arn
            users.append(arn.removeprefix(prefix))
    return users


def test_template_requires_iam_auth_and_lets_each_database_function_connect(template):
    """Given template.yaml
    Then the proxy requires IAM auth and TLS; every function turns IAM auth on (Globals) as
    the cluster's master user; every function (the health function too: readiness asks the
    database) may rds-db:connect as exactly that user on this proxy, and none may read the
    master secret."""
    resources = template["Resources"]
    [auth] = resources["DbProxy"]["Properties"]["Auth"]
    assert auth["IAMAuth"] == "REQUIRED" and resources["DbProxy"]["Properties"]["RequireTLS"] is True
    env = template["Globals"]["Function"]["Environment"]["Variables"]
    user = resources["DbCluster"]["Properties"]["MasterUsername"]
    assert env["STRATA_DB_IAM_AUTH"] == "true" and env["STRATA_DB_USER"] == user
    assert "STRATA_DB_SECRET_ARN" not in env
    functions = {n: r for n, r in resources.items() if r["Type"] == "AWS::Serverless::Function"}
    for name, function in functions.items():
        assert rds_connect_users(function) == [user], name
        assert "MasterUserSecret" not in json.dumps(function["Properties"].get("Policies")), name
    assert len([n for n in functions if rds_connect_users(functions[n])]) >= 10
