"""The ``ingest`` flow: discover -> one ingest task per document -> assemble tables."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

from prefect import flow
from prefect.artifacts import create_table_artifact
from prefect.futures import as_completed
from prefect.task_runners import ThreadPoolTaskRunner
from pydantic import BaseModel

from ragprep import progress
from ragprep.settings import Settings
from ragprep.storage import Layout
from schemas.documents import DocumentRow
from schemas.runs import RunRow
from tasks.ingest import DocumentOutcome
from tasks.ingest_tasks import assemble_tables_task, discover_task, ingest_document_task


class IngestSummary(BaseModel):
    run: RunRow
    documents: list[DocumentRow]
    tables_dir: str


def build_settings(root: str | None, workers: int | None, ocr: bool | None) -> Settings:
    """Settings from env/ragprep.toml, with the flow's explicit parameters on top."""
    overrides: dict[str, object] = {}
    if root is not None:
        overrides["root"] = Path(root)
    if workers is not None:
        overrides["workers"] = workers
    if ocr is not None:
        overrides["ocr_enabled"] = ocr
    return Settings(**overrides)


def summary_rows(documents: list[DocumentRow]) -> list[dict[str, object]]:
    return [
        {
            "document": d.file_name,
            "type": d.doc_type,
            "format": d.format,
            "status": d.status,
            "units": d.n_units,
            "chunks": d.n_chunks,
            "ocr": d.n_ocr_units,
            "reason": d.error or "; ".join(d.warnings)[:300],
        }
        for d in documents
    ]


def ingest_documents(paths: list[str], settings: Settings) -> IngestSummary:
    """Flow body, callable from ``ragprep run`` with ready-made settings."""
    started = datetime.now(timezone.utc)
    refs = discover_task(paths, settings)
    progress.current().begin_run(len(refs))
    outcomes: list[DocumentOutcome] = []
    pending = []
    try:
        for ref in refs:  # a sliding window keeps at most `workers` documents in flight
            if len(pending) >= settings.workers:
                done = next(as_completed(pending))
                pending.remove(done)
                outcomes.append(done.result())
            pending.append(ingest_document_task.submit(ref, settings))
        outcomes.extend(f.result() for f in as_completed(pending))
    finally:
        progress.current().end_run()
    run, documents = assemble_tables_task(outcomes, settings, started)
    tables_dir = str(Layout(settings.root).tables_dir)
    create_table_artifact(
        key="ingest-summary",
        table=summary_rows(documents),
        description=(
            f"ingest: {run.n_documents} documents ({run.n_ok} ok, {run.n_partial} partial, "
            f"{run.n_failed} failed, {run.n_reused} unchanged and reused), {run.n_chunks} chunks; tables in {tables_dir}"
        ),
    )
    return IngestSummary(run=run, documents=documents, tables_dir=tables_dir)


@flow(name="ingest", task_runner=ThreadPoolTaskRunner(max_workers=16), validate_parameters=True)
def ingest_flow(
    paths: list[str] = ["sample_docs"],  # noqa: B006 - Prefect shows the default in the UI
    root: str | None = None,
    workers: int | None = None,
    ocr: bool | None = None,
) -> IngestSummary:
    """Extract slide decks and PDFs into elements and Markdown chunks (one slide or chapter per chunk).

    Args:
        paths: Files or folders holding .pptx and .pdf documents.
        root: Output root; default RAGPREP_ROOT or ./ragprep-data.
        workers: Documents processed at once (1-16); default RAGPREP_WORKERS or 2.
        ocr: Run Tesseract OCR on pictures and text-less pages; default RAGPREP_OCR_ENABLED or on.
    """
    return ingest_documents(paths, build_settings(root, workers, ocr))
