"""The retrieval evaluation as reports: the seed paper's Tables 4 and 5, breakdowns, the leak diagnostic, a comparison.

- **Table 4**: every retriever x encoder x re-ranker on the Ver.1 text, all test questions.
- **Table 5**: header Ver.0 vs Ver.1 per retriever x encoder x re-ranker, on the questions of
  test reports (the only documents with a header) and on all test questions.
- **Breakdown**: per document type, target modality and leak group, for the reference variant
  (Ver.1, hybrid, the trained encoder when there is one, no re-ranking).

With one gold chunk per question, Recall@k equals Success@k; the tables show R@k only when
they differ (the Parquet file always has both).
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import BaseModel

from ragprep.report import Report
from tasks.evaluate.ranking import LABELS, METRICS
from tasks.evaluate.summary import TEXT_LABELS, EvaluationSummary, Variant

TABLE_METRICS = ("map_1", "map_5", "map_10", "mrr_10", "success_1", "success_5", "success_10")
RECALL = ("recall_1", "recall_5", "recall_10")


def _scope(summary: EvaluationSummary) -> str:
    return "/".join(summary.options.get("question_splits", ["test"])) + " split"


def _fmt(value: float | None) -> str:
    return "–" if value is None else f"{value:.3f}"


def _metrics_shown(summary: EvaluationSummary) -> tuple[str, ...]:
    differs = any(r[f"recall_{k}"] != r[f"success_{k}"] for r in summary.rows for k in (1, 5, 10) if r["n"])
    return TABLE_METRICS + (RECALL if differs else ())


def _config_cells(v: Variant) -> list[str]:
    return [v.retriever, v.encoder, v.reranker]


def _first_stage_variants(summary: EvaluationSummary, text: str) -> list[Variant]:
    return [v for v in summary.variants() if v.text == text]


def reference_variant(summary: EvaluationSummary) -> Variant:
    """Ver.1 (or the one text evaluated), hybrid (or the first retriever), trained encoder when present, no re-ranking."""
    variants = summary.variants()
    text = "v1" if any(v.text == "v1" for v in variants) else variants[0].text
    retriever = "hybrid" if any(v.retriever == "hybrid" for v in variants) else variants[0].retriever
    encoder = "trained" if any(v.encoder == "trained" and v.retriever == retriever for v in variants) else "vanilla"
    return Variant(text, retriever, encoder, "none")


def leak_note(summary: EvaluationSummary) -> str:
    """The leak stated next to a generated-question figure: how many of the questions name their file or title."""
    leak = summary.leak
    return (f"leak: {leak.names_either} of {leak.questions} generated questions ({100 * leak.share(leak.names_either):.0f}%) "
            "name their gold chunk's file or title, so their figures are partly a title lookup; the breakdown's "
            "'names neither' rows are the questions without it")


def table4(summary: EvaluationSummary) -> Report:
    """Every variant on the Ver.1 text (Ver.0 when only it was evaluated), all test questions."""
    metrics = _metrics_shown(summary)
    text = "v1" if any(v.text == "v1" for v in summary.variants()) else "v0"
    rows = []
    for v in _first_stage_variants(summary, text):
        row = summary.row(v)
        rows.append([*_config_cells(v), *(_fmt(row[m]) for m in metrics)])
    return Report(
        title=f"Table 4 — retrieval on the {_scope(summary)} ({TEXT_LABELS[text]} text, {summary.test_questions} questions, "
              f"pool {summary.pool_chunks} chunks)",
        columns=["retriever", "encoder", "re-ranker", *(LABELS[m] for m in metrics)],
        rows=rows,
        notes=[leak_note(summary)],
    )


def table5(summary: EvaluationSummary, group_kind: str = "doc_type", group: str = "test_report") -> Report:
    """Header Ver.0 vs Ver.1 for every retriever x encoder x re-ranker on one group of questions."""
    metrics = _metrics_shown(summary)
    texts = [t for t in ("v0", "v1") if any(v.text == t for v in summary.variants())]
    rows: list[list[object]] = []
    n = 0
    for v in _first_stage_variants(summary, texts[-1]):
        for text in texts:
            row = summary.row(Variant(text, v.retriever, v.encoder, v.reranker), group_kind, group)
            if row is None:
                continue
            n = row["n"]
            rows.append([*_config_cells(v), TEXT_LABELS[text], *(_fmt(row[m]) for m in metrics)])
    scope = f"all {_scope(summary)} questions" if group_kind == "all" else f"{group} questions"
    return Report(
        title=f"Table 5 — header Ver.0 vs Ver.1, {scope} (n = {n})",
        columns=["retriever", "encoder", "re-ranker", "text", *(LABELS[m] for m in metrics)],
        rows=rows,
        notes=[leak_note(summary)] if rows else [f"no {scope} among the {_scope(summary)} questions of this version"],
    )


def breakdown(summary: EvaluationSummary) -> Report:
    """The reference variant per document type, target modality and leak group."""
    reference = reference_variant(summary)
    metrics = _metrics_shown(summary)
    rows = []
    for kind in ("all", "doc_type", "modality", "leak"):
        for r in summary.rows:
            if r["group_kind"] == kind and Variant(r["text"], r["retriever"], r["encoder"], r["reranker"]) == reference:
                rows.append([kind, r["group"], r["n"], *(_fmt(r[m]) for m in metrics)])
    return Report(
        title=f"By document type, question modality and leak ({TEXT_LABELS[reference.text]}, {reference.retriever}, "
              f"{reference.encoder}, no re-ranking)",
        columns=["group", "value", "n", *(LABELS[m] for m in metrics)],
        rows=rows,
        notes=[leak_note(summary)],
    )


def lead_lines(summary: EvaluationSummary) -> list[str]:
    """What was evaluated, on what, with which models; the leak diagnostic."""
    splits = ", ".join(f"{k} {v}" for k, v in sorted(summary.pool_by_split.items()))
    leak = summary.leak
    adapter = summary.adapter
    splits_used = summary.options.get("question_splits", ["test"])
    scope = "test-split questions" if list(splits_used) == ["test"] else (
        f"questions of the {'/'.join(splits_used)} splits (a diagnostic, not the seed's protocol; trained models left out)")
    lines = [
        f"**Dataset version {summary.version_id}**: {summary.test_questions} {scope} "
        f"(by document type: {_pairs(summary.questions_by_doc_type)}; by target modality: {_pairs(summary.questions_by_modality)}); "
        f"pool: every chunk of every split, {summary.pool_chunks} ({splits}).",
        f"Embedder: {summary.embedder}. Trained encoder: "
        + (f"query adapter {adapter['model_id']} (trained on version {adapter.get('version_id')}, {adapter.get('steps')} steps, "
           f"kept step {adapter.get('best_step')} by {adapter.get('selected_by')})" if adapter else
           "none (`ragprep train retriever` trains the query adapter)")
        + ". Re-rankers: "
        + ", ".join(filter(None, [summary.embedder_reranker and f"embedder = {summary.embedder_reranker}",
                                   summary.reranker and f"trained = {summary.reranker.get('kind')} {summary.reranker.get('model_id')}"]))
        + (f", depth {summary.options.get('rerank_depth')}." if summary.embedder_reranker else "none."),
        f"**Leak diagnostic**: {leak.names_file} of {leak.questions} questions ({100 * leak.share(leak.names_file):.0f}%) "
        f"contain their gold chunk's file name, {leak.names_title} ({100 * leak.share(leak.names_title):.0f}%) its title, "
        f"{leak.names_either} ({100 * leak.share(leak.names_either):.0f}%) either; the breakdown shows both groups.",
    ]
    return lines


def _pairs(counts: dict[str, int]) -> str:
    return ", ".join(f"{k} {v}" for k, v in counts.items()) or "none"


def notes(summary: EvaluationSummary) -> list[str]:
    """Reading notes under the tables."""
    out = ["MAP@k, MRR@10, R@k and S@k are defined in tasks/evaluate/ranking.py; with one gold chunk per question "
           "MAP@1 = S@1, MAP@k = MRR@k (k >= 1) and R@k = S@k."]
    if summary.test_questions < 50:
        out.append(f"Only {summary.test_questions} questions: one question moves a metric by "
                   f"{1 / summary.test_questions:.3f}; read differences smaller than that as noise.")
    return out


def evaluation_reports(summary: EvaluationSummary) -> list[Report]:
    """The reports of one evaluation, in the order the Markdown and the CLI show them."""
    reports = [table4(summary), table5(summary)]
    reports_n = summary.row(reference_variant(summary), "doc_type", "test_report")
    if reports_n is None or reports_n["n"] != summary.test_questions:  # else the same table twice
        reports.append(table5(summary, "all", "all"))
    return [*reports, breakdown(summary)]


def evaluation_markdown(summary: EvaluationSummary) -> str:
    """The whole evaluation as Markdown (the Prefect artifact and the ``.md`` file)."""
    parts = [f"# Retrieval evaluation of dataset version {summary.version_id}", "", *lead_lines(summary), ""]
    for report in evaluation_reports(summary):
        parts += [f"## {report.title}", "", report.markdown(), ""]
    parts += notes(summary)
    return "\n".join(parts) + "\n"


class MetricMove(BaseModel):
    """One variant's metrics in two versions."""

    text: str
    retriever: str
    encoder: str
    reranker: str
    old: dict[str, float | None]
    new: dict[str, float | None]
    old_n: int
    new_n: int

    def delta(self, metric: str) -> float | None:
        """new - old (None when either is missing)."""
        a, b = self.old.get(metric), self.new.get(metric)
        return None if a is None or b is None else b - a


class Comparison(BaseModel):
    """How every metric moved between two evaluated versions (group ``all``)."""

    old: EvaluationSummary
    new: EvaluationSummary
    moves: list[MetricMove]
    common_questions: int

    def report(self, metrics: Sequence[str] | None = None) -> Report:
        """One row per variant: the new value and its change from the old version (R@k only where it differs from S@k)."""
        if metrics is None:
            differs = any(m.old.get(f"recall_{k}") != m.old.get(f"success_{k}") or m.new.get(f"recall_{k}") != m.new.get(f"success_{k}")
                          for m in self.moves for k in (1, 5, 10))
            metrics = TABLE_METRICS + (RECALL if differs else ())
        rows = []
        for m in self.moves:
            cells = []
            for metric in metrics:
                d = m.delta(metric)
                cells.append(f"{_fmt(m.new.get(metric))} ({'–' if d is None else f'{d:+.3f}'})")
            rows.append([TEXT_LABELS.get(m.text, m.text), m.retriever, m.encoder, m.reranker, f"{m.old_n}→{m.new_n}", *cells])
        return Report(
            title=f"{self.old.version_id} → {self.new.version_id}: new value (change)",
            columns=["text", "retriever", "encoder", "re-ranker", "n", *(LABELS[m] for m in metrics)],
            rows=rows,
            lead=[f"Test questions: {self.old.test_questions} → {self.new.test_questions} ({self.common_questions} in both); "
                  f"pool: {self.old.pool_chunks} → {self.new.pool_chunks} chunks; leak (names file or title): "
                  f"{self.old.leak.names_either} → {self.new.leak.names_either}."],
        )


def compare(old: EvaluationSummary, new: EvaluationSummary, common_questions: int) -> Comparison:
    """Every variant evaluated in both versions, with its metrics over all test questions."""
    moves = []
    for v in new.variants():
        a, b = old.row(v), new.row(v)
        if a is None or b is None:
            continue
        moves.append(MetricMove(text=v.text, retriever=v.retriever, encoder=v.encoder, reranker=v.reranker,
                                old={m: a[m] for m in METRICS}, new={m: b[m] for m in METRICS}, old_n=a["n"], new_n=b["n"]))
    return Comparison(old=old, new=new, moves=moves, common_questions=common_questions)
