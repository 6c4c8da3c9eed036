"""``ragprep run``: every implemented stage in order.

ingest (discover, extract + OCR, chunk) -> describe -> correct -> headers -> qa (+ review report)
-> quotes -> negatives (MMDocRAG candidate sets) -> dataset (splits, version, quality gate, publish).
Describe runs before correct because a slide's correction reads its image descriptions.
"""

from __future__ import annotations

from prefect import flow
from prefect.task_runners import ThreadPoolTaskRunner
from pydantic import BaseModel

from flows.dataset import run_dataset
from flows.enrich import run_generative_stages
from flows.ingest import IngestSummary, build_settings, ingest_documents
from flows.mmdoc import MmDocSummary, run_mmdoc_stages
from ragprep.settings import Settings
from tasks.dataset import BuildResult
from tasks.enrich import StageReport


class PipelineSummary(BaseModel):
    ingest: IngestSummary
    stages: list[StageReport]
    mmdoc: MmDocSummary | None = None
    dataset: BuildResult | None = None


def run_all(paths: list[str], settings: Settings) -> PipelineSummary:
    ingest = ingest_documents(paths, settings)
    if not ingest.run.n_ok + ingest.run.n_partial:
        return PipelineSummary(ingest=ingest, stages=[])
    stages = run_generative_stages(settings)
    mmdoc = run_mmdoc_stages(settings)
    return PipelineSummary(ingest=ingest, stages=stages, mmdoc=mmdoc, dataset=run_dataset(settings))


@flow(name="ragprep-run", task_runner=ThreadPoolTaskRunner(max_workers=16), validate_parameters=True)
def pipeline_flow(
    paths: list[str] = ["sample_docs"],  # noqa: B006 - Prefect shows the default in the UI
    root: str | None = None,
    workers: int | None = None,
    ocr: bool | None = None,
) -> PipelineSummary:
    """Run every stage: ingest, describe, correct, headers, qa (with its review report), quotes, negatives, dataset.

    Args:
        paths: Files or folders holding .pptx and .pdf documents.
        root: Output root; default RAGPREP_ROOT or ./ragprep-data.
        workers: Documents processed at once (1-16); default RAGPREP_WORKERS or 2.
        ocr: Run Tesseract OCR on pictures and text-less pages; default RAGPREP_OCR_ENABLED or on.
    """
    return run_all(paths, build_settings(root, workers, ocr))
