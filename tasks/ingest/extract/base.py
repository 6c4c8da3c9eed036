"""What every format backend receives and returns.

A backend is a function ``(path, ExtractContext) -> ExtractedDocument``. It never
raises for problems inside a document: what it cannot read becomes a warning (status
``partial``); only a file that cannot be opened at all raises ``DocumentError``, which
the dispatcher turns into a ``failed`` document row.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from ragprep.engines.ocr import OcrEngine, OcrResult
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
        try:
            result = self.ocr.recognize(image)
        except Exception as exc:  # one bad image must not sink the document
            return "error", None, f"OCR failed: {type(exc).__name__}: {exc}"
        if result.n_chars < self.settings.ocr.min_chars or result.mean_confidence < self.settings.ocr.min_mean_confidence:
            return "no_text", result, None
        return "ok", result, None


def dumps_meta(**facts: object) -> str:
    """The facts that are not None as a key-sorted JSON object."""
    return json.dumps({k: v for k, v in facts.items() if v is not None}, ensure_ascii=False, sort_keys=True)


def rel_source(path: Path) -> str:
    """The path as a POSIX string."""
    return path.as_posix()
