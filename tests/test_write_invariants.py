"""The write path's invariants under random sequences of every entry point.

A hypothesis ``RuleBasedStateMachine`` drives one fresh tenant per example (one database for
the whole run, so examples are cheap) through every way a memory, a tombstone or a key can
change: each step goes through the real HTTP app (TestClient over the real database), except
import, which is an operator entry point and is called as the core function
(``strata.maintenance.transfer.import_lines``) on the real database. Values are drawn from small pools
(three slots, a handful of values each with alias / case / punctuation variants, three
paths), so duplicates, tombstones and supersessions really happen.

Rules (see ``WriteMachine``): create (one or two items, with or without slot and value),
create named (on_conflict replace / ignore / error), PATCH content, PATCH slot, move (PATCH
path), ingest (``wait: true``, user messages from a vocabulary the rule extractor really
turns into slots, changes and changes back), an ingested story (a change and a change
back, one request per message, which is what makes candidates), review (promote / reject /
reject with suppress / merge, on candidates ``GET /v1/review`` lists), forget, delete,
restore (of a deleted memory, and of an earlier version), import (an export of a second
tenant, a hand-built record, and a backup of the machine's own tenant taken earlier), mint
a key (``POST /v1/keys`` with a ceiling, by a key the machine holds), grant, remove a
grant, revoke a key. Every tenant starts with principals lead / alice / bob and their
grants, and a key chain root -> lead's key -> a narrower key of lead's. Memory-changing
rules act with the root key, or (``as_other``) with a key the machine holds. Every HTTP
answer may be 2xx or a 4xx (a legitimate refusal), never 5xx; an import may refuse with
``InvalidInput`` / ``Conflict``, never raise anything else.

After every step, each invariant is checked against the database (one function per
invariant, returning the violations, so the control test below proves each can fail):

1. ``live_retired_values``: no active or candidate memory holds a forgotten or rejected
   (suppressed) value inside the scope of a tombstone still in force.
2. ``double_slot_holders``: at most one active memory per (path, slot).
3. ``duplicate_active_values``: no two active memories with one canonical value in a path.
4. ``history_gaps``: every change left a history row (the exact statement is at the
   function).
5. ``keys_above_parent``: every minted key's effective access lies within its parent's
   (the minting key's) live effective access.
6. ``audit_breaks``: the tenant's audit chain verifies.
7. ``live_fingerprint_matches``: no active or candidate memory carries a forgotten fact --
   matches the fingerprint of a forgotten tombstone in force whose scope holds it
   (strata.write.fingerprints: its probes under the tenant's key against the stored keyed
   features), whatever its wording. (A forgotten tombstone keeps no plain hash, so
   invariant 1 cannot see one.)
8. ``event_mismatches``: every change has exactly one event in the outbox and every event
   its change (the exact statement is at the function).

Budget. ``make test`` runs a fixed, reproducible budget (``derandomize``: the same sequences
every run, nothing written to a hypothesis database, nothing printed on success): 200
sequences of up to 25 steps, measured on the 2-core development machine at about 60 s
before the write-path rewrite and 85-90 s after it, when every invariant holds (the HTTP
steps take about two thirds, ingest dominating at ~25 ms a request; the six checks after
every step about a quarter). A failing run shrinks each distinct failure first, up to
hypothesis' own five-minute shrink limit, hence the test's longer timeout. A longer or
different exploration is one environment variable away:

    STRATA_STATEFUL_EXAMPLES=2000   sequences (default 200)
    STRATA_STATEFUL_STEPS=50        steps per sequence (default 25)
    STRATA_STATEFUL_RANDOM=1        random instead of derandomized generation (new sequences
                                    every run; a failure prints the @reproduce_failure blob)

e.g. ``STRATA_STATEFUL_EXAMPLES=2000 STRATA_STATEFUL_RANDOM=1 .venv/bin/python -m pytest
tests/test_write_invariants.py -q -p no:cacheprovider --timeout=0``.
"""

from __future__ import annotations

import io
import json
import os
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import HealthCheck, Verbosity
from hypothesis import settings as hsettings
from hypothesis import strategies as st
from hypothesis.stateful import (
    Bundle,
    RuleBasedStateMachine,
    initialize,
    invariant,
    multiple,
    precondition,
    rule,
    run_state_machine_as_test,
)

from strata.audit import verify_tenant
from strata.auth import create_tenant
from strata.foundation.errors import Conflict, InvalidInput
from strata.maintenance import transfer

from strata.write import fingerprints
from strata.write.canonical import canonicalize, slot_value_hash, value_hash

from support import bearer

EXAMPLES = int(os.environ.get("STRATA_STATEFUL_EXAMPLES", "200"))
STEPS = int(os.environ.get("STRATA_STATEFUL_STEPS", "25"))
RANDOM = os.environ.get("STRATA_STATEFUL_RANDOM", "") not in ("", "0")

# --------------------------------------------------------------------------------------
# The pools values are drawn from (small, so they collide)
# --------------------------------------------------------------------------------------

PATHS = ("users.alice", "users.bob", "shared.team")

# slot -> (value variants with the normalised value each stands for, content templates).
# Variants differ by alias ("Postgres"), case and punctuation, so one slot value and one
# canonical text arrive in several spellings.
SLOTS: dict[str, tuple[tuple[tuple[str, str], ...], tuple[str, ...]]] = {
    "user.preferred_database": (
        (("PostgreSQL", "postgresql"), ("Postgres", "postgresql"), ("postgresql.", "postgresql"),
         ("MySQL", "mysql"), ("mysql", "mysql"), ("SQLite", "sqlite")),
        ("The user prefers {}", "I prefer {}", "{}"),
    ),
    "user.preferred_editor": (
        (("vim", "vim"), ("Vim", "vim"), ("neovim", "neovim"), ("nvim", "neovim"),
         ("emacs", "emacs")),
        ("The user uses {}", "The user prefers {}"),
    ),
    "user.location": (
        (("Berlin", "berlin"), ("berlin.", "berlin"), ("Paris", "paris"), ("Munich", "munich")),
        ("The user lives in {}", "{}"),
    ),
}

PLAIN = ("Deploys happen on Fridays", "deploys happen on fridays!", "The team uses Kubernetes",
         # one fact in two wordings: forgotten in one, it must not come back in the other
         "My gym locker is 58213", "Gym locker number 58213 is mine")


@dataclass(frozen=True)
class Statement:
    content: str
    slot: str | None
    value: str | None  # the variant as a caller would send it
    normal: str | None = None  # the slot value it normalises to (as an export carries it)

    def __repr__(self) -> str:  # shrunk examples print statements: keep them short
        slot = f" [{self.slot}={self.value}]" if self.slot and self.value else ""
        return f"S({self.content!r}{slot})"

    def _repr_pretty_(self, p, cycle) -> None:  # what hypothesis prints (not repr)
        p.text(repr(self))


STATEMENTS: tuple[Statement, ...] = tuple(
    Statement(template.format(v), slot, v, normal)
    for slot, (variants, templates) in SLOTS.items()
    for v, normal in variants
    for template in templates
) + tuple(Statement(c, None, None) for c in PLAIN)

# What users say to /v1/ingest. Each produces what its comment says under the rule extractor
# (strata.ingest.rules.extract_message): a slot value, a change (asserts_change) or
# a change back to an earlier value.
INGEST = (
    "I prefer PostgreSQL",             # user.preferred_database = postgresql
    "I prefer Postgres",               # the same value by alias
    "I prefer MySQL",                  # = mysql
    "I've switched to MySQL",          # = mysql, a change
    "I've gone back to PostgreSQL",    # = postgresql, a change back
    "I prefer SQLite",                 # = sqlite
    "I live in Berlin",                # user.location = berlin
    "I live in Paris",                 # = paris
    "I've moved to Paris",             # = paris, a change
    "I use vim",                       # user.preferred_editor = vim
    "I use nvim",                      # = neovim (alias)
    "I switched to emacs",             # = emacs, a change
    "I switched back to vim",          # = vim, a change back
)

# Conversations that supersede and then change back (one request per message).
STORIES = (
    ("I prefer PostgreSQL", "I've switched to MySQL", "I've gone back to PostgreSQL"),
    ("I use vim", "I switched to emacs", "I switched back to vim"),
    ("I live in Berlin", "I've moved to Paris"),
)

NAMES = ("db", "editor", "home")
KINDS = ("fact", "preference")
CEILINGS: tuple[list[dict[str, str]] | None, ...] = (
    None,
    [{"path": "users.alice", "level": "owner"}],
    [{"path": "users", "level": "write"}],
    [{"path": "users", "level": "owner"}],
    [{"path": "shared.team", "level": "read"}],
    [{"path": "users.alice", "level": "write"}, {"path": "shared.team", "level": "write"}],
    [{"path": "", "level": "owner"}],
)
GRANT_PATHS = ("", "users", "users.alice", "users.bob", "shared.team", "shared")
LEVELS = ("read", "write", "owner")

# Principals besides the tenant's admin (root owner), with their grants at the start.
PRINCIPALS = ("lead", "alice", "bob")
START_GRANTS = (
    ("lead", "users", "owner"),
    ("alice", "users.alice", "owner"),
    ("alice", "shared.team", "write"),
    ("bob", "users.bob", "write"),
    ("bob", "shared.team", "read"),
)

# --------------------------------------------------------------------------------------
# The invariants: each returns its violations (empty when it holds)
# --------------------------------------------------------------------------------------


def _within(path: str, scope: str) -> bool:
    """ltree ``path <@ scope``."""
    return scope == "" or path == scope or path.startswith(scope + ".")


def live_retired_values(db, tenant_id) -> list[str]:
    """1. No active or candidate memory holds a forgotten or rejected value in the scope of a
    tombstone still in force (``until`` unset or in the future): not by value hash, and not
    by slot + slot value hash (sha256 of the canonical value: ``slot_value_hash``), which is
    how the write gate keys a retired slot value (``_TOMBSTONES_SQL``). The slot hash is
    computed here in Python over the fetched rows, from the stored ``value``."""
    with db.connection() as conn:
        tombs = conn.execute(
            "SELECT id, path::text AS path, slot, slot_value_hash, value_hash,"
            " reason::text AS reason FROM tombstones"
            " WHERE tenant_id = %s AND reason IN ('forgotten', 'rejected')"
            "   AND (until IS NULL OR until > now())",
            (tenant_id,),
        ).fetchall()
        if not tombs:
            return []
        live = conn.execute(
            "SELECT id, path::text AS path, status::text AS status, slot, value, value_hash"
            " FROM memories WHERE tenant_id = %s AND status IN ('active', 'candidate')",
            (tenant_id,),
        ).fetchall()
    out = []
    for t in tombs:
        for m in live:
            if not _within(m["path"], t["path"]):
                continue
            by_hash = bytes(m["value_hash"]) == bytes(t["value_hash"])
            by_slot = (t["slot"] is not None and m["slot"] == t["slot"]
                       and t["slot_value_hash"] is not None
                       and slot_value_hash(m["value"]) == bytes(t["slot_value_hash"]))
            if by_hash or by_slot:
                out.append(
                    f"{m['status']} memory {m['id']} at {m['path']} (slot {m['slot']}, value "
                    f"{m['value']!r}) holds a {t['reason']} value of tombstone {t['id']} at "
                    f"{t['path'] or '<root>'} (by {'value hash' if by_hash else 'slot value'})")
    return out


def live_fingerprint_matches(db, tenant_id) -> list[str]:
    """7. No active or candidate memory carries a forgotten fact in the scope of its
    tombstone (in force): the memory's probes (its canonical text, slot and value), keyed
    with the tenant's secret, checked against every such fingerprint -- all of them, not
    only those an index would offer."""
    with db.connection() as conn:
        tombs = conn.execute(
            "SELECT t.id, t.path::text AS path, k.secret, t.fingerprint, t.fingerprint_weights,"
            " t.fingerprint_kinds FROM tombstones t JOIN fingerprint_keys k"
            " ON k.id = t.fingerprint_key_id AND k.tenant_id = t.tenant_id"
            " WHERE t.tenant_id = %s AND t.reason = 'forgotten'"
            "   AND (t.until IS NULL OR t.until > now())",
            (tenant_id,),
        ).fetchall()
        if not tombs:
            return []
        live = conn.execute(
            "SELECT id, path::text AS path, status::text AS status, canonical, slot, value"
            " FROM memories WHERE tenant_id = %s AND status IN ('active', 'candidate')",
            (tenant_id,),
        ).fetchall()
    out = []
    for m in live:
        texts = fingerprints.probes(m["canonical"], m["slot"], m["value"])
        for t in tombs:
            probe = {fingerprints.keyed(bytes(t["secret"]), p) for p in texts}
            if _within(m["path"], t["path"]) and fingerprints.carries(
                    [bytes(h) for h in t["fingerprint"]], t["fingerprint_weights"],
                    t["fingerprint_kinds"], probe):
                out.append(f"{m['status']} memory {m['id']} at {m['path']} carries the forgotten"
                           f" fact of tombstone {t['id']} at {t['path'] or '<root>'}")
    return out


def double_slot_holders(db, tenant_id) -> list[str]:
    """2. At most one active holder per (path, slot)."""
    with db.connection() as conn:
        rows = conn.execute(
            "SELECT path::text AS path, slot, array_agg(id ORDER BY id) AS ids,"
            " array_agg(value ORDER BY id) AS vals FROM memories"
            " WHERE tenant_id = %s AND status = 'active' AND slot IS NOT NULL"
            " GROUP BY path, slot HAVING count(*) > 1",
            (tenant_id,),
        ).fetchall()
    return [f"{len(r['ids'])} active holders of {r['slot']} at {r['path']}: "
            f"{[str(i) for i in r['ids']]} values {r['vals']}" for r in rows]


def duplicate_active_values(db, tenant_id) -> list[str]:
    """3. No two active memories with one canonical value (``value_hash``) in one path."""
    with db.connection() as conn:
        rows = conn.execute(
            "SELECT path::text AS path, min(canonical) AS canonical,"
            " array_agg(id ORDER BY id) AS ids FROM memories"
            " WHERE tenant_id = %s AND status = 'active'"
            " GROUP BY path, value_hash HAVING count(*) > 1",
            (tenant_id,),
        ).fetchall()
    return [f"{len(r['ids'])} active memories with the value {r['canonical']!r} at {r['path']}: "
            f"{[str(i) for i in r['ids']]}" for r in rows]


def history_gaps(db, tenant_id) -> list[str]:
    """4. Every change left a history row, stated exactly: for every live memory at version
    ``v``, its memory_history rows carry the versions 1 .. v-1, each exactly once.

    Why that is true by construction: a memory is born at version 1; every statement that
    changes a row bumps ``version`` by one, and the history trigger records the *old* row
    (``OLD.version``), so the updates of a memory record 1, 2, ..., v-1. A delete records
    the last version v_d (operation 'delete'); restoring a deleted memory inserts it at
    max(history version) + 1 = v_d + 1, so the restored row is again above every recorded
    version, with no gap and no repeat. An imported memory arrives with its source history
    (the source satisfied the same), and a backup re-imported into its own tenant must not
    bring a memory back below (or at) a version its history already holds. A version in
    history at or above the live one, a repeated one, or a missing one, is a change that
    left no trace or a row a writer holding an old version could compare-and-set against."""
    with db.connection() as conn:
        rows = conn.execute(
            "SELECT m.id, m.version, COALESCE(array_agg(h.version ORDER BY h.version)"
            "   FILTER (WHERE h.version IS NOT NULL), '{}') AS versions"
            " FROM memories m LEFT JOIN memory_history h"
            "   ON h.tenant_id = m.tenant_id AND h.memory_id = m.id"
            " WHERE m.tenant_id = %s GROUP BY m.id, m.version",
            (tenant_id,),
        ).fetchall()
    return [f"memory {r['id']} at version {r['version']} has history versions {r['versions']}"
            f" (expected {list(range(1, r['version']))})"
            for r in rows if list(r["versions"]) != list(range(1, r["version"]))]


_EVENTS = """
SELECT e.id, e.seq, e.type, e.memory_id, e.version, e.history_id FROM events e
WHERE e.tenant_id = %(t)s ORDER BY e.seq
"""
_OWN_HISTORY = """
SELECT h.id, h.memory_id, h.version, h.operation,
       EXISTS (SELECT 1 FROM memory_history o WHERE o.operation_id = h.operation_id
               AND o.version = h.version AND o.changed_at = h.changed_at
               AND o.id <> h.id) AS imported
FROM memory_history h WHERE h.tenant_id = %(t)s
"""
BIRTHS = {"created", "held_for_review", "restored"}


def event_mismatches(db, tenant_id) -> list[str]:
    """8. Every change has exactly one event and every event its change (migration 0025).

    Changes are read from what the write path leaves: a history row per update and delete
    (the trigger that writes it writes the event, naming the row in ``history_id``), and a
    birth per insert -- a version a memory holds (live or in history) that no update of
    this store reached, i.e. with no history row of operation 'update' one version below.
    History rows an import copied from an export were no change here: they keep the
    source row's operation, version and time, and the source row is in this database too
    (the machine exports a second tenant and its own). So:
    every committed event is numbered (``seq`` 1..n, no gap); each of this store's history
    rows has exactly one event, of that memory and the version the change left (the row's
    version + 1 for an update, its own for a delete), and an imported row none; each event
    naming a history row names one that exists; and the events without a history row are
    exactly the births (one per born version) plus erasures of memories deleted before
    (``forgotten``, on a memory not live)."""
    with db.connection() as conn:
        events = conn.execute(_EVENTS, {"t": tenant_id}).fetchall()
        history = conn.execute(_OWN_HISTORY, {"t": tenant_id}).fetchall()
        live = {r["id"]: r["version"] for r in conn.execute(
            "SELECT id, version FROM memories WHERE tenant_id = %s", (tenant_id,)).fetchall()}
    out = []
    if [e["seq"] for e in events] != list(range(1, len(events) + 1)):
        out.append(f"event seqs {[e['seq'] for e in events]} are not 1..{len(events)}")
    by_history: dict[int, list] = {}
    for e in events:
        if e["history_id"] is not None:
            by_history.setdefault(e["history_id"], []).append(e)
    rows = {h["id"]: h for h in history}
    for h in history:
        got = by_history.get(h["id"], [])
        want = 0 if h["imported"] else 1
        version = h["version"] + (h["operation"] == "update")
        if len(got) != want or any(
                (e["memory_id"], e["version"]) != (h["memory_id"], version) for e in got):
            out.append(f"history row {h['id']} ({h['operation']} of memory {h['memory_id']}"
                       f" at version {h['version']}) has events {[dict(e) for e in got]}")
    for hid in by_history.keys() - rows.keys():
        out.append(f"events {[e['id'] for e in by_history[hid]]} name history row {hid},"
                   " which does not exist")
    updates = {(h["memory_id"], h["version"]) for h in history
               if h["operation"] == "update" and not h["imported"]}
    states = {(h["memory_id"], h["version"]) for h in history if not h["imported"]}
    states |= set(live.items())
    births = sorted((m, v) for m, v in states if (m, v - 1) not in updates)
    born = sorted((e["memory_id"], e["version"]) for e in events
                  if e["history_id"] is None and e["type"] in BIRTHS)
    if born != births:
        out.append(f"births {[(str(m), v) for m, v in births]} have birth events"
                   f" {[(str(m), v) for m, v in born]}")
    for e in events:
        if e["history_id"] is None and e["type"] not in BIRTHS and (
                e["type"] != "forgotten" or e["memory_id"] in live):
            out.append(f"event {e['id']} ({e['type']} of memory {e['memory_id']}) has no change")
    return out


_ABOVE_PARENT = """
WITH e AS (  -- each key's effective access, computed once
    SELECT k.id, k.parent_id, k.created_at, a.path, a.level
    FROM api_keys k CROSS JOIN LATERAL effective_access(k.id) a
    WHERE k.tenant_id = %s
)
SELECT c.id, c.parent_id, c.path::text AS path, c.level::text AS level
FROM e c
WHERE c.parent_id IS NOT NULL
  AND NOT EXISTS (SELECT 1 FROM e p WHERE p.id = c.parent_id
                  AND c.path <@ p.path AND c.level <= p.level)
ORDER BY c.created_at, c.id, c.path
"""


def keys_above_parent(db, tenant_id) -> list[str]:
    """5. Every key's effective access lies within its parent's: each (path, level) of
    ``effective_access(key)`` is covered by a row of ``effective_access(parent)`` at the same
    path or above, at the same level or higher (levels compared as the access_level enum,
    read < write < owner). A revoked, expired or powerless parent has no rows, so its
    children must have none either."""
    with db.connection() as conn:
        rows = conn.execute(_ABOVE_PARENT, (tenant_id,)).fetchall()
    return [f"key {r['id']} holds {r['level']} on {r['path'] or '<root>'} beyond its parent "
            f"{r['parent_id']}" for r in rows]


def audit_breaks(db, tenant_id, *, full: bool = True) -> list[str]:
    """6. The tenant's audit chain verifies: ``strata.audit.verify_tenant``, a full walk, or
    with ``full=False`` the scheduled job's incremental one (the rows appended since the
    last verified checkpoint, and the head)."""
    report = verify_tenant(db, tenant_id, full=full)
    if report["ok"]:
        return []
    return [f"audit chain breaks at seq {report['first_bad_seq']} (gaps {report['gaps']}, "
            f"head {report['head_seq']})"]


# --------------------------------------------------------------------------------------
# The machine
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Key:
    id: str
    secret: str
    principal: str
    root: bool = False

    def __repr__(self) -> str:  # shrunk examples print keys; the secret is noise
        return f"Key({'root' if self.root else self.id[:8]}, {self.principal})"

    def _repr_pretty_(self, p, cycle) -> None:
        p.text(repr(self))


@dataclass
class Context:
    """What the machine needs from the test's fixtures, built once per run."""

    db: Any
    client: Any
    embedder: Any
    settings: Any
    exports: list[str]


_HAND_TENANT = uuid.UUID("6a0d5a4e-0000-4000-8000-00000000f11e")


def hand_built_export(src_id: uuid.UUID, stmt: Statement, path: str, status: str,
                      kind: str, settings) -> list[str]:
    """An export file of one memory (what an operator might assemble by hand or by script):
    version 1, no history, the slot value normalised as an export carries it."""
    now = datetime.now(UTC).isoformat()
    counts = {"memory": 1, "history": 0, "relationship": 0, "tombstone": 0}
    records = [
        {"type": "header", "format": "strata-export", "version": 1, "exported_at": now,
         "tenant": {"id": str(_HAND_TENANT), "name": "handmade"},
         "embedding": {"dim": settings.embedding_dim, "model": None}, "counts": counts},
        {"type": "memory", "id": str(src_id), "path": path, "name": None,
         "content": stmt.content, "kind": kind, "slot": stmt.slot,
         "value": stmt.normal, "status": status,
         "origin": "imported", "importance": 0.5, "confidence": 1.0, "pinned": False,
         "access_count": 0, "reinforcements": 0, "tier": "long_term", "valid_from": now,
         "valid_to": now if status == "superseded" else None, "recorded_at": now,
         "embedding": None, "embedding_model": None, "version": 1, "evidence": [],
         "meta": {}, "tags": [], "created_at": now, "updated_at": now},
        {"type": "end", "counts": counts},
    ]
    if status == "superseded":  # a closed range must end after it begins
        records[1]["valid_from"] = (datetime.now(UTC) - timedelta(days=1)).isoformat()
    return [json.dumps(r) for r in records]


statements = st.sampled_from(STATEMENTS)
paths = st.sampled_from(PATHS)

# A memory reference that points at no memory (the write was blocked, skipped or refused):
# steps on it answer 404. Every rule that writes memories adds a fixed number of references
# to the bundle, padded with this, whatever the outcome: the bundle's size must not depend
# on what the system decided, or a replayed sequence would draw differently.
NOTHING = "00000000-0000-4000-8000-000000000000"
IMPORT_REFS = 3


def refs(ids: list[str], n: int):
    return multiple(*(ids[:n] + [NOTHING] * (n - len(ids[:n]))))


def result_ids(r) -> list[str]:
    if r.status_code != 200:
        return []
    return [x["id"] if x.get("id") else NOTHING for x in r.json()["results"]]


class WriteMachine(RuleBasedStateMachine):
    memories = Bundle("memories")
    keys = Bundle("keys")
    grants = Bundle("grants")

    def __init__(self, ctx: Context) -> None:
        super().__init__()
        self.ctx = ctx
        self.db, self.client = ctx.db, ctx.client
        tenant, key = create_tenant(self.db, f"sm{uuid.uuid4().hex[:12]}")
        self.tenant_id = tenant.id
        self.root = Key(str(key.id), key.key, "admin", root=True)
        # The starting organisation is setup, not a step under test: written in one
        # transaction (the HTTP routes for principals and grants are rules below).
        self.principals = {"admin": str(key.principal_id)}
        self.start_grants = []
        with self.db.transaction(cause="test.setup", actor="test") as cur:
            for name in PRINCIPALS:
                self.principals[name] = str(cur.execute(
                    "INSERT INTO principals (tenant_id, name, kind) VALUES (%s, %s, 'user')"
                    " RETURNING id", (self.tenant_id, name)).fetchone()["id"])
            for who, path, level in START_GRANTS:
                self.start_grants.append(str(cur.execute(
                    "INSERT INTO grants (tenant_id, principal_id, path, level)"
                    " VALUES (%s, %s, %s::ltree, %s) RETURNING id",
                    (self.tenant_id, self.principals[who], path, level)).fetchone()["id"]))
        # Two minted keys to start from, a chain root -> lead's key -> a narrower key of
        # lead's minted by it, over HTTP like any other (so each records its minting key as
        # parent; a key mints for its own principal only, unless it owns the tenant root).
        self.start_keys = []
        for holder, who, ceiling in ((0, "lead", None),
                                     (1, "lead", [{"path": "users.alice", "level": "owner"}])):
            by = ([self.root] + self.start_keys)[holder]
            body: dict[str, Any] = {"principal_id": self.principals[who]}
            if ceiling is not None:
                body["ceiling"] = ceiling
            r = self.call("post", "/v1/keys", by, body)
            assert r.status_code == 201, r.text
            self.start_keys.append(Key(r.json()["id"], r.json()["key"], who))
        self.clock = datetime.now(UTC) - timedelta(days=1)
        self.serial = 0
        self.backups: list[list[str]] = []

    # -- plumbing ----------------------------------------------------------------------

    def call(self, method: str, url: str, key: Key, body: Any = None, **kw: Any):
        """One request; any answer but a 5xx is legitimate."""
        if body is not None:
            kw["json"] = body
        r = self.client.request(method.upper(), url, headers=bearer(key.secret), **kw)
        assert r.status_code < 500, f"{method.upper()} {url} -> {r.status_code}: {r.text}"
        return r

    def actor(self, as_other: bool, key: Key) -> Key:
        return key if as_other else self.root

    def version_of(self, memory_id: str) -> int | None:
        with self.db.connection() as conn:
            row = conn.execute("SELECT version FROM memories WHERE tenant_id = %s AND id = %s",
                               (self.tenant_id, memory_id)).fetchone()
        return row["version"] if row else None

    def ids(self, where: str = "true") -> list[str]:
        """The tenant's memory ids in an order that does not depend on uuid values (rows of
        one transaction share created_at), so a replayed sequence picks the same rows."""
        with self.db.connection() as conn:
            return [str(r["id"]) for r in conn.execute(
                f"SELECT id FROM memories WHERE tenant_id = %s AND {where}"
                " ORDER BY created_at, path, canonical, status, slot, value, version, id",
                (self.tenant_id,))]

    def import_(self, lines: list[str]):
        """The operator's import (the core function on the real database): a refusal of the
        file is legitimate, any other exception is a bug."""
        before = set(self.ids())
        try:
            transfer.import_lines(self.db, self.tenant_id, lines, self.ctx.embedder,
                                  settings=self.ctx.settings)
        except (InvalidInput, Conflict):
            pass
        return refs([i for i in self.ids() if i not in before], IMPORT_REFS)

    @staticmethod
    def item(stmt: Statement, path: str, kind: str, give_value: bool) -> dict[str, Any]:
        item: dict[str, Any] = {"content": stmt.content, "path": path, "kind": kind}
        if stmt.slot is not None:
            item["slot"] = stmt.slot
            if give_value:
                item["value"] = stmt.value
        return item

    # -- setup -------------------------------------------------------------------------

    @initialize(target=keys)
    def starting_keys(self):
        return multiple(self.root, *self.start_keys)

    @initialize(target=grants)
    def starting_grants(self):
        return multiple(*self.start_grants)

    # -- direct writes -----------------------------------------------------------------

    @rule(target=memories, items=st.lists(st.tuples(statements, paths, st.sampled_from(KINDS),
                                                    st.booleans()), min_size=1, max_size=2),
          as_other=st.booleans(), key=keys)
    def create(self, items, as_other, key):
        body = {"memories": [self.item(*i) for i in items]}
        r = self.call("post", "/v1/memories", self.actor(as_other, key), body)
        return refs(result_ids(r), len(items))

    @rule(target=memories, stmt=statements, path=paths, name=st.sampled_from(NAMES),
          on_conflict=st.sampled_from(("replace", "ignore", "error")),
          give_value=st.booleans(), as_other=st.booleans(), key=keys)
    def create_named(self, stmt, path, name, on_conflict, give_value, as_other, key):
        body = {"memories": [{**self.item(stmt, path, "fact", give_value), "name": name}],
                "on_conflict": on_conflict}
        r = self.call("post", "/v1/memories", self.actor(as_other, key), body)
        return refs(result_ids(r), 1)

    def _patch(self, memory, body, as_other, key):
        version = self.version_of(memory)
        if version is None:  # deleted or forgotten: the PATCH answers 404
            version = 1
        self.call("patch", f"/v1/memories/{memory}", self.actor(as_other, key),
                  {"expected_version": version, **body})

    @rule(memory=memories, stmt=statements, as_other=st.booleans(), key=keys)
    def patch_content(self, memory, stmt, as_other, key):
        self._patch(memory, {"content": stmt.content}, as_other, key)

    @rule(memory=memories, slot=st.sampled_from((*SLOTS, None)), as_other=st.booleans(),
          key=keys)
    def patch_slot(self, memory, slot, as_other, key):
        self._patch(memory, {"slot": slot}, as_other, key)

    @rule(memory=memories, path=paths, as_other=st.booleans(), key=keys)
    def move(self, memory, path, as_other, key):
        self._patch(memory, {"path": path}, as_other, key)

    # -- ingest ------------------------------------------------------------------------

    @rule(target=memories, path=paths, texts=st.lists(st.sampled_from(INGEST), min_size=1,
                                                       max_size=2),
          past=st.booleans(), as_other=st.booleans(), key=keys)
    def ingest(self, path, texts, past, as_other, key):
        """User messages in one request, said now (a minute after the previous ingest) or a
        year ago."""
        return refs(self.say(self.actor(as_other, key), path, texts, past), len(texts) + 1)

    @rule(target=memories, story=st.sampled_from(STORIES), path=paths,
          as_other=st.booleans(), key=keys)
    def ingest_story(self, story, path, as_other, key):
        """A change and a change back, one request per message, a minute apart: random
        single ingests rarely line these up, and they are what makes candidates."""
        ids: list[str] = []
        for text in story:
            ids += self.say(self.actor(as_other, key), path, [text], False)
        return refs(list(dict.fromkeys(ids)), len(story) + 2)

    def say(self, actor: Key, path: str, texts: list[str], past: bool) -> list[str]:
        self.clock += timedelta(minutes=1)
        at = self.clock - timedelta(days=365) if past else self.clock
        messages = [{"role": "user", "content": t,
                     "at": (at + timedelta(seconds=i)).isoformat()} for i, t in enumerate(texts)]
        r = self.call("post", "/v1/ingest", actor,
                      {"path": path, "messages": messages, "wait": True})
        ids = []
        for item in r.json()["items"] if r.status_code in (200, 202) else []:
            ids += [x for x in [item.get("memory_id"), *item.get("related_ids", [])] if x]
        return list(dict.fromkeys(ids))

    # -- review ------------------------------------------------------------------------

    @rule(decision=st.sampled_from(("promote", "reject", "suppress", "merge")),
          pick=st.integers(0, 7), into=st.integers(0, 7), as_other=st.booleans(), key=keys)
    def review(self, decision, pick, into, as_other, key):
        """A decision on the ``pick``-th candidate GET /v1/review lists (modulo how many);
        merge goes into the ``into``-th active memory. Draws of a fixed shape: what the list
        holds must not change what hypothesis draws next."""
        actor = self.actor(as_other, key)
        r = self.call("get", "/v1/review", actor)
        listed = {m["id"] for m in r.json()["items"]} if r.status_code == 200 else set()
        candidates = [i for i in self.ids("status = 'candidate'") if i in listed]
        if not candidates:
            return
        memory = candidates[pick % len(candidates)]
        if decision == "promote":
            self.call("post", f"/v1/review/{memory}/promote", actor)
        elif decision in ("reject", "suppress"):
            self.call("post", f"/v1/review/{memory}/reject", actor,
                      {"suppress": decision == "suppress"})
        else:
            active = self.ids("status = 'active'") or [NOTHING]
            self.call("post", f"/v1/review/{memory}/merge", actor,
                      {"into": active[into % len(active)]})

    # -- forget, delete, restore -------------------------------------------------------

    @rule(memory=memories, as_other=st.booleans(), key=keys)
    def forget(self, memory, as_other, key):
        self.call("post", f"/v1/memories/{memory}/forget", self.actor(as_other, key))

    @rule(memory=memories, as_other=st.booleans(), key=keys)
    def delete(self, memory, as_other, key):
        self.call("delete", f"/v1/memories/{memory}", self.actor(as_other, key))

    @rule(memory=memories, as_other=st.booleans(), key=keys)
    def restore_deleted(self, memory, as_other, key):
        self.call("post", f"/v1/memories/{memory}/restore", self.actor(as_other, key))

    @rule(memory=memories, version=st.integers(1, 5), as_other=st.booleans(), key=keys)
    def restore_version(self, memory, version, as_other, key):
        self.call("post", f"/v1/memories/{memory}/restore", self.actor(as_other, key),
                  {"version": version})

    # -- import ------------------------------------------------------------------------

    @rule(target=memories, which=st.integers(0, 1))
    def import_export(self, which):
        """An export of a second tenant (supersessions, history, a forgotten value, a
        candidate, a deleted memory), into the machine's tenant."""
        return self.import_(self.ctx.exports[which % len(self.ctx.exports)].splitlines())

    @rule(target=memories, stmt=statements, path=paths,
          status=st.sampled_from(("active", "candidate", "superseded")),
          kind=st.sampled_from(KINDS))
    def import_record(self, stmt, path, status, kind):
        self.serial += 1
        src = uuid.uuid5(_HAND_TENANT, str(self.serial))  # the import derives its own id
        return self.import_(hand_built_export(src, stmt, path, status, kind, self.ctx.settings))

    @rule()
    def take_backup(self):
        """An export of the machine's own tenant (not a write: the backup a later step
        restores)."""
        out = io.StringIO()
        transfer.export(self.db, self.tenant_id, out)
        self.backups.append(out.getvalue().splitlines())

    @precondition(lambda self: bool(self.backups))
    @rule(target=memories, which=st.integers(0, 3))
    def restore_backup(self, which):
        """Import a backup taken earlier into the tenant it came from (ids kept)."""
        return self.import_(self.backups[which % len(self.backups)])

    # -- access ------------------------------------------------------------------------

    @rule(target=keys, holder=keys, principal=st.sampled_from(("admin", *PRINCIPALS)),
          ceiling=st.sampled_from(CEILINGS))
    def mint_key(self, holder, principal, ceiling):
        body: dict[str, Any] = {"principal_id": self.principals[principal]}
        if ceiling is not None:
            body["ceiling"] = ceiling
        r = self.call("post", "/v1/keys", holder, body)
        if r.status_code != 201:  # access decides this, deterministically
            return multiple()
        return Key(r.json()["id"], r.json()["key"], principal)

    @rule(holder=keys, target_key=keys)
    def revoke_key(self, holder, target_key):
        if target_key.root:  # every step would answer 401: nothing left to explore
            return
        self.call("delete", f"/v1/keys/{target_key.id}", holder)

    @rule(target=grants, holder=keys, principal=st.sampled_from(PRINCIPALS),
          path=st.sampled_from(GRANT_PATHS), level=st.sampled_from(LEVELS))
    def grant(self, holder, principal, path, level):
        r = self.call("post", "/v1/grants", holder,
                      {"principal_id": self.principals[principal], "path": path, "level": level})
        return r.json()["id"] if r.status_code == 201 else multiple()

    @rule(holder=keys, grant=grants)
    def remove_grant(self, holder, grant):
        self.call("delete", f"/v1/grants/{grant}", holder)

    # -- invariants --------------------------------------------------------------------

    # One assert per invariant, each on its own line: hypothesis tells failures apart by
    # where they are raised, so a run reports (and shrinks) each broken invariant separately.

    @invariant()
    def no_live_retired_value(self):
        assert not (v := live_retired_values(self.db, self.tenant_id)), "; ".join(v)

    @invariant()
    def no_live_forgotten_fact(self):
        assert not (v := live_fingerprint_matches(self.db, self.tenant_id)), "; ".join(v)

    @invariant()
    def one_active_slot_holder(self):
        assert not (v := double_slot_holders(self.db, self.tenant_id)), "; ".join(v)

    @invariant()
    def one_active_copy_of_a_value(self):
        assert not (v := duplicate_active_values(self.db, self.tenant_id)), "; ".join(v)

    @invariant()
    def every_change_has_history(self):
        assert not (v := history_gaps(self.db, self.tenant_id)), "; ".join(v)

    @invariant()
    def every_change_has_one_event(self):
        assert not (v := event_mismatches(self.db, self.tenant_id)), "; ".join(v)

    @invariant()
    def keys_within_parent(self):
        assert not (v := keys_above_parent(self.db, self.tenant_id)), "; ".join(v)

    @invariant()
    def audit_chain_verifies(self):
        # Incremental after each step: every row is verified once, when it is new, and the
        # head every time (nothing in the machine may touch rows behind the checkpoint);
        # the full walk, which also re-checks the checkpointed row, once per example.
        assert not (v := audit_breaks(self.db, self.tenant_id, full=False)), "; ".join(v)

    def teardown(self):
        assert not (v := audit_breaks(self.db, self.tenant_id)), "; ".join(v)


# --------------------------------------------------------------------------------------
# The second tenant whose exports the machine imports
# --------------------------------------------------------------------------------------


def _source_exports(db, client) -> list[str]:
    """Two exports of a second tenant: a small one, and one with supersession (superseded
    value, tombstone, history), a forgotten value, a candidate held for review, an edited
    memory and a deleted one (history only)."""
    tenant, key = create_tenant(db, f"src{uuid.uuid4().hex[:12]}")
    h = bearer(key.key)
    t0 = datetime.now(UTC) - timedelta(days=30)

    def ok(r, status=200):
        assert r.status_code == status, r.text
        return r.json()

    def say(text, at, path="users.alice"):
        return ok(client.post("/v1/ingest", headers=h, json={
            "path": path, "wait": True,
            "messages": [{"role": "user", "content": text, "at": at.isoformat()}]}))

    def create(content, path, **extra):
        body = {"memories": [{"content": content, "path": path, **extra}]}
        return ok(client.post("/v1/memories", headers=h, json=body))["results"][0]["id"]

    def export():
        out = io.StringIO()
        transfer.export(db, tenant.id, out)
        return out.getvalue()

    say("I prefer MySQL", t0)
    create("The user lives in Berlin", "users.bob", slot="user.location", value="Berlin")
    small = export()

    say("I've switched to PostgreSQL", t0 + timedelta(days=1))
    say("I've gone back to MySQL", t0 + timedelta(days=2))  # held for review
    editor = create("The user uses vim", "shared.team", slot="user.preferred_editor",
                    value="vim")
    mid = create("The user lives in Paris", "users.bob", slot="user.location", value="Paris")
    version = ok(client.get(f"/v1/memories/{mid}", headers=h))["version"]
    ok(client.patch(f"/v1/memories/{mid}", headers=h,
                    json={"expected_version": version, "content": "The user lives in Munich"}))
    ok(client.post(f"/v1/memories/{editor}/forget", headers=h))
    gone = create("Deploys happen on Fridays", "shared.team")
    ok(client.delete(f"/v1/memories/{gone}", headers=h))
    return [small, export()]


def _settings() -> hsettings:
    return hsettings(
        max_examples=EXAMPLES,
        stateful_step_count=STEPS,
        deadline=None,
        derandomize=not RANDOM,
        database=None,
        print_blob=RANDOM,
        verbosity=Verbosity.normal,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much,
                               HealthCheck.data_too_large],
    )


# Passing, the run takes the budget above. Failing, hypothesis shrinks every distinct failure
# (up to its own five-minute shrink limit) before it reports: room for that past the suite's
# 300 s default, so the report arrives instead of a timeout's stack dump.
@pytest.mark.timeout(900)
def test_write_invariants_hold_under_random_sequences(db, client, embedder, settings):
    """Given one database and, per example, a fresh tenant with principals and grants
    When a random sequence of creates, named writes, patches, moves, ingests, reviews,
    forgets, deletes, restores, imports, key mints, grants and revocations runs through
    the real entry points
    Then no answer is a 5xx, and after every step the six invariants hold."""
    ctx = Context(db, client, embedder, settings, _source_exports(db, client))
    run_state_machine_as_test(lambda: WriteMachine(ctx), settings=_settings())


# --------------------------------------------------------------------------------------
# Control: every check reports what it is there to catch
# --------------------------------------------------------------------------------------


def _insert_memory(conn, tenant_id, path, content, *, slot=None, value=None,
                   status="active", version=1) -> uuid.UUID:
    canonical = canonicalize(content)
    return conn.execute(
        "INSERT INTO memories (tenant_id, path, content, canonical, value_hash, slot, value,"
        " status, version) VALUES (%s, %s::ltree, %s, %s, %s, %s, %s, %s, %s) RETURNING id",
        (tenant_id, path, content, canonical, value_hash(canonical), slot, value, status,
         version),
    ).fetchone()["id"]


def _insert_tombstone(conn, tenant_id, path, content, reason, *, slot=None, value=None,
                      until=None) -> None:
    conn.execute(
        "INSERT INTO tombstones (tenant_id, path, slot, slot_value_hash, value_hash, reason,"
        " until) VALUES (%s, %s::ltree, %s, %s, %s, %s, %s)",
        (tenant_id, path, slot, slot_value_hash(value), value_hash(canonicalize(content)),
         reason, until),
    )


def _insert_fingerprint(conn, tenant_id, path, content) -> None:
    """A forgotten tombstone with the fingerprint ``content`` leaves, under the tenant's key."""
    key_id, key = fingerprints.tenant_key(conn.cursor(), tenant_id)
    fp = fingerprints.fingerprint(key, fingerprints.features(content, canonicalize(content)))
    conn.execute(
        "INSERT INTO tombstones (tenant_id, path, value_hash, reason, fingerprint_key_id,"
        " fingerprint, fingerprint_weights, fingerprint_kinds) VALUES (%s, %s::ltree, %s,"
        " 'forgotten', %s, %s, %s, %s)",
        (tenant_id, path, fingerprints.keyed(key, f"c:{canonicalize(content)}"), key_id,
         fp["hashes"], fp["weights"], fp["kinds"]))


# effective_access without the parent clamp: the key's own access (its holder's grants
# clamped by its ceiling), which migration 0010 keeps as key_own_access.
_UNCLAMPED_EFFECTIVE_ACCESS = """
CREATE OR REPLACE FUNCTION effective_access(p_key_id uuid)
RETURNS TABLE (path ltree, level access_level)
LANGUAGE sql STABLE AS $$ SELECT o.path, o.level FROM key_own_access(p_key_id) o $$
"""


def test_each_invariant_check_reports_its_violation(db, client, make_tenant):
    """Given a scratch tenant that satisfies every invariant (and a neighbour tenant)
    When rows violating one invariant each are written directly with SQL
    Then each check reports exactly its violation, in that tenant only."""
    checks = (live_retired_values, double_slot_holders, duplicate_active_values,
              history_gaps, keys_above_parent, audit_breaks, live_fingerprint_matches,
              event_mismatches)
    t = make_tenant()
    other = make_tenant()
    with db.connection() as conn:
        root = conn.execute("SELECT id FROM api_keys WHERE tenant_id = %s",
                            (t.tenant_id,)).fetchone()["id"]
    # a child key minted over HTTP by the root key, for the root principal, below its parent
    r = client.post("/v1/keys", headers=t.headers, json={
        "principal_id": str(t.principal_id), "ceiling": [{"path": "users", "level": "write"}]})
    assert r.status_code == 201, r.text
    child = r.json()["id"]
    with db.connection() as conn:
        conn.execute("UPDATE api_keys SET parent_id = %s WHERE id = %s", (root, child))
        alice = _insert_memory(conn, t.tenant_id, "users.alice", "The user prefers MySQL",
                               slot="user.preferred_database", value="mysql")
        _insert_memory(conn, t.tenant_id, "users.bob", "The user prefers MySQL",
                       slot="user.preferred_database", value="mysql")
        # retired values that bind nothing live: superseded (it may come back as a
        # candidate), expired, and out of scope
        _insert_tombstone(conn, t.tenant_id, "users.alice", "The user prefers MySQL",
                          "superseded", slot="user.preferred_database", value="mysql")
        _insert_tombstone(conn, t.tenant_id, "users", "The user prefers MySQL", "forgotten",
                          until=datetime.now(UTC) - timedelta(minutes=1))
        _insert_tombstone(conn, t.tenant_id, "shared", "The user prefers MySQL", "forgotten")
        # a forgotten fact whose scope holds nothing that carries it (users.carol)
        _insert_fingerprint(conn, t.tenant_id, "users.carol", "I see Dr. Quorvane on Mondays")
    for check in checks:
        assert check(db, t.tenant_id) == [], check.__name__

    # The schema backstops what the write path guarantees; the violations are planted under
    # them, in this test's own database: no unique index on one active value / slot holder
    # per path (migration 0009), and effective_access without the parent clamp (as before
    # migration 0010: the key's own grants and ceiling only).
    with db.connection() as conn:
        conn.execute("DROP INDEX IF EXISTS memories_active_value_key")
        conn.execute("DROP INDEX IF EXISTS memories_active_slot_key")
        conn.execute(_UNCLAMPED_EFFECTIVE_ACCESS)
    with db.connection() as conn:
        # 1. a forgotten value left active (by value hash, in users.alice and users.bob), and
        #    a rejected slot value held by a candidate in other words (by slot + value),
        #    each inside its tombstone's scope
        _insert_tombstone(conn, t.tenant_id, "users", "The user prefers MySQL", "forgotten")
        _insert_memory(conn, t.tenant_id, "users.bob.work", "I prefer mysql",
                       slot="user.preferred_database", value="MySQL", status="candidate")
        _insert_tombstone(conn, t.tenant_id, "users.bob.work", "The user likes MySQL", "rejected",
                          slot="user.preferred_database", value="mysql")
        # 2. a second active holder of users.alice's slot, with another value
        _insert_memory(conn, t.tenant_id, "users.alice", "The user prefers SQLite",
                       slot="user.preferred_database", value="sqlite")
        # 3. two active copies of one canonical value (two spellings) in one path
        _insert_memory(conn, t.tenant_id, "shared.team", "Deploys happen on Fridays")
        _insert_memory(conn, t.tenant_id, "shared.team", "deploys happen on fridays!")
        # 4. a memory at version 3 whose history holds only version 1
        gap = _insert_memory(conn, t.tenant_id, "users.carol", "The user uses vim", version=3)
        conn.execute(
            "INSERT INTO memory_history (tenant_id, memory_id, path, version, operation,"
            " row_data) VALUES (%s, %s, 'users.carol', 1, 'update', '{}')", (t.tenant_id, gap))
        # 5. the parent key's ceiling shrinks under its child (read on users.bob only)
        conn.execute("""UPDATE api_keys SET ceiling = '[{"path": "users.bob", "level": "read"}]'"""
                     " WHERE id = %s", (root,))
        # 7. a forgotten fact said again in other words, active in its scope (and, out of
        #    its scope, the same words: no violation)
        _insert_fingerprint(conn, t.tenant_id, "users.alice", "My locker number is 58213")
        _insert_memory(conn, t.tenant_id, "users.alice.gym", "Gym locker 58213 is mine")
        _insert_memory(conn, t.tenant_id, "shared.team", "Gym locker 58213 is mine")
        # 8. the event of one memory's birth gone (users.alice's MySQL holder); the history
        #    row of 4. above was written without its event too
        conn.execute("DELETE FROM events WHERE tenant_id = %s AND memory_id = %s",
                     (t.tenant_id, alice))
        # 6. an audit row edited after the fact
        conn.execute("UPDATE audit_log SET count = count + 1 WHERE tenant_id = %s AND seq = 1",
                     (t.tenant_id,))

    found = {check.__name__: check(db, t.tenant_id) for check in checks}
    assert len(found["live_retired_values"]) == 3, found
    assert sum("by slot value" in v for v in found["live_retired_values"]) == 1, found
    assert len(found["double_slot_holders"]) == 1, found
    assert "at users.alice" in found["double_slot_holders"][0], found
    assert len(found["duplicate_active_values"]) == 1, found
    assert "at shared.team" in found["duplicate_active_values"][0], found
    assert found["history_gaps"] == [
        f"memory {gap} at version 3 has history versions [1] (expected [1, 2])"], found
    assert found["keys_above_parent"] == [
        f"key {child} holds write on users beyond its parent {root}"], found
    assert len(found["audit_breaks"]) == 1 and "seq 1 " in found["audit_breaks"][0], found
    assert len(found["live_fingerprint_matches"]) == 1, found
    assert "at users.alice.gym carries" in found["live_fingerprint_matches"][0], found
    events = found["event_mismatches"]
    assert len(events) == 3, events  # the gap in seq, the history row, the birth
    assert any("are not 1.." in v for v in events), events
    assert any(f"of memory {gap} at version 1) has events []" in v for v in events), events
    assert any(f"({str(alice)!r}, 1)" in v and v.startswith("births") for v in events), events
    # the neighbour tenant is untouched by all of it
    for check in checks:
        assert check(db, other.tenant_id) == [], check.__name__


def test_the_fingerprint_invariant_catches_a_write_path_that_ignores_fingerprints(
        db, client, tenant, monkeypatch):
    """Given a forgotten locker number
    When the write path checks fingerprints, the number said in other words is blocked and
         invariant 7 holds (control); when its fingerprint lookup is mutated to find nothing,
         the same create is inserted
    Then invariant 7 reports exactly that memory."""
    h = tenant.headers
    r = client.post("/v1/memories", headers=h, json={"memories": [
        {"content": "My gym locker is 58213", "path": "users.alice"}]})
    mid = r.json()["results"][0]["id"]
    assert client.post(f"/v1/memories/{mid}/forget", headers=h).status_code == 200
    again = {"memories": [{"content": "Gym locker number 58213 is mine", "path": "users.alice"}]}
    assert client.post("/v1/memories", headers=h, json=again).json()["results"][0]["status"] \
        == "blocked"
    assert live_fingerprint_matches(db, tenant.tenant_id) == []

    monkeypatch.setattr(fingerprints, "find", lambda *a, **k: {})
    res = client.post("/v1/memories", headers=h, json=again).json()["results"][0]
    assert res["status"] == "inserted", res
    [violation] = live_fingerprint_matches(db, tenant.tenant_id)
    assert res["id"] in violation
