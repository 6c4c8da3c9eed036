"""The two built-in retrieval baselines of ``ragprep evaluate --queries``: what a plain RAG set-up would index.

* ``pages``: one unit per PDF page (PyMuPDF ``get_text``) or per slide (python-pptx: the text of every
  shape, grouped shapes and table cells included, and the slide's notes; no charts, no OCR);
* ``windows``: 400-word windows with a 50-word overlap over each document's page/slide texts in order.

Both are read from the source files themselves, so they share nothing with ragprep's extraction.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

_log = logging.getLogger("ragprep.evaluate")

WINDOW_WORDS = 400
WINDOW_OVERLAP = 50


@dataclass(frozen=True)
class Unit:
    """One retrievable unit of a baseline (or of the product's index): id, document file name, page/slide, text."""

    unit_id: str
    document: str
    where: int | None
    text: str


def _shape_texts(shapes) -> Iterator[str]:
    for shape in shapes:
        if getattr(shape, "shape_type", None) == 6:  # a group: its shapes
            yield from _shape_texts(shape.shapes)
            continue
        if getattr(shape, "has_text_frame", False) and shape.has_text_frame:
            yield shape.text_frame.text
        if getattr(shape, "has_table", False) and shape.has_table:
            for row in shape.table.rows:
                yield " | ".join(cell.text for cell in row.cells)


def slide_texts(path: Path) -> list[str]:
    """The plain text of every slide of a deck (shapes, groups, table cells, notes)."""
    from pptx import Presentation

    out = []
    for slide in Presentation(str(path)).slides:
        parts = list(_shape_texts(slide.shapes))
        if slide.has_notes_slide:
            parts.append(slide.notes_slide.notes_text_frame.text)
        out.append("\n".join(p for p in parts if p.strip()))
    return out


def page_texts(path: Path) -> list[str]:
    """The text layer of every page of a PDF (PyMuPDF)."""
    import pymupdf

    with pymupdf.open(str(path)) as document:
        return [page.get_text() for page in document]


def unit_texts(path: Path) -> list[str]:
    """Page or slide texts of one file; empty (logged) when the file cannot be read."""
    try:
        if path.suffix.lower() == ".pdf":
            return page_texts(path)
        if path.suffix.lower() == ".pptx":
            return slide_texts(path)
    except Exception as exc:  # noqa: BLE001 - a baseline skips an unreadable file, the evaluation goes on
        _log.warning("%s: unreadable for the baselines (%s); left out of them", path, exc)
    return []


def page_units(paths: Iterable[Path]) -> list[Unit]:
    """One unit per page or slide of every file."""
    return [Unit(f"{p.name}#{n}", p.name, n, text) for p in paths for n, text in enumerate(unit_texts(p), start=1)]


def window_units(paths: Iterable[Path], size: int = WINDOW_WORDS, overlap: int = WINDOW_OVERLAP) -> list[Unit]:
    """``size``-word windows, ``overlap`` words shared with the previous one, over each file's text in order.

    A window's page is the page its first word is on."""
    out = []
    for path in paths:
        tagged = [(n, word) for n, text in enumerate(unit_texts(path), start=1) for word in text.split()]
        step = max(1, size - overlap)
        for start in range(0, max(1, len(tagged) - overlap), step):
            piece = tagged[start:start + size]
            if piece:
                out.append(Unit(f"{path.name}@{start}", path.name, piece[0][0], " ".join(w for _, w in piece)))
    return out
