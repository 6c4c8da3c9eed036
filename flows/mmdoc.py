"""The MMDocRAG stages as flows: quotes -> negatives, over the current tables."""

from __future__ import annotations

from prefect import flow
from prefect.artifacts import create_markdown_artifact
from pydantic import BaseModel

from flows.ingest import build_settings
from ragprep.settings import Settings
from tasks.mmdoc import NegativesReport, QuotesReport
from tasks.mmdoc_tasks import negatives_task, quotes_task


class MmDocSummary(BaseModel):
    quotes: QuotesReport
    negatives: NegativesReport | None = None


def publish_mmdoc(summary: MmDocSummary) -> None:
    q = summary.quotes
    lines = [f"**{q.quotes} quotes** from {q.documents} documents ({q.reused} PDFs reused from earlier runs).", "",
             "| type | quotes |", "|---|---|"] + [f"| {k} | {v} |" for k, v in q.by_type.items()]
    if q.failures:
        lines += ["", "Failed documents:"] + [f"- {f}" for f in q.failures]
    n = summary.negatives
    if n is not None:
        lines += ["", f"**{n.sets} candidate sets** for {n.questions} questions ({n.multi_quote_questions} multi-quote); "
                  f"{n.no_gold} questions without a supporting quote; {n.short_sets} sets short of their budget.",
                  f"False-negative guard: {n.skipped_answer} candidates contained the answer, {n.skipped_margin} scored above "
                  f"the weakest gold by more than the margin ({100 * n.guard_share:.1f}% of {n.candidates_examined} examined).",
                  f"Dense retrieval: {n.embedder}."]
    create_markdown_artifact(key="mmdoc-quotes", markdown="\n".join(lines), description="Quotes and candidate sets")


def run_mmdoc_stages(settings: Settings, negatives: bool = True) -> MmDocSummary:
    summary = MmDocSummary(quotes=quotes_task(settings))
    if negatives:
        summary.negatives = negatives_task(settings)
    publish_mmdoc(summary)
    return summary


@flow(name="quotes")
def quotes_flow(root: str | None = None) -> MmDocSummary:
    """Lay out PDF pages and slides into MMDocRAG text and image quotes (crop + OCR + VLM text).

    Args:
        root: Output root holding the ingested tables; default RAGPREP_ROOT or ./ragprep-data.
    """
    return run_mmdoc_stages(build_settings(root, None, None), negatives=False)


@flow(name="negatives")
def negatives_flow(root: str | None = None) -> MmDocSummary:
    """Quotes, then candidate sets (gold + hard negatives, 15 and 20 quotes) for every approved QA pair.

    Args:
        root: Output root holding the ingested tables and QA pairs; default RAGPREP_ROOT or ./ragprep-data.
    """
    return run_mmdoc_stages(build_settings(root, None, None))
