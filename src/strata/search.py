"""Hybrid retrieval: a vector arm and a full-text arm fused by reciprocal rank fusion, in one
statement with every filter (tenant, the caller's readable paths, status, kinds, tags, valid
time) inside it -- never applied after LIMIT.

The full-text arm ORs the query's lexemes (a plain AND of every lexeme of a natural question
matches almost nothing). Decay and age never enter the score; importance only breaks ties.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from strata.audit import audited
from strata.auth.access import Caller, Level
from strata.db import Database
from strata.memories.models import Instant, Kind, Tag, Text
from strata.paths import validate_path
from strata.providers import Embedder

RRF_K = 60
ARM_DEPTH = 50  # candidates each arm contributes before fusion


def rrf(*ranks: int | None, k: int = RRF_K) -> float:
    """Reciprocal rank fusion of 1-based ranks; an arm that did not find the item adds 0."""
    return sum(1.0 / (k + r) for r in ranks if r is not None)


class SearchRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    query: Text = Field(min_length=1, max_length=4000)
    paths: list[str] | None = Field(default=None, max_length=50)
    kinds: list[Kind] | None = None
    tags: list[Tag] | None = Field(default=None, max_length=32)
    limit: int = Field(default=10, ge=1, le=100)
    valid_at: Instant | None = None
    explain: bool = False


class SearchResult(BaseModel):
    id: uuid.UUID
    content: str
    path: str
    kind: str
    score: float
    valid_from: datetime
    valid_to: datetime | None
    tags: list[str]
    importance: float
    explain: dict[str, Any] | None = None


_SEARCH = """
WITH q AS (
    SELECT %(vec)s::vector AS vec,
           array_to_string(ARRAY(
               SELECT quote_literal(l) FROM unnest(tsvector_to_array(
                   to_tsvector('english', %(text)s))) AS l), ' | ')::tsquery AS tsq
),
scope AS (
    SELECT m.* FROM memories m
    WHERE m.tenant_id = %(tenant)s AND m.status = 'active'
      AND m.path <@ %(readable)s::ltree[]
      AND (%(paths)s::ltree[] IS NULL OR m.path <@ %(paths)s::ltree[])
      AND (%(kinds)s::memory_kind[] IS NULL OR m.kind = ANY(%(kinds)s::memory_kind[]))
      AND (%(tags)s::text[] IS NULL OR m.tags @> %(tags)s::text[])
      AND (%(valid_at)s::timestamptz IS NULL OR m.valid @> %(valid_at)s::timestamptz)
),
vec AS (
    SELECT s.id, row_number() OVER (ORDER BY s.embedding <=> q.vec) AS rank,
           1 - (s.embedding <=> q.vec) AS score
    FROM scope s, q WHERE s.embedding IS NOT NULL
    ORDER BY s.embedding <=> q.vec LIMIT %(depth)s
),
txt AS (
    SELECT s.id, row_number() OVER (ORDER BY ts_rank_cd(s.fts, q.tsq) DESC, s.id) AS rank,
           ts_rank_cd(s.fts, q.tsq) AS score
    FROM scope s, q WHERE s.fts @@ q.tsq
    ORDER BY ts_rank_cd(s.fts, q.tsq) DESC, s.id LIMIT %(depth)s
),
fused AS (
    SELECT COALESCE(vec.id, txt.id) AS id, vec.rank AS vec_rank, vec.score AS vec_score,
           txt.rank AS txt_rank, txt.score AS txt_score,
           COALESCE(1.0 / (%(k)s + vec.rank), 0) + COALESCE(1.0 / (%(k)s + txt.rank), 0) AS rrf
    FROM vec FULL OUTER JOIN txt ON vec.id = txt.id
)
SELECT m.id, m.content, m.path::text AS path, m.kind::text AS kind, lower(m.valid) AS valid_from,
       upper(m.valid) AS valid_to, m.tags, m.importance, f.vec_rank, f.vec_score, f.txt_rank,
       f.txt_score, f.rrf
FROM fused f JOIN memories m ON m.id = f.id
ORDER BY f.rrf DESC, m.importance DESC, m.id
LIMIT %(limit)s
"""


def search(db: Database, caller: Caller, req: SearchRequest, embedder: Embedder) -> list[SearchResult]:
    with audited(db, caller, "read", "memory.search") as event:
        event.query_len = len(req.query)
        for i, p in enumerate(req.paths or []):
            validate_path(p, field=f"paths[{i}]")
        vec = embedder.embed([req.query])[0]
        params = {
            "tenant": caller.tenant_id, "readable": caller.paths(Level.read), "vec": vec,
            "text": req.query, "paths": req.paths, "kinds": req.kinds, "tags": req.tags,
            "valid_at": req.valid_at, "depth": max(ARM_DEPTH, req.limit), "k": RRF_K,
            "limit": req.limit,
        }
        with db.connection() as conn:
            rows = conn.execute(_SEARCH, params).fetchall()
        results = []
        for r in rows:
            explain = None
            if req.explain:
                explain = {
                    "vector": {"rank": r["vec_rank"], "score": r["vec_score"]},
                    "text": {"rank": r["txt_rank"], "score": r["txt_score"]},
                    "rrf": float(r["rrf"]), "rrf_k": RRF_K, "boosts": {},
                    "tie_breakers": ["importance"],
                }
            results.append(SearchResult(
                id=r["id"], content=r["content"], path=r["path"], kind=r["kind"],
                score=float(r["rrf"]), valid_from=r["valid_from"], valid_to=r["valid_to"],
                tags=r["tags"], importance=r["importance"], explain=explain,
            ))
        event.count = len(results)
        event.memory_ids = [r.id for r in results]
        return results
