"""``ragprep run``: every implemented stage in order.

ingest (discover, extract + OCR, chunk) -> describe -> correct -> headers -> qa -> judge (+ review report)
-> quotes -> negatives (MMDocRAG candidate sets) -> dataset (splits, version, quality gate, publish).
Describe runs before correct because a slide's correction reads its image descriptions.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Literal

from prefect.artifacts import create_markdown_artifact
from pydantic import BaseModel

from flows.artifacts import file_reference, publish_stages
from flows.dataset import run_dataset
from flows.enrich import run_enrich
from flows.ingest import IngestSummary, documents_flow, ingest_documents
from flows.mmdoc import MmDocSummary, run_mmdoc_stages
from flows.qa import run_qa
from flows.runtime import Workers, building
from ragprep.settings import Settings
from ragprep.storage import Layout
from ragprep.tables import TableStore
from tasks.stage import StageReport
from tasks.wrappers import BuildResult


class PipelineSummary(BaseModel):
    ingest: IngestSummary
    stages: list[StageReport]
    mmdoc: MmDocSummary | None = None
    dataset: BuildResult | None = None


def _gate_line(build: BuildResult | None) -> str:
    if build is None:
        return "no dataset version was built"
    if not build.published:
        return f"version {build.version_id} REJECTED by the quality gate: {'; '.join(build.failed_expectations)[:300]}"
    return f"version {build.version_id} {'published (LATEST)' if build.created else 'unchanged: already published'}"


def summary_markdown(summary: PipelineSummary, settings: Settings) -> str:
    """The ``run-summary`` artifact: documents per change and status, chunks, QA pairs and flags, the gate,
    the version, and links to the review report and the version's quality page."""
    run = summary.ingest.run
    layout = Layout(settings.root)
    qa = TableStore(layout).read_arrow("qa_pairs")
    statuses = Counter(qa.column("status").to_pylist()) if qa is not None else Counter()
    flags: Counter[str] = Counter()
    for report in summary.stages:
        flags.update({code: n for code, n in report.flags.items() if n})
    lines = [
        f"**documents:** {run.n_documents} found: {run.n_new} new, {run.n_changed} changed, {run.n_unchanged} unchanged, "
        f"{run.n_removed} removed; {run.n_ok} ok, {run.n_partial} partial, {run.n_failed} failed, {run.n_duplicate} duplicate",
        f"**chunks:** {run.n_chunks} ({run.n_elements} elements)",
        f"**QA pairs:** {sum(statuses.values())} ({statuses.get('approved', 0)} approved, {statuses.get('pending', 0)} pending review, "
        f"{statuses.get('rejected', 0)} rejected)",
        "**flags:** " + (", ".join(f"{code} {n}" for code, n in flags.most_common()) or "none"),
        f"**dataset:** {_gate_line(summary.dataset)}",
    ]
    if layout.latest_review_report.exists():
        lines.append(f"**review report:** {file_reference(layout.latest_review_report, settings, 'review report')}")
    if summary.dataset is not None:
        page = Path(summary.dataset.path, "quality", "data_docs", "index.html")
        if page.exists():
            lines.append(f"**quality page:** {file_reference(page, settings, 'quality page')}")
    return "\n\n".join(lines)


def run_all(paths: list[str], settings: Settings) -> PipelineSummary:
    """Ingest ``paths``, then (when a document was extracted) enrich, qa, judge, quotes, negatives and dataset;
    the ``run-summary`` artifact says what the run did."""
    ingest = ingest_documents(paths, settings)
    if not ingest.run.n_ok + ingest.run.n_partial:
        return PipelineSummary(ingest=ingest, stages=[])
    stages = [*run_enrich(settings), *run_qa(settings)]
    publish_stages(stages)
    mmdoc = run_mmdoc_stages(settings)
    summary = PipelineSummary(ingest=ingest, stages=stages, mmdoc=mmdoc, dataset=run_dataset(settings))
    create_markdown_artifact(key="run-summary", markdown=summary_markdown(summary, settings),
                             description=f"ragprep run: {ingest.headline()}; {_gate_line(summary.dataset)}")
    return summary


@documents_flow("ragprep-run")
def pipeline_flow(
    paths: list[str] = ["sample_docs"], root: str | None = None, workers: Workers = None, ocr: bool | None = None,
    task_runner: Literal["threads", "dask"] | None = None, dask_address: str | None = None,
    allow_removals: bool | None = None,
) -> PipelineSummary:
    """Run every stage: ingest, describe, correct, headers, qa, judge (with the review report), quotes, negatives, dataset.

    ``task_runner`` / ``dask_address``: where per-document work runs (default: settings.task_runner, dask_address).
    ``allow_removals``: let this run remove more than max_removed_share of the previous run's documents."""
    with building("ragprep-run", root, workers, ocr, task_runner=task_runner, dask_address=dask_address,
                  allow_removals=allow_removals) as settings:
        return run_all(paths, settings)
