"""The lifecycle job: what a memory store left alone needs so it stays correct and bounded.

Per tenant, in this order (each step a sequence of bounded batches, each batch one
transaction):

``promoted``
    Active short-term memories used often enough (``access_count`` at the setting) -- or
    pinned, which is the user saying "keep this" -- become long-term: tier flips, expiry
    cleared, same id. Before expiry, so a memory in use is kept rather than expired.
``expired``
    Active short-term memories past ``expires_at``: archived, or deleted (the delete
    trigger keeps the last state in history; restore brings it back), by setting.
``candidates_rejected``
    Candidates waiting for review longer than the setting become ``rejected``, without a
    tombstone: nobody decided the value is false, so it may come back.
``retention_expired``
    Active and candidate memories older than the ``retention_days`` of the memory rule that
    governs their path (the most specific one, ``strata.rules``): archived, history kept,
    restorable by version. Pinned memories are kept: a pin is a decision about that one
    memory, more specific than any path's rule.
``archived``
    Active memories older than the minimum age whose strength (:mod:`strata.write.decay`) fell below the
    threshold, unless pinned or important (>= ``KEEP_IMPORTANCE``). Archived memories leave
    search (it reads ``active``) and stay restorable by version.
``tombstones_expired``
    Tombstones past ``until`` already stop blocking at that instant (the gate compares with
    ``now()``); the job deletes them so the table stays bounded.
``history_pruned``
    Only with a history retention window (floored at 90 days): history rows older than it.
    Forgotten memories' rows are content-free already; pruning only removes rows.
``events_pruned``
    Events of the outbox (:mod:`strata.events`) older than ``event_retention_days``.

Then, on a run over every tenant, ``vector_indexes``: the per-tenant HNSW indexes of large
tenants built, rebuilt or dropped online (:mod:`strata.db.vector_index`).

Safety. Each memory batch is one statement: a page selected ``FOR UPDATE SKIP LOCKED`` under
the rule, then changed. A row a user transaction holds is skipped (and looked at next run),
never waited for and never written from a stale read; the rule is re-checked on the row's
latest version when it is locked, so a memory a user just made important is not archived.
Two runs at once lock disjoint pages, so each memory changes at most once. Every change
bumps ``version`` (a user holding the old version gets a 412, never a silent overwrite) and
carries the history cause ``lifecycle.<step>`` with the run id as operation id, and each
batch is audited (ids and counts; surface ``cli`` or ``scheduler``).

Pages are walked by keyset, so a run ends even when rows are skipped, and ``--dry-run``
walks the same selections without locking or changing anything. Strength is computed, never
stored: writing it would rewrite every row (and its history) on every run, and it must not
reach ranking anyway.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from strata.audit import AuditEvent, append
from strata.audit.maintenance import KeepGoing, floored, for_each_tenant
from strata.auth import Caller
from strata.db import Database
from strata.db import vector_index
from strata.foundation.config import Settings, get_settings
from strata.write import decay
from strata.write.lifecycle import (
    _EVENTS, _EVENTS_DRY, _HISTORY, _HISTORY_DRY, _TOMBSTONES, _TOMBSTONES_DRY, EXPIRE_BY_DELETE, KEEP_IMPORTANCE,
    MEMORY_STEPS, Step, _page, _statement,
)

ACTOR = "system:lifecycle"
SAMPLE = 20  # ids per step a dry run lists
_NIL = uuid.UUID(int=0)
_START = datetime(1, 1, 1, tzinfo=UTC)


class LifecycleRun:
    """One pass over one or every tenant; :meth:`run` returns the JSON report."""

    def __init__(
        self, db: Database, *, settings: Settings | None = None, now: datetime | None = None,
        dry_run: bool = False, keep_going: KeepGoing | None = None, surface: str = "cli",
        progress: Callable[[int], Any] | None = None,
    ) -> None:
        self.db = db
        self.progress = progress or (lambda n: None)  # memories changed (or, dry, selected)
        self.settings = settings or get_settings()
        self.now = now or datetime.now(UTC)
        self.dry_run = dry_run
        self.keep_going = keep_going
        self.surface = surface
        self.run_id = uuid.uuid4()
        s = self.settings
        self.history = floored(s.history_retention_days)
        self.params: dict[str, Any] = {
            **decay.sql_params(self.now),
            "promote_at": s.lifecycle_promote_access_count,
            "candidate_before": self.now - timedelta(days=s.lifecycle_candidate_max_age_days),
            "archive_before": self.now - timedelta(days=s.lifecycle_archive_min_age_days),
            "threshold": s.lifecycle_archive_threshold,
            "history_before": (self.now - timedelta(days=self.history["retention_days"])
                               if self.history["retention_days"] else None),
            "limit": s.lifecycle_batch_size,
            "events_before": self.now - timedelta(days=s.event_retention_days),
        }
        expired = EXPIRE_BY_DELETE if s.lifecycle_short_term_expiry == "delete" else MEMORY_STEPS[1]
        self.steps = tuple(expired if st.name == "expired" else st for st in MEMORY_STEPS)

    def run(self, tenant_id: uuid.UUID | None = None) -> dict[str, Any]:
        result = for_each_tenant(self.db, "lifecycle", self.tenant, tenant_id=tenant_id,
                                 keep_going=self.keep_going, record=not self.dry_run)
        # Table-wide, so only on a run over every tenant, after the memory steps. A build
        # that failed fails the run (the next run tries it again).
        indexes = None if tenant_id is not None else vector_index.reconcile(
            self.db, dry_run=self.dry_run, keep_going=self.keep_going)
        names = [st.name for st in self.steps] + ["tombstones_expired", "history_pruned",
                                               "events_pruned"]
        totals = {n: sum(t.get(n, 0) for t in result["tenants"]) for n in names}
        s = self.settings
        return {
            "ok": result["ok"] and not (indexes and indexes["failed"]),
            "complete": result["complete"] and (indexes is None or indexes["complete"]),
            "run_id": str(self.run_id),
            "dry_run": self.dry_run, "now": self.now.isoformat(),
            "rules": {
                "archive_threshold": s.lifecycle_archive_threshold,
                "archive_min_age_days": s.lifecycle_archive_min_age_days,
                "keep_importance": KEEP_IMPORTANCE,
                "short_term_expiry": s.lifecycle_short_term_expiry,
                "promote_access_count": s.lifecycle_promote_access_count,
                "candidate_max_age_days": s.lifecycle_candidate_max_age_days,
                "history": self.history,
                "event_retention_days": s.event_retention_days,
            },
            "totals": totals, "tenants": result["tenants"], "vector_indexes": indexes,
        }

    def tenant(self, tenant_id: uuid.UUID) -> dict[str, Any]:
        report: dict[str, Any] = {"ok": True, "complete": True}
        params = {**self.params, "tenant": tenant_id}
        for step in self.steps:
            done, sample, complete = self._memory_step(step, params)
            report[step.name] = done
            if self.dry_run:
                report.setdefault("sample_ids", {})[step.name] = sample
            if not complete:
                return {**report, "complete": False}
        report["tombstones_expired"] = self._sweep("lifecycle.tombstone_expire", _TOMBSTONES,
                                                   _TOMBSTONES_DRY, params)
        if params["history_before"] is not None:
            report["history_pruned"] = self._sweep("lifecycle.history_prune", _HISTORY,
                                                   _HISTORY_DRY, params)
        report["events_pruned"] = self._sweep("lifecycle.event_prune", _EVENTS, _EVENTS_DRY,
                                              params)
        return report

    def _memory_step(self, step: Step, params: dict[str, Any]) -> tuple[int, list[str], bool]:
        """Batches until the selection is exhausted; (changed, sample ids, complete)."""
        done, sample = 0, []
        after: tuple[Any, uuid.UUID] = (_START, _NIL)
        while True:
            page = {**params, "after_k": after[0], "after_id": after[1]}
            if self.dry_run:
                with self.db.connection() as conn:
                    rows = conn.execute(_page(step, lock=False), page).fetchall()
            else:
                with self.db.transaction(cause=step.cause, actor=ACTOR,
                                         operation_id=self.run_id) as cur:
                    rows = cur.execute(_statement(step), page).fetchall()
                if rows:
                    self._audit(params["tenant"], step.action, step.cause,
                                [r["id"] for r in rows], len(rows))
            done += len(rows)
            self.progress(len(rows))
            sample += [str(r["id"]) for r in rows[:SAMPLE - len(sample)]]
            # A short page ends the step. Rows skipped because a user transaction held them
            # are past the keyset now: the next run looks at them again.
            if len(rows) < params["limit"]:
                return done, sample, True
            after = max((r["k"], r["id"]) for r in rows)
            if self.keep_going is not None and not self.keep_going():
                return done, sample, False

    def _sweep(self, operation: str, delete: str, count: str, params: dict[str, Any]) -> int:
        if self.dry_run:
            with self.db.connection() as conn:
                return conn.execute(count, params).fetchone()["n"]
        done = 0
        while True:
            with self.db.transaction() as cur:
                n = cur.execute(delete, params).rowcount
            done += n
            if n < params["limit"]:
                break
        if done:
            self._audit(params["tenant"], "delete", operation, [], done)
        return done

    def _audit(self, tenant_id: uuid.UUID, action: str, operation: str, ids: list[uuid.UUID],
               count: int) -> None:
        append(self.db, Caller.system(tenant_id, surface=self.surface),
               AuditEvent(action, operation, memory_ids=ids, count=count))


def run_lifecycle(
    db: Database, *, tenant_id: uuid.UUID | None = None, now: datetime | None = None,
    dry_run: bool = False, settings: Settings | None = None, keep_going: KeepGoing | None = None,
    surface: str = "cli", progress: Callable[[int], Any] | None = None,
) -> dict[str, Any]:
    """One lifecycle pass; the JSON report (``ok`` false when a tenant's run failed).
    ``progress`` receives the number of memories each batch changed."""
    return LifecycleRun(db, settings=settings, now=now, dry_run=dry_run, keep_going=keep_going,
                        surface=surface, progress=progress).run(tenant_id)
