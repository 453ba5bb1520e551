"""Memory strength: how alive a memory still is, for archival and display -- never ranking.

``strength = importance * exp(-lambda_eff * days) * (1 + 0.2 * access_count)`` where ``days``
is the time since the memory was last used (returned by a search; its creation when never
used) and ``lambda_eff = lambda_kind / 30 * (1 - 0.8 * importance)`` per day: the kind sets
how fast a memory goes stale (a failure's lesson fades faster than a preference), and
importance slows its own decay, so an important memory fades less *and* starts higher.

The same formula runs in SQL (:func:`strength_sql`) so the archival job selects only what
falls below the threshold instead of shipping every row to Python; a test holds the two
equal on a grid.
"""

from __future__ import annotations

import math
from datetime import datetime

from strata.write import bookkeeping

# Decay per 30 days by kind. fact/strategy/assumption/failure are the starting
# points; preferences and instructions are standing orders (slow); events are facts about a
# moment (as a fact); reflections and summaries condense others (as a fact, as a strategy).
DECAY_PER_30_DAYS: dict[str, float] = {
    "fact": 0.16,
    "strategy": 0.10,
    "assumption": 0.20,
    "failure": 0.35,
    "preference": 0.04,
    "instruction": 0.04,
    "event": 0.16,
    "reflection": 0.16,
    "summary": 0.10,
}
IMPORTANCE_SLOWS = 0.8  # lambda_eff = lambda * (1 - IMPORTANCE_SLOWS * importance)
ACCESS_LIFT = 0.2  # each use adds a fifth of the decayed value
SECONDS_PER_DAY = 86_400.0


def effective_lambda(kind: str, importance: float) -> float:
    """Decay rate per day."""
    return DECAY_PER_30_DAYS[kind] / 30.0 * (1.0 - IMPORTANCE_SLOWS * importance)


def strength(
    *, kind: str, importance: float, access_count: int, last_used: datetime, now: datetime
) -> float:
    days = max(0.0, (now - last_used).total_seconds() / SECONDS_PER_DAY)
    return (importance * math.exp(-effective_lambda(kind, importance) * days)
            * (1.0 + ACCESS_LIFT * access_count))


def strength_sql(alias: str = "m") -> str:
    """The formula as a SQL expression over ``alias``; needs the parameters ``now``,
    ``decay_kinds`` and ``decay_rates`` (see :func:`sql_params`)."""
    return f"""(
        {alias}.importance
        * exp(-(SELECT r.rate FROM unnest(%(decay_kinds)s::memory_kind[], %(decay_rates)s::float8[])
                   AS r(kind, rate) WHERE r.kind = {alias}.kind) / 30.0
              * (1 - {IMPORTANCE_SLOWS} * {alias}.importance)
              * GREATEST(0, extract(epoch FROM %(now)s::timestamptz
                                    - COALESCE({bookkeeping.last_sql(alias)}, {alias}.created_at))
                            / {SECONDS_PER_DAY}))
        * (1 + {ACCESS_LIFT} * {bookkeeping.count_sql(alias)}))"""


def sql_params(now: datetime) -> dict[str, object]:
    return {"now": now, "decay_kinds": list(DECAY_PER_30_DAYS),
            "decay_rates": list(DECAY_PER_30_DAYS.values())}
