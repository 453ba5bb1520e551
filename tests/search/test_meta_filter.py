"""Search's meta filter (strata.search.meta_filter) through HTTP on the real statement, explored with
generated filters against a reference that states the documented semantics in Python."""

from __future__ import annotations

import random
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from strata.search.meta_filter import OPERATORS

KEYS = ("p", "q")
VALUES = [-2, 0, 1, 1.0, 1.5, 3, "a", "ab", "b", True, False, None, [1], {"x": 1}]
MISSING = object()


def _type(v: Any) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "boolean"
    if isinstance(v, int | float):
        return "number"
    return {str: "string", list: "array", dict: "object"}[type(v)]


def jeq(a: Any, b: Any) -> bool:
    """JSON equality (jsonb's): types first, so true is not 1; numbers by value."""
    if _type(a) != _type(b):
        return False
    if isinstance(a, list):
        return len(a) == len(b) and all(jeq(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(jeq(a[k], b[k]) for k in a)
    return a == b


def contains(stored: Any, wanted: Any) -> bool:
    """jsonb @> for what the generator produces (objects; scalars and [1] inside)."""
    if isinstance(wanted, dict):
        return isinstance(stored, dict) and all(
            k in stored and contains(stored[k], v) for k, v in wanted.items())
    if isinstance(wanted, list):
        return isinstance(stored, list) and all(
            any(contains(s, w) for s in stored) for w in wanted)
    return jeq(stored, wanted)


def holds(meta: dict[str, Any], key: str, op: str, val: Any) -> bool:
    got = meta.get(key, MISSING)
    if op == "exists":
        return (got is not MISSING) == val
    if op == "ne":
        return got is MISSING or not jeq(got, val)
    if got is MISSING:
        return False
    if op == "eq":
        return jeq(got, val)
    if op == "in":
        return any(jeq(got, v) for v in val)
    if _type(got) != _type(val):
        return False
    return {"gt": got > val, "gte": got >= val, "lt": got < val, "lte": got <= val}[op]


def matches(meta: dict[str, Any], flt: dict[str, Any]) -> bool:
    for key, want in flt.items():
        if isinstance(want, dict) and want and any(k in OPERATORS for k in want):
            if not all(holds(meta, key, op, val) for op, val in want.items()):
                return False
        elif key not in meta or not contains(meta[key], want):
            return False
    return True


@pytest.fixture(scope="module")
def store(module_db):
    """A tenant whose 30 memories carry generated meta under keys p and q (some missing)."""
    from fastapi.testclient import TestClient

    from strata.api.app import create_app
    from strata.auth import create_tenant
    from strata.providers.embedders import HashingEmbedder

    db, settings_ = module_db
    _, key = create_tenant(db, "meta-filter")
    app = create_app(db=db, embedder=HashingEmbedder(dim=settings_.embedding_dim),
                     settings=settings_)
    client = TestClient(app)
    headers = {"Authorization": f"Bearer {key.key}"}
    rng = random.Random(7)
    metas = []
    for i in range(30):
        meta = {k: rng.choice(VALUES) for k in KEYS if rng.random() < 0.8}
        metas.append(meta)
    r = client.post("/v1/memories", headers=headers, json={"memories": [
        {"content": f"Ledger entry {i} of the meta filter archive", "path": "shared.meta",
         "meta": m} for i, m in enumerate(metas)]})
    assert r.status_code == 200, r.text
    ids = [x["id"] for x in r.json()["results"]]
    assert len(set(ids)) == 30
    return client, headers, dict(zip(ids, metas, strict=True))


def found(client, headers, flt) -> set[str] | dict:
    r = client.post("/v1/search", headers=headers, json={
        "query": "ledger entry archive", "mode": "vector", "limit": 100, "meta": flt})
    if r.status_code != 200:
        return {"status": r.status_code, **r.json()}
    return {x["id"] for x in r.json()["results"]}


scalars = st.sampled_from([v for v in VALUES if not isinstance(v, list | dict)])
operands = {
    "eq": st.sampled_from(VALUES), "ne": st.sampled_from(VALUES),
    **{op: st.sampled_from([-2, 0, 1, 1.5, 3, "a", "ab", "b"]) for op in ("gt", "gte", "lt",
                                                                        "lte")},
    "in": st.lists(scalars, min_size=1, max_size=4), "exists": st.booleans(),
}
conditions = st.dictionaries(st.sampled_from(list(OPERATORS)), st.none(), min_size=1,
                             max_size=2).flatmap(
    lambda ops: st.fixed_dictionaries({op: operands[op] for op in ops}))
filters = st.dictionaries(st.sampled_from(["p", "q", "r"]),
                          st.one_of(conditions, st.sampled_from(VALUES[:-2])),
                          min_size=1, max_size=3)


@settings(max_examples=120, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(filters)
# A JSON null operand (found by this test in CI: it once reached SQL as NULL, which equals
# nothing), in every operator that takes one, always tried.
@example({"p": {"eq": None}})
@example({"p": {"ne": None}})
@example({"p": {"in": [None, 1]}})
@example({"p": {"eq": None, "ne": 1}, "q": {"in": [None]}})
def test_meta_filter_matches_the_documented_semantics(store, flt):
    """Any combination of equality and operator conditions over present, missing and
    differently typed values selects exactly what the reference selects. Control: the
    unfiltered search returns all 30, so an empty answer is a real exclusion."""
    client, headers, metas = store
    expected = {i for i, m in metas.items() if matches(m, flt)}
    assert found(client, headers, flt) == expected, flt


def test_unfiltered_control_and_known_cases(store):
    client, headers, metas = store
    assert found(client, headers, None) == set(metas)
    numbers = {i for i, m in metas.items() if _type(m.get("p", "")) == "number" and m["p"] >= 1}
    assert numbers and found(client, headers, {"p": {"gte": 1}}) == numbers
    assert found(client, headers, {"r": {"exists": False}}) == set(metas)
    assert found(client, headers, {"r": {"ne": 1}}) == set(metas)


@pytest.mark.parametrize("flt, field", [
    ({"p": {"gte": True}}, "meta.p"),
    ({"p": {"gte": [1]}}, "meta.p"),
    ({"p": {"in": []}}, "meta.p"),
    ({"p": {"in": 3}}, "meta.p"),
    ({"p": {"in": [{"x": 1}]}}, "meta.p"),
    ({"q": {"exists": "yes"}}, "meta.q"),
    ({"q": {"gte": 1, "team": "core"}}, "meta.q"),
    ({"q": {"between": [1, 2], "lt": 3}}, "meta.q"),
])
def test_a_filter_that_cannot_mean_what_it_says_is_a_422(store, flt, field):
    client, headers, _ = store
    got = found(client, headers, flt)
    assert isinstance(got, dict) and got["status"] == 422, got
    assert got["error"]["field"] == field and got["error"]["code"] == "invalid_input", got
