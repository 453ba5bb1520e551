"""strata.client against a real server: the app under uvicorn on a loopback port over the
test's own database. Retries are tested against a tiny loopback HTTP server that answers
429/5xx on cue (not our code); configuration against real files and environments."""

from __future__ import annotations

import asyncio
import json
import logging
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections import deque
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from strata.client import (
    AsyncClient, Backoff, Client, ConfigError, InvalidInput, NotFound, ProviderUnavailable,
    RateLimited, ServerError, Suppressed, Unauthenticated, Unreachable, VersionConflict, resolve,
)
import strata.foundation.errors as core_errors


PATH = "users.alice"
T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)


@pytest.fixture
def strata(server, tenant):
    with Client(server, tenant.key, backoff=Backoff(base=0.01)) as c:
        yield c


def msg(text: str, at: datetime) -> dict:
    return {"role": "user", "content": text, "at": at.isoformat()}


# --------------------------------------------------------------------------------------
# Against the real server
# --------------------------------------------------------------------------------------


def test_remember_recall_and_the_memory_lifecycle(strata):
    """Given a statement remembered through ingest
    When it is recalled, read, updated, deleted, restored and forgotten through the client
    Then each answer is the server's typed model; a stale version raises VersionConflict with
    the current version; a forgotten memory is NotFound and cannot be created again."""
    receipt = strata.remember("I prefer PostgreSQL", PATH)
    assert receipt.status == "wrote" and receipt.items[0].outcome == "created"
    mid = receipt.items[0].memory_id
    strata.remember("I have a cat named Tom", "users.bob")

    hits = strata.recall("which database", paths=[PATH])
    assert [h.id for h in hits] == [mid]  # the other path is excluded...
    assert strata.recall("cat", paths=["users.bob"])  # ...and holds something (control)

    m = strata.memories.get(mid)
    assert m.version == 1 and m.status == "active" and m.slot == "user.preferred_database"
    m2 = strata.memories.update(mid, 1, importance=0.9, tags=["db"])
    assert m2.version == 2 and m2.tags == ["db"]
    with pytest.raises(VersionConflict) as stale:
        strata.memories.update(mid, 1, importance=0.1)
    assert stale.value.status == 412 and stale.value.actual == 2
    assert stale.value.field == "expected_version"

    assert [e.version for e in strata.memories.history(mid)] == [1]
    assert strata.memories.delete(mid).deleted
    with pytest.raises(NotFound):
        strata.memories.get(mid)
    assert strata.memories.restore(mid).status == "active"
    forgotten = strata.memories.forget(mid)
    assert forgotten.forgotten and forgotten.tombstone_ids
    with pytest.raises(NotFound) as gone:
        strata.memories.get(mid)
    assert gone.value.status == 404 and gone.value.code == "not_found"
    again = strata.memories.add("The user prefers PostgreSQL", PATH)
    assert again.status == "blocked" and again.tombstone_id == forgotten.tombstone_ids[0]
    assert strata.memories.add("The user prefers tea", PATH).status == "inserted"  # control


def test_review_and_relationships(strata):
    """Given a preference, its change, and an explicit change back (a candidate)
    When the candidate is listed and promoted, and another rejected with suppress
    Then review items carry what they contradict, promotion makes the candidate active, and
    related() shows the SUPERSEDES edge."""
    strata.ingest([msg("I prefer MongoDB", T0)], PATH, wait=True)
    strata.ingest([msg("I've switched to PostgreSQL", T0 + timedelta(weeks=3))], PATH, wait=True)
    back = strata.ingest([msg("I've gone back to MongoDB", T0 + timedelta(weeks=6))], PATH,
                         wait=True)
    cid = back.items[0].memory_id
    page = strata.review.list()
    assert [i.id for i in page.items] == [cid] and page.items[0].contradicts
    promoted = strata.review.promote(cid)
    assert promoted.status == "active"
    edges = strata.memories.related(cid)
    assert any(e.type == "SUPERSEDES" and e.direction == "outgoing" for e in edges), edges
    assert strata.review.list().items == []
    superseded = strata.memories.list(path=PATH, status="superseded").items
    assert len(superseded) == 2 and all(m.status == "superseded" for m in superseded)
    everything = list(strata.memories.iter(path=PATH, status="all", limit=1))
    assert len(everything) == 3  # paging one at a time reaches all three


def test_errors_are_typed_and_carry_the_servers_code(server, strata, make_tenant):
    """A wrong key is Unauthenticated (401); another tenant's id is NotFound; a bad path is
    the server's InvalidInput (422) naming the field; a bad search is refused by the client
    before sending (status None); every one is also the core error class."""
    with Client(server, "sk_wrong", max_retries=0) as bad:
        with pytest.raises(Unauthenticated) as e:
            bad.recall("anything")
    assert e.value.status == 401 and isinstance(e.value, core_errors.Unauthenticated)

    mine = strata.memories.add("The user likes jazz", PATH).id
    other = make_tenant("other")
    with Client(server, other.key) as theirs:
        with pytest.raises(core_errors.NotFound):
            theirs.memories.get(mine)
    assert strata.memories.get(mine).content == "The user likes jazz"  # control

    with pytest.raises(InvalidInput) as e:
        strata.memories.add("x y", "Not A Valid Path!")
    assert e.value.status == 422 and e.value.field and "path" in e.value.field
    with pytest.raises(InvalidInput) as e:
        strata.search("q", limit=1000)
    assert e.value.status is None and e.value.field == "limit"
    with pytest.raises(InvalidInput) as e:
        strata.memories.get("not-a-uuid")
    assert e.value.field == "id"


def test_suppressed_restore_is_a_typed_error(strata):
    """Restoring a version whose value was since rejected with suppress raises Suppressed
    with the tombstone id (HTTP 409)."""
    strata.ingest([msg("I use vim", T0)], PATH, wait=True)
    strata.ingest([msg("I've switched to emacs", T0 + timedelta(weeks=3))], PATH, wait=True)
    back = strata.ingest([msg("I've gone back to vim", T0 + timedelta(weeks=6))], PATH, wait=True)
    cid = back.items[0].memory_id
    strata.review.reject(cid, suppress=True)
    [vim] = [m for m in strata.memories.list(path=PATH, status="superseded").items]
    with pytest.raises(Suppressed) as e:
        strata.memories.restore(vim.id, version=1)
    assert e.value.status == 409 and e.value.tombstone_id


def test_async_client_round_trip(server, tenant):
    """The async client: remember (without waiting) then wait_for the receipt, recall,
    update, and a typed error, all awaited."""

    async def run():
        async with AsyncClient(server, tenant.key) as c:
            queued = await c.remember("I prefer PostgreSQL", PATH, wait=False)
            done = await c.wait_for(queued.receipt_id, timeout=30, interval=0.05)
            assert done.status == "wrote", done
            mid = done.items[0].memory_id
            hits = await c.recall("database", paths=[PATH], explain=True)
            assert hits[0].id == mid and hits[0].explain["score"] > 0
            m = await c.memories.update(mid, 1, pinned=True)
            assert m.pinned and m.version == 2
            with pytest.raises(NotFound):
                await c.memories.get(uuid.uuid4())
            return [x async for x in c.memories.iter(path=PATH)]

    items = asyncio.run(run())
    assert [m.content for m in items] == ["The user prefers PostgreSQL"]


def test_health_and_idempotent_remember(strata):
    """health() answers; remember with the same idempotency key twice returns the first
    receipt and writes once."""
    assert strata.health().status == "ok"
    a = strata.remember("I live in Berlin", PATH, idempotency_key="k-1")
    b = strata.remember("I live in Berlin", PATH, idempotency_key="k-1")
    assert a.receipt_id == b.receipt_id and len(strata.memories.list(path=PATH).items) == 1
    assert a == b  # the replay answers as the first did, content and all


def test_remember_receipt_says_what_was_not_kept_and_why(strata):
    """Given a statement holding a fact and a question, and one asking to remember a password
    When each is remembered
    Then the answer's items hold the fact with its content, as stored (control), and its
    not_kept the question with its text, typed as the client's NotKept; the password's answer
    keeps nothing and reports a secret without its text."""
    from strata.client import NotKept, Remembered

    receipt = strata.remember("I live in Lisbon. Should I move to Berlin?", PATH)
    assert isinstance(receipt, Remembered)
    assert receipt.status == "wrote" and [i.outcome for i in receipt.items] == ["created"]
    assert receipt.items[0].content == "The user lives in Lisbon"
    assert strata.memories.get(receipt.items[0].memory_id).content == receipt.items[0].content
    assert receipt.summary == "kept 1 (1 created); not kept 1 (1 question)"
    [question] = receipt.not_kept
    assert isinstance(question, NotKept)
    assert (question.message, question.reason) == (0, "question") and "Berlin" in question.text

    secret = strata.remember("Remember that the wifi password is hunter2", PATH)
    assert secret.status == "meaningful_no_write" and secret.items == []
    assert secret.not_kept == [NotKept(message=0, reason="secret", text=None)]
    assert "hunter2" not in secret.model_dump_json()


def test_remember_as_is_writes_one_memory_through_the_gate(strata):
    """Given a statement
    When it is remembered with as_is=True, then again, then with a kind
    Then the answer is the one item written: created with the statement verbatim, then
    reinforced (the same memory, version 2), and the kind is the one given; a secret is
    refused naming content; arguments of the other path are refused before anything is
    sent."""
    made = strata.remember("I drive a Volvo", PATH, as_is=True)
    [item] = made.items
    assert (made.status, made.path, made.receipt_id, made.summary) == (
        "wrote", PATH, None, "kept as written")
    assert (item.outcome, item.content, item.version) == ("created", "I drive a Volvo", 1)
    m = strata.memories.get(item.memory_id)
    assert (m.content, m.kind, m.path) == ("I drive a Volvo", "fact", PATH)
    [again] = strata.remember("I drive a Volvo", PATH, as_is=True).items
    assert (again.outcome, again.memory_id, again.version) == ("reinforced", item.memory_id, 2)
    [rule] = strata.remember("Always answer in French", PATH, as_is=True,
                             kind="instruction").items
    assert strata.memories.get(rule.memory_id).kind == "instruction"

    with pytest.raises(InvalidInput) as refused:
        strata.remember("Remember that the wifi password is hunter2", PATH, as_is=True)
    assert refused.value.field == "content" and "hunter2" not in str(refused.value)
    with pytest.raises(InvalidInput) as wrong:
        strata.remember("I like tea", PATH, kind="preference")  # kind is extraction's to decide
    assert wrong.value.field == "kind" and wrong.value.status is None
    with pytest.raises(InvalidInput) as wrong:
        strata.remember("I like tea", PATH, as_is=True, idempotency_key="k")
    assert wrong.value.field == "idempotency_key"
    assert sorted(x.content for x in strata.memories.list(path=PATH).items) == [
        "Always answer in French", "I drive a Volvo"]


def test_async_remember_as_is(server, tenant):
    async def run():
        async with AsyncClient(server, tenant.key) as c:
            made = await c.remember("I drive a Volvo", PATH, as_is=True)
            return made, await c.memories.get(made.items[0].memory_id)

    made, memory = asyncio.run(run())
    assert made.items[0].outcome == "created" and made.items[0].content == "I drive a Volvo"
    assert memory.content == "I drive a Volvo"


# --------------------------------------------------------------------------------------
# Retries, against a loopback server that answers on cue
# --------------------------------------------------------------------------------------


class Scripted(BaseHTTPRequestHandler):
    script: deque
    seen: list

    def _answer(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        body = self.rfile.read(length) if length else b""
        self.seen.append((self.command, self.path, dict(self.headers), body))
        status, headers, payload = self.script.popleft() if self.script else (
            500, {}, {"error": {"code": "internal", "message": "script ran out"}})
        data = json.dumps(payload).encode()
        self.send_response(status)
        for k, v in {"content-type": "application/json", **headers}.items():
            self.send_header(k, v)
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    do_GET = do_POST = do_PATCH = do_DELETE = _answer

    def log_message(self, *args) -> None:
        pass


@contextmanager
def scripted(*answers):
    handler = type("H", (Scripted,), {"script": deque(answers), "seen": []})
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}", handler.seen
    finally:
        httpd.shutdown()
        httpd.server_close()


OK = (200, {}, {"status": "ok"})
LIMITED = (429, {"retry-after": "0"}, {"error": {"code": "rate_limited", "message": "slow down"}})
BOOM = (500, {}, {"error": {"code": "internal", "message": "internal error"}})
DOWN = (503, {}, {"error": {"code": "provider_unavailable", "message": "a model provider failed"}})
FAST = Backoff(base=0.001, cap=0.002)


def test_429_then_200_is_retried_and_logged_without_the_key(caplog):
    with scripted(LIMITED, OK) as (url, seen), Client(url, "sk_secret", backoff=FAST) as c:
        with caplog.at_level(logging.INFO, logger="strata.client"):
            assert c.health().status == "ok"
    assert len(seen) == 2
    assert "HTTP 429" in caplog.text and "/healthz" in caplog.text
    assert "sk_secret" not in caplog.text


def test_retry_after_is_honoured():
    """A Retry-After of 1 s holds the retry back that long, although the backoff would not."""
    slow = (429, {"retry-after": "1"}, {"error": {"code": "rate_limited", "message": "wait"}})
    with scripted(slow, OK) as (url, seen), Client(url, "k", backoff=FAST) as c:
        started = time.monotonic()
        c.health()
        elapsed = time.monotonic() - started
    assert len(seen) == 2 and elapsed >= 1.0


def test_retries_stop_after_max_and_raise_the_last_error():
    with scripted(*[DOWN] * 5) as (url, seen), Client(url, "k", max_retries=2, backoff=FAST) as c:
        with pytest.raises(ProviderUnavailable) as e:
            c.health()
    assert len(seen) == 3 and e.value.status == 503
    with scripted(*[LIMITED] * 3) as (url, seen), Client(url, "k", max_retries=0, backoff=FAST) as c:
        with pytest.raises(RateLimited):
            c.health()
    assert len(seen) == 1


def test_a_500_is_retried_for_reads_but_not_for_writes():
    """A search (safe to repeat) is retried after a 500; a create (not safe: it may have been
    written) is not, and surfaces as ServerError."""
    results = (200, {}, {"results": []})
    with scripted(BOOM, results) as (url, seen), Client(url, "k", backoff=FAST) as c:
        assert c.search("what do I like") == []
    assert len(seen) == 2
    with scripted(BOOM, (200, {}, {"results": []})) as (url, seen), Client(url, "k", backoff=FAST) as c:
        with pytest.raises(ServerError):
            c.memories.add("The user likes tea", "users.a")
    assert len(seen) == 1
    body = json.loads(seen[0][3])
    assert body["memories"][0]["content"] == "The user likes tea"


def test_ingest_retries_replay_the_same_idempotency_key():
    receipt = {"id": str(uuid.uuid4()), "path": "users.a", "status": "wrote", "extractor": "rule",
               "items": [], "counts": {}, "timings": {}, "notes": [], "error": None,
               "idempotency_key": "x", "execution_id": None,
               "created_at": "2026-01-01T00:00:00+00:00", "updated_at": "2026-01-01T00:00:00+00:00"}
    with scripted(BOOM, (200, {}, receipt)) as (url, seen), Client(url, "k", backoff=FAST) as c:
        assert c.remember("I like tea", "users.a").status == "wrote"
    keys = [json.loads(s[3])["idempotency_key"] for s in seen]
    assert len(keys) == 2 and keys[0] == keys[1] and keys[0].startswith("client-")


def test_unreachable_server_is_retried_then_typed():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again: nothing listens there
    with Client(f"http://127.0.0.1:{port}", "k", max_retries=2, backoff=FAST) as c:
        with pytest.raises(Unreachable) as e:
            c.health()
    assert e.value.status is None and str(port) in e.value.message


def test_async_client_retries_too():
    async def run(url):
        async with AsyncClient(url, "k", backoff=FAST) as c:
            return await c.health()

    with scripted(LIMITED, DOWN, OK) as (url, seen):
        assert asyncio.run(run(url)).status == "ok"
    assert len(seen) == 3


def test_backoff_grows_with_full_jitter_and_a_cap():
    import random

    b = Backoff(base=0.5, cap=4.0, rng=random.Random(7))
    samples = {n: [b.delay(n, None) for _ in range(200)] for n in range(6)}
    assert all(0 <= d <= min(4.0, 0.5 * 2 ** n) for n, ds in samples.items() for d in ds)
    assert max(samples[3]) > max(samples[0]) and max(samples[5]) <= 4.0
    assert b.delay(0, 2.5) >= 2.5  # Retry-After wins when it asks for more
    assert b.delay(0, 10_000) == 60.0  # but a server cannot park the client forever


# --------------------------------------------------------------------------------------
# Configuration
# --------------------------------------------------------------------------------------


def test_config_precedence(tmp_path):
    """explicit > named profile > STRATA_URL/STRATA_KEY > [default] profile > built-in URL."""
    key_file = tmp_path / "admin.key"
    key_file.write_text("sk_from_file\n")
    profiles = tmp_path / "profiles.toml"
    profiles.write_text(
        '[default]\nurl = "http://default:1"\nkey_file = "admin.key"\n\n'
        '[prod]\nurl = "https://prod.example"\nkey = "sk_prod"\ntimeout = 5\n')
    env = {"STRATA_PROFILES": str(profiles)}
    assert (resolve(env=env).url, resolve(env=env).key) == ("http://default:1", "sk_from_file")
    env_vars = {**env, "STRATA_URL": "http://env:2/", "STRATA_KEY": "sk_env"}
    assert (resolve(env=env_vars).url, resolve(env=env_vars).key) == ("http://env:2", "sk_env")
    prod = resolve(env={**env_vars, "STRATA_PROFILE": "prod"})
    assert (prod.url, prod.key, prod.timeout, prod.profile) == (
        "https://prod.example", "sk_prod", 5.0, "prod")
    assert resolve("http://explicit:3", "sk_x", "prod", env=env_vars).key == "sk_x"
    assert resolve(env={"STRATA_PROFILES": str(tmp_path / "none.toml")}).url == "http://127.0.0.1:8080"
    assert "sk_prod" not in repr(prod)


@pytest.mark.parametrize("content, profile, message", [
    ("[default\n", None, "cannot read the profile file"),
    ('[default]\nurl = "http://x"\n', "prod", "no profile 'prod'"),
    ('[default]\nkey_file = "missing.key"\n', None, "cannot read key_file"),
    ('[default]\nurl = "ftp://x"\n', None, "must start with http"),
    ('[default]\npassword = "x"\n', None, "unknown settings: password"),
])
def test_bad_config_is_a_config_error(tmp_path, content, profile, message):
    profiles = tmp_path / "profiles.toml"
    profiles.write_text(content)
    with pytest.raises(ConfigError, match=message):
        resolve(profile=profile, env={"STRATA_PROFILES": str(profiles)})


def test_importing_the_client_stays_light():
    """`import strata.client` loads neither psycopg nor the shared models, which load on first
    use; loading them (the server's own shape modules) loads neither psycopg nor the store
    (control: importing the store does load psycopg). tests/test_client_install.py holds a
    client-only install to the same."""
    code = ("import sys, strata.client; "
            "print('psycopg' in sys.modules, 'strata.memories' in sys.modules, 'fastapi' in sys.modules); "
            "from strata.client import Memory, Receipt, SearchResult; "
            "print('psycopg' in sys.modules, 'strata.memories.store' in sys.modules); "
            "import strata.memories.store; print('psycopg' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False", "False", "False", "False", "True"]
