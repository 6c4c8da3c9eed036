"""Trained models under ``<root>/models``: one folder per model with its card, and a LATEST pointer per kind.

Layout::

    models/<kind>/<model_id>/card.json + the model's files
    models/<kind>/LATEST            id of the newest model of that kind

Kinds: ``retriever-adapter`` (the numpy query adapter, ``adapter.npy``), ``reranker-linear``
(``linear.json``), ``retriever-st`` (a sentence-transformers fine-tune) and
``reranker-cross-encoder`` (a cross-encoder fine-tune). A model id is derived from the
version, the base model and the training settings, so retraining the same inputs replaces the
same folder. A folder is written under a temporary name and renamed into place with its card,
so a killed run leaves no half model.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ragprep.errors import RagprepError
from ragprep.storage import Layout, atomic_write_bytes, exchange_paths

ADAPTER = "retriever-adapter"
LINEAR_RERANKER = "reranker-linear"
ST_RETRIEVER = "retriever-st"
CROSS_ENCODER = "reranker-cross-encoder"
KINDS = (ADAPTER, LINEAR_RERANKER, ST_RETRIEVER, CROSS_ENCODER)
CARD = "card.json"


@dataclass(frozen=True)
class StoredModel:
    """A saved model: its kind, id, folder and card."""

    kind: str
    model_id: str
    path: Path
    card: dict


def save_model(layout: Layout, kind: str, model_id: str, card: dict, write: Callable[[Path], None],
               publish: bool = True) -> StoredModel:
    """Write a model folder (``write(folder)`` puts the files, then the card is added), rename it into place, and move
    LATEST to it when ``publish`` (a model that lost to the vanilla one is kept for inspection, never used)."""
    base = layout.models_dir / kind
    base.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(dir=base, prefix=".staging-"))
    try:
        write(staging)
        (staging / CARD).write_text(json.dumps(card, indent=2, ensure_ascii=False, default=str))
        target = base / model_id
        if target.exists() and exchange_paths(staging, target):
            pass  # one atomic step: the old model (now in staging) is removed below; a kill leaves one of the two
        else:
            if target.exists():
                shutil.rmtree(target)
            staging.rename(target)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    if publish:
        atomic_write_bytes(base / "LATEST", model_id.encode())
    elif (base / "LATEST").exists() and (base / "LATEST").read_text().strip() == model_id:
        (base / "LATEST").unlink()  # the same id published before now loses: nothing of it stays in use
    return StoredModel(kind, model_id, target, card)


class ModelUnreadableError(RagprepError):
    """A trained model's files are truncated, garbled or missing."""


def unreadable_model(path: Path, part: str, exc: BaseException) -> ModelUnreadableError:
    """The one-line error for a damaged model file, with the repair."""
    reason = " ".join(str(exc).split())[:160] or type(exc).__name__
    return ModelUnreadableError(
        f"trained model {path} is unreadable ({part}: {type(exc).__name__}: {reason}); train it again with "
        f"`ragprep train ...`, or delete the folder (and {path.parent / 'LATEST'}) to go without it")


def load_model(path: Path) -> StoredModel:
    """The model saved in ``path`` (a folder with a card); a garbled card raises :class:`ModelUnreadableError`."""
    try:
        card = json.loads((path / CARD).read_text())
        if not isinstance(card, dict):
            raise ValueError("not a JSON object")
    except (OSError, ValueError) as exc:
        raise unreadable_model(path, CARD, exc) from None
    return StoredModel(card.get("kind", path.parent.name), card.get("model_id", path.name), path, card)


def latest_model(layout: Layout, kind: str) -> StoredModel | None:
    """The newest model of ``kind`` (None when none was trained)."""
    pointer = layout.models_dir / kind / "LATEST"
    if not pointer.exists():
        return None
    folder = layout.models_dir / kind / pointer.read_text().strip()
    if not (folder / CARD).exists():
        return None
    return load_model(folder)
