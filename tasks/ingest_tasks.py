"""Prefect task wrappers of the ingest steps: a few lines each, no logic of their own."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

from prefect import get_run_logger, task
from prefect.cache_policies import NO_CACHE

from ragprep import progress
from ragprep.settings import Settings
from ragprep.storage import Layout
from schemas.documents import DocumentRow
from schemas.runs import RunRow
from tasks.ingest import DocumentOutcome, DocumentRef, assemble_tables, discover, ingest_document, make_ocr_engine


@task(name="discover", cache_policy=NO_CACHE)
def discover_task(paths: list[str], settings: Settings) -> list[DocumentRef]:
    refs = discover([Path(p) for p in paths], settings)
    get_run_logger().info("discovered %d documents under %s", len(refs), ", ".join(paths))
    return refs


@task(name="ingest-document", task_run_name="ingest {ref.path}", cache_policy=NO_CACHE)
def ingest_document_task(ref: DocumentRef, settings: Settings) -> DocumentOutcome:
    logger = get_run_logger()
    name = Path(ref.path).name
    show = progress.current().begin_document(name)
    unit = "slide" if ref.format == "pptx" else "page"
    step = {"last": 0}

    def report(done: int, total: int) -> None:
        show(done, total)
        if done == total or done - step["last"] >= max(5, total // 4):
            step["last"] = done
            logger.info("%s: %s %d/%d", name, unit, done, total)

    outcome = ingest_document(ref, settings, make_ocr_engine(settings, Layout(settings.root)), report)
    doc = outcome.document
    progress.current().end_document(name, doc.status)
    if doc.status == "failed":
        logger.warning("%s: failed: %s", name, doc.error)
    else:
        logger.info(
            "%s: %s, %d %ss, %d chunks%s (%.1fs)",
            name, doc.status, doc.n_units, unit, doc.n_chunks, ", reused" if outcome.reused else "", outcome.seconds,
        )
        for warning in doc.warnings:
            logger.warning("%s: %s", name, warning)
    return outcome


@task(name="assemble-tables", cache_policy=NO_CACHE)
def assemble_tables_task(
    outcomes: list[DocumentOutcome], settings: Settings, started_at: datetime
) -> tuple[RunRow, list[DocumentRow]]:
    return assemble_tables(outcomes, settings, started_at)
