"""Migrations on a real PostgreSQL: what they create, that they are idempotent and safe to run
twice at once, that the SQL stays within PostgreSQL 16, and what the history trigger records."""

from __future__ import annotations

import re
import threading
import uuid
from datetime import UTC, datetime
from pathlib import Path

import psycopg
import pytest
from psycopg import errors as pg_errors
from psycopg.rows import dict_row

from strata.db import Database
from strata.db.migrate import check_schema, migrate, migration_files, render
from strata.foundation.config import Settings

TABLES = {
    "maintenance_state",
    "tenants", "principals", "grants", "api_keys", "memories", "memory_relationships",
    "tombstones", "memory_history", "audit_log", "audit_heads", "audit_checkpoints",
    "ingest_receipts", "schema_migrations", "strata_meta", "principal_writes",
    "memory_rules", "memory_rule_history", "events", "event_heads", "webhooks", "webhook_deliveries",
    "event_bus_cursors",
}


def names() -> list[str]:
    return [n for n, _ in migration_files()]


def query(url: str, statement: str, params=None) -> list[dict]:
    with psycopg.connect(url, autocommit=True, row_factory=dict_row) as conn:
        cur = conn.execute(statement, params)
        return cur.fetchall() if cur.description else []


def column_type(url: str, table: str, column: str) -> str:
    [row] = query(url, "SELECT format_type(atttypid, atttypmod) AS t FROM pg_attribute"
                       " WHERE attrelid = %s::regclass AND attname = %s", (table, column))
    return row["t"]


# --------------------------------------------------------------------------------------
# what a fresh database gets
# --------------------------------------------------------------------------------------


def test_migrate_creates_tables_extensions_and_hnsw_index(empty_db_url, settings):
    """Given an empty database, when migrate runs, then it applies every migration and the
    database has the core tables, the vector and ltree extensions, and an HNSW cosine index on
    memories.embedding typed vector(384) as configured."""
    assert query(empty_db_url, "SELECT count(*) AS n FROM pg_tables WHERE schemaname = 'public'"
                 )[0]["n"] == 0  # control: nothing there before
    applied = migrate(empty_db_url, settings)
    assert applied == names() and "0001_core.sql" in applied
    tables = {r["tablename"] for r in query(
        empty_db_url, "SELECT tablename FROM pg_tables WHERE schemaname = 'public'")}
    assert TABLES <= tables, TABLES - tables
    extensions = {r["extname"] for r in query(empty_db_url, "SELECT extname FROM pg_extension")}
    assert {"vector", "ltree"} <= extensions
    [index] = query(empty_db_url, """
        SELECT am.amname, a.attname, i.indexrelid::regclass::text AS name,
               pg_get_indexdef(i.indexrelid) AS def
        FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_am am ON am.oid = c.relam
        JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = ANY(i.indkey)
        WHERE i.indrelid = 'memories'::regclass AND am.amname = 'hnsw'""")
    assert (index["attname"], index["name"]) == ("embedding", "memories_embedding_idx")
    assert "vector_cosine_ops" in index["def"]
    assert column_type(empty_db_url, "memories", "embedding") == "vector(384)"
    assert column_type(empty_db_url, "tombstones", "embedding") == "vector(384)"
    assert query(empty_db_url, "SELECT value FROM strata_meta WHERE key = 'embedding_dim'") == [
        {"value": "384"}]
    # the full-text arm's index is keyed by tenant and takes entries directly (no pending
    # list for searches to scan); the table-wide one is gone; control: the tags GIN index
    # keeps the default
    options = {r["relname"]: r["reloptions"] for r in query(
        empty_db_url, "SELECT relname, reloptions FROM pg_class WHERE relname IN"
                      " ('memories_fts_idx', 'memories_tenant_text_idx', 'memories_tags_idx')")}
    assert options == {"memories_tenant_text_idx": ["fastupdate=off"], "memories_tags_idx": None}


def test_configured_dimension_reaches_a_fresh_schema(empty_db_url):
    """Given Settings(embedding_dim=64), when a fresh database is migrated, then the embedding
    columns are vector(64) and strata_meta records 64 (the 384 case above is the control)."""
    migrate(empty_db_url, Settings(embedding_dim=64, home=Path("/nonexistent-strata-home")))
    assert column_type(empty_db_url, "memories", "embedding") == "vector(64)"
    assert column_type(empty_db_url, "tombstones", "embedding") == "vector(64)"
    assert query(empty_db_url, "SELECT value FROM strata_meta WHERE key = 'embedding_dim'") == [
        {"value": "64"}]


def test_every_placeholder_is_substituted(settings):
    """Given the migration files, when rendered with settings, then no ${...} placeholder is
    left (the raw files do contain one: the control)."""
    raw = "".join(sql for _, sql in migration_files())
    assert "${embedding_dim}" in raw
    for _, sql in migration_files():
        assert "${" not in render(sql, settings)


def test_history_triggers_are_installed(empty_db_url, settings):
    """Given a migrated database, then memories carries the enabled AFTER UPDATE and AFTER
    DELETE history triggers, calling memory_history_capture, and the AFTER INSERT trigger
    of the event outbox."""
    migrate(empty_db_url, settings)
    rows = query(empty_db_url, """
        SELECT t.tgname, t.tgenabled, p.proname, pg_get_triggerdef(t.oid) AS def
        FROM pg_trigger t JOIN pg_proc p ON p.oid = t.tgfoid
        WHERE t.tgrelid = 'memories'::regclass AND NOT t.tgisinternal ORDER BY t.tgname""")
    assert [(r["tgname"], r["tgenabled"], r["proname"]) for r in rows] == [
        ("memories_event_insert", "O", "memory_event_insert"),
        ("memories_evidence_changed", "O", "memories_evidence_changed"),
        ("memories_evidence_deleted", "O", "memories_evidence_cascade"),
        ("memories_evidence_retired", "O", "memories_evidence_cascade"),
        ("memories_fts", "O", "memories_fts"),
        ("memories_history_delete", "O", "memory_history_capture"),
        ("memories_history_update", "O", "memory_history_capture"),
    ]
    assert "AFTER INSERT" in rows[0]["def"]  # the outbox's births (0025)
    del rows[0]
    changed, fts, rows = rows[0], rows[3], rows[1:3] + rows[4:]
    history = rows[2:]
    # fts (0022): computed from content and context on every write of either, or of fts itself
    assert "BEFORE INSERT OR UPDATE OF content, context, fts" in fts["def"]
    assert "AFTER DELETE" in history[0]["def"] and "AFTER UPDATE" in history[1]["def"]
    assert "old.* IS DISTINCT FROM new.*" in history[1]["def"]
    # The evidence cascade (0019): every delete, and every change of status to superseded or
    # rejected, whichever statement makes it.
    assert "AFTER DELETE" in rows[0]["def"]
    assert "AFTER UPDATE OF status" in rows[1]["def"]
    assert "'superseded'" in rows[1]["def"] and "'rejected'" in rows[1]["def"]
    # ... and (0020) every change of a live memory's value.
    assert "AFTER UPDATE OF value_hash" in changed["def"]
    assert "old.value_hash IS DISTINCT FROM new.value_hash" in changed["def"]


# --------------------------------------------------------------------------------------
# constraints fire by name
# --------------------------------------------------------------------------------------


@pytest.fixture
def migrated(empty_db_url, settings):
    """A migrated database with one tenant; yields (url, tenant id)."""
    migrate(empty_db_url, settings)
    [row] = query(empty_db_url, "INSERT INTO tenants (name) VALUES ('acme') RETURNING id")
    return empty_db_url, row["id"]


_MEMORY = {
    "path": "users.alice", "content": "I prefer PostgreSQL", "canonical": "i prefer postgresql",
    "value_hash": b"\x01" * 32,
}


def insert_memory(url: str, tenant_id, **overrides) -> dict:
    cols = {**_MEMORY, **overrides}
    exprs = [f"%({c})s" if not isinstance(v, Raw) else v.sql for c, v in cols.items()]
    params = {c: v for c, v in cols.items() if not isinstance(v, Raw)} | {"tenant_id": tenant_id}
    return query(url, f"INSERT INTO memories (tenant_id, {', '.join(cols)})"
                      f" VALUES (%(tenant_id)s, {', '.join(exprs)}) RETURNING id", params)[0]


class Raw:
    def __init__(self, sql: str) -> None:
        self.sql = sql


VIOLATIONS = {
    "empty content": ({"content": "   "}, "memories_content_check"),
    "meta not an object": ({"meta": Raw("'[1, 2]'::jsonb")}, "memories_meta_check"),
    "evidence not an array": ({"evidence": Raw("'{}'::jsonb")}, "memories_evidence_check"),
    "empty valid range": ({"valid": Raw("tstzrange(now(), now())")}, "memories_valid_check"),
    "unbounded valid start": ({"valid": Raw("tstzrange(NULL, now())")}, "memories_valid_check"),
    "root path": ({"path": ""}, "memories_path_check"),
    "importance above 1": ({"importance": 1.5}, "memories_importance_check"),
    "short term without expiry": ({"tier": "short_term"}, "memories_short_term_check"),
    "embedding without model": (
        {"embedding": Raw("array_fill(0.1, ARRAY[384])::vector")}, "memories_embedding_model_check"),
}


def test_a_valid_memory_row_is_accepted(migrated):
    """Given a migrated database, when the base row the violation cases start from is
    inserted, then it is accepted (the control for the constraint cases)."""
    url, tenant_id = migrated
    assert insert_memory(url, tenant_id)["id"]
    assert insert_memory(url, tenant_id, valid=Raw("tstzrange(now() - interval '1 day', now())"),
                         embedding=Raw("array_fill(0.1, ARRAY[384])::vector"),
                         embedding_model="hash", tier="short_term",
                         expires_at=Raw("now() + interval '1 day'"),
                         value_hash=Raw("sha256('second'::bytea)"))["id"]


@pytest.mark.parametrize("second, index", [
    ({}, "memories_active_value_key"),
    ({"value_hash": Raw("sha256('other'::bytea)"), "slot": "user.editor"}, "memories_active_slot_key"),
])
def test_one_active_holder_is_guarded_by_the_schema(migrated, second, index):
    """Given an active memory (with a slot), when a second active one with the same value
    hash, or the same slot, is inserted in its path, then the unique index refuses it; the
    same row as superseded, or in another path, is accepted (the controls)."""
    url, tenant_id = migrated
    insert_memory(url, tenant_id, slot="user.editor")
    with pytest.raises(pg_errors.UniqueViolation) as exc:
        insert_memory(url, tenant_id, **second)
    assert exc.value.diag.constraint_name == index
    assert insert_memory(url, tenant_id, **second, status="superseded")["id"]
    assert insert_memory(url, tenant_id, **second, path="users.bob")["id"]


@pytest.mark.parametrize("case", list(VIOLATIONS))
def test_memory_constraints_fire_by_name(migrated, case):
    """Given a migrated database, when a memory row breaking one rule is inserted in SQL, then
    the named CHECK constraint refuses it (names are what translate_errors maps)."""
    url, tenant_id = migrated
    overrides, constraint = VIOLATIONS[case]
    with pytest.raises(pg_errors.CheckViolation) as exc:
        insert_memory(url, tenant_id, **overrides)
    assert exc.value.diag.constraint_name == constraint


def test_enum_and_dimension_are_enforced(migrated):
    """Given a migrated database, when a memory gets an unknown status or an embedding of the
    wrong dimension, then PostgreSQL refuses it (the enum and vector(384) types)."""
    url, tenant_id = migrated
    with pytest.raises(pg_errors.InvalidTextRepresentation) as exc:
        insert_memory(url, tenant_id, status="deleted")
    assert "memory_status" in exc.value.diag.message_primary
    with pytest.raises(pg_errors.DataException) as exc:
        insert_memory(url, tenant_id, embedding=Raw("array_fill(0.1, ARRAY[3])::vector"),
                      embedding_model="hash")
    assert "384" in str(exc.value)
    assert insert_memory(url, tenant_id, status="superseded")["id"]  # control


def test_other_tables_constraints_fire_by_name(migrated):
    """Given a migrated database, when a bad tenant name, an unknown audit action and a
    duplicate audit seq are inserted, then the named constraints refuse them."""
    url, tenant_id = migrated
    with pytest.raises(pg_errors.CheckViolation) as exc:
        query(url, "INSERT INTO tenants (name) VALUES ('bad name!')")
    assert exc.value.diag.constraint_name == "tenants_name_check"
    with pytest.raises(pg_errors.UniqueViolation) as exc:
        query(url, "INSERT INTO tenants (name) VALUES ('acme')")
    assert exc.value.diag.constraint_name == "tenants_name_key"
    audit = ("INSERT INTO audit_log (tenant_id, seq, at, action, surface, operation, outcome,"
             " prev_hash, row_hash) VALUES (%s, 1, now(), %s, 'http', 'x', 'ok', '\\x00', '\\x00')")
    with pytest.raises(pg_errors.CheckViolation) as exc:
        query(url, audit, (tenant_id, "erase"))
    assert exc.value.diag.constraint_name == "audit_log_action_check"
    query(url, audit, (tenant_id, "read"))  # control
    with pytest.raises(pg_errors.UniqueViolation) as exc:
        query(url, audit, (tenant_id, "read"))
    assert exc.value.diag.constraint_name == "audit_log_pkey"


# --------------------------------------------------------------------------------------
# idempotent and safe under concurrency
# --------------------------------------------------------------------------------------


def test_rerunning_migrate_applies_nothing(empty_db_url, settings):
    """Given a migrated database, when migrate runs again, then it applies nothing and each
    migration stays recorded once (and seeded rows are not duplicated)."""
    assert migrate(empty_db_url, settings) == names()
    assert migrate(empty_db_url, settings) == []
    assert migrate(empty_db_url, settings) == []
    rows = query(empty_db_url, "SELECT name FROM schema_migrations ORDER BY name")
    assert [r["name"] for r in rows] == names()
    assert query(empty_db_url, "SELECT count(*) AS n FROM strata_meta")[0]["n"] == 1


def test_concurrent_migrates_apply_each_migration_once(empty_db_url, settings):
    """Given an empty database, when four migrate() calls start at the same moment, then all
    succeed, each migration is applied by exactly one of them, and recorded once."""
    start = threading.Barrier(4)
    results: list[list[str]] = []
    errors: list[BaseException] = []

    def run():
        try:
            start.wait()
            results.append(migrate(empty_db_url, settings))
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=run) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert errors == []
    assert len(results) == 4
    assert sorted(n for r in results for n in r) == names()
    rows = query(empty_db_url, "SELECT name, count(*) AS n FROM schema_migrations GROUP BY name")
    assert sorted(r["name"] for r in rows) == names() and {r["n"] for r in rows} == {1}
    assert column_type(empty_db_url, "memories", "embedding") == "vector(384)"


# --------------------------------------------------------------------------------------
# check_schema
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("row_factory", [None, dict_row], ids=["tuple_rows", "dict_rows"])
def test_check_schema_refuses_a_dimension_mismatch(empty_db_url, settings, row_factory):
    """Given a database migrated at 384 dimensions, when check_schema runs with settings of
    64, then it raises naming `strata reindex`; with matching settings (control) it passes."""
    migrate(empty_db_url, settings)
    kw = {"row_factory": row_factory} if row_factory else {}
    with psycopg.connect(empty_db_url, autocommit=True, **kw) as conn:
        check_schema(conn, settings)
        with pytest.raises(RuntimeError, match="strata reindex") as exc:
            check_schema(conn, Settings(embedding_dim=64, home=Path("/nonexistent-strata-home")))
    assert "384" in str(exc.value) and "64" in str(exc.value)


# --------------------------------------------------------------------------------------
# nothing newer than PostgreSQL 16 (Aurora)
# --------------------------------------------------------------------------------------

NEWER_THAN_16 = {
    "uuidv7()/uuidv4() (18)": re.compile(r"\buuidv[47]\s*\(", re.I),
    "MERGE ... RETURNING (17)": re.compile(r"\bMERGE\s+INTO\b[^;]*\bRETURNING\b", re.I),
    "SQL/JSON query functions (17)": re.compile(r"\bJSON_(TABLE|QUERY|VALUE|EXISTS)\s*\(", re.I),
    "virtual generated column (18)": re.compile(r"\bVIRTUAL\b", re.I),
    "temporal keys (18)": re.compile(r"\bWITHOUT\s+OVERLAPS\b|\bPERIOD\s+\w+\s*\)", re.I),
    "OLD/NEW in RETURNING (18)": re.compile(r"\bRETURNING\b[^;]*\b(OLD|NEW)\s*\.", re.I),
    "NOT ENFORCED constraints (18)": re.compile(r"\bNOT\s+ENFORCED\b", re.I),
    "casefold()/array_sort()/array_reverse() (18)": re.compile(
        r"\b(casefold|array_sort|array_reverse)\s*\(", re.I),
    "COPY ON_ERROR (17)": re.compile(r"\bON_ERROR\b", re.I),
}


def _strip_comments(sql: str) -> str:
    return re.sub(r"--[^\n]*", "", sql)


def _unstored_generated_columns(sql: str) -> list[str]:
    """Expression columns without STORED: PostgreSQL 18 makes them virtual, 16 rejects them."""
    found = []
    for m in re.finditer(r"GENERATED\s+ALWAYS\s+AS\s*\(", sql, re.I):
        depth, i = 1, m.end()
        while depth and i < len(sql):
            depth += {"(": 1, ")": -1}.get(sql[i], 0)
            i += 1
        if not re.match(r"\s*STORED\b", sql[i:], re.I):
            found.append(sql[m.start():i])
    return found


def newer_than_16(sql: str) -> list[str]:
    sql = _strip_comments(sql)
    hits = [name for name, pattern in NEWER_THAN_16.items() if pattern.search(sql)]
    return hits + [f"generated column not STORED: {g}" for g in _unstored_generated_columns(sql)]


def test_the_scanner_flags_post_16_sql():
    """Given snippets using PostgreSQL 17/18 features, the scanner flags each, and leaves
    16-compatible forms (stored generated columns, identity, RETURNING) alone."""
    bad = [
        "CREATE TABLE t (id uuid DEFAULT uuidv7());",
        "MERGE INTO t USING s ON t.id = s.id WHEN MATCHED THEN DELETE RETURNING t.id;",
        "CREATE TABLE t (a int, b int GENERATED ALWAYS AS (a * (a + 1)));",
        "CREATE TABLE t (a int, b int GENERATED ALWAYS AS (a + 1) VIRTUAL);",
        "UPDATE t SET a = 1 RETURNING old.a, new.a;",
        "SELECT * FROM JSON_TABLE(j, '$[*]' COLUMNS (a int PATH '$.a'));",
        "ALTER TABLE t ADD PRIMARY KEY (id, valid WITHOUT OVERLAPS);",
    ]
    for snippet in bad:
        assert newer_than_16(snippet), snippet
    good = ("CREATE TABLE t (a text, f tsvector GENERATED ALWAYS AS (to_tsvector('english', a)) STORED,"
            " id bigint GENERATED ALWAYS AS IDENTITY);"
            " INSERT INTO t (a) VALUES ('x') RETURNING id; -- uuidv7() in a comment is fine")
    assert newer_than_16(good) == []


@pytest.mark.parametrize("name", names())
def test_migration_sql_uses_nothing_newer_than_postgres_16(name):
    """Given a migration file, when scanned, then it uses no PostgreSQL 17/18-only feature."""
    sql = dict(migration_files())[name]
    assert sql.strip()
    assert newer_than_16(sql) == []


# --------------------------------------------------------------------------------------
# the history trigger records why a row changed
# --------------------------------------------------------------------------------------


def test_history_trigger_records_cause_actor_and_operation_id(db):
    """Given a memory, when it is updated inside db.transaction(cause, actor, operation_id),
    then the history row holds the prior state with those three values; a no-op update writes
    nothing; a later update on the same session outside such a transaction records none (SET
    LOCAL did not leak); a delete is recorded as 'delete'."""
    one = Database(db.url, max_size=1)  # one session, so a leaked setting would show
    try:
        with one.transaction() as cur:
            tenant = cur.execute("INSERT INTO tenants (name) VALUES ('acme') RETURNING id").fetchone()["id"]
            mid = cur.execute(
                "INSERT INTO memories (tenant_id, path, content, canonical, value_hash)"
                " VALUES (%s, 'users.alice', 'I prefer PostgreSQL', 'i prefer postgresql', '\\x01')"
                " RETURNING id", (tenant,)).fetchone()["id"]
        op = uuid.uuid4()
        with one.transaction(cause="memory.update", actor="principal:p1", operation_id=op) as cur:
            cur.execute("UPDATE memories SET content = 'I prefer MySQL', version = 2 WHERE id = %s",
                        (mid,))
        with one.transaction(cause="noop", actor="x") as cur:
            cur.execute("UPDATE memories SET content = content WHERE id = %s", (mid,))
        with one.connection() as conn:
            conn.execute("UPDATE memories SET importance = 0.9, version = 3 WHERE id = %s", (mid,))
        with one.transaction(cause="memory.delete", actor="principal:p2") as cur:
            cur.execute("DELETE FROM memories WHERE id = %s", (mid,))
        with one.connection() as conn:
            rows = conn.execute(
                "SELECT version, operation, cause, actor, operation_id, row_data FROM memory_history"
                " WHERE memory_id = %s ORDER BY id", (mid,)).fetchall()
    finally:
        one.close()
    assert [(r["version"], r["operation"], r["cause"], r["actor"]) for r in rows] == [
        (1, "update", "memory.update", "principal:p1"),
        (2, "update", None, None),
        (3, "delete", "memory.delete", "principal:p2"),
    ]
    assert rows[0]["operation_id"] == op
    assert rows[1]["operation_id"] is None
    assert rows[2]["operation_id"] is not None and rows[2]["operation_id"] != op
    assert rows[0]["row_data"]["content"] == "I prefer PostgreSQL"  # the prior state
    assert rows[2]["row_data"]["content"] == "I prefer MySQL"
    assert "embedding" not in rows[0]["row_data"] and "fts" not in rows[0]["row_data"]
    assert rows[0]["row_data"]["id"] == str(mid)


def migrate_before(url: str, settings, first_pending: str) -> None:
    """Apply the migrations that sort before ``first_pending``, as migrate would have."""
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("CREATE TABLE schema_migrations ("
                     " name text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())")
        for name, sql in migration_files():
            if name >= first_pending:
                break
            with conn.transaction():
                conn.execute(render(sql, settings))
                conn.execute("INSERT INTO schema_migrations (name) VALUES (%s)", (name,))


def test_0009_repairs_races_of_earlier_writers_before_guarding(empty_db_url, settings):
    """Given a store migrated to 0008 in which racing writers left two active copies of one
    value and two active holders of one slot in a path (and one holder elsewhere), when the
    remaining migrations run, then one of each stays active (the copy stated last), the
    others are superseded with a SUPERSEDES edge from the one kept and a history row caused
    by the migration, and the memory in the other path is untouched (the control)."""
    migrate_before(empty_db_url, settings, "0009")
    tenant = query(empty_db_url, "INSERT INTO tenants (name) VALUES ('acme') RETURNING id")[0]["id"]
    early = Raw("now() - interval '2 days'")
    old_copy = insert_memory(empty_db_url, tenant, recorded_at=early)["id"]
    new_copy = insert_memory(empty_db_url, tenant)["id"]
    old_holder = insert_memory(empty_db_url, tenant, value_hash=Raw("sha256('vim'::bytea)"),
                               slot="user.editor", valid=Raw("tstzrange(now() - interval '3 days', NULL)"))["id"]
    new_holder = insert_memory(empty_db_url, tenant, value_hash=Raw("sha256('emacs'::bytea)"),
                               slot="user.editor")["id"]
    elsewhere = insert_memory(empty_db_url, tenant, path="users.bob")["id"]

    assert "0009_one_active_holder.sql" in migrate(empty_db_url, settings)

    status = {r["id"]: r["status"] for r in query(empty_db_url, "SELECT id, status::text FROM memories")}
    assert status == {old_copy: "superseded", new_copy: "active", old_holder: "superseded",
                      new_holder: "active", elsewhere: "active"}
    edges = {(r["source_id"], r["target_id"]) for r in query(
        empty_db_url, "SELECT source_id, target_id FROM memory_relationships WHERE type = 'SUPERSEDES'")}
    assert edges == {(new_copy, old_copy), (new_holder, old_holder)}
    causes = {r["memory_id"]: r["cause"] for r in query(
        empty_db_url, "SELECT memory_id, cause FROM memory_history")}
    assert causes == {old_copy: "migration.0009_one_active_holder",
                      old_holder: "migration.0009_one_active_holder"}


def test_0021_moves_access_counts_out_of_memories(empty_db_url, settings):
    """Given a store migrated to 0020 with a memory search returned 3 times, one returned
    but never timed (an older writer), and one never returned (the control), when the
    remaining migrations run, then memory_access holds the first two with their counts
    (the untimed one at its updated_at) and nothing for the third; history snapshots leave
    the old columns out from then on (the content stays in: the control), and deleting a
    memory deletes its access row. The columns themselves stay until a later release (code
    deployed before the migration still reads them while the deploy switches over)."""
    migrate_before(empty_db_url, settings, "0021")
    tenant = query(empty_db_url, "INSERT INTO tenants (name) VALUES ('acme') RETURNING id")[0]["id"]
    at = datetime(2026, 5, 1, tzinfo=UTC)
    used = insert_memory(empty_db_url, tenant, access_count=3, last_accessed_at=at)["id"]
    untimed = insert_memory(empty_db_url, tenant, path="users.bob", access_count=1)["id"]
    unused = insert_memory(empty_db_url, tenant, path="users.carol")["id"]

    assert "0021_access_apart.sql" in migrate(empty_db_url, settings)

    rows = {r["memory_id"]: r for r in query(
        empty_db_url, "SELECT memory_id, access_count, last_accessed_at FROM memory_access")}
    updated = query(empty_db_url, "SELECT updated_at FROM memories WHERE id = %(id)s",
                    {"id": untimed})[0]["updated_at"]
    assert {m: (r["access_count"], r["last_accessed_at"]) for m, r in rows.items()} == {
        used: (3, at), untimed: (1, updated)}
    assert unused not in rows
    query(empty_db_url, "UPDATE memories SET importance = 0.9 WHERE id = %(id)s RETURNING id",
          {"id": unused})
    [snapshot] = query(empty_db_url, "SELECT row_data FROM memory_history WHERE memory_id = %(id)s",
                       {"id": unused})
    assert "access_count" not in snapshot["row_data"]
    assert "last_accessed_at" not in snapshot["row_data"] and "content" in snapshot["row_data"]
    query(empty_db_url, "DELETE FROM memories WHERE id = %(id)s RETURNING id", {"id": used})
    assert [r["memory_id"] for r in query(
        empty_db_url, "SELECT memory_id FROM memory_access")] == [untimed]
