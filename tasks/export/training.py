"""``ragprep export train``: training files from one dataset version, train and val splits only.

Questions are the version's approved QA pairs of the **train** and **val** splits; every
passage comes from the chunks of those two splits, so no test question and no test chunk
(gold or negative) can enter a training file. Retrieval over that pool is the hybrid
``Retriever`` of ``ragprep/retrieval.py`` with the configured embedder. Settings:
``settings.train`` (``RAGPREP_TRAIN__*``). One folder per version
(``<root>/exports/training/<version>/`` unless ``--out``):

- ``retriever_{train,val}.jsonl`` — FlagEmbedding / sentence-transformers format
  ``{"query", "pos": [gold text], "neg": [hard negatives]}`` (+ ids). Hard negatives are drawn
  at random (fixed seed per question) from the retrieved ranks ``negative_ranks`` (3-30), past
  the **false-negative guards** of the negatives stage: a candidate whose normalised text
  contains the normalised answer (``tasks/mmdoc/negatives.py``) is skipped, and so is one whose
  dense cosine is within ``negative_margin`` of the gold's or above it. Skips are counted.
- ``reranker_{train,val}.jsonl`` — labelled pairs ``{"query", "passage", "label"}``: per
  question the gold (1) and ``reranker_negatives`` (3) chunks drawn at random with a fixed seed
  from the top ``reranker_top`` (10) retrieved minus the gold (0) — the seed paper's procedure,
  with the answer guard applied before the draw.
- ``sft_{train,val}.jsonl`` — chat format ``{"messages": [system, user, assistant]}``: the user
  turn holds the question and its ``sft_context`` retrieved chunks (the gold always among them,
  in a seeded random position), rendered by ``prompts/answer_with_context``; the assistant
  answers and cites the gold as ``[n]``.
- ``sft_mm_{train,val}.jsonl`` + ``mmdocrag/`` — the MMDocRAG-style multimodal variant: the
  candidate sets (``mm_items``) exported by ``tasks/export/mmdocrag.py`` (JSONL + images),
  turned into chat lines with ``<image>`` placeholders and an ``images`` list (the
  LLaVA / LLaMA-Factory convention), prompt ``prompts/answer_with_quotes``; the assistant turn
  is MMDocRAG's ``answer_interleaved``. A set holding a quote of a test chunk is dropped.
- ``card.json`` — version id, settings, embedder, counts (lines per file, negatives, skips).

Every file loads with ``datasets.load_dataset("json", data_files=...)``.
"""

from __future__ import annotations

import json
import random
import shutil
import tempfile
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
from pydantic import BaseModel

from ragprep.catalog import connect
from ragprep.engines.embedders import configured_embedder
from ragprep.engines.query_memo import QueryMemo
from ragprep.errors import RagprepError
from ragprep.ids import stable_id
from ragprep.prompts import load_prompt
from ragprep.retrieval import Hit, Retriever
from ragprep.settings import Settings
from ragprep.storage import Layout
from tasks.dataset.snapshot import ChunkRecord, QuestionRecord, Snapshot, load_snapshot
from tasks.dataset.versions import dataset_store, find_version, read_version_table
from tasks.export.mmdocrag import ExportError, export_mmdocrag
from tasks.mmdoc.negatives import contains_answer, normalised

TRAINING_SPLITS = ("train", "val")
QUERY_BATCH = 256
"""Questions retrieved (and dense-scored for the margin guard) per batch."""


class TrainingExportError(RagprepError):
    """A training export that cannot be written; the message says what to run."""


@dataclass
class GuardCounts:
    """What the false-negative guards did."""

    examined: int = 0
    skipped_answer: int = 0
    skipped_margin: int = 0


@dataclass
class _Retrieved:
    """One question's retrieval over the train+val pool."""

    question: QuestionRecord
    hits: list[Hit]
    dense: dict[str, float]
    """Dense cosine of the question with the gold and with each hit."""


@dataclass
class _Files:
    lines: dict[str, list[dict]] = field(default_factory=dict)

    def add(self, name: str, line: dict) -> None:
        self.lines.setdefault(name, []).append(line)


class TrainingExport(BaseModel):
    """Where the export went and what it holds (the card's content)."""

    version_id: str
    out_dir: str
    card: dict


def _rng(settings: Settings, purpose: str, qa_id: str) -> random.Random:
    return random.Random(stable_id(purpose, settings.train.seed, qa_id))


def _retrieve(snapshot: Snapshot, settings: Settings, questions: list[QuestionRecord], pool: list[ChunkRecord]
              ) -> tuple[list[_Retrieved], str]:
    """Hybrid retrieval of every question over the pool, with the dense cosines the margin guard reads."""
    embedder = QueryMemo(configured_embedder(settings))
    variant = settings.train.text_variant
    ids = [c.chunk_id for c in pool]
    position = {c: i for i, c in enumerate(ids)}
    retriever = Retriever(ids, [c.text(variant) for c in pool], embedder, rrf_k=settings.index.rrf_k,
                          rrf_depth=settings.index.rrf_depth)
    depth = max(settings.train.negative_ranks[1], settings.train.reranker_top, settings.train.sft_context)
    out: list[_Retrieved] = []
    for start in range(0, len(questions), QUERY_BATCH):
        batch = questions[start:start + QUERY_BATCH]
        queries = [q.question for q in batch]
        hits = retriever.search_many(queries, k=depth, mode="hybrid")
        dense = retriever.dense_scores(queries)
        for row, (question, found) in enumerate(zip(batch, hits)):
            wanted = {question.chunk_id, *(h.chunk_id for h in found)}
            out.append(_Retrieved(question, found, {c: float(dense[row, position[c]]) for c in wanted}))
    return out, embedder.name


def _guarded(item: _Retrieved, candidates: list[str], chunks: dict[str, ChunkRecord], variant: str, margin: float | None,
             counts: GuardCounts) -> list[str]:
    """The candidates that pass the answer guard (and, with a ``margin``, the dense-margin guard)."""
    answer = normalised(item.question.answer)
    ceiling = item.dense[item.question.chunk_id] - margin if margin is not None else None
    kept = []
    for chunk_id in candidates:
        counts.examined += 1
        if contains_answer(normalised(chunks[chunk_id].text(variant)), answer):
            counts.skipped_answer += 1
            continue
        if ceiling is not None and item.dense[chunk_id] >= ceiling:
            counts.skipped_margin += 1
            continue
        kept.append(chunk_id)
    return kept


def retriever_line(item: _Retrieved, chunks: dict[str, ChunkRecord], settings: Settings, counts: GuardCounts) -> dict:
    """One FlagEmbedding line: the gold as ``pos``, hard negatives from the rank window as ``neg``."""
    cfg = settings.train
    low, high = cfg.negative_ranks
    window = [h.chunk_id for h in item.hits if low <= h.rank <= high and h.chunk_id != item.question.chunk_id]
    kept = _guarded(item, window, chunks, cfg.text_variant, cfg.negative_margin, counts)
    chosen = set(_rng(settings, "retriever-negatives", item.question.qa_id).sample(kept, min(cfg.negatives_per_question, len(kept))))
    negatives = [c for c in kept if c in chosen]  # in rank order
    gold = chunks[item.question.chunk_id]
    return {"query": item.question.question, "pos": [gold.text(cfg.text_variant)],
            "neg": [chunks[c].text(cfg.text_variant) for c in negatives], "qa_id": item.question.qa_id,
            "pos_id": gold.chunk_id, "neg_ids": negatives, "split": item.question.split}


def reranker_lines(item: _Retrieved, chunks: dict[str, ChunkRecord], settings: Settings, counts: GuardCounts) -> list[dict]:
    """The gold (label 1) and ``reranker_negatives`` random chunks of the top ``reranker_top`` minus the gold (label 0)."""
    cfg = settings.train
    top = [h.chunk_id for h in item.hits if h.rank <= cfg.reranker_top and h.chunk_id != item.question.chunk_id]
    kept = _guarded(item, top, chunks, cfg.text_variant, None, counts)
    drawn = _rng(settings, "reranker-negatives", item.question.qa_id).sample(kept, min(cfg.reranker_negatives, len(kept)))
    q = item.question
    return [{"query": q.question, "passage": chunks[c].text(cfg.text_variant), "label": int(c == q.chunk_id),
             "qa_id": q.qa_id, "chunk_id": c, "split": q.split} for c in [q.chunk_id, *drawn]]


def sft_line(item: _Retrieved, chunks: dict[str, ChunkRecord], settings: Settings) -> dict:
    """A chat line: system, the question with its retrieved context (gold included), the cited answer."""
    cfg = settings.train
    q = item.question
    context = [h.chunk_id for h in item.hits[:cfg.sft_context] if h.chunk_id != q.chunk_id][: cfg.sft_context - 1]
    context.insert(_rng(settings, "sft-position", q.qa_id).randint(0, len(context)), q.chunk_id)
    prompt = load_prompt("answer_with_context", 1)
    passages = [{"document": chunks[c].file_name, "location": chunks[c].location or "-", "title": chunks[c].title,
                 "text": chunks[c].text(cfg.text_variant)} for c in context]
    system, user = prompt.render({"passages": passages, "question": q.question})
    answer = f"{q.answer.strip()} [{context.index(q.chunk_id) + 1}]"
    return {"messages": [{"role": "system", "content": system}, {"role": "user", "content": user},
                         {"role": "assistant", "content": answer}],
            "qa_id": q.qa_id, "gold_id": q.chunk_id, "context_ids": context, "split": q.split, "prompt": prompt.ref}


def mm_chat_line(line: dict) -> dict:
    """An exported MMDocRAG line as a multimodal chat line (``<image>`` placeholders + ``images``)."""
    prompt = load_prompt("answer_with_quotes", 1)
    text_quotes = [q["text"] for q in line["text_quotes"]]
    image_quotes = [q.get("img_description") or q.get("ocr_text") or "" for q in line["img_quotes"]]
    system, user = prompt.render({"text_quotes": text_quotes, "image_quotes": image_quotes, "question": line["question"]})
    return {"messages": [{"role": "system", "content": system}, {"role": "user", "content": user},
                         {"role": "assistant", "content": line["answer_interleaved"]}],
            "images": [f"mmdocrag/{q['img_path']}" for q in line["img_quotes"]],
            "q_id": line["q_id"], "qa_key": line["ragprep_q_key"], "gold_quotes": line["gold_quotes"],
            "prompt": prompt.ref}


@dataclass
class _MmResult:
    counts: dict[str, int]
    note: str | None = None


def _mm_exports(settings: Settings, snapshot: Snapshot, staging: Path, files: _Files) -> _MmResult:
    """The MMDocRAG JSONL of the train and val splits (reused from ``export mmdocrag``), then its chat lines."""
    store = dataset_store(settings)
    version = find_version(store, snapshot.version_id)
    quotes = read_version_table(store, version, "quotes")
    if read_version_table(store, version, "mm_items") is None or quotes is None:
        return _MmResult({}, "no mm_items in this version (run `ragprep negatives`, then `ragprep dataset`): no sft_mm files")
    test_chunks = {c.chunk_id for c in snapshot.chunks if c.split not in TRAINING_SPLITS}
    quote_chunk = dict(zip(quotes.column("quote_id").to_pylist(), quotes.column("chunk_id").to_pylist()))
    con = connect(Layout(settings.root), snapshot.version_id, settings.dataset_uri)
    counts = {"dropped_test_quotes": 0}
    for split in TRAINING_SPLITS:
        try:
            result = export_mmdocrag(con, settings.root, staging / "mmdocrag", settings.train.mm_set_size, split)
        except ExportError:
            counts[split] = 0  # no candidate sets of this split
            continue
        kept = 0
        for raw in Path(result.path).read_text(encoding="utf-8").splitlines():
            line = json.loads(raw)
            ids = [q["ragprep_quote_id"] for q in line["text_quotes"] + line["img_quotes"]]
            if any(quote_chunk.get(i) in test_chunks for i in ids):
                counts["dropped_test_quotes"] += 1
                continue
            files.add(f"sft_mm_{split}.jsonl", mm_chat_line(line))
            kept += 1
        counts[split] = kept
    return _MmResult(counts)


def _check_no_test(files: _Files, snapshot: Snapshot) -> None:
    """Refuse to write an export that names a test question or a test chunk (a bug, never expected)."""
    test_questions = {q.qa_id for q in snapshot.questions if q.split not in TRAINING_SPLITS}
    test_chunks = {c.chunk_id for c in snapshot.chunks if c.split not in TRAINING_SPLITS}
    for name, lines in files.lines.items():
        for line in lines:
            named = {line.get("pos_id"), line.get("chunk_id"), line.get("gold_id"), *line.get("neg_ids", []),
                     *line.get("context_ids", [])}
            if line.get("qa_id") in test_questions or named & test_chunks:
                raise TrainingExportError(f"{name}: question {line.get('qa_id')} names a test-split item; export aborted")


def _write(files: _Files, staging: Path) -> dict[str, int]:
    out = {}
    for name, lines in sorted(files.lines.items()):
        (staging / name).write_text("".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines), encoding="utf-8")
        out[name] = len(lines)
    return out


def _move_into_place(staging: Path, target: Path) -> None:
    if target.exists():
        shutil.rmtree(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    staging.rename(target)


def export_training(settings: Settings, version: str | None = None, out_dir: Path | None = None) -> TrainingExport:
    """Write every training export of a version (the latest published one when None); see the module doc."""
    snapshot = load_snapshot(settings, version)
    questions = snapshot.questions_in(TRAINING_SPLITS)
    pool = snapshot.chunks_in(TRAINING_SPLITS)
    if not questions:
        raise TrainingExportError(f"dataset version {snapshot.version_id} has no approved train/val QA pairs; run `ragprep qa` "
                                  "and `ragprep dataset`")
    target = out_dir or Layout(settings.root).training_exports_dir / snapshot.version_id
    chunks = {c.chunk_id: c for c in pool}
    retrieved, embedder_name = _retrieve(snapshot, settings, questions, pool)
    files = _Files()
    retriever_guard, reranker_guard = GuardCounts(), GuardCounts()
    for item in retrieved:
        split = item.question.split
        files.add(f"retriever_{split}.jsonl", retriever_line(item, chunks, settings, retriever_guard))
        for line in reranker_lines(item, chunks, settings, reranker_guard):
            files.add(f"reranker_{split}.jsonl", line)
        files.add(f"sft_{split}.jsonl", sft_line(item, chunks, settings))
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(dir=target.parent, prefix=f".{target.name}-"))
    try:
        mm = _mm_exports(settings, snapshot, staging, files)
        _check_no_test(files, snapshot)
        written = _write(files, staging)
        card = _card(snapshot, settings, embedder_name, files, written, (retriever_guard, reranker_guard), mm)
        (staging / "card.json").write_text(json.dumps(card, indent=2, ensure_ascii=False), encoding="utf-8")
        _move_into_place(staging, target)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return TrainingExport(version_id=snapshot.version_id, out_dir=str(target), card=card)


def _card(snapshot: Snapshot, settings: Settings, embedder: str, files: _Files, written: dict[str, int],
          guards: tuple[GuardCounts, GuardCounts], mm: _MmResult) -> dict:
    retriever_lines = [line for name, lines in files.lines.items() if name.startswith("retriever_") for line in lines]
    negatives = [len(line["neg"]) for line in retriever_lines]
    return {
        "kind": "ragprep-training-export",
        "version_id": snapshot.version_id,
        "created_at": datetime.now(UTC).isoformat(),
        "splits": list(TRAINING_SPLITS),
        "excluded_splits": ["test"],
        "embedder": embedder,
        "retrieval": "hybrid (dense + BM25, reciprocal-rank fusion) over the train+val chunks",
        "settings": settings.train.model_dump(mode="json"),
        "files": written,
        "counts": {
            "questions": {s: sum(1 for q in snapshot.questions_in([s])) for s in TRAINING_SPLITS},
            "pool_chunks": sum(1 for c in snapshot.chunks if c.split in TRAINING_SPLITS),
            "retriever": {"negatives": int(sum(negatives)), "mean_negatives": float(np.mean(negatives)) if negatives else 0.0,
                          "without_negatives": sum(1 for n in negatives if n == 0),
                          "short_of_negatives": sum(1 for n in negatives if n < settings.train.negatives_per_question),
                          "guard": vars(guards[0])},
            "reranker": {"pairs": sum(v for k, v in written.items() if k.startswith("reranker_")), "guard": vars(guards[1])},
            "sft_mm": mm.counts,
        },
        "notes": [n for n in [mm.note] if n],
        "load_with": 'datasets.load_dataset("json", data_files={"train": "retriever_train.jsonl", "validation": "retriever_val.jsonl"})',
    }
