"""The write gate: what may be written, and what each candidate must be compared with.

For every candidate, in order: tombstones in scope (a forgotten fact's fingerprint, however
the candidate words it; slot + value, value hash, and for superseded/rejected values the
retired memory's embedding), an exact active duplicate, the
active holders of its slot key, a lexical twin (the same statement in other words: one
``lexical.normal_form``, found by its key in ``memory_lexical_keys`` whatever the embedder
scores it), and the nearest active neighbours with their similarity band. The gate decides
``blocked``, ``candidate`` (an explicit change back to a retired value, or a value whose
time-boxed suppression has ended, held for review),
``reinforce``, ``judge`` (the conflict step decides) or ``new``.

Slot holders (:mod:`.slots`): the memory holding the same key; for a negation, every key it
covers (a family without a value part, a family without a qualifier), which the judge
narrows to the value the negation names; for an unqualified single-valued statement that
asserts a change ("I've switched to Go"), the family's holder in another context when it is
the only one ("Python for scripting"): the change is about the one context there is. A
holder in another context otherwise, or of another value of a multi-valued family, is a
fact of its own.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import psycopg

from strata.db import vector_index
from strata.db.vector import Vector, exact_distance
from strata.foundation.config import Settings
from strata.write import lexical, slots, topics
from strata.write.canonical import slot_value_hash, value_hash
from strata.write.models import Neighbour
from strata.write.tombstones import find_tombstones
from strata.write.values import normalise_value

# (reinforce at or above, judge at or above) per embedder family, from eval/calibrate_bands.py.
# A sentence model scores paraphrases far higher than feature hashing does, so one pair of
# constants cannot serve both.
BANDS: dict[str, tuple[float, float]] = {
    # Feature hashing is lexical: "meeting on Monday" vs "on Tuesday" scores 0.80, so only a
    # near-verbatim repeat may reinforce without a judge.
    "strata-hash-v1": (0.92, 0.55),
    # all-MiniLM-L6-v2 scores "I use vim" vs "I use emacs" at 0.94: a sentence model's
    # paraphrase and contradiction ranges overlap too, so the judge sees most close pairs.
    "local:all-MiniLM-L6-v2": (0.98, 0.53),
    "default": (0.92, 0.85),
}
NEIGHBOURS = 5

def bands(settings: Settings, model: str) -> tuple[float, float]:
    family = next((k for k in BANDS if model.startswith(k)), "default")
    reinforce, judge = BANDS[family]
    return (settings.reinforce_threshold or reinforce, settings.conflict_threshold or judge)


@dataclass
class GateInput:
    idx: int
    path: str
    canonical: str
    slot: str | None
    value: str | None
    asserts_change: bool
    embedding: Vector
    lexical: bytes | None = None  # lexical_key(canonical) when not given

    def __post_init__(self) -> None:
        if self.lexical is None:
            self.lexical = lexical.lexical_key(self.canonical)

    @property
    def family(self) -> str | None:
        return slots.parse(self.slot)[0] if self.slot else None

    @property
    def wide(self) -> str | None:
        """The family whose other keys may hold what this item decides about: for a
        negation, or an unqualified change of a single-valued family (see the module
        docstring); None when only the exact key can."""
        if not self.slot:
            return None
        family, qualifier, part = slots.parse(self.slot)
        if self.value is None:
            return family if (qualifier is None or part is None) else None
        if self.asserts_change and qualifier is None and not slots.is_multi(self.slot):
            return family
        return None


@dataclass
class GateDecision:
    action: str  # blocked | candidate | reinforce | judge | new
    reason: str | None = None
    target_id: uuid.UUID | None = None
    tombstone_id: uuid.UUID | None = None
    neighbours: list[dict[str, Any]] = field(default_factory=list)  # {id, similarity, slot_match}

    def to_json(self) -> dict[str, Any]:
        return {
            "action": self.action, "reason": self.reason,
            "target_id": str(self.target_id) if self.target_id else None,
            "tombstone_id": str(self.tombstone_id) if self.tombstone_id else None,
            "neighbours": [{**n, "id": str(n["id"])} for n in self.neighbours],
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> "GateDecision":
        return cls(
            action=data["action"], reason=data.get("reason"),
            target_id=uuid.UUID(data["target_id"]) if data.get("target_id") else None,
            tombstone_id=uuid.UUID(data["tombstone_id"]) if data.get("tombstone_id") else None,
            neighbours=[{**n, "id": uuid.UUID(n["id"])} for n in data.get("neighbours", [])],
        )


# Every lookup is one statement for the whole batch (unnest ... WITH ORDINALITY), so a batch
# of 100 costs a handful of round trips, not a few hundred.
_INPUTS = """unnest(%(paths)s::ltree[], %(vecs)s::vector[], %(slots)s::text[], %(hashes)s::bytea[],
            %(lexes)s::bytea[], %(families)s::text[], %(wides)s::text[])
     WITH ORDINALITY AS i(path, vec, slot, hash, lex, family, wide, ord)"""

# A retired value whose embedding is this close is the same value, unless the slots say the
# two are different facts: another key of the same family (another context, another value
# of a multi-valued family) is, and the same key is decided by the exact check above.
_SIMILAR_TOMBSTONES = f"""
SELECT i.ord, t.id, t.reason, t.replaced_by, t.similarity
FROM {_INPUTS}
CROSS JOIN LATERAL (
    SELECT t.id, t.reason::text AS reason, t.replaced_by, 1 - (t.embedding <=> i.vec) AS similarity
    FROM tombstones t
    WHERE t.tenant_id = %(tenant)s AND i.path <@ t.path
      AND t.reason IN ('superseded', 'rejected') AND t.embedding IS NOT NULL
      AND (t.until IS NULL OR t.until > now())
      AND (i.family IS NULL OR t.slot IS NULL
           OR NOT (t.slot = i.family OR starts_with(t.slot, i.family || '@')
                   OR starts_with(t.slot, i.family || ':')))
    ORDER BY {exact_distance("t.embedding", "i.vec")}
    LIMIT 1
) t
"""

# The same canonical text, or the same lexical normal form (memory_lexical_keys, migration
# 0012): an exact duplicate first, then lexical twins, oldest first. The text of a twin comes
# along: its normal form is checked again here, so a key left stale by an edit, or a hash
# collision, never makes a match.
_TWINS = f"""
SELECT i.ord, m.id, m.slot, m.content, true AS exact, m.created_at
FROM {_INPUTS}
JOIN memories m ON m.tenant_id = %(tenant)s AND m.path = i.path AND m.status = 'active'
 AND m.value_hash = i.hash
UNION ALL
SELECT i.ord, m.id, m.slot, m.content, false, m.created_at
FROM {_INPUTS}
JOIN memory_lexical_keys k ON k.tenant_id = %(tenant)s AND k.lexical_hash = i.lex
JOIN memories m ON m.id = k.memory_id AND m.tenant_id = %(tenant)s AND m.path = i.path
 AND m.status = 'active' AND m.value_hash <> i.hash
ORDER BY 1, 5 DESC, 6
"""

# What a plan or an end is about (strata.write.topics): every plan of the path, for a plan;
# for an end, the memories whose text names its object's longest word (``topics.names``
# then checks every word, ``_topic_holders`` the rest of the rules).
_TOPIC_ROWS = """
SELECT i.ord, m.id, m.slot, m.value, m.content, m.kind::text AS kind
FROM unnest(%(paths)s::ltree[], %(plans)s::bool[], %(patterns)s::text[])
     WITH ORDINALITY AS i(path, plan, pattern, ord)
JOIN memories m ON m.tenant_id = %(tenant)s AND m.path = i.path AND m.status = 'active'
 AND ((i.plan AND starts_with(m.slot, 'schedule.'))
      OR (i.pattern IS NOT NULL AND m.canonical ~* i.pattern))
ORDER BY i.ord, m.created_at
"""

_SLOT_HOLDERS = f"""
SELECT i.ord, m.id, m.slot, m.value
FROM {_INPUTS}
JOIN memories m ON m.tenant_id = %(tenant)s AND m.path = i.path AND m.status = 'active'
 AND (m.slot = i.slot
      OR (i.wide IS NOT NULL AND (m.slot = i.wide OR starts_with(m.slot, i.wide || '@')
                                  OR starts_with(m.slot, i.wide || ':'))))
ORDER BY i.ord, m.created_at
"""

# The nearest active neighbours in one path, the way search's vector arm ranks a scope
# (strata.db.vector_index, EXACT_SCOPE_*): a path of at most the exact limit of active rows
# exactly -- through memories_tenant_path_active_idx and a top-N sort (exact_distance) --
# and a larger one through an HNSW walk with iterative scans (pgvector 0.8+; _WALKS turns
# them on for the transaction), which fetches NEIGHBOUR_FETCH rows and keeps the nearest k.
# Ordered by the bare distance without iterative scans, the lookup had been a walk filtered
# afterwards: the five nearest in a small path came back as one row, and at a 100k-row
# tenant of eval/bench_search.py's 1M rows 50 of a batch's 100 neighbours were missing. An
# exact ranking reads every row of the path (~7.5 ms an input at 4,000 rows there), so a
# path past the limit is walked. ``walked`` says which way each input went.
_NEIGHBOURS = f"""
WITH exact_rows AS ({vector_index.EXACT_ROWS})
SELECT i.ord, n.id, n.slot, n.value, n.similarity, NOT sc.small AS walked
FROM unnest(%(paths)s::ltree[], %(vecs)s::vector[]) WITH ORDINALITY AS i(path, vec, ord)
CROSS JOIN LATERAL (  -- the path's active rows, counted one past the exact limit
    SELECT NOT %(walks)s OR count(*) <= (SELECT n FROM exact_rows) AS small
    FROM (SELECT 1 FROM memories m
          WHERE %(walks)s AND m.tenant_id = %(tenant)s AND m.path = i.path
            AND m.status = 'active'
          LIMIT (SELECT n FROM exact_rows) + 1) s
) sc
CROSS JOIN LATERAL (  -- one branch runs: the other's filter on sc.small is false
    (SELECT m.id, m.slot, m.value, 1 - (m.embedding <=> i.vec) AS similarity
     FROM memories m
     WHERE sc.small AND m.tenant_id = %(tenant)s AND m.path = i.path
       AND m.status = 'active' AND m.embedding IS NOT NULL
     ORDER BY {exact_distance("m.embedding", "i.vec")}
     LIMIT %(k)s)
    UNION ALL
    (SELECT w.id, w.slot, w.value, 1 - w.dist
     FROM (SELECT m.id, m.slot, m.value, m.embedding <=> i.vec AS dist
           FROM memories m
           WHERE NOT sc.small AND m.tenant_id = %(tenant)s AND m.path = i.path
             AND m.status = 'active' AND m.embedding IS NOT NULL
           ORDER BY m.embedding <=> i.vec
           LIMIT %(fetch)s) w
     ORDER BY w.dist + 0, w.id  -- relaxed order: re-sorted (see search._vec_arm)
     LIMIT %(k)s)
) n
ORDER BY i.ord, n.similarity DESC
"""
# Iterative scans for the walk, for the rest of the write's transaction (no other statement
# of a write walks an index); no row when pgvector predates them (0.7): every path is then
# ranked exactly.
_WALKS = """
SELECT set_config('hnsw.iterative_scan', 'relaxed_order', true) AS iterative,
       set_config('hnsw.ef_search', %(ef)s, true) AS ef_search
FROM pg_extension
WHERE extname = 'vector' AND string_to_array(extversion, '.')::int[] >= '{0,8}'::int[]
"""
NEIGHBOUR_FETCH = 40  # rows a walk fetches before keeping the nearest NEIGHBOURS
NEIGHBOUR_EF_SEARCH = 100


def _by_input(rows: list[dict[str, Any]]) -> dict[int, list[dict[str, Any]]]:
    out: dict[int, list[dict[str, Any]]] = {}
    for r in rows:
        out.setdefault(r["ord"] - 1, []).append(r)
    return out


def decide(
    cur: psycopg.Cursor, tenant_id: uuid.UUID, items: Sequence[GateInput],
    thresholds: tuple[float, float],
) -> list[GateDecision]:
    """One decision per item, in order. Reads only: the persist step writes."""
    if not items:
        return []
    exact = find_tombstones(
        cur, tenant_id, [(i.path, i.canonical, i.slot, i.value) for i in items], ended=True
    )
    # A value retired from a family's general key stays retired in its contexts: "likes
    # Mongo for backends", re-extracted after MongoDB gave way to PostgreSQL, is that value
    # again, not a new scoped fact. (A value retired in one context leaves the others.)
    general = [(n, slots.general(i.slot)) for n, i in enumerate(items)
               if n not in exact and i.slot and i.value is not None and slots.general(i.slot)]
    if general:
        found = find_tombstones(cur, tenant_id, [
            (items[n].path, items[n].canonical, key, items[n].value) for n, key in general])
        exact.update({general[k][0]: t for k, t in found.items()})
    params = {
        "tenant": tenant_id, "paths": [i.path for i in items],
        "vecs": [i.embedding for i in items], "slots": [i.slot for i in items],
        "hashes": [value_hash(i.canonical) for i in items],
        "lexes": [i.lexical for i in items], "families": [i.family for i in items],
        "wides": [i.wide for i in items],
    }
    similar = _by_input(cur.execute(_SIMILAR_TOMBSTONES, params).fetchall())
    twins = _by_input(cur.execute(_TWINS, params).fetchall())
    holders = _by_input(cur.execute(_SLOT_HOLDERS, params).fetchall()) if any(
        i.slot for i in items) else {}
    near = nearest(cur, tenant_id, params["paths"], params["vecs"])
    about = _topic_rows(cur, tenant_id, items)
    return [
        _decide_one(item, exact.get(n), (similar.get(n) or [None])[0], twins.get(n, []),
                    _with(_holding(item, holders.get(n, [])),
                          _topic_holders(item, about.get(n, []))),
                    near.get(n, []), thresholds)
        for n, item in enumerate(items)
    ]


def _with(rows: list[dict[str, Any]], more: list[dict[str, Any]]) -> list[dict[str, Any]]:
    known = {r["id"] for r in rows}
    return [*rows, *(r for r in more if r["id"] not in known)]


def nearest(cur: psycopg.Cursor, tenant_id: uuid.UUID, paths: Sequence[str],
            vecs: Sequence[Any], k: int = NEIGHBOURS) -> dict[int, list[dict[str, Any]]]:
    """The ``k`` nearest active memories (with an embedding) in each input's path, nearest
    first, by input index: exactly in a path within the exact limit, else through an HNSW
    walk (see ``_NEIGHBOURS``). Each row says whether it was ``walked``. In the caller's
    transaction, or one of its own: the walk's settings are the transaction's."""
    conn = cur.connection
    idle = conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE
    with conn.transaction() if idle else contextlib.nullcontext():
        walks = cur.execute(_WALKS, {"ef": str(NEIGHBOUR_EF_SEARCH)}).fetchone() is not None
        return _by_input(cur.execute(_NEIGHBOURS, {
            "tenant": tenant_id, "paths": list(paths), "vecs": list(vecs), "k": k,
            "fetch": max(NEIGHBOUR_FETCH, k), "walks": walks,
            **vector_index.exact_scope_params()}).fetchall())


def _topic_rows(cur: psycopg.Cursor, tenant_id: uuid.UUID,
                items: Sequence[GateInput]) -> dict[int, list[dict[str, Any]]]:
    plans = [topics.is_plan(i.slot) for i in items]
    patterns = [topics.sql_pattern(topics.end_words(i.slot)) if topics.is_end(i.slot)
                and i.value is None else None for i in items]
    if not any(plans) and not any(patterns):
        return {}
    return _by_input(cur.execute(_TOPIC_ROWS, {
        "tenant": tenant_id, "paths": [i.path for i in items], "plans": plans,
        "patterns": patterns}).fetchall())


def _topic_holders(item: GateInput, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Of the rows ``_TOPIC_ROWS`` found, the ones the item decides about: for a plan, the
    plans that name the same one (a key of entry words only: the one plan of its kind there
    is); for an end, the statements naming its object as still so."""
    if topics.is_plan(item.slot):
        same = [r for r in rows if r["slot"] != item.slot and topics.same_plan(item.slot, r["slot"])]
        if topics.vague_plan(item.slot):
            # "the trip" is the one open trip there is (one cancelled or done is not it), with
            # the earlier words that named it only by its kind; none when several are open.
            same = [r for r in same if r["value"] not in topics.CLOSED]
            if len({r["slot"] for r in same if not topics.vague_plan(r["slot"])}) > 1:
                return []
        return same
    if not topics.is_end(item.slot) or item.value is not None:
        return []
    words = topics.end_words(item.slot)
    return [r for r in rows if r["slot"] != item.slot and topics.names(r["content"], words)
            and topics.ends_state(r["kind"], r["content"], r["slot"],
                                  lexical.negated(r["content"]))]


def _holding(item: GateInput, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The slot holders the item's slot rules decide about, of the rows the wide lookup
    found (see the module docstring)."""
    if not item.slot:
        return []
    if item.value is None:
        return [r for r in rows if slots.decides(item.slot, None, r["slot"])]
    same = [r for r in rows if r["slot"] == item.slot]
    if same or item.wide is None:
        return same
    others = [r for r in rows if r["slot"] != item.slot]
    if len(others) == 1 and normalise_value(others[0]["value"]) != item.value:
        return others  # an unqualified change replaces the family's only context
    return []


def _twin(item: GateInput, rows: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The exact duplicate, else a lexical twin whose slot does not make it another fact."""
    for r in rows:
        if r["exact"]:
            return r
        if ((not item.slot or not r["slot"] or r["slot"] == item.slot)
                and lexical.same_statement(item.canonical, r["content"])):
            return r
    return None


def _decide_one(
    item: GateInput, tomb: dict | None, similar: dict | None, twins: list[dict[str, Any]],
    holders: list[dict[str, Any]], near: list[dict[str, Any]], thresholds: tuple[float, float],
) -> GateDecision:
    reinforce_at, judge_at = thresholds
    if tomb is None and similar is not None and similar["similarity"] >= reinforce_at:
        tomb = similar
    if tomb is not None and tomb.get("ended"):
        # A reviewer suppressed this value until a time that has passed: it may be proposed
        # again, and a person decides again.
        return GateDecision(
            "candidate", f"a value suppressed until a time now past (tombstone {tomb['id']}): "
                         "held for review",
            target_id=holders[0]["id"] if holders else None, tombstone_id=tomb["id"],
        )
    if tomb is not None and tomb["reason"] == "forgotten":
        # Said in other words, in passing or beside something new: still what a person
        # asked to be forgotten. The reason never quotes it.
        return GateDecision("blocked", f"forgotten (tombstone {tomb['id']})",
                            tombstone_id=tomb["id"])
    if tomb is not None:
        # Only a superseded value can be asserted back (held for review); a value a person
        # rejected stays blocked.
        if tomb["reason"] != "superseded" or not item.asserts_change:
            return GateDecision(
                "blocked", f"tombstoned: {tomb['reason']} (tombstone {tomb['id']})",
                tombstone_id=tomb["id"],
            )
        target = holders[0]["id"] if holders else tomb.get("replaced_by")
        return GateDecision(
            "candidate", f"changes back to a retired value (tombstone {tomb['id']}): held for review",
            target_id=target, tombstone_id=tomb["id"],
        )

    twin = _twin(item, [t for t in twins if t["exact"]])
    # An end said again word for word while what it ended is back ("cancelled Hulu" after
    # "signed up for Hulu again") is news: the judge retires the state and the earlier end.
    again = topics.is_end(item.slot) and any(h["slot"] != item.slot for h in holders)
    if twin is not None and not again:
        return GateDecision("reinforce", "same value already active", target_id=twin["id"])

    neighbours: dict[uuid.UUID, dict[str, Any]] = {}
    for holder in holders:
        same_key = holder["slot"] == item.slot
        if item.value is not None and (
                normalise_value(holder["value"]) == item.value
                or (same_key and slots.is_multi(item.slot))):
            return GateDecision("reinforce", f"same value of slot {item.slot}", target_id=holder["id"])
        neighbours[holder["id"]] = {"id": holder["id"], "similarity": None, "slot_match": True}
    if not neighbours:
        twin = _twin(item, [t for t in twins if not t["exact"]])
        if twin is not None:
            return GateDecision("reinforce", "the same statement in other words (lexical)",
                                target_id=twin["id"])
    for row in near:
        sim = float(row["similarity"])
        slot_conflict = row["id"] in neighbours and neighbours[row["id"]].get("slot_match")
        other_subject = bool(item.slot and row["slot"] and row["slot"] != item.slot)
        if sim >= reinforce_at and not (slot_conflict or other_subject or neighbours):
            return GateDecision("reinforce", f"paraphrase (similarity {sim:.2f})", target_id=row["id"])
        if sim >= judge_at or slot_conflict:
            entry = neighbours.setdefault(row["id"], {"id": row["id"], "slot_match": False})
            entry["similarity"] = round(sim, 4)
    if neighbours:
        return GateDecision("judge", None, neighbours=list(neighbours.values()))
    return GateDecision("new")


_NEIGHBOUR_ROWS = """
SELECT id, content, kind::text AS kind, slot, value, lower(valid) AS valid_from, recorded_at,
       COALESCE(asserted_at, recorded_at) AS asserted_at, valid_from_explicit
FROM memories WHERE tenant_id = %s AND id = ANY(%s) AND status = 'active'
"""


def load_neighbours(cur: psycopg.Cursor, tenant_id: uuid.UUID, gate_json: dict[str, Any]) -> list[Neighbour]:
    """The still-active memories a gate decision listed, as a judge is shown them."""
    return load_neighbours_many(cur, tenant_id, [gate_json])[0]


def load_neighbours_many(
    cur: psycopg.Cursor, tenant_id: uuid.UUID, gate_jsons: Sequence[dict[str, Any]]
) -> list[list[Neighbour]]:
    """``load_neighbours`` for a batch of decisions, in one statement."""
    listed = [{uuid.UUID(str(n["id"])): n for n in g.get("neighbours", [])} for g in gate_jsons]
    ids = list({i for one in listed for i in one})
    rows = {r["id"]: r for r in cur.execute(_NEIGHBOUR_ROWS, (tenant_id, ids)).fetchall()} if ids else {}
    return [
        [Neighbour(**rows[i], similarity=n.get("similarity") or 0.0,
                   slot_match=bool(n.get("slot_match")))
         for i, n in one.items() if i in rows]
        for one in listed
    ]


def merge_key(slot: str | None, value: str | None, canonical: str) -> tuple[str, ...]:
    """Two candidates of one batch are the same memory when they share slot + value, or,
    without a slot value, their lexical normal form (their canonical text when it has none:
    "I'm allergic to peanuts" and "I have a peanut allergy" said in one message are one)."""
    if slot and value:
        return ("slot", slot, value)
    form = lexical.normal_form(canonical)
    return ("lexical", form) if form else ("text", canonical)


__all__ = ["BANDS", "GateDecision", "GateInput", "bands", "decide", "merge_key",
           "normalise_value", "slot_value_hash"]
