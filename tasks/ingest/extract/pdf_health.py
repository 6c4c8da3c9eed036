"""Text-layer health of a page, and re-reading word spaces from character positions.

Three faults of real text layers are detected per page:

* lost glyphs: letters whose glyph has no usable Unicode mapping vanish or read as spaces ("sh ll be
  clothed with fo mfitting"): the share of English words found in a dictionary (pyspellchecker's word
  list) falls on the page, or a block holds many fragments that one inserted letter mends ("m de");
* replacement characters and private-use code points (counted by ``garbage_ratio`` in ``pdf_text.py``);
* missing word spaces (PDFs made from HWP place Korean words by glyph offsets, not space characters):
  Hangul runs far longer than Korean words.

Missing spaces are repaired where all PDF text is read (``ragprep.engines.pdf.spaced_line_text``: a gap wider
than a quarter of the font size between two glyphs of a line is a space); a page whose Hangul still lies in
long runs after that is reported. Lost glyphs cannot be repaired from the text layer: the page is OCRed when
OCR is on.
"""

from __future__ import annotations

import re
import string
from functools import lru_cache

HANGUL_RUN_RE = re.compile(r"[가-힣]+")
LONG_HANGUL_RUN = 13
"""Syllables: Korean words (eojeol) are rarely this long; runs this long mean lost spaces."""
LONG_HANGUL_SHARE = 0.3
"""A page whose Hangul syllables lie this much in long runs has lost its word spaces."""
MIN_WORDS = 40
LOST_GLYPH_DICT_SHARE = 0.7
"""A page with fewer English words than this share in the dictionary has lost glyphs."""
LOST_GLYPH_MIN_GAPS = 4
LOST_GLYPH_GAP_SHARE = 0.1
"""A block with this many (and this share of its words) fragments mended by one letter has lost glyphs."""


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


def mended_gaps(text: str) -> tuple[int, int]:
    """(gaps, words): adjacent word fragments that one inserted letter turns into a dictionary word
    ("m de" -> "made", "s fe" -> "safe"), where one of them is no word of its own; the trace of a glyph
    whose Unicode mapping is a space or nothing."""
    known = _dictionary()
    tokens = re.findall(r"[A-Za-z]+|\S", text)
    words = sum(1 for t in tokens if t.isalpha())
    gaps = 0
    for a, b in zip(tokens, tokens[1:]):
        if not (a.isalpha() and b.isalpha()) or not b.islower():
            continue  # "in S6.1": a fragment is lower case
        la, lb = a.lower(), b.lower()
        if (len(la) > 1 and la in known and len(lb) > 1 and lb in known) or "a" in (la, lb) or "i" in (la, lb):
            continue
        if len(la + lb) >= 3 and any(la + c + lb in known for c in string.ascii_lowercase):
            gaps += 1
    return gaps, words


def lost_glyphs(text: str, blocks: list[str] | None = None) -> str | None:
    """Why the text has lost glyphs, or None: few dictionary words on the page, or a block with many
    fragments that one missing letter would mend (``mended_gaps``)."""
    share = dictionary_share(text)
    if share is not None and share < LOST_GLYPH_DICT_SHARE:
        return f"lost glyphs (only {share:.0%} of English words in the dictionary)"
    if not _dictionary():
        return None
    for block in blocks or []:
        gaps, words = mended_gaps(block)
        if gaps >= LOST_GLYPH_MIN_GAPS and gaps >= LOST_GLYPH_GAP_SHARE * words:
            return f"lost glyphs ({gaps} words broken by a missing letter in one block: {block[:40]!r})"
    return None
