"""Size caps at ingest: no element or chunk text larger than ``limits`` reaches the later stages.

A slide can hold megabytes of text in a few runs (a pasted log, a generated table); every later stage
(correction, QA rules, quotes, embedders, BM25) costs time in proportion to the text it is given. Texts
over the caps are cut here, once, and each cut is a warning on the document (its status ``partial``),
so what was left out is recorded as data and never silently lost.
"""

from __future__ import annotations

from collections.abc import Sequence

from ragprep.settings import LimitsSettings
from ragprep.tokens import count_tokens, cut_to_tokens
from schemas.chunks import ChunkRow
from schemas.elements import ElementRow


def _cut_chars(text: str, limit: int) -> str:
    """``text`` cut to at most ``limit`` characters, at the last white space of the final tenth when there is one."""
    head = text[:limit]
    space = max(head.rfind(" ", limit - limit // 10), head.rfind("\n", limit - limit // 10))
    return (head[:space] if space > 0 else head).rstrip()


def cap_elements(elements: Sequence[ElementRow], limits: LimitsSettings) -> tuple[list[ElementRow], list[str]]:
    """Elements whose text is over ``limits.max_element_chars`` cut to it, and one warning per cut element."""
    capped: list[ElementRow] = []
    warnings: list[str] = []
    for element in elements:
        if len(element.text) <= limits.max_element_chars:
            capped.append(element)
            continue
        text = _cut_chars(element.text, limits.max_element_chars)
        warnings.append(
            f"{element.unit} {element.number}: {element.kind} element of {len(element.text):,} characters cut to "
            f"{len(text):,} (limits.max_element_chars {limits.max_element_chars:,})"
        )
        capped.append(element.model_copy(update={"text": text}))
    return capped, warnings


def cap_chunks(chunks: Sequence[ChunkRow], limits: LimitsSettings) -> tuple[list[ChunkRow], list[str]]:
    """Chunks over ``limits.max_chunk_tokens`` cut to it (token rule of ``ragprep.tokens``), one warning per cut."""
    capped: list[ChunkRow] = []
    warnings: list[str] = []
    for chunk in chunks:
        if chunk.token_count <= limits.max_chunk_tokens:
            capped.append(chunk)
            continue
        markdown = cut_to_tokens(chunk.markdown, limits.max_chunk_tokens)
        where = f"slide {chunk.slide}" if chunk.unit == "slide" else f"chunk {chunk.title!r}"
        warnings.append(
            f"{where}: chunk of {chunk.token_count:,} tokens cut to {limits.max_chunk_tokens:,} "
            "(limits.max_chunk_tokens)"
        )
        capped.append(chunk.model_copy(update={"markdown": markdown, "token_count": count_tokens(markdown)}))
    return capped, warnings
