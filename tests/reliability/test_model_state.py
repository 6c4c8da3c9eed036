"""Trained models are as safe as the tables (issue 24): a truncated or garbled model file is one line naming
``ragprep train`` (a ``RagprepError``: exit 2 in the CLI), and ``kill -9`` while a model is being saved leaves the
previous one loadable (written beside it, swapped in with one atomic exchange)."""

from __future__ import annotations

import numpy as np
import pytest

from ragprep.storage import Layout
from tasks.train.loading import trained_adapter, trained_reranker
from tasks.train.models import ADAPTER, LINEAR_RERANKER, ModelUnreadableError, latest_model, save_model
from tests.reliability.faults import kill_at_marker

EMBEDDER = "test/hashing-64"


class _Embedder:
    name = EMBEDDER


def _adapter(layout: Layout, model_id: str, scale: float) -> None:
    save_model(layout, ADAPTER, model_id, {"embedder": EMBEDDER, "created_at": "2026-01-01T00:00:00"},
               lambda folder: np.save(folder / "adapter.npy", np.eye(4, dtype=np.float32) * scale))


def test_damaged_model_files_are_one_line_naming_ragprep_train(tmp_path):
    layout = Layout(tmp_path / "root")
    _adapter(layout, "a1", 2.0)
    weights, _ = trained_adapter(layout, EMBEDDER)
    assert float(weights[0, 0]) == 2.0
    npy = layout.models_dir / ADAPTER / "a1" / "adapter.npy"
    npy.write_bytes(npy.read_bytes()[:20])
    with pytest.raises(ModelUnreadableError, match=r"adapter\.npy: .*train it again with `ragprep train \.\.\.`") as caught:
        trained_adapter(layout, EMBEDDER)
    assert "\n" not in str(caught.value)
    (layout.models_dir / ADAPTER / "a1" / "card.json").write_text("{garbage")
    with pytest.raises(ModelUnreadableError, match=r"card\.json: JSONDecodeError"):
        trained_adapter(layout, EMBEDDER)
    save_model(layout, LINEAR_RERANKER, "r1", {"embedder": EMBEDDER, "created_at": "2026-01-01T00:00:00"},
               lambda folder: (folder / "linear.json").write_text('{"features": '))
    with pytest.raises(ModelUnreadableError, match=r"linear\.json: JSONDecodeError"):
        trained_reranker(layout, _Embedder())


KILLED_SAVE = """
import sys, time
from pathlib import Path
import numpy as np
from ragprep.storage import Layout
from tasks.train.models import ADAPTER, save_model

def write(folder):  # the new model is half written when the kill comes
    np.save(folder / "adapter.npy", np.eye(4, dtype=np.float32) * 3.0)
    Path(sys.argv[2]).write_text(str(folder))
    time.sleep(600)

save_model(Layout(Path(sys.argv[1])), ADAPTER, "a1", {"embedder": "test/hashing-64"}, write)
"""


def test_kill_9_while_saving_a_model_leaves_the_previous_one(tmp_path):
    layout = Layout(tmp_path / "root")
    _adapter(layout, "a1", 2.0)
    marker = tmp_path / "writing"
    assert kill_at_marker(KILLED_SAVE, [str(tmp_path / "root"), str(marker)], marker, 120), "the save never started writing"
    weights, card = trained_adapter(layout, EMBEDDER)
    assert float(weights[0, 0]) == 2.0 and card["embedder"] == EMBEDDER  # the previous model, whole
    _adapter(layout, "a1", 5.0)  # a later save of the same id replaces it (one atomic exchange)
    assert float(trained_adapter(layout, EMBEDDER)[0][0, 0]) == 5.0
    assert latest_model(layout, ADAPTER).model_id == "a1"
    assert (layout.models_dir / ADAPTER / "LATEST").read_text() == "a1"
