"""Ingestion with the model-backed extractor and judge, through the real openai client against
a scripted OpenAI-compatible server on loopback (tests/fake_openai.py)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from fake_openai import slow
from strata.ingest.models import IngestRequest
from strata.ingest.pipeline import IngestRuntime
from strata.ingest.service import ingest

PATH = "users.alice"
T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)


def request(*texts: str, at: datetime = T0) -> IngestRequest:
    return IngestRequest(path=PATH, wait=True, messages=[
        {"role": "user", "content": t, "at": (at + timedelta(minutes=i)).isoformat()}
        for i, t in enumerate(texts)])


def extracted(*memories: dict) -> dict:
    return {"memories": [{"confidence": 0.9, "asserts_change": False, "evidence": [0],
                          "valid_from": None, "slot": None, "value": None, "kind": "fact", **m}
                         for m in memories]}


def no_verdicts(recorded) -> dict:
    return {"verdicts": []}


@pytest.fixture
def model_rt(db, embedder, fake_llm, settings):
    return IngestRuntime(db, embedder, fake_llm.settings(settings, llm_max_retries=1))


def active(db) -> list[str]:
    with db.connection() as conn:
        return [r["content"] for r in conn.execute(
            "SELECT content FROM memories WHERE status = 'active' ORDER BY created_at").fetchall()]


def test_model_reextraction_in_other_words_is_blocked(model_rt, fake_llm, tenant, caller_for, db):
    """Given MongoDB superseded by PostgreSQL (model-extracted, slot user.preferred_database)
    When the model later re-extracts the old value in other words ("User likes Mongo for
    backends", value "mongo")
    Then it is blocked by the tombstone and PostgreSQL stays active."""
    caller = caller_for(tenant.key)
    pref = {"kind": "preference", "slot": "user.preferred_database"}
    extractions = [
        extracted({**pref, "content": "User prefers MongoDB", "value": "mongodb"}),
        extracted({**pref, "content": "User switched to PostgreSQL", "value": "postgresql",
                   "asserts_change": True}),
        extracted({**pref, "content": "User likes Mongo for backends", "value": "Mongo"}),
    ]
    fake_llm.fallback = lambda rec: (
        no_verdicts(rec) if rec.schema_name == "JudgeAnswer" else extractions.pop(0))
    first, _ = ingest(model_rt, None, caller, request("I prefer MongoDB"))
    assert first.extractor == "llm:fake-model" and [i.outcome for i in first.items] == ["created"]
    second, _ = ingest(model_rt, None, caller, request("I've switched to PostgreSQL",
                                                        at=T0 + timedelta(weeks=3)))
    assert [i.outcome for i in second.items] == ["superseded_existing"]
    third, _ = ingest(model_rt, None, caller, request("Mongo is great for backends, I like it",
                                                       at=T0 + timedelta(weeks=5)))
    assert [i.outcome for i in third.items] == ["blocked"], third.items
    assert active(db) == ["User switched to PostgreSQL"]


def test_malformed_model_answer_falls_back_to_rules(model_rt, fake_llm, tenant, caller_for, db):
    """Given a model that answers garbage
    When a conversation is ingested
    Then the rule extractor runs, the receipt records the fallback, and the memory is stored."""
    fake_llm.script("this is not json", "still not json")
    receipt, _ = ingest(model_rt, None, caller_for(tenant.key), request("My name is Alice"))
    assert receipt.status == "wrote"
    assert receipt.extractor.startswith("rule (fallback from llm:fake-model)")
    assert any("model extraction failed" in n for n in receipt.notes)
    assert len(active(db)) == 1


def test_model_timeout_with_fail_policy_is_llm_failed_and_loses_nothing(
        db, embedder, fake_llm, settings, tenant, caller_for):
    """Given a model that times out and llm_fallback=fail
    When a conversation is ingested
    Then the receipt is llm_failed, nothing is written, and the conversation is kept on the
    receipt so it can be retried (control: with the model back, a retry of the steps writes)."""
    strict = IngestRuntime(db, embedder, fake_llm.settings(
        settings, llm_fallback="fail", llm_timeout_s=0.3, llm_max_retries=0))
    fake_llm.script(slow(1.0))
    receipt, _ = ingest(strict, None, caller_for(tenant.key), request("My name is Alice"))
    assert receipt.status == "llm_failed" and "timeout" in receipt.error
    assert active(db) == []
    with db.connection() as conn:
        kept = conn.execute("SELECT messages FROM ingest_receipts WHERE id = %s",
                            (receipt.id,)).fetchone()["messages"]
    assert kept[0]["content"] == "My name is Alice"


def test_rate_limited_then_answered(model_rt, fake_llm, tenant, caller_for, db):
    """Given a 429 then an answer
    When a conversation is ingested
    Then the client's retry succeeds and the model's memory is stored."""
    fake_llm.script(429, extracted({"content": "User's name is Alice", "slot": "user.name",
                                    "value": "alice"}))
    receipt, _ = ingest(model_rt, None, caller_for(tenant.key), request("My name is Alice"))
    assert receipt.extractor == "llm:fake-model" and receipt.status == "wrote"
    assert len(fake_llm.completions) == 2
    assert active(db) == ["User's name is Alice"]


def test_model_judge_verdicts_count_only_when_confident_and_shown(
        model_rt, fake_llm, tenant, caller_for, db):
    """Given an active memory and a new, similar one
    When the model judge answers supersedes at 0.6 for it (and 0.9 for an id it was not shown)
    Then neither verdict counts: both memories stay active; a confident verdict for the shown
    id (control) supersedes."""
    caller = caller_for(tenant.key)
    fact = {"kind": "fact"}
    fake_llm.script(
        extracted({**fact, "content": "Alice works on the billing service team"}),
        extracted({**fact, "content": "Alice works on the billing service platform team"}),
        lambda rec: {"verdicts": [
            {"target_id": rec.shown_ids()[0], "relation": "supersedes", "confidence": 0.6,
             "reason": "guess"},
            {"target_id": "00000000-0000-0000-0000-000000000001", "relation": "supersedes",
             "confidence": 0.9, "reason": "not shown"}]},
        extracted({**fact, "content": "Alice works on the payments service platform team"}),
        lambda rec: {"verdicts": [
            {"target_id": rec.shown_ids()[0], "relation": "supersedes", "confidence": 0.9,
             "reason": "moved team"}]},
    )
    ingest(model_rt, None, caller, request("I work on the billing service team"))
    second, _ = ingest(model_rt, None, caller, request("Billing platform team", at=T0 + timedelta(days=1)))
    assert [i.outcome for i in second.items] == ["created"]
    assert len(active(db)) == 2
    third, _ = ingest(model_rt, None, caller, request("Platform team now", at=T0 + timedelta(days=2)))
    assert [i.outcome for i in third.items] == ["superseded_existing"], third.items
    assert len(active(db)) == 2
