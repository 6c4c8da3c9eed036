"""Format backends (one per format) behind one signature, and the dispatcher."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from tasks.ingest.extract.base import DocumentError, ExtractContext, ExtractedDocument

Backend = Callable[[Path, ExtractContext], ExtractedDocument]


def _pptx(path: Path, ctx: ExtractContext) -> ExtractedDocument:
    from tasks.ingest.extract.pptx import extract_pptx

    return extract_pptx(path, ctx)


def _pdf(path: Path, ctx: ExtractContext) -> ExtractedDocument:
    from tasks.ingest.extract.pdf import extract_pdf

    return extract_pdf(path, ctx)


BACKENDS: dict[str, Backend] = {"pptx": _pptx, "pdf": _pdf}
SUPPORTED_SUFFIXES = {".pptx": "pptx", ".pdf": "pdf"}
KNOWN_UNSUPPORTED_SUFFIXES = {
    ".ppt", ".pps", ".ppsx", ".pptm", ".potx", ".key", ".odp",
    ".doc", ".docx", ".odt", ".rtf", ".hwp", ".hwpx", ".xls", ".xlsx", ".txt", ".html", ".htm",
}


def format_of(path: Path) -> str:
    """The format of a file by its suffix: ``pptx``, ``pdf`` or ``unknown``."""
    return SUPPORTED_SUFFIXES.get(path.suffix.lower(), "unknown")


def extract(path: Path, ctx: ExtractContext) -> ExtractedDocument:
    """Run the backend for the file's format; unsupported formats raise ``DocumentError``."""
    fmt = format_of(path)
    if fmt == "unknown":
        supported = ", ".join(sorted(SUPPORTED_SUFFIXES))
        raise DocumentError(f"{path.name}: unsupported file type {path.suffix or '(none)'!r}; supported: {supported}")
    return BACKENDS[fmt](path, ctx)


__all__ = ["DocumentError", "ExtractContext", "ExtractedDocument", "extract", "format_of", "SUPPORTED_SUFFIXES"]
