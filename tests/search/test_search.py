"""Hybrid search over HTTP on a real database: the right memory, nothing retired, nothing
the caller cannot read, filters inside the statement."""

from __future__ import annotations

import math
import uuid
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from strata.search.ranking import DEFAULT
from support import assert_error

T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)


def say(client, headers, text: str, at: datetime, path: str = "users.alice") -> dict:
    r = client.post("/v1/ingest", headers=headers, json={
        "path": path, "wait": True, "messages": [{"role": "user", "content": text, "at": at.isoformat()}]})
    assert r.status_code == 200, r.text
    return r.json()


def search(client, headers, query: str, **extra) -> list[dict]:
    r = client.post("/v1/search", headers=headers, json={"query": query, **extra})
    assert r.status_code == 200, r.text
    return r.json()["results"]


def test_superseded_preference_never_comes_back_in_search(client, tenant):
    """Given "I prefer MongoDB" superseded weeks later by "I've switched to PostgreSQL"
    When searching "what database does the user prefer"
    Then PostgreSQL is found and MongoDB is not, also after MongoDB is mentioned again in
    passing (blocked by its tombstone)."""
    h = tenant.headers
    say(client, h, "I prefer MongoDB", T0)
    say(client, h, "I've switched to PostgreSQL", T0 + timedelta(weeks=3))
    say(client, h, "I prefer MongoDB", T0 + timedelta(weeks=5))
    found = [r["content"] for r in search(client, h, "what database does the user prefer")]
    assert any("PostgreSQL" in c for c in found), found
    assert not any("MongoDB" in c for c in found), found


def test_search_finds_by_words_and_explains_the_score(client, tenant):
    """Given a few memories
    When searching for words of one of them with explain
    Then it ranks first, and explain shows both arms' ranks, raw and normalised scores, the
    query's vector weight and the fused score they add up to (which ranks); and how the
    score shown was made: its features, each coefficient's contribution, the logit, and the
    logistic of it, which is the score shown (the one number explain.score also carries)."""
    h = tenant.headers
    client.post("/v1/memories", headers=h, json={"memories": [
        {"content": "The deploy region is eu-west-1", "path": "shared.ops"},
        {"content": "Alice's dentist appointment is on Friday", "path": "users.alice"},
        {"content": "The team standup is at 9:30", "path": "shared.ops"},
    ]})
    results = search(client, h, "which region do we deploy to?", explain=True)
    assert results[0]["content"] == "The deploy region is eu-west-1"
    ex = results[0]["explain"]
    assert ex["text"]["rank"] == 1 and ex["vector"]["rank"] is not None
    assert ex["text"]["score"] > 0 and ex["text"]["normalized"] == 1.0
    w = ex["fusion"]["vector_weight"]
    assert 0 < w < 1
    fused = w * ex["vector"]["normalized"] + (1 - w) * ex["text"]["normalized"]
    assert abs(ex["rank_score"] - fused) < 1e-9
    assert [r["explain"]["rank_score"] for r in results] == sorted(
        (r["explain"]["rank_score"] for r in results), reverse=True)
    assert [r["rank"] for r in results] == list(range(1, len(results) + 1))
    # the score: a logistic of features made of the raw cosine and the text score over the
    # query's idf
    for r in results:
        rel = r["explain"]["relevance"]
        assert r["score"] == r["explain"]["score"] == rel["score"] and 0 < r["score"] < 1
        assert rel["calibration"] == "hash"  # the tests' embedder
        assert rel["features"]["rank_match"] <= 1 / r["rank"]
        assert abs(rel["logit"] - rel["intercept"] - sum(rel["contributions"].values())) < 1e-9
        assert abs(r["score"] - 1 / (1 + math.exp(-rel["logit"]))) < 1e-12
    x = ex["relevance"]["features"]
    match = (max(0.0, ex["vector"]["score"]) + min(
        1.0, ex["text"]["score"] / ex["text"]["idf_sum"])) / 2
    # first, and the best fused score of the query: both place features are the match itself
    assert abs(x["rank_match"] - match) < 1e-6 and abs(x["margin_match"] - match) < 1e-6


def test_search_respects_paths_grants_and_tenants(client, tenant, make_tenant, db):
    """Given memories in users.alice and users.bob, and a second tenant
    When a key clamped to users.alice, and the other tenant, search for both
    Then the clamped key finds only alice's and the other tenant finds nothing of the first
    (control: the owner key finds both)."""
    from strata.auth import Caller, create_key

    h = tenant.headers
    client.post("/v1/memories", headers=h, json={"memories": [
        {"content": "Alice's favourite editor is vim", "path": "users.alice"},
        {"content": "Bob's favourite editor is emacs", "path": "users.bob"},
    ]})
    both = {r["path"] for r in search(client, h, "favourite editor")}
    assert both == {"users.alice", "users.bob"}
    clamped = create_key(db, Caller.system(tenant.tenant_id), principal_id=tenant.principal_id,
                         ceiling=[{"path": "users.alice", "level": "read"}]).key
    only = search(client, {"Authorization": f"Bearer {clamped}"}, "favourite editor")
    assert {r["path"] for r in only} == {"users.alice"}
    other = make_tenant()
    assert search(client, other.headers, "favourite editor") == []
    scoped = search(client, h, "favourite editor", paths=["users.bob"])
    assert {r["path"] for r in scoped} == {"users.bob"}


def test_search_filters_kind_tags_and_valid_time(client, tenant):
    """Filters narrow the results inside the statement (each with its control)."""
    h = tenant.headers
    client.post("/v1/memories", headers=h, json={"memories": [
        {"content": "Project Falcon ships in May", "path": "shared.p", "kind": "event",
         "tags": ["falcon"], "valid_from": "2026-05-01T00:00:00Z"},
        {"content": "Project Falcon uses Rust", "path": "shared.p", "kind": "fact",
         "tags": ["falcon", "tech"]},
    ]})
    assert {r["kind"] for r in search(client, h, "project falcon")} == {"event", "fact"}
    assert {r["kind"] for r in search(client, h, "project falcon", kinds=["event"])} == {"event"}
    assert [r["content"] for r in search(client, h, "project falcon", tags=["tech"])] == [
        "Project Falcon uses Rust"]
    early = search(client, h, "project falcon", valid_at="2026-04-01T00:00:00Z")
    assert "Project Falcon ships in May" not in [r["content"] for r in early]


def test_search_bad_input_and_no_query_text_in_audit(client, tenant, db):
    """Bad input names the field; the audit row of a search holds its length, not its text."""
    h = tenant.headers
    assert_error(client.post("/v1/search", headers=h, json={"query": ""}), 422, "invalid_input", "query")
    assert_error(client.post("/v1/search", headers=h, json={"query": "x", "limit": 0}), 422,
                 "invalid_input", "limit")
    assert_error(client.post("/v1/search", headers=h, json={"query": "x", "paths": ["a..b"]}), 422,
                 "invalid_input", "paths[0]")
    search(client, h, "zanzibar quokka question")
    with db.connection() as conn:
        row = conn.execute("SELECT t::text AS t, query_len FROM audit_log t"
                           " WHERE operation = 'memory.search' ORDER BY seq DESC LIMIT 1").fetchone()
    assert row["query_len"] == len("zanzibar quokka question")
    assert "quokka" not in row["t"]


# --------------------------------------------------------------------------------------
# meta, include, time-window boost, expansion, modes, access bookkeeping
# --------------------------------------------------------------------------------------

from strata.search.hybrid import (  # noqa: E402
    ACCESS_LOG, AccessLog, SearchRequest, time_windows,
)
from strata.search.hybrid import search as core_search  # noqa: E402
from strata.write import bookkeeping  # noqa: E402


def create(client, headers, *memories: dict) -> list[str]:
    r = client.post("/v1/memories", headers=headers, json={"memories": list(memories)})
    assert r.status_code == 200, r.text
    assert all(x["status"] in ("inserted", "superseded_existing") for x in r.json()["results"]), r.text
    return [x["id"] for x in r.json()["results"]]


def set_status(db, memory_id: str, status: str) -> None:
    """There is no archive route yet (lifecycle will own it): archived is set in SQL."""
    with db.transaction(cause="test.archive", actor="test") as cur:
        cur.execute("UPDATE memories SET status = %s::memory_status, version = version + 1"
                    " WHERE id = %s", (status, memory_id))


def add_edge(db, tenant_id, source: str, target: str, type_: str) -> None:
    with db.transaction() as cur:
        cur.execute("INSERT INTO memory_relationships (tenant_id, source_id, target_id, type,"
                    " decided_by) VALUES (%s, %s, %s, %s, 'test')", (tenant_id, source, target, type_))


def ids(results: list[dict]) -> list[str]:
    return [r["id"] for r in results]


def test_meta_containment_filters_inside_the_statement(client, tenant):
    """Given two memories differing only in meta
    When searching with meta {"project": "falcon"}
    Then only the falcon one comes back (control: without meta both do); a nested object and
    a non-matching value are contained/excluded as jsonb @> says."""
    h = tenant.headers
    falcon, heron = create(client, h,
        {"content": "The build uses a remote cache", "path": "shared.p",
         "meta": {"project": "falcon", "ci": {"runner": "linux"}}},
        {"content": "The build uses a remote cache too", "path": "shared.q",
         "meta": {"project": "heron"}})
    assert set(ids(search(client, h, "build remote cache"))) == {falcon, heron}
    assert ids(search(client, h, "build remote cache", meta={"project": "falcon"})) == [falcon]
    assert ids(search(client, h, "build remote cache", meta={"ci": {"runner": "linux"}})) == [falcon]
    assert search(client, h, "build remote cache", meta={"project": "osprey"}) == []
    assert_error(client.post("/v1/search", headers=h, json={"query": "x", "meta": ["a"]}), 422,
                 "invalid_input", "meta")


def test_include_opts_in_to_candidates_and_history_and_results_carry_status(client, tenant, db):
    """Given an active, a superseded (slot supersession), an archived, a candidate (an
    explicit change back) and a rejected memory about databases
    When searching by default, with include candidates, with include history, with both
    Then default returns active only; each opt-in adds exactly its statuses; rejected never
    comes back; every result carries its status."""
    h = tenant.headers
    say(client, h, "I prefer MongoDB", T0)
    say(client, h, "I've switched to PostgreSQL", T0 + timedelta(weeks=3))
    cand = say(client, h, "I've gone back to MongoDB", T0 + timedelta(weeks=6))
    assert [i["outcome"] for i in cand["items"]] == ["candidate"]
    [archived] = create(client, h, {"content": "The user tried CockroachDB as a database once",
                                    "path": "users.alice"})
    set_status(db, archived, "archived")
    [rejected_src] = create(client, h, {"content": "The user evaluated the Redis database",
                                        "path": "users.alice"})
    set_status(db, rejected_src, "rejected")
    q = "which database does the user use"

    def statuses(**extra):
        return {(r["status"], r["content"].split()[-1]) for r in search(client, h, q, **extra)}

    assert {s for s, _ in statuses()} == {"active"}
    assert {s for s, _ in statuses(include=["candidates"])} == {"active", "candidate"}
    assert {s for s, _ in statuses(include=["history"])} == {"active", "superseded", "archived"}
    both = statuses(include=["candidates", "history"])
    assert {s for s, _ in both} == {"active", "candidate", "superseded", "archived"}
    assert not any(s == "rejected" for s, _ in both)
    assert_error(client.post("/v1/search", headers=h, json={"query": "x", "include": ["rejected"]}),
                 422, "invalid_input", "include[0]")


def test_time_windows_resolve_named_times():
    now = datetime(2026, 5, 13, 15, 0, tzinfo=UTC)  # a Wednesday
    [w] = time_windows("what did we decide last week", now)
    assert (w["from"], w["to"]) == (datetime(2026, 5, 4, tzinfo=UTC), datetime(2026, 5, 11, tzinfo=UTC))
    [w] = time_windows("what happened in May 2023", now)
    assert (w["from"], w["to"]) == (datetime(2023, 5, 1, tzinfo=UTC), datetime(2023, 6, 1, tzinfo=UTC))
    [w] = time_windows("who called yesterday", now)
    assert (w["from"], w["to"]) == (datetime(2026, 5, 12, tzinfo=UTC), datetime(2026, 5, 13, tzinfo=UTC))
    [w] = time_windows("what changed since May 2023", now)
    assert w["from"] == datetime(2023, 5, 1, tzinfo=UTC) and w["to"] is None
    assert time_windows("which database does the user prefer", now) == []


def test_time_window_boost_reorders_close_candidates_and_is_explained(client, tenant):
    """Given the same statement recorded last week (low importance) and two months ago
    (high importance), a still-valid one from months ago, and one that ended before last week
    When searching without a time word, the older wins the tie by importance (control)
    When the query says "last week"
    Then last week's memory ranks first with the start boost shown in explain.boosts, the
    still-valid one gets the smaller overlap boost, the ended one none; every score is the
    fused arms plus that boost."""
    h = tenant.headers
    now = datetime.now(UTC)
    old, recent, standing, ended = create(client, h,
        {"content": "The release checklist was reviewed", "path": "shared.a",
         "valid_from": (now - timedelta(days=60)).isoformat(), "importance": 0.9},
        {"content": "The release checklist was reviewed", "path": "shared.b",
         "valid_from": (now - timedelta(days=7)).isoformat(), "importance": 0.1},
        {"content": "The release checklist lives in the wiki", "path": "shared.c",
         "valid_from": (now - timedelta(days=120)).isoformat()},
        {"content": "The release checklist was owned by Dana", "path": "shared.d",
         "valid_from": (now - timedelta(days=120)).isoformat()})
    client.patch(f"/v1/memories/{ended}", headers=h, json={
        "expected_version": 1, "valid_to": (now - timedelta(days=40)).isoformat()}).raise_for_status()
    plain = search(client, h, "release checklist reviewed", explain=True)
    assert ids(plain)[:2] == [old, recent]
    assert all(r["explain"]["boosts"] == {} for r in plain)
    timed = search(client, h, "release checklist reviewed last week", explain=True)
    by_id = {r["id"]: r["explain"] for r in timed}
    assert ids(timed)[0] == recent
    assert by_id[recent]["boosts"]["time_window"]["value"] == DEFAULT.time_start
    assert by_id[recent]["boosts"]["time_window"]["match"] == "starts"
    assert by_id[recent]["boosts"]["time_window"]["windows"][0]["text"] == "last week"
    assert by_id[standing]["boosts"]["time_window"]["value"] == DEFAULT.time_overlap
    assert by_id[ended]["boosts"]["time_window"]["value"] == 0
    assert by_id[old]["boosts"]["time_window"]["value"] == DEFAULT.time_overlap  # still valid
    for r in timed:
        ex = r["explain"]
        w = ex["fusion"]["vector_weight"]
        arms = w * ex["vector"]["normalized"] + (1 - w) * ex["text"]["normalized"]
        assert abs(ex["rank_score"] - (arms + ex["boosts"]["time_window"]["value"])) < 1e-9


def test_expansion_follows_refines_coexists_derived_from_within_access_and_truth(
    client, tenant, make_tenant, db
):
    """Given a hit (the only memory tagged "hit") linked to: a REFINES child made by the write
    path, a COEXISTS and a DERIVED_FROM neighbour (one each direction), a superseded COEXISTS
    neighbour, a CONTRADICTS-only neighbour, a neighbour in a path the clamped key cannot
    read, and (a corrupt edge) a memory of another tenant
    When searching with tags ["hit"] and expand
    Then the linked active, readable, same-tenant memories follow the hit, marked expanded
    with edge and source (the tag filter selects hits, not their context); the superseded
    one appears only with include history (control); the unreadable one only for the owner
    key (control) and only inside the requested paths; the other tenant's and CONTRADICTS
    never; without expand nothing is added (control); at most `limit` are added."""
    from strata.auth import Caller, create_key

    h = tenant.headers
    [hit] = create(client, h, {"content": "Project Falcon ships the quokka telemetry agent",
                               "path": "shared.falcon", "tags": ["hit"]})
    [refines] = create(client, h, {
        "content": "Project Falcon ships the quokka telemetry agent to every edge node",
        "path": "shared.falcon"})
    with db.connection() as conn:
        edge = conn.execute("SELECT type::text AS t FROM memory_relationships WHERE source_id = %s"
                            " AND target_id = %s", (refines, hit)).fetchone()
    assert edge == {"t": "REFINES"}  # made by the write path's rule judge
    coexists, derived, retired, contradicts, secret = create(client, h,
        {"content": "Falcon rollout owner is Priya", "path": "shared.falcon"},
        {"content": "Dashboards for edge nodes come from agent metrics", "path": "shared.falcon"},
        {"content": "Falcon rollout owner was Omar", "path": "shared.falcon"},
        {"content": "Falcon might be cancelled", "path": "shared.falcon"},
        {"content": "Falcon budget is 2 million", "path": "shared.falcon_private"})
    other = make_tenant()
    [foreign] = create(client, other.headers, {"content": "Globex roadmap", "path": "shared.x"})
    add_edge(db, tenant.tenant_id, hit, coexists, "COEXISTS")
    add_edge(db, tenant.tenant_id, derived, hit, "DERIVED_FROM")
    add_edge(db, tenant.tenant_id, hit, retired, "COEXISTS")
    add_edge(db, tenant.tenant_id, contradicts, hit, "CONTRADICTS")
    add_edge(db, tenant.tenant_id, hit, secret, "REFINES")
    add_edge(db, tenant.tenant_id, hit, foreign, "COEXISTS")
    set_status(db, retired, "superseded")
    q, only = "quokka telemetry agent ships", {"tags": ["hit"], "limit": 10}

    plain = search(client, h, q, **only)
    assert ids(plain) == [hit] and not plain[0]["expanded"]
    res = search(client, h, q, expand=True, explain=True, **only)
    assert ids(res)[0] == hit and not res[0]["expanded"]
    extra = {r["id"]: r for r in res[1:]}
    assert set(extra) == {refines, coexists, derived, secret}
    assert all(r["expanded"] and r["expanded_from"] == hit and r["score"] == 0
               and r["status"] == "active" for r in extra.values())
    assert {k: r["edge"] for k, r in extra.items()} == {
        refines: "REFINES", coexists: "COEXISTS", derived: "DERIVED_FROM", secret: "REFINES"}
    assert extra[coexists]["explain"] == {"expanded": {"from": hit, "edge": "COEXISTS"}}

    with_history = search(client, h, q, expand=True, include=["history"], **only)
    assert [r["status"] for r in with_history if r["id"] == retired] == ["superseded"]
    assert foreign not in ids(with_history) and contradicts not in ids(with_history)

    clamped = create_key(db, Caller.system(tenant.tenant_id), principal_id=tenant.principal_id,
                         ceiling=[{"path": "shared.falcon", "level": "read"}]).key
    seen = search(client, {"Authorization": f"Bearer {clamped}"}, q, expand=True, **only)
    assert ids(seen)[0] == hit and set(ids(seen)[1:]) == {refines, coexists, derived}
    scoped = search(client, h, q, expand=True, paths=["shared.falcon"], **only)
    assert set(ids(scoped)[1:]) == {refines, coexists, derived}

    capped = search(client, h, q, expand=True, tags=["hit"], limit=1)
    assert ids(capped)[0] == hit and len(capped) == 2 and capped[1]["edge"] == "COEXISTS"


def test_modes_use_one_arm_or_both(client, tenant):
    """keyword finds only lexical matches and reports no vector rank; vector ranks every
    memory in scope and reports no text rank; hybrid fuses both (control)."""
    h = tenant.headers
    words, other = create(client, h,
        {"content": "The quarterly offsite is in Lisbon", "path": "shared.ops"},
        {"content": "Coffee beans are reordered monthly", "path": "shared.ops"})
    kw = search(client, h, "offsite Lisbon", mode="keyword", explain=True)
    assert ids(kw) == [words] and kw[0]["explain"]["vector"]["rank"] is None
    vec = search(client, h, "offsite Lisbon", mode="vector", explain=True)
    assert set(ids(vec)) == {words, other}
    assert all(r["explain"]["text"]["rank"] is None for r in vec)
    hy = search(client, h, "offsite Lisbon", explain=True)
    assert ids(hy)[0] == words and set(ids(hy)) == {words, other}
    assert hy[0]["explain"]["text"]["rank"] == 1 and hy[0]["explain"]["vector"]["rank"] == 1
    assert_error(client.post("/v1/search", headers=h, json={"query": "x", "mode": "exact"}), 422,
                 "invalid_input", "mode")


def test_status_override_is_not_reachable_over_http(client, tenant):
    """The core's ignore_status keyword (golden-set discrimination only) has no request field."""
    for field in ("ignore_status", "any_status", "statuses", "now"):
        assert_error(client.post("/v1/search", headers=tenant.headers,
                                 json={"query": "x", field: True}), 422, "invalid_input")


def memory_row(db, memory_id: str) -> dict:
    with db.connection() as conn:
        return conn.execute(
            f"SELECT {bookkeeping.count_sql('m')} AS access_count,"
            f" {bookkeeping.last_sql('m')} AS last_accessed_at, version, updated_at,"
            " m.xmin::text AS written_by,"  # the transaction that last wrote the memory's row
            " (SELECT count(*) FROM memory_history h WHERE h.memory_id = m.id) AS history"
            " FROM memories m WHERE id = %s", (memory_id,)).fetchone()


def test_access_bookkeeping_is_written_after_the_query_for_returned_results_only(
    client, tenant, db, caller_for, embedder
):
    """Given two memories
    When the core searches with limit 1 through an access log that is not flushed
    Then nothing was written on the query path (count still 0); after flush() the returned
    memory has access_count 1 and last_accessed_at set, the other (not returned) stays at 0
    (control); the memory's row is not written at all (the bookkeeping lives in
    memory_access): version, updated_at and the row's writing transaction do not move and no
    history row is written -- while a real PATCH still writes the row and history (control)."""
    found, missed = create(client, tenant.headers,
        {"content": "The staging cluster runs in Frankfurt", "path": "shared.ops"},
        {"content": "Lunch is ordered on Thursdays", "path": "shared.ops"})
    before = memory_row(db, found)
    log = AccessLog(autostart=False)
    caller = caller_for(tenant.key)
    req = SearchRequest(query="staging cluster Frankfurt", limit=1)
    [hit] = core_search(db, caller, req, embedder, access_log=log)
    assert str(hit.id) == found
    assert memory_row(db, found)["access_count"] == 0 and log.pending() == 1
    assert log.flush() == 1
    row = memory_row(db, found)
    assert row["access_count"] == 1 and row["last_accessed_at"] is not None
    assert (row["version"], row["updated_at"], row["written_by"], row["history"]) == (
        before["version"], before["updated_at"], before["written_by"], 0)
    assert memory_row(db, missed)["access_count"] == 0
    for _ in range(3):
        core_search(db, caller, req, embedder, access_log=log)
    assert log.pending() == 1 and log.flush() == 1  # coalesced: one row write for 3 hits
    assert memory_row(db, found)["access_count"] == 4 and memory_row(db, found)["history"] == 0
    r = client.patch(f"/v1/memories/{found}", headers=tenant.headers,
                     json={"expected_version": before["version"], "importance": 0.8})
    assert r.status_code == 200, r.text
    assert memory_row(db, found)["history"] == 1
    assert memory_row(db, found)["written_by"] != before["written_by"]
    assert memory_row(db, found)["access_count"] == 4  # an edit keeps the memory's use


def _lock_word(db, memory_id: str) -> str:
    """The memory's tuple's xmax: who last locked (or deleted) that version of the row."""
    with db.connection() as conn:
        return conn.execute("SELECT xmax::text AS x FROM memories WHERE id = %s",
                            (memory_id,)).fetchone()["x"]


def test_access_bookkeeping_over_http_and_a_locked_row_is_retried(client, tenant, db):
    """Over HTTP the process-wide log records returned results (flushed explicitly here).
    A first count takes the memory's key-share lock (its foreign key's); a memory counted
    before is counted again through its bookkeeping row alone -- its own row is not even
    locked, so its lock word does not move (a lock rewrites the tuple's header, dirties the
    page and is logged) and a write holding the row does not hold the count up. Rows held
    by another transaction (the bookkeeping row; the memory's, on a first count) are
    skipped, not waited on, and written on the next flush. Controls: the first count moves
    the lock word; each skipped flush writes once the holder is gone."""
    [mid] = create(client, tenant.headers,
                   {"content": "The on-call rota changes on Mondays", "path": "shared.ops"})
    created = _lock_word(db, mid)
    assert ids(search(client, tenant.headers, "on-call rota")) == [mid]
    ACCESS_LOG.flush()
    assert memory_row(db, mid)["access_count"] == 1
    first = _lock_word(db, mid)
    assert first != created  # control: a first count locks the memory's row
    log = AccessLog(autostart=False)
    log.record(db, tenant.tenant_id, [uuid.UUID(mid)])
    assert log.flush() == 1 and _lock_word(db, mid) == first
    assert memory_row(db, mid)["access_count"] == 2
    log.record(db, tenant.tenant_id, [uuid.UUID(mid)])
    with db.transaction() as cur:
        cur.execute("SELECT 1 FROM memories WHERE id = %s FOR UPDATE", (mid,))
        assert log.flush() == 1  # not blocked, not skipped: the memory's row is not needed
    assert memory_row(db, mid)["access_count"] == 3
    log.record(db, tenant.tenant_id, [uuid.UUID(mid)])
    with db.transaction() as cur:
        cur.execute("SELECT 1 FROM memory_access WHERE memory_id = %s FOR UPDATE", (mid,))
        assert log.flush() == 0 and log.pending() == 1  # skipped, not blocked
    assert log.flush() == 1 and memory_row(db, mid)["access_count"] == 4
    [new] = create(client, tenant.headers,
                   {"content": "The pager rotates at noon", "path": "shared.ops"})
    log.record(db, tenant.tenant_id, [uuid.UUID(new)])
    with db.transaction() as cur:
        cur.execute("SELECT 1 FROM memories WHERE id = %s FOR UPDATE", (new,))
        assert log.flush() == 0 and log.pending() == 1  # a first count waits for no write
    assert log.flush() == 1 and memory_row(db, new)["access_count"] == 1
    assert memory_row(db, mid)["history"] == memory_row(db, new)["history"] == 0


_BOOKKEEPING_STEP = st.one_of(
    st.tuples(st.just("record"), st.lists(st.integers(0, 3), min_size=1, max_size=6)),
    st.tuples(st.just("flush"), st.none()),
    st.tuples(st.just("edit"), st.integers(0, 3)),
    st.tuples(st.just("forget"), st.integers(0, 3)),
)


@settings(max_examples=12, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=st.lists(_BOOKKEEPING_STEP, min_size=1, max_size=12))
def test_access_bookkeeping_never_writes_a_memory_and_counts_every_return(
        client, tenant, db, steps):
    """Generated interleavings of returned results (recorded), flushes, edits and forgets of
    four memories: after every flush each live memory's access_count is the number of times
    it was returned, its row was written only by its edits (never by bookkeeping), and no
    bookkeeping row outlives its memory -- a memory forgotten with returns still pending
    leaves none behind. Controls: an edit does move the row's writing transaction, and a
    memory returned and flushed has its bookkeeping row until it is forgotten."""
    h = tenant.headers
    run = uuid.uuid4().hex[:8]  # examples share the tenant: each writes memories of its own
    mids = create(client, h, *[{"content": f"Bookkeeping probe {w} note {run}",
                                "path": f"shared.bk{run}"}
                               for w in ("amber", "basalt", "cobalt", "dune")])
    log = AccessLog(autostart=False)

    def access_rows(mid: str) -> int:
        with db.connection() as conn:
            return conn.execute("SELECT count(*) AS n FROM memory_access WHERE memory_id = %s",
                                (mid,)).fetchone()["n"]

    flushed = [False] * 4  # a bookkeeping row written for it
    returned = [0] * 4
    alive = [True] * 4
    written_by = [memory_row(db, m)["written_by"] for m in mids]
    for op, arg in steps + [("flush", None)]:
        if op == "record":
            log.record(db, tenant.tenant_id, [uuid.UUID(mids[i]) for i in arg])
            for i in arg:
                returned[i] += 1
        elif op == "edit" and alive[arg]:
            version = client.get(f"/v1/memories/{mids[arg]}", headers=h).json()["version"]
            r = client.patch(f"/v1/memories/{mids[arg]}", headers=h,
                             json={"expected_version": version, "importance": 0.1 + 0.01 * version})
            assert r.status_code == 200, r.text
            assert memory_row(db, mids[arg])["written_by"] != written_by[arg]  # control
            written_by[arg] = memory_row(db, mids[arg])["written_by"]
        elif op == "forget" and alive[arg]:
            assert access_rows(mids[arg]) == (1 if flushed[arg] else 0)  # control
            r = client.post(f"/v1/memories/{mids[arg]}/forget", headers=h)
            assert r.status_code == 200, r.text
            alive[arg] = False
            assert access_rows(mids[arg]) == 0
        elif op == "flush":
            log.flush()
            flushed = [alive[i] and returned[i] > 0 for i in range(4)]
            for i, mid in enumerate(mids):
                if alive[i]:
                    row = memory_row(db, mid)
                    assert (row["access_count"], row["written_by"]) == (returned[i], written_by[i])
                    assert (row["last_accessed_at"] is not None) == (returned[i] > 0)
            with db.connection() as conn:
                assert conn.execute(
                    "SELECT count(*) AS n FROM memory_access a WHERE a.tenant_id = %s AND NOT"
                    " EXISTS (SELECT 1 FROM memories m WHERE m.id = a.memory_id)",
                    (tenant.tenant_id,)).fetchone()["n"] == 0
                assert conn.execute(
                    "SELECT count(*) AS n FROM memory_access WHERE memory_id = ANY(%s::uuid[])",
                    ([m for i, m in enumerate(mids) if alive[i] and returned[i]],)
                ).fetchone()["n"] == sum(1 for i in range(4) if alive[i] and returned[i])


def test_text_arm_keeps_every_multi_lexeme_match_above_the_single_lexeme_cap(
        client, tenant, make_tenant, monkeypatch):
    """With more single-lexeme matches than TEXT_ONE_LEXEME_CAP, the text arm samples those
    and still keeps every row sharing two lexemes; below the cap (control: the default) it
    ranks every match. The tenant-keyed index never reaches another tenant's row with
    the same words (control: that tenant finds it)."""
    import strata.search.hybrid as search_module

    h = tenant.headers
    singles = create(client, h, *[
        {"content": f"Zephyr note {word} for the archive", "path": "shared.ops"}
        for word in ("amber", "basalt", "cobalt", "dune", "ember", "fjord")])
    [both] = create(client, h, {"content": "The zephyr gauge needs a quokka sticker",
                                "path": "shared.ops"})
    [other_word] = create(client, h, {"content": "A quokka lives on Rottnest", "path": "shared.ops"})
    other = make_tenant("elsewhere")
    [foreign] = create(client, other.headers, {"content": "zephyr quokka zephyr quokka",
                                               "path": "shared.ops"})

    everything = search(client, h, "zephyr quokka", mode="keyword", limit=20)
    assert set(ids(everything)) == {both, other_word, *singles}
    assert ids(search(client, other.headers, "zephyr quokka", mode="keyword")) == [foreign]

    monkeypatch.setattr(search_module, "TEXT_ONE_LEXEME_CAP", 3)
    capped = search(client, h, "zephyr quokka", mode="keyword", limit=20)
    assert both in ids(capped)
    assert len(capped) <= 3 + 1 and foreign not in ids(capped)


def test_vector_arm_ranks_a_small_scope_exactly_and_a_large_one_through_hnsw(
        client, tenant, make_tenant, db, monkeypatch):
    """The route is decided in the statement by counting the tenant's rows in scope up to
    the exact limit (EXACT_SCOPE_SHARE of the table's rows, clamped to EXACT_SCOPE_MIN ..
    EXACT_SCOPE_MAX), not by the planner's estimate: within the limit the arm is exact,
    above it the HNSW branch runs (control) -- and both rank the same memories here. The
    limit grows with the table: the same tenant is exact once it is a small share of a
    larger table. Without iterative scans (pgvector 0.7) the arm is always exact."""
    from strata.db import vector_index
    import strata.search.hybrid as search_module

    h = tenant.headers
    created = create(client, h, *[
        {"content": f"Ticket {i} concerns the {w} service", "path": "shared.ops"}
        for i, w in enumerate(["billing", "search", "ingest", "audit", "export", "login"])])

    def ranked(lo: int, hi: int = 1000, share: float = 0.0) -> tuple[list[str], set]:
        monkeypatch.setattr(vector_index, "EXACT_SCOPE_MIN", lo)
        monkeypatch.setattr(vector_index, "EXACT_SCOPE_MAX", hi)
        monkeypatch.setattr(vector_index, "EXACT_SCOPE_SHARE", share)
        res = search(client, h, "ticket about the billing service", mode="vector",
                     explain=True)
        return ids(res), {r["explain"]["vector"]["exact"] for r in res}

    exact_ids, exact_route = ranked(6)
    hnsw_ids, hnsw_route = ranked(5)
    assert exact_route == {True} and hnsw_route == {False}
    assert sorted(exact_ids) == sorted(created) and hnsw_ids == exact_ids
    assert exact_ids[0] == created[0]

    other = make_tenant("bigger")
    create(client, other.headers, *[
        {"content": f"Unrelated note {i}", "path": "shared.ops"} for i in range(20)])
    with db.connection() as conn:
        conn.execute("ANALYZE memories")
    assert ranked(5, share=0.5)[1] == {True}  # 6 rows <= half of 26
    assert ranked(5, hi=5, share=0.5)[1] == {False}  # ... unless capped below them
    assert ranked(5, share=0.1)[1] == {False}  # 6 rows > 2.6

    monkeypatch.setitem(search_module._ITERATIVE_SCAN, db, False)
    old_ids, old_route = ranked(5)
    assert old_route == {True} and old_ids == exact_ids
    kw = search(client, h, "billing", mode="keyword", explain=True)
    assert kw and kw[0]["explain"]["vector"]["exact"] is None


def test_a_large_tenant_is_ranked_through_an_index_of_its_own(
        client, tenant, make_tenant, db, monkeypatch):
    """Given two tenants and a per-tenant index threshold between their sizes
    When the lifecycle job reconciles the per-tenant vector indexes
    Then the larger tenant gets a partial HNSW index of its own, its searches route through it
    (the plan names that index) and rank what the exact route ranks, while the smaller one
    stays exact (control); an interrupted build (an invalid index) is never routed to and is
    rebuilt by the next run; a tenant that shrank loses its index."""
    from strata.db import vector_index
    from strata.maintenance.lifecycle import run_lifecycle
    import strata.search.hybrid as search_module

    h = tenant.headers
    created = create(client, h, *[
        {"content": f"Runbook {i} covers the {w} service", "path": "shared.ops"}
        for i, w in enumerate(["billing", "search", "ingest", "audit", "export", "login",
                               "payments", "webhooks"])])
    small = make_tenant("small")
    create(client, small.headers, *[
        {"content": f"Note {i} about the billing service", "path": "shared.ops"} for i in range(3)])
    name = vector_index.index_name(tenant.tenant_id)

    def routes(headers) -> tuple[list[str], set]:
        res = search(client, headers, "runbook for the billing service", mode="vector",
                     explain=True)
        return ids(res), {r["explain"]["vector"]["route"] for r in res}

    exact_ids, route = routes(h)
    assert route == {"exact"} and sorted(exact_ids) == sorted(created)

    monkeypatch.setattr(vector_index, "MIN_ROWS", 6)
    report = run_lifecycle(db)["vector_indexes"]
    assert report["created"] == [name] and report["failed"] == []
    own_ids, route = routes(h)
    assert route == {"tenant_index"} and own_ids == exact_ids
    assert routes(small.headers)[1] == {"exact"}

    # The index branch's plan takes the tenant's own index over the shared one (a table this
    # small is cheapest to scan and sort: those are switched off so the indexes compete).
    req = search_module.SearchRequest(query="runbook for the billing service", mode="vector")
    from strata.auth import authenticate

    caller = authenticate(db, tenant.key)
    with db.connection() as conn, conn.transaction():
        conn.execute(search_module._prelude(True), {"text": req.query, "tenant": caller.tenant_id,
                                                    "own_index": name, "common": []})
        conn.execute("SET LOCAL enable_seqscan = off; SET LOCAL enable_sort = off;"
                     " SET LOCAL enable_bitmapscan = off")
        params = {**search_module._access_params(caller, req, False),
                  "vec": [1.0] + [0.0] * 383, "kinds": None, "tags": None, "meta": None, "meta_ops": None,
                  "depth": 10}
        plan = "\n".join(r["QUERY PLAN"] for r in conn.execute(
            "EXPLAIN SELECT m.id FROM memories m WHERE m.embedding IS NOT NULL AND "
            + search_module._FILTERS + " ORDER BY m.embedding <=> %(vec)s::vector LIMIT 10",
            params).fetchall())
    assert name in plan and "memories_embedding_idx" not in plan, plan

    # An interrupted build leaves an invalid index: search stays exact, the next run rebuilds.
    with db.connection() as conn:
        conn.execute(f'UPDATE pg_index SET indisvalid = false WHERE indexrelid = \'"{name}"\'::regclass')
    assert routes(h)[1] == {"exact"}
    rebuilt = vector_index.reconcile(db, min_rows=6)
    assert rebuilt["rebuilt"] == [name], rebuilt
    assert routes(h)[1] == {"tenant_index"}

    # Shrinking below half the threshold drops it (between half and the line it stays).
    assert vector_index.reconcile(db, min_rows=16)["dropped"] == []
    assert vector_index.reconcile(db, min_rows=17)["dropped"] == [name]
    assert routes(h)[1] == {"exact"}


def test_min_score_keeps_only_relevant_hits_whatever_the_query(client, tenant):
    """Given memories on unrelated topics
    When a query one of them answers, and one nothing answers, search with and without
    min_score
    Then score is a 0..1 relevance comparable across queries: the answered query's best hit
    scores above every result of the unanswered one; min_score keeps the answer and drops
    everything for the unanswered query (control: without it both queries return results);
    a kept result keeps its rank from the full ranking, and min_score is applied before limit."""
    h = tenant.headers
    client.post("/v1/memories", headers=h, json={"memories": [
        {"content": "The deploy region is eu-west-1", "path": "shared.ops"},
        {"content": "Alice's dentist appointment is on Friday", "path": "users.alice"},
        {"content": "The team standup is at 9:30 in the blue room", "path": "shared.ops"},
        {"content": "Bob keeps bees on the roof of the garage", "path": "users.bob"},
    ]})
    answered = search(client, h, "which region do we deploy to?", limit=10)
    unanswered = search(client, h, "quantum chromodynamics lattice gauge theory", limit=10)
    assert answered and unanswered  # control: no floor without min_score
    for r in answered + unanswered:
        assert 0.0 <= r["score"] <= 1.0
    best = answered[0]
    assert best["content"] == "The deploy region is eu-west-1"
    assert best["score"] > max(r["score"] for r in unanswered)
    floor = (best["score"] + max(r["score"] for r in unanswered)) / 2
    kept = search(client, h, "which region do we deploy to?", min_score=floor, limit=10)
    assert [r["id"] for r in kept][:1] == [best["id"]] and kept[0]["rank"] == 1
    assert all(r["score"] >= floor for r in kept)
    assert {r["id"] for r in kept} == {r["id"] for r in answered if r["score"] >= floor}
    assert search(client, h, "quantum chromodynamics lattice gauge theory",
                  min_score=floor, limit=10) == []
    # before limit: a floor below every score with limit 1 still returns the best one
    assert [r["id"] for r in search(client, h, "which region do we deploy to?",
                                    min_score=0.0, limit=1)] == [best["id"]]
    for bad in (-0.1, 1.5, "high", True):
        r = client.post("/v1/search", headers=h, json={"query": "x", "min_score": bad})
        assert r.status_code == 422 and r.json()["error"]["field"] == "min_score", (bad, r.text)


def test_why_not_says_why_each_named_memory_is_missing(client, tenant, make_tenant, db):
    """Given a superseded memory, one outside a clamped key's paths, one of another tenant,
    one filtered out by kind, and twenty matching memories of which one ranks 14th
    When searching with limit 10 and why_not naming them all
    Then each gets its reason: returned (with its rank), status (superseded), not_visible for
    the unreadable one -- worded exactly as for an id that does not exist and for another
    tenant's -- kinds, and below_limit with its rank 14; a result set without why_not is
    the same as with it (the diagnosis changes nothing)."""
    from strata.auth import Caller, create_key

    h = tenant.headers
    ids = [x["id"] for x in client.post("/v1/memories", headers=h, json={"memories": [
        {"content": f"Harbour note {i}: the ferry leaves pier {i} at dawn", "path": "shared.port",
         "importance": 1.0 - i / 40} for i in range(20)]}).json()["results"]]
    old = client.post("/v1/memories", headers=h, json={"memories": [
        {"content": "The ferry timetable is printed weekly", "path": "shared.port"}]}
    ).json()["results"][0]["id"]
    r = client.patch(f"/v1/memories/{old}", headers=h, json={
        "expected_version": 1, "valid_to": "2026-01-01T00:00:00Z"})
    with db.transaction() as cur:
        cur.execute("UPDATE memories SET status = 'superseded' WHERE id = %s", (old,))
    event = client.post("/v1/memories", headers=h, json={"memories": [
        {"content": "The ferry festival is at the pier in June", "path": "shared.port",
         "kind": "event"}]}).json()["results"][0]["id"]
    hidden = client.post("/v1/memories", headers=h, json={"memories": [
        {"content": "Alice takes the ferry from the pier", "path": "users.alice"}]}
    ).json()["results"][0]["id"]
    other = make_tenant()
    foreign = client.post("/v1/memories", headers=other.headers, json={"memories": [
        {"content": "The ferry leaves the pier at dawn", "path": "shared.port"}]}
    ).json()["results"][0]["id"]
    clamped = create_key(db, Caller.system(tenant.tenant_id), principal_id=tenant.principal_id,
                         ceiling=[{"path": "shared", "level": "read"}]).key
    ch = {"Authorization": f"Bearer {clamped}"}
    query = {"query": "when does the ferry leave the pier", "limit": 10, "kinds": ["fact"]}
    plain = client.post("/v1/search", headers=ch, json={**query, "explain": True}).json()
    order = [r["id"] for r in plain["results"]]
    full = client.post("/v1/search", headers=ch, json={**query, "limit": 30}).json()["results"]
    fourteenth = full[13]["id"]
    missing = "00000000-0000-4000-8000-000000000000"
    asked = [order[0], old, hidden, foreign, missing, event, fourteenth]
    r = client.post("/v1/search", headers=ch, json={**query, "why_not": asked})
    assert r.status_code == 200, r.text
    body = r.json()
    assert [x["id"] for x in body["results"]] == order
    why = {x["id"]: x for x in body["why_not"]}
    assert [x["id"] for x in body["why_not"]] == asked
    assert why[order[0]]["returned"] and why[order[0]]["rank"] == 1
    assert why[old]["reasons"] == ["status"] and "superseded" in why[old]["message"]
    assert why[event]["reasons"] == ["kinds"]
    assert why[fourteenth]["reasons"] == ["below_limit"] and why[fourteenth]["rank"] == 14
    assert "14th" in why[fourteenth]["message"]
    blind = [{k: v for k, v in why[i].items() if k != "id"} for i in (hidden, foreign, missing)]
    assert blind[0] == blind[1] == blind[2]
    assert blind[0]["reasons"] == ["not_visible"] and blind[0]["rank"] is None
    # control: the owner key reads users.alice, so the same id is not "not_visible" for it
    owner = client.post("/v1/search", headers=h, json={**query, "why_not": [hidden]}).json()
    assert owner["why_not"][0]["reasons"] != ["not_visible"]
    assert plain.get("why_not") is None


def test_a_tenants_own_index_is_walked_with_an_ef_search_for_its_size(db):
    """The prelude's ef_search for a tenant's own index, in SQL over the index's reltuples,
    agrees with own_index_ef_search for generated sizes around and between the steps: larger
    indexes walk wider (the 100k-row measurement), the smallest keep 64; without an index of
    its own the shared index's HNSW_EF_SEARCH applies (control)."""
    import strata.search.hybrid as S

    steps = [least for least, _ in S.OWN_INDEX_EF_SEARCH]
    sizes = sorted({-1, 0, 1, 9_999, 10_000, 10**6}  # -1: reltuples of a relation never counted
                   | {s + d for s in steps for d in (-1, 0, 1) if s + d >= 0})
    with db.connection() as conn:
        for rows in sizes:
            got = conn.execute(f"SELECT {S._OWN_INDEX_EF_SQL} AS ef FROM (SELECT %s::real AS rows) o",
                               (rows,)).fetchone()["ef"]
            assert int(got) == S.own_index_ef_search(rows), rows
        none = conn.execute(
            f"SELECT CASE WHEN o.rows IS NOT NULL THEN {S._OWN_INDEX_EF_SQL}"
            f" ELSE '{S.HNSW_EF_SEARCH}' END AS ef FROM (SELECT NULL::real AS rows) o"
        ).fetchone()["ef"]
    assert int(none) == S.HNSW_EF_SEARCH
    assert S.own_index_ef_search(5_000) == 64 and S.own_index_ef_search(100_000) >= 400
    assert S.own_index_ef_search(-1) == 64
    assert [S.own_index_ef_search(n) for n in sizes] == sorted(
        S.own_index_ef_search(n) for n in sizes)  # never narrower for a larger index


@pytest.mark.parametrize("iterative", [True, False])
def test_the_search_transaction_plans_without_workers_or_jit_and_leaves_no_setting(
        db, tenant, embedder, iterative):
    """The prelude's settings hold for the search's transaction (custom plans, no parallel
    workers, no JIT: a large tenant's estimate passes jit_above_cost) and for it alone --
    session settings would pin a connection behind RDS Proxy; control: outside it the
    server's defaults differ from each."""
    from strata.auth.keys import authenticate
    import strata.search.hybrid as S

    caller = authenticate(db, tenant.key)
    params, _ = S._search_params(caller, S.SearchRequest(query="coffee in lisbon"),
                                 embedder, now=None, ignore_status=False)
    params["iterative"] = iterative
    names = ("jit", "max_parallel_workers_per_gather", "plan_cache_mode")
    show = ", ".join(f"current_setting('{n}') AS {n}" for n in names)
    with db.connection() as conn:
        before = conn.execute(f"SELECT {show}").fetchone()
        with conn.transaction():
            conn.execute(S._prelude(iterative), params).fetchone()
            inside = conn.execute(f"SELECT {show}").fetchone()
        after = conn.execute(f"SELECT {show}").fetchone()
    assert inside == {"jit": "off", "max_parallel_workers_per_gather": "0",
                      "plan_cache_mode": "force_custom_plan"}
    assert after == before and all(before[n] != inside[n] for n in names)
