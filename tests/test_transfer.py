"""Export and import (strata.maintenance.transfer, `strata export` / `strata import`) on a real database.

The source store is built through the real API (ingest with the rule extractor and judge,
review, direct create, patch, delete, forget), so it holds every kind of row an export must
carry: superseded and candidate and rejected memories, SUPERSEDES and CONTRADICTS edges,
superseded / rejected / forgotten tombstones, update and delete history, erased history.
"""

from __future__ import annotations

import base64
import io
import json
import uuid
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

from strata.db.vector import Vector
from strata.maintenance import transfer
from strata.providers import HashingEmbedder
from strata.search.hybrid import ACCESS_LOG

T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
ALICE = "users.alice"
TEAM = "shared.team"


class CountingEmbedder:
    """The real hash embedder, counting the texts it is asked to embed."""

    def __init__(self, inner) -> None:
        self.inner = inner
        self.model = inner.model
        self.dim = inner.dim
        self.texts = 0

    def embed(self, texts):
        self.texts += len(texts)
        return self.inner.embed(texts)


class OtherModel(HashingEmbedder):
    """A different embedding model stamp (same dimension): vectors must be recomputed."""

    def __init__(self, dim: int) -> None:
        super().__init__(dim)
        self.model = f"other-model-{dim}"


def say(client, headers, text: str, at: datetime, path: str = ALICE) -> dict:
    r = client.post("/v1/ingest", headers=headers, json={
        "path": path, "wait": True, "messages": [{"role": "user", "content": text,
                                                   "at": at.isoformat()}]})
    assert r.status_code == 200, r.text
    return r.json()


def build_store(client, headers) -> dict[str, str]:
    """Every kind of row; returns the ids the tests look at."""
    ids: dict[str, str] = {}
    say(client, headers, "I prefer MongoDB", T0)
    say(client, headers, "I've switched to PostgreSQL", T0 + timedelta(weeks=3))
    back = say(client, headers, "I've gone back to MongoDB", T0 + timedelta(weeks=6))
    assert back["items"][0]["outcome"] == "candidate", back
    ids["candidate"] = back["items"][0]["memory_id"]

    say(client, headers, "I use vim", T0, path=TEAM)
    say(client, headers, "I've switched to emacs", T0 + timedelta(weeks=3), path=TEAM)
    vim = say(client, headers, "I've gone back to vim", T0 + timedelta(weeks=6), path=TEAM)
    rejected = vim["items"][0]["memory_id"]
    r = client.post(f"/v1/review/{rejected}/reject", headers=headers, json={"suppress": True})
    assert r.status_code == 200 and r.json()["status"] == "rejected", r.text
    ids["rejected"] = rejected

    r = client.post("/v1/memories", headers=headers, json={"memories": [
        {"content": "The team deploys on Fridays", "path": TEAM, "name": "deploy-day",
         "tags": ["ops", "release"], "meta": {"source": "wiki", "n": 3}, "importance": 0.7},
        {"content": "The user has a dog named Rex", "path": ALICE},
        {"content": "The user's locker is number 4711", "path": ALICE},
    ]})
    assert r.status_code == 200, r.text
    named, dog, locker = (x["id"] for x in r.json()["results"])
    r = client.patch(f"/v1/memories/{named}", headers=headers,
                     json={"expected_version": 1, "pinned": True, "content": "The team deploys on Thursdays"})
    assert r.status_code == 200, r.text
    assert client.delete(f"/v1/memories/{dog}", headers=headers).status_code == 200
    assert client.post(f"/v1/memories/{locker}/forget", headers=headers).status_code == 200
    ids.update(named=named, deleted=dog, forgotten=locker)
    # search's bookkeeping (memory_access): the named memory returned twice
    for _ in range(2):
        r = client.post("/v1/search", headers=headers,
                        json={"query": "which day does the team deploy", "limit": 1})
        assert [x["id"] for x in r.json()["results"]] == [named], r.text
    ACCESS_LOG.flush()
    return ids


def snapshot(db, tenant_id, id_of=lambda x: x) -> dict[str, list]:
    """The tenant's store as comparable values, with every memory/edge/tombstone id passed
    through ``id_of`` (the import's id mapping, for the source side)."""
    def m(x):
        return None if x is None else id_of(x)

    with db.connection() as conn:
        memories = []
        for r in conn.execute("SELECT * FROM memories WHERE tenant_id = %s", (tenant_id,)):
            r = dict(r)
            r.pop("tenant_id"), r.pop("fts")
            r["id"] = m(r["id"])
            r["embedding"] = transfer.encode_vector(r["embedding"])
            r["valid"] = (r["valid"].lower, r["valid"].upper)
            memories.append(r)
        history = []
        for r in conn.execute(
                "SELECT memory_id, path::text AS path, version, operation, row_data, operation_id,"
                " cause, actor, changed_at, erased FROM memory_history WHERE tenant_id = %s"
                " ORDER BY id", (tenant_id,)):
            r = dict(r)
            r["memory_id"] = m(r["memory_id"])
            r["row_data"] = {k: v for k, v in r["row_data"].items() if k not in ("id", "tenant_id")}
            history.append(r)
        edges = [dict(r, id=m(r["id"]), source_id=m(r["source_id"]), target_id=m(r["target_id"]))
                 for r in conn.execute(
                     "SELECT id, source_id, target_id, type::text AS type, confidence, reason,"
                     " decided_by, created_at FROM memory_relationships WHERE tenant_id = %s",
                     (tenant_id,))]
        tombstones = []
        for r in conn.execute(
                "SELECT t.id, t.path::text AS path, t.slot, t.slot_value_hash, t.value_hash,"
                " t.reason::text AS reason, t.memory_id, t.replaced_by, t.embedding, t.until,"
                " t.created_at, k.secret AS fingerprint_key, t.fingerprint,"
                " t.fingerprint_weights, t.fingerprint_kinds FROM tombstones t"
                " LEFT JOIN fingerprint_keys k ON k.id = t.fingerprint_key_id"
                " WHERE t.tenant_id = %s", (tenant_id,)):
            r = dict(r, id=m(r["id"]), memory_id=m(r["memory_id"]), replaced_by=m(r["replaced_by"]))
            r["embedding"] = transfer.encode_vector(r["embedding"])
            tombstones.append(r)
        access = [dict(r, memory_id=m(r["memory_id"])) for r in conn.execute(
            "SELECT memory_id, access_count, last_accessed_at FROM memory_access"
            " WHERE tenant_id = %s", (tenant_id,))]
    key = lambda r: json.dumps(r, sort_keys=True, default=str)  # noqa: E731
    # history: each memory's rows in their order (the import may interleave memories
    # differently, so the global order of history ids is not part of the store)
    return {"memories": sorted(memories, key=key),
            "history": sorted(history, key=lambda r: str(r["memory_id"])),
            "relationships": sorted(edges, key=key), "tombstones": sorted(tombstones, key=key),
            "access": sorted(access, key=key)}


def export_text(db, tenant_id) -> str:
    out = io.StringIO()
    transfer.export(db, tenant_id, out)
    return out.getvalue()


def derived(tenant_id):
    return lambda src: uuid.uuid5(tenant_id, f"strata-import:{src}")


@pytest.fixture
def source(client, make_tenant):
    t = make_tenant("source")
    return t, build_store(client, t.headers)


def test_round_trip_into_a_fresh_tenant_reproduces_the_store_without_embedding(
        db, source, make_tenant, embedder):
    """Given a store with every kind of row, exported
    When it is imported into a fresh tenant of the same database with the same embedder model
    Then memories (statuses, valid times, versions, vectors), history (erased rows too),
    relationships and tombstones are the source's, id for derived id; the embedder was
    never called; a second import changes nothing at all."""
    src, ids = source
    text = export_text(db, src.tenant_id)
    dest = make_tenant("copy")
    counting = CountingEmbedder(embedder)

    report = transfer.import_lines(db, dest.tenant_id, text.splitlines(), counting)

    before = snapshot(db, src.tenant_id, derived(dest.tenant_id))
    after = snapshot(db, dest.tenant_id)
    assert counting.texts == 0, report
    assert report["complete"] and report["ids"] == "derived"
    # counts first, so a failure says what is missing
    statuses = sorted(r["status"] for r in after["memories"])
    assert statuses == sorted(r["status"] for r in before["memories"])
    assert {"active", "superseded", "candidate", "rejected"} <= set(statuses)
    assert sorted(r["type"] for r in after["relationships"]) == sorted(
        r["type"] for r in before["relationships"])
    assert {"SUPERSEDES", "CONTRADICTS"} <= {r["type"] for r in after["relationships"]}
    # the PATCH of the named memory retired the value it corrected: one more superseded
    assert sorted(r["reason"] for r in after["tombstones"]) == ["forgotten", "rejected",
                                                                "superseded", "superseded",
                                                                "superseded"]
    assert len(after["history"]) == len(before["history"]) > 0
    assert [r["access_count"] for r in after["access"]] == [2]  # search's use of the named one
    assert report["memories"]["inserted"] == len(before["memories"])
    # then everything, deeply
    assert after == before

    # a sample read through the API model: the named, patched memory
    named = next(r for r in after["memories"] if r["name"] == "deploy-day")
    assert named["id"] == derived(dest.tenant_id)(uuid.UUID(ids["named"]))
    assert named["pinned"] and named["tags"] == ["ops", "release"] and named["version"] == 2
    # erased history stays erased; the deleted memory's last state is there to restore
    forgotten = [h for h in after["history"]
                 if h["memory_id"] == derived(dest.tenant_id)(uuid.UUID(ids["forgotten"]))]
    assert forgotten and all(h["erased"] and "content" not in h["row_data"] for h in forgotten)

    again = transfer.import_lines(db, dest.tenant_id, text.splitlines(), counting)
    assert snapshot(db, dest.tenant_id) == after
    assert again["memories"]["inserted"] == 0 and again["memories"]["existing"] == len(after["memories"])
    assert again["history"]["inserted"] == 0 and again["relationships"]["inserted"] == 0
    assert again["tombstones"]["inserted"] == 0 and counting.texts == 0


def test_imported_store_works_through_the_api(db, client, source, make_tenant, embedder):
    """Given an import into a fresh tenant
    When its owner restores the deleted memory and searches
    Then restore rebuilds it from the imported history, search finds the active preference,
    and the forgotten value stays blocked (control: a new value is accepted)."""
    src, ids = source
    dest = make_tenant("copy")
    transfer.import_lines(db, dest.tenant_id, export_text(db, src.tenant_id).splitlines(), embedder)
    h = dest.headers
    dog = derived(dest.tenant_id)(uuid.UUID(ids["deleted"]))
    r = client.post(f"/v1/memories/{dog}/restore", headers=h)
    assert r.status_code == 200 and r.json()["content"] == "The user has a dog named Rex", r.text
    hits = client.post("/v1/search", headers=h, json={"query": "database", "paths": [ALICE]}).json()
    assert any("PostgreSQL" in x["content"] for x in hits["results"]), hits
    r = client.post("/v1/memories", headers=h, json={"memories": [
        {"content": "The user's locker is number 4711", "path": ALICE},
        {"content": "The user's bike is red", "path": ALICE}]})
    assert [x["status"] for x in r.json()["results"]] == ["blocked", "inserted"], r.text


def test_a_new_model_re_embeds_once_per_memory(db, source, make_tenant):
    """Given an export made with the hash embedder
    When it is imported with another model
    Then every memory is embedded again and stamped with that model (the control for the
    'embedder not called' assertion above), and superseded/rejected tombstones take the new
    vectors of their memories."""
    src, _ = source
    dest = make_tenant("copy")
    other = CountingEmbedder(OtherModel(384))
    report = transfer.import_lines(db, dest.tenant_id,
                                   export_text(db, src.tenant_id).splitlines(), other)
    n = report["memories"]["inserted"]
    assert n > 0 and other.texts == n == report["memories"]["embedded"]
    with db.connection() as conn:
        models = {r["embedding_model"] for r in conn.execute(
            "SELECT embedding_model FROM memories WHERE tenant_id = %s", (dest.tenant_id,))}
        vectors = conn.execute(
            "SELECT reason::text AS reason, embedding IS NOT NULL AS has FROM tombstones"
            " WHERE tenant_id = %s", (dest.tenant_id,)).fetchall()
    assert models == {"other-model-384"}
    assert {(v["reason"], v["has"]) for v in vectors} == {
        ("superseded", True), ("rejected", True), ("forgotten", False)}


def test_import_passes_the_destination_write_gate(db, client, source, make_tenant, embedder):
    """Given a destination that forgot one of the source's active values and already holds
    another as an active memory
    When the export is imported
    Then the forgotten value is blocked (with its tombstone named), the held value reinforces
    the destination's memory instead of a duplicate, everything else is imported (control),
    and a second import changes nothing."""
    src, _ = source
    dest = make_tenant("busy")
    h = dest.headers
    r = client.post("/v1/memories", headers=h, json={"memories": [
        {"content": "The user has switched to PostgreSQL", "path": ALICE},
        {"content": "The team deploys on Thursdays", "path": TEAM}]})
    pg, team = (x["id"] for x in r.json()["results"])
    forgotten = client.post(f"/v1/memories/{pg}/forget", headers=h).json()["tombstone_ids"][0]

    text = export_text(db, src.tenant_id)
    report = transfer.import_lines(db, dest.tenant_id, text.splitlines(), embedder)

    assert report["memories"]["blocked"] == 1, report
    assert report["blocked"][0]["tombstone_id"] == forgotten
    assert report["blocked"][0]["reason"] == "forgotten"
    items = client.get("/v1/memories", headers=h, params={"status": "all", "limit": 200}).json()["items"]
    contents = [m["content"] for m in items]
    assert "The user has switched to PostgreSQL" not in contents
    assert contents.count("The team deploys on Thursdays") == 1  # reinforced, not duplicated
    assert any("MongoDB" in c for c in contents)  # control: the rest came in
    kept = client.get(f"/v1/memories/{team}", headers=h).json()
    assert kept["reinforcements"] == 1 and kept["evidence"][-1]["source"] == "import"
    assert report["memories"]["reinforced"] == 1 and report["memories"]["inserted"] > 3

    first = snapshot(db, dest.tenant_id)
    again = transfer.import_lines(db, dest.tenant_id, text.splitlines(), embedder)
    assert snapshot(db, dest.tenant_id) == first
    assert again["memories"]["inserted"] == again["memories"]["reinforced"] == 0
    assert again["memories"]["blocked"] == 1


def test_import_into_the_source_tenant_keeps_ids_and_changes_nothing(db, source, embedder):
    """Given an export
    When it is imported back into the tenant it came from
    Then ids are kept and every row is recognised as present: nothing changes."""
    src, _ = source
    text = export_text(db, src.tenant_id)
    before = snapshot(db, src.tenant_id)
    report = transfer.import_lines(db, src.tenant_id, text.splitlines(), embedder)
    assert report["ids"] == "kept" and report["memories"]["existing"] == len(before["memories"]) > 0
    assert report["memories"]["inserted"] == 0
    assert snapshot(db, src.tenant_id) == before


def test_restoring_a_backup_respects_later_erasure(db, client, source, embedder):
    """Given an export (a backup), after which one memory is forgotten and another deleted
    When the backup is imported into the same tenant
    Then the deleted memory comes back with its id, the forgotten one does not (neither as a
    row nor as history content)."""
    src, ids = source
    h = src.headers
    text = export_text(db, src.tenant_id)
    active = client.get("/v1/memories", headers=h, params={"path": TEAM}).json()["items"]
    emacs = next(m for m in active if "emacs" in m["content"])
    assert client.post(f"/v1/memories/{emacs['id']}/forget", headers=h).status_code == 200
    assert client.delete(f"/v1/memories/{ids['named']}", headers=h).status_code == 200

    report = transfer.import_lines(db, src.tenant_id, text.splitlines(), embedder)

    assert report["memories"]["blocked"] == 1 and report["blocked"][0]["id"] == emacs["id"]
    assert client.get(f"/v1/memories/{ids['named']}", headers=h).status_code == 200
    assert client.get(f"/v1/memories/{emacs['id']}", headers=h).status_code == 404
    with db.connection() as conn:
        leaked = conn.execute(
            "SELECT count(*) AS n FROM memory_history WHERE memory_id = %s"
            " AND row_data ? 'content'", (emacs["id"],)).fetchone()["n"]
    assert leaked == 0


def test_export_format(db, source):
    """The file is a header, then memory, history, relationship and tombstone records in
    that order, then an end record whose counts match the header's."""
    src, ids = source
    lines = [json.loads(x) for x in export_text(db, src.tenant_id).splitlines()]
    types = [x["type"] for x in lines]
    assert types[0] == "header" and types[-1] == "end"
    body = types[1:-1]
    order = [transfer.PHASES.index(t) for t in body]
    assert order == sorted(order) and set(body) == set(transfer.PHASES)
    assert lines[0]["counts"] == lines[-1]["counts"]
    assert lines[0]["counts"]["memory"] == body.count("memory")
    memory = next(x for x in lines if x["type"] == "memory")
    vec = transfer.decode_vector(memory["embedding"])
    assert len(vec) == 384 and memory["embedding_model"] == "strata-hash-v1-384"
    # a forgotten memory's content is nowhere in the file (control: other content is); the
    # phrase has a space, so no id, hash or base64 vector can contain it by chance
    dumped = json.dumps(lines)
    assert "dog named Rex" in dumped and "locker is number 4711" not in dumped


def test_vectors_in_the_file_are_little_endian_float32_base64():
    """Given a vector encoded as files have always carried it (numpy's '<f4' bytes, base64)
    When it is decoded, and the same values encoded
    Then both sides agree bit for bit, so files written before still import."""
    values = [0.5, -1.25, 3.0, 1e-05]
    written_before = base64.b64encode(np.asarray(values, dtype="<f4").tobytes()).decode()
    assert transfer.decode_vector(written_before) == Vector(values)
    assert transfer.encode_vector(Vector(values)) == written_before
    assert base64.b64decode(written_before)[:4] == bytes.fromhex("0000003f")  # 0.5, LE


@pytest.mark.parametrize("lines, message", [
    ([], "empty"),
    (['{"type": "memory"}'], "line 1"),
    (["not json"], "not JSON"),
    (['{"type": "nonsense"}'], "unknown record type"),
])
def test_bad_files_are_refused_with_the_line(db, make_tenant, embedder, lines, message):
    from strata.foundation.errors import InvalidInput

    dest = make_tenant("copy")
    with pytest.raises(InvalidInput, match=message):
        transfer.import_lines(db, dest.tenant_id, lines, embedder)


def test_records_out_of_order_and_truncation(db, source, make_tenant, embedder):
    """A record after its phase is refused naming the line; a file cut before its end record
    imports what it holds and says it is incomplete (a rerun with the whole file finishes)."""
    from strata.foundation.errors import InvalidInput

    src, _ = source
    lines = export_text(db, src.tenant_id).splitlines()
    dest = make_tenant("copy")
    first_tomb = next(i for i, x in enumerate(lines) if '"type": "tombstone"' in x)
    shuffled = lines[:2] + [lines[first_tomb]] + lines[2:first_tomb] + lines[first_tomb + 1:]
    with pytest.raises(InvalidInput, match="out of order"):
        transfer.import_lines(db, dest.tenant_id, shuffled, embedder)

    cut = transfer.import_lines(db, dest.tenant_id, lines[:-1], embedder)
    assert not cut["complete"]
    whole = transfer.import_lines(db, dest.tenant_id, lines, embedder)
    assert whole["complete"] and whole["memories"]["inserted"] == 0


def test_a_memory_deleted_here_comes_back_with_one_history_row_per_version(
        db, client, make_tenant, embedder):
    """Given a memory exported at version 1, imported into another tenant and deleted there
    (its delete leaves that store's history row for version 1)
    When the memory is edited in its source and exported again (version 2, whose history
    holds the source's row for version 1), and that export is imported
    Then the memory comes back above every version it had, with one history row per earlier
    version -- the destination's own where both have one -- never two (found by the stateful
    write test: import, delete, import)."""
    src, dest = make_tenant("source"), make_tenant("dest")
    made = client.post("/v1/memories", headers=src.headers, json={"memories": [
        {"content": "The staging cluster runs in Frankfurt", "path": ALICE}]})
    assert made.status_code == 200, made.text
    mid = made.json()["results"][0]["id"]
    first = export_text(db, src.tenant_id).splitlines()
    transfer.import_lines(db, dest.tenant_id, first, embedder)
    copy = derived(dest.tenant_id)(mid)
    assert client.delete(f"/v1/memories/{copy}", headers=dest.headers).status_code == 200
    edited = client.patch(f"/v1/memories/{mid}", headers=src.headers,
                          json={"content": "The staging cluster runs in Dublin", "expected_version": 1})
    assert edited.status_code == 200, edited.text
    transfer.import_lines(db, dest.tenant_id, export_text(db, src.tenant_id).splitlines(), embedder)
    with db.connection() as conn:
        back = conn.execute("SELECT version FROM memories WHERE id = %s", (copy,)).fetchone()
        versions = [r["version"] for r in conn.execute(
            "SELECT version FROM memory_history WHERE memory_id = %s ORDER BY version",
            (copy,)).fetchall()]
    assert back is not None, "the memory came back"
    assert versions == list(range(1, back["version"])), (back, versions)
