"""Every Prefect task of ragprep: a few lines around a typed stage function each.

This is the only module under ``tasks/`` that imports Prefect. Tasks take settings and small
hashable values (paths, document refs), never clients or DataFrames, and report progress the
same way: a rich bar on a terminal (``ragprep.progress``) and periodic log lines in Prefect.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from pathlib import Path

from prefect import get_run_logger, task
from prefect.cache_policies import NO_CACHE

from ragprep import progress
from ragprep.settings import Settings
from ragprep.storage import Layout
from schemas.documents import DocumentRow
from schemas.runs import RunRow
from tasks.dataset.quality import GateResult
from tasks.dataset.versions import BuildResult, build_version, quality_gate
from tasks.enrich.run import run_correct, run_describe, run_headers
from tasks.ingest.run import (
    DocumentOutcome,
    DocumentRef,
    assemble_tables,
    discover,
    ingest_document,
    make_ocr_engine,
)
from tasks.mmdoc.run import NegativesReport, QuotesReport, run_negatives, run_quotes
from tasks.qa.review_report import write_review_report
from tasks.qa.run import run_qa
from tasks.stage import Progress, StageReport


def _watched(name: str, unit: str = "items", min_step: int = 10) -> Progress:
    """A progress callback for one stage or document: the terminal bar, plus a log line
    at the end and at least every quarter of the way (and every ``min_step`` items)."""
    show = progress.current().begin_document(name)
    logger = get_run_logger()
    step = {"last": 0}

    def report(done: int, total: int) -> None:
        show(done, total)
        if done == total or done - step["last"] >= max(min_step, total // 4):
            step["last"] = done
            logger.info("%s: %s %d/%d", name, unit, done, total)

    return report


# -- ingest ----------------------------------------------------------------------------


@task(name="discover", cache_policy=NO_CACHE)
def discover_task(paths: list[str], settings: Settings) -> list[DocumentRef]:
    """Find the documents under the given files and folders."""
    refs = discover([Path(p) for p in paths], settings)
    get_run_logger().info("discovered %d documents under %s", len(refs), ", ".join(paths))
    return refs


@task(name="ingest-document", task_run_name="ingest {ref.path}", cache_policy=NO_CACHE)
def ingest_document_task(ref: DocumentRef, settings: Settings) -> DocumentOutcome:
    """Extract and chunk one document into its part (or reuse the part of an unchanged one)."""
    logger = get_run_logger()
    name = Path(ref.path).name
    unit = "slide" if ref.format == "pptx" else "page"
    report = _watched(name, unit, min_step=5)
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
    """Write the run's documents, elements and chunks tables from the per-document parts."""
    return assemble_tables(outcomes, settings, started_at)


# -- enrich and qa -----------------------------------------------------------------------

GenerativeRunner = Callable[[Settings, Progress | None], StageReport]


def _generative_task(stage: str, runner: GenerativeRunner, summary: str):
    """A Prefect task around one generative stage runner: progress, a closing log line, the report."""

    def run_stage(settings: Settings) -> StageReport:
        result = runner(settings, _watched(stage))
        progress.current().end_document(stage, f"{result.flagged} flagged")
        get_run_logger().info(
            "%s: %d items with %s/%s (%s), %d flagged %s",
            stage, result.items, result.provider, result.model, result.prompt, result.flagged, result.flags or "",
        )
        return result

    run_stage.__doc__ = summary
    run_stage.__name__ = run_stage.__qualname__ = f"{stage}_task"
    return task(name=stage, cache_policy=NO_CACHE)(run_stage)


describe_task = _generative_task("describe", run_describe, "Describe every picture, chart and table (VLM text).")
correct_task = _generative_task("correct", run_correct, "Correct each slide's Markdown.")
headers_task = _generative_task("headers", run_headers, "Extract the headers of test reports and prepend them to their chunks.")
qa_task = _generative_task("qa", run_qa, "Generate, flag and review-apply QA pairs.")


@task(name="review-report", cache_policy=NO_CACHE)
def review_report_task(settings: Settings) -> str:
    """Write the HTML review report of flagged QA pairs; returns its path."""
    path = write_review_report(settings.root)
    get_run_logger().info("review report: %s", path)
    return str(path)


# -- mmdoc -------------------------------------------------------------------------------


@task(name="quotes", cache_policy=NO_CACHE)
def quotes_task(settings: Settings) -> QuotesReport:
    """Lay out documents into MMDocRAG quotes."""
    result = run_quotes(settings, _watched("quotes", "documents", min_step=1))
    progress.current().end_document("quotes", f"{result.quotes} quotes")
    get_run_logger().info("quotes: %d from %d documents (%d reused), by type %s; failures: %s",
                          result.quotes, result.documents, result.reused, result.by_type, result.failures or "none")
    return result


@task(name="negatives", cache_policy=NO_CACHE)
def negatives_task(settings: Settings) -> NegativesReport:
    """Mine candidate sets (gold + hard negatives) for every question."""
    result = run_negatives(settings, _watched("negatives", "sets", min_step=1))
    progress.current().end_document("negatives", f"{result.sets} sets")
    get_run_logger().info(
        "negatives: %d candidate sets for %d questions (%d multi-quote), %d without gold, %d short; "
        "false-negative guard skipped %d containing the answer and %d above the gold margin (%.1f%% of %d examined)",
        result.sets, result.questions, result.multi_quote_questions, result.no_gold, result.short_sets,
        result.skipped_answer, result.skipped_margin, 100 * result.guard_share, result.candidates_examined,
    )
    return result


# -- dataset -----------------------------------------------------------------------------


@task(name="build-dataset-version", cache_policy=NO_CACHE)
def build_version_task(settings: Settings) -> tuple[BuildResult, GateResult | None]:
    """Split, version, run the quality gate and publish when it passes."""
    gate, outcome = quality_gate(settings)
    result = build_version(settings, gate)
    logger = get_run_logger()
    if not result.created:
        logger.info("dataset version %s already exists (%s): nothing new", result.version_id,
                    "published" if result.published else "rejected")
    elif result.published:
        logger.info("published dataset version %s at %s", result.version_id, result.path)
    else:
        logger.warning("dataset version %s failed the quality gate (%s); LATEST not moved", result.version_id,
                       ", ".join(result.failed_expectations))
    return result, outcome.get("result")
