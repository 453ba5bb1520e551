"""New statements into the store: the one place that decides and writes them.

``write`` takes proposed memories (from the ingest pipeline, the direct API, import) and,
inside the caller's transaction:

1. locks every (path, value) and (path, slot) the batch touches (:mod:`.locks`), so
   concurrent writers of one value or one slot decide one after the other;
2. folds items of the batch that are the same memory (same slot + value, or same canonical
   text) into the first of them;
3. resolves the rest in waves: an item whose value, slot or name an earlier item of the batch
   also touches waits for a later wave, so it is decided against what that earlier item left
   (500 values of one slot in one batch leave one active holder and 499 superseded);
4. per wave, decides with the gate (tombstones, duplicates, slot holders, neighbours) reading
   the store as it is now, judges the neighbours (slot rules always; model verdicts carried
   from the pipeline's conflict step for the neighbours that step was shown, the rule judge
   for any that appeared since), and writes the outcome: insert, reinforce, supersede (status,
   closed validity, SUPERSEDES edge, tombstone), hold as candidate (CONTRADICTS edge), or
   block.

The age guard orders statements by when they were *said* (``asserted_at``: message time or
request time); valid time only breaks ties between statements of one moment, and says where
the superseded value's validity ends. When both statements give their start explicitly (a
``valid_from`` in the request, a date read in the statement: ``valid_from_explicit``) and the
starts differ, the starts decide instead, whenever each was said: the earlier start is
history, its validity closed at the later one's start. A start that is only the time
something was said never outranks when it was said ("I live in Berlin", then a week later
"actually I moved to Paris last month": Paris holds).
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar

import psycopg
from psycopg.types.json import Jsonb
from psycopg.types.range import Range

from strata.write import gate as gating
from strata.write import fingerprints, lexical, locks, policy, slots, topics
from strata.write.canonical import canonicalize, value_hash
from strata.write.conflict import NoJudge, RuleJudge, by_slot, coexisting, judge_candidate
from strata.write.gate import GateDecision
from strata.write.models import Candidate, ItemOutcome, Neighbour, Verdict
from strata.write.rows import held_text
from strata.write.tombstones import insert_tombstone

log = logging.getLogger(__name__)
T = TypeVar("T")

# The memory and its lexical key (migration 0012) in one statement.
_INSERT = """
WITH m AS (
    INSERT INTO memories (id, tenant_id, path, name, content, context, canonical, value_hash,
                          kind, slot, value, status, origin, confidence, importance, valid,
                          embedding, embedding_model, evidence, meta, tags, asserted_at, tier,
                          expires_at, valid_from_explicit)
    VALUES (%(id)s, %(tenant)s, %(path)s::ltree, %(name)s, %(content)s, %(context)s,
            %(canonical)s, %(hash)s,
            %(kind)s, %(slot)s, %(value)s, %(status)s, %(origin)s, %(confidence)s,
            COALESCE(%(importance)s, 0.5), %(valid)s, %(embedding)s, %(model)s, %(evidence)s,
            %(meta)s, %(tags)s, %(asserted_at)s, %(tier)s::memory_tier, %(expires_at)s,
            %(valid_from_explicit)s)
    RETURNING id, tenant_id
)
INSERT INTO memory_lexical_keys (memory_id, tenant_id, lexical_hash)
SELECT id, tenant_id, %(lexical)s::bytea FROM m WHERE %(lexical)s::bytea IS NOT NULL
"""

_REINFORCE = """
UPDATE memories SET reinforcements = reinforcements + 1, version = version + 1,
       evidence = evidence || %(evidence)s, updated_at = now(),
       importance = GREATEST(importance, COALESCE(%(importance)s, importance)),
       tags = ARRAY(SELECT DISTINCT unnest(tags || %(tags)s::text[])),
       name = COALESCE(name, %(name)s)
WHERE id = %(id)s AND tenant_id = %(tenant)s AND status = 'active'
RETURNING id, version
"""

_SUPERSEDE = """
UPDATE memories SET status = 'superseded', version = version + 1, updated_at = now(),
       valid = tstzrange(lower(valid), GREATEST(lower(valid) + interval '1 microsecond', %(until)s))
WHERE id = %(id)s AND tenant_id = %(tenant)s AND status = 'active'
RETURNING id, path::text AS path, slot, value, value_hash, embedding
"""

_NARROW_FROM = """
SELECT path::text AS path, value_hash FROM memories
WHERE id = %(id)s AND tenant_id = %(tenant)s AND status = 'active'
FOR UPDATE
"""

_HELD = """
SELECT 1 FROM memories WHERE tenant_id = %(tenant)s AND path = %(path)s::ltree
  AND value_hash = %(hash)s AND status = 'active'
"""

# The holder's lexical key follows its content (migration 0012).
_NARROW = """
WITH m AS (
    UPDATE memories SET content = %(content)s, canonical = %(canonical)s,
           value_hash = %(hash)s, value = %(value)s, version = version + 1, updated_at = now(),
           embedding = COALESCE(%(embedding)s, embedding)
    WHERE id = %(id)s AND tenant_id = %(tenant)s
    RETURNING id
), gone AS (
    DELETE FROM memory_lexical_keys WHERE memory_id = %(id)s AND %(lexical)s::bytea IS NULL
)
INSERT INTO memory_lexical_keys (memory_id, tenant_id, lexical_hash)
SELECT id, %(tenant)s, %(lexical)s::bytea FROM m WHERE %(lexical)s::bytea IS NOT NULL
ON CONFLICT (memory_id) DO UPDATE SET lexical_hash = excluded.lexical_hash
"""

_WAITING = """
SELECT id, version FROM memories
WHERE tenant_id = %(tenant)s AND path = %(path)s::ltree AND value_hash = %(hash)s
  AND status = 'candidate'
LIMIT 1
"""

_EDGE = """
INSERT INTO memory_relationships (tenant_id, source_id, target_id, type, confidence, reason,
                                  decided_by)
VALUES (%(tenant)s, %(source)s, %(target)s, %(type)s, %(confidence)s, %(reason)s, %(by)s)
ON CONFLICT (source_id, target_id, type) DO NOTHING
"""


@dataclass
class Staged:
    """One proposed memory as the write path sees it."""

    idx: int
    path: str
    content: str
    canonical: str
    value_hash: bytes
    kind: str
    slot: str | None
    value: str | None
    valid_from: datetime
    confidence: float
    evidence: list[dict[str, Any]]
    embedding: Any
    # The pipeline's gate decision from its gate step ("merged" into an earlier item, or the
    # neighbours its conflict step was shown); ``write`` replaces it with its own.
    gate: dict[str, Any] | None
    # Verdicts a model gave in the pipeline's conflict step (None: judge here).
    verdicts: list[Verdict] | None
    neighbours: dict[uuid.UUID, Neighbour] = field(default_factory=dict)
    asserted_at: datetime | None = None  # when it was said; None: the request's time
    valid_to: datetime | None = None  # set when the statement is about a state that ended
    # The start was given (a request's valid_from, a date in the statement), not only the
    # time the statement was said: see said_before.
    valid_from_explicit: bool = False
    asserts_change: bool = False
    # Direct create carries these; extraction leaves the defaults.
    context: str | None = None
    name: str | None = None
    importance: float | None = None
    tags: list[str] = field(default_factory=list)
    meta: dict[str, Any] = field(default_factory=dict)
    origin: str = "user_stated"
    lexical_hash: bytes | None = None  # lexical.lexical_key(canonical) when not given
    # A new memory's tier (a write that reinforces or edits one keeps that one's).
    tier: str = "long_term"
    expires_at: datetime | None = None  # short_term only (memories_short_term_check)
    # What the memory rule governing the path decided (strata.write.policy); set by write.
    rule: policy.RuleDecision | None = None

    def __post_init__(self) -> None:
        # Whatever the entry point (a direct create, an ingest candidate), the slot is
        # stored under its normal key (strata.write.slots.normal).
        self.slot, self.value = slots.normal(self.slot, self.value, self.content)
        if self.lexical_hash is None:
            self.lexical_hash = lexical.lexical_key(self.canonical)

    @property
    def merged_into(self) -> int | None:
        return self.gate.get("into") if self.gate and self.gate.get("action") == "merged" else None

    def keys(self, tenant_id: uuid.UUID) -> set[tuple[str, ...]]:
        keys = {locks.value_key(tenant_id, self.path, self.value_hash)}
        if self.lexical_hash:  # writers of lexical twins decide one after the other too
            keys.add(locks.value_key(tenant_id, self.path, self.lexical_hash))
        if self.slot:
            keys.add(locks.slot_key(tenant_id, self.path, self.slot))
        if self.name:
            keys.add(locks.name_key(tenant_id, self.path, self.name))
        # Plans and ends reach past their own key (strata.write.topics): two of one batch
        # may touch one holder, so they are decided one after the other.
        if topics.is_plan(self.slot):
            keys.add(locks.slot_key(tenant_id, self.path, topics.PLAN))
        elif topics.is_end(self.slot):
            keys.add(locks.slot_key(tenant_id, self.path, topics.ENDED))
        return keys

    @property
    def candidate(self) -> Candidate:
        return Candidate(content=self.content, kind=self.kind, slot=self.slot, value=self.value,
                         valid_from=self.valid_from, confidence=self.confidence,
                         asserts_change=self.asserts_change)


def write(
    cur: psycopg.Cursor, *, tenant_id: uuid.UUID, items: list[Staged], model: str,
    recorded_at: datetime, thresholds: tuple[float, float], judge=None,
    embed: Callable[[list[str]], list[Any]] | None = None,
) -> list[ItemOutcome]:
    """Decide and write every item; return one outcome per item, in input order. ``embed``
    (the embedder's, for ``model``) gives a memory whose content the write revises its
    vector again; without it the vector keeps the old wording."""
    # Memory rules first: an item a rule keeps out takes no lock and reaches no gate.
    ruled = _ruled_out(cur, tenant_id, items)
    everything, items = items, [i for i in items if i.idx not in ruled]
    locks.hold(cur, {k for item in items for k in item.keys(tenant_id)})
    # A statement without a time of its own was said when its request is decided: after the
    # locks, so concurrent writers of one slot are ordered as they are serialised.
    said = datetime.now(UTC)
    for item in items:
        item.asserted_at = item.asserted_at or said
    _fold_twins(items)
    writer = _Writer(cur, tenant_id, model, recorded_at, embed)
    live = [i for i in items if i.merged_into is None]
    for wave in waves(live, lambda item: item.keys(tenant_id)):
        _decide(cur, tenant_id, wave, thresholds, judge)
        with cur.connection.pipeline():
            for item in wave:
                writer.write(item)
    for item in items:
        if item.merged_into is not None:  # after their twins, so the twin's memory exists
            writer.merge(item)
    _landed(cur, tenant_id, list(writer.outcomes.values()))
    return [ruled.get(i.idx) or writer.outcomes[i.idx] for i in everything]


def _ruled_out(cur: psycopg.Cursor, tenant_id: uuid.UUID,
               items: list[Staged]) -> dict[int, ItemOutcome]:
    """Each item's rule decision (kept on the item); the outcomes of the items it blocks."""
    out = {}
    decisions = policy.decide(cur, tenant_id,
                              [(i.path, held_text(i.content, i.context)) for i in items])
    for item, decision in zip(items, decisions, strict=True):
        item.rule = decision
        if decision is not None and decision.action == "block":
            out[item.idx] = ItemOutcome(content_hash=item.value_hash.hex(), outcome="blocked",
                                        reason=decision.reason, rule_id=decision.rule_id)
    return out


def _landed(cur: psycopg.Cursor, tenant_id: uuid.UUID, outcomes: list[ItemOutcome]) -> None:
    """Each outcome's tier: where its memory is now (a new one's own, or the tier of the
    memory a write reinforced or replaced), read back in one statement."""
    ids = [o.memory_id for o in outcomes if o.memory_id is not None]
    if not ids:
        return
    tiers = {r["id"]: r["tier"] for r in cur.execute(
        "SELECT id, tier::text AS tier FROM memories WHERE tenant_id = %s AND id = ANY(%s)",
        (tenant_id, ids)).fetchall()}
    for o in outcomes:
        o.tier = tiers.get(o.memory_id)


def _fold_twins(items: list[Staged]) -> None:
    """An item that says what an earlier item of the batch says (same slot + value, or the
    same canonical text, in one path) is that item's memory: it reinforces it."""
    first: dict[tuple, int] = {}
    for item in items:
        if item.merged_into is not None:
            continue
        key = (item.path, *gating.merge_key(item.slot, item.value, item.canonical))
        if key in first and item.name is None:
            item.gate = {"action": "merged", "into": first[key]}
        else:
            first.setdefault(key, item.idx)


def waves(items: Sequence[T], keys_of: Callable[[T], set[tuple[str, ...]]]) -> list[list[T]]:
    """Consecutive groups in which no two items share a value, slot or name key; an item
    that shares one with an earlier item (even a deferred one) goes to a later group, so
    items that touch one key are decided in input order."""
    out: list[list[T]] = []
    pending = list(items)
    while pending:
        wave, deferred, taken, blocked = [], [], set(), set()
        for item in pending:
            keys = keys_of(item)
            if keys & (taken | blocked):
                deferred.append(item)
                blocked |= keys
            else:
                wave.append(item)
                taken |= keys
        out.append(wave)
        pending = deferred
    return out


_GATE_NEIGHBOURS = "neighbours"


def _decide(
    cur: psycopg.Cursor, tenant_id: uuid.UUID, items: list[Staged],
    thresholds: tuple[float, float], judge,
) -> None:
    """Fill each item's gate decision (read now, under the locks) and its verdicts."""
    prior = [{uuid.UUID(str(n["id"])) for n in (i.gate or {}).get(_GATE_NEIGHBOURS, [])}
             for i in items]
    inputs = [gating.GateInput(i.idx, i.path, i.canonical, i.slot, i.value, i.asserts_change,
                               i.embedding, i.lexical_hash) for i in items]
    for item, decision in zip(items, gating.decide(cur, tenant_id, inputs, thresholds),
                              strict=True):
        item.gate = decision.to_json()
    judged = [(item, seen) for item, seen in zip(items, prior, strict=True)
              if item.gate["action"] == "judge"]
    shown_all = gating.load_neighbours_many(cur, tenant_id, [i.gate for i, _ in judged])
    for (item, seen), shown in zip(judged, shown_all, strict=True):
        item.neighbours = {n.id: n for n in shown}
        item.verdicts = _verdicts(item, shown, seen, judge)


def _verdicts(item: Staged, shown: list[Neighbour], seen: set[uuid.UUID], judge) -> list[Verdict]:
    """Slot rules always; a model's verdicts from the pipeline's conflict step for the
    neighbours it was shown, the rule judge for the rest (no model call in a transaction);
    a direct write's judge for all of them."""
    candidate = item.candidate
    if item.verdicts is not None:
        carried = [v for v in item.verdicts if v.target_id in seen]
        ruled_by_slot = {n.id for n in by_slot(candidate, shown)}
        fresh = [n for n in shown if n.id not in seen or n.id in ruled_by_slot]
        ruled = judge_candidate(RuleJudge(), candidate, fresh)
        ruled_ids = {v.target_id for v in ruled}
        return ruled + coexisting(candidate, [
            v for v in carried if v.target_id not in ruled_ids
            and v.target_id not in ruled_by_slot and v.target_id in item.neighbours], shown)
    try:
        return judge_candidate(judge or RuleJudge(), candidate, shown)
    except Exception:  # conflict analysis failing never loses the memory
        log.warning("conflict analysis failed on a direct write")
        return judge_candidate(NoJudge(), candidate, shown)


def said_before(item: Staged, recorded_at: datetime, target: Neighbour) -> bool:
    """Whether ``item`` is the older statement of the two: when both give their start
    explicitly and the starts differ, the earlier start, whenever each was said; otherwise
    assertion time decides, and valid time, then recording time, break a tie between
    statements of one moment."""
    # A plan's date is when it happens, not when it became true: a plan moved earlier is
    # still the later word on it.
    plans = topics.is_plan(item.slot) or topics.is_plan(target.slot)
    if (item.valid_from_explicit and target.valid_from_explicit and not plans
            and item.valid_from != target.valid_from):
        return item.valid_from < target.valid_from
    said, theirs = item.asserted_at or recorded_at, target.asserted_at or target.recorded_at
    if said != theirs:
        return said < theirs
    if item.valid_from != target.valid_from:
        return item.valid_from < target.valid_from
    return recorded_at < target.recorded_at


def _closed(start: datetime, until: datetime | None) -> Range:
    """A validity range ending at ``until``, never before (or at) its own start."""
    if until is not None and until <= start:
        until = start + timedelta(microseconds=1)
    return Range(start, until, "[)")


class _Writer:
    def __init__(self, cur: psycopg.Cursor, tenant_id: uuid.UUID, model: str,
                 recorded_at: datetime,
                 embed: Callable[[list[str]], list[Any]] | None = None) -> None:
        self.cur = cur
        self.embed = embed
        self.tenant_id = tenant_id
        self.base = {"tenant": tenant_id}
        self.model = model
        self.recorded_at = recorded_at
        self.memory_of: dict[int, uuid.UUID] = {}
        self.outcomes: dict[int, ItemOutcome] = {}

    # -- primitives ------------------------------------------------------------------

    def insert(self, item: Staged, status: str, valid_until: datetime | None = None,
               memory_id: uuid.UUID | None = None) -> uuid.UUID:
        new_id = memory_id or uuid.uuid4()
        self.cur.execute(_INSERT, {
            **self.base, "id": new_id, "path": item.path, "name": item.name,
            "content": item.content, "context": item.context, "canonical": item.canonical,
            "hash": item.value_hash,
            "kind": item.kind, "slot": item.slot, "value": item.value, "status": status,
            "origin": item.origin, "confidence": item.confidence, "importance": item.importance,
            "valid": _closed(item.valid_from, valid_until or item.valid_to),
            "embedding": item.embedding, "model": self.model, "evidence": Jsonb(item.evidence),
            "meta": Jsonb(item.meta), "tags": item.tags, "asserted_at": item.asserted_at,
            "lexical": item.lexical_hash, "tier": item.tier, "expires_at": item.expires_at,
            "valid_from_explicit": item.valid_from_explicit,
        })
        self.memory_of[item.idx] = new_id
        return new_id

    def edge(self, source, target, type_: str, confidence: float, reason, by: str) -> None:
        add_edge(self.cur, self.tenant_id, source, target, type_, confidence, reason, by)

    def outcome(self, item: Staged, kind: str, reason=None, memory=None, related=(),
                version=None, tombstone=None, forgotten=False) -> None:
        if version is None and memory is not None and kind != "merged":
            version = 1  # inserted by this write
        if item.rule is not None:  # the rule that decided, named on the outcome
            reason = item.rule.reason if reason is None else f"{item.rule.reason}; {reason}"
        content_hash = item.value_hash.hex()
        if forgotten:
            # A plain hash of what carries a forgotten fact would confirm a guess of it.
            _, key = fingerprints.tenant_key(self.cur, self.tenant_id)
            content_hash = fingerprints.keyed(key, f"r:{content_hash}").hex()
        self.outcomes[item.idx] = ItemOutcome(
            content_hash=content_hash, outcome=kind, reason=reason, memory_id=memory,
            related_ids=list(related), version=version,
            rule_id=item.rule.rule_id if item.rule else None, tombstone_id=tombstone,
        )

    def reinforce(self, item: Staged, target: uuid.UUID) -> dict[str, Any] | None:
        return self.cur.execute(_REINFORCE, {
            **self.base, "id": target, "evidence": Jsonb(item.evidence),
            "importance": item.importance, "tags": item.tags, "name": item.name,
        }).fetchone()

    # -- decisions -------------------------------------------------------------------

    def write(self, item: Staged) -> None:
        decision = GateDecision.from_json(item.gate) if item.gate else GateDecision("new")
        if decision.action == "blocked":
            item.rule = None  # a tombstone decided, not the rule
            self.outcome(item, "blocked", decision.reason, tombstone=decision.tombstone_id,
                         forgotten=(decision.reason or "").startswith("forgotten"))
        elif item.rule is not None and item.rule.action == "hold":
            # capture review_only: whatever the gate would have done, a candidate (no
            # supersession, no reinforcement); a tombstone above still blocks first. The
            # same statement already waiting for review is not queued twice (the value's
            # lock is held, so no concurrent writer queues it either).
            waiting = self.cur.execute(_WAITING, {**self.base, "path": item.path,
                                                  "hash": item.value_hash}).fetchone()
            if waiting is not None:
                self.outcome(item, "skipped", "already held for review", waiting["id"],
                             [waiting["id"]], version=waiting["version"])
            else:
                self.outcome(item, "candidate", None, self.insert(item, "candidate"))
        elif decision.action == "candidate":
            memory = self.insert(item, "candidate")
            if decision.target_id:
                self.edge(memory, decision.target_id, "CONTRADICTS", 1.0, decision.reason, "gate")
            self.outcome(item, "candidate", decision.reason, memory,
                         [decision.target_id] if decision.target_id else [])
        elif decision.action == "reinforce":
            self.reinforce_or_insert(item, decision.target_id, decision.reason)
        else:
            self.resolve(item)

    def merge(self, item: Staged) -> None:
        into = item.merged_into
        target = self.memory_of.get(into)
        row = self.reinforce(item, target) if target is not None else None
        self.outcome(item, "merged", f"same memory as item {into} of this request", target,
                     [target] if target else [], version=row["version"] if row else None)

    def reinforce_or_insert(self, item: Staged, target: uuid.UUID, reason) -> None:
        row = self.reinforce(item, target)
        if row is None:  # cannot happen under the locks; kept as the safe answer
            memory = self.insert(item, "active")
            self.outcome(item, "created", "reinforcement target no longer active", memory)
            return
        self.memory_of[item.idx] = row["id"]
        self.outcome(item, "reinforced", reason, row["id"], [row["id"]], version=row["version"])

    def negation_key(self, item: Staged, retired: list[uuid.UUID]) -> str | None:
        """The key a negation (a slot, no value) is stored under: the key of the one holder
        it retired when its own key covers more ("no longer allergic to peanuts" under
        ``user.allergies`` takes ``user.allergies:peanut``); its own key when that is free;
        none when another active memory it did not retire holds that key (an earlier
        negation: "no longer MySQL" after "no longer MongoDB"), so it is kept as a
        statement without taking the key."""
        keys = {item.neighbours[i].slot for i in retired if i in item.neighbours}
        if len(keys) == 1 and (key := keys.pop()) and slots.covers(item.slot, key):
            return key
        held = any(n.slot == item.slot and n.id not in retired
                   for n in item.neighbours.values())
        return None if held else item.slot

    def narrow(self, item: Staged, verdict: Verdict, replaced_by: uuid.UUID) -> bool:
        """An end's holder that names more than what ended ("pays for Netflix, Hulu and
        Max" when Hulu is cancelled) keeps the rest: its content loses the ended item
        (``topics.narrowed``), the statement it held is tombstoned, and history keeps it.
        False when the holder is all about what ended (the caller retires it), or when an
        active memory of the path already says the rest. The holder is embedded again when
        the writer has the embedder (a search for what ended should not find it by meaning)."""
        holder = item.neighbours.get(verdict.target_id)
        if holder is None:
            return False
        new_value = holder.value
        if topics.is_end(item.slot):
            rest = topics.narrowed(holder.content, topics.end_words(item.slot))
        elif topics.is_plan(item.slot) and topics.names_less(item.slot, holder.slot):
            # "that's the date now", "the wedding is now October 4th": a new date for a plan
            # the statement names less fully than the plan's own statement did. That
            # statement is revised to the new date (it says what the plan is); the new
            # statement is stored beside it, and an earlier one of its kind is retired.
            rest = topics.redated(holder.content, holder.value, item.value, item.content)
            new_value = item.value
        else:
            return False
        canonical = canonicalize(rest) if rest else ""
        if not canonical or canonical == item.canonical:
            return False
        old = self.cur.execute(_NARROW_FROM, {**self.base, "id": holder.id}).fetchone()
        if old is None or self.cur.execute(_HELD, {**self.base, "path": old["path"],
                                                   "hash": value_hash(canonical)}).fetchone():
            return False
        self.cur.execute(_NARROW, {**self.base, "id": holder.id, "content": rest,
                                   "canonical": canonical, "hash": value_hash(canonical),
                                   "lexical": lexical.lexical_key(canonical),
                                   "value": new_value,
                                   "embedding": self.embed([rest])[0] if self.embed else None})
        # The statement as it was: by its text, and by its slot and value when that changed
        # (an old date said again is not news).
        changed = new_value != holder.value and holder.slot
        insert_tombstone(self.cur, self.tenant_id, path=old["path"],
                         slot=holder.slot if changed else None,
                         value=holder.value if changed else None,
                         value_hash=bytes(old["value_hash"]), reason="superseded",
                         memory_id=holder.id, replaced_by=replaced_by)
        return True

    def name_plan(self, item: Staged, supersedes: list[Verdict]) -> None:
        """A word on a plan that does not name it ("it's over!! 328", "moved to Monday",
        "submitted with an hour to spare") says which plan it is about once the plan is
        found: alone it would answer nothing about the GRE or the proposal. It is embedded
        as it now reads when the writer has the embedder. A plan called off is not named
        again: it answers nothing about the plan any more."""
        if not (topics.is_plan(item.slot) and topics.vague_plan(item.slot)) or (
                item.value == "cancelled"):
            return
        holders = [item.neighbours[v.target_id] for v in supersedes
                   if v.target_id in item.neighbours]
        names = {n for h in holders if not topics.vague_plan(h.slot)
                 and (n := topics.plan_name(h.content, h.slot))}
        if len(names) != 1:
            return
        item.content = topics.naming_plan(item.content, names.pop())
        item.canonical = canonicalize(item.content)
        item.value_hash = value_hash(item.canonical)
        item.lexical_hash = lexical.lexical_key(item.canonical)
        if self.embed is not None:
            item.embedding = self.embed([item.content])[0]

    def resolve(self, item: Staged) -> None:
        """A new memory, related to its neighbours by the verdicts (if any)."""
        verdicts = item.verdicts or []
        duplicate = next((v for v in verdicts if v.relation == "duplicate"), None)
        if duplicate is not None:
            self.reinforce_or_insert(item, duplicate.target_id, duplicate.reason)
            return
        supersedes = [v for v in verdicts if v.relation == "supersedes"]
        older = [v for v in supersedes
                 if said_before(item, self.recorded_at, item.neighbours[v.target_id])]
        ended = item.valid_to is not None and item.valid_to <= item.asserted_at
        if older or (supersedes and ended):
            # Age guard: an older statement than the one that holds (said before it, or
            # with an explicit start before the holder's explicit start), or one about a
            # state that has already ended ("I lived in Munich in 2024"), never supersedes
            # it. It is kept, as already superseded: its validity ends where the holder's
            # begins, or where the statement says it ended.
            v = (older or supersedes)[0]
            holder = item.neighbours[v.target_id]
            until = item.valid_to if ended and not older else holder.valid_from
            memory = self.insert(item, "superseded", valid_until=until)
            reason = ("newer statement already holds (age guard)" if older
                      else "states a value that already ended")
            self.edge(v.target_id, memory, "SUPERSEDES", v.confidence, reason, v.decided_by)
            self.outcome(item, "stored_as_superseded",
                         "older than the memory it would replace" if older
                         else "describes a state that has already ended", memory, [v.target_id])
            return
        contradicted = [v for v in verdicts if v.relation == "contradicts"]
        if contradicted:
            memory = self.insert(item, "candidate")
            for v in contradicted:
                self.edge(memory, v.target_id, "CONTRADICTS", v.confidence, v.reason, v.decided_by)
            self.outcome(item, "candidate", "contradicts an active memory: held for review",
                         memory, [v.target_id for v in contradicted])
            return

        # Retire first: the schema allows one active holder of a slot (migration 0009).
        provisional = uuid.uuid4()
        narrowed = [v for v in supersedes if self.narrow(item, v, provisional)]
        retired = [v.target_id for v in supersedes if v not in narrowed
                   and retire(self.cur, self.tenant_id, v.target_id, provisional,
                              until=item.valid_from, confidence=v.confidence, reason=v.reason,
                              decided_by=v.decided_by)]
        if item.slot and item.value is None:
            item.slot = self.negation_key(item, retired)
        self.name_plan(item, supersedes)
        memory = self.insert(item, "active", memory_id=provisional)
        for v in narrowed:
            self.edge(memory, v.target_id, "REFINES", v.confidence,
                      "revised: what ended was taken out of it, or the plan's new date put in",
                      v.decided_by)
        linked = [v for v in verdicts if v.relation in ("refines", "coexists")]
        for v in linked:
            self.edge(memory, v.target_id, v.relation.upper(), v.confidence, v.reason,
                      v.decided_by)
        if retired or narrowed:
            self.outcome(item, "superseded_existing", supersedes[0].reason, memory,
                         [*retired, *(v.target_id for v in narrowed)])
        else:
            self.outcome(item, "created", None, memory, [v.target_id for v in linked])


def add_edge(cur: psycopg.Cursor, tenant_id: uuid.UUID, source: uuid.UUID, target: uuid.UUID,
             type_: str, confidence: float, reason: str | None, by: str) -> None:
    cur.execute(_EDGE, {"tenant": tenant_id, "source": source, "target": target, "type": type_,
                        "confidence": confidence, "reason": reason, "by": by})


def retire(
    cur: psycopg.Cursor, tenant_id: uuid.UUID, old_id: uuid.UUID, new_id: uuid.UUID, *,
    until: datetime, confidence: float, reason: str | None, decided_by: str,
) -> bool:
    """Supersede ``old_id`` in favour of ``new_id``: status, valid time closed at ``until``
    (never before its own start), a SUPERSEDES edge with the reason and who decided, and a
    tombstone of the retired value (with its embedding, so a re-extraction in other words is
    caught too). False when the old memory is no longer active."""
    old = cur.execute(_SUPERSEDE, {"tenant": tenant_id, "id": old_id, "until": until}).fetchone()
    if old is None:
        return False
    add_edge(cur, tenant_id, new_id, old_id, "SUPERSEDES", confidence, reason, decided_by)
    insert_tombstone(cur, tenant_id, path=old["path"], slot=old["slot"], value=old["value"],
                     value_hash=bytes(old["value_hash"]), reason="superseded", memory_id=old_id,
                     replaced_by=new_id, embedding=old["embedding"])
    return True
