"""The enrich stages as flows: describe -> correct -> headers, over the working tables."""

from __future__ import annotations

from prefect import flow

from flows.artifacts import single_stage
from flows.runtime import building
from ragprep.settings import Settings
from tasks.stage import StageReport
from tasks.wrappers import correct_task, describe_task, headers_task


def run_enrich(settings: Settings) -> list[StageReport]:
    """Describe, correct and headers in order (describe first: a slide's correction reads its descriptions)."""
    return [describe_task(settings), correct_task(settings), headers_task(settings)]


@flow(name="describe")
def describe_flow(root: str | None = None) -> list[StageReport]:
    """Describe every picture, chart and table (VLM text beside the OCR text).

    Args:
        root: Output root holding the ingested tables; default RAGPREP_ROOT or ./ragprep-data.
    """
    with building("describe", root) as settings:
        return single_stage(describe_task(settings))


@flow(name="correct")
def correct_flow(root: str | None = None) -> list[StageReport]:
    """Correct each slide's Markdown; numbers not in the source keep the slide uncorrected and flagged.

    Args:
        root: Output root holding the ingested tables; default RAGPREP_ROOT or ./ragprep-data.
    """
    with building("correct", root) as settings:
        return single_stage(correct_task(settings))


@flow(name="headers")
def headers_flow(root: str | None = None) -> list[StageReport]:
    """Extract report headers of test reports and prepend them to their chunks (markdown_v1).

    Args:
        root: Output root holding the ingested tables; default RAGPREP_ROOT or ./ragprep-data.
    """
    with building("headers", root) as settings:
        return single_stage(headers_task(settings))
