"""Data commands: ``versions``, ``diff``, ``sql``, ``export mmdocrag`` and ``score quotes``."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.markup import escape
from rich.table import Table

from ragprep.cli.common import OutputFormat, RootOption, console, err, settings_for, user_errors
from ragprep.errors import RagprepError
from ragprep.settings import Settings
from ragprep.storage import Layout


@user_errors
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
    settings = settings_for(root)
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
        return (
            "-"
            if not counts
            else f"{counts.get('total', 0)} ({counts.get('train', 0)}/{counts.get('val', 0)}/{counts.get('test', 0)})"
        )

    infos = list_versions(settings.root, settings.dataset_uri)
    for info in infos:
        status = info.status + (" [LATEST]" if info.is_latest else "")
        status += f" DAMAGED ({info.damaged} files)" if info.damaged else ""
        if info.damaged:
            err.print(f"[yellow]warning:[/yellow] version {info.version_id} is damaged: {info.damaged} files do not match "
                      f"its manifest; `ragprep versions --verify --version {info.version_id}` names them")
        table.add_row(
            info.version_id,
            status,
            info.created_at[:19],
            info.parent or "-",
            splits(info.rows.get("chunks")),
            splits(info.rows.get("qa_pairs")),
        )
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

    set_latest(settings.root, version_id, settings.dataset_uri)
    err.print(f"LATEST now names {version_id}")


def _verify(settings: Settings, version_id: str | None) -> None:
    """``versions --verify``: one line per version, one per bad file; exit 1 when any file is missing, truncated or changed."""
    from tasks.dataset.versions import verify_versions

    results = verify_versions(settings.root, version_id, settings.dataset_uri)
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


@user_errors
def gc(
    root: RootOption = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Only list what would be removed.")] = False,
) -> None:
    """Reclaim space: remove the parts and images that no document of the last ingest and no dataset version uses
    (documents removed from the inputs keep theirs until then). Holds the root's build lock."""
    from ragprep.gc import collect_garbage

    settings = settings_for(root)
    report = collect_garbage(settings, dry_run)
    verb = "would remove" if dry_run else "removed"
    for path in [*report.parts, *report.images]:
        console.print(f"{verb} {escape(str(path))}", highlight=False)
    console.print(f"{verb} {len(report.parts)} parts and {len(report.images)} images: {report.bytes / 2**20:.1f} MiB")


@user_errors
def diff(
    old: Annotated[str, typer.Argument(help="Older version id.")],
    new: Annotated[str, typer.Argument(help="Newer version id.")],
    root: RootOption = None,
) -> None:
    """Rows added, removed and changed per table between two dataset versions."""
    from tasks.dataset.versions import diff_versions

    settings = settings_for(root)
    diffs = diff_versions(settings.root, old, new, settings.dataset_uri)
    table = Table(title=f"{old} -> {new}")
    for column in ("table", "added", "removed", "changed"):
        table.add_column(column)
    for d in diffs:
        table.add_row(d.table, str(d.added), str(d.removed), str(d.changed))
    console.print(table)


@user_errors
def sql(
    query: Annotated[
        str,
        typer.Argument(
            help="DuckDB SQL over documents, elements, chunks, headers, qa_pairs, quotes, mm_items, review, runs, ..."
        ),
    ],
    root: RootOption = None,
    version: Annotated[
        Optional[str],
        typer.Option(
            "--version",
            help="Dataset version (default: the latest published); `working`: the last run's working tables (tables/*.parquet).",
        ),
    ] = None,
    format: Annotated[OutputFormat, typer.Option("--format", "-f", help="Output format.")] = OutputFormat.table,
) -> None:
    """Query with DuckDB: the latest dataset version (tables carry a split column), else the last run's tables;
    `--version working` queries the working tables even when versions exist.

    Example: ragprep sql "select split, count(*) from chunks group by 1"
    """
    from ragprep.catalog import run_query, to_csv, to_json  # DuckDB: only the commands that query load it

    settings = settings_for(root)
    if version is None:
        from tasks.dataset.versions import latest_warning

        _warn_latest(latest_warning, settings, "; this query reads the working tables (tables/*.parquet)")
    columns, rows = run_query(Layout(settings.root), query, version, settings.dataset_uri)
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


@user_errors
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
    from tasks.export.mmdocrag import export_mmdocrag

    settings = settings_for(root)
    con = connect(Layout(settings.root), version, settings.dataset_uri)
    result = export_mmdocrag(con, settings.root, out, size, split)
    console.print(f"wrote {result.lines} lines ({result.short_sets} short sets) and {result.images} images: {result.path}")


@user_errors
def score_quotes(
    predictions: Annotated[
        Path, typer.Argument(help='JSONL: {"q_id": .., "answer": "..[1] ![](image2).."} or {"q_id": .., "selected": ["text1"]}.')
    ],
    gold: Annotated[Path, typer.Argument(help="The exported MMDocRAG JSONL (ragprep export mmdocrag).")],
    format: Annotated[OutputFormat, typer.Option("--format", "-f", help="Output format.")] = OutputFormat.table,
) -> None:
    """Quote-selection precision/recall/F1 per modality (text \\[n], image ![](imageN)), micro and macro averaged."""
    import json

    from tasks.evaluate.files import score_files

    result = score_files(predictions, gold)
    corpus = result.corpus.as_dict()
    if format is OutputFormat.json:
        sys.stdout.write(json.dumps(corpus, indent=2) + "\n")
        return
    columns = ["modality", "items scored", "micro P", "micro R", "micro F1", "macro P", "macro R", "macro F1"]
    rows = []
    for modality in ("text", "image", "all"):
        m = corpus[modality]
        cells = [
            f"{m[a][k]:.3f}" if m[a][k] is not None else "-" for a in ("micro", "macro") for k in ("precision", "recall", "f1")
        ]
        rows.append((modality, str(m["n_scored"]), *cells))
    if format is OutputFormat.csv:
        from ragprep.catalog import to_csv

        sys.stdout.write(to_csv(columns, rows))
        return
    table = Table(*columns, title=f"quote selection: {predictions.name} vs {gold.name}")
    for row in rows:
        table.add_row(*row)
    console.print(table)
    if result.missing_predictions:
        console.print(f"{len(result.missing_predictions)} questions had no prediction (scored as empty selections)")
