"""The first tenant on AWS: the migration custom resource creates tenant ``default`` and
writes its owner key to the admin key secret, once.

Real CloudFormation custom-resource events into functions/migrate/handler.py, the real
embedded PostgreSQL (an empty database, as a first deploy finds it), Secrets Manager by moto,
and a loopback HTTP server for CloudFormation's pre-signed response URL.
"""

from __future__ import annotations

import json
import logging
import threading
import uuid
from functools import partial
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path

import boto3
import pytest
from aws_lambda_powertools.logging.formatter import LambdaPowertoolsFormatter
from moto import mock_aws

from strata.auth import authenticate, create_tenant, find_tenant
from strata.auth.access import Level
from strata.db import Database, get_database
from strata.foundation import logs
from strata.foundation.config import get_settings
from strata.foundation.errors import NotFound

import support

ROOT = Path(__file__).resolve().parents[1]


LambdaContext = partial(support.LambdaContext, "strata-dev-MigrateFunction", remaining_ms=600_000)


def custom_resource_event(request_type: str, url: str) -> dict:
    """What CloudFormation sends the DbMigrations custom resource (template.yaml)."""
    event = {
        "RequestType": request_type, "ServiceToken": "arn:aws:lambda:us-east-1:123456789012:function:m",
        "ResponseURL": url,
        "StackId": "arn:aws:cloudformation:us-east-1:123456789012:stack/strata-dev/1",
        "RequestId": str(uuid.uuid4()), "LogicalResourceId": "DbMigrations",
        "ResourceType": "Custom::StrataMigrations",
        "ResourceProperties": {"ServiceToken": "arn:aws:lambda:us-east-1:123456789012:function:m",
                               "ServiceTimeout": "900", "LayerVersion": "arn:layer:1",
                               "EmbeddingDim": "384"},
    }
    if request_type != "Create":
        event["PhysicalResourceId"] = "strata-db-migrations"
        event["OldResourceProperties"] = dict(event["ResourceProperties"], LayerVersion="arn:layer:0")
    return event


@pytest.fixture
def response_sink():
    """A loopback HTTP server standing in for CloudFormation's pre-signed response URL."""
    received: list[dict] = []

    class Sink(BaseHTTPRequestHandler):
        def do_PUT(self):  # noqa: N802 - http.server's naming
            received.append(json.loads(self.rfile.read(int(self.headers["content-length"]))))
            self.send_response(200)
            self.end_headers()

        def log_message(self, *args):
            pass

    server = HTTPServer(("127.0.0.1", 0), Sink)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_port}/response", received
    server.shutdown()


@pytest.fixture
def aws(monkeypatch):
    support.fake_aws_credentials(monkeypatch)
    with mock_aws():
        yield boto3.client("secretsmanager")


@pytest.fixture
def admin_secret(aws) -> str:
    """AdminKeySecret as CloudFormation creates it: a generated placeholder, not a key."""
    return aws.create_secret(Name="strata-dev-admin-key",
                             SecretString=f"placeholder-{uuid.uuid4().hex}")["ARN"]


@pytest.fixture
def migrate_handler(empty_db_url, monkeypatch):
    """The migrate function over an empty database; its pool is closed afterwards."""
    monkeypatch.setenv("STRATA_DATABASE_URL", empty_db_url)
    monkeypatch.setenv("STRATA_RUNTIME", "aws")
    get_settings.cache_clear()
    get_database.cache_clear()
    yield support.load_module("handler_migrate_bootstrap", ROOT / "functions/migrate/handler.py")
    logs.reset()  # the aws runtime switched strata logs to JSON
    get_database().close()
    get_settings.cache_clear()
    get_database.cache_clear()


@pytest.fixture
def database(empty_db_url):
    database = Database(empty_db_url, max_size=2)
    yield database
    database.close()


@pytest.fixture(scope="module")
def template() -> dict:
    from cfnlint.decode import cfn_yaml

    return cfn_yaml.load(str(ROOT / "template.yaml"))


def deploy(module, request_type: str, url: str) -> None:
    get_settings.cache_clear()
    module.handler(custom_resource_event(request_type, url), LambdaContext())


def secret_versions(aws, arn: str) -> list[tuple[str, list[str]]]:
    """Each version's id and stages (not its dates, which moto recomputes on every call)."""
    return [(v["VersionId"], v["VersionStages"])
            for v in aws.list_secret_version_ids(SecretId=arn)["Versions"]]


class Recorded(logging.Handler):
    """Every line the function logs, as the Powertools formatter writes it."""

    def __init__(self) -> None:
        super().__init__()
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(self.format(record))


def test_first_deploy_creates_default_and_stores_a_working_owner_key(
        migrate_handler, admin_secret, aws, database, response_sink, monkeypatch):
    """Given an empty database and the admin key secret holding its generated placeholder
    When CloudFormation sends Create, then Update (a second deploy)
    Then Create answers SUCCESS with tenant `default` created and the secret holds a key that
    authenticates as owner of `default` at the root; Update answers SUCCESS, creates nothing,
    and leaves the secret as it was (same key, no new version); no log line carries the key."""
    url, received = response_sink
    monkeypatch.setenv("STRATA_ADMIN_KEY_SECRET_ARN", admin_secret)
    recorded = Recorded()
    recorded.setFormatter(LambdaPowertoolsFormatter())
    std_logger = migrate_handler.log
    std_logger.addHandler(recorded)

    deploy(migrate_handler, "Create", url)
    key = aws.get_secret_value(SecretId=admin_secret)["SecretString"]
    versions = secret_versions(aws, admin_secret)

    assert received[0]["Status"] == "SUCCESS", received[0]
    assert received[0]["Data"]["TenantCreated"] == "true"
    assert received[0]["Data"]["Applied"].startswith("0001_")
    caller = authenticate(database, key)
    default = find_tenant(database, "default")
    assert caller.tenant_id == default.id
    assert caller.level_at("") == Level.owner and caller.can("anything/below", Level.owner)

    deploy(migrate_handler, "Update", url)

    assert received[1]["Status"] == "SUCCESS", received[1]
    assert received[1]["Data"] == {"Applied": "", "TenantCreated": "false"}
    assert aws.get_secret_value(SecretId=admin_secret)["SecretString"] == key
    assert secret_versions(aws, admin_secret) == versions
    assert find_tenant(database, "default").id == default.id
    assert authenticate(database, key).tenant_id == default.id
    with database.connection() as conn:
        assert conn.execute("SELECT count(*) AS n FROM tenants").fetchone()["n"] == 1
    std_logger.removeHandler(recorded)
    assert any("first tenant created" in line for line in recorded.lines)  # control
    assert not [line for line in recorded.lines if key in line]
    assert all(key not in json.dumps(answer) for answer in received)


def test_existing_default_tenant_is_left_alone_and_the_secret_untouched(
        migrate_handler, admin_secret, aws, database, response_sink, monkeypatch):
    """Given a migrated database where `default` already exists (created some other way)
    When CloudFormation sends Create
    Then the answer is SUCCESS with no tenant created, the secret still holds its placeholder,
    and the existing owner key still works."""
    from strata.db.migrate import migrate

    url, received = response_sink
    monkeypatch.setenv("STRATA_ADMIN_KEY_SECRET_ARN", admin_secret)
    migrate(database.url)
    existing, existing_key = create_tenant(database, "default")
    placeholder = aws.get_secret_value(SecretId=admin_secret)["SecretString"]

    deploy(migrate_handler, "Create", url)

    assert received[0]["Status"] == "SUCCESS", received[0]
    assert received[0]["Data"]["TenantCreated"] == "false"
    assert aws.get_secret_value(SecretId=admin_secret)["SecretString"] == placeholder
    assert authenticate(database, existing_key.key).tenant_id == existing.id


def test_a_key_that_cannot_be_stored_fails_the_deploy_and_leaves_no_tenant(
        migrate_handler, admin_secret, aws, database, response_sink, monkeypatch):
    """Given the admin key secret ARN pointing at a secret that does not exist
    When CloudFormation sends Create
    Then the answer is FAILED (naming the error type, no key) and no tenant `default` is left
    behind, so the next deploy, with the real secret, creates it and stores its key."""
    url, received = response_sink
    missing = admin_secret.replace("strata-dev-admin-key", "strata-dev-gone")
    monkeypatch.setenv("STRATA_ADMIN_KEY_SECRET_ARN", missing)

    deploy(migrate_handler, "Create", url)

    assert received[0]["Status"] == "FAILED"
    assert "ResourceNotFoundException" in received[0]["Reason"]
    with pytest.raises(NotFound):
        find_tenant(database, "default")

    monkeypatch.setenv("STRATA_ADMIN_KEY_SECRET_ARN", admin_secret)
    deploy(migrate_handler, "Update", url)

    assert received[1]["Status"] == "SUCCESS", received[1]
    assert received[1]["Data"]["TenantCreated"] == "true"
    key = aws.get_secret_value(SecretId=admin_secret)["SecretString"]
    assert authenticate(database, key).tenant_id == find_tenant(database, "default").id


def test_without_an_admin_key_secret_the_migration_creates_no_tenant(
        migrate_handler, database, response_sink):
    """Given no STRATA_ADMIN_KEY_SECRET_ARN (a migration run outside the stack)
    When CloudFormation sends Create
    Then migrations apply (control) and no tenant is created."""
    url, received = response_sink

    deploy(migrate_handler, "Create", url)

    assert received[0]["Status"] == "SUCCESS", received[0]
    assert received[0]["Data"]["Applied"].startswith("0001_")
    assert received[0]["Data"]["TenantCreated"] == "false"
    with database.connection() as conn:
        assert conn.execute("SELECT count(*) AS n FROM tenants").fetchone()["n"] == 0


def test_a_deploy_that_changes_the_embedder_of_stored_vectors_fails_and_says_how_to_go_on(
        migrate_handler, database, response_sink, monkeypatch):
    """Given a migrated store at 384 dimensions holding a memory the hash embedder made
    When a deploy keeps the embedder (control), asks for 512 dimensions, or keeps 384 and
    switches to an OpenAI model
    Then the control answers SUCCESS; the dimension change answers FAILED naming both
    dimensions and EmbeddingDim, the embedder change FAILED naming both models (so
    CloudFormation rolls back to the configuration that made the vectors); the memory keeps
    its vector."""
    from strata.db.migrate import migrate
    from strata.memories.models import CreateRequest
    from strata.memories.store import create_memories
    from strata.providers.embedders import HashingEmbedder

    url, received = response_sink
    monkeypatch.setenv("STRATA_EMBEDDING_DIM", "384")
    get_settings.cache_clear()
    migrate(database.url, get_settings())
    _, owner = create_tenant(database, "acme")
    create_memories(database, authenticate(database, owner.key),
                    CreateRequest(memories=[{"content": "Ana moved to Lisbon", "path": "ana"}]),
                    HashingEmbedder(384))

    deploy(migrate_handler, "Update", url)
    monkeypatch.setenv("STRATA_EMBEDDING_DIM", "512")
    deploy(migrate_handler, "Update", url)
    monkeypatch.setenv("STRATA_EMBEDDING_DIM", "384")
    monkeypatch.setenv("STRATA_EMBEDDER", "openai")
    monkeypatch.setenv("STRATA_EMBEDDING_MODEL", "text-embedding-3-small")
    deploy(migrate_handler, "Update", url)

    assert received[0]["Status"] == "SUCCESS", received[0]
    assert received[1]["Status"] == "FAILED"
    assert "384-dimensional" in received[1]["Reason"] and "EmbeddingDim=512" in received[1]["Reason"]
    assert received[2]["Status"] == "FAILED"
    assert "1 stored memory vectors were embedded by strata-hash-v1-384" in received[2]["Reason"]
    assert "openai:text-embedding-3-small:384" in received[2]["Reason"]
    with database.connection() as conn:
        row = conn.execute("SELECT embedding_model FROM memories").fetchone()
    assert row["embedding_model"] == "strata-hash-v1-384"


def test_template_declares_the_admin_key_secret_only_the_migration_may_write(template):
    """Given template.yaml
    Then AdminKeySecret holds a generated placeholder, its ARN is an output and the migrate
    function's STRATA_ADMIN_KEY_SECRET_ARN; the migrate function may PutSecretValue on that
    secret alone, and no other function may write or read it."""
    resources = template["Resources"]
    secret = resources["AdminKeySecret"]
    assert secret["Type"] == "AWS::SecretsManager::Secret"
    assert "GenerateSecretString" in secret["Properties"]
    assert template["Outputs"]["AdminKeySecretArn"]["Value"] == {"Ref": "AdminKeySecret"}
    migrate = resources["MigrateFunction"]["Properties"]
    assert migrate["Environment"]["Variables"]["STRATA_ADMIN_KEY_SECRET_ARN"] == {
        "Ref": "AdminKeySecret"}
    statements = [s for p in migrate["Policies"] if isinstance(p, dict)
                  for s in p.get("Statement", [])]
    assert {"Effect": "Allow", "Action": "secretsmanager:PutSecretValue",
            "Resource": {"Ref": "AdminKeySecret"}} in statements
    for name, resource in resources.items():
        if resource["Type"] != "AWS::Serverless::Function" or name == "MigrateFunction":
            continue
        assert "AdminKeySecret" not in json.dumps(resource["Properties"]), name
