"""Loading what evaluation and the exports use: the configured embedder (re-exported from
``ragprep.engines.embedders``, so tests can replace it in one place per stage) and the latest trained models.

A trained query adapter belongs to the embedder it was trained on: one trained on another
embedder (another name in its card) is not applied. The trained re-ranker is the newest of
the cross-encoder (``[train]`` extra; skipped with a note when sentence-transformers is not
installed) and the linear one.
"""

from __future__ import annotations

import numpy as np

from ragprep.engines.embedder import Embedder
from ragprep.engines.embedders import configured_embedder
from ragprep.storage import Layout
from tasks.train.adapter import AdaptedEmbedder
from tasks.train.models import ADAPTER, CROSS_ENCODER, LINEAR_RERANKER, StoredModel, latest_model, unreadable_model
from tasks.train.reranker import LinearReranker, LogisticModel, Reranker

__all__ = ["configured_embedder", "query_encoder", "trained_adapter", "trained_reranker"]


def trained_adapter(layout: Layout, embedder_name: str) -> tuple[np.ndarray, dict] | None:
    """(weights, card) of the latest query adapter trained on ``embedder_name``; None when there is none."""
    model = latest_model(layout, ADAPTER)
    if model is None or model.card.get("embedder") != embedder_name:
        return None
    try:
        weights = np.load(model.path / "adapter.npy")
    except (OSError, ValueError, EOFError) as exc:
        raise unreadable_model(model.path, "adapter.npy", exc) from None
    return weights, model.card


def query_encoder(layout: Layout, embedder: Embedder) -> tuple[Embedder, str]:
    """What encodes the queries of ``search`` and ``ask``, and its name for their output: ``embedder`` with the published
    query adapter trained on it (``ragprep train retriever`` publishes one only when it beats the vanilla embedder on
    held-out documents), else ``embedder`` itself."""
    found = trained_adapter(layout, embedder.name)
    if found is None:
        return embedder, f"{embedder.name} (vanilla: no published query adapter)"
    weights, card = found
    model_id = card.get("model_id", "?")
    return AdaptedEmbedder(embedder, weights, model_id), f"{embedder.name} + trained query adapter {model_id}"


def _newest(*models: StoredModel | None) -> StoredModel | None:
    present = [m for m in models if m is not None]
    return max(present, key=lambda m: m.card.get("created_at", "")) if present else None


def trained_reranker(layout: Layout, embedder: Embedder) -> tuple[Reranker, dict] | None:
    """The newest trained re-ranker and its card (None when none was trained, or only one this install cannot load)."""
    linear = latest_model(layout, LINEAR_RERANKER)
    if linear is not None and linear.card.get("embedder") != embedder.name:
        linear = None
    cross = latest_model(layout, CROSS_ENCODER)
    if cross is not None:
        from tasks.train.st import CrossEncoderReranker, sentence_transformers_missing

        if sentence_transformers_missing() is None:
            if _newest(linear, cross) is cross:
                return CrossEncoderReranker(cross.path, cross.model_id), cross.card
        elif linear is None:
            return None
    if linear is None:
        return None
    try:
        weights = LogisticModel.load(linear.path)
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise unreadable_model(linear.path, "linear.json", exc) from None
    return LinearReranker(embedder, weights, linear.model_id), linear.card
