"""Embeddings of stored memories and of the tombstones that copy them, rewritten by
``strata reindex`` (:mod:`strata.maintenance.reindex`) when the embedding model changes."""

WRITE_MEMORY = """
UPDATE memories SET embedding = %(embedding)s, embedding_model = %(model)s
WHERE id = %(id)s AND content = %(content)s AND embedding_model IS DISTINCT FROM %(model)s
"""

REFILL_TOMBSTONES = """
UPDATE tombstones t SET embedding = m.embedding
FROM memories m
WHERE t.id = ANY(%(ids)s) AND m.id = t.memory_id AND m.tenant_id = t.tenant_id
  AND m.embedding_model = %(model)s AND t.embedding IS DISTINCT FROM m.embedding
"""

CLEAR_TOMBSTONES = "UPDATE tombstones SET embedding = NULL WHERE embedding IS NOT NULL"
