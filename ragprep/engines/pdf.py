"""PyMuPDF access shared by the PDF ingest backend and the layout backends.

MuPDF supports no concurrent use, so every PyMuPDF call in the process goes through one lock;
text is read with one set of flags (never decoding images); lines are joined one way.
"""

from __future__ import annotations

import threading

import pymupdf

PDF_LOCK = threading.RLock()
"""Serialises PyMuPDF calls across threads (MuPDF supports no concurrent use)."""

TEXT_FLAGS = pymupdf.TEXTFLAGS_DICT & ~pymupdf.TEXT_PRESERVE_IMAGES & ~pymupdf.TEXT_PRESERVE_LIGATURES
"""``get_text("dict")`` flags: everything but image decoding (8x slower and unused) and ligature glyphs.

Without ``TEXT_PRESERVE_LIGATURES`` MuPDF writes the Latin ligatures U+FB00-FB06 (ﬀ ﬁ ﬂ ﬃ ﬄ ﬅ ﬆ) as their
letters, at the one place PDF text is read (page text, table cells, layout words); nothing else is folded (no
NFKC: Korean, fullwidth forms and superscripts stay as the PDF has them)."""


def join_lines(lines: list[str]) -> str:
    """Join text lines with spaces, skipping blank ones and mending words hyphenated at a line end."""
    out = ""
    for line in lines:
        line = line.strip()
        if not line:
            continue
        if not out:
            out = line
        elif out.endswith("-") and line[:1].islower():
            out = out[:-1] + line
        else:
            out += " " + line
    return out
