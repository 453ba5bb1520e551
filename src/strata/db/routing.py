"""Which database a read runs on: the writer, or a replica (Aurora's reader endpoint through
RDS Proxy's read-only endpoint; locally any streaming standby).

The rule (read-your-writes). A caller's reads go to the writer for ``read_after_write_s``
seconds (default 5) after that caller's *principal* last wrote through the API or MCP, and
to the replica otherwise. A replica a few hundred milliseconds behind is then invisible to
the one who wrote: they read from the writer until their write has long reached the replica
(Aurora replicas usually lag under 100 ms). Others may see a write up to the replica's lag
later than its author does -- the same as reading a moment earlier. A replica that cannot be
reached is not an outage: the read runs on the writer.

Where the last write is kept. ``principal_writes`` on the writer (migration 0015), one row
per principal, stamped after a successful write request (never inside the write's own
transaction, so concurrent writers of one principal never queue on it; a stamp younger than
a second is not rewritten). Reading it is one primary-key lookup on the writer per routed
read, so the rule holds across processes and Lambda containers, which an in-process memory
of writes would not.

What is routed: search (HTTP ``POST /v1/search`` and MCP ``recall``). Authentication, the
audit entry every read leaves, and everything else stay on the writer.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from strata.db.pool import Database

log = logging.getLogger(__name__)

_RECENT = """
SELECT EXISTS (SELECT 1 FROM principal_writes
               WHERE principal_id = %(principal)s
                 AND at > now() - make_interval(secs => %(window)s)) AS recent
"""

_STAMP = """
INSERT INTO principal_writes AS w (principal_id, tenant_id, at)
VALUES (%(principal)s, %(tenant)s, now())
ON CONFLICT (principal_id) DO UPDATE SET at = excluded.at
WHERE w.at < excluded.at - interval '1 second'
"""


@dataclass
class Reads:
    """The writer, an optional replica, and the read-after-write window in seconds."""

    writer: Database
    replica: Database | None = None
    window_s: float = 5.0

    def database(self, caller) -> tuple[Database, str]:
        """(database, "writer" | "replica") for a read by ``caller``."""
        if self.replica is None:
            return self.writer, "writer"
        with self.writer.connection() as conn:
            row = conn.execute(_RECENT, {"principal": caller.principal_id,
                                         "window": self.window_s}).fetchone()
        return (self.writer, "writer") if row["recent"] else (self.replica, "replica")

    def wrote(self, caller) -> None:
        """Stamp ``caller``'s principal as having written now (best effort: a failed stamp
        is logged, and the caller's next reads may go to the replica)."""
        if self.replica is None or caller is None or caller.principal_id is None:
            return
        try:
            with self.writer.connection() as conn:
                conn.execute(_STAMP, {"principal": caller.principal_id,
                                      "tenant": caller.tenant_id})
        except Exception:
            log.warning("read-after-write stamp not recorded", exc_info=True)
