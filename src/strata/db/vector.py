"""pgvector's ``vector`` type in psycopg 3, without numpy.

Why not pgvector-python: up to 0.4 it requires numpy (and our pin allowed those releases),
and numpy with its OpenBLAS is 59 MB of the Lambda layer's 60 MB budget and about 0.2 s of an
API function's import. Later releases no longer need numpy, but their ``register_vector``
looks up four types (vector, bit, halfvec, sparsevec) on every new connection, a round trip
each, for the one type strata stores. What strata needs is small: float32 vectors in and
out, which is this module.

``Vector`` is an ``array.array('f')``: what every embedder returns and what a ``vector``
value loads as. A type of its own because psycopg picks a dumper by Python type and a plain
``list`` already goes out as a PostgreSQL array. As an array it holds 4 bytes a dimension,
its binary form is a byte swap away, and numpy (tests, eval) reads it through the buffer
protocol without a copy.

Wire formats, as pgvector's ``vector_recv`` and ``vector_send`` define them: binary is
uint16 dim, uint16 unused (0), then dim float4, all big-endian; text is ``[x1,x2,...]``.
Parameters go out binary (psycopg's ``%s`` takes the dumper registered last); results load
in whichever format the cursor asks for (text by default).
"""

from __future__ import annotations

import struct
import sys
from array import array
from collections.abc import Iterable
from functools import lru_cache
from typing import Any

import psycopg
from psycopg.abc import Buffer
from psycopg.adapt import Dumper, Loader
from psycopg.pq import Format
from psycopg.types import TypeInfo

_HEADER = struct.Struct(">HH")
_SWAP = sys.byteorder == "little"


class Vector(array):
    """A float32 vector."""

    __slots__ = ()

    def __new__(cls, values: Iterable[float] = ()) -> Vector:
        return super().__new__(cls, "f", values)

    def __repr__(self) -> str:
        return f"Vector({self.tolist()})"

    # array's own copies are plain arrays, which no dumper takes.
    def __copy__(self) -> Vector:
        return Vector(self)

    def __deepcopy__(self, memo: dict) -> Vector:
        return Vector(self)


def to_binary(values: Any) -> bytes:
    vec = array("f", values)  # a copy, swapped in place
    if _SWAP:
        vec.byteswap()
    return _HEADER.pack(len(vec), 0) + vec.tobytes()


def from_binary(data: Buffer) -> Vector:
    dim, unused = _HEADER.unpack_from(data)
    if unused or len(data) != _HEADER.size + 4 * dim:
        raise psycopg.DataError(f"not a binary vector: {len(data)} bytes for {dim} dimensions")
    vec = Vector()
    vec.frombytes(memoryview(data)[_HEADER.size:])
    if _SWAP:
        vec.byteswap()
    return vec


def to_text(values: Any) -> str:
    # Rounded to float32 first, as the binary form is; the repr of a float32 widened to a
    # double then reads back as the same float32, so both formats carry the same values.
    return "[" + ",".join(map(repr, array("f", values))) + "]"


def from_text(data: Buffer) -> Vector:
    return Vector(map(float, bytes(data)[1:-1].split(b",")))


class VectorDumper(Dumper):
    format = Format.TEXT

    def dump(self, obj: Any) -> Buffer:
        return to_text(obj).encode()


class VectorBinaryDumper(Dumper):
    format = Format.BINARY

    def dump(self, obj: Any) -> Buffer:
        return to_binary(obj)


class VectorLoader(Loader):
    format = Format.TEXT

    def load(self, data: Buffer) -> Vector:
        return from_text(data)


class VectorBinaryLoader(Loader):
    format = Format.BINARY

    def load(self, data: Buffer) -> Vector:
        return from_binary(data)


@lru_cache(maxsize=8)
def _dumpers(oid: int) -> tuple[type[Dumper], type[Dumper]]:
    # The oid on the class types the parameter as vector (so it fits a vector column
    # without a cast), lets a list of vectors go out as vector[], and serves COPY's
    # set_types. It is the database's own, so the classes are made per oid.
    return (type("VectorDumper", (VectorDumper,), {"oid": oid}),
            type("VectorBinaryDumper", (VectorBinaryDumper,), {"oid": oid}))


def exact_distance(column: str, vector: str) -> str:
    """An ``ORDER BY`` key that ranks by cosine distance *exactly*: ``(column <=> vector) + 0``.

    The bare ``column <=> vector`` is what an HNSW index orders by, and the planner may answer
    a filtered top-k ordered by it with a walk of the index: the ``hnsw.ef_search`` nearest
    rows (40 by default) of the whole graph, filtered afterwards, which returns fewer than
    ``k`` rows -- or farther ones -- once the filter keeps few of them. Measured: with the
    planner steered to the index, the write gate's five nearest neighbours in a small path
    of a ~1,500-row tenant came back as one row. It takes that way when the table is large
    enough for the walk to look cheaper than reading the filtered rows, so a lookup that is
    exact in tests stops being exact in production. ``+ 0`` is an expression no index can
    order by: a top-N sort over exactly the rows the filter keeps. Every statement that
    means "the nearest k of these rows" orders by this; only :mod:`strata.search.hybrid`'s HNSW
    walks, which set up iterative scans and re-sort what they fetch, order by the bare
    distance (tests/test_exact_neighbours.py holds the source to that)."""
    return f"({column} <=> {vector}) + 0"


def register_vector(conn: psycopg.Connection) -> None:
    """Adapt ``vector`` on ``conn``: ``Vector`` (and numpy arrays, without importing numpy)
    dump as vector, vector values load as ``Vector``. One catalog query.

    Raises ``psycopg.ProgrammingError`` where the type does not exist (the migrations
    create the extension): a pool then discards the connection and retries, so a pool
    opened before the migrations ran heals once they have, where a connection left without
    the adapter would fail every vector parameter for as long as it lives.
    """
    info = TypeInfo.fetch(conn, "vector")
    if info is None:
        raise psycopg.ProgrammingError(
            "the vector type is not in this database: run `strata migrate` (it creates the "
            "pgvector extension)"
        )
    info.register(conn)  # vector[] through psycopg's array adapters
    adapters = conn.adapters
    text, binary = _dumpers(info.oid)
    for cls in (Vector, "numpy.ndarray"):
        adapters.register_dumper(cls, text)
        adapters.register_dumper(cls, binary)  # last: the default for %s
    adapters.register_loader(info.oid, VectorLoader)
    adapters.register_loader(info.oid, VectorBinaryLoader)
