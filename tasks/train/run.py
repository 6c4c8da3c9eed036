"""train: ``ragprep train retriever|reranker`` over a dataset version's training exports.

Both read the version's training export (``tasks/export/training.py``; written first when the
folder is missing or belongs to another version), train on the **train** split, score on
**val**, and save the model with its card under ``<root>/models/<kind>/<id>/``.

- ``retriever`` — backend ``adapter`` (default, numpy, multilingual: whatever the configured
  embedder is): the linear query adapter of ``adapter.py`` on frozen embedder vectors;
  backend ``sentence-transformers`` (extra ``[train]``): a MultipleNegativesRanking fine-tune
  of ``train.st_model``.
- ``reranker`` — backend ``linear`` (default, numpy): the logistic re-ranker of
  ``reranker.py``; backend ``cross-encoder`` (extra ``[train]``).

Evaluation applies the latest adapter as the "trained" encoder and the latest re-ranker as
the "trained" re-ranker.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
from pydantic import BaseModel

from ragprep.engines.query_memo import QueryMemo
from ragprep.errors import RagprepError
from ragprep.ids import stable_id
from ragprep.settings import Settings
from ragprep.storage import Layout
from tasks.dataset.snapshot import Snapshot, load_snapshot
from tasks.export.training import TRAINING_SPLITS, export_training
from tasks.index.store import SearchIndexError
from tasks.train.adapter import AdaptedEmbedder, AdapterConfig, RankingSet, TrainingPairs, train_adapter
from tasks.train.judge import QueryFileJudgement, judge_on_query_file, template_shaped
from tasks.train.loading import configured_embedder
from tasks.train.models import ADAPTER, CROSS_ENCODER, LINEAR_RERANKER, ST_RETRIEVER, save_model
from tasks.train.reranker import PairFeatures, fit_logistic

RETRIEVER_BACKENDS = ("adapter", "sentence-transformers")
RERANKER_BACKENDS = ("linear", "cross-encoder")


class TrainError(RagprepError):
    """Training that cannot run; the message says what to do."""


class TrainReport(BaseModel):
    """What one training run produced."""

    kind: str
    model_id: str
    path: str
    version_id: str
    card: dict
    published: bool = True

    def lines(self) -> list[str]:
        """A few lines for the terminal and the artifact."""
        metrics = self.card.get("metrics", {})
        shown = ", ".join(f"{k} {v:.3f}" if isinstance(v, float) else f"{k} {v}" for k, v in metrics.items())
        return [f"**{self.kind} {self.model_id}** trained on dataset version {self.version_id}: {self.path}",
                f"{shown or 'no metrics'}; counts: {self.card.get('counts')}"] + list(self.card.get("notes", []))


def _export_dir(settings: Settings, snapshot: Snapshot) -> Path:
    """The version's training export folder, written first when missing (or made for another version)."""
    folder = Layout(settings.root).training_exports_dir / snapshot.version_id
    card = folder / "card.json"
    if not card.exists() or json.loads(card.read_text()).get("version_id") != snapshot.version_id:
        export_training(settings, snapshot.version_id, folder)
    return folder


def _jsonl(path: Path) -> list[dict]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _card(kind: str, model_id: str, snapshot: Snapshot, **fields: object) -> dict:
    return {"kind": kind, "model_id": model_id, "created_at": datetime.now(UTC).isoformat(), "version_id": snapshot.version_id,
            **fields}


def adapter_config(settings: Settings, steps: int | None = None) -> AdapterConfig:
    """The adapter's training knobs from ``settings.train`` (``steps`` overrides)."""
    t = settings.train
    return AdapterConfig(steps=steps or t.adapter_steps, batch_size=t.adapter_batch_size, learning_rate=t.adapter_learning_rate,
                         temperature=t.adapter_temperature, identity_l2=t.adapter_identity_l2,
                         hard_negatives=t.adapter_hard_negatives, seed=t.seed)


def held_out_documents(doc_ids: set[str], share: float) -> set[str]:
    """A fixed ``share`` of the documents, chosen by hash (the same documents every run): at least one, never all.

    The adapter's step is chosen on the questions of these documents, which it never trains on, so a step that only
    learned the training documents' question templates or vocabulary cannot win."""
    ranked = sorted(doc_ids, key=lambda d: stable_id("adapter-holdout-document", d))
    count = min(len(ranked) - 1, max(1, round(share * len(ranked)))) if share > 0 else 0
    return set(ranked[:max(0, count)])


@dataclass
class _AdapterData:
    """Query vectors, gold rows and negatives of a set of retriever-export lines."""

    lines: list[dict]
    queries: np.ndarray
    gold: np.ndarray

    def pairs(self, passages: np.ndarray, row: dict[str, int], exclude: set[str]) -> TrainingPairs:
        negatives = [np.array([row[n] for n in x["neg_ids"] if n in row and n not in exclude], dtype=int) for x in self.lines]
        return TrainingPairs(self.queries, self.gold, negatives, passages)

    def ranking(self, passages: np.ndarray) -> RankingSet:
        return RankingSet(self.queries, passages, self.gold)


def _adapter_data(lines: list[dict], embedder, row: dict[str, int]) -> _AdapterData:
    return _AdapterData(lines, embedder.queries([x["query"] for x in lines]), np.array([row[x["pos_id"]] for x in lines], dtype=int))


def _train_adapter(settings: Settings, snapshot: Snapshot, export: Path, steps: int | None) -> TrainReport:
    """Fit on the train questions of most documents, choose the step on the held-out documents' questions that are not
    template-shaped (all of theirs when too few are), refit on every train question for the chosen number of steps,
    and publish (move LATEST) only when it beats the vanilla embedder where that is an honest judge: on a hand-written
    query file (``train.adapter_judge_queries``), else on at least ``train.adapter_min_judge_questions`` questions
    of the held-out documents that are not template-shaped (``tasks/train/judge.py``)."""
    config = adapter_config(settings, steps)
    t = settings.train
    embedder = QueryMemo(configured_embedder(settings))
    pool = snapshot.chunks_in(TRAINING_SPLITS)
    row = {c.chunk_id: i for i, c in enumerate(pool)}
    chunk = {c.chunk_id: c for c in pool}
    passages = embedder.passages([c.text(t.text_variant) for c in pool])
    lines = {split: [x for x in _jsonl(export / f"retriever_{split}.jsonl") if x["pos_id"] in row] for split in TRAINING_SPLITS}
    if not lines["train"]:
        raise TrainError(f"{export / 'retriever_train.jsonl'} has no questions; the version needs approved train-split QA pairs")
    held = held_out_documents({chunk[x["pos_id"]].doc_id for x in lines["train"] + lines["val"]}, t.adapter_holdout_share)
    fit = _adapter_data([x for x in lines["train"] if chunk[x["pos_id"]].doc_id not in held], embedder, row)
    held_lines = [x for x in lines["train"] + lines["val"] if chunk[x["pos_id"]].doc_id in held]
    free_lines = [x for x in held_lines if not template_shaped(x["query"], chunk[x["pos_id"]])]
    enough = len(free_lines) >= t.adapter_min_judge_questions
    select = _adapter_data(free_lines if enough else held_lines, embedder, row)
    if not fit.lines:
        raise TrainError(f"{export / 'retriever_train.jsonl'}: every train question is on the held-out documents; the "
                         "adapter needs train questions on two or more documents")
    held_docs = {c.doc_id for c in pool} & held
    exclude = {c for c in row if chunk[c].doc_id in held}
    result = train_adapter(fit.pairs(passages, row, exclude), config, fit.ranking(passages),
                           select.ranking(passages) if select.lines else None)
    weights, notes = result.weights, []
    first = result.history[0]
    kept = next(h for h in result.history if h["step"] == result.best_step)
    candidate = bool(select.lines) and kept["val_mrr_10"] > first["val_mrr_10"]
    judge_file = t.adapter_judge_queries
    if (candidate or judge_file) and result.best_step:  # refit on every train question for the chosen number of steps
        full = _adapter_data(lines["train"], embedder, row)
        weights = train_adapter(full.pairs(passages, row, set()), replace(config, steps=result.best_step), full.ranking(passages)).weights
        notes.append(f"refit on all {len(full.lines)} train questions for the chosen {result.best_step} steps")
    model_id = stable_id(ADAPTER, snapshot.version_id, embedder.name, t.text_variant, json.dumps(config.as_dict(), sort_keys=True),
                         "held-out-documents", t.adapter_holdout_share, "not-template-shaped")
    where = (f"{len(select.lines)} {'not template-shaped ' if enough else ''}questions (train and val) of "
             f"{len(held_docs)} held-out documents")
    judged = _judge(settings, embedder, weights, model_id, judge_file) if judge_file else None
    published, verdict = _verdict(select, where, first, kept, judged,
                                  None if enough or judge_file else (len(free_lines), len(held_lines)),
                                  t.adapter_min_judge_questions)
    notes.insert(0, verdict)
    card = _card(ADAPTER, model_id, snapshot, embedder=embedder.name, text_variant=t.text_variant, steps=config.steps,
                 best_step=result.best_step, selected_by=result.selected_by, published=published, selection=where,
                 held_out_documents=sorted(held_docs), config=config.as_dict(),
                 counts={"fit_questions": len(fit.lines), "selection_questions": len(select.lines),
                         "held_out_questions": len(held_lines), "held_out_not_template_shaped": len(free_lines),
                         "train_questions": len(lines["train"]), "val_questions": len(lines["val"]), "pool_chunks": len(pool),
                         "held_out_documents": len(held_docs)},
                 metrics={"fit_mrr_10_before": first["train_mrr_10"], "fit_mrr_10_at_kept_step": kept["train_mrr_10"],
                          **({"selection_mrr_10_before": first["val_mrr_10"], "selection_mrr_10_at_kept_step": kept["val_mrr_10"]}
                             if select.lines else {}),
                          **({"judge_queries_mrr_10_vanilla": judged.vanilla_mrr_10,
                              "judge_queries_mrr_10_trained": judged.trained_mrr_10} if judged else {})},
                 history=result.history, export=str(export), notes=notes)
    stored = save_model(Layout(settings.root), ADAPTER, model_id, card, lambda d: np.save(d / "adapter.npy", weights),
                        publish=published)
    return TrainReport(kind=ADAPTER, model_id=model_id, path=str(stored.path), version_id=snapshot.version_id, card=card,
                       published=published)


def _judge(settings: Settings, embedder, weights: np.ndarray, model_id: str, path: Path) -> QueryFileJudgement:
    """The adapter against the vanilla embedder on a hand-written query file (needs the built search index)."""
    try:
        return judge_on_query_file(settings, path, embedder, AdaptedEmbedder(embedder, weights, model_id))
    except SearchIndexError as exc:
        raise TrainError(f"train.adapter_judge_queries ({path}) is scored over the search index: {exc}") from None


def _verdict(select: _AdapterData, where: str, first: dict, kept: dict, judged: QueryFileJudgement | None,
             too_few: tuple[int, int] | None, needed: int) -> tuple[bool, str]:
    """Whether to publish, and the card's first note with the trained and the vanilla figure it was decided on."""
    keep = "search, ask and evaluate keep the vanilla embedder (or the adapter published before)"
    if judged is not None:
        if judged.trained_mrr_10 > judged.vanilla_mrr_10:
            return True, f"published (LATEST): {judged.describe()}"
        return False, f"NOT PUBLISHED: the trained adapter is no better than the vanilla embedder ({judged.describe()}); {keep}"
    if not select.lines:
        return False, ("NOT PUBLISHED: no question on a held-out document to compare the adapter with the vanilla embedder; "
                       "search, ask and evaluate keep the vanilla embedder")
    figures = f"MRR@10 trained {kept['val_mrr_10']:.3f} vs vanilla {first['val_mrr_10']:.3f} on {where}"
    if too_few is not None:
        return False, (f"NOT PUBLISHED: only {too_few[0]} of the {too_few[1]} held-out questions are not template-shaped "
                       f"(the others name their document, standard or title, or quote a name), {needed} "
                       f"are needed to judge the adapter ({figures}, a figure that generated questions sharing templates "
                       "across documents inflate); judge it on hand-written questions with `ragprep train retriever "
                       f"--judge-queries FILE` (train.adapter_judge_queries); {keep}")
    if kept["val_mrr_10"] > first["val_mrr_10"]:
        return True, f"published (LATEST): {figures}"
    return False, f"NOT PUBLISHED: the trained adapter is no better than the vanilla embedder ({figures}); {keep}"


def _pair_data(lines: list[dict], snapshot: Snapshot, features: PairFeatures) -> tuple[np.ndarray, np.ndarray]:
    titles = [snapshot.chunk_index[x["chunk_id"]].title if x["chunk_id"] in snapshot.chunk_index else "" for x in lines]
    matrix = features.matrix([x["query"] for x in lines], [x["passage"] for x in lines], titles)
    return matrix, np.array([x["label"] for x in lines], dtype=np.float32)


def gold_first_share(scores: np.ndarray, lines: list[dict]) -> float:
    """Share of questions whose gold pair scores above every negative pair of the same question."""
    groups: dict[str, list[tuple[float, int]]] = {}
    for score, line in zip(scores, lines):
        groups.setdefault(line["qa_id"], []).append((float(score), int(line["label"])))
    wins = [max(s for s, label in g if label == 1) > max((s for s, label in g if label == 0), default=-np.inf)
            for g in groups.values() if any(label == 1 for _, label in g)]
    return float(np.mean(wins)) if wins else 0.0


def _train_linear_reranker(settings: Settings, snapshot: Snapshot, export: Path, steps: int | None) -> TrainReport:
    embedder = QueryMemo(configured_embedder(settings))
    features = PairFeatures(embedder)
    train_lines, val_lines = (_jsonl(export / f"reranker_{s}.jsonl") for s in TRAINING_SPLITS)
    if not train_lines:
        raise TrainError(f"{export / 'reranker_train.jsonl'} has no pairs; the version needs approved train-split QA pairs")
    x_train, y_train = _pair_data(train_lines, snapshot, features)
    model = fit_logistic(x_train, y_train, steps=steps or settings.train.reranker_steps)
    metrics = {"train_gold_first": gold_first_share(model.decision(x_train), train_lines),
               "train_gold_first_cosine": gold_first_share(x_train[:, 1], train_lines)}
    if val_lines:
        x_val, _ = _pair_data(val_lines, snapshot, features)
        metrics |= {"val_gold_first": gold_first_share(model.decision(x_val), val_lines),
                    "val_gold_first_cosine": gold_first_share(x_val[:, 1], val_lines)}
    notes = ["gold_first: share of questions whose gold outscores its sampled negatives "
             "(gold_first_cosine: the same for the embedder's best window cosine alone)"]
    published = not val_lines or metrics["val_gold_first"] > metrics["val_gold_first_cosine"]
    if not val_lines:
        notes.insert(0, "published (LATEST) without a comparison: the export has no val pairs")
    elif published:
        notes.insert(0, f"published (LATEST): val gold_first trained {metrics['val_gold_first']:.3f} vs the embedder's "
                        f"cross-score {metrics['val_gold_first_cosine']:.3f} ({len(val_lines)} pairs)")
    else:
        notes.insert(0, f"NOT PUBLISHED: the trained re-ranker is no better than the embedder's cross-score on val "
                        f"(gold_first {metrics['val_gold_first']:.3f} vs {metrics['val_gold_first_cosine']:.3f}, "
                        f"{len(val_lines)} pairs); ask and evaluate keep the embedder's cross-score")
    model_id = stable_id(LINEAR_RERANKER, snapshot.version_id, embedder.name, steps or settings.train.reranker_steps)
    card = _card(LINEAR_RERANKER, model_id, snapshot, embedder=embedder.name, features=list(PairFeatures.NAMES),
                 weights=dict(zip(PairFeatures.NAMES, model.weights.tolist())), steps=steps or settings.train.reranker_steps,
                 counts={"train_pairs": len(train_lines), "val_pairs": len(val_lines)}, metrics=metrics, export=str(export),
                 notes=notes)
    card["published"] = published
    stored = save_model(Layout(settings.root), LINEAR_RERANKER, model_id, card, model.save, publish=published)
    return TrainReport(kind=LINEAR_RERANKER, model_id=model_id, path=str(stored.path), version_id=snapshot.version_id, card=card,
                       published=published)


def _train_st(settings: Settings, snapshot: Snapshot, export: Path, steps: int | None, kind: str) -> TrainReport:
    from tasks.train.st import fine_tune_cross_encoder, fine_tune_retriever, resolve_base_model, sentence_transformers_missing

    reason = sentence_transformers_missing()
    if reason:
        raise TrainError(reason)
    t = settings.train
    base = resolve_base_model(t.st_model)
    steps = steps or t.st_steps
    model_id = stable_id(kind, snapshot.version_id, str(base), steps, t.st_batch_size, t.seed)
    fine_tune = fine_tune_retriever if kind == ST_RETRIEVER else fine_tune_cross_encoder
    counts: dict = {}
    metrics: dict = {}

    def write(folder: Path) -> None:  # fills counts and metrics before save_model writes the card
        counts.update(fine_tune(export, base, folder, steps, t.st_batch_size, t.seed))
        metrics["final_loss"] = counts.pop("final_loss", None)
        shutil.rmtree(folder / ".checkpoints", ignore_errors=True)

    notes = [f"use it: RAGPREP_INDEX__EMBEDDER=sentence-transformers RAGPREP_INDEX__MODEL_PATH={Layout(settings.root).models_dir / kind / model_id} "
             "ragprep index"] if kind == ST_RETRIEVER else []
    card = _card(kind, model_id, snapshot, base_model=str(base), steps=steps, batch_size=t.st_batch_size, counts=counts,
                 metrics=metrics, export=str(export), notes=notes)
    stored = save_model(Layout(settings.root), kind, model_id, card, write)
    return TrainReport(kind=kind, model_id=model_id, path=str(stored.path), version_id=snapshot.version_id, card=card)


def run_train(settings: Settings, target: str, version: str | None = None, steps: int | None = None,
              backend: str | None = None) -> TrainReport:
    """Train the ``retriever`` or the ``reranker`` of a version (latest published when None) with ``backend``."""
    if target not in ("retriever", "reranker"):
        raise TrainError(f"unknown training target {target!r}: retriever or reranker")
    backends = RETRIEVER_BACKENDS if target == "retriever" else RERANKER_BACKENDS
    backend = backend or backends[0]
    if backend not in backends:
        raise TrainError(f"unknown {target} backend {backend!r}: {' or '.join(backends)}")
    snapshot = load_snapshot(settings, version)
    export = _export_dir(settings, snapshot)
    if backend == "adapter":
        return _train_adapter(settings, snapshot, export, steps)
    if backend == "linear":
        return _train_linear_reranker(settings, snapshot, export, steps)
    return _train_st(settings, snapshot, export, steps, ST_RETRIEVER if target == "retriever" else CROSS_ENCODER)
