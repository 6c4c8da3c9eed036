"""Discover documents, ingest each one (extract + chunk) into per-document parts,
and assemble the parts into the ``documents``, ``elements`` and ``chunks`` tables.

Per-document parts live under ``parts/<doc_id>-<settings fingerprint>/`` and are
written to a temporary directory renamed into place when complete, so an unchanged
document costs nothing on the next run, and a crash never leaves a half part.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import tempfile
import time
from collections.abc import Callable, Sequence
from datetime import datetime, timezone
from pathlib import Path

import pyarrow as pa
from pydantic import BaseModel

from ragprep import __version__
from ragprep.engines.ocr import OcrEngine, make_ocr_engine
from ragprep.errors import RagprepError
from ragprep.ids import doc_id_for, sha256_file, stable_id
from ragprep.settings import Settings
from ragprep.storage import Layout
from ragprep.tables import TableStore, spec
from schemas.chunks import ChunkRow
from schemas.documents import USABLE_STATUSES, DocumentRow
from schemas.elements import ElementRow
from schemas.runs import RunRow
from tasks.ingest.caps import cap_chunks, cap_elements
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

_cache_log = logging.getLogger("ragprep.cache")


class MissingInputError(RagprepError, FileNotFoundError):
    """An input path does not exist (a typo, or a share that is not mounted): final at once, never retried."""


class NothingIngestedError(RagprepError):
    """A run found no documents, or every document failed: the run must not look like a success.

    The flow raises it after publishing its summary (``summary`` carries it, for the CLI's table).
    """

    def __init__(self, message: str, summary: object | None = None) -> None:
        super().__init__(message)
        self.summary = summary


def nothing_ingested(run: RunRow, paths: Sequence[str]) -> NothingIngestedError | None:
    """The error for a run that found nothing or in which every document failed; None when something was ingested."""
    where = ", ".join(paths) or "(no paths)"
    if run.n_documents == 0:
        return NothingIngestedError(
            f"no documents found under {where} (supported: .pptx, .pdf); check that the folder is mounted and "
            "holds documents, then run again"
        )
    if run.n_ok + run.n_partial == 0:
        return NothingIngestedError(
            f"every document failed ({run.n_failed} of {run.n_documents}) under {where}; see the reason column of "
            "the ingest-summary (tables/documents.parquet), fix or remove those files, then run again"
        )
    return None


def removal_refusal(refs: Sequence[DocumentRef], settings: Settings, paths: Sequence[str]) -> NothingIngestedError | None:
    """Why this run must not touch the tables, decided from discovery alone: nothing was found, or more than
    ``max_removed_share`` of the previous run's documents is gone (a share that failed to mount, a half-synced
    folder) and ``allow_removals`` is off. None when the run may go on."""
    where = ", ".join(paths) or "(no paths)"
    if not refs:
        return NothingIngestedError(
            f"no documents found under {where} (supported: .pptx, .pdf); nothing was changed: check that the folder is "
            "mounted and holds documents, then run again"
        )
    previous = _previous_documents(TableStore(Layout(settings.root)))
    if not previous or settings.allow_removals:
        return None
    found = {ref.path for ref in refs}
    gone = sorted(path for path in previous if path not in found)
    if len(gone) / len(previous) <= settings.max_removed_share:
        return None
    return NothingIngestedError(
        f"{len(gone)} of the previous run's {len(previous)} documents are no longer under {where} (e.g. "
        f"{Path(gone[0]).name}), more than max_removed_share={settings.max_removed_share:g}; nothing was changed: check "
        "that the folder is mounted and complete, or pass --allow-removals (RAGPREP_ALLOW_REMOVALS=true) to remove them"
    )


class DocumentRef(BaseModel, frozen=True):
    """A file to ingest: small and hashable, what flows pass to tasks."""

    path: str
    doc_type: str
    format: str
    doc_type_reason: str | None = None
    problem: str | None = None
    """Why the file cannot be ingested, known at discovery (a file name that is not UTF-8): it becomes a failed row."""


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
            raise MissingInputError(f"{path}: no such file or folder; mount the share or fix the paths given")
        if path.is_dir():
            for child in sorted(path.rglob("*")):
                hidden = any(part.startswith(".") for part in child.relative_to(path).parts)
                if child.is_file() and not hidden and child.suffix.lower() in wanted:
                    found.setdefault(str(child.resolve()), child)
        else:
            found.setdefault(str(path.resolve()), path)
    refs = [_ref_for(p, settings) for p in found.values()]
    return sorted(refs, key=lambda r: r.path)


def _ref_for(path: Path, settings: Settings) -> DocumentRef:
    """A file's ref; a name that is not valid UTF-8 (bytes the file system decoded as surrogates) cannot be written
    to a table or sent to Prefect, so its ref carries a printable path and the reason it fails."""
    raw = path.as_posix()
    try:
        raw.encode("utf-8")
    except UnicodeEncodeError:
        printable = raw.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
        name = printable.rsplit("/", 1)[-1]
        return DocumentRef(
            path=printable, doc_type=settings.doc_type_for(name), format=format_of(Path(name)),
            problem=f"{name}: file name is not valid UTF-8; rename the file (e.g. `convmv -f cp949 -t utf8 --notest`)",
        )
    return DocumentRef(path=raw, doc_type=settings.doc_type_for(path), format=format_of(path),
                       doc_type_reason=settings.doc_type_rule(path)[1])


def one_line(text: str) -> str:
    """A reason on one line: line breaks (a file name may hold one) shown as ``\\n``."""
    return text.replace("\r", "\\r").replace("\n", "\\n")


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
        error=one_line(error),
        extractor=f"ragprep {__version__}",
        settings_fingerprint=settings.extraction_fingerprint(),
    )


def _reusable_part(part: Path) -> DocumentRow | None:
    """The document of a complete, readable cached part with status ok; None otherwise.

    Partial parts are retried. An unreadable ``document.json`` or Parquet file (truncated, garbage) or one
    whose row count disagrees with ``document.json`` is a cache miss: one warning naming the file, and the
    document is extracted again and its part replaced. Only the Parquet footers are read here.
    """
    doc_file = part / "document.json"
    if not doc_file.exists():
        return None
    try:
        cached = DocumentRow.model_validate_json(doc_file.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        _cache_log.warning("unreadable cached part %s (%s): treated as a miss, recomputed and replaced",
                           doc_file, type(exc).__name__)
        return None
    if cached.status != "ok":
        return None
    for name, expected in (("elements", cached.n_elements), ("chunks", cached.n_chunks)):
        rows = TableStore.cached_part_num_rows(part / f"{name}.parquet")
        if rows is None:
            return None
        if rows != expected:
            _cache_log.warning("cached part %s holds %d rows, %s says %d: treated as a miss, recomputed and replaced",
                               part / f"{name}.parquet", rows, doc_file.name, expected)
            return None
    return cached


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
    if ref.problem is not None:
        row = _failed_row(ref, "", 0, ref.problem, settings)
        return DocumentOutcome(document=row, part_dir=None, reused=False, seconds=time.perf_counter() - started)
    try:
        size = path.stat().st_size
        content_sha = sha256_file(path)
    except OSError as exc:
        row = _failed_row(ref, "", 0, f"{path.name}: cannot read file ({exc.strerror or exc})", settings)
        return DocumentOutcome(document=row, part_dir=None, reused=False, seconds=time.perf_counter() - started)
    doc_id = doc_id_for(content_sha)
    fingerprint = settings.extraction_fingerprint()
    part = layout.part_dir(doc_id, fingerprint)
    cached = _reusable_part(part)
    if cached is not None and cached.format == ref.format:  # the same bytes under a swapped extension are re-read
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
    elements, element_cuts = cap_elements(extracted.elements, settings.limits)
    chunks, chunk_cuts = cap_chunks(
        build_chunks(doc_id, ref.path, extracted.format, elements, extracted.outline, extracted.n_units, settings),
        settings.limits,
    )
    warnings = [*extracted.warnings, *element_cuts, *chunk_cuts]
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
        n_elements=len(elements),
        n_chunks=len(chunks),
        n_ocr_units=extracted.n_ocr_units,
        status="partial" if warnings else "ok",
        warnings=warnings,
        extractor=extracted.extractor,
        settings_fingerprint=fingerprint,
    )
    _write_part(part, document, elements, chunks, extracted.outline)
    return DocumentOutcome(document=document, part_dir=str(part), reused=False, seconds=time.perf_counter() - started)


def _mark_duplicates(outcomes: Sequence[DocumentOutcome]) -> tuple[list[DocumentRow], list[Path]]:
    """Documents sorted by path, a later file with identical content to an earlier one marked ``duplicate``
    (pointing at the first path; ingested once), and the part directories of the documents that contribute rows."""
    first_path: dict[str, str] = {}
    documents: list[DocumentRow] = []
    parts: list[Path] = []
    for outcome in sorted(outcomes, key=lambda o: o.document.path):
        doc = outcome.document
        if doc.status in USABLE_STATUSES and doc.doc_id in first_path:
            first = first_path[doc.doc_id]
            doc = doc.model_copy(
                update={
                    "doc_id": stable_id("duplicate", doc.path, doc.content_sha256),
                    "status": "duplicate",
                    "error": one_line(f"{doc.file_name}: identical content to {first}; ingested once, under that path"),
                    "duplicate_of": first,
                    "n_elements": 0,
                    "n_chunks": 0,
                    "n_ocr_units": 0,
                    "warnings": [],
                }
            )
        elif doc.status in USABLE_STATUSES:
            first_path[doc.doc_id] = doc.path
            if outcome.part_dir:
                parts.append(Path(outcome.part_dir))
        documents.append(doc)
    return documents, parts


def _ref_of(document: DocumentRow) -> DocumentRef:
    return DocumentRef(path=document.path, doc_type=document.doc_type, format=document.format,
                       doc_type_reason=document.doc_type_reason)


PartTables = dict[str, tuple[pa.Table, pa.Table]]
"""Part directory -> (elements, chunks) as read."""


def _read_part(part: Path) -> tuple[pa.Table, pa.Table] | None:
    elements = TableStore.read_cached_part_arrow(part / "elements.parquet", "elements")
    chunks = TableStore.read_cached_part_arrow(part / "chunks.parquet", "chunks") if elements is not None else None
    return (elements, chunks) if chunks is not None else None


def _read_parts(outcomes: Sequence[DocumentOutcome], settings: Settings) -> tuple[list[DocumentOutcome], PartTables]:
    """The tables of every contributing part, and the outcomes; a document whose part cannot be read (truncated,
    garbage: warned, naming the file) is extracted again into a fresh part, so a corrupt cache never sinks the run."""
    checked: list[DocumentOutcome] = []
    tables: PartTables = {}
    for outcome in outcomes:
        part = outcome.part_dir
        if part is not None and part not in tables and outcome.document.status in USABLE_STATUSES:
            read = _read_part(Path(part))
            if read is None:
                shutil.rmtree(part, ignore_errors=True)
                fresh = ingest_document(_ref_of(outcome.document), settings, make_ocr_engine(settings, Layout(settings.root)))
                outcome = fresh.model_copy(update={"reused": False})
                read = _read_part(Path(outcome.part_dir)) if outcome.part_dir else None
                if outcome.part_dir and read is None:
                    raise RagprepError(f"{outcome.part_dir}: part unreadable right after it was written; check the disk")
            if read is not None:
                tables[outcome.part_dir] = read
        checked.append(outcome)
    return checked, tables


def _concat(tables: list[pa.Table], name: str) -> pa.Table:
    return pa.concat_tables(tables) if tables else spec(name).schema.empty_table()


def _previous_documents(store: TableStore) -> dict[str, DocumentRow]:
    """The previous run's present documents by path (none when there is no readable ``documents`` table)."""
    rows = TableStore.read_cached_part(store.path("documents"), "documents") or []
    return {d.path: d for d in rows if d.status != "removed"}


def _with_changes(
    documents: list[DocumentRow], reused: set[str], previous: dict[str, DocumentRow]
) -> list[DocumentRow]:
    """Each document's ``change`` against the previous run, plus a ``removed`` row for every document of
    that run not found this time; sorted by path."""
    rows: list[DocumentRow] = []
    for doc in documents:
        before = previous.get(doc.path)
        if doc.status == "failed":
            change = "failed"
        elif before is None:
            change = "new"
        elif before.content_sha256 != doc.content_sha256:
            change = "changed"
        else:
            change = "unchanged" if doc.path in reused or doc.status == "duplicate" else "changed"
        rows.append(doc.model_copy(update={"change": change}))
    present = {d.path for d in documents}
    for path, before in previous.items():
        if path not in present:
            rows.append(before.model_copy(update={
                "doc_id": stable_id("removed", path, before.content_sha256),
                "status": "removed",
                "change": "removed",
                "error": one_line(f"{before.file_name}: no longer found under the input paths; its rows left the tables"),
                "duplicate_of": None,
                "n_elements": 0,
                "n_chunks": 0,
                "warnings": [],
            }))
    return sorted(rows, key=lambda d: d.path)


def _run_row(documents: list[DocumentRow], outcomes: Sequence[DocumentOutcome], settings: Settings,
             started_at: datetime, counts: tuple[int, int]) -> RunRow:
    present = [d for d in documents if d.status != "removed"]

    def n(field: str, value: str) -> int:
        return sum(getattr(d, field) == value for d in documents)

    return RunRow(
        run_id=stable_id("run", started_at.isoformat(), settings.extraction_fingerprint()),
        started_at=started_at,
        finished_at=datetime.now(timezone.utc),
        n_documents=len(present),
        n_ok=n("status", "ok"),
        n_partial=n("status", "partial"),
        n_failed=n("status", "failed"),
        n_duplicate=n("status", "duplicate"),
        n_reused=sum(o.reused for o in outcomes),
        n_new=n("change", "new"),
        n_changed=n("change", "changed"),
        n_unchanged=n("change", "unchanged"),
        n_removed=n("change", "removed"),
        n_elements=counts[0],
        n_chunks=counts[1],
        settings_fingerprint=settings.extraction_fingerprint(),
        ragprep_version=__version__,
    )


def assemble_tables(
    outcomes: Sequence[DocumentOutcome], settings: Settings, started_at: datetime
) -> tuple[RunRow, list[DocumentRow]]:
    """Write the run's tables (replacing the previous run's), append a ``runs`` row,
    and return that row with the documents as written.

    Each document's ``change`` is set against the previous run's ``documents`` table, which also gives a
    ``removed`` row for each document no longer found. A part that cannot be read is recomputed first.
    """
    store = TableStore(Layout(settings.root))
    outcomes, tables = _read_parts(outcomes, settings)
    found, parts = _mark_duplicates(outcomes)
    documents = _with_changes(found, {o.document.path for o in outcomes if o.reused}, _previous_documents(store))
    elements = _concat([tables[str(p)][0] for p in parts], "elements")
    chunks = _concat([tables[str(p)][1] for p in parts], "chunks")
    store.write_set({"documents": documents, "elements": elements, "chunks": chunks})  # all or none
    run = _run_row(documents, outcomes, settings, started_at, (elements.num_rows, chunks.num_rows))
    store.append("runs", [run])
    return run, documents
