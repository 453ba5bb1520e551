"""The evidence cascade under random sequences of every entry point that retires a memory.

A hypothesis ``RuleBasedStateMachine`` drives one fresh tenant per example through the real
HTTP app (TestClient over the real database; reflections by the scripted model over the real
openai client): statements with and without slots (a new value of a slot supersedes the old
one), reflections over a path, consolidations (with the caller's content), PATCHes that make
a memory take a slot (superseding its holder), deletes, deletes by path, and forgets.

After every step, each invariant is checked against the database (one function per
invariant, returning the violations; the control tests below prove each can fail):

1. ``unsupported_derived``: no active or candidate derived memory is left with none of its
   evidence holding (a DERIVED_FROM target active; a CONSOLIDATES target active or
   superseded).
2. ``active_on_retired_evidence``: no *active* derived memory rests on evidence that was
   retired (a DERIVED_FROM target that is not active, a CONSOLIDATES target that is gone).
3. ``forgotten_carriers``: nothing made from a forgotten memory survives: no live row, no
   history row that still has content.
4. ``active_on_changed_evidence``: no *active* derived memory rests on evidence whose value
   changed after it was drawn (an edit of the evidence's content: migration 0020 flags it).
"""

from __future__ import annotations

import uuid

import pytest
from fastapi.testclient import TestClient
from hypothesis import HealthCheck
from hypothesis import settings as hsettings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule, \
    run_state_machine_as_test

from strata.api.app import create_app
from strata.auth import create_tenant

ROOT = "users.alice"
PATHS = (ROOT, f"{ROOT}.work")
SLOTS = ("editor", "shell", "drink")
VALUES = ("vim", "emacs", "tea", "coffee")
WORDS = ("hiking", "chess", "jazz", "baking", "rowing")

_HOLDS = """(
    (r.type = 'DERIVED_FROM' AND e.status = 'active')
    OR (r.type = 'CONSOLIDATES' AND e.status IN ('active', 'superseded')))"""


def unsupported_derived(conn, tenant_id) -> list:
    return [r["id"] for r in conn.execute(
        f"""
        SELECT m.id FROM memories m
        WHERE m.tenant_id = %(t)s AND m.status IN ('active', 'candidate')
          AND EXISTS (SELECT 1 FROM memory_relationships r WHERE r.source_id = m.id
                      AND r.type IN ('DERIVED_FROM', 'CONSOLIDATES'))
          AND NOT EXISTS (SELECT 1 FROM memory_relationships r
                          JOIN memories e ON e.id = r.target_id
                          WHERE r.source_id = m.id AND r.type IN ('DERIVED_FROM', 'CONSOLIDATES')
                            AND {_HOLDS})
        """, {"t": tenant_id}).fetchall()]


def active_on_retired_evidence(conn, tenant_id) -> list:
    return [r["id"] for r in conn.execute(
        """
        SELECT DISTINCT m.id FROM memories m
        JOIN memory_relationships r ON r.source_id = m.id
        LEFT JOIN memories e ON e.id = r.target_id
        WHERE m.tenant_id = %(t)s AND m.status = 'active'
          AND ((r.type = 'DERIVED_FROM' AND e.status IS DISTINCT FROM 'active')
               OR (r.type = 'CONSOLIDATES' AND e.id IS NULL))
        """, {"t": tenant_id}).fetchall()]


def forgotten_carriers(conn, tenant_id) -> list:
    """Sources of derivation edges whose target was forgotten (no row, history erased) that
    still have a row, or a history row with content."""
    return [r["id"] for r in conn.execute(
        """
        SELECT DISTINCT r.source_id AS id FROM memory_relationships r
        WHERE r.tenant_id = %(t)s AND r.type IN ('DERIVED_FROM', 'CONSOLIDATES')
          AND NOT EXISTS (SELECT 1 FROM memories e WHERE e.id = r.target_id)
          AND EXISTS (SELECT 1 FROM memory_history h WHERE h.memory_id = r.target_id
                      AND h.erased)
          AND (EXISTS (SELECT 1 FROM memories s WHERE s.id = r.source_id)
               OR EXISTS (SELECT 1 FROM memory_history h WHERE h.memory_id = r.source_id
                          AND h.row_data ? 'content'))
        """, {"t": tenant_id}).fetchall()]


def active_on_changed_evidence(conn, tenant_id) -> list:
    """Active derived memories with an evidence memory whose value hash now differs from the
    one it had when the edge was drawn (its first history row after that, else its row)."""
    return [r["id"] for r in conn.execute(
        """
        SELECT DISTINCT m.id FROM memories m
        JOIN memory_relationships r ON r.source_id = m.id
        JOIN memories e ON e.id = r.target_id
        WHERE m.tenant_id = %(t)s AND m.status = 'active'
          AND r.type IN ('DERIVED_FROM', 'CONSOLIDATES')
          AND coalesce((SELECT h.row_data->>'value_hash' FROM memory_history h
                        WHERE h.tenant_id = e.tenant_id AND h.memory_id = e.id
                          AND h.changed_at >= r.created_at ORDER BY h.id LIMIT 1),
                       '\\x' || encode(e.value_hash, 'hex'))
              <> '\\x' || encode(e.value_hash, 'hex')
        """, {"t": tenant_id}).fetchall()]


CHECKS = (unsupported_derived, active_on_retired_evidence, forgotten_carriers,
          active_on_changed_evidence)


class CascadeMachine(RuleBasedStateMachine):
    def __init__(self, db, client, seen: dict[str, int]) -> None:
        super().__init__()
        self.db, self.client, self.seen = db, client, seen
        self.n = 0

    def saw(self, what: str) -> None:
        self.seen[what] = self.seen.get(what, 0) + 1

    @initialize()
    def tenant(self) -> None:
        tenant, key = create_tenant(self.db, f"ec{uuid.uuid4().hex[:12]}")
        self.tenant_id = tenant.id
        self.headers = {"Authorization": f"Bearer {key.key}"}
        # Something to reflect on from the first step (a reflection needs two memories).
        for word in WORDS[:2]:
            self.state_a_liking(word, ROOT)

    # -- helpers --------------------------------------------------------------------------

    def send(self, method: str, url: str, **kw):
        r = self.client.request(method, url, headers=self.headers, **kw)
        assert r.status_code < 500, (method, url, r.status_code, r.text)
        return r

    def ids(self, where: str = "status = 'active'") -> list[uuid.UUID]:
        with self.db.connection() as conn:
            return [r["id"] for r in conn.execute(
                f"SELECT id FROM memories WHERE tenant_id = %s AND {where} ORDER BY created_at, id",
                (self.tenant_id,)).fetchall()]

    def pick(self, i: int, where: str = "status = 'active'") -> uuid.UUID | None:
        ids = self.ids(where)
        return ids[i % len(ids)] if ids else None

    # -- rules ----------------------------------------------------------------------------

    @rule(slot=st.sampled_from(SLOTS), value=st.sampled_from(VALUES),
          path=st.sampled_from(PATHS))
    def state_a_slot(self, slot, value, path) -> None:
        self.send("POST", "/v1/memories", json={"memories": [{
            "content": f"My {slot} is {value}", "path": path, "slot": f"user.{slot}",
            "value": value}]})

    @rule(word=st.sampled_from(WORDS), path=st.sampled_from(PATHS))
    def state_a_liking(self, word, path) -> None:
        self.send("POST", "/v1/memories", json={"memories": [{
            "content": f"I enjoy {word}", "path": path, "kind": "preference"}]})

    @rule(path=st.sampled_from(PATHS))
    def reflect(self, path) -> None:
        r = self.send("POST", "/v1/reflect", json={"path": path})
        assert r.status_code in (200, 409), r.text
        if r.status_code == 200:
            self.saw("reflected")

    @rule(i=st.integers(0, 50), j=st.integers(0, 50))
    def consolidate(self, i, j) -> None:
        a, b = self.pick(i), self.pick(j)
        if a is None or a == b:
            return
        self.n += 1
        r = self.send("POST", "/v1/consolidate", json={
            "ids": [str(a), str(b)], "content": f"Summary number {self.n}", "path": ROOT})
        assert r.status_code in (200, 409), r.text
        if r.status_code == 200:
            self.saw("consolidated")

    def patch(self, one: uuid.UUID, body: dict) -> None:
        version = self.send("GET", f"/v1/memories/{one}").json()["version"]
        r = self.send("PATCH", f"/v1/memories/{one}", json={**body, "expected_version": version})
        assert r.status_code in (200, 409), r.text  # 409: the new value is tombstoned here
        if r.status_code == 200:
            self.saw("patched")

    @rule(i=st.integers(0, 50), slot=st.sampled_from(SLOTS), value=st.sampled_from(VALUES))
    def patch_takes_a_slot(self, i, slot, value) -> None:
        one = self.pick(i, "status = 'active' AND origin = 'user_stated'")
        if one is not None:
            self.patch(one, {"content": f"Now my {slot} is {value}", "slot": f"user.{slot}",
                             "value": value})

    @rule(i=st.integers(0, 50), word=st.sampled_from(WORDS))
    def edit_content(self, i, word) -> None:
        """An edit of what a memory says (no slot, no status change): a new value in place."""
        one = self.pick(i, "status = 'active' AND origin = 'user_stated'")
        if one is not None:
            self.n += 1
            self.patch(one, {"content": f"I enjoy {word} on day {self.n}"})

    @rule(i=st.integers(0, 50))
    def delete(self, i) -> None:
        one = self.pick(i, "true")
        if one is not None:
            self.send("DELETE", f"/v1/memories/{one}")

    @rule(i=st.integers(0, 50))
    def forget(self, i) -> None:
        one = self.pick(i, "true")
        if one is not None:
            r = self.send("POST", f"/v1/memories/{one}/forget")
            if r.status_code == 200 and r.json()["also_forgotten"]:
                self.saw("forgot_with_derived")

    @rule()
    def delete_path(self) -> None:
        path = PATHS[1]
        count = self.send("DELETE", "/v1/memories", params={"path": path}).json()["count"]
        self.send("DELETE", "/v1/memories", params={"path": path, "expected_count": count})

    # -- invariants -------------------------------------------------------------------------

    @invariant()
    def cascade_holds(self) -> None:
        if not hasattr(self, "tenant_id"):
            return
        with self.db.connection() as conn:
            for check in CHECKS:
                assert check(conn, self.tenant_id) == [], check.__name__
            for row in conn.execute(
                    "SELECT row_data->>'status' AS was, count(*) AS n FROM memory_history"
                    " WHERE tenant_id = %s AND cause = 'evidence_retired' GROUP BY 1",
                    (self.tenant_id,)).fetchall():
                self.seen[f"cascade_from_{row['was']}"] = row["n"]
            flagged = conn.execute(
                "SELECT count(*) AS n FROM memory_history WHERE tenant_id = %s"
                " AND cause = 'evidence_changed'", (self.tenant_id,)).fetchone()["n"]
            if flagged:
                self.seen["flagged_on_change"] = self.seen.get("flagged_on_change", 0) + flagged


@pytest.fixture
def model_client(db, embedder, settings, fake_llm):
    fake_llm.fallback = lambda rec: {"content": f"A pattern over {len(rec.shown_ids())} things",
                                     "evidence_ids": rec.shown_ids()}
    app = create_app(db=db, embedder=embedder, settings=fake_llm.settings(settings))
    with TestClient(app, raise_server_exceptions=False) as c:
        yield c


@pytest.mark.timeout(600)
def test_cascade_holds_under_random_sequences(db, model_client):
    """Given a fresh tenant per example
    When a random sequence of statements, reflections, consolidations, slot-taking edits,
    content edits, deletes, deletes by path and forgets runs through the real HTTP app
    Then no answer is a 5xx, and after every step the four cascade invariants hold."""
    seen: dict[str, int] = {}
    run_state_machine_as_test(lambda: CascadeMachine(db, model_client, seen), settings=hsettings(
        max_examples=25, stateful_step_count=20, deadline=None, derandomize=True,
        database=None, suppress_health_check=list(HealthCheck)))
    # Control: the sequences really made derived memories and really retired their evidence
    # (an active one retired or flagged, a flagged one retired), so the invariants were tested.
    for what in ("reflected", "consolidated", "forgot_with_derived", "cascade_from_active",
                 "cascade_from_candidate", "patched", "flagged_on_change"):
        assert seen.get(what, 0) > 0, (what, seen)


# --------------------------------------------------------------------------------------
# Control: every check reports what it is there to catch, and the cascade is what keeps it
# quiet: the same retirement with the trigger off leaves a violation.
# --------------------------------------------------------------------------------------


def _reflection(client, headers, fake_llm) -> tuple[list[str], str]:
    ids = [x["id"] for x in client.post("/v1/memories", headers=headers, json={"memories": [
        {"content": "My editor is vim", "path": ROOT, "slot": "user.editor", "value": "vim"},
        {"content": "I enjoy chess", "path": ROOT}]}).json()["results"]]
    fake_llm.script(lambda rec: {"content": "A pattern", "evidence_ids": rec.shown_ids()})
    r = client.post("/v1/reflect", headers=headers, json={"path": ROOT})
    assert r.status_code == 200, r.text
    return ids, r.json()["memory"]["id"]


@pytest.mark.parametrize("trigger_on", [True, False])
def test_control_a_superseded_evidence_without_the_cascade(db, model_client, tenant, fake_llm,
                                                           trigger_on):
    headers = {"Authorization": f"Bearer {tenant.key}"}
    _ids, derived = _reflection(model_client, headers, fake_llm)
    if not trigger_on:
        with db.connection() as conn:
            conn.execute("ALTER TABLE memories DISABLE TRIGGER memories_evidence_retired")
    model_client.post("/v1/memories", headers=headers, json={"memories": [
        {"content": "My editor is emacs", "path": ROOT, "slot": "user.editor",
         "value": "emacs"}]})
    with db.connection() as conn:
        found = active_on_retired_evidence(conn, tenant.tenant_id)
        assert unsupported_derived(conn, tenant.tenant_id) == []  # chess still holds
    assert found == ([] if trigger_on else [uuid.UUID(derived)])


def test_control_unsupported_and_forgotten_carriers_are_reported(db, model_client, tenant,
                                                                 fake_llm):
    headers = {"Authorization": f"Bearer {tenant.key}"}
    ids, derived = _reflection(model_client, headers, fake_llm)
    with db.connection() as conn:
        assert unsupported_derived(conn, tenant.tenant_id) == []  # control
        conn.execute("ALTER TABLE memories DISABLE TRIGGER memories_evidence_retired")
        conn.execute("UPDATE memories SET status = 'rejected' WHERE id = ANY(%s)",
                     ([uuid.UUID(i) for i in ids],))
        assert unsupported_derived(conn, tenant.tenant_id) == [uuid.UUID(derived)]
        # A forgotten memory (no row, history erased) with a live memory made from it.
        conn.execute("DELETE FROM memories WHERE id = %s", (uuid.UUID(ids[0]),))
        conn.execute("UPDATE memory_history SET erased = true WHERE memory_id = %s",
                     (uuid.UUID(ids[0]),))
        assert forgotten_carriers(conn, tenant.tenant_id) == [uuid.UUID(derived)]


def test_a_rejection_retires_what_rests_on_it(db, model_client, tenant, fake_llm):
    """Given a reflection over two memories
    When both are rejected (a status change, whichever entry point makes it)
    Then the first flags the reflection for review and the second retires it, in the
    transaction of the rejection."""
    headers = {"Authorization": f"Bearer {tenant.key}"}
    ids, derived = _reflection(model_client, headers, fake_llm)
    status = "SELECT status::text AS s FROM memories WHERE id = %s"
    with db.transaction(cause="test.reject") as cur:
        cur.execute("UPDATE memories SET status = 'rejected' WHERE id = %s", (uuid.UUID(ids[0]),))
        assert cur.execute(status, (uuid.UUID(derived),)).fetchone()["s"] == "candidate"
        cur.execute("UPDATE memories SET status = 'rejected' WHERE id = %s", (uuid.UUID(ids[1]),))
        assert cur.execute(status, (uuid.UUID(derived),)).fetchone()["s"] == "superseded"
        causes = [r["cause"] for r in cur.execute(
            "SELECT cause FROM memory_history WHERE memory_id = %s ORDER BY id",
            (uuid.UUID(derived),)).fetchall()]
        assert causes == ["evidence_retired", "evidence_retired"]
        # The rejection's own history row keeps the transaction's cause.
        assert cur.execute("SELECT cause FROM memory_history WHERE memory_id = %s",
                           (uuid.UUID(ids[1]),)).fetchone()["cause"] == "test.reject"


@pytest.mark.parametrize("trigger_on", [True, False])
def test_an_edit_of_evidence_flags_what_rests_on_it(db, model_client, tenant, fake_llm,
                                                    trigger_on):
    """Given a reflection over two memories
    When one of them is edited to say something else (PATCH content), and, separately, only
    its importance is changed
    Then the value edit flags the reflection for review (candidate, cause evidence_changed)
    and the importance change flags nothing; with the trigger off the reflection stays active
    on changed evidence, and active_on_changed_evidence reports exactly it (control)."""
    headers = {"Authorization": f"Bearer {tenant.key}"}
    ids, derived = _reflection(model_client, headers, fake_llm)
    if not trigger_on:
        with db.connection() as conn:
            conn.execute("ALTER TABLE memories DISABLE TRIGGER memories_evidence_changed")

    def status() -> str:
        return model_client.get(f"/v1/memories/{derived}", headers=headers).json()["status"]

    def patch(one: str, body: dict) -> None:
        v = model_client.get(f"/v1/memories/{one}", headers=headers).json()["version"]
        r = model_client.patch(f"/v1/memories/{one}", headers=headers,
                               json={**body, "expected_version": v})
        assert r.status_code == 200, r.text

    patch(ids[1], {"importance": 0.9})  # the value stays: nothing to review
    assert status() == "active"
    patch(ids[1], {"content": "I enjoy chess on Sundays only"})
    with db.connection() as conn:
        found = active_on_changed_evidence(conn, tenant.tenant_id)
        causes = [r["cause"] for r in conn.execute(
            "SELECT cause FROM memory_history WHERE memory_id = %s ORDER BY id",
            (uuid.UUID(derived),)).fetchall()]
    if trigger_on:
        assert status() == "candidate" and found == [] and causes == ["evidence_changed"]
    else:
        assert status() == "active" and found == [uuid.UUID(derived)] and causes == []
