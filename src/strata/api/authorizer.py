"""The HTTP API's Lambda authorizer, core side: an ``Authorization`` header resolved to a
JSON-able context (tenant, principal, key, effective access, default path) behind a short
in-process TTL cache, and the ``Caller`` rebuilt from that context by the API functions.

The authorizer runs before every API request, so this module imports only the cheap part of
the standard library (hashlib's OpenSSL binding and uuid load on first use); the database
stack (psycopg, the pool, settings, ``strata.auth``) is imported by the first lookup that
needs it, and never for a missing or non-Bearer header.

Staleness is the price of the cache: a revoked or expired key, a disabled principal or a
removed grant keeps its old answer for up to the TTL here, plus API Gateway's own authorizer
cache (``ReauthorizeEvery``) in front of it. ``STRATA_AUTH_CACHE_TTL`` (seconds, default 60,
0 disables) bounds the first part.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from strata.auth.access import Caller
    from strata.db import Database

CONTEXT_VERSION = 1
TTL_ENV = "STRATA_AUTH_CACHE_TTL"
DEFAULT_TTL_S = 60.0
DEFAULT_MAX_ENTRIES = 1024
# API Gateway gives a Lambda authorizer 10 s; waiting psycopg_pool's default 30 s for a
# connection during an outage, or a frozen database forever, would turn a clean deny into a
# timeout. The whole lookup -- the checkout and the query -- ends within this
# (strata.db.deadline), its connection cut if the database does not answer.
DEFAULT_CONNECT_WAIT_S = 3.0


class Decision:
    """What the authorizer answers. ``reason`` is a fixed code for logs and metrics (never
    the key): ok, missing (no Bearer token), rejected (unknown, wrong, revoked or expired
    key), unavailable (the database could not answer: fail closed, never cached).

    A plain class, not a dataclass: generating a dataclass's methods costs milliseconds at
    import, and this module is on the authorizer's cold path."""

    __slots__ = ("authorized", "reason", "context", "cached", "error")

    def __init__(self, authorized: bool, reason: str,
                 context: dict[str, str | int | bool] | None = None, cached: bool = False,
                 error: str | None = None) -> None:
        self.authorized = authorized
        self.reason = reason
        self.context = context
        self.cached = cached
        self.error = error  # the exception's type name when reason == "unavailable"

    def __repr__(self) -> str:
        return (f"Decision(authorized={self.authorized}, reason={self.reason!r}, "
                f"cached={self.cached}, error={self.error!r})")

    def response(self) -> dict[str, Any]:
        """The simple response of an HTTP API authorizer (payload format 2.0)."""
        if self.authorized:
            return {"isAuthorized": True, "context": dict(self.context or {})}
        return {"isAuthorized": False}


def bearer_token(authorization: str | None) -> str | None:
    """The key in ``Bearer <key>`` (same rule as the API's dependency, which this module
    cannot import without pulling in FastAPI)."""
    scheme, _, token = (authorization or "").partition(" ")
    token = token.strip()
    return token if scheme.lower() == "bearer" and token else None


def context_from_caller(caller: Caller) -> dict[str, str | int | bool]:
    """The authorizer context: flat strings and numbers only, as API Gateway requires; the
    access list travels as a JSON string of ``[path, level]`` pairs in the order resolved."""
    context: dict[str, str | int | bool] = {
        "v": CONTEXT_VERSION,
        "tenant_id": str(caller.tenant_id),
        "principal_id": str(caller.principal_id),
        "key_id": str(caller.key_id),
        "access": json.dumps([[a.path, a.level.name] for a in caller.access],
                             separators=(",", ":")),
    }
    if caller.default_path is not None:
        context["default_path"] = caller.default_path
    if caller.key_prefix is not None:
        context["key_prefix"] = caller.key_prefix
    return context


def caller_from_context(context: dict[str, Any], *, surface: str = "http") -> Caller:
    """Rebuild the caller from the authorizer context without a database round trip.

    Raises ``Unauthenticated`` for a missing or malformed context: a request that reached an
    API function without a well-formed context is not authenticated, whatever else it says.
    """
    import uuid

    from strata.auth.access import Access, Caller, Level
    from strata.foundation.errors import Unauthenticated

    try:
        if int(context["v"]) != CONTEXT_VERSION:
            raise ValueError("context version")
        access = tuple(Access(str(path), Level[level]) for path, level in json.loads(context["access"]))
        default_path = context.get("default_path")
        key_prefix = context.get("key_prefix")
        return Caller(
            tenant_id=uuid.UUID(str(context["tenant_id"])),
            principal_id=uuid.UUID(str(context["principal_id"])),
            key_id=uuid.UUID(str(context["key_id"])),
            access=access,
            default_path=str(default_path) if default_path is not None else None,
            surface=surface,
            key_prefix=str(key_prefix) if key_prefix is not None else None,
        )
    except (KeyError, TypeError, ValueError) as exc:
        # json.JSONDecodeError is a ValueError; a bad level name is a KeyError.
        raise Unauthenticated("authorizer context is missing or malformed") from exc


class KeyResolver:
    """Keys to authorizer decisions, with a bounded LRU cache whose entries live ``ttl_s``.

    Entries are keyed by a keyed BLAKE2b digest of the key under a per-process random salt:
    the cache never holds the key, nor the SHA-256 stored in ``api_keys``. Rejections are
    cached too (a client retrying a revoked key costs one lookup per TTL); database failures
    are not. ``lookups`` counts database round trips, so a test can prove a cache hit.
    """

    def __init__(
        self,
        *,
        ttl_s: float = DEFAULT_TTL_S,
        max_entries: int = DEFAULT_MAX_ENTRIES,
        clock: Callable[[], float] = time.monotonic,
        connect_wait_s: float = DEFAULT_CONNECT_WAIT_S,
    ) -> None:
        if ttl_s < 0 or max_entries < 1:
            raise ValueError("ttl_s must be >= 0 and max_entries >= 1")
        self.ttl_s = ttl_s
        self.max_entries = max_entries
        self.connect_wait_s = connect_wait_s
        self.lookups = 0
        self._clock = clock
        self._salt = os.urandom(32)
        self._entries: OrderedDict[bytes, tuple[float, Decision]] = OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._entries)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()

    def _digest(self, token: str) -> bytes:
        import hashlib

        return hashlib.blake2b(token.encode(), key=self._salt, digest_size=32).digest()

    def resolve(self, authorization: str | None, db: Database | Callable[[], Database]) -> Decision:
        """Decide on one ``Authorization`` header value. ``db`` may be a factory, called only
        when the cache cannot answer (the handler passes ``strata.db.get_database``)."""
        token = bearer_token(authorization)
        if token is None:
            return Decision(False, "missing")
        digest = self._digest(token)
        now = self._clock()
        with self._lock:
            hit = self._entries.get(digest)
            if hit is not None:
                if hit[0] > now:
                    self._entries.move_to_end(digest)
                    return _as_cached(hit[1])
                del self._entries[digest]
        decision = self._lookup(token, db)
        if decision.reason != "unavailable" and self.ttl_s > 0:
            with self._lock:
                self._entries[digest] = (self._clock() + self.ttl_s, decision)
                self._entries.move_to_end(digest)
                while len(self._entries) > self.max_entries:
                    self._entries.popitem(last=False)
        return decision

    def _lookup(self, token: str, db: Database | Callable[[], Database]) -> Decision:
        import psycopg

        from strata.auth.keys import authenticate
        from strata.db import Database, deadline
        from strata.foundation.errors import StrataError, Unavailable

        self.lookups += 1
        try:
            database = db if isinstance(db, Database) else db()
            with deadline.within(self.connect_wait_s):
                caller = authenticate(database.waiting(self.connect_wait_s), token)
        except Unavailable as exc:
            # The server is gone or no connection came in time: deny, uncached, so the next
            # request tries again.
            return Decision(False, "unavailable", error=exc.failure)
        except StrataError:
            # Unauthenticated (unknown, wrong, revoked, expired, disabled principal), or a
            # value PostgreSQL refuses to compare (InvalidInput): the key is no good.
            return Decision(False, "rejected")
        except psycopg.Error as exc:
            # Any other database failure: deny, uncached, too.
            return Decision(False, "unavailable", error=type(exc).__name__)
        return Decision(True, "ok", context=context_from_caller(caller))


def _as_cached(decision: Decision) -> Decision:
    return Decision(decision.authorized, decision.reason, decision.context, True, decision.error)


def ttl_from_env() -> float:
    """``STRATA_AUTH_CACHE_TTL`` in seconds (default 60; 0 disables the cache). Read when the
    resolver is first built, never at import."""
    raw = os.environ.get(TTL_ENV, "").strip()
    if not raw:
        return DEFAULT_TTL_S
    ttl = float(raw)
    if not 0 <= ttl <= 3600:
        raise ValueError(f"{TTL_ENV} must be between 0 and 3600 seconds")
    return ttl


_resolver: KeyResolver | None = None
_resolver_lock = threading.Lock()


def get_resolver() -> KeyResolver:
    """The process's resolver (one cache per warm container)."""
    global _resolver
    if _resolver is None:
        with _resolver_lock:
            if _resolver is None:
                _resolver = KeyResolver(ttl_s=ttl_from_env())
    return _resolver


def set_resolver(resolver: KeyResolver | None) -> None:
    """Replace the process's resolver; None forgets it and its cache, so the next request
    builds one from the environment again."""
    global _resolver
    with _resolver_lock:
        _resolver = resolver
