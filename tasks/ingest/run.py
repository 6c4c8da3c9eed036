"""Discover documents, ingest each one (extract + chunk) into per-document parts,
and assemble the parts into the ``documents``, ``elements`` and ``chunks`` tables.

Per-document parts live under ``parts/<doc_id>-<settings fingerprint>/`` and are
written to a temporary directory renamed into place when complete, so an unchanged
document costs nothing on the next run, and a crash never leaves a half part.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import time
from collections.abc import Callable, Sequence
from datetime import datetime, timezone
from pathlib import Path

from pydantic import BaseModel

from ragprep import __version__
from ragprep.engines.ocr import OcrEngine, TesseractOcr
from ragprep.ids import doc_id_for, sha256_file, stable_id
from ragprep.settings import Settings
from ragprep.storage import Layout
from ragprep.tables import TableStore
from schemas.chunks import ChunkRow
from schemas.documents import DocumentRow
from schemas.elements import ElementRow
from schemas.runs import RunRow
from tasks.ingest.chunking import build_chunks
from tasks.ingest.extract import (
    KNOWN_UNSUPPORTED_SUFFIXES,
    SUPPORTED_SUFFIXES,
    DocumentError,
    ExtractContext,
    extract,
    format_of,
)
from tasks.ingest.extract.base import OutlineEntry


class DocumentRef(BaseModel, frozen=True):
    """A file to ingest: small and hashable, what flows pass to tasks."""

    path: str
    doc_type: str
    format: str
    doc_type_reason: str | None = None


class DocumentOutcome(BaseModel, frozen=True):
    """What ingesting one document produced; the part directory holds the rows."""

    document: DocumentRow
    part_dir: str | None
    reused: bool
    seconds: float


def discover(paths: Sequence[Path], settings: Settings) -> list[DocumentRef]:
    """Files to ingest, sorted and without duplicates.

    A directory contributes (recursively) its files with a supported suffix and the
    document-like files ragprep cannot read yet (they are reported as failed rather
    than silently skipped); hidden files are ignored. A file named explicitly is
    always included, whatever its suffix. A path that does not exist raises.
    """
    wanted = set(SUPPORTED_SUFFIXES) | KNOWN_UNSUPPORTED_SUFFIXES
    found: dict[str, Path] = {}
    for path in paths:
        if not path.exists():
            raise FileNotFoundError(f"{path}: no such file or directory")
        if path.is_dir():
            for child in sorted(path.rglob("*")):
                hidden = any(part.startswith(".") for part in child.relative_to(path).parts)
                if child.is_file() and not hidden and child.suffix.lower() in wanted:
                    found.setdefault(str(child.resolve()), child)
        else:
            found.setdefault(str(path.resolve()), path)
    refs = [
        DocumentRef(path=p.as_posix(), doc_type=settings.doc_type_for(p), format=format_of(p),
                    doc_type_reason=settings.doc_type_rule(p)[1])
        for p in found.values()
    ]
    return sorted(refs, key=lambda r: r.path)


def make_ocr_engine(settings: Settings, layout: Layout) -> OcrEngine | None:
    """Tesseract with the configured languages, cached under the root; None when OCR is disabled."""
    if not settings.ocr.enabled:
        return None
    return TesseractOcr(settings.ocr.languages, settings.ocr.min_confidence, layout.ocr_cache_dir)


def _failed_row(ref: DocumentRef, content_sha: str, size: int, error: str, settings: Settings) -> DocumentRow:
    return DocumentRow(
        doc_id=stable_id("failed", ref.path, content_sha),
        content_sha256=content_sha,
        path=ref.path,
        file_name=Path(ref.path).name,
        doc_type=ref.doc_type,
        doc_type_reason=ref.doc_type_reason,
        format=ref.format,
        size_bytes=size,
        status="failed",
        error=error,
        extractor=f"ragprep {__version__}",
        settings_fingerprint=settings.extraction_fingerprint(),
    )


def _read_part_document(part: Path) -> DocumentRow:
    return DocumentRow.model_validate_json((part / "document.json").read_text(encoding="utf-8"))


def _write_part(
    part: Path, document: DocumentRow, elements: list[ElementRow], chunks: list[ChunkRow], outline: list[OutlineEntry]
) -> None:
    part.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(dir=part.parent, prefix=f".{part.name}."))
    try:
        TableStore.write_part(staging / "elements.parquet", "elements", elements)
        TableStore.write_part(staging / "chunks.parquet", "chunks", chunks)
        (staging / "outline.json").write_text(
            json.dumps([o.__dict__ for o in outline], ensure_ascii=False), encoding="utf-8"
        )
        (staging / "document.json").write_text(document.model_dump_json(indent=2), encoding="utf-8")
        if part.exists():
            shutil.rmtree(part)
        os.replace(staging, part)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise


def ingest_document(
    ref: DocumentRef,
    settings: Settings,
    ocr: OcrEngine | None,
    progress: Callable[[int, int], None] | None = None,
) -> DocumentOutcome:
    """Extract and chunk one file. Never raises for a bad file: it becomes a failed row."""
    started = time.perf_counter()
    layout = Layout(settings.root)
    path = Path(ref.path)
    try:
        size = path.stat().st_size
        content_sha = sha256_file(path)
    except OSError as exc:
        row = _failed_row(ref, "", 0, f"{path.name}: cannot read file ({exc.strerror or exc})", settings)
        return DocumentOutcome(document=row, part_dir=None, reused=False, seconds=time.perf_counter() - started)
    doc_id = doc_id_for(content_sha)
    fingerprint = settings.extraction_fingerprint()
    part = layout.part_dir(doc_id, fingerprint)
    cached = _read_part_document(part) if (part / "document.json").exists() else None
    if cached is not None and cached.status == "ok":  # partial parts are retried
        document = cached.model_copy(
            update={"path": ref.path, "file_name": path.name, "doc_type": ref.doc_type, "doc_type_reason": ref.doc_type_reason}
        )
        return DocumentOutcome(document=document, part_dir=str(part), reused=True, seconds=time.perf_counter() - started)
    ctx = ExtractContext(doc_id=doc_id, source_path=ref.path, settings=settings, layout=layout, ocr=ocr, progress=progress)
    try:
        extracted = extract(path, ctx)
    except DocumentError as exc:
        row = _failed_row(ref, content_sha, size, str(exc), settings)
        return DocumentOutcome(document=row, part_dir=None, reused=False, seconds=time.perf_counter() - started)
    except Exception as exc:  # a backend bug must not sink the run: record it against the file
        reason = f"{path.name}: extraction crashed ({type(exc).__name__}: {exc})"
        row = _failed_row(ref, content_sha, size, reason, settings)
        return DocumentOutcome(document=row, part_dir=None, reused=False, seconds=time.perf_counter() - started)
    chunks = build_chunks(doc_id, ref.path, extracted.format, extracted.elements, extracted.outline, extracted.n_units, settings)
    warnings = list(extracted.warnings)
    if ocr is not None and (reason := ocr.unavailable_reason()):
        warnings.append(f"OCR unavailable: {reason}")
    document = DocumentRow(
        doc_id=doc_id,
        content_sha256=content_sha,
        path=ref.path,
        file_name=path.name,
        doc_type=ref.doc_type,
        doc_type_reason=ref.doc_type_reason,
        format=extracted.format,
        size_bytes=size,
        title=extracted.title,
        n_units=extracted.n_units,
        n_elements=len(extracted.elements),
        n_chunks=len(chunks),
        n_ocr_units=extracted.n_ocr_units,
        status="partial" if warnings else "ok",
        warnings=warnings,
        extractor=extracted.extractor,
        settings_fingerprint=fingerprint,
    )
    _write_part(part, document, extracted.elements, chunks, extracted.outline)
    return DocumentOutcome(document=document, part_dir=str(part), reused=False, seconds=time.perf_counter() - started)


def _mark_duplicates(outcomes: Sequence[DocumentOutcome]) -> tuple[list[DocumentRow], list[Path]]:
    """Documents sorted by path, a second file with identical content marked failed,
    and the part directories of the documents that contribute rows."""
    first_path: dict[str, str] = {}
    documents: list[DocumentRow] = []
    parts: list[Path] = []
    for outcome in sorted(outcomes, key=lambda o: o.document.path):
        doc = outcome.document
        if doc.status != "failed" and doc.doc_id in first_path:
            doc = doc.model_copy(
                update={
                    "doc_id": stable_id("duplicate", doc.path, doc.content_sha256),
                    "status": "failed",
                    "error": f"{doc.file_name}: identical content to {first_path[doc.doc_id]}; ingested once",
                    "n_elements": 0,
                    "n_chunks": 0,
                }
            )
        elif doc.status != "failed":
            first_path[doc.doc_id] = doc.path
            if outcome.part_dir:
                parts.append(Path(outcome.part_dir))
        documents.append(doc)
    return documents, parts


def assemble_tables(
    outcomes: Sequence[DocumentOutcome], settings: Settings, started_at: datetime
) -> tuple[RunRow, list[DocumentRow]]:
    """Write the run's tables (replacing the previous run's), append a ``runs`` row,
    and return that row with the documents as written."""
    store = TableStore(Layout(settings.root))
    documents, parts = _mark_duplicates(outcomes)
    elements = store.read_parts((p / "elements.parquet" for p in parts), "elements")
    chunks = store.read_parts((p / "chunks.parquet" for p in parts), "chunks")
    store.write("documents", documents)
    store.write_arrow("elements", elements)
    store.write_arrow("chunks", chunks)
    run = RunRow(
        run_id=stable_id("run", started_at.isoformat(), settings.extraction_fingerprint()),
        started_at=started_at,
        finished_at=datetime.now(timezone.utc),
        n_documents=len(documents),
        n_ok=sum(d.status == "ok" for d in documents),
        n_partial=sum(d.status == "partial" for d in documents),
        n_failed=sum(d.status == "failed" for d in documents),
        n_reused=sum(o.reused for o in outcomes),
        n_elements=elements.num_rows,
        n_chunks=chunks.num_rows,
        settings_fingerprint=settings.extraction_fingerprint(),
        ragprep_version=__version__,
    )
    store.append("runs", [run])
    return run, documents
