"""/v1/search: hybrid retrieval over what the caller may read.

Body (``strata.search.hybrid.SearchRequest``): ``query``, ``paths``, ``kinds``, ``tags``, ``meta``
(equality and operators: strata.search.meta_filter), ``limit``, ``valid_at``, ``include``
(``candidates`` / ``history`` opt-ins), ``mode`` (``hybrid`` | ``vector`` | ``keyword``),
``expand``, ``explain``, ``min_score``, ``why_not`` (the answer then carries ``why_not``). The
core's keyword-only knobs (``now``, ``ignore_status``, the access log) are deliberately not
request fields. Access bookkeeping is queued by the core and written after the response by
its own thread, so this route adds no write to the request. With a replica configured the
ranking statement may run there (``strata.db.routing``: read-your-writes for a few seconds).
"""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.concurrency import run_in_threadpool

from strata.api.deps import DB, CallerDep, EmbedderDep, ReadsDep
from strata.search import hybrid as core

router = APIRouter(prefix="/v1/search", tags=["search"])


@router.post("", operation_id="searchMemories")
async def search(body: core.SearchRequest, db: DB, caller: CallerDep, embedder: EmbedderDep,
                 reads: ReadsDep) -> core.SearchResponse:
    """Search memories

    Hybrid retrieval over the memories the key can read: by meaning (vector) and by words
    (full text), fused into one score, best first. Only `active` memories unless `include`
    asks for more, true at `valid_at` when it is given; every filter applies before the
    limit, never after. `why_not` asks, for memories that did not come back, which check
    each one failed.
    """
    # The search blocks (the database, the embedder): it runs in the thread pool. From an
    # async route, FastAPI checks the response on the event loop, not in a second trip there.
    return await run_in_threadpool(core.run, db, caller, body, embedder, reads=reads)
