"""The qa stage as a flow: QA pairs with flags, expert decisions applied, the review report."""

from __future__ import annotations

from prefect import flow
from prefect.artifacts import create_markdown_artifact

from flows.artifacts import single_stage
from ragprep.settings import Settings, build_settings
from tasks.stage import StageReport
from tasks.wrappers import qa_task, review_report_task


def publish_review(report: StageReport, report_path: str) -> None:
    """Flags per type and where the expert review report is."""
    lines = [f"**{report.items} QA pairs** ({report.provider}, {report.model}), {report.flagged} flags.", "",
             "| flag | pairs |", "|---|---|"]
    lines += [f"| {code} | {count} |" for code, count in sorted(report.flags.items())] or ["| (none) | 0 |"]
    lines += ["", f"Review report: [{report_path}](file://{report_path})",
              "Apply the exported decisions with `ragprep review apply decisions.json --root ...`."]
    create_markdown_artifact(key="qa-review", markdown="\n".join(lines), description="QA flags and review report")


def run_qa(settings: Settings) -> StageReport:
    """Generate QA pairs, then write and announce the review report."""
    report = qa_task(settings)
    publish_review(report, review_report_task(settings))
    return report


@flow(name="qa")
def qa_flow(root: str | None = None) -> list[StageReport]:
    """Generate and flag QA pairs per chunk, apply expert decisions, write the review report.

    Args:
        root: Output root holding the ingested tables; default RAGPREP_ROOT or ./ragprep-data.
    """
    return single_stage(run_qa(build_settings(root)))
