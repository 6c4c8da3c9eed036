"""Shared fixtures: real documents (sample_docs/ and ../shared/corpus/), and one
extraction per (file, OCR on/off) per session so the many content assertions stay fast."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from ragprep.settings import Settings
from ragprep.storage import Layout
from tasks.chunking import build_chunks
from tasks.extract import ExtractContext, extract
from tasks.ingest import make_ocr_engine

REPO = Path(__file__).resolve().parents[1]
SAMPLE_DOCS = REPO / "sample_docs"
CORPUS = REPO.parent / "shared" / "corpus"


def tesseract_ready() -> bool:
    return make_ocr_engine(Settings(), Layout(Path("/nonexistent"))).unavailable_reason() is None


needs_tesseract = pytest.mark.skipif(not shutil.which("tesseract"), reason="tesseract not installed (make system-deps)")


@pytest.fixture(scope="session")
def corpus() -> Path:
    assert CORPUS.is_dir(), f"the shared corpus is expected at {CORPUS}"
    return CORPUS


class Extracted:
    def __init__(self, doc, chunks, layout: Layout) -> None:
        self.doc = doc
        self.elements = doc.elements
        self.chunks = chunks
        self.layout = layout

    def kind(self, kind: str, number: int | None = None):
        return [e for e in self.elements if e.kind == kind and (number is None or e.number == number)]

    def chunk_text(self) -> str:
        return "\n\n".join(c.markdown for c in self.chunks)


@pytest.fixture(scope="session")
def extracted(tmp_path_factory):
    """extracted(path, ocr=False) -> Extracted; cached per session."""
    cache: dict[tuple[str, bool], Extracted] = {}
    root = tmp_path_factory.mktemp("extract-root")

    def run(path: Path, ocr: bool = False) -> Extracted:
        key = (str(path), ocr)
        if key not in cache:
            settings = Settings(root=root, ocr_enabled=ocr)
            layout = Layout(root)
            ctx = ExtractContext(
                doc_id="test-" + path.stem, source_path=str(path), settings=settings, layout=layout,
                ocr=make_ocr_engine(settings, layout),
            )
            doc = extract(path, ctx)
            chunks = build_chunks(ctx.doc_id, str(path), doc.format, doc.elements, doc.outline, doc.n_units, settings)
            cache[key] = Extracted(doc, chunks, layout)
        return cache[key]

    return run


@pytest.fixture(scope="session")
def prefect_server():
    """A real Prefect API server on loopback for the whole session (SQLite in a temp dir)."""
    import os

    os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
    os.environ.setdefault("DO_NOT_TRACK", "1")
    from prefect.settings import PREFECT_API_URL
    from prefect.testing.utilities import prefect_test_harness

    with prefect_test_harness(server_startup_timeout=120):
        url = PREFECT_API_URL.value()
        assert url and ("127.0.0.1" in url or "localhost" in url), url
        yield url
