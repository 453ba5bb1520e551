"""Deadlines for database work: a request answers in bounded time whatever the database does.

A block of work (an API or MCP request, a readiness check, the authorizer's key lookup) has
a *budget* of database time: :func:`within` sets it, and every database call in the block --
the wait for a pooled connection, the statements, the time a connection is held -- spends
from it, so a request that makes three calls gets one budget, not three. Time with no call
in flight (reading the request body, calling a model, rendering the answer) spends nothing:
those have their own timeouts, and a slow upload must not turn into a 503 about the
database. Each call's deadline is now plus what is left of the budget (of the tightest one,
when blocks nest). Work outside any block (a job: the CLI, maintenance, the ingest
pipeline's steps) gets the database's own per-call deadline (``STRATA_DB_JOB_DEADLINE_S``).

Why the client enforces it. A database that is frozen (a hung host, an Aurora failover, a
SIGSTOPped server) still has a kernel that ACKs TCP, so keepalives and ``tcp_user_timeout``
never fire; its ``statement_timeout`` does not run while it is stopped; and psycopg's
``cancel()`` asks the postmaster, which is frozen too. A request on such a connection waits
forever. So :class:`Watchdog` -- one thread per process -- shuts down the socket of any
connection still checked out when its deadline passes: psycopg's wait then fails with an
``OperationalError`` (no SQLSTATE, so :class:`~strata.errors.Unavailable`, a 503), the
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
    any thread), so nested or concurrent calls spend wall time once."""

    __slots__ = ("seconds", "outer", "_spent", "_active", "_since", "_lock")

    def __init__(self, seconds: float, outer: _Budget | None) -> None:
        self.seconds = seconds
        self.outer = outer
        self._spent = 0.0
        self._active = 0
        self._since = 0.0
        self._lock = threading.Lock()

    def left(self, now: float) -> float:
        with self._lock:
            spent = self._spent + (now - self._since if self._active else 0.0)
        own = self.seconds - spent
        return own if self.outer is None else min(own, self.outer.left(now))

    def start(self, now: float) -> None:
        with self._lock:
            if self._active == 0:
                self._since = now
            self._active += 1
        if self.outer is not None:
            self.outer.start(now)

    def stop(self, now: float) -> None:
        with self._lock:
            self._active -= 1
            if self._active == 0:
                self._spent += now - self._since
        if self.outer is not None:
            self.outer.stop(now)


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


def left() -> float | None:
    """What is left of the innermost block's budget (seconds); None outside any block."""
    budget = _current.get()
    return None if budget is None else budget.left(time.monotonic())


@contextlib.contextmanager
def call(own_s: float | None) -> Iterator[float]:
    """One database call: yields its deadline (``time.monotonic()`` time), now plus the
    smaller of what is left of the block's budget and ``own_s`` (infinite without either),
    and spends the call's time from the budget. A spent budget yields a deadline that has
    passed."""
    budget = _current.get()
    now = time.monotonic()
    if budget is None:
        yield now + (own_s if own_s is not None else float("inf"))
        return
    at = now + budget.left(now)
    if own_s is not None:
        at = min(at, now + own_s)
    budget.start(now)
    try:
        yield at
    finally:
        budget.stop(time.monotonic())


class _Watch:
    __slots__ = ("conn", "at", "cut")

    def __init__(self, conn: psycopg.Connection, at: float) -> None:
        self.conn = conn
        self.at = at
        self.cut = False


class Watchdog:
    """Breaks the socket of each watched connection still in use at its deadline."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._watched: set[_Watch] = set()
        self._thread: threading.Thread | None = None
        self.cuts = 0  # connections cut since the process started (for logs and tests)

    @contextlib.contextmanager
    def watching(self, conn: psycopg.Connection, at: float) -> Iterator[None]:
        """Watch ``conn`` for the block: at ``at`` its socket is shut down. A connection cut
        after its last call (the block was finishing) is closed on the way out, so the pool
        never lends a dead socket."""
        if at == float("inf"):  # no deadline to keep
            yield
            return
        watch = _Watch(conn, at)
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
        with self._cond:
            while True:
                now = time.monotonic()
                for watch in self._watched:
                    if not watch.cut and watch.at <= now:
                        watch.cut = True
                        self.cuts += 1
                        _shut_down(watch.conn)
                pending = [w.at for w in self._watched if not w.cut]
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
