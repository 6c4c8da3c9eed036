"""What every command shares: the consoles, common options, settings, the one error decorator, the run preparation
and the printers."""

from __future__ import annotations

import functools
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

from ragprep import __version__
from ragprep.errorlog import quiet_user_errors
from ragprep.errors import RagprepError
from ragprep.library_logs import quiet_library_loggers
from ragprep.offline import disable_vendor_telemetry
from ragprep.settings import MAX_WORKERS, Settings, build_settings, explain_invalid
from ragprep.storage import DiskFullError, check_root, is_disk_full

console = Console()  # on a pipe, widened before use (see widen_for_pipes)
err = Console(stderr=True)


def widen_for_pipes() -> None:
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


def settings_for(root: Path | None = None, workers: int | None = None, ocr: bool | None = None, **overrides: object) -> Settings:
    """The command's settings, built once (environment, ``ragprep.toml``, then the options given); invalid: exit 2."""
    try:
        settings = build_settings(root, workers, ocr, **overrides)
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


def show_warnings() -> None:
    """ragprep's warnings as one line each on stderr (installed once)."""
    logger = logging.getLogger("ragprep")
    if not any(isinstance(h, _WarningLine) for h in logger.handlers):
        handler = _WarningLine(logging.WARNING)
        logger.addHandler(handler)
        logger.setLevel(logging.INFO)
        logger.propagate = False  # the terminal line replaces Prefect's root console handler's copy


def show_version(value: bool) -> None:
    """``--version``: print it and exit."""
    if value:
        console.print(f"ragprep {__version__}")
        raise typer.Exit()


def quiet_prefect_environment() -> None:
    """A local Prefect run sends no telemetry (nothing leaves the premises): ``ragprep.offline``."""
    disable_vendor_telemetry()


def prepare() -> None:
    """Before a command runs a flow: no telemetry, user errors without tracebacks, live bars on a terminal, a Prefect API."""
    quiet_prefect_environment()
    _quiet_user_errors()
    quiet_library_loggers()
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

    use_prefect_api()  # a RagprepError reaches the command's ``user_errors``: one line, exit 2


def _quiet_user_errors() -> None:
    quiet_user_errors()


def check_paths(paths: list[Path]) -> None:
    """Missing inputs stop the run before anything starts, on one line (exit 1, as for no documents)."""
    missing = [str(p) for p in paths if not p.exists()]
    if missing:
        err.print(
            f"[red]error:[/red] no such file or folder: {escape(', '.join(missing))}; "
            "give existing files or folders of .pptx/.pdf documents"
        )
        raise typer.Exit(1)


def user_errors(command):
    """The one error handler of the CLI: an error the user can fix (a ``RagprepError``, which names what to do; a
    missing file; a full disk outside ragprep's own writers) is one clear line on stderr and exit 2."""

    @functools.wraps(command)
    def guarded(*args, **kwargs):
        try:
            return command(*args, **kwargs)
        except (FileNotFoundError, RagprepError) as exc:
            err.print(f"[red]error:[/red] {escape(str(exc))}")
            raise typer.Exit(2) from exc
        except OSError as exc:  # a full disk outside ragprep's own writers (Prefect's database, a library's files)
            if not is_disk_full(exc):
                raise
            err.print(f"[red]error:[/red] {escape(str(DiskFullError(exc.filename, exc.errno)))}")
            raise typer.Exit(2) from exc

    return guarded


def warned_or_json(result, as_json: bool) -> bool:
    """Print a result's warnings to stderr; with ``--json`` print the result and return True (nothing else to show)."""
    for warning in result.warnings:
        err.print(f"[yellow]warning:[/yellow] {warning}")
    if as_json:
        sys.stdout.write(result.model_dump_json(indent=2) + "\n")
    return as_json


def print_report(report) -> None:
    """A summary's report: its lead lines, its table, its notes (the flows publish the same report)."""
    for line in report.lead:
        console.print(line.replace("**", ""))  # Markdown emphasis is for the artifact
    if report.rows:
        console.print(report.rich_table(console.width))
    for line in report.notes:
        console.print(line.replace("**", ""))


PathsArgument = Annotated[list[Path], typer.Argument(help="Files or folders of .pptx/.pdf documents.")]
WorkersOption = Annotated[
    Optional[int], typer.Option(help=f"Documents processed at once (1-{MAX_WORKERS}, default 2).", min=1, max=MAX_WORKERS)
]
OcrOption = Annotated[Optional[bool], typer.Option("--ocr/--no-ocr", help="Run Tesseract OCR (default on).")]
VersionOption = Annotated[Optional[str], typer.Option("--version", help="Dataset version (default: the latest published).")]


class TextVariant(str, Enum):
    v1 = "v1"
    v0 = "v0"


VariantOption = Annotated[
    Optional[TextVariant],
    typer.Option("--variant", help="Chunk text: v1 = report header + text (markdown_v1), v0 = without header (default v1)."),
]
