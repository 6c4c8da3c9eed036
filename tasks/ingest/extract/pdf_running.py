"""Running heads, running feet and page numbers: lines a PDF repeats at the same place on many pages.

A block is a running line when it is among the top-most or bottom-most text of its page and a block
with the same text (words holding a digit folded, so "Page 3" matches "Page 4" and "§ 571.208" matches "§ 571.209a")
sits at about the same height on enough other pages. Captions ("Figure 2", "Table 3", "표 2") are never
running lines even when they repeat; numbered headings match only with the same number (``key_of``);
nothing on a one-page document is a running line. Pure functions over
(page, box, text) so the rule is tested without PDFs.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from tasks.ingest.extract.pdf_sections import LABEL_RE, parse_label

CAPTION_RE = re.compile(r"^\s*(fig\.?|figure|table|chart|그림|표|도표)\s*#", re.IGNORECASE)
EDGE_RANK = 2
"""How many distinct line heights from the top (and from the bottom) of a page count as its edge."""
MIN_SHARE = 0.2
MIN_PAGES = 3
"""A running line repeats on this share of the pages, or on ``MIN_PAGES`` pages if fewer (two at least):
an annex's own running head runs only over the annex."""
Y_TOLERANCE_PT = 6.0


@dataclass(frozen=True)
class PlacedText:
    """A block of text where it lies: 1-based page, box (x0, y0, x1, y1) in points, text."""

    page: int
    bbox: tuple[float, float, float, float]
    text: str


def fold(text: str) -> str:
    """The comparison key of a line: lower case, every word holding a digit one '#' ("§ 571.216a", "1059")."""
    return " ".join("#" if re.search(r"\d", w) else w for w in text.lower().split())


def key_of(text: str) -> str:
    """The comparison key of a block: ``fold`` for plain lines; a numbered heading keeps its number ("1.2
    Motion Representation 3" -> "1.2 motion representation #"), so chapters that each start on a new page
    ("1. Scope", "2. Tests") stay apart while a section title repeated as a head matches itself."""
    label = LABEL_RE.match(text)
    if parse_label(text, heading=True) is None or (label and label.group("tops")):
        return fold(text)  # a bare number before words ("4 IBM Cloud Pak ...") is a page number
    head = text[: label.end()] if label else ""
    return " ".join(head.lower().split()) + " " + fold(text[len(head) :])


def _edge_indices(blocks: Sequence[PlacedText]) -> set[int]:
    """Indices of the blocks at the top or bottom edge of one page's text."""
    if not blocks:
        return set()
    tops = sorted({round(b.bbox[1]) for b in blocks})[:EDGE_RANK]
    bottoms = sorted({round(b.bbox[3]) for b in blocks})[-EDGE_RANK:]
    return {i for i, b in enumerate(blocks) if round(b.bbox[1]) in tops or round(b.bbox[3]) in bottoms}


def running_keys(pages: Sequence[Sequence[PlacedText]], n_pages: int) -> set[tuple[str, int]]:
    """(folded text, height band) of the lines that run across pages."""
    if n_pages < 2:
        return set()
    seen: dict[tuple[str, int], set[int]] = {}
    for blocks in pages:
        for i in _edge_indices(blocks):
            block = blocks[i]
            key = key_of(block.text)
            if not key or CAPTION_RE.match(fold(block.text)) or len(key) > 200:
                continue
            band = round((block.bbox[1] + block.bbox[3]) / 2 / Y_TOLERANCE_PT)
            seen.setdefault((key, band), set()).add(block.page)
    need = max(2, min(MIN_SHARE * n_pages, MIN_PAGES))
    found: set[tuple[str, int]] = set()
    for (key, band), where in seen.items():
        # a band boundary may split one running line's heights: count the neighbour band too
        near = where | seen.get((key, band - 1), set()) | seen.get((key, band + 1), set())
        if len(near) >= need:
            found.add((key, band))
    return found


def running_indices(pages: Sequence[Sequence[PlacedText]], n_pages: int) -> list[set[int]]:
    """Per page, the indices of its blocks that are running heads, feet or page numbers."""
    keys = running_keys(pages, n_pages)
    out: list[set[int]] = []
    for blocks in pages:
        drop = set()
        for i in _edge_indices(blocks):
            block = blocks[i]
            band = round((block.bbox[1] + block.bbox[3]) / 2 / Y_TOLERANCE_PT)
            key = key_of(block.text)
            if any((key, b) in keys for b in (band - 1, band, band + 1)):
                drop.add(i)
        out.append(drop)
    return out
