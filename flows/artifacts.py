"""Publishing reports as Prefect artifacts: the flows' one place for it."""

from __future__ import annotations

from collections.abc import Sequence

from prefect.artifacts import create_markdown_artifact, create_table_artifact

from ragprep.report import Report
from tasks.stage import StageReport, stages_report


def publish_markdown(key: str, report: Report, description: str) -> None:
    """A report as a Markdown artifact."""
    create_markdown_artifact(key=key, markdown=report.markdown(), description=description)


def publish_table(key: str, report: Report, description: str) -> None:
    """A report's rows as a table artifact."""
    create_table_artifact(key=key, table=report.records(), description=description)


def single_stage(report: StageReport) -> list[StageReport]:
    """A flow of one generative stage: publish its report and return it."""
    publish_stages([report])
    return [report]


def publish_stages(reports: Sequence[StageReport]) -> None:
    """Token usage (and cost where priced) and flags per generative stage."""
    usage = [{"stage": r.stage, **row} for r in reports for row in r.usage]
    if usage:
        create_table_artifact(key="llm-usage", table=usage, description="LLM/VLM calls, cache hits and tokens per stage")
    publish_markdown("generative-stages", stages_report(reports), ", ".join(r.stage for r in reports))
