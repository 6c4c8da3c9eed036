"""Sentences of an answer (or a chunk) with their character offsets, in English and Korean.

Text is read line by line first (Markdown list items, table rows and headings are units of their
own, their markers stripped); each line is then split by a maintained splitter: ``pysbd`` for
English (abbreviations, decimals, "e.g."), ``kss`` for Korean (sentence endings without a full
stop, such as ``...이하였다 그러나 ...``) with its rule-based ``fast`` backend, which downloads nothing.
Never a split on ". ". (kss's ``pecab`` morpheme backend splits the same sentences on this corpus
but takes 45x longer, 14 s against 0.3 s over the Korean chunks, and cuts a Markdown image link
after its "!"; ``mecab`` would make the result depend on what the machine has installed.)

``kss``'s package ``__init__`` imports all of its twenty toolkits (spacing, g2p, paradigms, ...),
about 15 s on two cores; only its sentence splitter is needed here, so that module is loaded on its
own (``_kss_split``), in about 0.4 s, and only when a Korean line is met.
"""

from __future__ import annotations

import importlib.util
import logging
import re
import sys
import threading
import types
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache

from ragprep.text import HANGUL_RE

KSS_BACKEND = "fast"
"""kss backend: rules, no morpheme analyser (see the module doc)."""

_LATIN_RE = re.compile(r"[A-Za-z]")
_MARKER_RE = re.compile(r"^\s*(?:#{1,6}\s+|[-*+•▪◦]\s+|\d{1,3}[.)]\s+|>\s*)+")
_EMPHASIS_RE = re.compile(r"\*\*|__")
_WORDY_RE = re.compile(r"[^\W_]", re.UNICODE)
_UNIT_END_RE = re.compile(r"\d\s?(?:ms|mm|cm|km|kN|kg|Hz|kPa|MPa|bar|m|N|g|s|h)\.(?=\s+[A-Z])")
_HANGUL_END_RE = re.compile(r"(?<=[\uac00-\ud7a3][.!?])\s+")
_lock = threading.RLock()
_local = threading.local()


@dataclass(frozen=True)
class Sentence:
    """One sentence: its text and where it lies in the text it was split from (``text[start:end]``)."""

    text: str
    start: int
    end: int


def is_korean(text: str) -> bool:
    """True when Hangul makes up at least 20% of the letters."""
    hangul = len(HANGUL_RE.findall(text))
    return bool(hangul) and hangul >= 0.2 * (hangul + len(_LATIN_RE.findall(text)))


def _load_kss_sentences() -> Callable[..., list[str]]:
    """``kss``'s ``split_sentences`` without importing the rest of kss (see the module doc)."""
    loaded = sys.modules.get("kss")
    if loaded is not None and hasattr(loaded, "split_sentences"):
        return loaded.split_sentences
    spec = importlib.util.find_spec("kss")
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError("kss is not installed: pip install kss (Korean sentence splitting)")
    if loaded is None:
        package = types.ModuleType("kss")
        package.__path__ = list(spec.submodule_search_locations)
        package.__spec__ = spec
        sys.modules["kss"] = package
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    from kss._modules.sentences.split_sentences import split_sentences

    # kss calls logging.basicConfig at import ("[Kss]: ..." on every library's log lines): undo it
    for handler in [h for h in root.handlers if h not in handlers]:
        root.removeHandler(handler)
    root.setLevel(level)
    sys.modules["kss"].split_sentences = split_sentences
    return split_sentences


@lru_cache(maxsize=1)
def _kss() -> Callable[..., list[str]]:
    with _lock:
        return _load_kss_sentences()


def _kss_split(line: str) -> list[str]:
    with _lock, warnings.catch_warnings():  # kss keeps module-level caches; one caller at a time
        warnings.simplefilter("ignore", RuntimeWarning)  # kss' analysers overflow harmlessly on long words
        return list(_kss()(line, backend=KSS_BACKEND, num_workers=1, strip=True))


def _after_units(piece: str) -> list[str]:
    """pysbd reads "12 ms." and "4 mm." as abbreviations (Ms., ...): a unit after a number, then a capital, ends a sentence."""
    parts, start = [], 0
    for match in _UNIT_END_RE.finditer(piece):
        parts.append(piece[start:match.end()].strip())
        start = match.end()
    parts.append(piece[start:].strip())
    return [p for p in parts if p]


def _pysbd_split(line: str) -> list[str]:
    segmenter = getattr(_local, "segmenter", None)
    if segmenter is None:
        import pysbd

        segmenter = _local.segmenter = pysbd.Segmenter(language="en", clean=False)
    return [part for s in segmenter.segment(line) for part in _after_units(s.strip())]


def _line_sentences(line: str) -> list[str]:
    if line.lstrip().startswith("|"):  # a table row is one unit
        return [line.strip()]
    if not is_korean(line):
        return _pysbd_split(line)
    # kss ends sentences at verb endings; report style also ends them at a noun ("기준 충족.", "검토함."), and a
    # full stop right after a Hangul syllable is never an abbreviation or a decimal point
    return [part for piece in _kss_split(line) for part in _HANGUL_END_RE.split(piece) if part.strip()]


def _locate(text: str, piece: str, cursor: int) -> tuple[int, int] | None:
    """Where ``piece`` (as a splitter returned it) lies in ``text`` from ``cursor`` on."""
    at = text.find(piece, cursor)
    if at >= 0:
        return at, at + len(piece)
    words = piece.split()  # a splitter that normalised spaces: match word by word
    if not words:
        return None
    first = text.find(words[0], cursor)
    if first < 0:
        return None
    end = first
    for word in words:
        found = text.find(word, end)
        if found < 0:
            return None
        end = found + len(word)
    return first, end


def split_sentences(text: str) -> list[Sentence]:
    """The sentences of ``text`` in order, each with its offsets; lines without a letter or digit are skipped (cached
    per text: the splitters are slow, and the same chunk texts are split again by each evaluation set and answer)."""
    return list(_split_sentences(text))


@lru_cache(maxsize=4096)
def _split_sentences(text: str) -> tuple[Sentence, ...]:
    out: list[Sentence] = []
    position = 0
    for raw_line in text.splitlines(keepends=True):
        line_start, position = position, position + len(raw_line)
        marker = _MARKER_RE.match(raw_line)
        body_offset = marker.end() if marker else 0
        body = raw_line[body_offset:].rstrip("\r\n")
        if not _WORDY_RE.search(body):
            continue
        cursor = 0
        for piece in _line_sentences(body):
            clean = _EMPHASIS_RE.sub("", piece).strip()
            if not _WORDY_RE.search(clean):
                continue
            span = _locate(body, piece, cursor)
            if span is None:
                continue
            cursor = span[1]
            start, end = line_start + body_offset + span[0], line_start + body_offset + span[1]
            out.append(Sentence(clean, start, end))
    return tuple(out)
