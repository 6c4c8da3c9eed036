"""Which document a section belongs to, read off the chunks' section paths: of two documents that print the same
text, the one whose own section it is (``owned_chunk_ids``)."""

from __future__ import annotations

from collections.abc import Sequence

from schemas.chunks import ChunkRow
from tasks.ingest.extract.pdf_sections import section_key

PRINCIPAL_SHARE = 0.5
"""A top-level section holding at least this share of a document's text (tokens) is what the document is about."""


def principal_sections(chunks: Sequence[ChunkRow]) -> dict[str, str]:
    """Per document (of page-based chunks), the ``section_key`` of its principal top-level section: the one holding at
    least ``PRINCIPAL_SHARE`` of its tokens. A regulation extract printed from a larger volume carries the end of the
    standard before it and the opening of the one after (the FMVSS 214 pages end with the start of § 571.216); those
    sections are small, and belong to the document whose principal section they are. Documents without one (a book
    of many chapters, a deck) are absent."""
    sizes: dict[str, dict[str, int]] = {}
    for chunk in chunks:
        if chunk.unit == "slide" or (chunk.unit == "pages" and chunk.chapter_index is None):
            continue  # slides, front matter and page windows are no section of the document's structure
        top = chunk.heading_path[0] if chunk.heading_path else chunk.title
        per_doc = sizes.setdefault(chunk.doc_id, {})
        per_doc[section_key(top)] = per_doc.get(section_key(top), 0) + chunk.token_count
    totals: dict[str, int] = {}
    for chunk in chunks:
        totals[chunk.doc_id] = totals.get(chunk.doc_id, 0) + chunk.token_count
    out = {}
    for doc_id, per_doc in sizes.items():
        key, size = max(per_doc.items(), key=lambda item: item[1])
        if size >= PRINCIPAL_SHARE * totals[doc_id]:
            out[doc_id] = key
    return out


def owned_chunk_ids(chunks: Sequence[ChunkRow]) -> set[str]:
    """Ids of the chunks that lie in their document's principal section (``principal_sections``): of two documents
    printing the same text, the one whose own section it is."""
    principal = principal_sections(chunks)
    return {
        c.chunk_id
        for c in chunks
        if c.doc_id in principal and c.unit != "slide" and c.heading_path
        and section_key(c.heading_path[0]) == principal[c.doc_id]
    }
