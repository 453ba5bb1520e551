"""Database deadlines (strata.db.deadline) against the real PostgreSQL: a block's budget
covers all its calls, a call still running at the deadline is cut and its connection
discarded, a transaction cut before COMMIT leaves nothing, a live but slow server cancels
the statement itself, and an HTTP request's budget runs from its first database call.

The frozen server (the case the client-side cut exists for) is tests/test_outage.py's.
Budgets here are tenths of a second against sleeps of seconds: what is asserted is which
call failed and how, never how fast.
"""

from __future__ import annotations

import time
import uuid

import pytest
from pydantic import ValidationError

from strata.db import deadline
from strata.db.deadline import WATCHDOG
from strata.db.pool import statement_timeout_ms
from strata.foundation.config import Settings
from strata.foundation.errors import Unavailable


def _bad_returns(db) -> int:
    """Connections the pool has discarded on return (broken, not lent again)."""
    return db.pool.get_stats().get("returns_bad", 0)


def test_nested_blocks_keep_the_tighter_budget_and_spend_from_both():
    """Given a block inside another
    When the inner one asks for more than the outer has left, or for less, a call runs, or
    a batch extends the inner budget
    Then what is left is the tighter of the two, the call spends from both, an extension
    grows both, and outside any block there is no budget."""
    assert deadline.left() is None
    with deadline.within(5):
        with deadline.within(60):
            assert deadline.left() <= 5
        with deadline.within(0.1):
            assert deadline.left() <= 0.1
            with deadline.call(None) as call:
                assert call.deadline(time.monotonic()) <= time.monotonic() + 0.1
                time.sleep(0.2)
            assert deadline.left() < 0  # spent
        assert deadline.left() <= 4.8  # the inner call spent from the outer too
        with deadline.within(0.1):
            deadline.extend(10)  # a batch's budget grows, and the outer one with it
            assert 10 < deadline.left() <= 10.1  # the inner one is still the tighter
    assert deadline.left() is None
    deadline.extend(10)  # outside any block: nothing to extend
    assert deadline.left() is None


def test_a_budget_covers_every_call_of_the_block_and_the_cut_connection_is_discarded(db):
    """Given a 0.5 s budget and three calls of 0.3 s each (autocommit reads: no server-side
    timeout, so only the client can end them)
    When they run one after another in the block
    Then one of them fails 503-style (Unavailable) -- the budget is the block's, not each
    call's -- the pool discards the connection it was cut on, and the next call outside the
    block succeeds (control: the same three calls under a 10 s budget all succeed)."""
    def three_calls() -> int:
        done = 0
        for _ in range(3):
            with db.connection() as conn:
                conn.execute("SELECT pg_sleep(0.3)")
            done += 1
        return done

    with deadline.within(10):
        assert three_calls() == 3  # control

    bad, cuts = _bad_returns(db), WATCHDOG.cuts
    with deadline.within(0.5), pytest.raises(Unavailable):
        three_calls()
    assert WATCHDOG.cuts == cuts + 1
    assert _bad_returns(db) == bad + 1
    with db.connection() as conn:
        assert conn.execute("SELECT 1 AS one").fetchone()["one"] == 1


def test_a_connection_cut_after_its_last_call_is_not_lent_again(db):
    """Given a block that made its call and then kept the connection past the deadline
    When the watchdog cuts the idle socket and the block ends without another call
    Then the block ends without an error (its work was done), the connection is closed on
    the way out so the pool discards it, and the next checkout gets a working one."""
    bad = _bad_returns(db)
    with deadline.within(0.3), db.connection() as conn:
        assert conn.execute("SELECT 1 AS one").fetchone()["one"] == 1
        time.sleep(0.6)
    assert conn.closed and _bad_returns(db) == bad + 1
    with db.connection() as conn:
        assert conn.execute("SELECT 1 AS one").fetchone()["one"] == 1


def test_a_transaction_cut_before_commit_leaves_nothing(db):
    """Given a transaction that inserts a row and then holds its connection past the
    deadline without a call (the work between two statements took too long)
    When the watchdog cuts it and the COMMIT fails
    Then the request sees Unavailable and the row is not there: the server rolled back
    when the socket closed (control: the same transaction inside its deadline commits)."""
    with db.connection() as conn:
        conn.execute("CREATE TABLE deadline_probe (id uuid PRIMARY KEY)")
    kept, cut = uuid.uuid4(), uuid.uuid4()

    with deadline.within(10), db.transaction() as cur:
        cur.execute("INSERT INTO deadline_probe VALUES (%s)", (kept,))

    with pytest.raises(Unavailable), deadline.within(0.3), db.transaction() as cur:
        cur.execute("INSERT INTO deadline_probe VALUES (%s)", (cut,))
        time.sleep(1)

    with db.connection() as conn:
        rows = {r["id"] for r in conn.execute("SELECT id FROM deadline_probe").fetchall()}
    assert rows == {kept}


def test_a_slow_live_server_cancels_the_statement_and_keeps_the_connection(db):
    """Given a transaction under a 1.5 s deadline whose statement would take 5 s on a
    server that answers
    When the transaction's statement_timeout (under the deadline) fires first
    Then the request sees Unavailable, the watchdog cut nothing and the pool keeps the
    connection (the server cancelled cleanly), and the timeout was set for the transaction
    only (control: a statement under the timeout completes)."""
    cuts, bad = WATCHDOG.cuts, _bad_returns(db)
    with deadline.within(1.5), db.transaction() as cur:
        assert cur.execute("SELECT 1 AS ok FROM pg_sleep(0.05)").fetchone()["ok"] == 1  # control
        timeout = cur.execute("SHOW statement_timeout").fetchone()["statement_timeout"]
    assert timeout.endswith("ms") and 0 < int(timeout[:-2]) <= 1300

    with pytest.raises(Unavailable) as caught, deadline.within(1.5), db.transaction() as cur:
        cur.execute("SELECT pg_sleep(5)")
    assert caught.value.failure == "QueryCanceled"
    assert WATCHDOG.cuts == cuts and _bad_returns(db) == bad
    with db.connection() as conn:  # outside any transaction: the server's own default
        assert conn.execute("SHOW statement_timeout").fetchone()["statement_timeout"] == "0"


def test_statement_timeouts_sit_under_what_is_left():
    assert statement_timeout_ms(10.0) == 9000
    assert statement_timeout_ms(1.0) == 800  # at least 0.2 s to come back
    assert statement_timeout_ms(0.1) == 1  # never 0, which would mean no timeout


def test_time_outside_database_calls_spends_nothing(db):
    """Given a 0.5 s budget of database time
    When a 0.3 s call runs, then a second of other work (a slow upload, a model call), then
    a quick call, then another 0.3 s call
    Then the quick call succeeds -- the second of other work spent none of the budget --
    and the last one is cut (0.3 + 0.3 > 0.5); once the budget is spent, a call fails at
    once without a checkout (DeadlineExceeded)."""
    with deadline.within(0.5):
        with db.connection() as conn:
            conn.execute("SELECT pg_sleep(0.3)")
        time.sleep(1)
        with db.connection() as conn:
            assert conn.execute("SELECT 1 AS one").fetchone()["one"] == 1
        with pytest.raises(Unavailable) as cut, db.connection() as conn:
            conn.execute("SELECT pg_sleep(0.3)")
        assert cut.value.failure == "OperationalError"
        with pytest.raises(Unavailable) as spent, db.connection():
            pass
    assert spent.value.failure == "DeadlineExceeded"


def test_a_request_answers_503_with_retry_after_when_its_budget_runs_out(db, embedder, tenant):
    """Given the app with a 1 s request deadline, and a database whose every new
    statement waits on a row lock another session holds
    When a key is authenticated and a memory listed
    Then the answer is 503 unavailable with Retry-After -- not a hang until the lock goes
    (control: once the lock is released, the same request answers 200)."""
    from fastapi.testclient import TestClient

    from strata.api.app import create_app

    settings = Settings(embedding_dim=embedder.dim, rate_limit=False, db_request_deadline_s=1.0)
    app = create_app(["memories"], db=db, embedder=embedder, settings=settings)
    with TestClient(app, raise_server_exceptions=False) as client:
        assert client.get("/v1/memories", headers=tenant.headers).status_code == 200  # warm
        with db.connection() as holder, holder.transaction():
            # Authentication reads the key; an exclusive lock on its table makes it wait.
            holder.execute("LOCK TABLE api_keys IN ACCESS EXCLUSIVE MODE")
            r = client.get("/v1/memories", headers=tenant.headers)
            assert r.status_code == 503, r.text
            assert r.json()["error"]["code"] == "unavailable"
            assert int(r.headers["retry-after"]) > 0
        assert client.get("/v1/memories", headers=tenant.headers).status_code == 200


def test_the_connect_timeout_has_libpqs_floor():
    """libpq treats a connect_timeout under 2 s as 2 s; the setting says so by refusing it."""
    with pytest.raises(ValidationError) as caught:
        Settings(db_connect_timeout_s=1)
    assert "db_connect_timeout_s" in str(caught.value)
    assert Settings(db_connect_timeout_s=3).db_connect_timeout_s == 3


def test_the_authorizers_lookup_is_denied_unavailable_not_hung(db, tenant):
    """Given the Lambda authorizer's resolver with a 0.5 s lookup, and a key table another
    session holds an exclusive lock on (every read of it waits)
    When the key is resolved
    Then the answer is a deny for `unavailable`, uncached -- not a wait until the Lambda
    times out -- and once the lock is gone the same key resolves (control)."""
    from strata.api.authorizer import KeyResolver

    resolver = KeyResolver(ttl_s=60, connect_wait_s=0.5)
    header = tenant.headers["Authorization"]
    with db.connection() as holder, holder.transaction():
        holder.execute("LOCK TABLE api_keys IN ACCESS EXCLUSIVE MODE")
        denied = resolver.resolve(header, db)
    assert (denied.authorized, denied.reason) == (False, "unavailable")
    allowed = resolver.resolve(header, db)
    assert allowed.authorized and allowed.reason == "ok"


def test_a_model_call_with_a_connection_held_spends_no_database_budget(
        db, embedder, tenant, settings, fake_llm):
    """Given the app with a 0.8 s request budget and a model conflict judge (the real
    openai client against the scripted server), and an active memory
    When similar memories are written directly -- each one's judge is called inside the
    write's transaction, with the connection held -- the second judge answering after 1.5 s
    Then that write answers 200 although the request took longer than its whole database
    budget: the model call has its own timeout and spends none of it (control: the judge
    was really asked each time, and the request really took over 1.5 s)."""
    from fastapi.testclient import TestClient

    from strata.api.app import create_app
    from fake_openai import slow

    team = "Alice works on the billing service {} team"
    fake_llm.script({"verdicts": []}, slow(1.5, then={"verdicts": []}))

    def write(client, content: str):
        return client.post("/v1/memories", headers=tenant.headers,
                           json={"memories": [{"content": content, "path": "shared.team"}]})

    def app(budget_s: float):
        return create_app(["memories"], db=db, embedder=embedder, settings=fake_llm.settings(
            settings, rate_limit=False, db_request_deadline_s=budget_s,
            db_request_deadline_per_item_s=0, llm_max_retries=0))

    # The first judged write of a process imports the judge's modules in the transaction.
    with TestClient(app(30), raise_server_exceptions=False) as client:
        assert write(client, team.format("core")).status_code == 200
        assert write(client, team.format("platform")).status_code == 200
        assert len(fake_llm.completions) == 1  # judged, quickly
    with TestClient(app(0.8), raise_server_exceptions=False) as client:
        started = time.monotonic()
        r = write(client, team.format("payments platform"))
        took = time.monotonic() - started
    assert r.status_code == 200, (r.text, took)
    assert len(fake_llm.completions) == 2 and took > 1.5
