"""The lookups that must rank by distance *exactly* do, whatever plan the planner prefers.

The write gate's nearest neighbours in a path, the tombstone lookups and a reflection's
evidence around a seed each say ``ORDER BY <distance> LIMIT k`` over a filtered scope. The
bare ``embedding <=> vec`` is what an HNSW index orders by: given the chance, the planner
answers such a statement with an index walk -- the ``hnsw.ef_search`` nearest rows (40 by
default) of the whole index, filtered afterwards -- which returns fewer than ``k`` rows,
or farther ones, once the filter keeps few of them (a path of a large tenant). A large
table is what gives it the chance; here the planner is steered to the same choice by
switching sequential and bitmap scans off, and the lookups must still return the exact
nearest rows (``strata.db.vector.exact_distance``). ``search``'s HNSW walks are the one
place that orders by the bare distance on purpose (``strata.search``, "Vector arm");
``test_no_other_statement_orders_by_the_bare_distance`` holds the source to that.
"""

from __future__ import annotations

import random
import re
import uuid
from pathlib import Path

import numpy as np
import pytest

from strata import reflection, vector_index
from strata.db.vector import Vector
from strata.write import changes, gate

SRC = Path(__file__).resolve().parent.parent / "src" / "strata"
WORDS = ("budget travel flight dentist birthday sister manager release incident latency "
         "customer invoice coffee tea running guitar chess lisbon boston deploy").split()
# The planner's other ways to a top-k: off, so that an index able to order by distance wins.
PREFER_AN_INDEX = ("SET enable_seqscan = off", "SET enable_bitmapscan = off")


def _seed(db, embedder, tenant_id: uuid.UUID, rng: random.Random) -> dict[str, list]:
    """~1,500 active memories (and some retired ones) of one tenant: one large path and a few
    small ones, so a walk of the tenant's nearest rows mostly finds the large path's."""
    paths = ["users.big"] * 30 + ["users.small", "shared.notes", "users.tiny"]
    rows = []
    for i in range(1500):
        text = " ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 9))) + f" n{i}"
        rows.append((rng.choice(paths), text, rng.random() < 0.9))
    vectors = embedder.embed([r[1] for r in rows])
    by_path: dict[str, list] = {}
    with db.transaction() as cur:
        for (path, text, active), vec in zip(rows, vectors, strict=True):
            mid = cur.execute(
                "INSERT INTO memories (tenant_id, path, content, canonical, value_hash, kind,"
                " status, origin, embedding, embedding_model)"
                " VALUES (%s, %s::ltree, %s, %s, sha256(convert_to(%s, 'UTF8')), 'fact',"
                " %s::memory_status, 'user_stated', %s, 'hashing') RETURNING id",
                (tenant_id, path, text, text.lower(), text.lower(),
                 "active" if active else "superseded", vec)).fetchone()["id"]
            if active:
                by_path.setdefault(path, []).append((mid, np.asarray(vec, dtype=np.float64)))
    with db.connection() as conn:
        conn.execute("ANALYZE memories")
    return by_path


def _cosines(rows: list, query: np.ndarray) -> dict[uuid.UUID, float]:
    return {mid: float(v @ query / (np.linalg.norm(v) * np.linalg.norm(query)))
            for mid, v in rows}


def _is_top(ids: list[uuid.UUID], cosines: dict[uuid.UUID, float], k: int) -> bool:
    """Whether ``ids`` are a nearest ``k`` of ``cosines`` in order (ties within float error
    may come in either order)."""
    best = sorted(cosines.values(), reverse=True)[:k]
    return (len(ids) == len(best) and all(i in cosines for i in ids)
            and all(abs(cosines[i] - b) < 1e-5 for i, b in zip(ids, best, strict=True)))


@pytest.fixture
def corpus(db, embedder, make_tenant):
    tenant = make_tenant("big")
    by_path = _seed(db, embedder, tenant.tenant_id, random.Random(7))
    return tenant, by_path


@pytest.mark.parametrize("own_index", [False, True])
def test_the_gates_neighbours_are_the_nearest_in_the_path(db, embedder, corpus, own_index):
    """For generated inputs into each path (through the shared HNSW index, and through the
    tenant's own): the gate's neighbour lookup returns exactly the ``k`` nearest active rows
    of the input's path, nearest first. Control: with the lookup ordered by the bare
    distance, the same searches miss rows in the small paths."""
    tenant, by_path = corpus
    if own_index:
        vector_index._build(db, vector_index.index_name(tenant.tenant_id), tenant.tenant_id)
    rng = random.Random(11 + own_index)
    bare = re.sub(r"ORDER BY \(m\.embedding <=> i\.vec\) \+ 0", "ORDER BY m.embedding <=> i.vec",
                  gate._NEIGHBOURS)
    checked = missed_bare = 0
    with db.connection() as conn:
        for setting in PREFER_AN_INDEX:
            conn.execute(setting)
        try:
            for _ in range(12):
                paths = [rng.choice(sorted(by_path)) for _ in range(3)]
                vecs = embedder.embed([" ".join(rng.sample(WORDS, 4)) for _ in paths])
                params = {"tenant": tenant.tenant_id, "paths": paths, "vecs": vecs,
                          "slots": [None] * 3, "hashes": [None] * 3, "lexes": [None] * 3,
                          "families": [None] * 3, "wides": [None] * 3, "k": gate.NEIGHBOURS}
                got = gate._by_input(conn.execute(gate._NEIGHBOURS, params).fetchall())
                was = gate._by_input(conn.execute(bare, params).fetchall())
                for n, (path, vec) in enumerate(zip(paths, vecs, strict=True)):
                    cosines = _cosines(by_path[path], np.asarray(vec, dtype=np.float64))
                    assert _is_top([r["id"] for r in got.get(n, [])], cosines,
                                   gate.NEIGHBOURS), path
                    checked += 1
                    missed_bare += not _is_top([r["id"] for r in was.get(n, [])], cosines,
                                               gate.NEIGHBOURS)
        finally:
            conn.execute("RESET ALL")
    assert checked == 36 and missed_bare >= 6, missed_bare


def test_a_reflections_evidence_is_the_seeds_nearest(db, embedder, corpus):
    """The evidence gathered around a seed is the seed's nearest active memories in its path
    (``reflection._EVIDENCE`` with the seed's order), exactly, in a small path of a tenant
    whose own index the planner would rather walk."""
    tenant, by_path = corpus
    vector_index._build(db, vector_index.index_name(tenant.tenant_id), tenant.tenant_id)
    path = "users.small"
    seed_id, seed_vec = by_path[path][0]
    others = [r for r in by_path[path] if r[0] != seed_id]
    with db.connection() as conn:
        # two sort keys: an index walk then needs an incremental sort, which a full sort
        # (off here) must look dearer than
        for setting in (*PREFER_AN_INDEX, "SET enable_sort = off"):
            conn.execute(setting)
        try:
            rows = conn.execute(reflection._EVIDENCE.format(
                order=reflection.SEED_ORDER, not_derived=reflection.NOT_DERIVED), {
                    "tenant": tenant.tenant_id, "path": path, "readable": [""],
                    "seed": seed_id, "vec": Vector(seed_vec.astype(np.float32)),
                    "limit": 10}).fetchall()
        finally:
            conn.execute("RESET ALL")
    assert len(others) > 10
    assert _is_top([r["id"] for r in rows], _cosines(others, seed_vec), 10)


def test_no_other_statement_orders_by_the_bare_distance():
    """Every ``ORDER BY`` on a cosine distance in strata's source ranks exactly
    (``exact_distance``, or the same ``+ 0`` written out) -- but the search's HNSW walk, which
    means to walk the index. Control: the walk is found, so the scan reads the statements."""
    bare = []
    for path in sorted(SRC.rglob("*.py")):
        for line in path.read_text().splitlines():
            m = re.search(r"ORDER BY\s+(\(?[\w.]+\s*<=>)", line)
            if m and not re.search(r"<=>\s*[^)]*\)\s*\+\s*0", line):
                bare.append((path.relative_to(SRC).as_posix(), line.strip()))
    assert bare == [("search.py",
                     "ORDER BY m.embedding <=> %(vec)s::vector LIMIT %(vec_fetch)s)\"\"\"")]


def test_tombstone_lookups_rank_exactly():
    """The tombstone lookups (no HNSW index on ``tombstones`` today) order the same exact way,
    so an index added later cannot turn them into walks."""
    for sql in (gate._SIMILAR_TOMBSTONES, changes._SIMILAR_RETIRED):
        assert re.search(r"ORDER BY \(t\.embedding <=> .+?\) \+ 0", sql), sql
