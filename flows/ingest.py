"""The ``ingest`` flow: discover -> one ingest task per document -> assemble tables."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Literal

from prefect import flow
from prefect.futures import as_completed
from prefect.task_runners import ThreadPoolTaskRunner
from pydantic import BaseModel

from flows.artifacts import publish_table
from flows.runners import document_runner
from flows.runtime import Workers, building, run_name
from ragprep import progress
from ragprep.report import Report
from ragprep.settings import MAX_WORKERS, Settings
from ragprep.storage import Layout
from schemas.documents import DocumentRow
from schemas.runs import RunRow
from tasks.ingest.run import DocumentOutcome, nothing_ingested, removal_refusal
from tasks.wrappers import assemble_tables_task, discover_task, ingest_document_task

_STATUS_COLOURS = {"ok": "green", "partial": "yellow", "failed": "red", "duplicate": "cyan", "removed": "magenta"}


class IngestSummary(BaseModel):
    """The run row and the documents as written, for the CLI and the ``ingest-summary`` artifact."""

    run: RunRow
    documents: list[DocumentRow]
    tables_dir: str

    def headline(self) -> str:
        """One line of counts: by status, then by change against the previous run."""
        run = self.run
        return (f"{run.n_documents} documents: {run.n_ok} ok, {run.n_partial} partial, {run.n_failed} failed, "
                f"{run.n_duplicate} duplicate; {self.changes()}; {run.n_elements} elements, {run.n_chunks} chunks")

    def changes(self) -> str:
        """``3 new, 1 changed, 40 unchanged, 2 removed, 1 failed``: against the previous run."""
        run = self.run
        return (f"{run.n_new} new, {run.n_changed} changed, {run.n_unchanged} unchanged, {run.n_removed} removed, "
                f"{run.n_failed} failed")

    def report(self, colour: bool = False) -> Report:
        """One row per document (status coloured for a terminal when ``colour``)."""
        rows = [
            [d.file_name, d.doc_type, d.format,
             f"[{_STATUS_COLOURS[d.status]}]{d.status}[/]" if colour else d.status,
             d.change, d.n_units, d.n_chunks, d.n_ocr_units, d.error or "; ".join(d.warnings)[:300]]
            for d in self.documents
        ]
        return Report(
            title="ragprep: documents",
            columns=["document", "type", "format", "status", "change", "units", "chunks", "ocr", "reason"],
            rows=rows,
            notes=[self.headline()],
        )


def ingest_documents(paths: list[str], settings: Settings) -> IngestSummary:
    """Flow body, callable from ``ragprep run`` with ready-made settings.

    A run in which every document failed publishes its summary and then raises ``NothingIngestedError`` (carrying the
    summary), so the flow run ends ``Failed`` with the reason. A run that finds no documents, or in which more than
    ``settings.max_removed_share`` of the previous run's documents is gone, raises it before any table is touched.
    """
    started = datetime.now(timezone.utc)
    refs = discover_task(paths, settings)
    refusal = removal_refusal(refs, settings, paths)  # decided before any table (or part) is touched
    if refusal is not None:
        raise refusal
    progress.current().begin_run(len(refs))
    outcomes: list[DocumentOutcome] = []
    pending = []
    try:
        with document_runner(settings) as runner:  # the flow's threads, or Dask processes (task_runner = dask)
            for ref in refs:  # a sliding window keeps at most `workers` documents in flight
                if len(pending) >= settings.workers:
                    done = next(as_completed(pending))
                    pending.remove(done)
                    outcomes.append(runner.result(done))
                pending.append(runner.submit(ingest_document_task, ref=ref, settings=settings))
            outcomes.extend(runner.result(f) for f in as_completed(pending))
    finally:
        progress.current().end_run()
    run, documents = assemble_tables_task(outcomes, settings, started)
    summary = IngestSummary(run=run, documents=documents, tables_dir=str(Layout(settings.root).tables_dir))
    publish_table(
        "ingest-summary",
        summary.report(),
        f"ingest: {run.n_documents} documents ({run.n_ok} ok, {run.n_partial} partial, {run.n_failed} failed, "
        f"{run.n_duplicate} duplicate; {summary.changes()}), {run.n_chunks} chunks; tables in {summary.tables_dir}",
    )
    error = nothing_ingested(run, paths)
    if error is not None:
        error.summary = summary
        raise error
    return summary


RUN_PARAMETERS = f"""

    Args:
        paths: Files or folders holding .pptx and .pdf documents.
        root: Output root; default RAGPREP_ROOT or ./ragprep-data.
        workers: Documents processed at once (1-{MAX_WORKERS}); default RAGPREP_WORKERS or 2.
        ocr: Run Tesseract OCR on pictures and text-less pages; default RAGPREP_OCR__ENABLED or on.
    """
"""The parameters of the flows that read documents, as the Prefect UI shows them."""


def documents_flow(name: str):
    """``@flow`` for a flow over documents: its thread pool, validated parameters, and the shared
    parameter descriptions appended to its docstring (where the Prefect UI reads them)."""

    def decorate(fn):
        fn.__doc__ = (fn.__doc__ or "").rstrip() + RUN_PARAMETERS
        return flow(name=name, task_runner=ThreadPoolTaskRunner(max_workers=MAX_WORKERS), validate_parameters=True,
                    flow_run_name=run_name)(fn)

    return decorate


# A list default is deliberate in the flows below: the Prefect UI shows it in the run form.
@documents_flow("ingest")
def ingest_flow(
    paths: list[str] = ["sample_docs"], root: str | None = None, workers: Workers = None, ocr: bool | None = None,
    task_runner: Literal["threads", "dask"] | None = None, dask_address: str | None = None,
    allow_removals: bool | None = None,
) -> IngestSummary:
    """Extract slide decks and PDFs into elements and Markdown chunks (one slide or chapter per chunk).

    Ends Failed, after publishing its summary, when every document failed; ends Failed without touching any table when
    no document is found or more than max_removed_share of the previous run's documents is gone (``allow_removals``
    lets a deliberate removal through). ``task_runner`` / ``dask_address``: where per-document work runs (default:
    settings.task_runner, dask_address)."""
    with building("ingest", root, workers, ocr, task_runner=task_runner, dask_address=dask_address,
                  allow_removals=allow_removals) as settings:
        return ingest_documents(paths, settings)
