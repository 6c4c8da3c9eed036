"""Parts of a PDF's pages that are no section of its text: tables of contents, figure and table captions, and a
cover's title block. The chunker (``tasks.ingest.chunking``) lets none of them open a section."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence

from schemas.elements import ElementRow
from tasks.ingest.extract.pdf_sections import is_caption, parse_label


def font_size(element: ElementRow) -> float | None:
    """The font size an element's text is set in, when the extractor recorded it."""
    return json.loads(element.meta).get("font_size") if element.meta else None


TOC_LINE_RE = re.compile(r"(?:\.\s?){4,}\s*\d+\s*$|…{2,}\s*\d+\s*$")
"""A table-of-contents entry: dot leaders, then (usually) a page number."""


TOC_HEADING_RE = re.compile(r"^\s*(table of )?contents\b|^\s*목\s*차\s*$|^\s*차\s*례\s*$", re.IGNORECASE)


def toc_pages(elements: Sequence[ElementRow]) -> set[int]:
    """Pages holding a table of contents: a "Contents" heading, or three or more entries ending in a page
    number after dot leaders."""
    counts: dict[int, int] = {}
    pages: set[int] = set()
    for element in elements:
        if element.kind not in ("title", "text"):
            continue
        if TOC_HEADING_RE.match(element.text):
            pages.add(element.number)
        if TOC_LINE_RE.search(element.text):
            counts[element.number] = counts.get(element.number, 0) + 1
    return pages | {page for page, n in counts.items() if n >= 3}


def caption_lines(elements: Sequence[ElementRow]) -> set[str]:
    """Element ids of figure and table captions (in reading order): lines opening "Figure 4 …", "Table 1 …",
    "[그림 1]" (``is_caption``), and the unnumbered heading lines right after a caption set as a heading, which
    continue it ("Figure 14a … Setting is SP–16" / "Degrees")."""
    ids: set[str] = set()
    in_caption = False
    for element in elements:
        if element.kind not in ("title", "text"):
            in_caption = False
        elif element.text:
            continued = in_caption and element.kind == "title" and parse_label(element.text, heading=True) is None
            if is_caption(element.text) or continued:
                ids.add(element.element_id)
            in_caption = element.kind == "title" and (is_caption(element.text) or continued)
    return ids


def cover_headings(elements: Sequence[ElementRow]) -> set[str]:
    """Element ids of a cover's title block: the unnumbered headings of the document's first page (before any numbered
    section opens there) when one of them is set larger than every heading after that page (tables of contents aside)
    and the document goes on past it. That block names the whole document ("Crashworthiness Evaluation Roof Strength
    Test Protocol" / "Version V" / "November 2022"): it is the document's title, not a section that holds the others,
    so it titles only the cover and the pages before the first section (``chunking.section_paths``), and the paths of the
    sections start below it. A one-page document, or a first page whose largest heading recurs later ("Agreement",
    then "1. Scope" in the same type), has no cover."""
    texts = [e for e in elements if e.text]
    if not texts:
        return set()
    first = min(e.number for e in texts)
    toc = toc_pages(elements)
    later = [font_size(e) or 0.0 for e in texts if e.kind == "title" and e.number > first and e.number not in toc]
    if len({e.number for e in texts}) < 2:
        return set()
    block: list[ElementRow] = []
    captions = caption_lines(elements)
    for element in (e for e in texts if e.number == first and e.element_id not in captions):
        if parse_label(element.text, heading=element.kind == "title") is not None:
            break  # a numbered section opens on the first page: the page is the text's, not a cover
        if element.kind == "title":
            block.append(element)
    if not block or max(font_size(e) or 0.0 for e in block) <= max(later, default=0.0):
        return set()
    return {e.element_id for e in block}
