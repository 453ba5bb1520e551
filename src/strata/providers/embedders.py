"""Embedders. ``HashingEmbedder`` needs no model and no network: the local default and tests."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from functools import lru_cache
from typing import Protocol

import numpy as np

from strata.config import Settings


class Embedder(Protocol):
    model: str
    dim: int

    def embed(self, texts: Sequence[str]) -> list[np.ndarray]:
        """One vector per text, L2-normalised, in input order; one provider call per batch."""
        ...


@lru_cache(maxsize=65536)
def _bucket(feature: str, dim: int) -> tuple[int, float]:
    h = int.from_bytes(hashlib.blake2b(feature.encode(), digest_size=8).digest(), "little")
    return h % dim, 1.0 if (h >> 63) & 1 else -1.0


_WORD = re.compile(r"[^\W_]+")


class HashingEmbedder:
    """Signed feature hashing of word unigrams, bigrams and character trigrams.

    Deterministic across processes (blake2b, not Python's salted ``hash``), so two runs
    produce the same vectors and paraphrase scores are reproducible in evaluations.
    """

    def __init__(self, dim: int) -> None:
        self.dim = dim
        self.model = f"strata-hash-v1-{dim}"

    def _features(self, text: str) -> list[tuple[str, float]]:
        words = _WORD.findall(text.lower())
        feats: list[tuple[str, float]] = [(f"w:{w}", 1.0) for w in words]
        feats += [(f"b:{a}_{b}", 0.5) for a, b in zip(words, words[1:])]
        for w in words:
            padded = f"#{w}#"
            feats += [(f"c:{padded[i:i + 3]}", 0.25) for i in range(len(padded) - 2)]
        # Text with no word characters still gets a stable, non-zero vector.
        return feats or [(f"t:{text}", 1.0)]

    def embed(self, texts: Sequence[str]) -> list[np.ndarray]:
        out = []
        for text in texts:
            vec = np.zeros(self.dim, dtype=np.float32)
            for feat, weight in self._features(text):
                index, sign = _bucket(feat, self.dim)
                vec[index] += sign * weight
            norm = float(np.linalg.norm(vec))
            out.append(vec / norm if norm > 0 else vec)
        return out


def get_embedder(settings: Settings) -> Embedder:
    return HashingEmbedder(settings.embedding_dim)
