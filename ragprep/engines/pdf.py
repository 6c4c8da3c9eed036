"""PyMuPDF access shared by the PDF ingest backend and the layout backends.

MuPDF supports no concurrent use, so every PyMuPDF call in the process goes through one lock;
text is read with one set of flags (never decoding images); lines are joined one way.
"""

from __future__ import annotations

import re
import threading

import pymupdf

from ragprep.engines.hyphens import DEFAULT, Hyphenation

LINE_END_HYPHEN_RE = re.compile(r"[^\W_]-$")
"""A line ending in a word and a hyphen (not a dash set apart: "results -")."""

PDF_LOCK = threading.RLock()
"""Serialises PyMuPDF calls across threads (MuPDF supports no concurrent use)."""

TEXT_FLAGS = pymupdf.TEXTFLAGS_DICT & ~pymupdf.TEXT_PRESERVE_IMAGES & ~pymupdf.TEXT_PRESERVE_LIGATURES
"""``get_text("dict")`` flags: everything but image decoding (8x slower and unused) and ligature glyphs.

Without ``TEXT_PRESERVE_LIGATURES`` MuPDF writes the Latin ligatures U+FB00-FB06 (ﬀ ﬁ ﬂ ﬃ ﬄ ﬅ ﬆ) as their
letters, at the one place PDF text is read (page text, table cells, layout words); nothing else is folded (no
NFKC: Korean, fullwidth forms and superscripts stay as the PDF has them)."""


def join_lines(lines: list[str], hyphens: Hyphenation | None = None) -> str:
    """Join text lines with spaces, skipping blank ones; a word broken by a hyphen at a line end is joined, kept
    as a hyphenated compound or left as it is by ``hyphens`` (the document's words; the word list alone if None)."""
    rule = hyphens or DEFAULT
    out = ""
    for line in lines:
        line = line.strip()
        if not line:
            continue
        if not out:
            out = line
        elif LINE_END_HYPHEN_RE.search(out) and line[:1].isalnum():
            out = rule.join(out, line)
        else:
            out += " " + line
    return out


SPACE_GAP = 0.25
"""A gap between two glyphs of a line wider than this share of the font size is a word space.

PDFs made from HWP (and some math typesetting) place words by glyph offsets with no space character, and MuPDF
adds none: '대표할수있는' is drawn as '대표할 수 있는'. Across the corpus PDFs the gap between consecutive
non-space glyphs of a line is <= 0.10 em inside words (Latin and Hangul) and 0.40-0.80 em between Korean words
laid out by offsets; 0.25 sits in the empty valley between them."""


def _glyph_gap(prev: dict, char: dict, size: float) -> bool:
    return char["bbox"][0] - prev["bbox"][2] > SPACE_GAP * size


def spaced_line_text(line: dict) -> str:
    """A ``rawdict`` line's characters, with a space wherever two non-space glyphs stand a word gap apart.

    A line whose gaps stand between single glyphs only ('환 경 노 동 위 원 회', a letter-spaced title) is
    letter spacing, not word spacing: it keeps the text layer's characters as they are."""
    parts: list[str] = [""]
    prev = None
    for span in line.get("spans", []):
        size = span.get("size") or 10.0
        for char in span.get("chars", []):
            c, tail = char["c"], parts[-1][-1:]
            if prev is not None and not c.isspace() and tail and not tail.isspace() and _glyph_gap(prev, char, size):
                parts.append("")
            parts[-1] += c
            prev = char
    if len(parts) >= 3 and all(len(part.strip()) == 1 for part in parts):
        return "".join(parts)
    return " ".join(parts)


def _line_words(line: dict) -> list[tuple[tuple[float, float, float, float], str]]:
    """A ``rawdict`` line's words (box, text): split at space characters and at word gaps between glyphs."""
    words: list[tuple[tuple[float, float, float, float], str]] = []
    box: list[float] | None = None
    text = ""
    prev = None
    for span in line.get("spans", []):
        size = span.get("size") or 10.0
        for char in span.get("chars", []):
            c, (x0, y0, x1, y1) = char["c"], char["bbox"]
            blank = c.isspace() or c < " "  # MuPDF's words also end at control characters
            if blank or (prev is not None and text and _glyph_gap(prev, char, size)):
                if text:
                    words.append((tuple(box), text))
                box, text = None, ""
            if not blank:
                box = [x0, y0, x1, y1] if box is None else [min(box[0], x0), min(box[1], y0), max(box[2], x1), max(box[3], y1)]
                text += c
            prev = char
    if text:
        words.append((tuple(box), text))
    return words


def page_words(page: pymupdf.Page, textpage: pymupdf.TextPage | None = None, flags: int = TEXT_FLAGS) -> list[tuple]:
    """The page's words like ``get_text("words")`` (x0, y0, x1, y1, text, block, line, word), also split where
    two glyphs stand a word gap apart with no space character between them (``SPACE_GAP``)."""
    raw = page.get_text("rawdict", textpage=textpage or page.get_textpage(flags=flags))
    words: list[tuple] = []
    for b_no, block in enumerate(raw.get("blocks", [])):
        if block.get("type", 0) != 0:
            continue
        for l_no, line in enumerate(block.get("lines", [])):
            for w_no, (box, text) in enumerate(_line_words(line)):
                words.append((*box, text, b_no, l_no, w_no))
    return words
