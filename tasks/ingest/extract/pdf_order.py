"""Column-aware reading order of a page's boxes (PyMuPDF block geometry).

A page is read in horizontal bands cut by full-width boxes (titles, wide tables, figures spanning
the columns). Inside a band, when enough boxes lie wholly left of the page's text midline and enough
wholly right of it, and the two sides overlap vertically, the band has two columns: the left column
is read top to bottom, then the right one. Otherwise the band is read top to bottom, left to right.
"""

from __future__ import annotations

from collections.abc import Sequence

Box = tuple[float, float, float, float]
MIN_COLUMN_BOXES = 2
GUTTER_SLACK_PT = 4.0


def _midline(boxes: Sequence[Box]) -> float:
    left = min(b[0] for b in boxes)
    right = max(b[2] for b in boxes)
    return (left + right) / 2


def _is_two_columns(boxes: Sequence[Box], mid: float) -> bool:
    lefts = [b for b in boxes if b[2] <= mid + GUTTER_SLACK_PT]
    rights = [b for b in boxes if b[0] >= mid - GUTTER_SLACK_PT]
    if len(lefts) < MIN_COLUMN_BOXES or len(rights) < MIN_COLUMN_BOXES:
        return False
    overlap = min(max(b[3] for b in lefts), max(b[3] for b in rights)) - max(
        min(b[1] for b in lefts), min(b[1] for b in rights)
    )
    return overlap > 0


def _band_order(indices: list[int], boxes: Sequence[Box], mid: float) -> list[int]:
    band = [boxes[i] for i in indices]
    if not _is_two_columns(band, mid):
        return sorted(indices, key=lambda i: (round(boxes[i][1]), boxes[i][0]))
    left = [i for i in indices if (boxes[i][0] + boxes[i][2]) / 2 < mid]
    right = [i for i in indices if (boxes[i][0] + boxes[i][2]) / 2 >= mid]
    return sorted(left, key=lambda i: (boxes[i][1], boxes[i][0])) + sorted(right, key=lambda i: (boxes[i][1], boxes[i][0]))


def reading_order(boxes: Sequence[Box]) -> list[int]:
    """Indices of ``boxes`` in reading order (see the module docstring)."""
    if len(boxes) < 2 * MIN_COLUMN_BOXES:
        return sorted(range(len(boxes)), key=lambda i: (round(boxes[i][1]), boxes[i][0]))
    mid = _midline(boxes)
    full = {i for i, b in enumerate(boxes) if b[0] < mid - GUTTER_SLACK_PT and b[2] > mid + GUTTER_SLACK_PT}
    order: list[int] = []
    band: list[int] = []
    for i in sorted(range(len(boxes)), key=lambda i: (boxes[i][1], boxes[i][0])):
        if i in full:
            order += _band_order(band, boxes, mid) + [i]
            band = []
        else:
            band.append(i)
    return order + _band_order(band, boxes, mid)
