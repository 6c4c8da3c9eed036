"""Prefect task wrappers of the MMDocRAG stages (quotes, negatives)."""

from __future__ import annotations

from prefect import get_run_logger, task
from prefect.cache_policies import NO_CACHE

from ragprep import progress
from ragprep.settings import Settings
from tasks.mmdoc import NegativesReport, QuotesReport, run_negatives, run_quotes


def _shown(name: str):
    show = progress.current().begin_document(name)
    logger = get_run_logger()

    def report(done: int, total: int) -> None:
        show(done, total)
        logger.info("%s: %d/%d", name, done, total)

    return report


@task(name="quotes", cache_policy=NO_CACHE)
def quotes_task(settings: Settings) -> QuotesReport:
    result = run_quotes(settings, _shown("quotes"))
    progress.current().end_document("quotes", f"{result.quotes} quotes")
    get_run_logger().info("quotes: %d from %d documents (%d reused), by type %s; failures: %s",
                          result.quotes, result.documents, result.reused, result.by_type, result.failures or "none")
    return result


@task(name="negatives", cache_policy=NO_CACHE)
def negatives_task(settings: Settings) -> NegativesReport:
    result = run_negatives(settings, _shown("negatives"))
    progress.current().end_document("negatives", f"{result.sets} sets")
    get_run_logger().info(
        "negatives: %d candidate sets for %d questions (%d multi-quote), %d without gold, %d short; "
        "false-negative guard skipped %d containing the answer and %d above the gold margin (%.1f%% of %d examined)",
        result.sets, result.questions, result.multi_quote_questions, result.no_gold, result.short_sets,
        result.skipped_answer, result.skipped_margin, 100 * result.guard_share, result.candidates_examined,
    )
    return result
