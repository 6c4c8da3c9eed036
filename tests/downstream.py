"""Shared set-up of the downstream tests (evaluate, export train, train): one small published version of sample_docs.

``sample_version(tmp_path_factory)`` ingests sample_docs/ (OCR off), runs correct, headers, qa,
judge, quotes and negatives, builds a dataset version and evaluates it once (which fills the
passage-vector cache) — once per test session; each test gets a private copy of that root. ``HashingEmbedder`` is a fast, deterministic stand-in for
the embedder (hashed word counts) for tests that check bookkeeping rather than retrieval quality.
"""

from __future__ import annotations

import hashlib
import re
import shutil
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from ragprep.settings import Settings
from tasks.dataset.versions import build_version
from tasks.enrich.run import run_correct, run_headers
from tasks.evaluate.retrieval import EvalOptions
from tasks.evaluate.run import run_evaluate
from tasks.mmdoc.run import run_negatives, run_quotes
from tasks.qa import run as qa_run
from tests.conftest import SAMPLE_DOCS, ingest_into

_BUILT: dict[str, Path] = {}


def sample_version(tmp_path_factory) -> Path:
    """A root holding a published dataset version of sample_docs/ (built once per session)."""
    if "root" not in _BUILT:
        root = tmp_path_factory.mktemp("downstream") / "root"
        settings = ingest_into(root, sorted(SAMPLE_DOCS.glob("*.p*")))
        run_correct(settings)
        run_headers(settings)
        qa_run.run_qa(settings)
        if hasattr(qa_run, "run_judge"):
            qa_run.run_judge(settings)
        run_quotes(settings)
        run_negatives(settings)
        result = build_version(settings)
        assert result.published, result
        # warm the passage cache (chunk texts and their windows) that every copy of the root takes along
        run_evaluate(settings, None, EvalOptions(rerank_depth=10, trained=False))
        _BUILT["root"] = root
    return _BUILT["root"]


def private_copy(root: Path, tmp_path: Path) -> Settings:
    """Settings over a private copy of ``root`` (the cached embeddings come along)."""
    target = tmp_path / "root"
    shutil.copytree(root, target)
    return Settings(root=target, ocr={"enabled": False})


class HashingEmbedder:
    """Hashed word counts, L2-normalised: deterministic and fast (not a language model)."""

    name = "test/hashing-64"
    dim = 64

    def __init__(self) -> None:
        self.passage_calls = 0
        self.query_calls = 0

    def _vectors(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, text in enumerate(texts):
            for word in re.findall(r"\w+", text.lower()):
                out[i, int(hashlib.md5(word.encode()).hexdigest()[:8], 16) % self.dim] += 1.0
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return out / np.where(norms == 0, 1.0, norms)

    def passages(self, texts: Sequence[str]) -> np.ndarray:
        self.passage_calls += len(texts)
        return self._vectors(texts)

    def queries(self, texts: Sequence[str]) -> np.ndarray:
        self.query_calls += len(texts)
        return self._vectors(texts)


def use_hashing_embedder(monkeypatch) -> HashingEmbedder:
    """Make every downstream stage use one ``HashingEmbedder``."""
    embedder = HashingEmbedder()
    for module in ("tasks.evaluate.retrieval", "tasks.export.training", "tasks.train.run"):
        monkeypatch.setattr(f"{module}.configured_embedder", lambda settings: embedder)
    return embedder
