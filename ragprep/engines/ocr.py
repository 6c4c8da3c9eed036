"""OCR engines behind one small protocol; Tesseract is the embedded default.

Results are cached on disk under the image's SHA-256, the language list and the
engine version, so a re-run never OCRs the same picture twice.
"""

from __future__ import annotations

import io
import json
import logging
import os
import shutil
import subprocess
import threading
import time
from dataclasses import asdict, dataclass, replace
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from ragprep.ids import sha256_bytes, stable_id
from ragprep.storage import atomic_write_bytes

if TYPE_CHECKING:
    from ragprep.settings import Settings
    from ragprep.storage import Layout

OCR_RULES_VERSION = "lines-v4-boxes"
"""Bump when the post-processing of Tesseract output changes (invalidates the cache)."""

_log = logging.getLogger("ragprep.cache")


@dataclass(frozen=True)
class OcrResult:
    text: str
    mean_confidence: float
    n_words: int
    n_chars: int
    """Letters and digits kept after the confidence filter."""
    words: tuple = ()
    """Word boxes of the layout read, ``(text, confidence, left, top, width, height)`` in pixels, for reading a
    picture of a table as a grid (``tasks.ingest.extract.ocr_table``). Pictures ruled like a table get a second read
    for this, with the ruling lines painted out; the others reuse the words of the text read."""


def _read_cached(path: Path | None) -> OcrResult | None:
    """The cached result at ``path``; None when there is none or it is unreadable (a miss: warned, recomputed, replaced)."""
    if path is None or not path.exists():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(data, dict):
            raise TypeError("not a JSON object")
        data["words"] = tuple(tuple(w) for w in data.get("words", ()))
        result = OcrResult(**data)
        if not isinstance(result.text, str) or not all(isinstance(v, (int, float)) for v in
                                                       (result.mean_confidence, result.n_words, result.n_chars)):
            raise TypeError("fields of the wrong type")
    except (OSError, ValueError, TypeError) as exc:
        _log.warning("unreadable OCR cache entry %s (%s): treated as a miss, recomputed and replaced", path, exc)
        return None
    return result


class OcrEngine(Protocol):
    name: str

    def unavailable_reason(self) -> str | None:
        """None when the engine can run, else a one-line reason with the fix."""

    def recognize(self, image: bytes, timeout_s: float | None = None) -> OcrResult:
        """OCR one encoded image (PNG/JPEG/...); raise ``OcrTimeout`` when it takes longer than ``timeout_s``
        (default: the engine's own timeout)."""


class OcrTimeout(RuntimeError):
    """An OCR call did not finish in time; the engine process was killed."""


PROBE_TIMEOUT_S = 30.0
"""``tesseract --version`` / ``--list-langs`` that do not answer in this time leave OCR unavailable."""


class TesseractOcr:
    """Tesseract through pytesseract, words filtered by confidence, cached on disk."""

    name = "tesseract"

    def __init__(self, languages: str, min_confidence: float, cache_dir: Path | None, timeout_s: float = 120.0) -> None:
        self.requested_languages = languages
        self.min_confidence = min_confidence
        self.cache_dir = cache_dir
        self.timeout_s = timeout_s
        self._lock = threading.Lock()
        # Tesseract's OpenMP threads fight each other when documents run in parallel;
        # one thread per call is about twice as fast on small machines.
        os.environ.setdefault("OMP_THREAD_LIMIT", "1")

    @cached_property
    def _probe(self) -> tuple[str | None, str, str]:
        """(reason unavailable or None, languages actually usable, engine version)."""
        binary = shutil.which("tesseract")
        if binary is None:
            return (
                "tesseract is not installed; install it with "
                "`apt-get install -y tesseract-ocr tesseract-ocr-kor tesseract-ocr-eng` "
                "(or set RAGPREP_OCR__ENABLED=false)",
                "",
                "",
            )
        try:
            version = subprocess.run([binary, "--version"], capture_output=True, text=True,
                                     timeout=PROBE_TIMEOUT_S).stdout.split("\n")[0]
            listed = subprocess.run([binary, "--list-langs"], capture_output=True, text=True,
                                    timeout=PROBE_TIMEOUT_S).stdout.split()
        except subprocess.TimeoutExpired:
            return f"{binary} did not answer `--version` within {PROBE_TIMEOUT_S:.0f} s; check the installation", "", ""
        wanted = [lang for lang in self.requested_languages.split("+") if lang]
        usable = [lang for lang in wanted if lang in listed]
        if not usable:
            return (
                f"tesseract has none of the languages {self.requested_languages!r}; install "
                + " ".join(f"tesseract-ocr-{lang}" for lang in wanted),
                "",
                version,
            )
        return None, "+".join(usable), version

    def unavailable_reason(self) -> str | None:
        """None when Tesseract can run with at least one requested language, else a one-line reason with the fix."""
        with self._lock:
            return self._probe[0]

    @property
    def languages(self) -> str:
        """The requested languages Tesseract has, joined with ``+``."""
        return self._probe[1]

    def missing_languages(self) -> list[str]:
        """The requested languages Tesseract does not have."""
        usable = set(self._probe[1].split("+"))
        return [lang for lang in self.requested_languages.split("+") if lang and lang not in usable]

    def _cache_path(self, image: bytes) -> Path | None:
        if self.cache_dir is None:
            return None
        key = stable_id(OCR_RULES_VERSION, sha256_bytes(image), self.languages, self._probe[2], self.min_confidence)
        return self.cache_dir / key[:2] / f"{key}.json"

    def recognize(self, image: bytes, timeout_s: float | None = None) -> OcrResult:
        """OCR one encoded image, from the cache when it was read before; raise when Tesseract cannot run, and
        ``OcrTimeout`` (the Tesseract process killed) when it takes longer than ``timeout_s`` (default: the engine's)."""
        reason = self.unavailable_reason()
        if reason:
            raise RuntimeError(reason)
        cache_path = self._cache_path(image)
        cached = _read_cached(cache_path)
        if cached is not None:
            return cached
        limit = self.timeout_s if timeout_s is None else min(timeout_s, self.timeout_s)
        result = self._run(image, time.monotonic() + limit, limit)
        if cache_path is not None:
            atomic_write_bytes(cache_path, json.dumps(asdict(result), ensure_ascii=False).encode("utf-8"))
        return result

    def _run(self, image: bytes, deadline: float, limit: float) -> OcrResult:
        from PIL import Image

        with Image.open(io.BytesIO(image)) as img:
            img = flatten(img)
        langs = self.languages
        result = self._recognize_with(img, langs, deadline, limit)
        languages = langs.split("+")
        if len(languages) > 1 and stray_jamo(result.text):
            # Latin text read with Korean as the primary model comes out as stray jamo
            # ("DECEL" -> "0ㅁ0ㄷ<ㄷㄴ"); retry with the languages rotated and keep the cleaner read.
            rotated_langs = "+".join(languages[1:] + languages[:1])
            rotated = self._recognize_with(img, rotated_langs, deadline, limit)
            if (stray_jamo(rotated.text), -rotated.mean_confidence) < (stray_jamo(result.text), -result.mean_confidence):
                result, langs = rotated, rotated_langs
        rules = ruling_lines(img)
        if len(rules[0]) >= MIN_RULES[0] and len(rules[1]) >= MIN_RULES[1]:
            # Text in ruled cells (often on coloured fills) is missed by the page-layout read; one uniform block
            # with the rules painted out reads every cell, and its boxes are what the table reader needs.
            layout = self._recognize_with(without_lines(img), langs, deadline, limit, psm=6)
            if result.n_chars < LAYOUT_TEXT_SHARE * layout.n_chars:
                # the page-layout read lost most of the text (a page that is one ruled table can read as nothing)
                result = layout
            result = replace(result, words=layout.words)
        return result

    def _recognize_with(self, img, languages: str, deadline: float, limit: float, psm: int = 3) -> OcrResult:
        import pytesseract

        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise OcrTimeout(f"Tesseract did not finish within {limit:g} s (ocr.timeout_s)")
        try:
            data = pytesseract.image_to_data(img, lang=languages, config=f"--psm {psm}", output_type=pytesseract.Output.DICT,
                                             timeout=remaining)
        except RuntimeError as exc:
            if "timeout" not in str(exc).lower():
                raise
            raise OcrTimeout(f"Tesseract did not finish within {limit:g} s (ocr.timeout_s); process killed") from None
        lines: dict[tuple[int, int, int], list[tuple[str, float]]] = {}
        boxes = []
        for i, word in enumerate(data["text"]):
            word = (word or "").strip()
            if word:
                key = (data["block_num"][i], data["par_num"][i], data["line_num"][i])
                conf = max(float(data["conf"][i]), 0.0)
                lines.setdefault(key, []).append((word, conf))
                boxes.append((word, conf, data["left"][i], data["top"][i], data["width"][i], data["height"][i]))
        kept = [
            words for _, words in sorted(lines.items())
            if sum(c for _, c in words) / len(words) >= self.min_confidence
        ]
        confidences = [c for words in kept for _, c in words]
        text = "\n".join(" ".join(w for w, _ in words) for words in kept)
        n_chars = sum(ch.isalnum() for ch in text)
        mean = sum(confidences) / len(confidences) if confidences else 0.0
        return OcrResult(text=text, mean_confidence=round(mean, 2), n_words=len(confidences), n_chars=n_chars,
                         words=tuple(boxes))


MIN_RULES = (3, 2)
"""Horizontal and vertical ruling lines a picture needs before it gets the second, table-layout read."""
LAYOUT_TEXT_SHARE = 0.5
"""The table-layout read's text replaces the page-layout read's when that kept under this share of its letters
and digits."""
RULE_SHARE = 0.3
"""A pixel row (column) is a ruling line when one unbroken dark stroke covers at least this share of it."""
DARK = 160
"""Grey level below which a pixel counts as ink for finding ruling lines."""
INK_CHANNEL = 110
INK_GREY = 180
"""A pixel is ink for the table-layout read when its darkest channel is below ``INK_CHANNEL`` and its grey level
below ``INK_GREY``."""


def flatten(img):
    """The image as RGB (or greyscale) on white: transparent parts become white, not black (a semi-transparent
    cell fill converted naively turns dark and hides its text)."""
    from PIL import Image

    if img.mode in ("RGB", "L"):
        return img.copy()
    rgba = img.convert("RGBA")
    background = Image.new("RGBA", rgba.size, (255, 255, 255, 255))
    return Image.alpha_composite(background, rgba).convert("RGB")


def longest_runs(ink):
    """Per row of a boolean image, the length of its longest run of consecutive ink pixels."""
    import numpy as np

    edges = np.diff(ink.astype(np.int8), axis=1, prepend=0, append=0)
    start_rows, start_cols = np.nonzero(edges == 1)
    _, end_cols = np.nonzero(edges == -1)  # row-major order: the i-th end closes the i-th start
    longest = np.zeros(ink.shape[0], dtype=np.int64)
    np.maximum.at(longest, start_rows, end_cols - start_cols)
    return longest


def ruling_lines(img) -> tuple[list[int], list[int]]:
    """Pixel rows and columns that are ruling lines, adjacent ones counted once: (rows, columns). A ruling line is
    one unbroken stroke over ``RULE_SHARE`` of the width (height); a line of dense text, dark as it may be, is broken
    between its letters, so a scanned page of prose gets no table read."""
    import numpy as np

    ink = np.asarray(img.convert("L")) < DARK
    if ink.size == 0:
        return [], []

    def strokes(grid):  # only rows dark enough overall can hold such a stroke: the rest are not read
        candidates = np.flatnonzero(grid.mean(axis=1) >= RULE_SHARE)
        return candidates[longest_runs(grid[candidates]) >= RULE_SHARE * grid.shape[1]]

    rows, cols = strokes(ink), strokes(ink.T)

    def runs(index) -> list[int]:
        return [int(v) for i, v in enumerate(index) if i == 0 or index[i - 1] != v - 1]

    return runs(rows), runs(cols)


def ink_mask(img):
    """Pixels that are ink: dark in their darkest channel and not light overall, so coloured text (blue, orange,
    red) is ink and light or pastel cell fills (green, yellow, grey) are not; in a greyscale image (a rendered PDF
    page), pixels darker than ``DARK``."""
    import numpy as np

    grey = np.asarray(img.convert("L"))
    if img.mode == "L":  # no colour to tell coloured text from a fill: the ruling-line threshold
        return grey < DARK
    rgb = np.asarray(img.convert("RGB")).astype(np.int16)
    return (rgb.min(axis=2) < INK_CHANNEL) & (grey < INK_GREY)


def without_lines(img):
    """The image as black ink on white (``ink_mask``) with its ruling lines (mostly-ink pixel rows and columns)
    painted white."""
    import numpy as np
    from PIL import Image

    ink = ink_mask(img)
    rows = ink.mean(axis=1) >= RULE_SHARE
    cols = ink.mean(axis=0) >= RULE_SHARE
    ink[rows, :] = False
    ink[:, cols] = False
    return Image.fromarray(np.where(ink, 0, 255).astype(np.uint8))


def stray_jamo(text: str) -> int:
    """Count of standalone Hangul compatibility jamo: real Korean text is written in
    syllables, so these are almost always misreads of Latin letters."""
    return sum(1 for ch in text if "\u3131" <= ch <= "\u318e")


def make_ocr_engine(settings: Settings, layout: Layout) -> OcrEngine | None:
    """Tesseract with the configured languages, cached under the root; None when OCR is disabled."""
    if not settings.ocr.enabled:
        return None
    return TesseractOcr(settings.ocr.languages, settings.ocr.min_confidence, layout.ocr_cache_dir,
                        timeout_s=settings.ocr.timeout_s)
