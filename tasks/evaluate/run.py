"""The evaluate stage's runner: evaluate a dataset version (or compare two) and write the result."""

from __future__ import annotations

from ragprep.settings import Settings
from ragprep.storage import Layout
from tasks.dataset.snapshot import load_snapshot
from tasks.evaluate.retrieval import (
    EvalOptions,
    engines_for,
    eval_id_for,
    evaluate_snapshot,
    question_ranks,
    stored_evaluation,
    write_evaluation,
)
from tasks.evaluate.retrieval_report import Comparison, compare, evaluation_markdown
from tasks.evaluate.summary import EvaluationSummary


def run_evaluate(settings: Settings, version: str | None = None, options: EvalOptions | None = None,
                 reuse: bool = False) -> EvaluationSummary:
    """Evaluate a dataset version (the latest published one when None), write and return the result.

    With ``reuse``, a stored evaluation of the same inputs (same eval id) is returned instead.
    """
    options = options or EvalOptions()
    layout = Layout(settings.root)
    snapshot = load_snapshot(settings, version)
    engines = engines_for(settings, options)
    if reuse:
        stored = stored_evaluation(layout, snapshot.version_id, eval_id_for(snapshot.version_id, engines, options))
        if stored is not None:
            return stored
    summary, per_question = evaluate_snapshot(snapshot, engines, options)
    return write_evaluation(layout, summary, per_question, evaluation_markdown(summary))


def run_compare(settings: Settings, old: str, new: str, options: EvalOptions | None = None) -> Comparison:
    """Evaluate two versions (reusing stored evaluations of the same inputs) and compare every metric."""
    a = run_evaluate(settings, old, options, reuse=True)
    b = run_evaluate(settings, new, options, reuse=True)
    ids = []
    for summary in (a, b):
        table = question_ranks(summary)
        ids.append(set(table.column("qa_id").to_pylist()) if table is not None else set())
    return compare(a, b, len(ids[0] & ids[1]))


def options_from_settings(settings: Settings, **overrides: object) -> EvalOptions:
    """The evaluation options of ``settings.evaluate`` (and the index's RRF constant), with overrides."""
    return EvalOptions.from_settings(settings, **overrides)
