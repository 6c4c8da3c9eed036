"""Content-derived, stable identifiers.

The same bytes and the same settings always give the same ids, so a re-run over
unchanged documents reproduces every id and a dataset version id can be derived
from them.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

ID_LENGTH = 16


def sha256_bytes(data: bytes) -> str:
    """The hex SHA-256 of ``data``."""
    return hashlib.sha256(data).hexdigest()


def sha256_file(path: Path, chunk_size: int = 1 << 20) -> str:
    """The hex SHA-256 of a file's content, read in chunks."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while block := handle.read(chunk_size):
            digest.update(block)
    return digest.hexdigest()


def stable_id(*parts: object) -> str:
    """A short hex id from an ordered tuple of parts (joined unambiguously)."""
    digest = hashlib.sha256()
    for part in parts:
        encoded = str(part).encode("utf-8")
        digest.update(len(encoded).to_bytes(8, "big"))
        digest.update(encoded)
    return digest.hexdigest()[:ID_LENGTH]


def doc_id_for(content_sha256: str) -> str:
    """A document's id: the first ``ID_LENGTH`` hex digits of its content SHA-256."""
    return content_sha256[:ID_LENGTH]


def element_id_for(doc_id: str, unit: str, number: int, order: int, kind: str) -> str:
    """An element's id from its document, unit (slide or page), unit number, order and kind."""
    return stable_id("element", doc_id, unit, number, order, kind)


def chunk_id_for(doc_id: str, unit: str, start: int, end: int, part: int, title: str) -> str:
    """A chunk's id from its document, unit, first and last unit number, part and title."""
    return stable_id("chunk", doc_id, unit, start, end, part, title)


def quote_id_for(doc_id: str, page_id: int, layout_id: int) -> str:
    """A quote's identity is (document, page, layout region), as in MMDocRAG."""
    return stable_id("quote", doc_id, page_id, layout_id)
