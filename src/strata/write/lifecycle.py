"""The lifecycle job's changes, as statements: which memories each step selects and what it
does to them (see :mod:`strata.maintenance.lifecycle` for the job that runs them in batches)."""

from __future__ import annotations

from dataclasses import dataclass

from strata.write import decay
from strata.write import bookkeeping

KEEP_IMPORTANCE = 0.8  # never archived at or above this importance



@dataclass(frozen=True)
class Step:
    name: str  # the report key
    cause: str  # the history cause and the audit operation
    action: str  # audit action
    key: str  # keyset column (with id), matching an index
    rule: str  # WHERE clause over m, beyond the tenant and the keyset
    change: str  # SET clause, or DELETE


_BUMP = "version = m.version + 1, updated_at = now()"

# Older than the retention of the rule that governs the memory's path. The EXISTS is one
# check per statement (no correlation): a tenant without retention rules pays nothing more.
_RETAINED = """EXISTS (SELECT 1 FROM memory_rules r0 WHERE r0.tenant_id = %(tenant)s
                     AND r0.retention_days IS NOT NULL)
 AND m.created_at < %(now)s - make_interval(days => (
     SELECT r.retention_days FROM memory_rules r
     WHERE r.tenant_id = m.tenant_id AND m.path <@ r.path
     ORDER BY nlevel(r.path) DESC LIMIT 1))"""

MEMORY_STEPS = (
    Step("promoted", "lifecycle.promote", "write", "expires_at",
         "m.tier = 'short_term' AND m.status = 'active'"
         f" AND ({bookkeeping.count_sql('m')} >= %(promote_at)s OR m.pinned)",
         f"tier = 'long_term', expires_at = NULL, {_BUMP}"),
    # Leaves what promotion keeps (used or pinned): a real run has promoted those already,
    # and a dry run, which promotes nothing, must not count them twice.
    Step("expired", "lifecycle.expire", "write", "expires_at",
         "m.tier = 'short_term' AND m.status = 'active' AND m.expires_at <= %(now)s"
         f" AND {bookkeeping.count_sql('m')} < %(promote_at)s AND NOT m.pinned",
         f"status = 'archived', {_BUMP}"),
    Step("candidates_rejected", "lifecycle.candidate_expire", "write", "created_at",
         "m.status = 'candidate' AND m.created_at < %(candidate_before)s",
         f"status = 'rejected', {_BUMP}"),
    # Memory rules' retention_days (strata.rules): the most specific rule containing the
    # path decides, as on writes; a deeper rule without retention keeps its subtree out.
    Step("retention_expired", "lifecycle.retention", "write", "created_at",
         f"m.status IN ('active', 'candidate') AND NOT m.pinned AND {_RETAINED}",
         f"status = 'archived', {_BUMP}"),
    # Long-term only: short-term memories live by their expiry.
    Step("archived", "lifecycle.archive", "write", "created_at",
         "m.status = 'active' AND m.tier = 'long_term' AND m.created_at < %(archive_before)s"
         " AND NOT m.pinned"
         f" AND m.importance < {KEEP_IMPORTANCE}"
         f" AND {decay.strength_sql('m')} < %(threshold)s",
         f"status = 'archived', {_BUMP}"),
)
EXPIRE_BY_DELETE = Step("expired", "lifecycle.expire", "delete", MEMORY_STEPS[1].key,
                        MEMORY_STEPS[1].rule, "DELETE")


def _page(step: Step, *, lock: bool) -> str:
    return f"""
        SELECT m.id, m.{step.key} AS k FROM memories m
        WHERE m.tenant_id = %(tenant)s AND {step.rule}
          AND (m.{step.key}, m.id) > (%(after_k)s, %(after_id)s)
        ORDER BY m.{step.key}, m.id
        LIMIT %(limit)s {"FOR UPDATE OF m SKIP LOCKED" if lock else ""}"""


def _statement(step: Step) -> str:
    """One batch: lock a page under the rule, change it, return what changed with its key."""
    page = _page(step, lock=True)
    if step.change == "DELETE":
        return f"WITH page AS ({page}) DELETE FROM memories m USING page" \
               " WHERE m.id = page.id RETURNING m.id, page.k"
    return f"WITH page AS ({page}) UPDATE memories m SET {step.change} FROM page" \
           " WHERE m.id = page.id RETURNING m.id, page.k"


_TOMBSTONES = """
DELETE FROM tombstones WHERE id IN (
    SELECT id FROM tombstones WHERE tenant_id = %(tenant)s AND until <= %(now)s
    ORDER BY until, id LIMIT %(limit)s FOR UPDATE SKIP LOCKED)
"""
_TOMBSTONES_DRY = """
SELECT count(*) AS n FROM tombstones WHERE tenant_id = %(tenant)s AND until <= %(now)s
"""
_HISTORY = """
DELETE FROM memory_history WHERE id IN (
    SELECT id FROM memory_history WHERE tenant_id = %(tenant)s AND changed_at < %(history_before)s
    ORDER BY changed_at, id LIMIT %(limit)s FOR UPDATE SKIP LOCKED)
"""
# The event outbox's retention (migration 0025): events are a feed, not a record (history and
# the audit chain are), so they are kept for a window a consumer is expected to keep up with.
_EVENTS = """
DELETE FROM events WHERE id IN (
    SELECT id FROM events WHERE tenant_id = %(tenant)s AND at < %(events_before)s
    ORDER BY at, id LIMIT %(limit)s FOR UPDATE SKIP LOCKED)
"""
_EVENTS_DRY = """
SELECT count(*) AS n FROM events WHERE tenant_id = %(tenant)s AND at < %(events_before)s
"""
_HISTORY_DRY = """
SELECT count(*) AS n FROM memory_history
WHERE tenant_id = %(tenant)s AND changed_at < %(history_before)s
"""
