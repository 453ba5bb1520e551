"""Search benchmark: latency and vector-arm recall of ``strata.search.hybrid`` on a multi-tenant table.

Seeds ``--tenants`` tenants of ``--per-tenant`` memories each plus one *small* tenant of
``--small`` memories (default ``per_tenant // 10``: 1 % of the table at 10 tenants), with
clustered synthetic 384-dim vectors shared across tenants (so another tenant's rows are the
nearest neighbours of most queries -- the case a filtered HNSW scan gets wrong) and content
generated from a vocabulary tied to each cluster (so the full-text arm has real work).
About 80 % of each tenant's rows are ``active``; the rest are superseded / archived /
candidate / rejected, which search must skip.

Seeding deliberately bypasses the write gate (dedup, tombstones, history, audit): rows are
COPYed in binary straight into a staging table and moved into ``memories`` with one INSERT
... SELECT, with the HNSW index dropped during the load and rebuilt after (same definition
as migration 0001). This benchmark measures search, not ingest (see bench_store.py).

Two designs in one run, on the same seed (``--designs``): ``shared`` -- one HNSW index over
the whole table, the design before per-tenant indexes -- and ``per_tenant``: the same table
after :func:`strata.db.vector_index.reconcile` gave every tenant of at least
``vector_index.MIN_ROWS`` rows a partial HNSW index of its own (built concurrently; the build
time is reported). The per-tenant indexes are dropped before ``shared`` is measured.

Measures, per design and scope (a regular 10 % tenant and the 1 % tenant), with a fixed
precomputed query vector per query (the embedder is a lookup table: query embedding is
excluded):
  * in-process ``search()`` latency p50/p95/p99, hybrid mode (the default) and vector mode;
  * HTTP ``POST /v1/search`` latency p50/p95/p99 for a sample (uvicorn on loopback; the httpx
    client in a process of its own), and the same sample in process right after it
    (``in_process_hybrid_same_queries``): the HTTP overhead is the difference;
  * recall@10 of the vector arm (``mode=vector, limit=10``) against exact search under the
    same filters (brute force in numpy over that tenant's active rows);
  * for the 10 % tenant, in-process hybrid latency while a writer thread stores memories into
    the same tenant through the write path (``create_memories``: gate, history, audit; batches
    of ``--write-batch``), beside the same queries without it, in the same run.

The embedded server runs with ``shared_buffers`` of ``--shared-buffers`` (4 GB; reported):
its default, 128 MB, does not hold one 100k-row tenant's rows and indexes, and every search
of it read most of its pages through the kernel's file cache, where a production server
holds its hot set: Aurora PostgreSQL sets shared buffers at 50-75 % of memory by instance
class, and has no file-system cache behind them (a miss is a read from its storage).

Searches run as served: access bookkeeping on (it writes ``memory_access``, never
``memories``). Every run starts with ``VACUUM ANALYZE memories``, and the rows written under
writes are deleted and vacuumed after it (``vacuum_seconds``): the state autovacuum keeps a
table in, and a kept seed stays as it was seeded.

``--keep DIR`` keeps the database (embedded PostgreSQL data directory and the tenants' keys)
in DIR and reuses it when the seed parameters match: seeding 100k rows costs about a minute.
Prints one JSON object.

Usage: python eval/bench_search.py [--per-tenant 10000] [--tenants 10] [--queries 200]
                                   [--warm-rounds 1] [--small N] [--http-queries 50] [--keep DIR]
                                   [--designs shared,per_tenant] [--write-batch 20]
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
import uuid
import zlib
from pathlib import Path

import numpy as np
import psycopg

from strata.auth import create_tenant
from strata.auth.keys import authenticate
from strata.db import Database
from strata.db import vector_index
from strata.db.embedded import start_server
from strata.db.migrate import migrate
from strata.foundation.config import Settings
from strata.search.hybrid import ACCESS_LOG, SearchRequest, search

from harness import cpu_speed_ms, percentile, serving

DIM = 384
CLUSTERS = 200
GENERAL = (
    "user prefers says told mentioned likes wants needs usually always never today "
    "tomorrow team project meeting weekly notes about with from the for and"
).split()
TOPICS = (
    "postgres deploy region python rust budget travel flight hotel dentist birthday sister "
    "manager review release incident dashboard alert latency customer invoice contract "
    "vacation allergy peanut vegetarian coffee tea running cycling guitar piano chess "
    "kubernetes terraform lambda aurora redis kafka spark pandas numpy react vue svelte "
    "docker linux macos windows android iphone tennis soccer hiking skiing sushi pizza "
    "ramen tacos curry paris tokyo berlin lisbon boston denver seattle austin chicago "
    "mortgage salary pension insurance doctor therapy yoga pilates marathon novel poetry "
    "podcast jazz opera cinema museum garden puppy kitten parrot aquarium bakery brewery"
).split()
STATUSES = ["active"] * 16 + ["superseded", "archived", "candidate", "rejected"]
KINDS = ["fact", "preference", "event"]


class ClusterEmbedder:
    """For the concurrent writer: a vector from a cluster picked by the text (any text)."""

    model = "bench-synthetic"
    dim = DIM

    def __init__(self, centroids) -> None:
        self.centroids = centroids
        self.rng = np.random.default_rng(7)

    def embed(self, texts):
        clusters = np.array([zlib.crc32(t.encode()) % CLUSTERS for t in texts])
        return list(sample_vectors(self.rng, self.centroids, clusters))


class FixedEmbedder:
    """Returns the precomputed vector of each benchmark query: no embedding cost measured."""

    model = "bench-fixed"
    dim = DIM

    def __init__(self) -> None:
        self.vectors: dict[str, np.ndarray] = {}

    def embed(self, texts):
        return [self.vectors[t] for t in texts]


def unit(x: np.ndarray) -> np.ndarray:
    return (x / np.linalg.norm(x, axis=-1, keepdims=True)).astype(np.float32)


def make_space(seed: int = 1):
    rng = np.random.default_rng(seed)
    centroids = unit(rng.standard_normal((CLUSTERS, DIM)))
    words = [list(rng.choice(TOPICS, size=3, replace=False)) for _ in range(CLUSTERS)]
    return centroids, words


def sample_vectors(rng, centroids, clusters, noise=0.9):
    # noise 0.9 per coordinate against a unit centroid: neighbours within a cluster are
    # close but not trivially separated (cosine to centroid about 0.5-0.6).
    v = centroids[clusters] + rng.standard_normal((len(clusters), DIM)) * (noise / np.sqrt(DIM)) * 1.6
    return unit(v)


def sentence(rng, topic_words) -> str:
    n = int(rng.integers(8, 18))
    words = [rng.choice(topic_words) if rng.random() < 0.35 else rng.choice(GENERAL + TOPICS)
             for _ in range(n)]
    return " ".join(words).capitalize() + "."


# --------------------------------------------------------------------------------------
# Database
# --------------------------------------------------------------------------------------


@contextlib.contextmanager
def database(keep: str | None, shared_buffers: str | None = None):
    """(db, settings, url, state_path): a migrated database in ``keep`` or a temp dir. The
    embedded server is restarted with ``shared_buffers`` when it runs with another size."""
    with contextlib.ExitStack() as stack:
        home = Path(keep) if keep else Path(stack.enter_context(
            tempfile.TemporaryDirectory(prefix="strata-bench-search-")))
        home.mkdir(parents=True, exist_ok=True)
        url = os.environ.get("STRATA_DATABASE_URL")
        if not url:
            server = start_server(home / "pgdata")
            if shared_buffers:
                with psycopg.connect(server.get_uri(), autocommit=True) as conn:
                    conn.execute(f"ALTER SYSTEM SET shared_buffers = '{shared_buffers}'")
                    conn.execute("SELECT pg_reload_conf()")
                    time.sleep(0.5)  # the reload is asynchronous
                    pending = conn.execute("SELECT pending_restart FROM pg_settings"
                                           " WHERE name = 'shared_buffers'").fetchone()[0]
                if pending:
                    server.cleanup()
                    server = start_server(home / "pgdata")
            stack.callback(server.cleanup)
            with psycopg.connect(server.get_uri(), autocommit=True) as conn:
                if not conn.execute("SELECT 1 FROM pg_database WHERE datname = 'bench'").fetchone():
                    conn.execute("CREATE DATABASE bench")
            url = server.get_uri("bench")
        settings = Settings(home=home)
        migrate(url, settings)
        db = Database(url, max_size=4)
        stack.callback(db.close)
        yield db, settings, url, home / "bench_search_state.json"


def seed(db: Database, url: str, args, centroids, words) -> dict:
    """Tenants, keys and memories; returns the state saved for --keep."""
    rng = np.random.default_rng(42)
    tenants = []
    sizes = [("t%02d" % i, args.per_tenant) for i in range(args.tenants)]
    sizes.append(("small", args.small))
    run_tag = uuid.uuid4().hex[:6]
    for name, n in sizes:
        tenant, key = create_tenant(db, f"bench-{name}-{run_tag}")
        tenants.append({"name": name, "id": str(tenant.id), "key": key.key, "rows": n})

    # The shared index is built with the memory its graph needs (the sizing
    # strata.db.vector_index gives a tenant's own index, without its cap): at 1M rows 1 GB held
    # a third of the graph, and the rest was built on disk in 50 minutes.
    build_mb = vector_index.build_memory_kb(sum(t["rows"] for t in tenants), DIM,
                                            current_kb=1024 * 1024, cap_mb=None) // 1024
    t0 = time.perf_counter()
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f"SET maintenance_work_mem = '{build_mb}MB'")
        conn.execute("DROP INDEX IF EXISTS memories_embedding_idx")
        conn.execute("""CREATE UNLOGGED TABLE IF NOT EXISTS bench_stage (
            tenant_id uuid, path text, content text, value_hash bytea, kind text,
            status text, embedding vector(%d))""" % DIM)
        conn.execute("TRUNCATE bench_stage")
        from strata.db.vector import register_vector
        register_vector(conn)
        with conn.cursor() as cur, cur.copy(
            "COPY bench_stage FROM STDIN WITH (FORMAT BINARY)"
        ) as copy:
            copy.set_types(["uuid", "text", "text", "bytea", "text", "text", "vector"])
            for t in tenants:
                tid = uuid.UUID(t["id"])
                # each tenant uses a random subset of the clusters (all tenants overlap)
                own = rng.choice(CLUSTERS, size=CLUSTERS // 2, replace=False)
                clusters = rng.choice(own, size=t["rows"])
                vecs = sample_vectors(rng, centroids, clusters)
                for i in range(t["rows"]):
                    c = int(clusters[i])
                    content = f"{sentence(rng, words[c])} ({t['name']}-{i})"
                    copy.write_row((
                        tid, f"users.u{int(rng.integers(20))}", content,
                        hashlib.sha256(content.lower().encode()).digest(),
                        KINDS[int(rng.integers(3))], STATUSES[int(rng.integers(len(STATUSES)))],
                        vecs[i],
                    ))
        copied = time.perf_counter()
        conn.execute("""
            INSERT INTO memories (tenant_id, path, content, canonical, value_hash, kind, status,
                                  embedding, embedding_model, created_at, valid)
            SELECT tenant_id, path::ltree, content, lower(content), value_hash,
                   kind::memory_kind, status::memory_status, embedding, 'bench-synthetic',
                   now() - random() * interval '365 days',
                   tstzrange(now() - interval '400 days', NULL)
            FROM bench_stage""")
        inserted = time.perf_counter()
        conn.execute("DROP TABLE bench_stage")
        conn.execute("SET max_parallel_maintenance_workers = 2")
        conn.execute("CREATE INDEX memories_embedding_idx ON memories "
                     "USING hnsw (embedding vector_cosine_ops)")
        indexed = time.perf_counter()
        conn.execute("VACUUM ANALYZE memories")
    return {
        "params": [args.per_tenant, args.tenants, args.small], "tenants": tenants,
        "seed_seconds": {"copy": round(copied - t0, 1), "insert": round(inserted - copied, 1),
                         "hnsw_build": round(indexed - inserted, 1)},
        "hnsw_build_memory_mb": build_mb,
    }


# --------------------------------------------------------------------------------------
# Measurement
# --------------------------------------------------------------------------------------


def active_rows(conn, tenant_id: str) -> tuple[list[str], np.ndarray]:
    """The tenant's active rows: the scope the default search filters to."""
    rows = conn.execute(
        "SELECT id, embedding FROM memories WHERE tenant_id = %s AND status = 'active' "
        "AND embedding IS NOT NULL", (tenant_id,)).fetchall()
    ids = [str(r[0]) for r in rows]
    mat = unit(np.stack([np.asarray(r[1].to_numpy() if hasattr(r[1], "to_numpy") else r[1],
                                    dtype=np.float32) for r in rows]))
    return ids, mat


def exact_top(ids: list[str], mat: np.ndarray, queries: np.ndarray, k: int = 10) -> list[list[str]]:
    """Brute-force top-k by cosine over the scope (no index)."""
    sims = queries @ mat.T
    top = np.argsort(-sims, axis=1)[:, :k]
    return [[ids[j] for j in row] for row in top]


def stats(ms: list[float]) -> dict:
    return {"n": len(ms), "p50_ms": round(percentile(ms, 0.50), 2),
            "p95_ms": round(percentile(ms, 0.95), 2), "p99_ms": round(percentile(ms, 0.99), 2)}


def make_queries(rng, centroids, words, embedder: FixedEmbedder, n: int, tag: str, mat):
    # A query is about something the tenant has memories of: a fresh sample from the
    # cluster of one of its rows (the nearest centroid), not a copy of the row.
    picks = mat[rng.integers(len(mat), size=n)]
    clusters = np.argmax(picks @ centroids.T, axis=1)
    vecs = sample_vectors(rng, centroids, clusters)
    texts = []
    for i in range(n):
        c = int(clusters[i])
        text = f"what about {' '.join(rng.choice(words[c], size=2, replace=False))} {tag}{i}"
        embedder.vectors[text] = vecs[i]
        texts.append(text)
    return texts, vecs


def under_writes(db, tenant, texts, embedder, centroids, words, batch: int) -> dict:
    """Hybrid latency of ``texts`` alone, then while a thread writes into the same tenant."""
    import threading

    from strata.memories.models import CreateRequest, MemoryIn
    from strata.memories.store import create_memories

    caller = authenticate(db, tenant["key"], surface="http")
    log = ACCESS_LOG

    def run_queries() -> list[float]:
        ms = []
        for t in texts:
            t0 = time.perf_counter()
            search(db, caller, SearchRequest(query=t, limit=10), embedder, access_log=log)
            ms.append((time.perf_counter() - t0) * 1000)
        return ms

    quiet = run_queries()
    stop = threading.Event()
    written: list[int] = []
    writer_embedder = ClusterEmbedder(centroids)
    rng = np.random.default_rng(11)

    def write() -> None:
        n = 0
        while not stop.is_set():
            items = [MemoryIn(content=f"{sentence(rng, words[int(rng.integers(CLUSTERS))])}"
                                      f" (write-{uuid.uuid4().hex[:8]})", path="users.writer")
                     for _ in range(batch)]
            create_memories(db, caller, CreateRequest(memories=items), writer_embedder)
            n += batch
        written.append(n)

    thread = threading.Thread(target=write, daemon=True)
    t0 = time.perf_counter()
    thread.start()
    time.sleep(0.5)  # the writer is under way before the first query
    busy = run_queries()
    stop.set()
    thread.join()
    seconds = time.perf_counter() - t0
    ACCESS_LOG.flush()
    with db.connection() as conn:  # keep a kept seed as it was
        conn.execute("DELETE FROM memories WHERE tenant_id = %s AND path = 'users.writer'",
                     (tenant["id"],))
    return {"without_writes": stats(quiet), "with_writes": stats(busy),
            "memories_written": written[0], "writes_per_s": round(written[0] / seconds, 1),
            "write_batch": batch}


def vacuum(url: str) -> float:
    """VACUUM ANALYZE memories (what autovacuum does after a load or a batch of deletes: the
    visibility map current, dead rows gone), then a checkpoint (:func:`checkpoint`); seconds.
    A kept seed starts every run so, and the writes measured under_writes are vacuumed away
    after it."""
    t0 = time.perf_counter()
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("VACUUM ANALYZE memories")
    checkpoint(url)
    return round(time.perf_counter() - t0, 1)


def checkpoint(url: str) -> bool:
    """Write the dirty buffers out now, before a measurement: a vacuum or an index build
    leaves gigabytes of them, and the checkpointer flushing them in the background slowed
    the searches measured next by a third (the 10k-row tenant's hybrid search, 2026-12-02:
    p50 / p95 11.6 / 14.3 ms right after its index was built, 8.0 / 10.9 ms in a run that
    built nothing). Serving, a database checkpoints its steady trickle of writes, not a
    bulk build. Where the role may not (``pg_checkpoint``; Aurora refuses it), the run goes
    on without: False."""
    with psycopg.connect(url, autocommit=True) as conn:
        try:
            conn.execute("CHECKPOINT")
        except psycopg.Error:
            return False
    return True


def measure_scope(db, conn, tenant, args, centroids, words, embedder, base_url) -> dict:
    rng = np.random.default_rng(zlib.crc32(tenant["name"].encode()))
    caller = authenticate(db, tenant["key"], surface="http")
    ids, mat = active_rows(conn, tenant["id"])
    texts, vecs = make_queries(rng, centroids, words, embedder, args.queries, tenant["name"], mat)
    log = ACCESS_LOG  # bookkeeping on, as served: it writes memory_access, never memories
    exact = exact_top(ids, mat, vecs)

    # Every query untimed (``--warm-rounds`` times): the pool, the plans, and the shared
    # buffers as a serving database has them (the design measured first would otherwise pay
    # the cold cache). One pass leaves most of a large tenant's pages outside shared buffers
    # when the seed is larger than the machine's file cache (the 1M-row seed is ~6.8 GB).
    for _ in range(args.warm_rounds):
        for mode in ("hybrid", "vector"):
            for t in texts:
                search(db, caller, SearchRequest(query=t, mode=mode, limit=10), embedder,
                       access_log=log)
    out: dict = {"tenant_rows": tenant["rows"]}
    for mode in ("hybrid", "vector"):
        ms, recalls, returned = [], [], []
        for i, t in enumerate(texts):
            req = SearchRequest(query=t, mode=mode, limit=10)
            t0 = time.perf_counter()
            res = search(db, caller, req, embedder, access_log=log)
            ms.append((time.perf_counter() - t0) * 1000)
            if mode == "vector":
                got = [str(r.id) for r in res]
                returned.append(len(got))
                recalls.append(len(set(got) & set(exact[i])) / len(exact[i]))
        out[f"in_process_{mode}"] = stats(ms)
        if mode == "vector":
            out["recall_at_10"] = round(float(np.mean(recalls)), 4)
            out["recall_at_10_min"] = round(float(np.min(recalls)), 2)
            out["vector_rows_returned_mean"] = round(float(np.mean(returned)), 2)
    if base_url and args.http_queries:
        sample = texts[: args.http_queries]
        out["http_hybrid"] = stats(http_latencies(base_url, tenant["key"], sample))
        # The same queries in process, right after: the HTTP overhead is the difference.
        ms = []
        for t in sample:
            t0 = time.perf_counter()
            search(db, caller, SearchRequest(query=t, limit=10), embedder, access_log=log)
            ms.append((time.perf_counter() - t0) * 1000)
        out["in_process_hybrid_same_queries"] = stats(ms)
    return out, texts


# The HTTP client runs in a process of its own, as a real client does: in the server's process
# its Python would take turns with the server's for the interpreter lock, and the difference
# measured would be the two sharing a lock, not HTTP.
_HTTP_CLIENT = """
import json, sys, time, httpx
url, key, texts = json.load(sys.stdin)
ms = []
with httpx.Client(base_url=url, headers={"Authorization": "Bearer " + key}, timeout=60) as http:
    for t in texts[:5]:
        http.post("/v1/search", json={"query": t}).raise_for_status()
    for t in texts:
        t0 = time.perf_counter()
        r = http.post("/v1/search", json={"query": t, "limit": 10})
        ms.append((time.perf_counter() - t0) * 1000)
        r.raise_for_status()
print(json.dumps(ms))
"""


def http_latencies(base_url: str, key: str, texts: list[str]) -> list[float]:
    """POST /v1/search for each text from a client process of its own; milliseconds each."""
    proc = subprocess.run([sys.executable, "-c", _HTTP_CLIENT], input=json.dumps(
        [base_url, key, texts]), capture_output=True, text=True, timeout=3600, check=True)
    return json.loads(proc.stdout)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--per-tenant", type=int, default=10_000)
    parser.add_argument("--tenants", type=int, default=10)
    parser.add_argument("--small", type=int, default=None,
                        help="rows of the extra small tenant (default per-tenant // 10)")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--warm-rounds", type=int, default=1,
                        help="untimed passes over the queries before each scope is timed")
    parser.add_argument("--http-queries", type=int, default=50)
    parser.add_argument("--keep", default=None, help="reuse a seeded database in this dir")
    parser.add_argument("--reseed", action="store_true",
                        help="replace a kept seed made with other sizes")
    parser.add_argument("--designs", default="shared,per_tenant",
                        help="comma-separated: shared (one HNSW index), per_tenant")
    parser.add_argument("--shared-buffers", default="4GB",
                        help="the embedded server's shared_buffers (its default, 128MB, holds "
                             "no 100k-row tenant; a production server holds its hot set)")
    parser.add_argument("--write-batch", type=int, default=20,
                        help="memories per write while measuring search under writes (0: skip)")
    args = parser.parse_args()
    if args.small is None:
        args.small = max(1, args.per_tenant // 10)
    centroids, words = make_space()

    params = [args.per_tenant, args.tenants, args.small]
    if args.keep and (Path(args.keep) / "bench_search_state.json").exists() and not args.reseed:
        kept = json.loads((Path(args.keep) / "bench_search_state.json").read_text())["params"]
        if kept != params:  # a seeded 1M-row table takes hours to rebuild: never drop it unasked
            parser.error(f"{args.keep} holds a seed of --per-tenant {kept[0]} --tenants {kept[1]} "
                         f"--small {kept[2]}; pass those, or --reseed to replace it")
    with database(args.keep, args.shared_buffers) as (db, settings, url, state_path):
        state = json.loads(state_path.read_text()) if state_path.exists() else None
        if state is None or state["params"] != params:
            if state is not None:
                with psycopg.connect(url, autocommit=True) as conn:
                    conn.execute("DELETE FROM tenants WHERE name LIKE 'bench-%'")
            state = seed(db, url, args, centroids, words)
            state_path.write_text(json.dumps(state))
            reused = False
        else:
            reused = True
        embedder = FixedEmbedder()
        from strata.api.app import create_app

        app = create_app(db=db, embedder=embedder, settings=settings)
        report = {
            "benchmark": "bench_search",
            "machine": {"cpus": os.cpu_count(), "python": platform.python_version(),
                        "cpu_speed_ms_before": cpu_speed_ms()},
            "rows": sum(t["rows"] for t in state["tenants"]),
            "per_tenant": args.per_tenant, "tenants": args.tenants, "small_tenant": args.small,
            "seed_seconds": None if reused else state["seed_seconds"], "reused_seed": reused,
            "hnsw_build_memory_mb": None if reused else state.get("hnsw_build_memory_mb"),
            "queries": args.queries, "warm_rounds": args.warm_rounds,
            "http_queries": args.http_queries,
            "query_embedding": "excluded (precomputed vectors)",
            "per_tenant_index_min_rows": vector_index.MIN_ROWS,
        }
        with serving(app) as base_url, psycopg.connect(url) as conn:
            from strata.db.vector import register_vector
            register_vector(conn)
            report["pgvector"] = conn.execute(
                "SELECT extversion FROM pg_extension WHERE extname = 'vector'").fetchone()[0]
            report["shared_buffers"] = conn.execute("SHOW shared_buffers").fetchone()[0]
            big = state["tenants"][0]
            small = state["tenants"][-1]
            report["designs"] = {}
            conn.commit()  # an open snapshot would keep VACUUM from marking pages all-visible
            report["vacuum_seconds"] = vacuum(url)
            for design in [d.strip() for d in args.designs.split(",") if d.strip()]:
                conn.commit()  # CREATE INDEX CONCURRENTLY waits for every open transaction
                t0 = time.perf_counter()
                if design == "shared":
                    built = vector_index.reconcile(db, min_rows=10**12)  # drops every one
                else:
                    built = vector_index.reconcile(db)
                built["seconds"] = round(time.perf_counter() - t0, 1)
                conn.execute("ANALYZE memories")
                conn.commit()
                report["checkpoints"] = checkpoint(url)
                scopes: dict = {}
                for label, t in (("tenant_10pct", big), ("tenant_1pct", small)):
                    scopes[label], texts = measure_scope(
                        db, conn, t, args, centroids, words, embedder, base_url)
                    if label == "tenant_10pct" and args.write_batch:
                        scopes[label]["under_writes"] = under_writes(
                            db, t, texts, embedder, centroids, words, args.write_batch)
                        conn.commit()
                        scopes[label]["under_writes"]["vacuum_seconds_after"] = vacuum(url)
                report["designs"][design] = {"indexes": built, "scopes": scopes}
        ACCESS_LOG.flush()  # the HTTP requests' bookkeeping, before the database stops
    report["machine"]["cpu_speed_ms_after"] = cpu_speed_ms()
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
