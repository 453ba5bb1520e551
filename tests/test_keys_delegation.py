"""Delegation that cannot outlive its delegator (issue 14, "Keys").

A key minted through the API belongs to the minter's own principal unless the minter owns
the tenant root, and it records the minting key as its parent. Its effective access is its
own (the holder's grants clamped by its ceiling) intersected with its parent's live
effective access, recursively: a revoked or expired parent, or a disabled delegator, makes
the whole subtree of keys 401; a delegator that loses a grant takes that access away from
every key minted through it. The root owner lists and revokes every key of the tenant; the
operator does the same from the CLI (`strata keys list|revoke`).

Over real HTTP through the app and the real database; every exclusion sits next to its
control.
"""

from __future__ import annotations

import ast
import json
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings as hsettings, strategies as st

from strata.auth import Caller, create_grant, create_principal, create_tenant
from strata.auth.keys import insert_key
from strata.auth.models import CeilingEntry
from support import assert_error, bearer, effective, read, write, write_ok

SRC = Path(__file__).resolve().parents[1] / "src" / "strata"


# --------------------------------------------------------------------------------------
# Helpers
# --------------------------------------------------------------------------------------


def mint(client, by: str, principal_id: str, **body: Any) -> dict:
    r = client.post("/v1/keys", headers=bearer(by), json={"principal_id": principal_id, **body})
    assert r.status_code == 201, r.text
    return r.json()


def listed(client, key: str) -> dict[str, dict]:
    r = client.get("/v1/keys", headers=bearer(key))
    assert r.status_code == 200, r.text
    return {k["id"]: k for k in r.json()["items"]}


def key_count(db) -> int:
    with db.connection() as conn:
        return conn.execute("SELECT count(*) AS n FROM api_keys").fetchone()["n"]


@dataclass
class Org:
    admin: str                     # the tenant's bootstrap key: owner on the root, no parent
    admin_key_id: str
    principals: dict[str, str]     # name -> id (admin included)
    grants: dict[str, str]         # name -> its grant id
    keys: dict[str, str]           # name -> a key minted by the admin over HTTP
    key_ids: dict[str, str]
    m_alice: str
    m_bob: str
    m_shared: str


GRANTS = {
    "lead": ("users.alice", "owner"),  # a subtree owner
    "alice": ("users.alice", "write"),
    "bob": ("users.bob", "write"),
    "ops": ("", "owner"),              # a second root owner
    "ghost": None,                     # a principal with no grant at all
}


@pytest.fixture
def org(client, tenant) -> Org:
    admin = tenant.key
    principals = {"admin": str(tenant.principal_id)}
    grants, keys, key_ids = {}, {}, {}
    for name, grant in GRANTS.items():
        r = client.post("/v1/principals", headers=bearer(admin), json={"name": name})
        assert r.status_code == 201, r.text
        principals[name] = r.json()["id"]
        if grant is not None:
            path, level = grant
            r = client.post("/v1/grants", headers=bearer(admin),
                            json={"principal_id": principals[name], "path": path, "level": level})
            assert r.status_code == 201, r.text
            grants[name] = r.json()["id"]
        k = mint(client, admin, principals[name], name=name)
        keys[name], key_ids[name] = k["key"], k["id"]
    admin_key_id = next(k["id"] for k in listed(client, admin).values() if k["name"] == "admin")
    return Org(admin, admin_key_id, principals, grants, keys, key_ids,
               write_ok(client, admin, "Alice prefers PostgreSQL", "users.alice"),
               write_ok(client, admin, "Bob is on call this week", "users.bob"),
               write_ok(client, admin, "The ops runbook lives in the wiki", "shared.ops"))


# --------------------------------------------------------------------------------------
# Minting: for one's own principal, unless owner on the root; the parent is recorded
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("target", ["admin", "alice"])
def test_subtree_owner_cannot_mint_for_another_principal(target, client, db, org):
    """Given the lead's key (owner on users.alice)
    When it mints a key for the admin principal (owner on the root) or for alice (inside the
    lead's subtree)
    Then 403 forbidden naming principal_id and no key is stored; the lead mints a key for
    itself (201) which works within users.alice only, and the root owner mints the very same
    request for the other principal (201)."""
    before = key_count(db)
    r = client.post("/v1/keys", headers=bearer(org.keys["lead"]),
                    json={"principal_id": org.principals[target]})
    assert_error(r, 403, "forbidden", field="principal_id")
    assert key_count(db) == before

    own = mint(client, org.keys["lead"], org.principals["lead"])
    assert own["principal_id"] == org.principals["lead"]
    assert read(client, own["key"], org.m_alice).status_code == 200
    assert_error(read(client, own["key"], org.m_bob), 404, "not_found")
    root = mint(client, org.admin, org.principals[target])
    assert root["principal_id"] == org.principals[target]


def test_api_minted_key_records_its_parent(client, db, org):
    """Given the bootstrap admin key (minted by the tenant bootstrap) and the lead's key
    (minted by the admin over HTTP)
    When the lead mints a key for itself
    Then the new key's parent_id is the lead's key, the lead's key's parent is the admin key,
    and the bootstrap key has no parent -- in the response, the listing and the row."""
    child = mint(client, org.keys["lead"], org.principals["lead"], name="child")
    assert child["parent_id"] == org.key_ids["lead"]

    keys = listed(client, org.admin)
    assert keys[child["id"]]["parent_id"] == org.key_ids["lead"]
    assert keys[org.key_ids["lead"]]["parent_id"] == org.admin_key_id
    assert keys[org.admin_key_id]["parent_id"] is None
    with db.connection() as conn:
        row = conn.execute("SELECT parent_id FROM api_keys WHERE id = %s", (child["id"],)).fetchone()
    assert str(row["parent_id"]) == org.key_ids["lead"]


# --------------------------------------------------------------------------------------
# A delegated key's access follows its delegator's live access
# --------------------------------------------------------------------------------------


def test_subtree_owners_own_child_key_loses_access_with_the_owners_grant(client, db, org):
    """Given a key the lead minted for itself (no ceiling), which reads and writes users.alice
    When the root owner deletes the lead's grant (DELETE /v1/grants/{id})
    Then the child key still authenticates but reads 404 and writes 403, and its effective
    access is empty; alice's key keeps reading the same memory."""
    child = mint(client, org.keys["lead"], org.principals["lead"])
    assert read(client, child["key"], org.m_alice).status_code == 200
    write_ok(client, child["key"], "Lead's note", "users.alice")
    assert effective(db, child["id"]) == {("users.alice", "owner")}

    r = client.delete(f"/v1/grants/{org.grants['lead']}", headers=bearer(org.admin))
    assert r.status_code == 200, r.text

    assert_error(read(client, child["key"], org.m_alice), 404, "not_found")
    assert_error(write(client, child["key"], "After removal", "users.alice"), 403, "forbidden")
    assert client.get("/v1/memories", headers=bearer(child["key"])).status_code == 200
    assert effective(db, child["id"]) == set()
    assert read(client, org.keys["alice"], org.m_alice).status_code == 200


def test_delegated_key_loses_access_when_its_delegators_grant_is_removed(client, db, org):
    """Given ops (a second root owner) minting a key for alice with no ceiling: it reads and
    writes users.alice (alice's grant)
    When the root owner deletes ops's root grant
    Then the delegated key reads 404 and writes 403 (its effective access is empty) although
    alice's own grant is unchanged; alice's key minted by the admin still reads and writes."""
    delegated = mint(client, org.keys["ops"], org.principals["alice"])
    assert read(client, delegated["key"], org.m_alice).status_code == 200
    write_ok(client, delegated["key"], "Delegated write", "users.alice")
    assert effective(db, delegated["id"]) == {("users.alice", "write")}

    r = client.delete(f"/v1/grants/{org.grants['ops']}", headers=bearer(org.admin))
    assert r.status_code == 200, r.text

    assert_error(read(client, delegated["key"], org.m_alice), 404, "not_found")
    assert_error(write(client, delegated["key"], "After removal", "users.alice"),
                 403, "forbidden")
    assert effective(db, delegated["id"]) == set()
    assert read(client, org.keys["alice"], org.m_alice).status_code == 200
    write_ok(client, org.keys["alice"], "Alice's own key", "users.alice")


def test_revoking_the_parent_kills_children_and_grandchildren(client, db, org):
    """Given a chain admin -> ops key -> ops child -> alice grandchild, all working
    When the root owner revokes the ops key (DELETE /v1/keys/{id})
    Then the child and the grandchild get 401 "API key is revoked or expired" on their next
    request, like the revoked key itself; alice's admin-minted key and the admin key still
    work, and a sibling minted by the admin for ops still works."""
    child = mint(client, org.keys["ops"], org.principals["ops"], name="child")
    grandchild = mint(client, child["key"], org.principals["alice"], name="grandchild")
    sibling = mint(client, org.admin, org.principals["ops"], name="sibling")
    for k in (org.keys["ops"], child["key"], grandchild["key"], sibling["key"]):
        assert read(client, k, org.m_alice).status_code == 200

    r = client.delete(f"/v1/keys/{org.key_ids['ops']}", headers=bearer(org.admin))
    assert r.status_code == 200, r.text

    for k in (org.keys["ops"], child["key"], grandchild["key"]):
        err = assert_error(read(client, k, org.m_alice), 401, "unauthenticated")
        assert err["message"] == "API key is revoked or expired"
        assert_error(write(client, k, "After revocation", "users.alice"), 401, "unauthenticated")
    assert effective(db, grandchild["id"]) == set()
    for k in (sibling["key"], org.keys["alice"], org.admin):
        assert read(client, k, org.m_alice).status_code == 200


def test_expired_parent_kills_its_child(client, db, org):
    """Given ops's key with an expiry and a child it minted (no expiry), both working
    When the parent's expiry passes (expires_at moved into the past in the row)
    Then the child gets 401; a child of an unexpired key of ops keeps working."""
    parent = mint(client, org.admin, org.principals["ops"],
                  expires_at=(datetime.now(UTC) + timedelta(hours=1)).isoformat())
    child = mint(client, parent["key"], org.principals["ops"])
    control = mint(client, org.keys["ops"], org.principals["ops"])
    assert child["expires_at"] is None
    assert read(client, child["key"], org.m_alice).status_code == 200

    with db.transaction() as cur:
        cur.execute("UPDATE api_keys SET expires_at = now() - interval '1 second' WHERE id = %s",
                    (parent["id"],))

    assert_error(read(client, child["key"], org.m_alice), 401, "unauthenticated")
    assert read(client, control["key"], org.m_alice).status_code == 200


def test_disabled_delegator_kills_keys_it_minted_for_others(client, db, org):
    """Given ops minting a key for alice, which works
    When the ops principal is disabled (disabled_at set in the row: there is no route yet)
    Then the delegated key gets 401 although alice is enabled; alice's admin-minted key works."""
    delegated = mint(client, org.keys["ops"], org.principals["alice"])
    assert read(client, delegated["key"], org.m_alice).status_code == 200

    with db.transaction() as cur:
        cur.execute("UPDATE principals SET disabled_at = now() WHERE id = %s",
                    (org.principals["ops"],))

    assert_error(read(client, delegated["key"], org.m_alice), 401, "unauthenticated")
    assert_error(read(client, org.keys["ops"], org.m_alice), 401, "unauthenticated")
    assert read(client, org.keys["alice"], org.m_alice).status_code == 200


def test_a_parent_cycle_yields_no_access_and_401(client, db, org):
    """Given two keys of ops, one minted by the other, both working
    When the rows are tampered into a cycle (each the other's parent)
    Then both answer 401 and have no effective access (no error, no endless recursion); a
    third key of ops outside the cycle still works."""
    a = mint(client, org.keys["ops"], org.principals["ops"])
    b = mint(client, a["key"], org.principals["ops"])
    assert read(client, b["key"], org.m_alice).status_code == 200

    with db.transaction() as cur:
        cur.execute("UPDATE api_keys SET parent_id = %s WHERE id = %s", (b["id"], a["id"]))

    for k in (a, b):
        assert_error(read(client, k["key"], org.m_alice), 401, "unauthenticated")
        assert effective(db, k["id"]) == set()
    assert read(client, org.keys["ops"], org.m_alice).status_code == 200


# --------------------------------------------------------------------------------------
# Listing and revoking: the root owner sees every key
# --------------------------------------------------------------------------------------


def test_root_owner_lists_and_revokes_a_key_of_a_principal_without_grants(client, org):
    """Given a key of ghost, a principal with no grant (it authenticates, with no access)
    When the root owner lists keys and revokes it
    Then it is listed, DELETE answers 200 with revoked_at, and the key then gets 401; the
    lead (owner on users.alice only) neither lists it nor revokes it (404)."""
    ghost = org.key_ids["ghost"]
    assert client.get("/v1/memories", headers=bearer(org.keys["ghost"])).status_code == 200
    assert ghost not in listed(client, org.keys["lead"])
    assert_error(client.delete(f"/v1/keys/{ghost}", headers=bearer(org.keys["lead"])),
                 404, "not_found")

    assert ghost in listed(client, org.admin)
    r = client.delete(f"/v1/keys/{ghost}", headers=bearer(org.admin))
    assert r.status_code == 200, r.text
    assert r.json()["revoked_at"] is not None
    assert_error(client.get("/v1/memories", headers=bearer(org.keys["ghost"])),
                 401, "unauthenticated")
    assert listed(client, org.admin)[ghost]["revoked_at"] is not None


def test_root_owner_lists_every_key_of_the_tenant(client, db, org, tenant, make_tenant):
    """Given every key of the tenant in the database (and another tenant with its own key)
    When the root owner and the second root owner (ops) list keys
    Then each sees exactly the tenant's keys, none of the other tenant's; the other tenant's
    owner sees its own key only."""
    other = make_tenant("other")
    with db.connection() as conn:
        ids = {str(r["id"]) for r in conn.execute(
            "SELECT id FROM api_keys WHERE tenant_id = %s", (tenant.tenant_id,))}
    assert len(ids) == 1 + len(GRANTS)
    assert set(listed(client, org.admin)) == ids
    assert set(listed(client, org.keys["ops"])) == ids
    theirs = set(listed(client, other.key))
    assert len(theirs) == 1 and not theirs & ids


def test_subtree_owner_sees_and_revokes_keys_minted_through_its_key(client, org):
    """Given the lead with a second grant (write on shared) and a child key it minted for
    itself without a ceiling -- so the child holds write on shared, outside the lead's owned
    subtree
    When the lead lists keys and revokes the child
    Then the child is listed and revoked (then 401); bob's and the admin's keys stay hidden
    (404 on revoke) and keep working."""
    r = client.post("/v1/grants", headers=bearer(org.admin),
                    json={"principal_id": org.principals["lead"], "path": "shared",
                          "level": "write"})
    assert r.status_code == 201, r.text
    child = mint(client, org.keys["lead"], org.principals["lead"])
    assert read(client, child["key"], org.m_shared).status_code == 200

    lead = org.keys["lead"]
    keys = listed(client, lead)
    assert child["id"] in keys
    assert org.key_ids["bob"] not in keys and org.admin_key_id not in keys
    for hidden in (org.key_ids["bob"], org.admin_key_id):
        assert_error(client.delete(f"/v1/keys/{hidden}", headers=bearer(lead)), 404, "not_found")
    assert read(client, org.keys["bob"], org.m_bob).status_code == 200

    assert client.delete(f"/v1/keys/{child['id']}", headers=bearer(lead)).status_code == 200
    assert_error(read(client, child["key"], org.m_shared), 401, "unauthenticated")
    assert read(client, lead, org.m_alice).status_code == 200


# --------------------------------------------------------------------------------------
# Schema
# --------------------------------------------------------------------------------------


def test_parent_id_column_references_api_keys_and_cascades(db, tenant):
    """Given the migrated schema
    Then api_keys.parent_id is a uuid referencing api_keys within the same tenant with ON
    DELETE CASCADE, and is indexed; deleting a parent row deletes its child row (control: an
    unrelated key stays)."""
    with db.connection() as conn:
        fks = conn.execute("""
            SELECT pg_get_constraintdef(c.oid) AS def FROM pg_constraint c
            WHERE c.conrelid = 'api_keys'::regclass AND c.contype = 'f'
              AND c.confrelid = 'api_keys'::regclass""").fetchall()
        indexes = [r["def"] for r in conn.execute(
            "SELECT pg_get_indexdef(indexrelid) AS def FROM pg_index"
            " WHERE indrelid = 'api_keys'::regclass")]
        dtype = conn.execute(
            "SELECT format_type(atttypid, atttypmod) AS t FROM pg_attribute"
            " WHERE attrelid = 'api_keys'::regclass AND attname = 'parent_id'").fetchone()["t"]
    assert dtype == "uuid"
    [fk] = fks
    assert "(tenant_id, parent_id) REFERENCES api_keys(tenant_id, id) ON DELETE CASCADE" in fk["def"]
    assert any("(parent_id)" in d for d in indexes), indexes

    with db.transaction() as cur:
        parent = insert_key(cur, tenant_id=tenant.tenant_id, principal_id=tenant.principal_id,
                            ceiling=None, name="p")
        child = insert_key(cur, tenant_id=tenant.tenant_id, principal_id=tenant.principal_id,
                           ceiling=None, name="c", parent_id=parent.id)
        other = insert_key(cur, tenant_id=tenant.tenant_id, principal_id=tenant.principal_id,
                           ceiling=None, name="o")
    with db.transaction() as cur:
        cur.execute("DELETE FROM api_keys WHERE id = %s", (parent.id,))
        left = {r["id"] for r in cur.execute(
            "SELECT id FROM api_keys WHERE id = ANY(%s)", ([parent.id, child.id, other.id],))}
    assert left == {other.id}


def test_parent_must_be_a_key_of_the_same_tenant(db, tenant, make_tenant):
    """Given a key of another tenant
    When a key is inserted naming it as parent
    Then the foreign key refuses it; naming a key of its own tenant works."""
    import psycopg

    other = make_tenant("other")
    with db.connection() as conn:
        foreign = conn.execute("SELECT id FROM api_keys WHERE tenant_id = %s",
                               (other.tenant_id,)).fetchone()["id"]
        own = conn.execute("SELECT id FROM api_keys WHERE tenant_id = %s",
                           (tenant.tenant_id,)).fetchone()["id"]
    with pytest.raises(psycopg.errors.ForeignKeyViolation):
        with db.transaction() as cur:
            insert_key(cur, tenant_id=tenant.tenant_id, principal_id=tenant.principal_id,
                       ceiling=None, name="x", parent_id=foreign)
    with db.transaction() as cur:
        ok = insert_key(cur, tenant_id=tenant.tenant_id, principal_id=tenant.principal_id,
                        ceiling=None, name="y", parent_id=own)
    assert ok.parent_id == own


# --------------------------------------------------------------------------------------
# Property: a child never holds what its parent does not (checked in SQL)
# --------------------------------------------------------------------------------------

PATHS = ["", "users", "users.alice", "users.bob", "shared"]
LEVELS = ["read", "write", "owner"]
RANK = {name: i for i, name in enumerate(LEVELS, 1)}


def _within(path: str, ancestor: str) -> bool:
    return ancestor == "" or path == ancestor or path.startswith(ancestor + ".")


def _level_at(entries, path: str) -> int:
    return max((RANK[lv] for p, lv in entries if _within(path, p)), default=0)


@st.composite
def worlds(draw):
    n_principals = draw(st.integers(1, 3))
    grants = [draw(st.dictionaries(st.sampled_from(PATHS), st.sampled_from(LEVELS), min_size=1,
                                   max_size=3))
              for _ in range(n_principals)]
    disabled = [draw(st.booleans()) and draw(st.booleans()) for _ in range(n_principals)]
    keys = []
    for i in range(draw(st.integers(1, 6))):
        ceiling = draw(st.none() | st.lists(
            st.tuples(st.sampled_from(PATHS), st.sampled_from(LEVELS)), max_size=3))
        parent = draw(st.none() | st.integers(0, i - 1)) if i else None
        keys.append({"principal": draw(st.integers(0, n_principals - 1)), "ceiling": ceiling,
                     "parent": parent, "revoked": draw(st.integers(0, 5)) == 0})
    return {"grants": grants, "disabled": disabled, "keys": keys}


_SUBSET_SQL = """
SELECT c.path::text AS path, c.level::text AS level
FROM effective_access(%(child)s) c
WHERE NOT EXISTS (SELECT 1 FROM effective_access(%(parent)s) p
                  WHERE c.path <@ p.path AND p.level >= c.level)
"""


@hsettings(max_examples=100, deadline=None,
           suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(world=worlds())
def test_child_access_is_within_its_parents_access(db, world):
    """Given random grants, ceilings, revocations, disabled principals and delegation chains
    (keys inserted directly, so the SQL is checked on chains the mint checks would refuse)
    When effective_access is computed for every key
    Then for every key with a parent, every (path, level) the child holds is covered by a
    parent entry at an ancestor-or-equal path with a level at least as high; and, per path,
    the child's level is exactly the minimum over its chain of (grant level, ceiling level)
    at that path -- nothing when a key of the chain is revoked or its holder disabled."""
    tenant, _ = create_tenant(db, f"p{uuid.uuid4().hex[:12]}")
    system = Caller.system(tenant.id)
    principals = []
    for i, grants in enumerate(world["grants"]):
        p = create_principal(db, system, f"p{i}", "user")
        for path, level in grants.items():
            create_grant(db, system, p.id, path, level)
        principals.append(p.id)
    ids: list[uuid.UUID] = []
    with db.transaction() as cur:
        for i, k in enumerate(world["keys"]):
            ceiling = None if k["ceiling"] is None else [
                CeilingEntry(path=p, level=lv) for p, lv in k["ceiling"]]
            created = insert_key(cur, tenant_id=tenant.id, principal_id=principals[k["principal"]],
                                 ceiling=ceiling, name=f"k{i}",
                                 parent_id=None if k["parent"] is None else ids[k["parent"]])
            ids.append(created.id)
            if k["revoked"]:
                cur.execute("UPDATE api_keys SET revoked_at = now() WHERE id = %s", (created.id,))
        for i, off in enumerate(world["disabled"]):
            if off:
                cur.execute("UPDATE principals SET disabled_at = now() WHERE id = %s",
                            (principals[i],))

    def own_level(i: int, path: str) -> int:
        k = world["keys"][i]
        if k["revoked"] or world["disabled"][k["principal"]]:
            return 0
        grants = list(world["grants"][k["principal"]].items())
        level = _level_at(grants, path)
        return level if k["ceiling"] is None else min(level, _level_at(k["ceiling"], path))

    def model_level(i: int, path: str) -> int:
        level = own_level(i, path)
        parent = world["keys"][i]["parent"]
        return level if parent is None else min(level, model_level(parent, path))

    for i, k in enumerate(world["keys"]):
        got = effective(db, str(ids[i]))
        for path in PATHS + ["users.alice.notes"]:
            assert _level_at(got, path) == model_level(i, path), (i, path, got)
        if k["parent"] is not None:
            event("delegated key with access" if got else "delegated key without access")
            with db.connection() as conn:
                uncovered = conn.execute(_SUBSET_SQL, {"child": ids[i],
                                                       "parent": ids[k["parent"]]}).fetchall()
            assert uncovered == [], (i, uncovered)


def test_the_property_is_not_vacuous(db):
    """Control for the property: a hand-built chain where the child's own access is broader
    than its parent's has a non-empty effective access, narrower than its own grants --
    so the checks above compare real rows, not empty sets."""
    tenant, _ = create_tenant(db, "vacuous")
    system = Caller.system(tenant.id)
    p = create_principal(db, system, "p", "user")
    q = create_principal(db, system, "q", "user")
    create_grant(db, system, p.id, "users", "write")
    create_grant(db, system, q.id, "", "owner")
    with db.transaction() as cur:
        parent = insert_key(cur, tenant_id=tenant.id, principal_id=p.id, ceiling=None, name="a")
        child = insert_key(cur, tenant_id=tenant.id, principal_id=q.id, ceiling=None, name="b",
                           parent_id=parent.id)
        lone = insert_key(cur, tenant_id=tenant.id, principal_id=q.id, ceiling=None, name="c")
    assert effective(db, str(child.id)) == {("users", "write")}
    assert effective(db, str(lone.id)) == {("", "owner")}


# --------------------------------------------------------------------------------------
# Operator CLI: strata keys list | revoke
# --------------------------------------------------------------------------------------


def run(capsys, *argv: str) -> tuple[int, str, str]:
    from strata.cli.main import main

    code = main(list(argv))
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    return code, out, err


def test_cli_keys_list_shows_every_key_with_its_parent(client, org, operator, capsys):
    """Given the tenant's keys (ghost's without grants, a child minted through the lead's key)
    When the operator runs `strata keys list --tenant acme` and with --json
    Then the table has a line per key showing its id, principal and parent id; the JSON lists
    every key the root owner lists over HTTP, with parent_id."""
    child = mint(client, org.keys["lead"], org.principals["lead"], name="child")

    code, out, err = run(capsys, "keys", "list", "--tenant", "acme")
    assert code == 0, err
    header, *lines = out.splitlines()
    assert header.split()[:3] == ["id", "principal", "parent"]
    [line] = [ln for ln in lines if ln.startswith(child["id"])]
    assert line.split()[1:3] == [org.principals["lead"], org.key_ids["lead"]]
    assert any(ln.startswith(org.key_ids["ghost"]) for ln in lines)
    assert len(lines) == len(listed(client, org.admin))

    code, out, err = run(capsys, "keys", "list", "--tenant", "acme", "--json")
    assert code == 0, err
    items = {k["id"]: k for k in json.loads(out)}
    assert set(items) == set(listed(client, org.admin))
    assert items[child["id"]]["parent_id"] == org.key_ids["lead"]
    assert items[org.admin_key_id]["parent_id"] is None
    assert all("key" not in k and "secret_hash" not in k for k in items.values())


def test_cli_keys_revoke_revokes_and_takes_children_along(client, org, operator, capsys):
    """Given ghost's key (no grants) and ops's key with a child it minted, all authenticating
    When the operator runs `strata keys revoke <id> --tenant acme` for ghost's key and for
    ops's key
    Then both print the revocation, and those keys and ops's child get 401; the admin key
    still works. An unknown id is a not_found message (JSON with --json) and exit status 2."""
    child = mint(client, org.keys["ops"], org.principals["ops"])
    assert client.get("/v1/memories", headers=bearer(org.keys["ghost"])).status_code == 200

    code, out, err = run(capsys, "keys", "revoke", org.key_ids["ghost"], "--tenant", "acme")
    assert code == 0, err
    assert out.startswith(f"key {org.key_ids['ghost']} revoked")
    code, out, err = run(capsys, "keys", "revoke", org.key_ids["ops"], "--tenant", "acme",
                         "--json")
    assert code == 0, err
    assert json.loads(out)["revoked_at"] is not None

    for k in (org.keys["ghost"], org.keys["ops"], child["key"]):
        assert_error(client.get("/v1/memories", headers=bearer(k)), 401, "unauthenticated")
    assert client.get("/v1/memories", headers=bearer(org.admin)).status_code == 200

    code, out, err = run(capsys, "keys", "revoke", str(uuid.uuid4()), "--tenant", "acme")
    assert code == 2 and "key not found" in err and "[not_found]" in err and out == ""
    code, out, err = run(capsys, "keys", "revoke", str(uuid.uuid4()), "--tenant", "acme", "--json")
    assert code == 2 and json.loads(err)["error"]["code"] == "not_found" and out == ""


# --------------------------------------------------------------------------------------
# No import cycle between the CLI modules
# --------------------------------------------------------------------------------------


def _imports(module: str) -> set[str]:
    tree = ast.parse((SRC / f"{module}.py").read_text(encoding="utf-8"))
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
            found.update(f"{node.module}.{a.name}" for a in node.names)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
    return found


def test_cli_modules_do_not_import_each_other_back():
    """Given strata.cli.main (which registers the client commands) and strata.cli.client
    Then the client commands import nothing of strata.cli.main (anywhere, even inside a
    function), and the shared module strata.cli.support imports neither; main does import the
    client commands (the control)."""
    assert "strata.cli.client" in _imports("cli/main")
    client_side = _imports("cli/client")
    assert "strata.cli.main" not in client_side and "strata.cli.support" in client_side
    support = _imports("cli/support")
    assert not {"strata.cli.main", "strata.cli.client"} & support


@pytest.mark.parametrize("days", ["0", "-3", "nan", "inf", "soon"])
def test_cli_keys_create_refuses_a_lifetime_that_is_not_positive(org, operator, capsys, days):
    """`--expires-in-days 0` used to make a key that never expires: a lifetime must be a
    positive number of days (exit 2, nothing created); 1.5 days works (control)."""
    from strata.cli.main import main

    with pytest.raises(SystemExit) as refused:
        main(["keys", "create", "--tenant", "acme", "--principal", "ghost",
              "--expires-in-days", days])
    assert refused.value.code == 2
    assert "expires-in-days" in capsys.readouterr().err
    code, out, err = run(capsys, "keys", "create", "--tenant", "acme", "--principal", "ghost",
                         "--expires-in-days", "1.5", "--json")
    assert code == 0, err
    expires = datetime.fromisoformat(json.loads(out)["expires_at"])
    assert timedelta(days=1.4) < expires - datetime.now(UTC) < timedelta(days=1.6)
