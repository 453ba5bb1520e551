"""Conversation scenarios (issue 15): what people actually tell assistants, end to end through
POST /v1/ingest on a real database, then read back through /v1/memories and /v1/search.

Each scenario runs with no model (the rule extractor and rule judge; fixture ``rules``) and
many also with the scripted model (fixture ``model``: the real ``openai`` client against
tests/fake_openai.py, answering with the extraction a model would give), so the same story
checks both what the rules extract and how the write path resolves a model's output. The
``chat`` fixture runs a test once per mode.

Assertions are about meaning, not wording: an active memory whose content matches the key
words (case-insensitive regexes), its kind where the kind is clear, the status of the memory
it replaced, the date an event resolves to, and which memory a question ranks first. Every
exclusion (questions, hypotheticals, reported speech, other people, assistant claims, secrets,
small talk) sits beside a control that must be stored, so an extractor that keeps nothing
cannot pass.

``T0`` is Monday 2026-03-02 09:00 UTC; each ``say`` without ``at`` happens one day after the
previous one.
"""

from __future__ import annotations

import json
import re
from collections import deque
from collections.abc import Callable
from datetime import UTC, date, datetime, timedelta
from typing import Any

import pytest
from fastapi.testclient import TestClient

from fake_openai import Recorded, error
from strata.api.app import create_app

PATH = "users.alice"
T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
assert T0.strftime("%A") == "Monday"

REASONS = {"question", "hypothetical", "reported", "past", "other_person", "small_talk", "secret",
           "vague", "no_statement", "model_skipped", "too_long", "correction"}


def at(y: int, m: int, d: int, hour: int = 9) -> datetime:
    return datetime(y, m, d, hour, tzinfo=UTC)


def iso(y: int, m: int, d: int) -> str:
    return datetime(y, m, d, tzinfo=UTC).isoformat()


def matches(memory: dict, *patterns: str) -> bool:
    return all(re.search(p, memory["content"], re.I) for p in patterns)


def mem(content: str, kind: str = "fact", slot: str | None = None, value: str | None = None, *,
        valid_from: str | None = None, change: bool = False, evidence: list[int] | None = None,
        confidence: float = 0.9) -> dict:
    """One memory as the model answers it (the ``Candidate`` shape of prompts.py)."""
    return {"content": content, "kind": kind, "slot": slot, "value": value,
            "valid_from": valid_from, "confidence": confidence, "asserts_change": change,
            "evidence": evidence}


# -- the scripted model ---------------------------------------------------------------------


def no_verdicts(rec: Recorded) -> dict:
    return {"verdicts": []}


def verdict_for_shown(relation: str, reason: str) -> Callable[[Recorded], dict]:
    def answer(rec: Recorded) -> dict:
        return {"verdicts": [{"target_id": i, "relation": relation, "confidence": 0.9,
                              "reason": reason} for i in rec.shown_ids()]}
    return answer


class ScriptedModel:
    """Answers extraction requests from a queue (one per ingest) and judge requests with
    ``judge``; anything unscripted is an error, so an under-scripted test fails loudly."""

    def __init__(self, fake) -> None:
        self.fake = fake
        self.extractions: deque[dict] = deque()
        self.judge: Callable[[Recorded], dict] = no_verdicts
        fake.fallback = self.answer

    def answer(self, rec: Recorded) -> Any:
        if rec.schema_name == "JudgeAnswer":
            return self.judge(rec)
        if rec.schema_name == "Extraction" and self.extractions:
            return self.extractions.popleft()
        return error(400, f"unscripted {rec.schema_name} request")

    @property
    def extraction_requests(self) -> list[Recorded]:
        return [r for r in self.fake.completions if r.schema_name == "Extraction"]


# -- a conversation over HTTP ---------------------------------------------------------------


class Chat:
    """One user's conversations with an agent, sent to strata as they happen."""

    def __init__(self, client: TestClient, headers: dict[str, str],
                 llm: ScriptedModel | None = None) -> None:
        self.client = client
        self.headers = headers
        self.llm = llm
        self.clock = T0
        self.receipts: list[dict] = []

    @property
    def mode(self) -> str:
        return "rules" if self.llm is None else "model"

    def judge_with(self, judge: Callable[[Recorded], dict]) -> None:
        """What the model judge answers (the rule judge ignores this)."""
        if self.llm is not None:
            self.llm.judge = judge

    def say(self, *turns: str | tuple[str, str] | dict, at: datetime | None = None,
            model: list[dict] | None = None, skipped: list[dict] = ()) -> dict:
        """Send one conversation (turns one minute apart; a str is a user turn, a tuple is
        (role, content), a dict a whole message) and return the finished receipt. ``model``
        is what the scripted model extracts from it (ignored with no model)."""
        when = at or self.clock
        messages = []
        for i, turn in enumerate(turns):
            if isinstance(turn, str):
                message = {"role": "user", "content": turn}
            elif isinstance(turn, tuple):
                message = {"role": turn[0], "content": turn[1]}
            else:
                message = dict(turn)
            message.setdefault("at", (when + timedelta(minutes=i)).isoformat())
            messages.append(message)
        self.clock = max(self.clock, when) + timedelta(days=1)
        if self.llm is not None:
            assert model is not None, "in model mode every conversation needs the model's answer"
            last_user = max(i for i, m in enumerate(messages) if m["role"] == "user")
            self.llm.extractions.append({
                "memories": [{**m, "evidence": m["evidence"] if m["evidence"] is not None
                              else [last_user]} for m in model],
                "not_kept": list(skipped),
            })
        r = self.client.post("/v1/ingest", headers=self.headers,
                             json={"path": PATH, "messages": messages, "wait": True})
        assert r.status_code == 200, r.text
        receipt = r.json()
        assert receipt["status"] in ("wrote", "meaningful_no_write"), receipt
        if self.llm is not None:
            assert receipt["extractor"] == "llm:fake-model", receipt
            assert not self.llm.extractions, "the model was not asked"
        else:
            assert receipt["extractor"] == "rule", receipt
        check_not_kept_shape(receipt, messages)
        self.receipts.append(receipt)
        return receipt

    # -- reading back

    def memories(self, status: str = "active") -> list[dict]:
        r = self.client.get("/v1/memories", headers=self.headers,
                            params={"path": PATH, "status": status, "limit": 200})
        assert r.status_code == 200, r.text
        return r.json()["items"]

    def active(self, *patterns: str) -> list[dict]:
        return [m for m in self.memories() if matches(m, *patterns)]

    def stored(self, *patterns: str) -> list[dict]:
        """Memories in any status whose content matches."""
        return [m for m in self.memories("all") if matches(m, *patterns)]

    def with_status(self, status: str, *patterns: str) -> list[dict]:
        return [m for m in self.memories(status) if matches(m, *patterns)]

    def get(self, memory_id: str) -> dict:
        r = self.client.get(f"/v1/memories/{memory_id}", headers=self.headers)
        assert r.status_code == 200, r.text
        return r.json()

    def written_by(self, receipt: dict) -> list[dict]:
        """The memories a receipt's items point at, as they are now."""
        ids = dict.fromkeys(i["memory_id"] for i in receipt["items"] if i["memory_id"])
        return [self.get(i) for i in ids]

    def search(self, query: str, **kw: Any) -> list[dict]:
        r = self.client.post("/v1/search", headers=self.headers,
                             json={"query": query, "paths": [PATH], "limit": 10, **kw})
        assert r.status_code == 200, r.text
        return r.json()["results"]

    # -- assertions

    def has_active(self, *patterns: str, kind: str | None = None) -> dict:
        """Exactly one active memory matches; returned (its kind checked when given)."""
        found = self.active(*patterns)
        assert len(found) == 1, (patterns, [m["content"] for m in self.memories()])
        if kind is not None:
            assert found[0]["kind"] == kind, found[0]
        return found[0]

    def some_active(self, *patterns: str, kind: str | None = None) -> list[dict]:
        found = self.active(*patterns)
        assert found, (patterns, [m["content"] for m in self.memories()])
        if kind is not None:
            assert any(m["kind"] == kind for m in found), found
        return found

    def none_active(self, *patterns: str) -> None:
        found = self.active(*patterns)
        assert not found, (patterns, [m["content"] for m in found])

    def none_stored(self, *patterns: str) -> None:
        found = self.stored(*patterns)
        assert not found, (patterns, [(m["content"], m["status"]) for m in found])

    def superseded(self, *patterns: str) -> list[dict]:
        found = self.with_status("superseded", *patterns)
        assert found, (patterns, [(m["content"], m["status"]) for m in self.memories("all")])
        self.none_active(*patterns)
        return found

    def ranks_first(self, query: str, *patterns: str, **kw: Any) -> dict:
        results = self.search(query, **kw)
        assert results, query
        assert matches(results[0], *patterns), (query, [r["content"] for r in results])
        return results[0]


def check_not_kept_shape(receipt: dict, messages: list[dict]) -> None:
    """Every not_kept entry is {message, reason, text}, names a user message, uses the
    vocabulary, and a secret's text is never kept."""
    for entry in receipt["not_kept"]:
        assert set(entry) == {"message", "reason", "text"}, entry
        assert entry["reason"] in REASONS, entry
        assert 0 <= entry["message"] < len(messages), entry
        assert messages[entry["message"]]["role"] == "user", entry
        if entry["reason"] == "secret":
            assert entry["text"] is None, entry


def not_kept(receipt: dict, message: int, pattern: str) -> list[dict]:
    return [n for n in receipt["not_kept"] if n["message"] == message and n["text"]
            and re.search(pattern, n["text"], re.I)]


def assert_not_kept_because(receipt: dict, message: int, pattern: str, reason: str) -> None:
    found = not_kept(receipt, message, pattern)
    assert any(n["reason"] == reason for n in found), (pattern, reason, receipt["not_kept"])


def assert_accounted(chat: Chat, receipt: dict, message: int, pattern: str) -> None:
    """The clause matching ``pattern`` is in not_kept (any reason) or became a memory."""
    if not_kept(receipt, message, pattern):
        return
    kept = [m for m in chat.written_by(receipt) if re.search(pattern, m["content"], re.I)]
    assert kept, (pattern, receipt["not_kept"], [m["content"] for m in chat.written_by(receipt)])


def outcomes(receipt: dict) -> list[str]:
    return [i["outcome"] for i in receipt["items"]]


def valid_day(memory: dict) -> date:
    return datetime.fromisoformat(memory["valid_from"]).astimezone(UTC).date()


# -- fixtures -------------------------------------------------------------------------------


@pytest.fixture
def rules(client, tenant) -> Chat:
    return Chat(client, tenant.headers)


@pytest.fixture
def model(db, embedder, settings, fake_llm, tenant):
    # llm_fallback=fail: a model failure must show as llm_failed, never as the rules running
    # silently in a test that means to exercise the model path.
    app = create_app(db=db, embedder=embedder, settings=fake_llm.settings(
        settings, llm_fallback="fail", llm_max_retries=0))
    with TestClient(app, raise_server_exceptions=False) as c:
        yield Chat(c, tenant.headers, ScriptedModel(fake_llm))


@pytest.fixture(params=["rules", "model"])
def chat(request) -> Chat:
    return request.getfixturevalue(request.param)


# ===========================================================================================
# The reproductions of issue 15
# ===========================================================================================

PLAIN = [
    pytest.param("I drive a Volvo", ("volvo",), "fact",
                 mem("The user drives a Volvo", slot="user.car", value="volvo"), id="volvo"),
    pytest.param("Bob's birthday is May 4", ("bob", "birthday", r"may\s*4|0?5-0?4|4\s*may"),
                 "fact", mem("Bob's birthday is May 4", slot="bob.birthday", value="may 4"),
                 id="bob-birthday"),
    pytest.param("We decided to use Kubernetes for the new platform", ("kubernetes",), None,
                 mem("The team decided to use Kubernetes for the new platform",
                     slot="new_platform.orchestrator", value="kubernetes"), id="kubernetes"),
    pytest.param("I speak French", ("french",), "fact", mem("The user speaks French"),
                 id="french"),
    pytest.param("I own a red bicycle", ("red", "bicycle"), "fact",
                 mem("The user owns a red bicycle"), id="bicycle"),
]


@pytest.mark.parametrize("text,patterns,kind,answer", PLAIN)
def test_plain_statement_is_stored(chat, text, patterns, kind, answer):
    """Given nothing stored
    When the user says one plain statement about their world
    Then it is stored as one active memory naming it, the receipt says wrote, and nothing is
    listed as not kept."""
    receipt = chat.say(text, model=[answer])
    assert receipt["status"] == "wrote", receipt
    assert receipt["not_kept"] == [], receipt["not_kept"]
    chat.has_active(*patterns, kind=kind)


def test_someone_elses_birthday_is_not_the_users(rules):
    """Given "Bob's birthday is May 4" and the user's own "my birthday is June 9"
    Then both are stored, Bob's names Bob and is not the user's, and the user's is a fact."""
    rules.say("Bob's birthday is May 4", "my birthday is June 9")
    bob = rules.has_active("bob", "birthday")
    assert not re.search(r"user'?s birthday", bob["content"], re.I), bob
    own = rules.has_active("birthday", r"june\s*9|0?6-0?9|9\s*june", kind="fact")
    assert not re.search("bob", own["content"], re.I), own


def assert_secret_nowhere(chat: Chat, db, secret: str, receipts: list[dict]) -> None:
    for receipt in receipts:
        assert secret not in json.dumps(receipt), receipt
        again = chat.client.get(f"/v1/ingest/{receipt['id']}", headers=chat.headers)
        assert secret not in again.text
    assert secret not in json.dumps(chat.memories("all"))
    with db.connection() as conn:
        rows = conn.execute("SELECT row_to_json(r)::text AS row FROM ingest_receipts r").fetchall()
        history = conn.execute("SELECT row_to_json(h)::text AS row FROM memory_history h").fetchall()
    assert not any(secret in r["row"] for r in rows + history)


def test_secret_is_not_kept_and_the_receipt_says_why(chat, db):
    """Given "Remember that the wifi password is hunter2" on its own
    Then nothing is stored, the receipt is meaningful_no_write with a not_kept entry
    (reason secret, text null), and "hunter2" appears nowhere: not in the receipt, not in any
    memory, not in the stored receipt row, not in what the model was sent.
    And (control) when the secret shares a message with "I live in Lisbon", Lisbon is stored
    while the secret still is not."""
    alone = chat.say("Remember that the wifi password is hunter2", model=[])
    assert alone["status"] == "meaningful_no_write", alone
    assert {"message": 0, "reason": "secret", "text": None} in alone["not_kept"], alone
    if chat.mode == "rules":
        assert alone["not_kept"] == [{"message": 0, "reason": "secret", "text": None}]
    assert chat.memories("all") == []

    mixed = chat.say("Remember that the wifi password is hunter2. Also, I live in Lisbon",
                     model=[mem("The user lives in Lisbon", slot="user.home_city", value="lisbon")])
    assert mixed["status"] == "wrote", mixed
    assert {"message": 0, "reason": "secret", "text": None} in mixed["not_kept"], mixed
    chat.has_active("lisbon")
    assert_secret_nowhere(chat, db, "hunter2", [alone, mixed])
    if chat.llm is not None:
        assert len(chat.llm.extraction_requests) == 2
        for request in chat.llm.fake.requests:
            assert b"hunter2" not in request.body, request.prompt


SECRETS = [
    pytest.param("the password for the NAS is Tr0ub4dor&3 btw. I'm a photographer",
                 "Tr0ub4dor&3", ("photographer",), id="nas-password"),
    pytest.param("here's my openai key so you have it: sk-proj-9fK2mQ7xLp4RtV8wZ3nB. "
                 "I mostly write Python", "sk-proj-9fK2mQ7xLp4RtV8wZ3nB", ("python",),
                 id="api-key"),
    pytest.param("my bank PIN is 4921 haha don't tell anyone. my partner's name is Jess",
                 "4921", ("jess",), id="pin"),
]


@pytest.mark.parametrize("text,secret,control", SECRETS)
def test_secrets_in_other_words_are_never_kept(rules, db, text, secret, control):
    """Given a message that shares a secret (a password, an API key, a PIN) and a fact
    Then the fact is stored, the secret is a not_kept entry with reason secret and no text,
    and the secret string is in no receipt and no memory."""
    receipt = rules.say(text)
    assert any(n["reason"] == "secret" and n["text"] is None for n in receipt["not_kept"]), receipt
    rules.some_active(*control)
    assert_secret_nowhere(rules, db, secret, [receipt])


def test_preferences_with_different_contexts_both_stay(chat):
    """Given "I prefer Python for scripting"
    When later the user says "I prefer Rust for systems programming"
    Then both stay active (created, nothing superseded), and a question about each context
    ranks its own memory first."""
    chat.say("I prefer Python for scripting", model=[
        mem("The user prefers Python for scripting", "preference",
            "user.preferred_scripting_language", "python")])
    second = chat.say("I prefer Rust for systems programming", model=[
        mem("The user prefers Rust for systems programming", "preference",
            "user.preferred_systems_programming_language", "rust")])
    assert outcomes(second) == ["created"], second
    chat.has_active("python", kind="preference")
    chat.has_active("rust", kind="preference")
    assert chat.memories("superseded") == []
    chat.ranks_first("which language does the user prefer for systems programming?", "rust")
    chat.ranks_first("preferred scripting language", "python")


def test_model_generic_slot_with_context_does_not_supersede(model):
    """Given the model files both context-qualified preferences under the one slot
    user.preferred_language (python "for scripting", then rust "for systems programming"),
    as a model plausibly does
    Then the write path still keeps both active: a context makes them different facts."""
    model.say("I prefer Python for scripting", model=[
        mem("The user prefers Python for scripting", "preference", "user.preferred_language",
            "python")])
    model.say("I prefer Rust for systems programming", model=[
        mem("The user prefers Rust for systems programming", "preference",
            "user.preferred_language", "rust")])
    model.has_active("python")
    model.has_active("rust")
    assert model.memories("superseded") == []


def test_job_change_retires_the_old_employer(chat):
    """Given "I'm a data engineer at Acme and I live in Lisbon"
    When weeks later "Big news: I left Acme last month, I'm now at Globex"
    Then a memory naming Globex is active, no memory of the first conversation that names
    Acme is still active (the employer one is superseded), Lisbon stays active (control), and
    "where does the user work" ranks the Globex memory first."""
    first = chat.say("I'm a data engineer at Acme and I live in Lisbon", model=[
        mem("The user is a data engineer", slot="user.occupation", value="data engineer"),
        mem("The user works at Acme", slot="user.employer", value="acme"),
        mem("The user lives in Lisbon", slot="user.home_city", value="lisbon"),
    ])
    chat.say("Big news: I left Acme last month, I'm now at Globex", at=T0 + timedelta(weeks=5),
             model=[
                 mem("The user left Acme in March 2026", "event", valid_from=iso(2026, 3, 1)),
                 mem("The user now works at Globex", slot="user.employer", value="globex",
                     change=True),
             ])
    chat.some_active("globex")
    acme = [m for m in chat.written_by(first) if matches(m, "acme")]
    assert acme, [m["content"] for m in chat.written_by(first)]
    assert all(m["status"] != "active" for m in acme), acme
    assert any(m["status"] == "superseded" for m in acme), acme
    chat.has_active("lisbon")
    chat.ranks_first("where does the user work", "globex")


def test_move_supersedes_the_old_city(chat):
    """Given "I live in Lisbon" (and an unrelated fact about a dog)
    When later "We moved to Porto in September"
    Then Lisbon is superseded, Porto is active, the dog stays (control), and "where does the
    user live" ranks Porto first."""
    chat.say("I live in Lisbon", "I have a dog named Rex", model=[
        mem("The user lives in Lisbon", slot="user.home_city", value="lisbon", evidence=[0]),
        mem("The user has a dog named Rex", evidence=[1]),
    ])
    chat.say("We moved to Porto in September", at=at(2026, 10, 12), model=[
        mem("The user lives in Porto, having moved there in September 2026",
            slot="user.home_city", value="porto", valid_from=iso(2026, 9, 1), change=True)])
    chat.superseded("lisbon")
    chat.some_active("porto")
    chat.has_active("rex")
    chat.ranks_first("where does the user live", "porto")


def test_allergy_in_other_words_is_one_memory(rules):
    """Given "I'm allergic to peanuts"
    When later "I have a peanut allergy" (hashing embedder, no model)
    Then there is one active memory about it (the second reinforces or duplicates the first);
    a different allergy is a second memory (control)."""
    rules.say("I'm allergic to peanuts")
    again = rules.say("I have a peanut allergy")
    assert outcomes(again) in (["reinforced"], ["merged"]), again
    rules.has_active("peanut")
    rules.say("turns out I'm allergic to shellfish too")
    rules.has_active("peanut")
    rules.has_active("shellfish")


def test_model_allergies_slot_deduplicates_and_keeps_several(model):
    """Given the model files allergies under user.allergies (peanuts)
    When it extracts peanuts again in other words, then shellfish
    Then the repeat is one memory (reinforced), and shellfish joins it: a plural slot holds
    several values at once."""
    model.say("I'm allergic to peanuts", model=[
        mem("The user is allergic to peanuts.", slot="user.allergies", value="peanuts")])
    again = model.say("I have a peanut allergy", model=[
        mem("The user has a peanut allergy.", slot="user.allergies", value="peanuts")])
    assert outcomes(again) == ["reinforced"], again
    model.say("turns out I'm allergic to shellfish too", model=[
        mem("The user is allergic to shellfish.", slot="user.allergies", value="shellfish")])
    model.has_active("peanut")
    model.has_active("shellfish")


def test_receipt_accounts_for_every_clause_of_a_mixed_message(rules):
    """Given a message mixing a question, a hypothetical, reported speech, a fact and small
    talk (after a kept statement and an assistant turn)
    Then the facts are stored; the question and the hypothetical are not kept with those
    reasons; the reported speech and the small talk are accounted for (not kept, or a memory
    that says whose words they were); nothing about Berlin is stored; every not_kept text is
    a clause of that message; the kept message and the assistant turn have no entry."""
    text = ("should I move to Berlin? if I ever move to Berlin I'd rent a flat in Kreuzberg. "
            "my boss said I should learn Go. I have two cats. thanks, that's great!")
    receipt = rules.say("I work as a nurse at St Mary's",
                        ("assistant", "That sounds demanding! How can I help today?"),
                        text)
    rules.some_active("nurse")
    rules.some_active("cats")
    assert_not_kept_because(receipt, 2, "berlin", "question")
    assert_not_kept_because(receipt, 2, r"if i ever move|kreuzberg", "hypothetical")
    assert_accounted(rules, receipt, 2, "boss")
    assert_accounted(rules, receipt, 2, r"thanks|great")
    rules.none_stored("berlin")
    rules.none_stored("kreuzberg")
    for m in rules.stored(r"\bgo\b"):
        assert matches(m, "boss"), m
    assert {n["message"] for n in receipt["not_kept"]} == {2}, receipt["not_kept"]
    words = set(re.findall(r"[a-z0-9']+", text.lower()))
    for entry in receipt["not_kept"]:
        assert set(re.findall(r"[a-z0-9']+", entry["text"].lower())) <= words, entry


def test_model_account_of_what_it_left_out_reaches_the_receipt(model):
    """Given the same mixed message, and a model that reports the question, the hypothetical
    and the reported speech as not kept (and, wrongly, an entry for the assistant's turn),
    and says nothing at all about a last "ok ty!"
    Then the receipt carries the model's entries for the user's clauses with their reasons and
    text, the silent user message as model_skipped, and nothing for the assistant's turn."""
    text = ("should I move to Berlin? if I ever move to Berlin I'd rent a flat in Kreuzberg. "
            "my boss said I should learn Go. I have two cats. thanks, that's great!")
    reported = [
        {"message": 2, "reason": "question", "text": "should I move to Berlin?"},
        {"message": 2, "reason": "hypothetical",
         "text": "if I ever move to Berlin I'd rent a flat in Kreuzberg"},
        {"message": 2, "reason": "reported", "text": "my boss said I should learn Go"},
    ]
    receipt = model.say(
        "I work as a nurse at St Mary's",
        ("assistant", "That sounds demanding! How can I help today?"), text, "ok ty!",
        model=[mem("The user works as a nurse at St Mary's", evidence=[0]),
               mem("The user has two cats", evidence=[2])],
        skipped=[*reported, {"message": 1, "reason": "small_talk", "text": "How can I help"}])
    model.some_active("nurse")
    model.some_active("cats")
    for entry in reported:
        assert entry in receipt["not_kept"], receipt["not_kept"]
    assert {"message": 3, "reason": "model_skipped", "text": None} in receipt["not_kept"]
    assert {n["message"] for n in receipt["not_kept"]} == {2, 3}, receipt["not_kept"]


def test_rule_extractor_is_never_silent_about_a_user_message(rules):
    """Given a chatty conversation (a greeting, a move, a question, thanks, a diet fact)
    Then every user message is either cited by a memory or named in not_kept by the rule
    extractor itself (never the model_skipped placeholder), and the move and the diet fact
    are stored (control)."""
    turns = ["hey! quick one",
             "i moved to Ghent in january, loving it so far",
             ("assistant", "Ghent is great! What do you need?"),
             "what's a good bakery near the Korenmarkt?",
             "ok cool ty",
             "btw I'm gluten intolerant so nothing with wheat pls"]
    receipt = rules.say(*turns)
    rules.some_active("ghent")
    rules.some_active("gluten")
    assert not any(n["reason"] == "model_skipped" for n in receipt["not_kept"]), receipt
    cited = {e["message"] for m in rules.written_by(receipt) for e in m["evidence"]
             if e.get("receipt_id") == receipt["id"]}
    told = {n["message"] for n in receipt["not_kept"]}
    assert {0, 1, 3, 4, 5} <= cited | told, (cited, told)
    assert_not_kept_because(receipt, 3, "bakery", "question")


# ===========================================================================================
# More conversations, with and without the model
# ===========================================================================================


def test_job_change_without_marker_words(chat):
    """Given "I work at Shopify"
    When the user later says only "started at Stripe on Monday 🎉"
    Then Stripe is the active employer, Shopify is superseded, and "where does the user
    work" ranks Stripe first."""
    chat.say("I work at Shopify", model=[
        mem("The user works at Shopify", slot="user.employer", value="shopify")])
    chat.say("started at Stripe on Monday 🎉", at=at(2026, 3, 11), model=[
        mem("The user started working at Stripe on 2026-03-09", slot="user.employer",
            value="stripe", valid_from=iso(2026, 3, 9))])
    chat.some_active("stripe")
    chat.superseded("shopify")
    chat.ranks_first("where does the user work", "stripe")


def test_reversed_project_decision(chat):
    """Given "we decided to go with MySQL for the billing service"
    When three weeks later "we're switching the project back to Postgres"
    Then Postgres is the project's active database and MySQL is superseded."""
    chat.say("we decided to go with MySQL for the billing service", model=[
        mem("The team decided to use MySQL for the billing service", slot="project.database",
            value="mysql")])
    second = chat.say("we're switching the project back to Postgres", at=T0 + timedelta(weeks=3),
                      model=[mem("The project is switching back to PostgreSQL",
                                 slot="project.database", value="postgresql", change=True)])
    assert "superseded_existing" in outcomes(second), second
    chat.some_active("postgres")
    chat.superseded("mysql")
    chat.ranks_first("which database does the billing project use", "postgres")


def test_trip_date_moved(chat):
    """Given "my flight to Tokyo is on April 10"
    When "ugh, the airline moved my Tokyo flight to April 14"
    Then the active Tokyo flight is on 2026-04-14 and the April 10 one is superseded."""
    chat.judge_with(verdict_for_shown("supersedes", "the flight was rescheduled"))
    chat.say("my flight to Tokyo is on April 10", model=[
        mem("The user's flight to Tokyo is on 2026-04-10", "event",
            valid_from=iso(2026, 4, 10))])
    chat.say("ugh, the airline moved my Tokyo flight to April 14", at=at(2026, 3, 5), model=[
        mem("The user's flight to Tokyo was moved to 2026-04-14", "event",
            valid_from=iso(2026, 4, 14), change=True)])
    flight = chat.has_active("tokyo")
    assert valid_day(flight) == date(2026, 4, 14), flight
    old = chat.with_status("superseded", "tokyo")
    assert [valid_day(m) for m in old] == [date(2026, 4, 10)], old


def test_two_pets_both_stay(chat):
    """Given "I have a dog named Rex"
    When later "we also got a kitten, her name is Miso 🐱"
    Then both pets are active: a second pet is not a replacement."""
    chat.say("I have a dog named Rex", model=[
        mem("The user has a dog named Rex", slot="user.pets", value="rex")])
    second = chat.say("we also got a kitten, her name is Miso 🐱", model=[
        mem("The user has a kitten named Miso", slot="user.pets", value="miso")])
    assert "superseded_existing" not in outcomes(second), second
    chat.has_active("rex")
    chat.some_active("miso")
    assert chat.memories("superseded") == []


def test_several_languages_spoken_all_stay(chat):
    """Given "I speak French"
    When later "I also speak Spanish, and a bit of German"
    Then French, Spanish and German are all active."""
    chat.say("I speak French", model=[
        mem("The user speaks French", slot="user.languages", value="french")])
    chat.say("I also speak Spanish, and a bit of German", model=[
        mem("The user speaks Spanish", slot="user.languages", value="spanish"),
        mem("The user speaks a bit of German", slot="user.languages", value="german"),
    ])
    chat.has_active("french")
    chat.some_active("spanish")
    chat.some_active("german")
    assert chat.memories("superseded") == []


def test_diet_change_vegetarian_to_vegan(chat):
    """Given "I'm vegetarian"
    When months later "update: went fully vegan last month 🌱"
    Then vegan is the active diet and vegetarian is superseded."""
    chat.say("I'm vegetarian", model=[
        mem("The user is vegetarian", slot="user.diet", value="vegetarian")])
    chat.say("update: went fully vegan last month 🌱", at=at(2026, 6, 10), model=[
        mem("The user went fully vegan in May 2026", slot="user.diet", value="vegan",
            valid_from=iso(2026, 5, 1), change=True)])
    chat.some_active("vegan")
    chat.superseded("vegetarian")


def test_work_and_home_computers_are_separate_preferences(chat):
    """Given "at work I use a Mac, at home I'm on Linux"
    When later "switched my home machine to Windows last weekend"
    Then Windows replaces Linux only: Mac (work) stays active, Linux is no longer active."""
    chat.say("at work I use a Mac, at home I'm on Linux", model=[
        mem("At work, the user uses a Mac", "preference", "user.work_computer_os", "macos"),
        mem("At home, the user uses Linux", "preference", "user.home_computer_os", "linux"),
    ])
    chat.has_active(r"\bmac\b")
    chat.has_active("linux")
    chat.say("switched my home machine to Windows last weekend", model=[
        mem("The user switched their home machine to Windows", "preference",
            "user.home_computer_os", "windows", change=True)])
    chat.some_active("windows")
    chat.has_active(r"\bmac\b")
    chat.none_active("linux")


def test_assistant_claim_is_not_a_user_fact(chat):
    """Given the assistant asks "You live in Paris, right?"
    When the user answers "no, Lyon"
    Then Lyon is the user's active city and no memory says Paris."""
    chat.say(("assistant", "You live in Paris, right?"), "no, Lyon", model=[
        mem("The user lives in Lyon", slot="user.home_city", value="lyon", change=True)])
    chat.some_active("lyon")
    chat.none_stored("paris")


def test_model_memory_citing_only_the_assistant_is_dropped(model):
    """Given the model wrongly returns "The user lives in Paris" citing only the assistant's
    question, beside "The user lives in Lyon" citing the user's answer
    Then only Lyon is stored: what only the assistant said is not a user fact."""
    model.say(("assistant", "You live in Paris, right?"), "no, Lyon", model=[
        mem("The user lives in Paris", slot="user.home_city", value="paris", evidence=[0]),
        mem("The user lives in Lyon", slot="user.home_city", value="lyon", change=True,
            evidence=[1]),
    ])
    model.some_active("lyon")
    model.none_stored("paris")


def test_other_persons_preference_is_not_the_users(chat):
    """Given "I prefer coffee but my wife prefers tea"
    And later "my wife prefers tea" on its own
    Then the user's coffee preference stays active; anything stored about tea names the
    wife, and nothing makes tea the user's preference."""
    chat.say("I prefer coffee but my wife prefers tea", model=[
        mem("The user prefers coffee", "preference", "user.preferred_drink", "coffee"),
        mem("The user's wife prefers tea", "preference", "wife.preferred_drink", "tea"),
    ])
    chat.say("my wife prefers tea", model=[
        mem("The user's wife prefers tea", "preference", "wife.preferred_drink", "tea")])
    chat.has_active("coffee", kind="preference")
    for m in chat.stored(r"\btea\b"):
        assert matches(m, "wife"), m
        assert m["slot"] != "user.preferred_drink", m


def test_event_date_resolves_from_the_message_time(chat):
    """Given on Wednesday 2026-03-04 "I ran my first marathon last Sunday!!"
    Then an event about the marathon is active, valid from Sunday 2026-03-01."""
    chat.say("I ran my first marathon last Sunday!!", at=at(2026, 3, 4), model=[
        mem("The user ran their first marathon on 2026-03-01", "event",
            valid_from=iso(2026, 3, 1))])
    marathon = chat.has_active("marathon", kind="event")
    assert valid_day(marathon) == date(2026, 3, 1), marathon


def test_named_speaker_is_named_in_the_memory_and_found_by_name(chat):
    """Given Caroline says on 2023-05-08 "I went to a LGBTQ support group yesterday"
    Then the memory names Caroline, is dated 2023-05-07, and the keyword search "When did
    Caroline go to the support group?" ranks it first (over another thing Caroline said).
    With the model, the speaker's name reaches the model."""
    said = at(2023, 5, 8, 13)
    chat.say({"role": "user", "name": "Caroline", "content": "I'm researching adoption agencies"},
             at=said - timedelta(days=1),
             model=[mem("Caroline is researching adoption agencies")])
    chat.say({"role": "user", "name": "Caroline",
              "content": "I went to a LGBTQ support group yesterday"}, at=said,
             model=[mem("Caroline went to an LGBTQ support group on 2023-05-07", "event",
                        valid_from=iso(2023, 5, 7))])
    group = chat.has_active("support group", kind="event")
    assert matches(group, "caroline"), group
    assert not matches(group, r"\bthe user\b"), group
    assert valid_day(group) == date(2023, 5, 7), group
    chat.ranks_first("When did Caroline go to the support group?", "support group",
                     mode="keyword")
    if chat.llm is not None:
        assert all("Caroline" in r.prompt for r in chat.llm.extraction_requests)


# -- work -----------------------------------------------------------------------------------


def test_new_job_said_with_exclamation_and_no_subject(rules):
    """Given "i'm working for IBM rn"
    When a month later "got a new job at Datadog!! first day was today"
    Then Datadog is active and IBM superseded."""
    rules.say("i'm working for IBM rn")
    rules.say("got a new job at Datadog!! first day was today", at=T0 + timedelta(days=30))
    rules.some_active("datadog")
    rules.superseded(r"\bibm\b")


def test_joined_a_new_company(rules):
    """Given "I work for Klarna" in November
    When in February "I joined Spotify's data team in January"
    Then Spotify is active and Klarna superseded."""
    rules.say("I work for Klarna", at=at(2025, 11, 10))
    rules.say("I joined Spotify's data team in January", at=at(2026, 2, 15))
    rules.some_active("spotify")
    rules.superseded("klarna")


def test_promotion_changes_the_role(rules):
    """Given "I'm a junior frontend developer"
    When two months later "got promoted to senior frontend dev last week!!"
    Then the senior role is active and the junior one superseded."""
    rules.say("I'm a junior frontend developer")
    rules.say("got promoted to senior frontend dev last week!!", at=T0 + timedelta(days=60))
    rules.some_active("senior")
    rules.superseded("junior")


def test_quitting_retires_the_employer(rules):
    """Given "I work at Netflix"
    When "I quit my job at Netflix last Friday"
    Then the employer memory is superseded (whatever records the quitting stays true)."""
    first = rules.say("I work at Netflix")
    rules.say("I quit my job at Netflix last Friday", at=T0 + timedelta(weeks=2))
    [employer] = rules.written_by(first)
    assert employer["status"] == "superseded", employer


def test_team_tool_decision_reversed(rules):
    """Given "we picked Jira for tickets"
    When "we dropped Jira and moved to Linear last sprint"
    Then Linear is active and the Jira decision is superseded."""
    first = rules.say("we picked Jira for tickets")
    rules.say("we dropped Jira and moved to Linear last sprint", at=T0 + timedelta(weeks=6))
    rules.some_active("linear")
    [jira] = rules.written_by(first)
    assert jira["status"] == "superseded", jira


def test_skills_accumulate(rules):
    """Given "i'm pretty good at SQL"
    When later "been teaching myself Kubernetes lately"
    Then both skills are active."""
    rules.say("i'm pretty good at SQL")
    rules.say("been teaching myself Kubernetes lately")
    rules.some_active(r"\bsql\b")
    rules.some_active("kubernetes")
    assert rules.memories("superseded") == []


# -- where people live and travel -----------------------------------------------------------


def test_relocated_over_the_summer(rules):
    """Given "I live in Austin" in March
    When in October "we relocated to Denver over the summer"
    Then Denver is active, Austin superseded, and Denver answers where the user lives."""
    rules.say("I live in Austin")
    rules.say("we relocated to Denver over the summer", at=at(2026, 10, 5))
    rules.some_active("denver")
    rules.superseded("austin")
    rules.ranks_first("where does the user live", "denver")


def test_now_based_somewhere_else(rules):
    """Given "I'm based in Munich"
    When "now based in Berlin, finally 🙌"
    Then Berlin is active and Munich superseded."""
    rules.say("I'm based in Munich")
    rules.say("now based in Berlin, finally 🙌", at=T0 + timedelta(weeks=8))
    rules.some_active("berlin")
    rules.superseded("munich")


def test_correction_in_the_same_conversation(rules):
    """Given "I live in Lisbon", the assistant's reply, and "actually it's Porto, not Lisbon"
    Then Porto is active and no Lisbon memory is."""
    rules.say("I live in Lisbon", ("assistant", "Lisbon is lovely this time of year!"),
              "actually it's Porto, not Lisbon")
    rules.some_active("porto")
    rules.none_active("lisbon")


def test_past_residence_does_not_replace_the_current_one(rules):
    """Given "I live in Milan"
    When later "I used to live in Rome, loved it"
    Then Milan stays active and nothing about Rome is active."""
    rules.say("I live in Milan")
    rules.say("I used to live in Rome, loved it")
    rules.has_active("milan")
    rules.none_active("rome")


def test_a_trip_is_not_a_move(rules):
    """Given "I live in Lisbon"
    When "heading to Tokyo for a conference next week"
    Then Lisbon stays active and the trip is an event."""
    rules.say("I live in Lisbon")
    rules.say("heading to Tokyo for a conference next week")
    rules.has_active("lisbon")
    rules.some_active("tokyo", kind="event")


def test_maybe_moving_is_not_moving(rules):
    """Given "I live in Hamburg"
    When "I might move to Berlin next year, not sure yet"
    Then Hamburg stays active and no active memory says the user lives in Berlin."""
    rules.say("I live in Hamburg")
    rules.say("I might move to Berlin next year, not sure yet")
    rules.has_active("hamburg")
    rules.none_active(r"lives? in berlin|based in berlin|moved to berlin")


def test_question_about_moving_is_not_stored(rules):
    """Given "should I move to Berlin? I live in Hamburg and the rent is killing me"
    Then Hamburg is stored (control), nothing about Berlin is, and the question is not kept
    with reason question."""
    receipt = rules.say("should I move to Berlin? I live in Hamburg and the rent is killing me")
    rules.some_active("hamburg")
    rules.none_stored("berlin")
    assert_not_kept_because(receipt, 0, "berlin", "question")


# -- family, pets, people -------------------------------------------------------------------


def test_family_facts_stay_with_the_family_member(rules):
    """Given "I live in Valencia" and then "my sister Ana lives in Madrid and my brother Tom
    is a teacher"
    Then the user still lives in Valencia; Madrid is stored about Ana and teaching about Tom."""
    rules.say("I live in Valencia",
              "my sister Ana lives in Madrid and my brother Tom is a teacher")
    rules.has_active("valencia")
    rules.some_active("ana", "madrid")
    rules.some_active("tom", "teacher")
    for m in rules.stored("madrid"):
        assert matches(m, r"\bana\b|sister"), m
    for m in rules.stored("teacher"):
        assert matches(m, r"\btom\b|brother"), m


def test_kids_named_and_then_a_kid_event(rules):
    """Given "I've got two kids, Maya and Leo"
    When "Leo started kindergarten this week 🥹"
    Then both kids are remembered and the kindergarten event names Leo."""
    rules.say("I've got two kids, Maya and Leo")
    rules.say("Leo started kindergarten this week 🥹")
    rules.some_active("maya")
    rules.some_active("kindergarten", r"\bleo\b")
    assert rules.memories("superseded") == []


def test_a_named_speakers_family_is_theirs(rules):
    """Given Caroline says "My sister's wedding is in June"
    Then the memory names Caroline (not "the user")."""
    rules.say({"role": "user", "name": "Caroline", "content": "My sister's wedding is in June"})
    wedding = rules.some_active("wedding")[0]
    assert matches(wedding, "caroline"), wedding
    assert not matches(wedding, r"\bthe user\b"), wedding


def test_two_named_speakers_in_one_conversation(rules):
    """Given a group chat where Caroline and Melanie each say something about themselves
    Then each memory names its own speaker, and a question by name finds the right one."""
    rules.say({"role": "user", "name": "Caroline", "content": "I'm training to be a counselor"},
              {"role": "user", "name": "Melanie", "content": "I painted a lake sunrise last year"},
              at=at(2023, 5, 8, 13))
    rules.some_active("caroline", "counsel")
    painting = rules.some_active("paint")[0]
    assert matches(painting, "melanie") and not matches(painting, "caroline"), painting
    rules.ranks_first("What did Melanie paint?", "melanie", mode="keyword")


# -- health ---------------------------------------------------------------------------------


def test_two_allergies_both_stay(rules):
    """Given "I'm allergic to peanuts"
    When "found out I'm allergic to shellfish as well 😬"
    Then both allergies are active."""
    rules.say("I'm allergic to peanuts")
    rules.say("found out I'm allergic to shellfish as well 😬")
    rules.has_active("peanut")
    rules.some_active("shellfish")


def test_diagnosis_and_medication(rules):
    """Given "I was diagnosed with type 2 diabetes last year" and "I take metformin every
    morning"
    Then both are stored: a diagnosis in the past is still true now."""
    rules.say("I was diagnosed with type 2 diabetes last year", "I take metformin every morning")
    rules.some_active("diabetes")
    rules.some_active("metformin")


def test_same_diet_said_again_reinforces(rules):
    """Given "I'm vegan"
    When later "just so you know, I'm a vegan 🌱"
    Then there is one active vegan memory, reinforced."""
    rules.say("I'm vegan")
    again = rules.say("just so you know, I'm a vegan 🌱")
    assert outcomes(again) == ["reinforced"], again
    rules.has_active("vegan")


# -- preferences with context ---------------------------------------------------------------


def test_weekend_coffee_weekday_tea(rules):
    """Given "on weekends I drink coffee"
    When "weekdays it's green tea for me"
    Then both are active: each holds for its own days."""
    rules.say("on weekends I drink coffee")
    rules.say("weekdays it's green tea for me")
    rules.some_active("coffee")
    rules.some_active("tea")
    assert rules.memories("superseded") == []


def test_favourite_food_said_casually(rules):
    """Given "honestly 🍣 sushi is my fav food, can't get enough"
    Then a preference for sushi is active."""
    rules.say("honestly 🍣 sushi is my fav food, can't get enough")
    rules.some_active("sushi", kind="preference")


def test_travel_habits(rules):
    """Given "when I fly I always book an aisle seat. I hate layovers"
    Then both are stored: "when I fly" is a habit, not the past."""
    rules.say("when I fly I always book an aisle seat. I hate layovers")
    rules.some_active("aisle")
    rules.some_active("layover")


def test_suggestion_not_taken_is_not_stored(rules):
    """Given the assistant suggests Neovim
    When the user answers "hmm nah, I'll stick with VS Code"
    Then VS Code is stored and Neovim is not."""
    rules.say(("assistant", "You should try Neovim, it's much faster."),
              "hmm nah, I'll stick with VS Code")
    rules.some_active("vs code|vscode|visual studio code")
    rules.none_stored("neovim")


def test_hypotheticals_are_not_stored(rules):
    """Given "I use Go for backend services"
    When "what if I switched to Rust?" and "if I had more time I'd learn the piano. I play
    guitar though"
    Then Go stays active, guitar is stored (control), and neither Rust nor the piano is;
    the receipt names the hypotheticals."""
    rules.say("I use Go for backend services")
    receipt = rules.say("what if I switched to Rust?",
                        "if I had more time I'd learn the piano. I play guitar though")
    rules.has_active(r"\bgo\b")
    rules.some_active("guitar")
    rules.none_stored("rust")
    rules.none_stored("piano")
    assert_not_kept_because(receipt, 1, "piano", "hypothetical")
    assert_accounted(rules, receipt, 0, "rust")


def test_reported_advice_is_not_the_users_plan(rules):
    """Given "my mom keeps saying I should move back to Ohio lol. I live in Seattle"
    Then Seattle is active, and anything stored about Ohio says it is the mother's view."""
    receipt = rules.say("my mom keeps saying I should move back to Ohio lol. I live in Seattle")
    rules.has_active("seattle")
    for m in rules.stored("ohio"):
        assert matches(m, r"\bmom\b|mother"), m
    assert_accounted(rules, receipt, 0, "ohio")


def test_small_talk_beside_a_plan(rules):
    """Given "lol ok thanks!! 😊" and "I'm training for a half marathon in May"
    Then the training is stored and the small talk is accounted for, not stored."""
    receipt = rules.say("lol ok thanks!! 😊", "I'm training for a half marathon in May")
    rules.some_active("half marathon")
    assert any(n["message"] == 0 and n["reason"] != "model_skipped"
               for n in receipt["not_kept"]), receipt["not_kept"]
    rules.none_stored("thanks")


def test_run_on_lowercase_message(rules):
    """Given "so yeah im a teacher, i live in leeds w my partner sam and our 2 dogs lol"
    Then the occupation and the city are stored."""
    rules.say("so yeah im a teacher, i live in leeds w my partner sam and our 2 dogs lol")
    rules.some_active("teacher")
    rules.some_active("leeds")


# -- names, age, plans ----------------------------------------------------------------------


def test_name_and_preferred_name(rules):
    """Given "I'm Robert, but please call me Bob"
    When later "actually, call me Rob from now on"
    Then Robert (the name) stays, Rob is the active preferred name and Bob is superseded."""
    rules.say("I'm Robert, but please call me Bob")
    rules.some_active("robert")
    rules.some_active(r"\bbob\b")
    rules.say("actually, call me Rob from now on")
    rules.some_active("robert")
    rules.some_active(r"\brob\b")
    rules.superseded(r"\bbob\b")


def test_age_updates_on_a_birthday(rules):
    """Given "I'm 34"
    When on the birthday "it's my birthday! I'm 35 now 🎂"
    Then 35 is active and 34 superseded."""
    rules.say("I'm 34")
    rules.say("it's my birthday! I'm 35 now 🎂", at=at(2026, 6, 12))
    rules.some_active(r"\b35\b")
    rules.superseded(r"\b34\b")


def test_appointment_moved(rules):
    """Given on Tuesday "got a dentist appointment on Friday at 3pm"
    When on Wednesday "had to move the dentist to Monday morning"
    Then the active dentist appointment is on Monday 2026-03-09 and the Friday one is
    superseded."""
    rules.say("got a dentist appointment on Friday at 3pm", at=at(2026, 3, 3))
    rules.say("had to move the dentist to Monday morning", at=at(2026, 3, 4))
    dentist = rules.has_active("dentist")
    assert valid_day(dentist) == date(2026, 3, 9), dentist
    assert [valid_day(m) for m in rules.with_status("superseded", "dentist")] == [date(2026, 3, 6)]


def test_upcoming_family_event(rules):
    """Given on Tuesday 2026-03-03 "my daughter's piano recital is this Friday!"
    Then an event about the daughter's recital is active, dated 2026-03-06."""
    rules.say("my daughter's piano recital is this Friday!", at=at(2026, 3, 3))
    recital = rules.has_active("recital", kind="event")
    assert matches(recital, "daughter"), recital
    assert valid_day(recital) == date(2026, 3, 6), recital


# -- instructions to the agent --------------------------------------------------------------


def test_instructions_are_kept_and_a_request_question_is_not(rules):
    """Given "always answer in French. and please don't use emoji. can you answer in Spanish
    sometimes?"
    Then two instructions are active (French, no emoji), nothing about Spanish is stored, and
    the question is not kept with reason question."""
    receipt = rules.say("always answer in French. and please don't use emoji. "
                        "can you answer in Spanish sometimes?")
    rules.has_active("french", kind="instruction")
    rules.has_active("emoji", kind="instruction")
    rules.none_stored("spanish")
    assert_not_kept_because(receipt, 0, "spanish", "question")


def test_instruction_replaced(rules):
    """Given "always answer in French"
    When later "from now on answer in English please"
    Then the English instruction is active and the French one superseded."""
    rules.say("always answer in French")
    rules.say("from now on answer in English please")
    rules.some_active("english", kind="instruction")
    rules.superseded("french")
