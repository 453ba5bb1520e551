"""Deadlines for database work: a request answers in bounded time whatever the database does.

A deadline is a point in time (``time.monotonic()``) by which the database work of a block
must be over. :func:`within` sets one for the block it wraps (an API or MCP request from its
first database call, a readiness check, the authorizer's key lookup); nested blocks keep the
earlier of the two, so a request's budget covers every call it makes, not each call anew. Work outside any block (a
job: the CLI, maintenance, the ingest pipeline's steps) gets the database's own per-call
deadline (``STRATA_DB_JOB_DEADLINE_S``) at each checkout.

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
    """A block's deadline: fixed when the block starts, or (``from_first_call``) when its
    first database call asks for it; never later than the enclosing block's."""

    __slots__ = ("seconds", "at", "outer")

    def __init__(self, seconds: float, outer: _Budget | None, *, started: bool) -> None:
        self.seconds = seconds
        self.outer = outer
        self.at = time.monotonic() + seconds if started else None

    def deadline(self) -> float:
        if self.at is None:
            # Two threads of one request may race here; either start is a fine start.
            self.at = time.monotonic() + self.seconds
        if self.outer is None:
            return self.at
        return min(self.at, self.outer.deadline())


_current: ContextVar[_Budget | None] = ContextVar("strata_db_deadline", default=None)


@contextlib.contextmanager
def within(seconds: float, *, from_first_call: bool = False) -> Iterator[None]:
    """Database work in this block ends ``seconds`` after the block starts -- or, with
    ``from_first_call``, after its first database call, so a slow upload or a model call
    before any database work spends none of it -- and never after the enclosing block's
    deadline. Threads the block's context is copied to (anyio's worker threads) share it."""
    token = _current.set(_Budget(seconds, _current.get(), started=not from_first_call))
    try:
        yield
    finally:
        _current.reset(token)


def current() -> float | None:
    """The deadline (``time.monotonic()`` time) of the innermost :func:`within` block,
    starting its clock if it waits for a first call; None outside any block."""
    budget = _current.get()
    return None if budget is None else budget.deadline()


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
