"""The store owns its embedder (strata.providers.store_embedder): recorded in the database, followed by
every process that does not configure one, refused by a server configured with another.

In process on a real database; `strata dev` and operator commands as real processes are in
tests/cli/test_cli_operator.py and tests/test_local_stack.py."""

from __future__ import annotations

import pytest

from strata.auth import authenticate
from strata.foundation.config import Settings
from strata.maintenance.reindex import Reindex
from strata.memories.models import CreateRequest
from strata.memories.store import create_memories
from strata.providers import HashingEmbedder, LocalEmbedder
from strata.providers.embedders import local_available
from strata.providers.store_embedder import EmbedderMismatch, StoreEmbedder, recorded, resolve

HASH = "strata-hash-v1-384"
OPENAI = "openai:text-embedding-3-small:384"


def settings(embedder: str | None, **kw) -> Settings:
    return Settings(embedder=embedder, embedding_dim=384, **kw)


def write(db, tenant, embedder, texts=("Alice keeps bees", "Bob drives a red Volvo")) -> None:
    caller = authenticate(db, tenant.key)
    create_memories(db, caller, CreateRequest(memories=[
        {"content": t, "path": "shared.ops"} for t in texts]), embedder)


def test_a_new_store_records_the_configured_embedder_and_then_follows_it(db):
    """Given a new store When a process configured with hash resolves its embedder Then the
    store records hash (provider, stamp, dim), and a process with STRATA_EMBEDDER unset gets
    hash from the record (control: nothing was recorded before)."""
    assert recorded(db) is None
    first = resolve(db, settings("hash"), strict=True)
    assert first.embedder.model == HASH and first.source == "configured"
    assert recorded(db) == StoreEmbedder("hash", HASH, 384, None)
    follower = resolve(db, settings(None), strict=True)
    assert isinstance(follower.embedder, HashingEmbedder) and follower.source == "store"
    assert follower.settings.embedder == "hash"


def test_a_new_store_defaults_to_local_when_installed_else_hash(db):
    """Given a new store and STRATA_EMBEDDER unset When the embedder is resolved Then it is
    local when strata[local] is installed (CI installs it), else hash; either way recorded;
    on AWS nothing is inferred (hash)."""
    chosen = resolve(db, settings(None), strict=True)
    expected = "local" if local_available() else "hash"
    assert chosen.embedder.provider == expected
    assert recorded(db).provider == expected
    if expected == "local":
        assert isinstance(chosen.embedder, LocalEmbedder)
        assert chosen.embedder.model == "local:all-MiniLM-L6-v2:384"


def test_a_store_from_before_the_record_takes_its_rows_stamp(db, tenant):
    """Given memories written by hash and no record (a store from before it) When a process
    with STRATA_EMBEDDER unset resolves Then it gets hash, not the machine's default, and
    records it."""
    write(db, tenant, HashingEmbedder(384))
    assert recorded(db) is None
    assert resolve(db, settings(None), strict=True).embedder.model == HASH
    assert recorded(db).model == HASH


def test_a_configured_embedder_other_than_the_stores(db, tenant):
    """Given a store of hash vectors When STRATA_EMBEDDER=openai resolves Then a server
    (strict) is refused, naming both models and both fixes; an operator command follows the
    store and says so; the record is unchanged."""
    write(db, tenant, HashingEmbedder(384))
    resolve(db, settings("hash"), strict=True)
    with pytest.raises(EmbedderMismatch) as refused:
        resolve(db, settings("openai"), strict=True)
    message = str(refused.value)
    for part in (OPENAI, HASH, "`strata reindex`", "unset STRATA_EMBEDDER"):
        assert part in message, part
    followed = resolve(db, settings("openai"), strict=False)
    assert followed.embedder.model == HASH and followed.source == "store"
    assert OPENAI in followed.warning and HASH in followed.warning
    assert recorded(db).model == HASH


def test_a_store_without_vectors_adopts_the_configured_embedder(db, tenant):
    """Given a store whose record says hash but that holds no vector (an operator command
    recorded it) When an operator command runs with STRATA_EMBEDDER=openai Then it follows the
    store; when a server starts with it, nothing needs re-embedding: the store adopts openai
    (and hash again). Once it holds vectors (control), openai is refused."""
    resolve(db, settings("hash"), strict=True)
    command = resolve(db, settings("openai"), strict=False)  # a command never switches it
    assert command.embedder.model == HASH and recorded(db).model == HASH
    assert resolve(db, settings("openai"), strict=True).embedder.model == OPENAI
    assert recorded(db).model == OPENAI
    back = resolve(db, settings("hash"), strict=True)  # still empty: adopted again
    assert recorded(db).model == HASH
    write(db, tenant, back.embedder)
    with pytest.raises(EmbedderMismatch):
        resolve(db, settings("openai"), strict=True)


def test_reindex_records_the_new_embedder_once_every_vector_is_its_models(db, make_tenant):
    """Given two tenants' hash vectors When `strata reindex` re-embeds one tenant with hash at
    64 dimensions Then the store still records the old embedder (the other tenant's vectors
    are not the new model's); once the other tenant is done too, it records the new one."""
    acme, zeta = make_tenant("acme"), make_tenant("zeta")
    for t in (acme, zeta):
        write(db, t, HashingEmbedder(384))
    resolve(db, settings(None), strict=True)
    new = HashingEmbedder(64)
    first = Reindex(db, new, tenant_id=acme.tenant_id).run()
    assert first.memories["embedded"] == 2 and first.recorded is False
    assert recorded(db).model == HASH
    second = Reindex(db, new, tenant_id=zeta.tenant_id).run()
    assert second.recorded is True
    assert recorded(db) == StoreEmbedder("hash", "strata-hash-v1-64", 64, None)
    follower = resolve(db, settings(None), strict=True)
    assert follower.embedder.dim == 64 and follower.settings.embedding_dim == 64


def test_stamps_read_back_into_the_embedder_that_made_them():
    for stamp, provider, name, dim in (
            (HASH, "hash", None, 384), (OPENAI, "openai", "text-embedding-3-small", 384),
            ("bedrock:amazon.titan-embed-text-v2:0:1024", "bedrock",
             "amazon.titan-embed-text-v2:0", 1024),
            ("local:all-MiniLM-L6-v2:384", "local", "all-MiniLM-L6-v2", 384)):
        assert StoreEmbedder.from_stamp(stamp) == StoreEmbedder(provider, stamp, dim, name)
    assert StoreEmbedder.from_stamp("someone-else:model") is None
