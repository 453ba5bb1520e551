"""The lookups that must rank by distance *exactly* do, whatever plan the planner prefers.

The write gate's nearest neighbours in a path, the tombstone lookups and a reflection's
evidence around a seed each say ``ORDER BY <distance> LIMIT k`` over a filtered scope. The
bare ``embedding <=> vec`` is what an HNSW index orders by: given the chance, the planner
answers such a statement with an index walk -- the ``hnsw.ef_search`` nearest rows (40 by
default) of the whole index, filtered afterwards -- which returns fewer than ``k`` rows,
or farther ones, once the filter keeps few of them (a path of a large tenant). A large
table is what gives it the chance; here the planner is steered to the same choice by
switching sequential scans, bitmap scans and sorts off, and the lookups must still return
the exact nearest rows (``strata.db.vector.exact_distance``). Two statements order by the
bare distance on purpose, walking HNSW with iterative scans and re-sorting what they fetch:
search's vector arm (``strata.search.hybrid``, "Vector arm") and the gate's lookup in a path past
the exact limit, which the tests here walk too;
``test_no_other_statement_orders_by_the_bare_distance`` holds the source to those two.
"""

from __future__ import annotations

import contextlib
import random
import re
import uuid
from pathlib import Path

import numpy as np
import pytest

import support
from strata.db import vector_index
from strata.db.vector import Vector
from strata.reflection import reflect as reflection
from strata.write import changes, gate

SRC = Path(__file__).resolve().parent.parent / "src" / "strata"
WORDS = ("budget travel flight dentist birthday sister manager release incident latency "
         "customer invoice coffee tea running guitar chess lisbon boston deploy").split()


def _seed(db, embedder, tenant_id: uuid.UUID, rng: random.Random) -> dict[str, list]:
    """~1,500 memories of one tenant, a tenth of them retired: one large path (~1,200 active
    rows), one of ~80 and two of ~40, so a walk of the tenant's nearest rows mostly finds the
    large path's."""
    paths = ["users.big"] * 30 + ["users.small"] * 2 + ["shared.notes", "users.tiny"]
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


# The gate's lookup as it was until 2026-12-03: meant to be exact, ordered by the bare distance.
NEIGHBOURS_BEFORE = """
SELECT i.ord, n.id, n.slot, n.value, n.similarity
FROM unnest(%(paths)s::ltree[], %(vecs)s::vector[]) WITH ORDINALITY AS i(path, vec, ord)
CROSS JOIN LATERAL (
    SELECT m.id, m.slot, m.value, 1 - (m.embedding <=> i.vec) AS similarity
    FROM memories m
    WHERE m.tenant_id = %(tenant)s AND m.path = i.path AND m.status = 'active'
      AND m.embedding IS NOT NULL
    ORDER BY m.embedding <=> i.vec
    LIMIT %(k)s
) n
ORDER BY i.ord, n.similarity DESC
"""


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
    tenant's own), within the exact limit: the gate's neighbour lookup returns exactly the
    ``k`` nearest active rows of the input's path, nearest first. Control: the lookup as it
    was (ordered by the bare distance) misses rows in the same searches."""
    tenant, by_path = corpus
    if own_index:
        vector_index._build(db, vector_index.index_name(tenant.tenant_id), tenant.tenant_id)
    rng = random.Random(11 + own_index)
    checked = missed_bare = 0
    with db.connection() as conn, support.prefer_an_index(conn):
        for _ in range(12):
            paths = [rng.choice(sorted(by_path)) for _ in range(3)]
            vecs = embedder.embed([" ".join(rng.sample(WORDS, 4)) for _ in paths])
            got = gate.nearest(conn.cursor(), tenant.tenant_id, paths, vecs)
            was = gate._by_input(conn.execute(NEIGHBOURS_BEFORE, {
                "tenant": tenant.tenant_id, "paths": paths, "vecs": vecs,
                "k": gate.NEIGHBOURS}).fetchall())
            for n, (path, vec) in enumerate(zip(paths, vecs, strict=True)):
                cosines = _cosines(by_path[path], np.asarray(vec, dtype=np.float64))
                rows = got.get(n, [])
                assert _is_top([r["id"] for r in rows], cosines, gate.NEIGHBOURS), path
                assert not any(r["walked"] for r in rows)
                checked += 1
                missed_bare += not _is_top([r["id"] for r in was.get(n, [])], cosines,
                                           gate.NEIGHBOURS)
    assert checked == 36 and missed_bare >= 6, missed_bare


@pytest.mark.parametrize("own_index", [False, True])
def test_a_path_past_the_exact_limit_is_walked_and_keeps_its_nearest(db, embedder, corpus,
                                                                     monkeypatch, own_index):
    """A path with more active rows than the exact limit (here lowered to 60) is walked
    through HNSW with iterative scans -- with ``ef_search`` lowered to 10, so that a walk
    without them would stop short in the ~80-row path: every input still gets ``k``
    neighbours from its own path, nearly always the exact ones (a walk is approximate: at
    least 95 % of them here), while a path within the limit stays exact. Control: the
    inputs into the larger paths say they were walked, the others that they were not."""
    tenant, by_path = corpus
    if own_index:
        vector_index._build(db, vector_index.index_name(tenant.tenant_id), tenant.tenant_id)
    monkeypatch.setattr(vector_index, "EXACT_SCOPE_MIN", 60)
    monkeypatch.setattr(vector_index, "EXACT_SCOPE_MAX", 60)
    monkeypatch.setattr(gate, "NEIGHBOUR_EF_SEARCH", 10)
    rng = random.Random(5 + own_index)
    walked = {True: 0, False: 0}
    with db.connection() as conn, support.prefer_an_index(conn):
        _walk_and_compare(conn, tenant, by_path, embedder, rng, walked, counts := [0, 0])
        # ... and a walk reads its whole fetch before the re-sort keeps the nearest k (a
        # sort the planner took as done would stop the walk after k rows)
        vec = embedder.embed(["coffee tea chess lisbon"])[0]
        assert _hnsw_rows(conn, tenant.tenant_id, "users.big", vec) == gate.NEIGHBOUR_FETCH
    found, wanted = counts
    assert walked[True] >= 15 and walked[False] >= 10, walked
    assert found >= 0.95 * wanted, (found, wanted)


def _hnsw_rows(conn, tenant_id, path: str, vec) -> int:
    """Rows the HNSW scans of the gate's lookup returned for one input (EXPLAIN ANALYZE)."""
    with conn.transaction():
        walks = conn.execute(gate._WALKS, {"ef": str(gate.NEIGHBOUR_EF_SEARCH)}).fetchone()
        plan = support.explain(conn, gate._NEIGHBOURS, {
            "tenant": tenant_id, "paths": [path], "vecs": [vec], "k": gate.NEIGHBOURS,
            "fetch": gate.NEIGHBOUR_FETCH, "walks": walks is not None,
            **vector_index.exact_scope_params()})
    return support.rows_read(plan, lambda name: name.startswith(
        (vector_index.PREFIX, "memories_embedding")))


def _walk_and_compare(conn, tenant, by_path, embedder, rng, walked, counts) -> None:
    """Half of the lookups in a transaction of the caller's (as the write path runs them),
    half on the autocommit connection alone (the lookup then opens one for its settings)."""
    for i in range(12):
        with conn.transaction() if i % 2 else contextlib.nullcontext():
            paths = [rng.choice(sorted(by_path)) for _ in range(4)]
            vecs = embedder.embed([" ".join(rng.sample(WORDS, 4)) for _ in paths])
            got = gate.nearest(conn.cursor(), tenant.tenant_id, paths, vecs)
            for n, (path, vec) in enumerate(zip(paths, vecs, strict=True)):
                rows = got.get(n, [])
                large = len(by_path[path]) > 60
                assert len(rows) == gate.NEIGHBOURS, (path, len(rows))
                assert {r["walked"] for r in rows} == {large}
                walked[large] += 1
                cosines = _cosines(by_path[path], np.asarray(vec, dtype=np.float64))
                best = sorted(cosines, key=lambda mid: -cosines[mid])[:gate.NEIGHBOURS]
                assert all(r["id"] in cosines for r in rows)  # never another path's
                counts[0] += len({r["id"] for r in rows} & set(best))
                counts[1] += gate.NEIGHBOURS
                if not large:
                    assert _is_top([r["id"] for r in rows], cosines, gate.NEIGHBOURS)


def test_a_reflections_evidence_is_the_seeds_nearest(db, embedder, corpus):
    """The evidence gathered around a seed is the seed's nearest active memories in its path
    (``reflection._EVIDENCE`` with the seed's order), exactly, in a small path of a tenant
    whose own index the planner would rather walk."""
    tenant, by_path = corpus
    vector_index._build(db, vector_index.index_name(tenant.tenant_id), tenant.tenant_id)
    path = "users.small"
    seed_id, seed_vec = by_path[path][0]
    others = [r for r in by_path[path] if r[0] != seed_id]
    with db.connection() as conn, support.prefer_an_index(conn):
        rows = conn.execute(reflection._EVIDENCE.format(
            order=reflection.SEED_ORDER, not_derived=reflection.NOT_DERIVED), {
                "tenant": tenant.tenant_id, "path": path, "readable": [""],
                "seed": seed_id, "vec": Vector(seed_vec.astype(np.float32)),
                "limit": 10}).fetchall()
    assert len(others) > 10
    assert _is_top([r["id"] for r in rows], _cosines(others, seed_vec), 10)


def test_no_other_statement_orders_by_the_bare_distance():
    """Every ``ORDER BY`` on a cosine distance in strata's source ranks exactly
    (``exact_distance``, or the same ``+ 0`` written out) -- but the two HNSW walks (search's
    vector arm, the gate's neighbours in a large path), which mean to walk the index with
    iterative scans and re-sort what they fetch. Control: both are found, so the scan reads
    the statements."""
    bare = []
    for path in sorted(SRC.rglob("*.py")):
        for line in path.read_text().splitlines():
            m = re.search(r"ORDER BY\s+(\(?[\w.]+\s*<=>)", line)
            if m and not re.search(r"<=>\s*[^)]*\)\s*\+\s*0", line):
                bare.append((path.relative_to(SRC).as_posix(), line.strip()))
    assert bare == [("search/hybrid.py",
                     "ORDER BY m.embedding <=> %(vec)s::vector LIMIT %(vec_fetch)s)\"\"\""),
                    ("write/gate.py", "ORDER BY m.embedding <=> i.vec")]


def test_tombstone_lookups_rank_exactly():
    """The tombstone lookups (no HNSW index on ``tombstones`` today) order the same exact way,
    so an index added later cannot turn them into walks."""
    for sql in (gate._SIMILAR_TOMBSTONES, changes._SIMILAR_RETIRED):
        assert re.search(r"ORDER BY \(t\.embedding <=> .+?\) \+ 0", sql), sql
