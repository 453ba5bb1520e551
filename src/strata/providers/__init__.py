"""Model providers behind small protocols, each with a deterministic offline implementation."""

from strata.providers.embedders import (
    BedrockEmbedder,
    Embedder,
    EmbeddingFailed,
    HashingEmbedder,
    LocalEmbedder,
    OpenAIEmbedder,
    get_embedder,
)

__all__ = [
    "BedrockEmbedder", "Embedder", "EmbeddingFailed", "HashingEmbedder", "LocalEmbedder",
    "OpenAIEmbedder", "get_embedder",
]
