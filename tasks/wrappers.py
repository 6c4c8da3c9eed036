"""Every Prefect task of ragprep: a few lines around a typed stage function each.

This is the only module under ``tasks/`` that imports Prefect. Tasks take settings and small
hashable values (paths, document refs), never clients or DataFrames, and report progress the
same way: a rich bar on a terminal (``ragprep.progress``) and periodic log lines in Prefect.

Each task imports its stage's package when it runs, not when this module loads: a command runs
one or two stages (``ragprep dataset``, ``evaluate``, ``index``, ``judge``, ...), and importing
every stage cost each such process about 3 CPU seconds, most of it PyMuPDF with its layout model
and pandas, which those stages never touch (``ragprep run`` still imports every stage it runs).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from importlib import import_module
from pathlib import Path
from typing import TYPE_CHECKING

from prefect import get_run_logger, task
from prefect.cache_policies import NO_CACHE

from ragprep import progress
from ragprep.errors import RagprepError
from ragprep.settings import Settings
from ragprep.storage import Layout
from schemas.documents import DocumentRow
from schemas.runs import RunRow
from tasks.stage import Progress, StageReport

if TYPE_CHECKING:  # the stages themselves are imported by the tasks that run them (see the module doc)
    from tasks.dataset.quality import GateResult
    from tasks.dataset.versions import BuildResult
    from tasks.evaluate.retrieval import EvalOptions
    from tasks.evaluate.retrieval_report import Comparison
    from tasks.evaluate.summary import EvaluationSummary
    from tasks.export.training import TrainingExport
    from tasks.index.run import IndexReport
    from tasks.ingest.run import DocumentOutcome, DocumentRef
    from tasks.mmdoc.run import NegativesReport, PoolFactory, QuotesReport
    from tasks.refmatch.run import RefmatchReport
    from tasks.train.run import TrainReport


RESULT_TYPES = {"BuildResult": "tasks.dataset.versions", "GateResult": "tasks.dataset.quality",
                "TrainingExport": "tasks.export.training"}
"""Stage result types the flows import from here, each from the module that defines it."""


def __getattr__(name: str):
    """``RESULT_TYPES`` on first use (a flow importing ``BuildResult`` imports the dataset stage then, not every
    command that imports this module)."""
    if name in RESULT_TYPES:
        return getattr(import_module(RESULT_TYPES[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _watched(name: str, unit: str = "items", document: bool = False) -> Progress:
    """A progress callback for one stage (or one ``document`` of ingest): the terminal bar, plus a log line
    at most every ``progress.LOG_EVERY_S`` seconds and at the end (``progress.Throttled``)."""
    sink = progress.current()
    show = sink.begin_document(name) if document else sink.begin_stage(name, unit)
    logger = get_run_logger()
    log = progress.Throttled(lambda done, total: logger.info("%s: %s %d/%d", name, unit, done, total))

    def report(done: int, total: int) -> None:
        show(done, total)
        log(done, total)

    return report


def _retryable(task, task_run, state) -> bool:
    """Retry transient failures only: a RagprepError (the user must fix something) or a timeout (a hang) is final."""
    try:
        state.result()
    except (RagprepError, TimeoutError):
        return False
    except Exception:  # noqa: BLE001 - anything else may be transient (a share, an endpoint)
        return True
    return True


IO_RETRIES = {"retries": 2, "retry_delay_seconds": [5, 30], "retry_condition_fn": _retryable}
"""Idempotent file work (discover, one document's part, the review report): a flaky share gets two more tries."""
LLM_RETRIES = {"retries": 2, "retry_delay_seconds": [30, 120], "retry_condition_fn": _retryable}
"""Generative stages (idempotent: replies are cached): an endpoint down for a minute gets two more tries."""
DISCOVER_TIMEOUT_S = 600
"""Listing the input folders past this is a hung share (the flow's own thread, where a timeout can interrupt)."""


# -- ingest ----------------------------------------------------------------------------


@task(name="discover", cache_policy=NO_CACHE, timeout_seconds=DISCOVER_TIMEOUT_S, **IO_RETRIES)
def discover_task(paths: list[str], settings: Settings) -> list[DocumentRef]:
    """Find the documents under the given files and folders."""
    from tasks.ingest.run import discover

    refs = discover([Path(p) for p in paths], settings)
    get_run_logger().info("discovered %d documents under %s", len(refs), ", ".join(paths))
    return refs


@task(name="ingest-document", task_run_name="ingest {ref.path}", cache_policy=NO_CACHE, **IO_RETRIES)
def ingest_document_task(ref: DocumentRef, settings: Settings) -> DocumentOutcome:
    """Extract and chunk one document into its part (or reuse the part of an unchanged one)."""
    from ragprep.engines.ocr import make_ocr_engine
    from tasks.ingest.run import ingest_document

    logger = get_run_logger()
    name = Path(ref.path).name
    unit = "slide" if ref.format == "pptx" else "page"
    report = _watched(name, unit, document=True)
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
    from tasks.ingest.run import assemble_tables

    return assemble_tables(outcomes, settings, started_at)


# -- enrich and qa -----------------------------------------------------------------------

GenerativeRunner = Callable[[Settings, Progress | None], StageReport]


def _generative_task(stage: str, runner: str, summary: str):
    """A Prefect task around one generative stage runner (``module:function``, imported when the task runs):
    progress, a closing log line, the report."""
    module, function = runner.split(":")

    def run_stage(settings: Settings) -> StageReport:
        run: GenerativeRunner = getattr(import_module(module), function)
        result = run(settings, _watched(stage))
        progress.current().end_stage(stage, f"{result.flagged} flagged")
        get_run_logger().info(
            "%s: %d items with %s/%s (%s), %d flagged %s",
            stage, result.items, result.provider, result.model, result.prompt, result.flagged, result.flags or "",
        )
        return result

    run_stage.__doc__ = summary
    run_stage.__name__ = run_stage.__qualname__ = f"{stage}_task"
    return task(name=stage, cache_policy=NO_CACHE, **LLM_RETRIES)(run_stage)


describe_task = _generative_task("describe", "tasks.enrich.run:run_describe",
                                 "Describe every picture, chart and table (VLM text).")
correct_task = _generative_task("correct", "tasks.enrich.run:run_correct", "Correct each slide's Markdown.")
headers_task = _generative_task("headers", "tasks.enrich.run:run_headers",
                                "Extract the headers of test reports and prepend them to their chunks.")
qa_task = _generative_task("qa", "tasks.qa.run:run_qa", "Generate, flag and review-apply QA pairs.")
judge_task = _generative_task("judge", "tasks.qa.run:run_judge",
                              "Score every QA pair with the critic; approve the ones it passes.")


@task(name="review-report", cache_policy=NO_CACHE, **IO_RETRIES)
def review_report_task(settings: Settings) -> str:
    """Write the HTML review report of flagged QA pairs and the spot-check sample; returns its path."""
    from tasks.qa.review_report import write_review_report

    qa = settings.qa
    path = write_review_report(settings.root, spot_check_share=qa.spot_check_share, spot_check_min=qa.spot_check_min)
    get_run_logger().info("review report: %s", path)
    return str(path)


# -- mmdoc -------------------------------------------------------------------------------


@task(name="quotes", cache_policy=NO_CACHE, **LLM_RETRIES)
def quotes_task(settings: Settings) -> QuotesReport:
    """Lay out documents into MMDocRAG quotes."""
    from tasks.mmdoc.run import run_quotes

    result = run_quotes(settings, _watched("quotes", "documents"))
    progress.current().end_stage("quotes", f"{result.quotes} quotes")
    get_run_logger().info("quotes: %d from %d documents (%d reused), by type %s; failures: %s",
                          result.quotes, result.documents, result.reused, result.by_type, result.failures or "none")
    return result


@task(name="negatives", cache_policy=NO_CACHE, **LLM_RETRIES)
def negatives_task(settings: Settings, pool: PoolFactory | None = None) -> NegativesReport:
    """Mine candidate sets (gold + hard negatives) for every question (``pool``: where new quote texts are embedded)."""
    from tasks.mmdoc.run import run_negatives

    result = run_negatives(settings, _watched("negatives", "documents"), _watched("negatives: embedding", "quote texts"), pool)
    progress.current().end_stage("negatives: embedding", f"{result.passages_embedded} embedded")
    progress.current().end_stage("negatives", f"{result.sets} sets")
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
    from tasks.dataset.versions import build_version, quality_gate

    logger = get_run_logger()
    show = progress.current().begin_stage("dataset", "steps")
    logger.info("dataset: quality gate over the working tables")
    gate, outcome = quality_gate(settings)
    show(1, 2)
    result = build_version(settings, gate)
    show(2, 2)
    progress.current().end_stage("dataset", "published" if result.published else "not published")
    if not result.created:
        logger.info("dataset version %s already exists (%s): nothing new", result.version_id,
                    "published" if result.published else "rejected")
    elif result.published:
        logger.info("published dataset version %s at %s", result.version_id, result.path)
    else:
        logger.warning("dataset version %s failed the quality gate (%s); LATEST not moved", result.version_id,
                       ", ".join(result.failed_expectations))
    return result, outcome.get("result")


# -- index -------------------------------------------------------------------------------


@task(name="build-search-index", cache_policy=NO_CACHE, **LLM_RETRIES)
def build_index_task(settings: Settings, version: str | None, variant: str | None) -> IndexReport:
    """Embed a dataset version's chunks (new or changed ones only) and write the search index."""
    from tasks.index.run import run_index

    result = run_index(settings, version, variant, _watched("index", "texts embedded (passages, then reading windows)"))
    progress.current().end_stage("index", f"{result.chunks} chunks")
    get_run_logger().info(
        "search index %s of version %s: %d chunks, %d passages embedded, %d reused (%s), %s",
        result.variant, result.version_id, result.chunks, result.embedded, result.reused, result.embedder, result.path,
    )
    return result


# -- evaluate, export train, train ----------------------------------------------------------


@task(name="evaluate-retrieval", cache_policy=NO_CACHE)
def evaluate_task(settings: Settings, version: str | None, options: EvalOptions) -> EvaluationSummary:
    """Evaluate retrieval on a dataset version's test split: every variant, written to Parquet and Markdown."""
    from tasks.evaluate.run import run_evaluate

    result = run_evaluate(settings, version, options)
    get_run_logger().info("evaluation %s of version %s: %d test questions, pool %d chunks, %d rows; %s",
                          result.eval_id, result.version_id, result.test_questions, result.pool_chunks, len(result.rows),
                          result.markdown)
    return result


@task(name="compare-evaluations", cache_policy=NO_CACHE)
def compare_task(settings: Settings, old: str, new: str, options: EvalOptions) -> Comparison:
    """Evaluate two versions (stored evaluations of the same inputs are reused) and compare every metric."""
    from tasks.evaluate.run import run_compare

    result = run_compare(settings, old, new, options)
    get_run_logger().info("compared %s -> %s over %d variants (%d common test questions)", old, new, len(result.moves),
                          result.common_questions)
    return result


@task(name="export-training", cache_policy=NO_CACHE)
def export_training_task(settings: Settings, version: str | None, out: str | None) -> TrainingExport:
    """Write the retriever, re-ranker and SFT exports (train and val splits only) with their card."""
    from tasks.export.training import export_training

    result = export_training(settings, version, Path(out) if out else None)
    get_run_logger().info("training exports of version %s: %s in %s", result.version_id, result.card["files"], result.out_dir)
    return result


@task(name="train", task_run_name="train {target}", cache_policy=NO_CACHE)
def train_task(settings: Settings, target: str, version: str | None, steps: int | None, backend: str | None) -> TrainReport:
    """Train the retriever (query adapter or sentence-transformers) or the re-ranker (linear or cross-encoder)."""
    from tasks.train.run import run_train

    result = run_train(settings, target, version, steps, backend)
    get_run_logger().info("trained %s %s on version %s: %s", result.kind, result.model_id, result.version_id,
                          result.card.get("metrics"))
    return result


@task(name="refmatch", task_run_name="refmatch {answers}", cache_policy=NO_CACHE)
def refmatch_task(settings: Settings, answers: str, out: str | None = None) -> RefmatchReport:
    """Link every segment of every answer in a (question, answer) JSONL to the chunk it came from; write the Parquet."""
    from tasks.refmatch.run import run_refmatch

    result = run_refmatch(settings, Path(answers), Path(out) if out else None, _watched("refmatch", "answers"))
    progress.current().end_stage("refmatch", f"{result.segments} segments")
    get_run_logger().info(
        "refmatch: %d answers, %d segments (%d supported, %d below threshold, %d unsupported), %d scorer calls of %d naive; "
        "%d bad lines; %s", result.items, result.segments, result.supported, result.below_threshold, result.unsupported,
        result.scorer_calls, result.naive_calls, len(result.errors), result.output,
    )
    return result
