"""The MMDocRAG stages as flows: quotes -> negatives, over the current tables."""

from __future__ import annotations

from prefect import flow
from pydantic import BaseModel

from flows.artifacts import publish_markdown
from flows.runners import embedding_pool
from flows.runtime import building
from ragprep.report import Report
from ragprep.settings import Settings
from tasks.mmdoc.run import NegativesReport, QuotesReport
from tasks.wrappers import negatives_task, quotes_task


class MmDocSummary(BaseModel):
    """Quotes and (optionally) candidate sets of one run, for the CLI and the ``mmdoc-quotes`` artifact."""

    quotes: QuotesReport
    negatives: NegativesReport | None = None

    def report(self) -> Report:
        """Quotes per type, failed documents, and the candidate-set figures."""
        q = self.quotes
        notes = [f"failed: {f}" for f in q.failures]
        n = self.negatives
        if n is not None:
            notes += [
                f"**{n.sets} candidate sets** for {n.questions} questions ({n.multi_quote_questions} multi-quote); "
                f"{n.no_gold} questions without a supporting quote; {n.short_sets} sets short of their budget.",
                f"False-negative guard: {n.skipped_answer} candidates contained the answer, {n.skipped_margin} scored "
                f"above the weakest gold by more than the margin ({100 * n.guard_share:.1f}% of {n.candidates_examined} "
                "examined).",
                f"Dense retrieval: {n.embedder}.",
            ]
        return Report(
            title="ragprep: quotes",
            columns=["type", "quotes"],
            rows=[[k, v] for k, v in q.by_type.items()],
            lead=[f"**{q.quotes} quotes** from {q.documents} documents ({q.reused} PDFs reused from earlier runs)."],
            notes=notes,
        )


def publish_mmdoc(summary: MmDocSummary) -> None:
    """The summary as the ``mmdoc-quotes`` artifact."""
    publish_markdown("mmdoc-quotes", summary.report(), "Quotes and candidate sets")


def run_mmdoc_stages(settings: Settings, negatives: bool = True) -> MmDocSummary:
    """Quotes, then candidate sets unless ``negatives`` is False (with ``task_runner = dask`` new quote texts are
    embedded on the Dask workers); the summary is also published as an artifact."""
    summary = MmDocSummary(quotes=quotes_task(settings))
    if negatives:
        summary.negatives = negatives_task(settings, embedding_pool(settings))
    publish_mmdoc(summary)
    return summary


@flow(name="quotes")
def quotes_flow(root: str | None = None) -> MmDocSummary:
    """Lay out PDF pages and slides into MMDocRAG text and image quotes (crop + OCR + VLM text).

    Args:
        root: Output root holding the ingested tables; default RAGPREP_ROOT or ./ragprep-data.
    """
    with building("quotes", root) as settings:
        return run_mmdoc_stages(settings, negatives=False)


@flow(name="negatives")
def negatives_flow(root: str | None = None) -> MmDocSummary:
    """Quotes, then candidate sets (gold + hard negatives, 15 and 20 quotes) for every approved QA pair.

    Args:
        root: Output root holding the ingested tables and QA pairs; default RAGPREP_ROOT or ./ragprep-data.
    """
    with building("negatives", root) as settings:
        return run_mmdoc_stages(settings)
