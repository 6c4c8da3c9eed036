"""The ``ragprep`` command line: the top layer, above ``flows`` (the console script ``ragprep`` is ``ragprep.cli:app``).

One module per command group: ``pipeline`` (run, ingest, the single stages, quotes, negatives, dataset), ``review``
(qa audit, review report/apply), ``data`` (versions, diff, sql, export mmdocrag, score quotes), ``downstream`` (index,
search, evaluate, export train, train, ask, refmatch) and ``serve``; what they share is in ``common``. Every command
builds its settings once and reports a user's error (a ``RagprepError``) on one line through ``common.user_errors``.
Flows are imported inside the commands that run them, so ``ragprep --help`` and ``ragprep sql`` stay fast.
"""

from __future__ import annotations

from typing import Annotated

import typer

from ragprep.cli import data, downstream, pipeline, review, serve
from ragprep.cli.common import show_version, show_warnings, widen_for_pipes
from ragprep.offline import disable_vendor_telemetry
from ragprep.pygc import pace_collector

app = typer.Typer(
    name="ragprep",
    help="Turn slide decks and PDF books into a traceable RAG corpus and training data.",
    no_args_is_help=True,
    add_completion=False,
)


@app.callback()
def main(
    version: Annotated[
        bool, typer.Option("--version", callback=show_version, is_eager=True, help="Show the version and exit.")
    ] = False,
) -> None:
    """ragprep: on-premise document-to-RAG-corpus pipeline."""
    disable_vendor_telemetry()  # before any command imports PyMuPDF (onnxruntime), Prefect or GX
    pace_collector()
    widen_for_pipes()
    show_warnings()


# Commands and groups are registered here, in the order `ragprep --help` lists them.
app.command()(pipeline.run)
app.command()(pipeline.ingest)
for _stage in pipeline.STAGE_HELP:
    if _stage not in pipeline.GROUP_STAGES:
        app.command(name=_stage)(pipeline.stage_command(_stage))

qa_app = typer.Typer(help=pipeline.STAGE_HELP["qa"] + " With a subcommand (audit), only that.")
app.add_typer(qa_app, name="qa")
qa_app.callback(invoke_without_command=True)(review.qa)
qa_app.command("audit")(review.qa_audit)

review_app = typer.Typer(help="Expert review of flagged QA pairs.", no_args_is_help=True)
app.add_typer(review_app, name="review")
review_app.command("report")(review.review_report)
review_app.command("apply")(review.review_apply)
review_app.command("serve")(review.review_serve)

app.command()(pipeline.dataset)
app.command()(data.versions)
app.command()(data.gc)
app.command()(data.diff)
app.command()(data.sql)
app.command()(pipeline.quotes)
app.command()(pipeline.negatives)

export_app = typer.Typer(help="Exports of the dataset for other tools.", no_args_is_help=True)
app.add_typer(export_app, name="export")
export_app.command("mmdocrag")(data.export_mmdocrag_command)

score_app = typer.Typer(help="Evaluation scores.", no_args_is_help=True)
app.add_typer(score_app, name="score")
score_app.command("quotes")(data.score_quotes)

app.command("index")(downstream.index_command)
app.command()(downstream.search)
app.command()(downstream.evaluate)
export_app.command("train")(downstream.export_train_command)

train_app = typer.Typer(help="Train a retriever or re-ranker on a dataset version's training exports.", no_args_is_help=True)
app.add_typer(train_app, name="train")
train_app.command("retriever")(downstream.train_retriever)
train_app.command("reranker")(downstream.train_reranker)

app.command()(downstream.ask)
app.command()(downstream.refmatch)
app.command()(serve.serve)
