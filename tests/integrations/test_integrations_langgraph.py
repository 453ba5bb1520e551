"""strata.integrations.langgraph: StrataStore, LangGraph's BaseStore over strata, against a
live server (uvicorn over the test database, real HTTP) with the real langgraph package.

LangGraph ships no conformance suite for stores (langgraph-checkpoint-conformance covers
checkpointers only), so the store's contract is written out here: get, put, overwrite,
delete, search with and without a query, filters, pagination, list_namespaces with prefix,
suffix, wildcards and depth, TTL, and the same through the async API."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given, settings as hsettings, strategies as st
from langgraph.store.base import GetOp, InvalidNamespaceError, PutOp, SearchOp

from strata.client import AsyncClient, Backoff, Client, Suppressed
from strata.integrations.langgraph import StrataStore, namespace_of, path_of


@pytest.fixture
def strata(server, tenant):
    with Client(server, tenant.key, backoff=Backoff(base=0.01)) as c:
        yield c


@pytest.fixture
def store(strata):
    return StrataStore(strata, index={"fields": ["content"]})


NS = ("users", "alice", "memories")


@given(st.lists(st.text(min_size=1, max_size=30).filter(lambda s: "." not in s and "\x00" not in s),
                min_size=1, max_size=4))
@hsettings(max_examples=200, deadline=None)
def test_every_namespace_maps_to_a_valid_path_and_back(namespace):
    """Given any namespace LangGraph accepts (labels without '.' or NUL)
    Then its path is dot-separated labels strata accepts, and decodes to the same namespace,
    under a root too."""
    from strata.foundation.paths import validate_path

    ns = tuple(namespace)
    for root in (None, "apps.support"):
        path = path_of(ns, root)
        assert validate_path(path) == path
        assert namespace_of(path, root) == ns


def test_plain_labels_stay_readable():
    assert path_of(("users", "alice", "memories")) == "users.alice.memories"
    assert path_of(("users", "alice@example.com")) == "users.x--alice_40example_2ecom"
    assert path_of(("x--already",)) != "x--already"  # the escape prefix itself is escaped
    with pytest.raises(InvalidNamespaceError):
        path_of(("é" * 200,))  # 200 characters, 1200 once escaped: past a label's 255


def test_get_put_overwrite_delete_and_history(store, strata):
    """Given a value put under a namespace and key
    When it is read, put again with a new value, and deleted
    Then get answers the value, key, namespace and times; the second put is a new version of
    the same memory (its history holds the first); after delete get answers None and a
    search finds nothing. Control: another key in the namespace is still there."""
    assert store.get(NS, "db") is None
    store.put(NS, "db", {"content": "Alice prefers PostgreSQL", "source": "chat"})
    store.put(NS, "tea", {"content": "Alice drinks green tea"})
    item = store.get(NS, "db")
    assert item.namespace == NS and item.key == "db"
    assert item.value == {"content": "Alice prefers PostgreSQL", "source": "chat"}
    assert item.created_at <= item.updated_at

    [memory] = [m for m in strata.memories.list(path="users.alice.memories").items if m.name == "db"]
    assert memory.content == "Alice prefers PostgreSQL"  # the index field, not the JSON
    store.put(NS, "db", {"content": "Alice prefers PostgreSQL 17", "source": "chat"})
    again = store.get(NS, "db")
    assert again.value["content"] == "Alice prefers PostgreSQL 17"
    assert strata.memories.get(memory.id).version == 2
    assert [h.snapshot["content"] for h in strata.memories.history(memory.id)] == [
        "Alice prefers PostgreSQL"]

    store.delete(NS, "db")
    assert store.get(NS, "db") is None
    assert "db" not in [i.key for i in store.search(NS, query="Alice prefers PostgreSQL tea")]
    assert "tea" in [i.key for i in store.search(NS, query="Alice prefers PostgreSQL tea")]
    assert store.get(NS, "tea").value == {"content": "Alice drinks green tea"}
    store.delete(NS, "never-put")  # deleting a missing key is no error, as in LangGraph


def test_a_fresh_store_finds_keys_it_did_not_write(strata):
    """Given a value put by one store
    When another store (another process, no shared cache) reads it by key
    Then it answers it: keys are found on the server, not only in the writer's memory."""
    StrataStore(strata).put(NS, "city", {"content": "Alice lives in Lisbon"})
    item = StrataStore(strata).get(NS, "city")
    assert item is not None and item.value == {"content": "Alice lives in Lisbon"}


def test_search_query_filter_limit_offset(store):
    """Given values with meta fields under two users
    When searched with a query, a filter (plain and operators), limit and offset
    Then results come from the prefix only, match the filter, and page without overlap;
    without a query the same filter applies to every item of the prefix, oldest first."""
    for i, (text, topic) in enumerate([
            ("Alice prefers PostgreSQL for new services", "db"),
            ("Alice runs Redis as a cache", "db"),
            ("Alice hikes in the Alps every summer", "hobby"),
            ("Alice's PostgreSQL clusters run version 16", "db")]):
        store.put(NS, f"k{i}", {"content": text, "topic": topic, "rank": i})
    store.put(("users", "bob", "memories"), "k0", {"content": "Bob prefers PostgreSQL too",
                                                   "topic": "db", "rank": 0})

    hits = store.search(("users", "alice"), query="PostgreSQL", limit=10)
    assert hits and all(h.namespace == NS for h in hits)  # bob's is outside the prefix
    assert any(h.key == "k0" for h in hits) and all(h.score is not None for h in hits)
    assert store.search(("users",), query="Bob PostgreSQL", limit=10)  # control: bob is there

    db = store.search(NS, query="PostgreSQL Redis Alps", filter={"topic": "db"}, limit=10)
    assert db and {h.key for h in db} <= {"k0", "k1", "k3"}
    ranked = store.search(NS, query="PostgreSQL Redis Alps", filter={"rank": {"$gte": 2}})
    assert ranked and {h.key for h in ranked} <= {"k2", "k3"}

    everything = store.search(NS, limit=10)
    assert [h.key for h in everything] == ["k0", "k1", "k2", "k3"]
    assert [h.key for h in store.search(NS, filter={"topic": "db"}, limit=2)] == ["k0", "k1"]
    assert [h.key for h in store.search(NS, filter={"topic": "db"}, limit=2, offset=2)] == ["k3"]
    assert [h.key for h in store.search(NS, filter={"rank": {"$lt": 2, "$ne": 0}})] == ["k1"]
    first = store.search(NS, query="Alice", limit=2)
    second = store.search(NS, query="Alice", limit=2, offset=2)
    assert len(first) == 2 and second and not {h.key for h in first} & {h.key for h in second}


def test_list_namespaces(store):
    """Given items under several namespaces, one with labels that need escaping
    When namespaces are listed with prefix, suffix, a wildcard, max_depth, limit and offset
    Then each answers the namespaces as they were put, filtered and truncated as LangGraph
    defines it."""
    spaces = [("users", "alice", "memories"), ("users", "alice", "prefs"),
              ("users", "bob@example", "memories"), ("docs", "v1")]
    for ns in spaces:
        store.put(ns, "k", {"content": f"something kept under {ns[-1]}"})
    assert store.list_namespaces() == sorted(spaces)
    assert store.list_namespaces(prefix=("users",)) == sorted(spaces[:3])
    assert store.list_namespaces(suffix=("memories",)) == sorted([spaces[0], spaces[2]])
    assert store.list_namespaces(prefix=("users", "*", "memories")) == sorted(
        [spaces[0], spaces[2]])
    assert store.list_namespaces(max_depth=2) == [
        ("docs", "v1"), ("users", "alice"), ("users", "bob@example")]
    assert store.list_namespaces(limit=2, offset=1) == sorted(spaces)[1:3]
    store.delete(("docs", "v1"), "k")
    assert ("docs", "v1") not in store.list_namespaces()  # an emptied namespace is gone


def test_batch_answers_each_op_in_order(store):
    store.put(NS, "a", {"content": "Alice uses Neovim"})
    results = store.batch([GetOp(NS, "a"), PutOp(NS, "b", {"content": "Alice uses tmux"}),
                           GetOp(NS, "b"), SearchOp(NS, None, 10, 0, None)])
    assert results[0].key == "a" and results[1] is None and results[2].key == "b"
    assert [i.key for i in results[3]] == ["a", "b"]


def test_supersession_shows_as_the_old_item_gone(store, strata):
    """Given Alice's preferred database put under one key
    When a new value of the same thing is put under another key
    Then the old item is gone from get and from search, the new one present, and the old
    memory is kept in strata as superseded (not deleted). Control: a value of another slot
    is untouched."""
    store = StrataStore(strata, slot_field="about")
    about = "user.preferred_database"
    store.put(NS, "db-2024", {"content": "I prefer MySQL", "about": about})
    store.put(NS, "editor", {"content": "I use Emacs", "about": "user.editor"})
    assert store.get(NS, "db-2024") is not None
    store.put(NS, "db-2026", {"content": "I prefer PostgreSQL", "about": about})
    assert store.get(NS, "db-2024") is None
    assert store.get(NS, "db-2026").value == {"content": "I prefer PostgreSQL", "about": about}
    assert store.get(NS, "editor") is not None
    assert "db-2024" not in [h.key for h in store.search(NS, query="MySQL PostgreSQL prefer")]
    assert "db-2026" in [h.key for h in store.search(NS, query="MySQL PostgreSQL prefer")]
    [was] = [m for m in strata.memories.list(path=".".join(NS), status="superseded").items]
    assert was.name == "db-2024"


def test_a_forgotten_value_cannot_be_put_back(store):
    """Given a value forgotten through the store
    When the same value is put again, under its key or another
    Then the put raises strata's Suppressed naming the tombstone, and nothing is stored.
    Control: another value is stored under the same key."""
    store.put(NS, "allergy", {"content": "Alice is allergic to penicillin"})
    forgotten = store.forget(NS, "allergy")
    assert forgotten.forgotten and forgotten.tombstone_ids
    assert store.get(NS, "allergy") is None
    for key in ("allergy", "again"):
        with pytest.raises(Suppressed) as refused:
            store.put(NS, key, {"content": "Alice is allergic to penicillin"})
        assert refused.value.tombstone_id in {str(t) for t in forgotten.tombstone_ids}
        assert store.get(NS, key) is None
    store.put(NS, "allergy", {"content": "Alice has no known allergies"})
    assert store.get(NS, "allergy").value == {"content": "Alice has no known allergies"}


def test_ttl_makes_a_short_term_memory(store, strata):
    """Given a put with ttl=90 (minutes, as LangGraph counts)
    Then the memory is short-term and expires 90 minutes on; without ttl it is long-term; a
    second put of the key edits the content and keeps the expiry."""
    store.put(NS, "meeting", {"content": "Alice is in a meeting until noon"}, ttl=90)
    store.put(NS, "name", {"content": "Alice's surname is Lind"})
    by_name = {m.name: m for m in strata.memories.list(path=".".join(NS)).items}
    short = by_name["meeting"]
    assert short.tier == "short_term"
    assert abs(short.expires_at - (datetime.now(UTC) + timedelta(minutes=90))) < timedelta(minutes=5)
    assert by_name["name"].tier == "long_term" and by_name["name"].expires_at is None

    # Putting the key again edits the memory: its tier and expiry stay as first put.
    store.put(NS, "meeting", {"content": "Alice is in a meeting until one"}, ttl=600)
    again = {m.name: m for m in strata.memories.list(path=".".join(NS)).items}["meeting"]
    assert again.content == "Alice is in a meeting until one" and again.version == 2
    assert again.expires_at == short.expires_at


def test_a_namespace_strata_cannot_hold_is_the_framework_error(store):
    with pytest.raises(InvalidNamespaceError):
        store.put(("users", "é" * 200), "k", {"content": "too long a label"})
    with pytest.raises(ValueError):  # LangGraph's own check, before the store
        store.put(("users", "a.b"), "k", {"content": "dotted"})


def test_async_store_over_the_async_client(server, tenant):
    """The same operations through abatch on an AsyncClient: put, get, search, list, delete."""

    async def run():
        async with AsyncClient(server, tenant.key, backoff=Backoff(base=0.01)) as c:
            store = StrataStore(aclient=c)
            await store.aput(NS, "lang", {"content": "Alice writes Rust at work"})
            await store.aput(("users", "carol"), "lang", {"content": "Carol writes Go"})
            got = await store.aget(NS, "lang")
            hits = await store.asearch(("users", "alice"), query="Rust")
            spaces = await store.alist_namespaces(prefix=("users",))
            await store.adelete(NS, "lang")
            return got, hits, spaces, await store.aget(NS, "lang")

    got, hits, spaces, after = asyncio.run(run())
    assert got.value == {"content": "Alice writes Rust at work"}
    assert [h.key for h in hits] == ["lang"]
    assert spaces == [("users", "alice", "memories"), ("users", "carol")]
    assert after is None
