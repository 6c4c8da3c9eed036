"""evaluate: retrieval over a dataset version, the seed paper's protocol, every variant side by side.

**Protocol.** The questions are the version's approved QA pairs of the **test** split; the pool
is **every chunk of every split** (a test question must find its chunk among all of them); the
gold of a question is the one chunk it was written from. Metrics (``ranking.py``, defined
there): MAP@1/5/10, MRR@10, Recall@1/5/10 and Success@1/5/10, over all test questions and per
document type, question target modality and leak group.

**Variants** (one row each):

- text: ``v0`` (Ver.0, ``markdown_v0``: no report header) or ``v1`` (Ver.1, ``markdown_v1``:
  the report header block, then Ver.0; equal to Ver.0 for other document types);
- retriever: ``bm25``, ``dense`` or ``hybrid`` (reciprocal-rank fusion), ``ragprep/retrieval.py``;
- encoder: ``vanilla`` (the configured embedder) or ``trained`` (the latest query adapter of
  ``ragprep train retriever`` for this embedder, applied to the query vectors; BM25 has none);
- re-ranker: ``none``, ``embedder`` (cross-scoring the top ``rerank_depth`` with the embedder:
  whole-passage and window cosines, ``tasks/train/reranker.py``) or ``trained`` (the latest
  trained re-ranker: the cross-encoder of the ``[train]`` extra, or the linear one).

**Leak diagnostic**: the share of test questions whose text contains their gold chunk's file
name (its stem, words as the answer guard normalises them) or its title (4+ characters). A
question that names its own file or slide title is easy for BM25 whatever the chunk says,
so the table also reports the metrics of the questions that name neither (group ``leak``).

Results go to ``<root>/evaluations/<version>/``: ``<eval_id>.parquet`` (one row per variant
and group), ``<eval_id>-questions.parquet`` (the gold rank of every question per variant),
``<eval_id>.md`` (the report) and ``latest.json`` (the last evaluation of that version). The
eval id hashes the version, the embedder, the trained models and the options, so a
comparison reuses a stored evaluation of the same inputs.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from ragprep import __version__
from ragprep.engines.embedder import Embedder
from ragprep.engines.query_memo import QueryMemo
from ragprep.errors import RagprepError
from ragprep.ids import stable_id
from ragprep.retrieval import Retriever
from ragprep.settings import EvaluateSettings, IndexSettings, Settings
from ragprep.storage import Layout, atomic_write_bytes
from ragprep.tables import TableStore, spec
from tasks.dataset.snapshot import ChunkRecord, QuestionRecord, Snapshot
from tasks.evaluate.ranking import first_relevant_rank, mean_metrics, question_metrics
from tasks.evaluate.summary import EvaluationSummary, LeakDiagnostic, Variant
from tasks.mmdoc.negatives import normalised
from tasks.train.adapter import apply_adapter
from tasks.train.loading import configured_embedder, trained_adapter, trained_reranker
from tasks.train.reranker import EmbedderReranker, Reranker

RETRIEVERS = ("bm25", "dense", "hybrid")
ENCODERS = ("vanilla", "trained")
RERANKERS = ("none", "embedder", "trained")
MIN_TITLE_CHARS = 4


class EvaluationError(RagprepError):
    """An evaluation that cannot run; the message says what to do."""


@dataclass(frozen=True)
class EvalOptions:
    """What one evaluation runs. The knobs the ``evaluate`` settings group sets (and the index's ``rrf_k``) default to
    that group's defaults, never restated here; :meth:`from_settings` takes them from a settings object."""

    text_variants: tuple[str, ...] = ("v0", "v1")
    retrievers: tuple[str, ...] = RETRIEVERS
    rerank: bool = EvaluateSettings.model_fields["rerank"].default
    trained: bool = EvaluateSettings.model_fields["trained"].default
    """Also evaluate the trained adapter and re-ranker when they exist."""
    rerank_depth: int = EvaluateSettings.model_fields["rerank_depth"].default
    """Candidates of the first stage that a re-ranker re-orders (at least 10)."""
    rrf_k: int = IndexSettings.model_fields["rrf_k"].default
    question_splits: tuple[str, ...] = ("test",)
    """Splits whose questions are evaluated: the test split is the protocol; more splits (a diagnostic with more
    questions, for untrained variants only) leave the trained models out, since they were trained on train/val."""

    @property
    def protocol(self) -> bool:
        """Whether this is the seed's protocol (test questions only)."""
        return tuple(self.question_splits) == ("test",)

    @classmethod
    def from_settings(cls, settings: Settings, **overrides: object) -> EvalOptions:
        """The options ``settings.evaluate`` (and ``settings.index.rrf_k``) set, with the overrides that are not None."""
        given = {name: getattr(settings.evaluate, name) for name in ("rerank_depth", "trained", "rerank")}
        given["rrf_k"] = settings.index.rrf_k
        given.update({k: v for k, v in overrides.items() if v is not None})
        return cls(**given)

    def as_dict(self) -> dict:
        """Plain values, for ids and reports."""
        return asdict(self)


def leak_flags(question: QuestionRecord, chunk: ChunkRecord) -> tuple[bool, bool]:
    """(the question names the chunk's file, the question names the chunk's title), on normalised words."""
    text = f" {normalised(question.question)} "
    stem = normalised(Path(chunk.source_path).stem)
    title = normalised(chunk.title)
    names_file = bool(stem) and f" {stem} " in text
    names_title = len(title) >= MIN_TITLE_CHARS and f" {title} " in text
    return names_file, names_title


def leak_diagnostic(questions: list[QuestionRecord], snapshot: Snapshot) -> tuple[LeakDiagnostic, dict[str, bool]]:
    """The diagnostic over ``questions``, and per qa_id whether it names its file or title."""
    flags = {q.qa_id: leak_flags(q, snapshot.chunk(q.chunk_id)) for q in questions}
    diagnostic = LeakDiagnostic(
        questions=len(questions), names_file=sum(f for f, _ in flags.values()), names_title=sum(t for _, t in flags.values()),
        names_either=sum(f or t for f, t in flags.values()),
    )
    return diagnostic, {k: f or t for k, (f, t) in flags.items()}


def _counts(values: list[str]) -> dict[str, int]:
    out: dict[str, int] = {}
    for v in values:
        out[v] = out.get(v, 0) + 1
    return dict(sorted(out.items()))


@dataclass
class _Ranked:
    """The ranked chunk ids of every test question for one variant."""

    variant: Variant
    lists: list[list[str]]


def _rerank(reranker: Reranker, questions: list[QuestionRecord], lists: list[list[str]], chunks: dict[str, ChunkRecord],
            text: str) -> list[list[str]]:
    """Each list re-ordered by the re-ranker's pair scores (ties keep the first stage's order)."""
    queries, passages, titles, owners = [], [], [], []
    for i, (question, ranked) in enumerate(zip(questions, lists)):
        for chunk_id in ranked:
            queries.append(question.question)
            passages.append(chunks[chunk_id].text(text))
            titles.append(chunks[chunk_id].title)
            owners.append(i)
    scores = reranker.score_pairs(queries, passages, titles) if queries else np.zeros(0)
    out: list[list[str]] = [[] for _ in lists]
    cursor = 0
    for i, ranked in enumerate(lists):
        part = scores[cursor:cursor + len(ranked)]
        cursor += len(ranked)
        order = np.argsort(-np.asarray(part, dtype=np.float64), kind="stable")
        out[i] = [ranked[j] for j in order]
    return out


@dataclass
class _Engines:
    """The embedder, the trained adapter and the re-rankers one evaluation uses."""

    embedder: Embedder
    adapter_weights: np.ndarray | None
    adapter_card: dict | None
    rerankers: dict[str, Reranker]
    reranker_card: dict | None


def engines_for(settings: Settings, options: EvalOptions) -> _Engines:
    """The embedder, trained adapter and re-rankers an evaluation with ``options`` uses."""
    embedder = QueryMemo(configured_embedder(settings))
    layout = Layout(settings.root)
    use_trained = options.trained and options.protocol
    adapter = trained_adapter(layout, embedder.name) if use_trained else None
    rerankers: dict[str, Reranker] = {}
    reranker_card = None
    if options.rerank:
        rerankers["embedder"] = EmbedderReranker(embedder)
        if use_trained:
            found = trained_reranker(layout, embedder)
            if found is not None:
                rerankers["trained"], reranker_card = found
    return _Engines(embedder, adapter[0] if adapter else None, adapter[1] if adapter else None, rerankers, reranker_card)


def _first_stages(snapshot: Snapshot, questions: list[QuestionRecord], engines: _Engines, options: EvalOptions
                  ) -> list[_Ranked]:
    """Every first-stage ranking (text variant x retriever x encoder), cut at the re-rank depth."""
    depth = max(10, options.rerank_depth)
    ids = [c.chunk_id for c in snapshot.chunks]
    queries = [q.question for q in questions]
    out = []
    for text in options.text_variants:
        vanilla = Retriever(ids, [c.text(text) for c in snapshot.chunks], engines.embedder, rrf_k=options.rrf_k)
        encoders = {"vanilla": vanilla}
        if engines.adapter_weights is not None and set(options.retrievers) - {"bm25"}:
            weights, memo = engines.adapter_weights, engines.embedder
            encoders["trained"] = Retriever(ids, vanilla.texts, engines.embedder, rrf_k=options.rrf_k,
                                            query_vectors=lambda qs: apply_adapter(weights, memo.queries(qs)),
                                            passage_vectors=vanilla.passage_vectors)
        for retriever in options.retrievers:
            for encoder, index in encoders.items():
                if encoder == "trained" and retriever == "bm25":
                    continue  # the adapter maps query vectors; BM25 has none
                hits = index.search_many(queries, k=depth, mode=retriever)
                out.append(_Ranked(Variant(text, retriever, encoder, "none"), [[h.chunk_id for h in hs] for hs in hits]))
    return out


def _rows(ranked: list[_Ranked], questions: list[QuestionRecord], leaks: dict[str, bool]) -> tuple[list[dict], list[dict]]:
    """Metric rows per variant and group, and the gold rank of every question per variant."""
    groups: list[tuple[str, str, list[int]]] = [("all", "all", list(range(len(questions))))]
    for kind, value_of in (("doc_type", lambda q: q.doc_type), ("modality", lambda q: q.target_modality),
                           ("leak", lambda q: "names file or title" if leaks[q.qa_id] else "names neither")):
        values = sorted({value_of(q) for q in questions})
        groups += [(kind, v, [i for i, q in enumerate(questions) if value_of(q) == v]) for v in values]
    rows, per_question = [], []
    for item in ranked:
        metrics = [question_metrics(lst, {q.chunk_id}) for q, lst in zip(questions, item.lists)]
        for kind, group, members in groups:
            means = mean_metrics(metrics[i] for i in members)
            rows.append({**asdict(item.variant), "group_kind": kind, "group": group, "n": len(members), **means})
        for q, lst in zip(questions, item.lists):
            per_question.append({**asdict(item.variant), "qa_id": q.qa_id, "chunk_id": q.chunk_id,
                                 "gold_rank": first_relevant_rank(lst, {q.chunk_id}), "top": lst[:10]})
    return rows, per_question


def eval_id_for(version_id: str, engines: _Engines, options: EvalOptions) -> str:
    """The id of an evaluation: version, embedder, trained models, options and the ragprep version."""
    return stable_id("evaluation", version_id, engines.embedder.name,
                     (engines.adapter_card or {}).get("model_id"), (engines.reranker_card or {}).get("model_id"),
                     json.dumps(options.as_dict(), sort_keys=True), __version__)


def evaluate_snapshot(snapshot: Snapshot, engines: _Engines, options: EvalOptions) -> tuple[EvaluationSummary, list[dict]]:
    """Evaluate every variant on ``snapshot``: the summary (with its metric rows) and the per-question ranks."""
    questions = snapshot.questions_in(options.question_splits)
    if not questions:
        counts = snapshot.split_counts()["questions"]
        raise EvaluationError(
            f"dataset version {snapshot.version_id} has no approved QA pairs in {'/'.join(options.question_splits)} (QA pairs per split: {counts or 'none'}); "
            "add documents or approve pending pairs, then `ragprep dataset`"
        )
    leak, leaks = leak_diagnostic(questions, snapshot)
    ranked = _first_stages(snapshot, questions, engines, options)
    chunks = snapshot.chunk_index
    for item in list(ranked):
        for name, reranker in engines.rerankers.items():
            lists = _rerank(reranker, questions, item.lists, chunks, item.variant.text)
            ranked.append(_Ranked(Variant(item.variant.text, item.variant.retriever, item.variant.encoder, name), lists))
    rows, per_question = _rows(ranked, questions, leaks)
    summary = EvaluationSummary(
        version_id=snapshot.version_id, eval_id=eval_id_for(snapshot.version_id, engines, options),
        created_at=datetime.now(UTC).isoformat(), embedder=engines.embedder.name, adapter=engines.adapter_card,
        reranker=engines.reranker_card, embedder_reranker=engines.rerankers["embedder"].name if "embedder" in engines.rerankers else None,
        options=options.as_dict(), test_questions=len(questions), pool_chunks=len(snapshot.chunks),
        pool_by_split=snapshot.split_counts()["chunks"], questions_by_doc_type=_counts([q.doc_type for q in questions]),
        questions_by_modality=_counts([q.target_modality for q in questions]), leak=leak, rows=rows,
    )
    return summary, per_question


def write_evaluation(layout: Layout, summary: EvaluationSummary, per_question: list[dict], markdown: str) -> EvaluationSummary:
    """Write the Parquet files, the Markdown report and ``latest.json`` under ``evaluations/<version>/``."""
    folder = layout.evaluations_dir / summary.version_id
    extra = {"version_id": summary.version_id, "eval_id": summary.eval_id, "embedder": summary.embedder,
             "adapter_id": (summary.adapter or {}).get("model_id"), "reranker_id": (summary.reranker or {}).get("model_id")}
    rows = pa.Table.from_pylist([{**extra, **r} for r in summary.rows], schema=spec("evaluations").schema)
    questions = pa.Table.from_pylist([{**extra, **q} for q in per_question], schema=spec("evaluation_questions").schema)
    summary = summary.model_copy(update={
        "parquet": str(folder / f"{summary.eval_id}.parquet"), "questions_parquet": str(folder / f"{summary.eval_id}-questions.parquet"),
        "markdown": str(folder / f"{summary.eval_id}.md"),
    })
    TableStore.write_at("evaluations", rows, Path(summary.parquet))
    TableStore.write_at("evaluation_questions", questions, Path(summary.questions_parquet))
    atomic_write_bytes(Path(summary.markdown), markdown.encode("utf-8"))
    atomic_write_bytes(folder / f"{summary.eval_id}.json", summary.model_dump_json(indent=2).encode("utf-8"))
    atomic_write_bytes(folder / "latest.json", json.dumps({"eval_id": summary.eval_id}).encode("utf-8"))
    return summary


def stored_evaluation(layout: Layout, version_id: str, eval_id: str) -> EvaluationSummary | None:
    """An evaluation written earlier with this id (None when there is none)."""
    path = layout.evaluations_dir / version_id / f"{eval_id}.json"
    if not path.exists():
        return None
    return EvaluationSummary.model_validate_json(path.read_text(encoding="utf-8"))


def question_ranks(summary: EvaluationSummary) -> pa.Table | None:
    """The per-question ranks of a written evaluation (None when not written)."""
    if not summary.questions_parquet or not Path(summary.questions_parquet).exists():
        return None
    return pq.read_table(summary.questions_parquet)
