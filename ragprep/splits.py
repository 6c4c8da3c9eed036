"""The one split rule: an item's train/val/test split is a hash of its chunk (or document) id.

The dataset stage and the same-split negatives both call ``split_for``, so they can never
disagree and leak a test quote into training data.
"""

from __future__ import annotations

import hashlib

from ragprep.settings import Settings

SPLITS = ("train", "val", "test")


def split_of(key: str, ratios: dict[str, float]) -> str:
    """Deterministic split from a hash of the key: the same key always lands in the same split."""
    total = sum(ratios.values())
    point = int.from_bytes(hashlib.sha256(f"split:{key}".encode()).digest()[:8], "big") / 2**64 * total
    cumulative = 0.0
    for split in SPLITS:
        cumulative += ratios.get(split, 0.0)
        if point < cumulative:
            return split
    return SPLITS[-1]


def split_for(chunk_id: str | None, doc_id: str, settings: Settings) -> str:
    """The split of a chunk and everything that follows it: a hash of the chunk id, or of the
    document id with ``split_by = "document"`` (or when there is no chunk)."""
    return split_of(doc_id if settings.dataset.split_by == "document" or not chunk_id else chunk_id, settings.dataset.split_ratios)
