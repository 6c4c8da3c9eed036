"""The generative stages as flows: describe -> correct -> headers, over the current tables."""

from __future__ import annotations

from prefect import flow
from prefect.artifacts import create_markdown_artifact, create_table_artifact

from flows.ingest import build_settings
from ragprep.settings import Settings
from tasks.enrich import StageReport
from tasks.enrich_tasks import review_report_task, stage_task

GENERATIVE_STAGES = ("describe", "correct", "headers", "qa")


def publish_reports(reports: list[StageReport]) -> None:
    """Token usage (and cost where priced) and flags per stage, as Prefect artifacts."""
    usage = [{"stage": r.stage, **row} for r in reports for row in r.usage]
    if usage:
        create_table_artifact(key="llm-usage", table=usage, description="LLM/VLM calls, cache hits and tokens per stage")
    lines = ["| stage | provider | model | prompt | items | flagged | flags |", "|---|---|---|---|---|---|---|"]
    for r in reports:
        flags = ", ".join(f"{k}: {v}" for k, v in sorted(r.flags.items())) or "-"
        lines.append(f"| {r.stage} | {r.provider} | {r.model} | {r.prompt} | {r.items} | {r.flagged} | {flags} |")
    calls = sum(row.get("calls", 0) for row in usage)
    hits = sum(row.get("cache_hits", 0) for row in usage)
    lines.append(f"\nRemote calls: {calls}, answered from cache: {hits}.")
    create_markdown_artifact(key="generative-stages", markdown="\n".join(lines), description="describe / correct / headers")


def publish_review(report: StageReport, report_path: str) -> None:
    """Flags per type and where the expert review report is."""
    lines = [f"**{report.items} QA pairs** ({report.provider}, {report.model}), {report.flagged} flags.", "",
             "| flag | pairs |", "|---|---|"]
    lines += [f"| {code} | {count} |" for code, count in sorted(report.flags.items())] or ["| (none) | 0 |"]
    lines += ["", f"Review report: [{report_path}](file://{report_path})",
              "Apply the exported decisions with `ragprep review apply decisions.json --root ...`."]
    create_markdown_artifact(key="qa-review", markdown="\n".join(lines), description="QA flags and review report")


def run_generative_stages(settings: Settings, stages: tuple[str, ...] = GENERATIVE_STAGES) -> list[StageReport]:
    reports = [stage_task(stage, settings) for stage in stages]
    publish_reports(reports)
    qa = next((r for r in reports if r.stage == "qa"), None)
    if qa is not None:
        publish_review(qa, str(review_report_task(settings)))
    return reports


@flow(name="describe")
def describe_flow(root: str | None = None) -> list[StageReport]:
    """Describe every picture, chart and table (VLM text beside the OCR text).

    Args:
        root: Output root holding the ingested tables; default RAGPREP_ROOT or ./ragprep-data.
    """
    return run_generative_stages(build_settings(root, None, None), ("describe",))


@flow(name="correct")
def correct_flow(root: str | None = None) -> list[StageReport]:
    """Correct each slide's Markdown; numbers not in the source keep the slide uncorrected and flagged.

    Args:
        root: Output root holding the ingested tables; default RAGPREP_ROOT or ./ragprep-data.
    """
    return run_generative_stages(build_settings(root, None, None), ("correct",))


@flow(name="qa")
def qa_flow(root: str | None = None) -> list[StageReport]:
    """Generate and flag QA pairs per chunk, apply expert decisions, write the review report.

    Args:
        root: Output root holding the ingested tables; default RAGPREP_ROOT or ./ragprep-data.
    """
    return run_generative_stages(build_settings(root, None, None), ("qa",))


@flow(name="headers")
def headers_flow(root: str | None = None) -> list[StageReport]:
    """Extract report headers of test reports and prepend them to their chunks (markdown_v1).

    Args:
        root: Output root holding the ingested tables; default RAGPREP_ROOT or ./ragprep-data.
    """
    return run_generative_stages(build_settings(root, None, None), ("headers",))
