"""The training flows: ``export-training`` (retriever, re-ranker and SFT files) and ``train`` (adapter / re-ranker)."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from prefect import flow

from flows.artifacts import publish_markdown
from flows.runtime import deployment_settings
from ragprep.report import Report
from ragprep.settings import Settings
from tasks.train.run import TrainReport
from tasks.wrappers import TrainingExport, export_training_task, train_task


def export_report(result: TrainingExport) -> Report:
    """Files and line counts of a training export, with the guard counts."""
    counts = result.card["counts"]
    guard = counts["retriever"]["guard"]
    return Report(
        title=f"training exports of dataset version {result.version_id}",
        columns=["file", "lines"],
        rows=[[name, n] for name, n in result.card["files"].items()],
        lead=[f"**{result.out_dir}** (train and val splits only; questions {counts['questions']}, "
              f"pool {counts['pool_chunks']} chunks)"],
        notes=[f"Hard negatives: {counts['retriever']['negatives']} ({counts['retriever']['mean_negatives']:.1f} per question, "
               f"{counts['retriever']['short_of_negatives']} questions short); false-negative guard skipped "
               f"{guard['skipped_answer']} containing the answer and {guard['skipped_margin']} within the margin of the gold "
               f"({guard['examined']} examined). Re-ranker draws: {counts['reranker']['guard']['skipped_answer']} candidates "
               "containing the answer skipped.", *result.card.get("notes", [])],
    )


def run_export_stage(settings: Settings, version: str | None = None, out: str | None = None) -> TrainingExport:
    """Write the exports and publish their counts as the ``training-exports`` artifact."""
    result = export_training_task(settings, version, out)
    publish_markdown("training-exports", export_report(result), f"training exports of {result.version_id}")
    return result


def run_train_stage(settings: Settings, target: str, version: str | None = None, steps: int | None = None,
                    backend: str | None = None) -> TrainReport:
    """Train and publish the model card summary as the ``training`` artifact."""
    result = train_task(settings, target, version, steps, backend)
    publish_markdown("training", Report(title=f"{result.kind} {result.model_id}", columns=[], lead=result.lines()),
                     f"{result.kind} trained on {result.version_id}")
    return result


@flow(name="export-training")
def export_training_flow(root: str | None = None, version: str | None = None, out: str | None = None) -> TrainingExport:
    """Write training files from a dataset version (train/val splits only): retriever JSONL with hard negatives,
    re-ranker labelled pairs, SFT chat JSONL and its MMDocRAG-style multimodal variant, and a card.

    Args:
        root: Output root holding the dataset versions; default RAGPREP_ROOT or ./ragprep-data.
        version: Dataset version id; default the latest published (LATEST).
        out: Output folder; default ROOT/exports/training/VERSION.
    """
    return run_export_stage(deployment_settings(root), version, out)


@flow(name="train")
def train_flow(target: Literal["retriever", "reranker"] = "retriever", root: str | None = None, version: str | None = None,
               steps: int | None = None, backend: str | None = None, judge_queries: str | None = None) -> TrainReport:
    """Train on a dataset version's training exports (written first when missing) and save the model with its card.

    Args:
        target: retriever (query adapter on frozen embedder vectors) or reranker (linear re-ranker).
        root: Output root holding the dataset versions; default RAGPREP_ROOT or ./ragprep-data.
        version: Dataset version id; default the latest published (LATEST).
        steps: Optimisation steps; default train.adapter_steps / train.reranker_steps / train.st_steps.
        backend: retriever: adapter (default) or sentence-transformers; reranker: linear (default) or cross-encoder.
            The sentence-transformers backends need the [train] extra.
        judge_queries: retriever adapter: a hand-written query file to judge it on before publishing (default
            train.adapter_judge_queries).
    """
    settings = deployment_settings(root)
    if judge_queries:
        settings = settings.model_copy(update={"train": settings.train.model_copy(
            update={"adapter_judge_queries": Path(judge_queries)})})
    return run_train_stage(settings, target, version, steps, backend)
