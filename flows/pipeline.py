"""``ragprep run``: every implemented stage in order.

ingest (discover, extract + OCR, chunk) -> describe -> correct -> headers -> qa -> judge (+ review report)
-> quotes -> negatives (MMDocRAG candidate sets) -> dataset (splits, version, quality gate, publish).
Describe runs before correct because a slide's correction reads its image descriptions.
"""

from __future__ import annotations

from pydantic import BaseModel

from flows.artifacts import publish_stages
from flows.dataset import run_dataset
from flows.enrich import run_enrich
from flows.ingest import IngestSummary, documents_flow, ingest_documents
from flows.mmdoc import MmDocSummary, run_mmdoc_stages
from flows.qa import run_qa
from ragprep.settings import Settings, build_settings
from tasks.dataset.versions import BuildResult
from tasks.stage import StageReport


class PipelineSummary(BaseModel):
    ingest: IngestSummary
    stages: list[StageReport]
    mmdoc: MmDocSummary | None = None
    dataset: BuildResult | None = None


def run_all(paths: list[str], settings: Settings) -> PipelineSummary:
    """Ingest ``paths``, then (when a document was extracted) enrich, qa, judge, quotes, negatives and dataset."""
    ingest = ingest_documents(paths, settings)
    if not ingest.run.n_ok + ingest.run.n_partial:
        return PipelineSummary(ingest=ingest, stages=[])
    stages = [*run_enrich(settings), *run_qa(settings)]
    publish_stages(stages)
    mmdoc = run_mmdoc_stages(settings)
    return PipelineSummary(ingest=ingest, stages=stages, mmdoc=mmdoc, dataset=run_dataset(settings))


@documents_flow("ragprep-run")
def pipeline_flow(
    paths: list[str] = ["sample_docs"], root: str | None = None, workers: int | None = None, ocr: bool | None = None
) -> PipelineSummary:
    """Run every stage: ingest, describe, correct, headers, qa, judge (with the review report), quotes, negatives, dataset."""
    return run_all(paths, build_settings(root, workers, ocr))
