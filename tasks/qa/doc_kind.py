"""What kind of document a pair comes from, read off the document's own text (never its file name or a hand label).

The offline critic's auto-approval is decided per *band*: the document kind x the question type (``bands_of``).
Kinds differ in how far the critic can be trusted: in a regulation or a test protocol a value question easily
loses its subject or its section; in a deck of results it rarely does. ``document_kind`` reads the kind from the
text of every chunk of the document, in this order (first match):

- ``korean``: at least ``KOREAN_SHARE`` of the letters are Hangul;
- ``regulation``: numbered provisions ("S5.1.2", "5.2.1.") at least ``PROVISIONS_PER_1000`` per 1000 words and
  requirement language ("shall") present;
- ``meeting``: agenda / decision / action-item words at least ``MEETING_PER_1000`` per 1000 words;
- ``report``: measured results ("measured", "result", "limit", "pass", "fail") at least ``RESULTS_PER_1000`` per
  1000 words and no more than ``REPORT_MAX_SHALL`` "shall" per 1000 words;
- ``protocol``: assessment and procedure words ("points", "score", "rating", "procedure", "protocol", "test
  conditions") at least ``PROTOCOL_PER_1000`` per 1000 words;
- ``other``: books, papers, decks and everything else.

The thresholds are stated once here. They were read off the 24 labelled documents, so a wrong kind is not hidden:
calibration runs this detector on each document's labelled chunks (not the family in the file name) and the bands
are chosen and checked by nested leave-one-document-out cross-validation, so a document the detector puts in the
wrong kind counts against that kind's held-out precision.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from ragprep.text import HANGUL_RE

KINDS = ("korean", "regulation", "meeting", "report", "protocol", "other")
KOREAN_SHARE = 0.3
PROVISIONS_PER_1000 = 5.0
MEETING_PER_1000 = 5.0
RESULTS_PER_1000 = 8.0
REPORT_MAX_SHALL = 1.0
PROTOCOL_PER_1000 = 5.0

_WORD_RE = re.compile(r"\w+")
_LATIN_RE = re.compile(r"[A-Za-z]")
_SHALL_RE = re.compile(r"\bshall\b", re.IGNORECASE)
_PROVISION_RE = re.compile(r"(?m)(?:^|\s)(?:S\d+(?:\.\d+)+|\d+\.\d+\.\d+\.?)\s")
_MEETING_RE = re.compile(r"\b(?:action items?|decided|decisions?|attendees|agenda)\b", re.IGNORECASE)
_RESULTS_RE = re.compile(r"\b(?:measured|results?|limits?|pass|fail|test no)\b", re.IGNORECASE)
_PROTOCOL_RE = re.compile(r"\b(?:points?|scored?|scores|scoring|rating|procedures?|protocols?|test (?:set ?up|conditions?))\b",
                          re.IGNORECASE)


def _per_1000(pattern: re.Pattern, text: str, words: int) -> float:
    return 1000 * len(pattern.findall(text)) / words


def document_kind(texts: Iterable[str]) -> str:
    """The kind of a document (``KINDS``) from the text of its chunks (see the module docstring)."""
    text = "\n".join(dict.fromkeys(t for t in texts if t))
    words = len(_WORD_RE.findall(text)) or 1
    hangul = len(HANGUL_RE.findall(text))
    letters = hangul + len(_LATIN_RE.findall(text))
    if letters and hangul / letters >= KOREAN_SHARE:
        return "korean"
    shall = _per_1000(_SHALL_RE, text, words)
    if _per_1000(_PROVISION_RE, text, words) >= PROVISIONS_PER_1000 and shall > 0:
        return "regulation"
    if _per_1000(_MEETING_RE, text, words) >= MEETING_PER_1000:
        return "meeting"
    if _per_1000(_RESULTS_RE, text, words) >= RESULTS_PER_1000 and shall <= REPORT_MAX_SHALL:
        return "report"
    if _per_1000(_PROTOCOL_RE, text, words) >= PROTOCOL_PER_1000:
        return "protocol"
    return "other"


def bands_of(kind: str, question_type: str) -> tuple[str, ...]:
    """The auto-approval bands a pair belongs to: its document kind, and the kind with its question type
    (``"report"``, ``"report/numeric"``). A pair is auto-approved when the critic passes it and one of them was chosen."""
    return (kind or "other", f"{kind or 'other'}/{question_type or 'unknown'}")
