"""Text-layer health of a page, and re-reading word spaces from character positions.

Three faults of real text layers are detected per page:

* lost glyphs: letters whose glyph has no usable Unicode mapping vanish ("sh ll be clothed with fo
  mfitting"), so the share of English words found in a dictionary (pyspellchecker's word list) falls;
* replacement characters and private-use code points (counted by ``garbage_ratio`` in ``pdf.py``);
* missing word spaces (PDFs made from HWP place Korean words by glyph offsets, not space characters):
  Hangul runs far longer than Korean words.

Missing spaces are repaired by reading the characters' boxes (PyMuPDF ``rawdict``): a gap wider than a
quarter of the font size between two glyphs of a line is a space. Lost glyphs cannot be repaired from
the text layer: the page is OCRed when OCR is on.
"""

from __future__ import annotations

import re
from functools import lru_cache

from ragprep.engines.pdf import join_lines

HANGUL_RUN_RE = re.compile(r"[가-힣]+")
LONG_HANGUL_RUN = 13
"""Syllables: Korean words (eojeol) are rarely this long; runs this long mean lost spaces."""
LONG_HANGUL_SHARE = 0.3
"""A page whose Hangul syllables lie this much in long runs has lost its word spaces."""
SPACE_GAP = 0.25
"""A gap between glyphs wider than this share of the font size is a word space."""
MIN_WORDS = 40
LOST_GLYPH_DICT_SHARE = 0.7
"""A page with fewer English words than this share in the dictionary has lost glyphs."""


@lru_cache(maxsize=1)
def _dictionary() -> frozenset[str] | dict:
    try:
        from spellchecker import SpellChecker
    except ImportError:  # the check is skipped without the word list
        return frozenset()
    return SpellChecker().word_frequency.dictionary


def dictionary_share(text: str) -> float | None:
    """Share of English words (2+ letters) found in the dictionary; None for too little English."""
    words = [w.lower() for w in re.findall(r"[A-Za-z]{2,}", text)]
    known = _dictionary()
    if len(words) < MIN_WORDS or not known:
        return None
    return sum(1 for w in words if w in known) / len(words)


def long_hangul_share(text: str) -> float | None:
    """Share of Hangul syllables lying in runs of ``LONG_HANGUL_RUN`` or more; None for little Hangul."""
    runs = HANGUL_RUN_RE.findall(text)
    total = sum(len(r) for r in runs)
    if total < MIN_WORDS:
        return None
    return sum(len(r) for r in runs if len(r) >= LONG_HANGUL_RUN) / total


def lost_spaces(text: str) -> str | None:
    """Why the text has lost its word spaces, or None."""
    share = long_hangul_share(text)
    if share is not None and share > LONG_HANGUL_SHARE:
        return f"missing word spaces ({share:.0%} of Hangul in runs of {LONG_HANGUL_RUN}+ syllables)"
    return None


def lost_glyphs(text: str) -> str | None:
    """Why the text has lost glyphs, or None."""
    share = dictionary_share(text)
    if share is not None and share < LOST_GLYPH_DICT_SHARE:
        return f"lost glyphs (only {share:.0%} of English words in the dictionary)"
    return None


def _line_text(line: dict) -> str:
    """A rawdict line's characters with a space wherever the gap between two glyphs is wide."""
    out: list[str] = []
    prev = None
    for span in line.get("spans", []):
        size = span.get("size") or 10.0
        for char in span.get("chars", []):
            c = char["c"]
            if prev is not None and not c.isspace() and out and not out[-1].isspace():
                if char["bbox"][0] - prev["bbox"][2] > SPACE_GAP * size:
                    out.append(" ")
            out.append(c)
            prev = char
    return "".join(out)


def spaced_block_text(block: dict) -> str:
    """A rawdict text block's lines with word spaces read from glyph positions, joined like ``join_lines``."""
    return join_lines([_line_text(line) for line in block.get("lines", [])])
