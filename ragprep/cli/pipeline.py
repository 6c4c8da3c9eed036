"""Pipeline commands: ``run``, ``ingest``, the single-stage commands in pipeline order, ``quotes``, ``negatives``, ``dataset``."""

from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.markup import escape

from ragprep.cli.common import (
    OcrOption,
    PathsArgument,
    RootOption,
    WorkersOption,
    check_paths,
    console,
    err,
    prepare,
    print_report,
    settings_for,
    user_errors,
)
from ragprep.settings import Settings
from ragprep.storage import Layout


def print_ingest(summary) -> None:
    """The ingest summary's report (with colours)."""
    print_report(summary.report(colour=True))


def print_stages(reports) -> None:
    """The stage reports of a flow as one table."""
    from tasks.stage import stages_report

    if reports:
        print_report(stages_report(reports))


def print_qa_status(settings: Settings) -> None:
    """One line on the QA pairs by status, and why the offline critic approved none when it did not (its gate)."""
    from collections import Counter

    from ragprep.tables import TableStore

    pairs = TableStore(Layout(settings.root)).read_arrow("qa_pairs")
    if pairs is None or not pairs.num_rows:
        return  # before the judge's import (BM25, SciPy): an ingest has no pairs
    status = Counter(pairs.column("status").to_pylist())
    line = ", ".join(f"{n} {name}" for name, n in sorted(status.items()))
    console.print(f"qa:      {pairs.num_rows} pairs: {line}")
    critics = set(pairs.column("critic_provider").to_pylist()) if "critic_provider" in pairs.column_names else set()
    why = ""
    if critics == {"heuristic"}:
        from tasks.qa.judge import offline_precision_short

        why = offline_precision_short({"provider": "heuristic"}, settings)
    if why and not status.get("approved"):
        console.print(f"         {why.removeprefix('review: ')}; set qa.auto_approve_min_precision = 0 to "
                      "auto-approve what the critic passes anyway")


def print_outputs(settings: Settings) -> None:
    """Where the outputs are: tables, images, the review report, the dataset, and a first query."""
    from ragprep.tables import QUERYABLE_TABLES

    layout = Layout(settings.root)
    console.print(f"tables:  {layout.tables_dir}/{{{','.join(QUERYABLE_TABLES)}}}.parquet")
    console.print(f"images:  {layout.images_dir}")
    print_qa_status(settings)
    if layout.latest_review_report.exists():
        console.print(f"review:  {layout.latest_review_report} (then: ragprep review apply decisions.json)")
    from tasks.dataset.versions import latest_version

    if latest_version(settings.root, settings.dataset_uri):
        console.print(f"dataset: {settings.dataset_uri or layout.datasets_dir} (ragprep versions)")
    console.print(f'query:   ragprep sql "select split, count(*) from chunks group by 1" --root {settings.root}')


def print_build(result) -> None:
    """One line on the dataset version a build made (published, already published or rejected)."""
    if result.published:
        state = "published (LATEST)" if result.created else "already published"
    else:
        state = "REJECTED by the quality gate: " + "; ".join(result.failed_expectations)
    console.print(f"dataset version {result.version_id}: {state}; {result.path}")


def print_mmdoc(summary) -> None:
    """The quotes / negatives report."""
    print_report(summary.report())


def ingested(flow_fn, paths: list[Path], settings: Settings):
    """Run a flow that ingests ``paths`` with the command's settings and run options. When it found no documents or
    every document failed, the flow run ends Failed with ``NothingIngestedError``: print its ingest summary, the
    outputs and the reason; exit 1."""
    from tasks.ingest.run import NothingIngestedError

    try:
        return flow_fn(paths=[str(p) for p in paths], root=str(settings.root), workers=settings.workers,
                       ocr=settings.ocr.enabled, task_runner=settings.task_runner, dask_address=settings.dask_address,
                       allow_removals=settings.allow_removals)
    except NothingIngestedError as exc:
        if exc.summary is not None:
            print_ingest(exc.summary)
        print_outputs(settings)
        err.print(f"[red]error:[/red] {escape(str(exc))}")
        raise typer.Exit(1) from exc


class TaskRunner(str, Enum):
    """``--task-runner``."""

    threads = "threads"
    dask = "dask"


TaskRunnerOption = Annotated[Optional[TaskRunner], typer.Option(
    "--task-runner", help="threads (default) or dask: per-document work in processes of a Dask cluster, --dask-address "
    "or a local one of --workers processes on 127.0.0.1 (env RAGPREP_TASK_RUNNER).", show_default=False)]
DaskAddressOption = Annotated[Optional[str], typer.Option(
    "--dask-address", help="Scheduler of an existing Dask cluster, tcp://host:8786 (env RAGPREP_DASK_ADDRESS).",
    show_default=False)]


AllowRemovalsOption = Annotated[bool, typer.Option(
    "--allow-removals", help="Let this run remove more than max_removed_share (default 0.5) of the previous run's documents "
    "at once; without it such a run (an unmounted share) stops before touching any table (env RAGPREP_ALLOW_REMOVALS).")]


def ingesting(paths: list[Path], root: Path | None, workers: int | None, ocr: bool | None, task_runner: TaskRunner | None,
              dask_address: str | None, allow_removals: bool = False) -> Settings:
    """The settings of a command that ingests ``paths`` (built once, run options included), once the paths exist and
    the run is prepared."""
    settings = settings_for(root, workers, ocr, task_runner=task_runner.value if task_runner else None, dask_address=dask_address,
                            allow_removals=True if allow_removals else None)
    check_paths(paths)
    prepare()
    return settings


@user_errors
def run(paths: PathsArgument, root: RootOption = None, workers: WorkersOption = None, ocr: OcrOption = None,
        task_runner: TaskRunnerOption = None, dask_address: DaskAddressOption = None,
        allow_removals: AllowRemovalsOption = False) -> None:
    """Run every stage over PATHS: ingest (extract + OCR + chunk), describe, correct, headers, qa, judge, quotes, negatives, dataset.

    Exits 1 only when no document was found or every document failed.
    """  # noqa: E501 (the first line is the command's one-line help, kept as it was)
    settings = ingesting(paths, root, workers, ocr, task_runner, dask_address, allow_removals)
    from flows.pipeline import pipeline_flow

    summary = ingested(pipeline_flow, paths, settings)
    print_ingest(summary.ingest)
    print_stages(summary.stages)
    if summary.mmdoc is not None:
        print_mmdoc(summary.mmdoc)
    if summary.dataset is not None:
        print_build(summary.dataset)
    print_outputs(settings)


@user_errors
def ingest(
    paths: PathsArgument,
    root: RootOption = None,
    workers: WorkersOption = None,
    ocr: OcrOption = None,
    task_runner: TaskRunnerOption = None,
    dask_address: DaskAddressOption = None,
    allow_removals: AllowRemovalsOption = False,
) -> None:
    """Extract documents and build chunks (the ingest stage alone).

    Exits 1 when no document was found or every document failed.
    """
    settings = ingesting(paths, root, workers, ocr, task_runner, dask_address, allow_removals)
    from flows.ingest import ingest_flow

    summary = ingested(ingest_flow, paths, settings)
    print_ingest(summary)
    print_outputs(settings)


STAGE_HELP = {
    "describe": "Describe pictures, charts and tables (vlm_text) in the ingested tables.",
    "correct": "Correct each slide's Markdown (markdown_v0); invented numbers are flagged.",
    "headers": "Extract test-report headers and prepend them to their chunks (markdown_v1).",
    "qa": "Generate and flag QA pairs per chunk, judge them (the judge stage), apply review decisions, write the review report.",
    "judge": "Score every QA pair 1-5 (grounded, standalone, well_formed, useful); "
    "approve those the critic passes, flag the rest.",
}
"""The single-stage commands over the working tables, in pipeline order."""


def stage_flows() -> dict:
    """The flow of each single-stage command (imported when a command runs: ``ragprep --help`` stays fast)."""
    from flows.enrich import correct_flow, describe_flow, headers_flow
    from flows.qa import judge_flow, qa_flow

    return {"describe": describe_flow, "correct": correct_flow, "headers": headers_flow, "qa": qa_flow, "judge": judge_flow}


def stage_command(stage: str):
    """The command that runs one stage's flow over the working tables."""

    @user_errors
    def command(root: RootOption = None) -> None:
        settings = settings_for(root)
        prepare()
        flow_fn = stage_flows()[stage]
        print_stages(flow_fn(root=str(settings.root)))

    command.__doc__ = STAGE_HELP[stage]
    command.__name__ = stage
    return command


GROUP_STAGES = ("qa",)
"""Stages that are command groups: the bare command runs the stage, subcommands do the rest."""


@user_errors
def dataset(root: RootOption = None) -> None:
    """Split into train/val/test, build a versioned dataset and publish it if the quality gate passes.

    Exits 1 when the new version failed the gate (it is kept under datasets/rejected/).
    """
    settings = settings_for(root)
    prepare()
    from flows.dataset import dataset_flow

    result = dataset_flow(root=str(settings.root))
    print_build(result)
    if not result.published:
        raise typer.Exit(1)


@user_errors
def quotes(root: RootOption = None) -> None:
    """Lay out PDF pages and slides into MMDocRAG quotes: text quotes, and image quotes (crop + OCR + VLM text).

    The layout backend is RAGPREP_QUOTES__LAYOUT_BACKEND: pymupdf-layout (default, offline) or mineru.
    """
    settings = settings_for(root)
    prepare()
    from flows.mmdoc import quotes_flow

    print_mmdoc(quotes_flow(root=str(settings.root)))


@user_errors
def negatives(root: RootOption = None) -> None:
    """Quotes, then candidate sets per approved QA pair and multi-quote question: gold + hard negatives (15 = 10+5, 20 = 12+8)."""
    settings = settings_for(root)
    prepare()
    from flows.mmdoc import negatives_flow

    print_mmdoc(negatives_flow(root=str(settings.root)))
