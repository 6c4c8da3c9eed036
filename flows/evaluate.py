"""The ``evaluate`` flow: retrieval on a dataset version's test split (the seed paper's Tables 4 and 5), or a comparison."""

from __future__ import annotations

from typing import Literal

from prefect import flow
from prefect.artifacts import create_markdown_artifact

from flows.artifacts import publish_markdown
from flows.runtime import deployment_settings
from ragprep.settings import Settings
from tasks.evaluate.run import Comparison, EvaluationSummary, evaluation_markdown, options_from_settings
from tasks.wrappers import compare_task, evaluate_task

QUESTION_SPLITS = {"test": ("test",), "all": ("train", "val", "test")}


def run_evaluate_stage(settings: Settings, version: str | None = None, rerank_depth: int | None = None,
                       questions: str = "test") -> EvaluationSummary:
    """Evaluate and publish the report as the ``retrieval-evaluation`` Markdown artifact."""
    options = options_from_settings(settings, rerank_depth=rerank_depth, question_splits=QUESTION_SPLITS[questions])
    result = evaluate_task(settings, version, options)
    create_markdown_artifact(key="retrieval-evaluation", markdown=evaluation_markdown(result),
                             description=f"retrieval evaluation {result.eval_id} of dataset version {result.version_id}")
    return result


def run_compare_stage(settings: Settings, old: str, new: str, rerank_depth: int | None = None) -> Comparison:
    """Compare two versions and publish the moves as the ``retrieval-comparison`` artifact."""
    result = compare_task(settings, old, new, options_from_settings(settings, rerank_depth=rerank_depth))
    publish_markdown("retrieval-comparison", result.report(), f"retrieval metrics, {old} -> {new}")
    return result


@flow(name="evaluate")
def evaluate_flow(root: str | None = None, version: str | None = None, compare: list[str] | None = None,
                  rerank_depth: int | None = None, questions: Literal["test", "all"] = "test") -> EvaluationSummary | Comparison:
    """Evaluate retrieval on a dataset version: test-split questions against every chunk, all variants side by side.

    MAP@1/5/10, MRR@10, Recall/Success@1/5/10 for header Ver.0 vs Ver.1, BM25 vs dense vs hybrid, vanilla vs the
    trained query adapter, and without / with re-ranking; per document type and question modality; a leak diagnostic.

    Args:
        root: Output root holding the dataset versions; default RAGPREP_ROOT or ./ragprep-data.
        version: Dataset version id to evaluate; default the latest published (LATEST).
        compare: Two version ids [old, new]: compare every metric between them instead.
        rerank_depth: First-stage candidates a re-ranker re-orders; default evaluate.rerank_depth (20).
        questions: test (the protocol) or all (every split's questions: a diagnostic with more questions for the
            untrained variants; the trained models are left out).
    """
    settings = deployment_settings(root)
    if compare:
        if len(compare) != 2:
            raise ValueError(f"compare takes two version ids, got {compare}")
        return run_compare_stage(settings, compare[0], compare[1], rerank_depth)
    return run_evaluate_stage(settings, version, rerank_depth, questions)
