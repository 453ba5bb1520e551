"""Readiness: whether this process can serve requests now.

Liveness (``GET /healthz``) asks nothing of the database, so a load balancer or Kubernetes
does not restart a healthy process because its database is away. Readiness (``GET /readyz``)
asks whether requests would work: the database answers within readiness' own deadline, its
migration level is this code's, and it stores the configured embedding dimension (every
request refuses a database that does not).
"""

from __future__ import annotations

from dataclasses import dataclass

from strata.db import deadline
from strata.db.migrate import migration_level, stored_embedding_dim
from strata.db.pool import Database
from strata.foundation.config import Settings
from strata.foundation.errors import Unavailable

OK = "ok"
NOT_CHECKED = "not checked"


@dataclass(frozen=True)
class Readiness:
    # Each check's name -> "ok", "not checked" (an earlier check failed), or what is wrong
    # (never a query, a key or a row).
    checks: dict[str, str]

    @property
    def failing(self) -> list[str]:
        return [name for name, state in self.checks.items() if state not in (OK, NOT_CHECKED)]

    @property
    def ready(self) -> bool:
        return all(state == OK for state in self.checks.values())


def readiness(db: Database, settings: Settings) -> Readiness:
    """The checks, each within ``db_readiness_deadline_s`` altogether: a database that does
    not answer in time is "unavailable", frozen or not."""
    checks = {"database": OK, "migrations": NOT_CHECKED, "embedding_dim": NOT_CHECKED}
    try:
        with deadline.within(settings.db_readiness_deadline_s), db.connection() as conn:
            pending, unknown = migration_level(conn)
            if pending:
                checks["migrations"] = f"{len(pending)} pending"
            elif unknown:
                checks["migrations"] = (f"{len(unknown)} applied that this version does not "
                                        "know: the database is newer than the code")
            else:
                checks["migrations"] = OK
                dim = stored_embedding_dim(conn)
                checks["embedding_dim"] = OK if dim == settings.embedding_dim else (
                    f"the database stores {dim}, STRATA_EMBEDDING_DIM is "
                    f"{settings.embedding_dim}")
    except Unavailable:
        checks["database"] = "unavailable"
    return Readiness(checks)
