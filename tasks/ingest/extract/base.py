"""What every format backend receives and returns.

A backend is a function ``(path, ExtractContext) -> ExtractedDocument``. It never
raises for problems inside a document: what it cannot read becomes a warning (status
``partial``); only a file that cannot be opened at all raises ``DocumentError``, which
the dispatcher turns into a ``failed`` document row.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from ragprep.engines.ocr import OcrEngine, OcrResult, OcrTimeout
from ragprep.settings import Settings
from ragprep.storage import Layout
from schemas.elements import ElementRow, OcrStatus

ProgressCallback = Callable[[int, int], None]
"""Called with (units done, units total) as slides/pages are processed."""


class DocumentError(Exception):
    """The file cannot be read at all; the message is the one-line reason."""


@dataclass(frozen=True)
class OutlineEntry:
    level: int
    title: str
    page: int
    """1-based page the entry points to."""
    y: float | None = None
    """Vertical position of the destination on that page, in points from the top."""


@dataclass
class ExtractedDocument:
    format: str
    n_units: int
    title: str | None
    elements: list[ElementRow]
    outline: list[OutlineEntry] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    n_ocr_units: int = 0
    extractor: str = ""


@dataclass
class ExtractContext:
    doc_id: str
    source_path: str
    settings: Settings
    layout: Layout
    ocr: OcrEngine | None
    progress: ProgressCallback | None = None
    ocr_deadline: float | None = field(default=None, repr=False)
    """``time.monotonic()`` after which this document gets no more OCR (set at the first OCR call)."""
    ocr_skipped: int = field(default=0, repr=False)
    """Pictures/pages not OCR'd because the document's OCR deadline had passed."""

    def report(self, done: int, total: int) -> None:
        """Pass (done, total) units to the progress callback, if any."""
        if self.progress is not None:
            self.progress(done, total)

    def ocr_image(self, image: bytes) -> tuple[OcrStatus, OcrResult | None, str | None]:
        """OCR with the configured engine: (status, result, warning)."""
        if not self.settings.ocr.enabled:
            return "disabled", None, None
        if self.ocr is None:
            return "unavailable", None, None
        reason = self.ocr.unavailable_reason()
        if reason:
            return "unavailable", None, None
        remaining = self._ocr_time_left()
        if remaining <= 0:
            self.ocr_skipped += 1
            first = self.ocr_skipped == 1
            budget = self.settings.ocr.document_deadline_s
            return "error", None, (f"OCR skipped: the document's OCR deadline of {budget:g} s "
                                   "(ocr.document_deadline_s) has passed; later pictures/pages are not OCR'd") if first else None
        try:
            result = self.ocr.recognize(image, timeout_s=remaining)
        except OcrTimeout as exc:
            return "error", None, f"OCR timed out: {exc}"
        except Exception as exc:  # one bad image must not sink the document
            return "error", None, f"OCR failed: {type(exc).__name__}: {exc}"
        if result.n_chars < self.settings.ocr.min_chars or result.mean_confidence < self.settings.ocr.min_mean_confidence:
            return "no_text", result, None
        return "ok", result, None


    def _ocr_time_left(self) -> float:
        """Seconds of OCR left to this document; its clock starts at the first OCR call."""
        now = time.monotonic()
        if self.ocr_deadline is None:
            self.ocr_deadline = now + self.settings.ocr.document_deadline_s
        return self.ocr_deadline - now


def dumps_meta(**facts: object) -> str:
    """The facts that are not None as a key-sorted JSON object."""
    return json.dumps({k: v for k, v in facts.items() if v is not None}, ensure_ascii=False, sort_keys=True)


def rel_source(path: Path) -> str:
    """The path as a POSIX string."""
    return path.as_posix()
