"""A memory's context (migration 0022): text that situates a memory -- the message it answers
-- found by search's text arm with the content, never part of the content.

Real app, real PostgreSQL with pgvector, nothing mocked. Every exclusion beside its control:
the same reply stored without context is not found by the question's words; a refused
context beside the same item accepted without it.
"""

from __future__ import annotations

import uuid

import psycopg
from hypothesis import HealthCheck, given, settings as hsettings
from hypothesis import strategies as st
from psycopg.rows import dict_row

from strata.db.migrate import migrate, migration_files, render
from strata.search import hybrid as S
from support import assert_error, create_ok

ALICE = "users.alice"
QUESTION = "How long have you and your husband been married?"
REPLY = "5 years already! Time flies."


def _search(client, headers, query: str, mode: str = "keyword", **extra) -> list[dict]:
    r = client.post("/v1/search", headers=headers,
                    json={"query": query, "mode": mode, "limit": 10, **extra})
    assert r.status_code == 200, r.text
    return r.json()["results"]


def test_the_text_arm_finds_a_reply_by_the_question_it_answers(client, tenant):
    """Given the same reply stored twice, once with the question it answers as its context
    When the question's words are searched (keyword and hybrid)
    Then the reply with context is found, with its context in the result; the one without
         (control) shares no word with the question and is not; GET shows the context."""
    h = tenant.headers
    with_ctx, bare = create_ok(client, h,
                               {"content": REPLY, "path": ALICE, "context": QUESTION},
                               {"content": REPLY, "path": "users.bob"})
    assert with_ctx["status"] == bare["status"] == "inserted"
    found = _search(client, h, "married husband")
    assert [r["id"] for r in found] == [with_ctx["id"]]
    assert found[0]["context"] == QUESTION and found[0]["content"] == REPLY
    hybrid = _search(client, h, "how long married", mode="hybrid")
    assert hybrid[0]["id"] == with_ctx["id"]
    # Control: the reply's own words find both.
    assert {r["id"] for r in _search(client, h, "years flies")} == {with_ctx["id"], bare["id"]}
    got = client.get(f"/v1/memories/{with_ctx['id']}", headers=h).json()
    assert got["context"] == QUESTION
    assert client.get(f"/v1/memories/{bare['id']}", headers=h).json()["context"] is None


def test_context_is_not_part_of_the_content(client, tenant, db):
    """The duplicate check and the embedding are the content's: the same content with another
    context reinforces the memory (its context unchanged), and its vector is the one a
    context-free twin in another path has."""
    h = tenant.headers
    [first] = create_ok(client, h, {"content": REPLY, "path": ALICE, "context": QUESTION})
    [again] = create_ok(client, h, {"content": REPLY, "path": ALICE,
                                    "context": "Is it long since the wedding?"})
    assert again == {**again, "status": "reinforced", "id": first["id"]}
    [twin] = create_ok(client, h, {"content": REPLY, "path": "users.bob"})
    with db.connection() as conn:
        rows = {str(r["id"]): r for r in conn.execute(
            "SELECT id, context, embedding::text AS e FROM memories WHERE tenant_id = %s",
            (tenant.tenant_id,)).fetchall()}
    assert rows[first["id"]]["context"] == QUESTION
    assert rows[first["id"]]["e"] == rows[twin["id"]]["e"]


def test_a_bad_context_is_refused_naming_the_field_and_nothing_is_stored(client, tenant):
    h = tenant.headers
    for bad, status, code in (
        ("the deploy key is AKIAIOSFODNN7EXAMPLE", 422, "invalid_input"),
        ("   ", 422, "invalid_input"),
        ("x" * 8001, 422, "invalid_input"),
    ):
        resp = client.post("/v1/memories", headers=h, json={"memories": [
            {"content": "Alice parks on level 3", "path": ALICE},
            {"content": REPLY, "path": ALICE, "context": bad}]})
        assert_error(resp, status, code, "memories[1].context")
        assert client.get("/v1/memories", headers=h).json()["items"] == []
    # Control: the same batch with a good context is stored.
    assert len(create_ok(client, h, {"content": "Alice parks on level 3", "path": ALICE},
                         {"content": REPLY, "path": ALICE, "context": QUESTION})) == 2


def test_patch_sets_and_clears_context_with_history_and_search_follows(client, tenant):
    h = tenant.headers
    [res] = create_ok(client, h, {"content": REPLY, "path": ALICE})
    mid = res["id"]
    assert _search(client, h, "married husband") == []
    r = client.patch(f"/v1/memories/{mid}", headers={**h, "If-Match": "1"},
                     json={"context": QUESTION})
    assert r.status_code == 200 and r.json()["context"] == QUESTION, r.text
    assert [x["id"] for x in _search(client, h, "married husband")] == [mid]
    # A patch of something else leaves it as it is.
    r = client.patch(f"/v1/memories/{mid}", headers={**h, "If-Match": "2"},
                     json={"importance": 0.9})
    assert r.json()["context"] == QUESTION
    r = client.patch(f"/v1/memories/{mid}", headers={**h, "If-Match": "3"},
                     json={"context": None})
    assert r.status_code == 200 and r.json()["context"] is None
    assert _search(client, h, "married husband") == []
    hist = client.get(f"/v1/memories/{mid}/history", headers=h).json()["items"]
    assert [e["snapshot"].get("context") for e in sorted(hist, key=lambda e: e["version"])] \
        == [None, QUESTION, QUESTION]
    # Restoring version 2 brings its context back, and search finds it by it again.
    r = client.post(f"/v1/memories/{mid}/restore", headers=h, json={"version": 2})
    assert r.status_code == 200, r.text
    assert r.json()["context"] == QUESTION
    assert [x["id"] for x in _search(client, h, "married husband")] == [mid]


def test_forget_erases_the_context_from_history(client, tenant, db):
    h = tenant.headers
    [res] = create_ok(client, h, {"content": REPLY, "path": ALICE, "context": "quokka wedding"})
    mid = res["id"]
    client.patch(f"/v1/memories/{mid}", headers={**h, "If-Match": "1"}, json={"importance": 0.8})

    def holding() -> int:
        with db.connection() as conn:
            return conn.execute("SELECT count(*) AS n FROM memory_history"
                                " WHERE row_data::text LIKE '%quokka%'").fetchone()["n"]

    assert holding() == 1  # control: history held it
    assert client.post(f"/v1/memories/{mid}/forget", headers=h).status_code == 200
    assert holding() == 0


def test_export_and_import_keep_the_context(db, client, tenant, make_tenant, embedder):
    import io

    from strata.maintenance import transfer

    h = tenant.headers
    create_ok(client, h, {"content": REPLY, "path": ALICE, "context": QUESTION},
              {"content": "Alice parks on level 3", "path": ALICE})
    out = io.StringIO()
    transfer.export(db, tenant.tenant_id, out)
    dest = make_tenant("dest")
    transfer.import_lines(db, dest.tenant_id, out.getvalue().splitlines(), embedder)
    found = _search(client, dest.headers, "married husband")
    assert [(r["content"], r["context"]) for r in found] == [(REPLY, QUESTION)]


# --------------------------------------------------------------------------------------
# The text arm's two readings of a memory never part: fts (BM25) and the index (matching)
# --------------------------------------------------------------------------------------

WORDS = ["married", "husband", "years", "garden", "tomato", "piano", "lesson", "river",
         "boat", "painting", "museum", "coffee"]
_text = st.lists(st.sampled_from(WORDS), min_size=1, max_size=4).map(" ".join)
_op = st.one_of(
    st.tuples(st.just("insert"), _text, st.none() | _text),
    st.tuples(st.just("content"), _text, st.none()),
    st.tuples(st.just("context"), st.none() | _text, st.none()),
    st.tuples(st.just("fts"), st.none(), st.none()),
)


@hsettings(max_examples=25, deadline=None,
           suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=st.lists(_op, min_size=1, max_size=12))
def test_fts_and_the_text_index_agree_under_any_writes(db, make_tenant, ops):
    """Any sequence of inserts and updates (of content, of context, even of fts directly):
    every row's fts is to_tsvector over its content and context, and the match through the
    tenant-keyed index finds, for every word, exactly the rows whose fts holds it."""
    tenant = make_tenant(f"p{uuid.uuid4().hex[:8]}")
    ids: list[uuid.UUID] = []
    with db.connection() as conn:
        for i, (op, a, b) in enumerate(ops):
            if op == "insert" or not ids:
                mid = uuid.uuid4()
                conn.execute(
                    "INSERT INTO memories (id, tenant_id, path, content, context, canonical,"
                    " value_hash) VALUES (%s, %s, 'users.alice', %s, %s, %s, %s)",
                    (mid, tenant.tenant_id, a or "river", b, a or "river",
                     uuid.uuid4().bytes))
                ids.append(mid)
            elif op == "content":
                conn.execute("UPDATE memories SET content = %s WHERE id = %s",
                             (a, ids[i % len(ids)]))
            elif op == "context":
                conn.execute("UPDATE memories SET context = %s WHERE id = %s",
                             (a, ids[i % len(ids)]))
            else:
                conn.execute("UPDATE memories SET fts = to_tsvector('simple', 'tampered')"
                             " WHERE id = %s", (ids[i % len(ids)],))
        conn.commit()
        stale = conn.execute(
            "SELECT count(*) AS n FROM memories WHERE tenant_id = %s AND fts IS DISTINCT FROM"
            " to_tsvector('english', content || coalesce(E'\\n' || context, ''))",
            (tenant.tenant_id,)).fetchone()["n"]
        assert stale == 0
        conn.execute("SET enable_seqscan = off")
        for word in WORDS:
            lexeme = conn.execute("SELECT tsvector_to_array(to_tsvector('english', %s)) AS l",
                                  (word,)).fetchone()["l"][0]
            by_index = {r["id"] for r in conn.execute(
                f"SELECT m.id FROM memories m WHERE m.tenant_id = %(t)s AND {S.LEXEMES}"
                " @@ quote_literal(%(t)s::text || ':' || %(l)s)::tsquery",
                {"t": tenant.tenant_id, "l": lexeme}).fetchall()}
            by_fts = {r["id"] for r in conn.execute(
                "SELECT id FROM memories WHERE tenant_id = %s AND %s = ANY(tsvector_to_array(fts))",
                (tenant.tenant_id, lexeme)).fetchall()}
            assert by_index == by_fts, word
        plan = "\n".join(r["QUERY PLAN"] for r in conn.execute(
            f"EXPLAIN SELECT m.id FROM memories m WHERE {S.LEXEMES}"
            " @@ '''x:y'''::tsquery").fetchall())
        assert "memories_tenant_text_idx" in plan, plan
        conn.rollback()


def test_the_migration_keeps_rows_written_before_it(empty_db_url, settings):
    """Rows written before 0022 keep their fts (no context: the same lexemes) and are found
    through the rebuilt index; a context added afterwards is indexed."""
    files = migration_files()
    before = [(n, sql) for n, sql in files if n < "0022"]
    assert len(before) < len(files)  # control: 0022 is among them
    with psycopg.connect(empty_db_url, autocommit=True, row_factory=dict_row) as conn:
        conn.execute("CREATE TABLE schema_migrations (name text PRIMARY KEY,"
                     " applied_at timestamptz NOT NULL DEFAULT now())")
        for name, sql in before:
            conn.execute(render(sql, settings))
            conn.execute("INSERT INTO schema_migrations (name) VALUES (%s)", (name,))
        tenant = conn.execute(
            "INSERT INTO tenants (name) VALUES ('old') RETURNING id").fetchone()["id"]
        mid = conn.execute(
            "INSERT INTO memories (tenant_id, path, content, canonical, value_hash)"
            " VALUES (%s, 'users.alice', %s, %s, %s) RETURNING id",
            (tenant, REPLY, REPLY.lower(), b"h")).fetchone()["id"]
        old_fts = conn.execute("SELECT fts::text AS f FROM memories").fetchone()["f"]
    assert migrate(empty_db_url, settings) == [n for n, _ in files if n >= "0022"]
    with psycopg.connect(empty_db_url, autocommit=True, row_factory=dict_row) as conn:
        assert conn.execute("SELECT fts::text AS f FROM memories").fetchone()["f"] == old_fts

        def found(word: str) -> list:
            return [r["id"] for r in conn.execute(
                f"SELECT m.id FROM memories m WHERE {S.LEXEMES}"
                " @@ quote_literal(%(t)s::text || ':' || %(w)s)::tsquery",
                {"t": tenant, "w": word}).fetchall()]

        assert found("year") == [mid] and found("marri") == []
        conn.execute("UPDATE memories SET context = %s WHERE id = %s", (QUESTION, mid))
        assert found("marri") == [mid]


def test_a_memory_rule_judges_the_context_too(client, tenant, make_tenant, db, embedder):
    """A rule's exclusion reaches a memory whose context holds what it excludes (the content
    alone passes it: control), in a create and in an import alike."""
    import io

    from strata.maintenance import transfer

    h = tenant.headers
    r = client.put("/v1/rules", headers=h, json={"path": "users", "exclude_patterns": ["zephyr"],
                                                  "exclude_categories": ["health"]})
    assert r.status_code == 200, r.text
    results = create_ok(client, h,
                        {"content": "Yes, every Tuesday", "path": ALICE,
                         "context": "Do you still lead project Zephyr?"},
                        {"content": "It went fine", "path": ALICE,
                         "context": "How did the chemotherapy for your cancer go?"},
                        {"content": "Yes, every Tuesday", "path": ALICE,
                         "context": "Do you still go swimming?"})
    assert [x["status"] for x in results] == ["blocked", "blocked", "inserted"]
    assert results[0]["reason"].endswith("excluded (exclude_patterns[0])")
    assert results[1]["reason"].endswith("excluded (health)")
    listed = client.get("/v1/memories", headers=h).json()["items"]
    assert [m["context"] for m in listed] == ["Do you still go swimming?"]
    # An import into the tenant is judged the same way.
    source = make_tenant("source")
    create_ok(client, source.headers,
              {"content": "Yes, on Fridays", "path": ALICE, "context": "Is Zephyr on track?"},
              {"content": "Yes, on Fridays", "path": "users.bob", "context": "Do you cook?"})
    out = io.StringIO()
    transfer.export(db, source.tenant_id, out)
    report = transfer.import_lines(db, tenant.tenant_id, out.getvalue().splitlines(), embedder)
    assert report["memories"]["blocked"] == 1 and report["memories"]["inserted"] == 1, report
