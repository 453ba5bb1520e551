"""The ingest state machine end to end on Bedrock: Titan v2 embeddings and the Converse
extractor, as a deployment with STRATA_EMBEDDER=bedrock and STRATA_LLM_PROVIDER=bedrock runs.

The ASL, moto's interpreter and the real step handler are tests/test_state_machine.py's
(its fixtures and helpers, imported); the step handler builds its embedder and extractor from
the environment as on Lambda, and the one ``bedrock-runtime`` client it gets is a real boto3
client under botocore's Stubber (tests/test_bedrock_llm.py's ``aws_clients``), answering in
the services' recorded shapes. Titan v2 gives 256, 512 or 1024 dimensions, so this module's
database is switched to 256 (as `strata reindex` does) from the session template's 384.
"""

from __future__ import annotations

import json

import pytest

from strata.foundation.config import get_settings
from strata.ingest.pipeline import STEPS
from strata.maintenance.reindex import switch_dimension
from strata.providers.embedders import TITAN_V2
from test_bedrock_llm import (  # noqa: F401 (fixtures)
    MODEL, answered, aws_clients, aws_env, bedrock, expected_request, memory,
)
from test_embedders import EXPECTED as TITAN_REQUEST
from test_embedders import titan_response
from test_state_machine import (  # noqa: F401 (fixtures)
    aws, memories_of, open_ingest, receipt_row, run, step_handler,
)

DIM = 256


@pytest.fixture
def db(db):
    """This test's own database, switched to vector(256) columns (Titan v2's smallest) the
    way `strata reindex` switches a deployment's dimension: a third of the time of migrating
    a new database at 256."""
    with db.transaction() as cur:
        switch_dimension(cur, 384, DIM)
    return db


@pytest.fixture
def bedrock_deployment(monkeypatch):
    """The step function's environment as a Bedrock deployment sets it."""
    for name, value in {
        "STRATA_EMBEDDER": "bedrock", "STRATA_EMBEDDING_DIM": str(DIM),
        "STRATA_BEDROCK_CONCURRENCY": "1", "STRATA_BEDROCK_REGION": "us-east-1",
        "STRATA_LLM_PROVIDER": "bedrock", "STRATA_LLM_MODEL": MODEL,
        "STRATA_LLM_MAX_RETRIES": "0",
    }.items():
        monkeypatch.setenv(name, value)
    get_settings.cache_clear()


def test_state_machine_with_titan_embeddings_and_the_converse_extractor(
        aws, aws_clients, bedrock_deployment, db, tenant, caller_for):
    """Given a Bedrock deployment (Titan v2 at 256 dimensions, a Nova model extracting) and a
    receipt for a conversation
    When the state machine runs on it
    Then Extract calls Converse with the conversation, Gate embeds the model's memory with
    Titan, the execution succeeds through every step, and the model's memory is active,
    stamped with the Titan embedding model."""
    sfn, arn, fake = aws
    _, stub, sent, built = aws_clients
    stub.add_response("converse", answered("Extraction", {"memories": [memory(
        "The user's go-to database is PostgreSQL.", [0], slot="user.preferred_database",
        value="postgresql")], "not_kept": []}), expected_request("Extraction"))
    stub.add_response("invoke_model", titan_response([0.5] * DIM), TITAN_REQUEST)
    assert memories_of(db, tenant.tenant_id) == []  # control: nothing before the run
    receipt_id = open_ingest(db, caller_for(tenant.key), "Postgres for everything, honestly.")

    out = run(sfn, arn, receipt_id, tenant.tenant_id)

    assert out["status"] == "SUCCEEDED", out
    assert json.loads(out["output"])["status"] == "wrote"
    assert fake.calls == [(s, "ok") for s in STEPS]
    assert "Postgres for everything" in sent[0]["messages"][0]["content"][0]["text"]
    assert built and all(b["region_name"] == "us-east-1" for b in built)
    row = receipt_row(db, receipt_id)
    assert row["status"] == "wrote" and row["error"] is None
    [created] = [i for i in row["items"] if i["outcome"] == "created"]
    with db.connection() as conn:
        stored = conn.execute(
            "SELECT content, status::text AS status, embedding_model FROM memories"
            " WHERE id = %s", (created["memory_id"],)).fetchone()
    assert stored == {"content": "The user's go-to database is PostgreSQL.", "status": "active",
                      "embedding_model": f"bedrock:{TITAN_V2}:{DIM}"}
