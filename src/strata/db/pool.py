"""The connection pool and the transaction helper every capability uses.

A ``Database`` owns one psycopg pool, opened lazily on first use and reused for the life of
the process (a warm Lambda container keeps it). Transactions set ``strata.cause``,
``strata.actor`` and ``strata.operation_id`` with ``SET LOCAL`` semantics so the history
trigger records why a row changed.

On AWS with ``STRATA_DB_IAM_AUTH`` the pool opens ``IamAuthConnection``s: each new connection
signs in to RDS Proxy with an IAM token minted for that connect, over TLS.

A checkout waits ``timeout`` seconds for a connection: long for jobs, and for requests only
as long as a caller should wait (:meth:`Database.waiting`, ``STRATA_POOL_TIMEOUT_S``), after
which the database counts as unavailable. Connection-level failures become
:class:`~strata.foundation.errors.Unavailable` in :func:`translate_errors`, the one place database
errors become core errors; the pool reconnects by itself when the server is back.

Every checkout has a deadline (:mod:`strata.db.deadline`): what is left of the enclosing
request's budget of database time, or this database's per-call ``deadline_s`` for jobs. The
checkout waits no longer than that, a connection still in use when it passes is cut (and
discarded by the pool), and a transaction carries a server-side ``statement_timeout`` under
what is left, so a slow but alive server cancels the statement before the client has to cut
the connection.
"""

from __future__ import annotations

import contextlib
import copy
import logging
import threading
import time
import uuid
from collections.abc import Iterator
from functools import lru_cache

import psycopg
from psycopg import conninfo
from psycopg import errors as pg_errors
from psycopg.rows import dict_row
from psycopg_pool import ConnectionPool, PoolClosed, PoolTimeout, TooManyRequests

from strata.db import deadline
from strata.db.vector import register_vector
from strata.foundation.config import Settings, get_settings
from strata.foundation.errors import Conflict, InvalidInput, StrataError, Unavailable

log = logging.getLogger(__name__)


def _configure(conn: psycopg.Connection) -> None:
    register_vector(conn)


# sslmodes that already verify the server; anything weaker becomes "require" under IAM auth.
_VERIFYING_SSLMODES = ("verify-ca", "verify-full")


@lru_cache(maxsize=1)
def _rds_client():
    from strata.foundation import aws

    return aws.client("rds")


def iam_auth_token(host: str, port: int, user: str) -> str:
    """An RDS IAM authentication token for ``user`` at ``host:port``: a SigV4-presigned URL,
    signed locally (no network), accepted for connects within 15 minutes of now."""
    return _rds_client().generate_db_auth_token(DBHostname=host, Port=port, DBUsername=user)


def iam_connection_params(conninfo_str: str = "", **overrides: object) -> dict[str, str]:
    """The password (a token minted now) and sslmode for connecting to ``conninfo_str`` with
    ``overrides`` (keyword connection parameters, which win over the string, as in psycopg)."""
    params = conninfo.conninfo_to_dict(conninfo_str)
    params.update({k: v for k, v in overrides.items()
                   if k in ("host", "port", "user", "sslmode") and v is not None})
    host, user = params.get("host"), params.get("user")
    if not host or not user:
        raise ValueError("IAM database authentication needs a host and a user to sign for")
    sslmode = str(params.get("sslmode") or "")
    return {
        "password": iam_auth_token(str(host), int(params.get("port") or 5432), str(user)),
        # IAM auth is refused without TLS; a stricter mode the caller chose is kept.
        "sslmode": sslmode if sslmode in _VERIFYING_SSLMODES else "require",
    }


class IamAuthConnection(psycopg.Connection):
    """A connection that signs in with an IAM token minted for this connect.

    Tokens live 15 minutes and a pooled connection outlives its token, which is fine: the
    token is checked only when connecting, and every new connection (the pool's refills,
    its max_lifetime reconnects) gets a fresh one here. Any password in the conninfo is
    replaced.
    """

    @classmethod
    def connect(cls, conninfo: str = "", **kwargs):  # type: ignore[override]
        kwargs.update(iam_connection_params(conninfo, **kwargs))
        return super().connect(conninfo, **kwargs)


# How long the pool keeps retrying one lost connection before it gives up on it (psycopg's
# default is 5 minutes). Its retries back off exponentially, so after a long outage the next
# attempt could be a minute or two away; giving up sooner lets the next checkout start a
# fresh attempt at once, so the service is back within seconds of the database.
_RECONNECT_TIMEOUT_S = 10.0


class Database:
    def __init__(
        self,
        url: str,
        *,
        min_size: int = 0,
        max_size: int = 8,
        connection_class: type[psycopg.Connection] = psycopg.Connection,
        timeout: float = 30.0,
        deadline_s: float = 900.0,
        connect_timeout_s: int = 2,
    ) -> None:
        self.url = url
        self.timeout = timeout
        # A checkout outside any deadline.within block (a job) must end this long after it.
        self.deadline_s = deadline_s
        self._connect_timeout_s = connect_timeout_s
        self._min = min_size
        self._max = max_size
        self._connection_class = connection_class
        # The Database that owns the pool: this one, or the one this is a view of (waiting).
        self._owner = self
        self._views: dict[float, Database] = {}
        self._pool: ConnectionPool | None = None
        self._lock = threading.Lock()

    def waiting(self, timeout: float) -> Database:
        """This database, same pool, whose checkouts wait at most ``timeout`` seconds: one
        view per timeout, made once, so code that remembers a Database sees the same one."""
        owner = self._owner
        view = owner._views.get(timeout)
        if view is None:
            with owner._lock:
                view = owner._views.get(timeout)
                if view is None:
                    view = copy.copy(owner)
                    view.timeout, view._views = timeout, {}
                    owner._views[timeout] = view
        return view

    @property
    def owner(self) -> Database:
        """The Database that owns the pool (itself, unless this is a view of another)."""
        return self._owner

    @property
    def pool(self) -> ConnectionPool:
        owner = self._owner
        if owner._pool is None:
            with owner._lock:
                if owner._pool is None:
                    pool = ConnectionPool(
                        owner.url,
                        connection_class=owner._connection_class,
                        min_size=owner._min,
                        max_size=owner._max,
                        # Autocommit: a read is one round trip; writes use transaction().
                        # Without connect_timeout a connect to a frozen server waits 130 s
                        # (psycopg's default), holding a pool worker the whole time.
                        kwargs={"row_factory": dict_row, "autocommit": True,
                                "connect_timeout": owner._connect_timeout_s},
                        configure=_configure,
                        timeout=owner.timeout,
                        reconnect_timeout=_RECONNECT_TIMEOUT_S,
                        open=False,
                    )
                    pool.open(wait=False)
                    owner._pool = pool
        return owner._pool

    @property
    def is_open(self) -> bool:
        """Whether a pool is open now (without opening one, unlike ``pool``)."""
        pool = self._owner._pool
        return pool is not None and not pool.closed

    def close(self) -> None:
        owner = self._owner
        if owner._pool is not None:
            owner._pool.close()
            owner._pool = None

    @contextlib.contextmanager
    def _checkout(self, deadline_s: float | None = None
                  ) -> Iterator[tuple[psycopg.Connection, deadline.Call]]:
        """A pooled connection, watched until the call's deadline: (connection, call)."""
        with deadline.call(deadline_s if deadline_s is not None else self.deadline_s) as call:
            now = time.monotonic()
            remaining = call.deadline(now) - now
            if remaining <= 0:
                raise Unavailable("DeadlineExceeded")
            with (self.pool.connection(timeout=min(self.timeout, remaining)) as conn,
                  deadline.WATCHDOG.watching(conn, call)):
                yield conn, call

    @contextlib.contextmanager
    def connection(self, *, deadline_s: float | None = None) -> Iterator[psycopg.Connection]:
        """A pooled connection (autocommit). ``deadline_s``: this checkout's own deadline
        instead of the job one, for a job that holds a connection for its whole run; an
        enclosing block's budget still wins when less of it is left."""
        with translate_errors(), self._checkout(deadline_s) as (conn, _):
            yield conn

    @contextlib.contextmanager
    def transaction(
        self,
        *,
        cause: str | None = None,
        actor: str | None = None,
        operation_id: uuid.UUID | None = None,
    ) -> Iterator[psycopg.Cursor]:
        """One transaction; database errors leave it translated into core errors.

        Its statements are cancelled by the server (``statement_timeout``, local to the
        transaction, so RDS Proxy pins nothing past it) a little before the deadline.
        """
        with translate_errors(), self._checkout() as (conn, call):
            try:
                with conn.transaction():
                    cur = conn.cursor()
                    now = time.monotonic()
                    timeout = f"{statement_timeout_ms(call.deadline(now) - now)}ms"
                    if cause or actor or operation_id:
                        cur.execute(
                            "SELECT set_config('statement_timeout', %s, true),"
                            " set_config('strata.cause', %s, true),"
                            " set_config('strata.actor', %s, true),"
                            " set_config('strata.operation_id', %s, true)",
                            (timeout, cause or "", actor or "",
                             str(operation_id or uuid.uuid4())),
                        )
                    else:
                        cur.execute("SELECT set_config('statement_timeout', %s, true)",
                                    (timeout,))
                    yield cur
            except pg_errors.QueryCanceled as exc:
                # The deadline's statement_timeout: nothing inside transaction() sets another.
                raise Unavailable("QueryCanceled") from exc


def statement_timeout_ms(remaining_s: float) -> int:
    """The server-side statement timeout for a transaction with ``remaining_s`` of its
    deadline left: a tenth of it (at least 0.2 s) less, so a live server cancels the
    statement and the rollback comes back before the client would cut the socket (the
    connection stays usable); at least 1 ms (0 would mean no timeout)."""
    return max(int((remaining_s - max(remaining_s / 10, 0.2)) * 1000), 1)


# Database errors are translated once, here, by constraint name -- never by message text.
_CONSTRAINT_ERRORS: dict[str, tuple[type[StrataError], str, str | None]] = {
    "tenants_name_key": (Conflict, "a tenant with this name exists", "name"),
    "tenants_name_check": (InvalidInput, "tenant name must be 1-63 of [A-Za-z0-9_.-]", "name"),
    "principals_tenant_name_key": (Conflict, "a principal with this name exists", "name"),
    "grants_principal_path_key": (Conflict, "this principal already has a grant on this path", "path"),
    "memories_name_key": (Conflict, "a memory with this name exists in this path", "name"),
    # The write path's backstop (migration 0009): reached only when a concurrent writer won
    # a race the locks should have prevented; strata.write.locks.retrying runs it again.
    "memories_active_value_key": (
        Conflict, "another active memory in this path holds this value: retry", "content"),
    "memories_active_slot_key": (
        Conflict, "another active memory in this path holds this slot: retry", "slot"),
    "memories_content_check": (InvalidInput, "content must not be empty", "content"),
    "memories_valid_check": (InvalidInput, "valid_to must be after valid_from", "valid_to"),
    "memories_meta_check": (InvalidInput, "meta must be an object", "meta"),
}


# Failures that say the database cannot serve now, not that the statement is wrong: the
# session was refused or lost (SQLSTATE class 08, a server shutting down, crashed, starting
# up, out of connection slots, or closing an idle session), or no pooled connection came in
# time (psycopg_pool's errors). An OperationalError with no SQLSTATE is the client's own
# report of a lost or refused connection, which is also what a connection cut at its
# deadline reports. Anything else (QueryCanceled, LockNotAvailable, DiskFull, ...) stays
# what it is; Database.transaction turns its own deadline's QueryCanceled into Unavailable.
_UNAVAILABLE: tuple[type[psycopg.OperationalError], ...] = (
    pg_errors.ConnectionException, pg_errors.AdminShutdown, pg_errors.CrashShutdown,
    pg_errors.CannotConnectNow, pg_errors.TooManyConnections, pg_errors.IdleSessionTimeout,
    PoolTimeout, TooManyRequests, PoolClosed,
)


def means_unavailable(exc: psycopg.OperationalError) -> bool:
    """Whether ``exc`` means the database is unavailable (see ``_UNAVAILABLE``)."""
    return isinstance(exc, _UNAVAILABLE) or exc.sqlstate is None


@contextlib.contextmanager
def translate_errors() -> Iterator[None]:
    try:
        yield
    except psycopg.OperationalError as exc:
        if not means_unavailable(exc):
            raise
        raise Unavailable(type(exc).__name__) from exc
    except (pg_errors.UniqueViolation, pg_errors.CheckViolation, pg_errors.ForeignKeyViolation) as exc:
        name = exc.diag.constraint_name or ""
        mapped = _CONSTRAINT_ERRORS.get(name)
        if mapped is None:
            raise
        cls, message, field = mapped
        raise cls(message, field=field) from exc
    except pg_errors.DataError as exc:
        # Values that passed validation but PostgreSQL cannot hold (e.g. NUL in a query
        # parameter): the caller's input, so a 4xx -- never a 500.
        raise InvalidInput("a value in the request cannot be stored or compared") from exc


def database_url(settings: Settings) -> str:
    """The URL for this process: explicit, or built from the AWS settings, or the embedded server.

    With ``db_iam_auth`` the URL's password is a token minted now, good for a connect within
    15 minutes: one-shot callers such as the migrations connect with the URL as it is, while
    the pool's ``IamAuthConnection`` mints a new token for every connection it opens.
    """
    if settings.database_url:
        url = settings.database_url
    elif settings.db_host and (settings.db_secret_arn or (settings.db_iam_auth and settings.db_user)):
        url = _aws_url(settings)
    elif settings.db_iam_auth:
        raise ValueError("STRATA_DB_IAM_AUTH needs STRATA_DB_HOST (the RDS Proxy endpoint) and "
                         "STRATA_DB_USER or STRATA_DB_SECRET_ARN, or STRATA_DATABASE_URL")
    else:
        from strata.db.embedded import ensure_server

        return ensure_server(settings)
    if settings.db_iam_auth:
        return conninfo.make_conninfo(url, **iam_connection_params(url))
    return url


def read_database_url(settings: Settings) -> str | None:
    """The URL reads may use (a replica), or None: ``read_database_url``, or on AWS the RDS
    Proxy's read-only endpoint ``db_read_host`` with the writer's credentials."""
    if settings.read_database_url:
        url = settings.read_database_url
    elif settings.db_read_host and settings.db_host:
        url = _aws_url(settings, host=settings.db_read_host)
    else:
        return None
    if settings.db_iam_auth:
        return conninfo.make_conninfo(url, **iam_connection_params(url))
    return url


def _aws_url(settings: Settings, host: str | None = None) -> str:
    params = {"host": host or settings.db_host, "port": settings.db_port,
              "dbname": settings.db_name, "sslmode": "require"}
    if settings.db_iam_auth and settings.db_user:
        # No secret read: with IAM auth the function's role needs no access to the password.
        return conninfo.make_conninfo(user=settings.db_user, **params)
    from aws_lambda_powertools.utilities import parameters

    from strata.foundation import aws

    aws.trace_aws_calls()
    secret = parameters.get_secret(settings.db_secret_arn, transform="json", max_age=300)
    if settings.db_iam_auth:
        return conninfo.make_conninfo(user=secret["username"], **params)
    return conninfo.make_conninfo(user=secret["username"], password=secret["password"], **params)


def connection_class(settings: Settings) -> type[psycopg.Connection]:
    return IamAuthConnection if settings.db_iam_auth else psycopg.Connection


@lru_cache(maxsize=1)
def get_database() -> Database:
    settings = get_settings()
    return Database(database_url(settings), min_size=settings.pool_min, max_size=settings.pool_max,
                    connection_class=connection_class(settings),
                    timeout=settings.pool_job_timeout_s, deadline_s=settings.db_job_deadline_s,
                    connect_timeout_s=settings.db_connect_timeout_s)


def get_read_database(settings: Settings) -> Database | None:
    """A pool on the replica reads may use (see strata.db.routing), or None."""
    url = read_database_url(settings)
    if url is None:
        return None
    return Database(url, min_size=0, max_size=settings.pool_max,
                    connection_class=connection_class(settings),
                    timeout=settings.pool_timeout_s, deadline_s=settings.db_job_deadline_s,
                    connect_timeout_s=settings.db_connect_timeout_s)
