"""Publishing reports as Prefect artifacts: the flows' one place for it."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from prefect.artifacts import create_markdown_artifact, create_table_artifact

from ragprep.report import Report
from ragprep.settings import Settings
from ragprep.webroot import public_link
from tasks.stage import StageReport, stages_report


def file_reference(path: str | Path, settings: Settings, label: str | None = None) -> str:
    """Markdown for a file under the root: an http:// link into the ``ragprep serve`` web root when
    ``settings.public_url`` names one, else the path on the worker as code (a browser cannot open a
    worker's ``file://`` path, so no dead link)."""
    url = public_link(path, settings.root, settings.public_url)
    if url:
        return f"[{label or Path(path).name}]({url})"
    return f"`{path}` (on the worker; `ragprep serve` shows it over http)"


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
