"""The qa and judge stages as flows: QA pairs with flags, the critic's scores and approvals, expert decisions applied,
the review report."""

from __future__ import annotations

from collections.abc import Sequence

from prefect import flow
from prefect.artifacts import create_markdown_artifact

from flows.artifacts import file_reference, publish_stages
from flows.runtime import building
from ragprep.settings import Settings
from tasks.stage import StageReport
from tasks.wrappers import judge_task, qa_task, review_report_task


def publish_review(reports: Sequence[StageReport], report_path: str, settings: Settings) -> None:
    """Flags per stage and type (the qa rules', the critic's low_quality ones) and where the expert review report is."""
    lines: list[str] = []
    for report in reports:
        lines += [f"**{report.stage}: {report.items} QA pairs** ({report.provider}, {report.model}), {report.flagged} flags.",
                  "", "| flag | pairs |", "|---|---|"]
        lines += [f"| {code} | {count} |" for code, count in sorted(report.flags.items())] or ["| (none) | 0 |"]
        lines.append("")
    lines += [f"Review report: {file_reference(report_path, settings)}",
              "Apply the exported decisions with `ragprep review apply decisions.json --root ...`."]
    create_markdown_artifact(key="qa-review", markdown="\n".join(lines), description="QA flags and review report")


def run_qa(settings: Settings) -> list[StageReport]:
    """Generate QA pairs, judge them (the critic approves), then write and announce the review report."""
    reports = [qa_task(settings), judge_task(settings)]
    publish_review(reports, review_report_task(settings), settings)
    return reports


def run_judge(settings: Settings) -> list[StageReport]:
    """Judge the current QA pairs again, then write and announce the review report."""
    reports = [judge_task(settings)]
    publish_review(reports, review_report_task(settings), settings)
    return reports


@flow(name="qa")
def qa_flow(root: str | None = None) -> list[StageReport]:
    """Generate and flag QA pairs per chunk, judge them (the critic approves), apply expert decisions, write the review report.

    Args:
        root: Output root holding the ingested tables; default RAGPREP_ROOT or ./ragprep-data.
    """
    with building("qa", root) as settings:
        reports = run_qa(settings)
    publish_stages(reports)
    return reports


@flow(name="judge")
def judge_flow(root: str | None = None) -> list[StageReport]:
    """Score every QA pair 1-5 on grounded, standalone, well_formed and useful; approve the ones the critic passes
    (and that carry no flag), flag the rest low_quality for review (expert decisions still win); write the review report.

    Args:
        root: Output root holding the qa_pairs table; default RAGPREP_ROOT or ./ragprep-data.
    """
    with building("judge", root) as settings:
        reports = run_judge(settings)
    publish_stages(reports)
    return reports
