"""QA review commands: ``qa`` (the stage, or ``qa audit``) and ``review report`` / ``review apply`` / ``review serve``."""

from __future__ import annotations

import sys
from enum import Enum
from pathlib import Path
from typing import Annotated, Optional

import typer

from ragprep.cli.common import RootOption, console, err, print_report, settings_for, user_errors
from ragprep.cli.pipeline import stage_command
from ragprep.storage import Layout


def qa(ctx: typer.Context, root: RootOption = None) -> None:
    """Without a subcommand: the qa stage (``STAGE_HELP["qa"]``). ``ragprep qa audit`` prints the audit instead."""
    if ctx.invoked_subcommand is None:
        stage_command("qa")(root)
    else:
        ctx.obj = root  # `ragprep qa --root DIR audit` works too


class AuditFormat(str, Enum):
    """``qa audit --format``."""

    table = "table"
    json = "json"


@user_errors
def qa_audit(
    ctx: typer.Context,
    root: RootOption = None,
    version: Annotated[Optional[str], typer.Option("--version", help="Dataset version (default: the working tables).")] = None,
    format: Annotated[AuditFormat, typer.Option("--format", "-f", help="Output format.")] = AuditFormat.table,
) -> None:
    """The critic's usable share by document, question type and modality; pairs by status and flag; review outcomes;
    coverage of the chunks holding a fact; the offline critic's document-grouped cross-validation figures and the
    auto-approval policy in force (qa.auto_approve_min_precision).

    Review outcomes: decisions by kind, and the share of spot-checked auto-approved pairs (approved with no
    flags before an expert decided) that experts rejected. --version audits a dataset version instead.
    """
    settings = settings_for(root or ctx.obj)
    from tasks.qa.audit import run_audit

    audit = run_audit(settings.root, version, settings.dataset_uri, settings.qa.auto_approve_min_precision)
    if format is AuditFormat.json:
        sys.stdout.write(audit.model_dump_json(indent=2) + "\n")
        return
    for report in audit.reports():
        print_report(report)


@user_errors
def review_report(
    root: RootOption = None,
    out: Annotated[
        Optional[Path], typer.Option("--out", help="Where to write the HTML (default ROOT/review/report-<build>.html).")
    ] = None,
) -> None:
    """Write the self-contained HTML review report: flagged QA pairs and a spot-check sample of auto-approved ones."""
    settings = settings_for(root)
    from tasks.qa.review_report import write_review_report

    if not Layout(settings.root).table_path("qa_pairs").exists():
        err.print(f"[red]error:[/red] no qa_pairs under {settings.root}; run `ragprep qa --root {settings.root}` first")
        raise typer.Exit(2)
    path = write_review_report(
        settings.root, out, spot_check_share=settings.qa.spot_check_share, spot_check_min=settings.qa.spot_check_min
    )
    console.print(f"review report: {path}")


@user_errors
def review_apply(
    file: Annotated[Path, typer.Argument(help="decisions JSON exported from the review report.")],
    root: RootOption = None,
) -> None:
    """Store review decisions (kept for every later build) and apply them to the QA pairs."""
    from tasks.qa.review import apply_decisions_file

    settings = settings_for(root)
    report = apply_decisions_file(file, settings.root)
    counts = ", ".join(f"{v} {k}" for k, v in sorted(report.counts.items()))
    console.print(f"{report.decisions} decisions from {file} ({counts}); {report.applied} applied to current QA pairs")
    if report.carried_over:
        console.print(f"{len(report.carried_over)} decision(s) carried over to regenerated QA pairs (same chunk, type and "
                      "answer; the question changed, e.g. after a header was filled)")
    for value in report.headers:
        shown = value.value if value.value is not None else "(not stated)"
        document = report.header_documents.get(value.doc_id, f"{value.doc_id} (no such document now)")
        console.print(f"header value: {document}: {value.field} = {shown}", markup=False)
    if report.headers:
        console.print(f"{len(report.headers)} header value(s) stored; they take effect on the next build "
                      f"(`ragprep run PATHS --root {settings.root}`: headers, then the questions that name the report)")
    if report.orphaned:
        console.print(
            f"[yellow]{len(report.orphaned)} orphaned decision(s): their QA pair no longer exists[/yellow] "
            f"(kept in the review table, applied if the pair reappears; listed in the review report): "
            f"{', '.join(report.orphaned[:10])}{' ...' if len(report.orphaned) > 10 else ''}"
        )


@user_errors
def review_serve(
    root: RootOption = None,
    host: Annotated[str, typer.Option("--host", help="Address to bind (0.0.0.0 in a container).")] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", help="Port of the report page.", min=1, max=65535)] = 8080,
) -> None:
    """Serve the root's review reports, quality pages and exports read-only over HTTP until Ctrl-C or SIGTERM.

    The report page on its own (`ragprep serve` runs the same page next to the Prefect server); the compose file's
    `reports` service. Requests must name this server in their Host header (its address, loopback, or the host of
    RAGPREP_PUBLIC_URL); set RAGPREP_PUBLIC_URL to the URL experts open, and artifact links point here.
    """
    import os
    import signal
    import threading

    from ragprep.webroot import WebRoot

    settings = settings_for(root)
    try:
        web = WebRoot(settings.root, host, port, public_url=os.environ.get("RAGPREP_PUBLIC_URL")).start()
    except OSError as exc:
        err.print(f"[red]error:[/red] cannot serve on {host}:{port}: {exc.strerror or exc}; choose another --port")
        raise typer.Exit(2) from exc
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())  # as PID 1 in a container SIGTERM is ignored without a handler
    console.print(f"reports: {web.url} (read-only: review reports, quality pages, exports of {settings.root}); Ctrl-C stops")
    try:
        stop.wait()
    except KeyboardInterrupt:
        pass
    finally:
        web.stop()
