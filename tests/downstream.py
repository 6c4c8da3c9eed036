"""Shared set-up of the downstream tests (evaluate, export train, train): one small published version of sample_docs.

``run_sample_pipeline`` runs ``pipeline_flow`` over sample_docs/ (OCR off, two workers: ingest, describe, correct,
headers, qa, judge, quotes, negatives, a published dataset version) recording every progress event and stage log line
(the conftest ``pipeline_run`` session fixture, which test_progress.py reads); ``sample_version`` evaluates that
version once (which fills the passage-vector cache): the conftest ``version_root`` session fixture; each test gets a
private copy of that root. ``HashingEmbedder`` is a fast, deterministic stand-in for
the embedder (hashed word counts) for tests that check bookkeeping rather than retrieval quality.
"""

from __future__ import annotations

import hashlib
import re
import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ragprep.settings import Settings
from tasks.evaluate.retrieval import EvalOptions
from tasks.evaluate.run import run_evaluate
from tests.conftest import SAMPLE_DOCS


class RecordingSink:
    """Every progress event, as (event, name[, detail])."""

    def __init__(self) -> None:
        self.events: list[tuple] = []

    def begin_run(self, n_documents):
        self.events.append(("begin_run", n_documents))

    def begin_document(self, name):
        self.events.append(("begin_document", name))
        return lambda done, total: self.events.append(("advance_document", name, done, total))

    def end_document(self, name, status):
        self.events.append(("end_document", name, status))

    def end_run(self):
        self.events.append(("end_run",))

    def begin_stage(self, name, unit):
        self.events.append(("begin_stage", name))
        return lambda done, total: self.events.append(("advance", name, done, total))

    def end_stage(self, name, status):
        self.events.append(("end_stage", name, status))


class RecordingLogger:
    def __init__(self) -> None:
        self.lines: list[str] = []

    def info(self, message, *args):
        self.lines.append(message % args if args else message)

    warning = error = debug = info


@dataclass(frozen=True)
class PipelineRun:
    """The root of one ``pipeline_flow`` run, its summary, and what it reported while it ran."""

    root: Path
    summary: object
    sink: RecordingSink
    logger: RecordingLogger


def run_sample_pipeline(root: Path) -> PipelineRun:
    """``pipeline_flow`` over sample_docs/ into ``root`` (OCR off, two workers), every progress event and stage log
    line recorded (needs the Prefect server of the ``prefect_server`` fixture)."""
    import pytest

    from flows.pipeline import pipeline_flow
    from ragprep import progress

    sink, logger = RecordingSink(), RecordingLogger()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(progress, "_current", sink)
        patch.setattr("tasks.wrappers.get_run_logger", lambda: logger)
        summary = pipeline_flow(paths=[str(SAMPLE_DOCS)], root=str(root), workers=2, ocr=False)
    return PipelineRun(root=root, summary=summary, sink=sink, logger=logger)


def sample_version(run: PipelineRun) -> Path:
    """The root of ``run`` (sample_docs/ through every stage to a published dataset version), evaluated once: the
    passage cache (chunk texts and their windows) that every copy of the root takes along is warm."""
    assert run.summary.dataset is not None and run.summary.dataset.published, run.summary.dataset
    run_evaluate(Settings(root=run.root, ocr={"enabled": False}), None, EvalOptions(rerank_depth=10, trained=False))
    return run.root


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
