"""Deadlines for database work: a request answers in bounded time whatever the database does.

A block of work (an API or MCP request, a readiness check, the authorizer's key lookup) has
a *budget* of database time: :func:`within` sets it, and every database call in the block --
the wait for a pooled connection, the statements, the time a connection is held -- spends
from it, so a request that makes three calls gets one budget, not three. Time with no call
in flight (reading the request body, rendering the answer) spends nothing, and neither does
a model call, even one made with a connection held (:func:`excused`): those have their own
timeouts, and a slow upload or a slow model must not turn into a 503 about the database. Each call's deadline is now plus what is left of the budget (of the tightest one,
when blocks nest). Work outside any block (a job: the CLI, maintenance, the ingest
pipeline's steps) gets the database's own per-call deadline (``STRATA_DB_JOB_DEADLINE_S``).

Why the client enforces it. A database that is frozen (a hung host, an Aurora failover, a
SIGSTOPped server) still has a kernel that ACKs TCP, so keepalives and ``tcp_user_timeout``
never fire; its ``statement_timeout`` does not run while it is stopped; and psycopg's
``cancel()`` asks the postmaster, which is frozen too. A request on such a connection waits
forever. So :class:`Watchdog` -- one thread per process -- shuts down the socket of any
connection still checked out when its deadline passes: psycopg's wait then fails with an
``OperationalError`` (no SQLSTATE, so :class:`~strata.foundation.errors.Unavailable`, a 503), the
connection is broken, and the pool discards it rather than lending it again. The server sees
the socket close when it next runs and rolls back whatever transaction was open.
"""

from __future__ import annotations

import contextlib
import logging
import os
import socket
import threading
import time
from collections.abc import Iterator
from contextvars import ContextVar

import psycopg

log = logging.getLogger(__name__)


class _Budget:
    """Database time for a block: spent while at least one of its calls is in flight (in
    any thread, so nested or concurrent calls spend wall time once) and no model call is
    (:func:`excused`)."""

    __slots__ = ("seconds", "outer", "_spent", "_active", "_excused", "_since", "_lock")

    def __init__(self, seconds: float, outer: _Budget | None) -> None:
        self.seconds = seconds
        self.outer = outer
        self._spent = 0.0
        self._active = 0
        self._excused = 0
        self._since = 0.0
        self._lock = threading.Lock()

    def _running(self) -> bool:
        return self._active > 0 and self._excused == 0

    def left(self, now: float) -> float:
        with self._lock:
            spent = self._spent + (now - self._since if self._running() else 0.0)
        own = self.seconds - spent
        return own if self.outer is None else min(own, self.outer.left(now))

    def change(self, now: float, *, active: int = 0, excused: int = 0) -> None:
        with self._lock:
            if self._running():
                self._spent += now - self._since
            self._active += active
            self._excused += excused
            self._since = now
        if self.outer is not None:
            self.outer.change(now, active=active, excused=excused)


_current: ContextVar[_Budget | None] = ContextVar("strata_db_budget", default=None)


@contextlib.contextmanager
def within(seconds: float) -> Iterator[None]:
    """The database calls in this block may take ``seconds`` altogether (and no more than
    an enclosing block has left). Threads the block's context is copied to (anyio's worker
    threads, where FastAPI and the MCP server run the core) spend from the same budget."""
    token = _current.set(_Budget(seconds, _current.get()))
    try:
        yield
    finally:
        _current.reset(token)


def extend(seconds: float) -> None:
    """Give this block's budget ``seconds`` more, and the blocks around it too, so they do
    not cap it: for work whose size the caller chose (a batch of memories), bounded by the
    request's own limits. Outside any block, nothing."""
    budget = _current.get()
    while budget is not None:
        with budget._lock:
            budget.seconds += seconds
        budget = budget.outer


@contextlib.contextmanager
def excused() -> Iterator[None]:
    """Time in this block spends no database budget, even with a connection held: a model
    call (which has its own timeout) made in the middle of a transaction, as a direct
    write's conflict judge does. The held connection's deadline moves on with it."""
    budget = _current.get()
    if budget is None:
        yield
        return
    budget.change(time.monotonic(), excused=1)
    try:
        yield
    finally:
        budget.change(time.monotonic(), excused=-1)


def left() -> float | None:
    """What is left of the innermost block's budget (seconds); None outside any block."""
    budget = _current.get()
    return None if budget is None else budget.left(time.monotonic())


class Call:
    """One database call's deadline: its own (a job's per-call deadline), and no later than
    the end of its block's budget, which moves while the budget is not being spent."""

    __slots__ = ("budget", "own_at")

    def __init__(self, budget: _Budget | None, own_at: float) -> None:
        self.budget = budget
        self.own_at = own_at

    def deadline(self, now: float) -> float:
        if self.budget is None:
            return self.own_at
        return min(self.own_at, now + self.budget.left(now))


@contextlib.contextmanager
def call(own_s: float | None) -> Iterator[Call]:
    """One database call, spending from the block's budget while it lasts; ``own_s``: its
    own deadline (None: none but the budget's)."""
    budget = _current.get()
    now = time.monotonic()
    this = Call(budget, now + own_s if own_s is not None else float("inf"))
    if budget is None:
        yield this
        return
    budget.change(now, active=1)
    try:
        yield this
    finally:
        budget.change(time.monotonic(), active=-1)


class _Watch:
    __slots__ = ("conn", "call", "cut")

    def __init__(self, conn: psycopg.Connection, call: Call) -> None:
        self.conn = conn
        self.call = call
        self.cut = False


class Watchdog:
    """Breaks the socket of each watched connection still in use at its deadline."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._watched: set[_Watch] = set()
        self._thread: threading.Thread | None = None
        self.cuts = 0  # connections cut since the process started (for logs and tests)

    @contextlib.contextmanager
    def watching(self, conn: psycopg.Connection, call: Call) -> Iterator[None]:
        """Watch ``conn`` for the block: at the call's deadline its socket is shut down. A
        connection cut after its last statement (the block was finishing) is closed on the
        way out, so the pool never lends a dead socket."""
        if call.deadline(time.monotonic()) == float("inf"):  # no deadline to keep
            yield
            return
        watch = _Watch(conn, call)
        with self._cond:
            self._watched.add(watch)
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="strata-db-deadline",
                                                daemon=True)
                self._thread.start()
            self._cond.notify()
        try:
            yield
        finally:
            # Under the lock: once unwatched, the watchdog can no longer touch this socket,
            # whose descriptor may be closed and reused after the pool takes it back.
            with self._cond:
                self._watched.discard(watch)
            if watch.cut and not conn.closed:
                conn.close()

    def _run(self) -> None:
        # A deadline only ever moves later (a budget paused or extended), never earlier, so
        # sleeping until the earliest one computed now never oversleeps a cut.
        with self._cond:
            while True:
                now = time.monotonic()
                pending = []
                for watch in self._watched:
                    if watch.cut:
                        continue
                    at = watch.call.deadline(now)
                    if at <= now:
                        watch.cut = True
                        self.cuts += 1
                        _shut_down(watch.conn)
                    else:
                        pending.append(at)
                self._cond.wait(timeout=min(pending) - now if pending else None)


def _shut_down(conn: psycopg.Connection) -> None:
    """Shut the connection's socket down (both ways), leaving its descriptor to psycopg: a
    call waiting on it wakes with an error, and the server reads end-of-file."""
    try:
        fd = conn.pgconn.socket
    except psycopg.OperationalError:
        return  # already closed
    try:
        with socket.socket(fileno=os.dup(fd)) as sock:
            sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass  # already shut down or reset by the peer: as broken as we want it
    log.warning("database call past its deadline: connection cut")


WATCHDOG = Watchdog()
