"""Where ragprep's files live under the root, and how they are written.

Layout under ``root``::

    images/ab/abcdef....png      content-addressed pictures and crops
    cache/ocr/<key>.json         OCR results keyed by image hash + languages + engine
    cache/llm/, cache/embeddings/ LLM/VLM replies and passage vectors
    parts/<doc_id>-<fp>/         per-document Parquet parts (elements, chunks, document)
    parts/quotes/                per-PDF quotes
    tables/<name>.parquet        the assembled tables queried by ``ragprep sql``
    review/                      decisions.parquet (durable) and the HTML review reports
    datasets/                    dataset versions (the default local store)
    refmatch/<name>.parquet      answer segments and the chunks they cite (``ragprep refmatch``)
    evaluations/<version>/       retrieval evaluations (Parquet + Markdown report)
    models/<kind>/<id>/          trained query adapters and re-rankers with their cards
    exports/training/<version>/  training exports (retriever, re-ranker, SFT JSONL + card)
    index/<variant>/             search index of a dataset version: LanceDB vectors, BM25, manifest.json

Every file is written to a temporary name in the same directory and renamed into
place, so a crash never leaves a half-written file behind.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from ragprep.ids import sha256_bytes


@contextmanager
def _replacing(path: Path) -> Iterator[str]:
    """A temporary file beside ``path`` that replaces it when the block ends without an error."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.close(fd)
    try:
        yield tmp
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write bytes so that readers see the old file or the whole new one, never a part."""
    with _replacing(path) as tmp:
        Path(tmp).write_bytes(data)


def write_parquet(table: pa.Table, path: Path) -> None:
    """Write Parquet (zstd) in place: for files inside a folder that is itself staged and renamed."""
    pq.write_table(table, path, compression="zstd")


def atomic_write_parquet(table: pa.Table, path: Path) -> None:
    """Write a Parquet file (zstd) atomically."""
    with _replacing(path) as tmp:
        write_parquet(table, Path(tmp))


@dataclass(frozen=True)
class StoredImage:
    rel_path: str
    sha256: str


def _folder(*parts: str, doc: str) -> property:
    """A path under the root, as a read-only attribute of ``Layout``."""
    return property(lambda self: self.root.joinpath(*parts), doc=doc)


@dataclass(frozen=True)
class Layout:
    """Paths under one ragprep root."""

    root: Path

    images_dir = _folder("images", doc="Content-addressed pictures and crops.")
    ocr_cache_dir = _folder("cache", "ocr", doc="Cached OCR results.")
    llm_cache_dir = _folder("cache", "llm", doc="Cached LLM/VLM replies.")
    embeddings_cache_dir = _folder("cache", "embeddings", doc="Cached passage vectors.")
    parts_dir = _folder("parts", doc="Per-document Parquet parts and per-PDF quotes.")
    tables_dir = _folder("tables", doc="The assembled Parquet tables (the working tables of the last run).")
    review_dir = _folder("review", doc="Review decisions and the HTML review reports.")
    review_table = _folder("review", "decisions.parquet", doc="The durable table of expert decisions (kept across builds).")
    header_review_table = _folder(
        "review", "header_decisions.parquet", doc="Expert values of report header fields (kept across builds)."
    )
    latest_review_report = _folder("review", "latest.html", doc="The latest HTML review report.")
    datasets_dir = _folder("datasets", doc="The default local dataset store (``dataset_uri`` may name another).")
    evaluations_dir = _folder("evaluations", doc="Retrieval evaluations, one folder per dataset version (Parquet + Markdown).")
    models_dir = _folder("models", doc="Trained query adapters and re-rankers, one folder per model, each with its card.")
    refmatch_dir = _folder("refmatch", doc="Reference-matching results: one Parquet of answer segments and citations per input.")
    training_exports_dir = _folder("exports", "training", doc="Training exports (retriever, re-ranker, SFT), one folder per version.")
    index_dir = _folder("index", doc="Search indexes, one folder per text variant (``index/v1``, ``index/v0``).")

    def part_dir(self, doc_id: str, fingerprint: str) -> Path:
        """The Parquet parts of one document for one fingerprint."""
        return self.parts_dir / f"{doc_id}-{fingerprint}"

    def quotes_part(self, doc_id: str, fingerprint: str) -> Path:
        """A PDF's cached quotes for one set of quote settings."""
        return self.parts_dir / "quotes" / f"{doc_id}-{fingerprint}.parquet"

    def table_path(self, name: str) -> Path:
        """The Parquet file of table ``name``."""
        return self.tables_dir / f"{name}.parquet"

    def save_image(self, data: bytes, ext: str) -> StoredImage:
        """Store image bytes once under their SHA-256; return the root-relative path."""
        digest = sha256_bytes(data)
        ext = ext.lower().lstrip(".") or "bin"
        rel = Path("images") / digest[:2] / f"{digest}.{ext}"
        target = self.root / rel
        if not target.exists():
            atomic_write_bytes(target, data)
        return StoredImage(rel_path=rel.as_posix(), sha256=digest)

    def write_json(self, path: Path, payload: object) -> None:
        """Write ``payload`` as indented, key-sorted JSON, atomically."""
        atomic_write_bytes(path, json.dumps(payload, ensure_ascii=False, indent=2, sort_keys=True).encode("utf-8"))
