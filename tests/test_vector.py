"""strata's own psycopg adapter for pgvector's ``vector`` (``strata.db.vector``) on the real
embedded PostgreSQL: both wire formats, NULLs, arrays of vectors, dimension errors, a
database without the extension, and search ranking through it."""

from __future__ import annotations

import copy
import math
import subprocess
import sys

import numpy as np
import psycopg
import pytest
from psycopg import errors as pg_errors

from strata.db.migrate import migrate
from strata.db.vector import Vector, from_binary, register_vector, to_binary
from strata.providers import HashingEmbedder

# float32-exact values: what goes in is what comes back, bit for bit.
VALUES = [0.5, -1.25, 3.0, 1e-05, -0.0078125, 65504.0]


@pytest.fixture
def conn(db):
    with db.connection() as c:
        yield c


def server_text(conn, vec) -> str:
    """How PostgreSQL itself prints the parameter it received."""
    return conn.execute("SELECT %s::text AS t", (vec,)).fetchone()["t"]


def test_binary_round_trip(conn):
    """Given a Vector sent in binary format
    When PostgreSQL echoes it in binary format
    Then it loads as an equal Vector, and the server read the values and dimension we sent
    (control: its own text form)."""
    vec = Vector(VALUES)
    cur = conn.cursor(binary=True)
    row = cur.execute("SELECT %b AS v, vector_dims(%b) AS d", (vec, vec)).fetchone()
    assert type(row["v"]) is Vector and row["v"] == vec and row["d"] == len(VALUES)
    assert server_text(conn, vec) == "[0.5,-1.25,3,1e-05,-0.0078125,65504]"


def test_text_round_trip(conn):
    """Given a Vector sent in text format, and float32 values that are not short decimals
    When PostgreSQL echoes them in text format
    Then they load as the same float32 values (the text form round-trips exactly)."""
    vec = Vector(VALUES)
    assert conn.execute("SELECT %t AS v", (vec,)).fetchone()["v"] == vec
    awkward = Vector([0.1, 1 / 3, math.pi, 1e-30, -7.5e30])
    back = conn.execute("SELECT %t::vector AS v", (awkward,)).fetchone()["v"]
    assert type(back) is Vector and back == awkward
    binary = conn.cursor(binary=True).execute("SELECT %t::vector AS v", (awkward,)).fetchone()["v"]
    assert binary == awkward


def test_stored_vector_loads_the_same_in_both_formats(conn):
    """Given a vector stored in a vector(384) column from the hash embedder
    When it is read back by a text cursor and a binary cursor
    Then both are the embedder's float32 values exactly."""
    [vec] = HashingEmbedder(384).embed(["PostgreSQL is the database"])
    conn.execute("CREATE TEMP TABLE v (e vector(384))")
    conn.execute("INSERT INTO v VALUES (%s)", (vec,))  # no cast: the parameter is typed vector
    assert conn.execute("SELECT e FROM v").fetchone()["e"] == vec
    assert conn.cursor(binary=True).execute("SELECT e FROM v").fetchone()["e"] == vec


def test_null_and_arrays_of_vectors(conn):
    """NULL stays None both ways; a list of Vectors goes out as vector[] (the gate's unnest)
    and comes back element by element, a NULL element included."""
    assert conn.execute("SELECT %s::vector AS v", (None,)).fetchone()["v"] is None
    assert conn.execute("SELECT NULL::vector AS v").fetchone()["v"] is None
    assert conn.cursor(binary=True).execute("SELECT NULL::vector AS v").fetchone()["v"] is None
    a, b = Vector([1, 2]), Vector([3, 4, 5])
    rows = conn.execute(
        "SELECT v, ord FROM unnest(%s::vector[]) WITH ORDINALITY AS u(v, ord) ORDER BY ord",
        ([a, None, b],)).fetchall()
    assert [r["v"] for r in rows] == [a, None, b]
    assert conn.execute("SELECT %s AS vs", ([a, b],)).fetchone()["vs"] == [a, b]


def test_dimension_mismatch_is_the_servers_error(conn):
    """Given a vector(384) column
    When a 3-dimensional vector is written in either format
    Then PostgreSQL refuses it naming both dimensions (control: 384 dimensions are taken)."""
    conn.execute("CREATE TEMP TABLE v (e vector(384))")
    for placeholder in ("%b", "%t"):
        with pytest.raises(pg_errors.DataException, match="expected 384 dimensions, not 3"):
            conn.execute(f"INSERT INTO v VALUES ({placeholder})", (Vector([1, 2, 3]),))
    conn.execute("INSERT INTO v VALUES (%s)", (Vector([1.0] * 384),))
    assert conn.execute("SELECT count(*) AS n FROM v").fetchone()["n"] == 1


def test_non_finite_values_are_refused_by_the_server(conn):
    for placeholder in ("%b", "%t"):
        with pytest.raises(pg_errors.DataException):
            conn.execute(f"SELECT {placeholder}::vector", (Vector([1.0, math.nan]),))


def test_numpy_arrays_and_copies_dump_as_vectors(conn):
    """numpy arrays (eval and test embedders) dump as vectors without strata importing numpy,
    and copies of a Vector stay Vectors (array's own copies would be plain arrays)."""
    arr = np.asarray(VALUES, dtype=np.float64)
    assert conn.execute("SELECT %s AS v", (arr,)).fetchone()["v"] == Vector(VALUES)
    for dup in (copy.copy(Vector(VALUES)), copy.deepcopy(Vector(VALUES))):
        assert type(dup) is Vector and conn.execute("SELECT %s AS v", (dup,)).fetchone()["v"] == dup
    assert np.asarray(Vector(VALUES)).dtype == np.float32  # numpy reads it as float32


def test_binary_format_is_pgvectors():
    """uint16 dim, uint16 unused (0), dim big-endian float4; a malformed buffer is refused."""
    assert to_binary(Vector([1.0, -2.0])) == bytes.fromhex("0002 0000 3f800000 c0000000")
    assert from_binary(bytes.fromhex("0001 0000 40400000")) == Vector([3.0])
    for bad in ("0002 0000 3f800000", "0001 0001 3f800000"):
        with pytest.raises(psycopg.DataError):
            from_binary(bytes.fromhex(bad))


def test_a_database_without_the_extension_is_refused_until_migrated(empty_db_url, settings):
    """Given a database the migrations have not run on
    When a connection is adapted
    Then it fails naming `strata migrate` (so a pool discards the connection and retries),
    and once migrated the same registration succeeds (control)."""
    with psycopg.connect(empty_db_url, autocommit=True) as c:
        with pytest.raises(psycopg.ProgrammingError, match="strata migrate"):
            register_vector(c)
    migrate(empty_db_url, settings)
    with psycopg.connect(empty_db_url, autocommit=True) as c:
        register_vector(c)
        assert c.execute("SELECT %s", (Vector([1, 2]),)).fetchone()[0] == Vector([1, 2])


def test_search_ranks_by_cosine_through_the_adapter(client, tenant, embedder):
    """Given three memories embedded by the hash embedder
    When searching in vector mode with explain
    Then results come in the order of cosine similarity computed here from the embedder's
    own vectors, with the same scores (the query and stored vectors crossed the adapter
    intact); the memory whose text is the query ranks first at similarity 1."""
    contents = ["The deploy region is eu-west-1", "Deploys go out on Tuesdays",
                "Coffee beans are reordered monthly"]
    r = client.post("/v1/memories", headers=tenant.headers,
                    json={"memories": [{"content": c, "path": "shared.ops"} for c in contents]})
    assert r.status_code in (200, 201), r.text
    query = "The deploy region is eu-west-1"
    r = client.post("/v1/search", headers=tenant.headers,
                    json={"query": query, "mode": "vector", "explain": True})
    assert r.status_code == 200, r.text
    results = r.json()["results"]

    [q] = embedder.embed([query])
    cosine = {c: sum(a * b for a, b in zip(q, v)) for c, v in zip(contents, embedder.embed(contents))}
    expected = sorted(contents, key=cosine.get, reverse=True)
    assert [x["content"] for x in results] == expected
    assert len(set(cosine.values())) == 3  # control: distinct scores, so the order is meaningful
    for x in results:
        assert x["explain"]["vector"]["score"] == pytest.approx(cosine[x["content"]], abs=1e-5)
    assert results[0]["explain"]["vector"]["score"] == pytest.approx(1.0, abs=1e-6)


def test_runtime_modules_do_not_import_numpy():
    """The Lambda layer has no numpy: the API app, the search route, the ingest and export
    code and the pool's adapter import without it (control: numpy is installed here)."""
    code = ("import sys; import strata.api.app, strata.api.routes.search, strata.maintenance.transfer, "
            "strata.ingest.pipeline, strata.db.pool; print('numpy' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
    assert "numpy" in sys.modules  # control: the check would see it if it were imported
