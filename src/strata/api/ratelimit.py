"""Rate limits of the local server: token buckets per API key, per source address, and for
failed authentications per source address.

A token bucket (``burst`` tokens, refilled at ``per_s`` a second, one per request) is the
model API Gateway throttles with on AWS (``ThrottlingBurstLimit`` / ``ThrottlingRateLimit``
in template.yaml), so a limit means the same thing on both runtimes. On AWS this module is
not used: API Gateway throttles before a function runs, and a bucket in one Lambda container
would see only that container's share of the traffic.

Written here rather than taken from a library (``limits``, slowapi): the whole of it is the
few lines below, the clock is a parameter (tests advance it instead of sleeping), refill is
continuous rather than per whole-second window, and the local server is one process, so a
shared storage backend -- what those libraries add -- has nothing to share.

Nothing here holds a key: a key's bucket is keyed by the SHA-256 of the bearer token, and
the log lines name a key by its public prefix (what ``strata keys list`` shows), never more.
"""

from __future__ import annotations

import hashlib
import logging
import math
import threading
import time
from collections import Counter
from collections.abc import Callable, Hashable
from dataclasses import dataclass

from strata.foundation.config import Settings

__all__ = ["Rate", "Buckets", "RateLimiter", "Refusal"]

log = logging.getLogger(__name__)

Clock = Callable[[], float]


@dataclass(frozen=True)
class Rate:
    per_s: float  # tokens added per second
    burst: int  # what a full bucket holds: requests accepted at once after a quiet spell


class Buckets:
    """Token buckets by id, created full on first use.

    An id whose bucket has refilled is indistinguishable from one never seen, so when the
    table outgrows ``max_ids`` (a flood of distinct tokens or addresses) full buckets are
    dropped first, then the longest untouched ones.
    """

    def __init__(self, rate: Rate, *, max_ids: int = 100_000) -> None:
        self.rate = rate
        self.max_ids = max_ids
        self._state: dict[Hashable, tuple[float, float]] = {}  # id -> (tokens, as of)

    def level(self, ident: Hashable, now: float) -> float:
        tokens, at = self._state.get(ident, (self.rate.burst, now))
        return min(float(self.rate.burst), tokens + max(0.0, now - at) * self.rate.per_s)

    def wait(self, ident: Hashable, now: float) -> float:
        """Seconds until the bucket holds a whole token (0: it does now)."""
        return max(0.0, (1.0 - self.level(ident, now)) / self.rate.per_s)

    def take(self, ident: Hashable, now: float) -> float:
        """Take one token: 0 when taken, else the seconds until one is there (nothing taken)."""
        tokens = self.level(ident, now)
        if tokens < 1.0:
            return (1.0 - tokens) / self.rate.per_s
        self._state[ident] = (tokens - 1.0, now)
        if len(self._state) > self.max_ids:
            self._prune(now)
        return 0.0

    def _prune(self, now: float) -> None:
        full = [i for i in self._state if self.level(i, now) >= self.rate.burst]
        for ident in full:
            del self._state[ident]
        if len(self._state) > self.max_ids:
            oldest = sorted(self._state, key=lambda i: self._state[i][1])
            for ident in oldest[: len(self._state) - self.max_ids // 2]:
                del self._state[ident]


@dataclass(frozen=True)
class Refusal:
    limit: str  # "key", "address" or "auth_failures"
    retry_after: int  # whole seconds, at least 1: the Retry-After header

    @property
    def message(self) -> str:
        what = {"key": "for this API key", "address": "from this address",
                "auth_failures": "from this address after failed authentications"}[self.limit]
        return f"too many requests {what}; retry after {self.retry_after} s"


class RateLimiter:
    """Admits or refuses a request by its source address and bearer token.

    A request is refused while its address has used up its failed-authentication budget
    (every 401 takes a token; that budget is the smallest, so a key-guessing address is
    slowed long before a working client), or when its address's or its key's bucket is
    empty. A refused request takes no token: a client that waits out ``Retry-After`` gets in.
    Concurrent requests are each checked on arrival, so up to the concurrency more 401s than
    the budget can be answered before the first of them is counted.
    """

    def __init__(self, *, key: Rate, address: Rate, auth_failures: Rate,
                 clock: Clock = time.monotonic, max_ids: int = 100_000) -> None:
        self.clock = clock
        self.keys = Buckets(key, max_ids=max_ids)
        self.addresses = Buckets(address, max_ids=max_ids)
        self.failures = Buckets(auth_failures, max_ids=max_ids)
        # What was refused and why, and failed authentications: in-process counters (the
        # local server has no metrics pipeline; the log lines below say the same).
        self.counts: Counter[str] = Counter()
        self._refusing: set[tuple[str, Hashable]] = set()
        self._lock = threading.Lock()

    @classmethod
    def from_settings(cls, settings: Settings, *, clock: Clock = time.monotonic) -> RateLimiter:
        return cls(
            key=Rate(settings.rate_limit_key_per_s, settings.rate_limit_key_burst),
            address=Rate(settings.rate_limit_address_per_s, settings.rate_limit_address_burst),
            auth_failures=Rate(settings.rate_limit_auth_failures_per_s,
                               settings.rate_limit_auth_failures_burst),
            clock=clock,
        )

    def admit(self, address: str, token: str | None, *, probe: bool = False) -> Refusal | None:
        """None when the request may go on (its tokens are taken), else why not.

        ``probe``: a liveness or readiness check, which takes no key, so an address's failed
        authentications do not hold it back (a load balancer or orchestrator probing from
        an address a key-guesser shares must not see the service as down); its address's
        bucket still applies."""
        with self._lock:
            now = self.clock()
            wait = 0.0 if probe else self.failures.wait(address, now)
            if wait:
                return self._refuse("auth_failures", address, address, wait, token)
            if not probe:
                self._refusing.discard(("auth_failures", address))
            wait = self.addresses.take(address, now)
            if wait:
                return self._refuse("address", address, address, wait, token)
            self._refusing.discard(("address", address))
            if token is None:
                return None
            ident = hashlib.sha256(token.encode()).digest()
            wait = self.keys.take(ident, now)
            if wait:
                return self._refuse("key", ident, address, wait, token)
            self._refusing.discard(("key", ident))
            return None

    def failed_authentication(self, address: str) -> None:
        """A request from ``address`` was answered 401: it takes from that address's budget."""
        with self._lock:
            self.counts["auth_failures"] += 1
            self.failures.take(address, self.clock())

    def _refuse(self, limit: str, ident: Hashable, address: str, wait: float,
                token: str | None) -> Refusal:
        refusal = Refusal(limit, max(1, math.ceil(wait)))
        self.counts[f"refused_{limit}"] += 1
        # One line when a bucket starts refusing, not one per refused request: a flood
        # would otherwise be a flood of log lines too.
        if (limit, ident) not in self._refusing:
            if len(self._refusing) > self.keys.max_ids:
                self._refusing.clear()  # it only dedupes log lines
            self._refusing.add((limit, ident))
            log.warning("rate limited (%s): address %s, key %s, retry after %d s "
                        "(%d failed authentications since start)", limit, address,
                        key_label(token), refusal.retry_after, self.counts["auth_failures"])
        return refusal


def key_label(token: str | None) -> str:
    """How a log line names the key a request carried: its public prefix, or what it was."""
    if token is None:
        return "none"
    from strata.auth.keys import parse_key

    prefix = parse_key(token)
    return f"sk_{prefix}_…" if prefix else "malformed"
