"""Cleaning OCR text of pictures before it enters chunks: word-shape filter and Korean syllable re-joining.

Tesseract reads charts, photos and logos as text too: lines of stray marks ("| ~ ee =") or spaced-out
syllables ("승 차 종 승 객 수", one box per glyph). A line is kept when at least half of its tokens have the
shape of words (a number, a Hangul word, a Latin word of two or more letters with at most one
non-letter, a short upper-case acronym); runs of three or more single Hangul syllables are joined.
The raw OCR text stays in the element's ``ocr_text``; only what enters the chunk is cleaned.
"""

from __future__ import annotations

import re

SPACED_SYLLABLES_RE = re.compile(r"(?<![가-힣])[가-힣](?: [가-힣]){2,}(?![가-힣])")
WORD_RE = re.compile(
    r"^[(\[\"'‘“]*(?:[-+]?\d[\d.,:/%-]*|[가-힣][가-힣\d·]*|[A-Za-z][a-z]+(?:['’-][A-Za-z]+)*|[A-Z][A-Z\d&-]{1,9}|[A-Za-z]\d+)[)\]\"'’”.,:;!?%]*$"
)
MIN_WORD_SHARE = 0.5


def rejoin_syllables(line: str) -> str:
    """Runs of three or more single Hangul syllables joined ("승 차 종" -> "승차종")."""
    return SPACED_SYLLABLES_RE.sub(lambda m: m.group(0).replace(" ", ""), line)


def word_share(line: str) -> float:
    """Share of the line's tokens shaped like words."""
    tokens = line.split()
    if not tokens:
        return 0.0
    return sum(1 for t in tokens if WORD_RE.match(t)) / len(tokens)


def clean_ocr_text(text: str) -> str:
    """OCR text with spaced-out syllables joined and lines that are mostly not words dropped."""
    kept = []
    for line in text.splitlines():
        line = rejoin_syllables(" ".join(line.split()))
        if line and word_share(line) >= MIN_WORD_SHARE:
            kept.append(line)
    return "\n".join(kept)
