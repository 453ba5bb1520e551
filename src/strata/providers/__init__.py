"""Model providers behind small protocols, each with a deterministic offline implementation."""

from strata.providers.embedders import Embedder, HashingEmbedder, get_embedder

__all__ = ["Embedder", "HashingEmbedder", "get_embedder"]
