"""Elements to Markdown chunks: one slide = one chunk, one chapter = one chunk.

Chapters of a PDF come from its outline (the top level, or the sections of a chapter
that dominates the book), else from detected headings, else from fixed page windows.
A chapter over the token budget is split at its sub-headings, then between elements,
then between sentences: never inside a sentence.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache

from ragprep.ids import chunk_id_for
from ragprep.settings import Settings
from ragprep.tokens import count_tokens
from schemas.chunks import ChunkRow
from schemas.elements import ElementRow
from tasks.ingest.extract.base import OutlineEntry

HEADING_TOLERANCE_PT = 20.0


@dataclass(frozen=True)
class ChapterStart:
    title: str
    page: int
    y: float
    heading_path: tuple[str, ...]
    unit: str = "chapter"


@dataclass
class _Section:
    title: str
    heading_path: list[str]
    elements: list[ElementRow] = field(default_factory=list)


def _normalise(text: str) -> str:
    return re.sub(r"[\W_]+", " ", text).strip().lower()


def _heading_level(element: ElementRow) -> int | None:
    if element.kind != "title" or not element.meta:
        return None
    return json.loads(element.meta).get("heading_level")


def element_markdown(element: ElementRow, heading_offset: int = 1) -> str:
    """How one element reads inside a chunk."""
    if element.kind == "title":
        level = _heading_level(element) or 1
        return "#" * min(6, level + heading_offset) + " " + element.text
    if element.kind == "notes":
        return "**Speaker notes**\n\n" + element.text
    return element.text


def _flags(elements: Sequence[ElementRow]) -> dict[str, bool]:
    kinds = {e.kind for e in elements}
    return {
        "has_table": "table" in kinds,
        "has_image": "picture" in kinds,
        "has_chart": "chart" in kinds,
        "has_ocr": any(e.ocr_status == "ok" for e in elements),
    }


def slide_chunks(doc_id: str, source_path: str, elements: Sequence[ElementRow]) -> list[ChunkRow]:
    """One chunk per slide: its title as the heading, then its other elements in order."""
    by_slide: dict[int, list[ElementRow]] = {}
    for element in elements:
        by_slide.setdefault(element.number, []).append(element)
    chunks = []
    for number in sorted(by_slide):
        rows = sorted(by_slide[number], key=lambda e: e.order)
        title = next((e.text for e in rows if e.kind == "title"), f"Slide {number}")
        body = [element_markdown(e) for e in rows if e.kind != "title" and e.text]
        markdown = "\n\n".join([f"# {title}"] + body)
        chunks.append(
            ChunkRow(
                chunk_id=chunk_id_for(doc_id, "slide", number, number, 0, title),
                doc_id=doc_id,
                source_path=source_path,
                unit="slide",
                slide=number,
                title=title,
                heading_path=[title],
                markdown=markdown,
                token_count=count_tokens(markdown),
                element_ids=[e.element_id for e in rows],
                **_flags(rows),
            )
        )
    return chunks


def select_outline_chapters(
    outline: Sequence[OutlineEntry], n_pages: int, dominant_share: float, dominant_min_pages: int = 10
) -> list[ChapterStart]:
    """Outline entries that make chapter-sized chunks.

    The top level is used, except that a top-level entry that dominates the book (the
    only one, or one spanning more than ``dominant_share`` of the pages) and spans at
    least ``dominant_min_pages`` pages is followed by its direct children: the entry
    keeps its opening pages and each child section becomes a chunk of its own.
    """
    entries = [e for e in outline if 1 <= e.page <= n_pages]
    if not entries:
        return []
    top = min(e.level for e in entries)

    def start(entry: OutlineEntry, path: tuple[str, ...]) -> ChapterStart:
        return ChapterStart(entry.title, entry.page, entry.y or 0.0, path)

    chapters: list[ChapterStart] = []
    top_indices = [i for i, e in enumerate(entries) if e.level == top]
    for n, i in enumerate(top_indices):
        entry = entries[i]
        end_index = top_indices[n + 1] if n + 1 < len(top_indices) else len(entries)
        end_page = entries[end_index].page if end_index < len(entries) else n_pages + 1
        span = end_page - entry.page
        children = [e for e in entries[i + 1 : end_index] if e.level == top + 1]
        dominant = (len(top_indices) == 1 or span / max(n_pages, 1) > dominant_share) and span >= dominant_min_pages
        chapters.append(start(entry, (entry.title,)))
        if dominant and children:
            chapters.extend(start(child, (entry.title, child.title)) for child in children)
    return chapters


def heading_chapters(elements: Sequence[ElementRow]) -> list[ChapterStart]:
    """Chapters at the top level of detected headings (that level must occur twice).

    Headings that follow each other with no text between them (a title set on several
    lines) make one chapter whose title joins them.
    """
    headings = {e.element_id: _heading_level(e) for e in elements if _heading_level(e)}
    for level in sorted(set(headings.values())):
        if sum(1 for lvl in headings.values() if lvl == level) < 2:
            continue
        starts: list[ChapterStart] = []
        body_since_start = True
        for element in elements:
            if headings.get(element.element_id) == level:
                text = element.text[:200]
                if starts and not body_since_start:
                    last = starts[-1]
                    title = f"{last.title} {text}"[:200]
                    starts[-1] = ChapterStart(title, last.page, last.y, (title,))
                else:
                    y = element.bbox[1] if element.bbox else 0.0
                    starts.append(ChapterStart(text, element.number, y, (text,)))
                body_since_start = False
            elif element.kind != "title" and element.text:
                body_since_start = True
        return starts
    return []


def _position(element: ElementRow) -> tuple[int, float]:
    if element.bbox:
        return element.number, (element.bbox[1] + element.bbox[3]) / 2
    return element.number, float("inf") if element.kind == "ocr_page" else 0.0


def _assign(elements: Sequence[ElementRow], starts: Sequence[ChapterStart]) -> tuple[list[ElementRow], list[list[ElementRow]]]:
    front: list[ElementRow] = []
    groups: list[list[ElementRow]] = [[] for _ in starts]
    ordered = sorted(starts, key=lambda s: (s.page, s.y))
    index_of = {id(s): i for i, s in enumerate(starts)}
    for element in elements:
        page, y = _position(element)
        owner = None
        for s in ordered:
            if (s.page, s.y - HEADING_TOLERANCE_PT) <= (page, y):
                owner = s
            else:
                break
        if owner is None:
            front.append(element)
        else:
            groups[index_of[id(owner)]].append(element)
    return front, groups


@lru_cache(maxsize=1)
def _segmenter():
    import pysbd

    return pysbd.Segmenter(language="en", clean=False)


def split_sentences(text: str) -> list[str]:
    """Sentences of a paragraph (pysbd rules; Korean sentence ends are handled by them too)."""
    return [s for s in _segmenter().segment(text) if s.strip()]


def _pieces(elements: Sequence[ElementRow], budget: int) -> list[tuple[ElementRow, str]]:
    """Element texts, with any single element over budget cut between sentences."""
    pieces: list[tuple[ElementRow, str]] = []
    for element in elements:
        text = element_markdown(element)
        if not text:
            continue
        if count_tokens(text) <= budget or element.kind in ("table", "chart"):
            pieces.append((element, text))
            continue
        current = ""
        for sentence in split_sentences(text):
            candidate = (current + " " + sentence).strip() if current else sentence.strip()
            if current and count_tokens(candidate) > budget:
                pieces.append((element, current))
                current = sentence.strip()
            else:
                current = candidate
        if current:
            pieces.append((element, current))
    return pieces


def _split_sections(title: str, path: list[str], elements: Sequence[ElementRow]) -> list[_Section]:
    """Cut at sub-headings (title elements other than the chapter heading itself)."""
    sections = [_Section(title, path)]
    for element in elements:
        if element.kind == "title" and _normalise(element.text) != _normalise(title) and sections[-1].elements:
            sections.append(_Section(element.text, path + [element.text]))
        sections[-1].elements.append(element)
    return sections


def _pack(title: str, path: list[str], elements: Sequence[ElementRow], budget: int) -> list[tuple[str, list[str], list[tuple[ElementRow, str]]]]:
    """Greedy packing of sections, then pieces, into parts that fit the budget."""
    heading_cost = count_tokens(f"# {title}") + 2
    room = max(budget - heading_cost, 20)
    parts: list[tuple[str, list[str], list[tuple[ElementRow, str]]]] = []
    current: list[tuple[ElementRow, str]] = []
    current_title, current_path, used = title, path, 0
    for section in _split_sections(title, path, elements):
        for element, text in _pieces(section.elements, room):
            cost = count_tokens(text) + 1
            if current and used + cost > room:
                parts.append((current_title, current_path, current))
                current, used = [], 0
                current_title, current_path = section.title, section.heading_path
            if not current:
                current_title, current_path = section.title, section.heading_path
            current.append((element, text))
            used += cost
    if current:
        parts.append((current_title, current_path, current))
    return parts


@dataclass(frozen=True)
class _Book:
    """The document a chapter's chunks belong to, and the token budget of one chunk."""

    doc_id: str
    source_path: str
    budget: int


def _chapter_rows(
    book: _Book, unit: str, chapter_index: int | None, title: str, path: list[str], elements: Sequence[ElementRow]
) -> list[ChunkRow]:
    doc_id, source_path, budget = book.doc_id, book.source_path, book.budget
    if not elements:
        return []
    body = list(elements)
    while body and body[0].kind == "title" and _normalise(body[0].text) in _normalise(title):
        body.pop(0)  # the chapter heading itself (possibly set on several lines)
    body = [e for e in body if not (e.kind == "title" and _normalise(e.text) == _normalise(title))]
    whole = "\n\n".join([f"# {title}"] + [element_markdown(e) for e in body if e.text])
    if count_tokens(whole) <= budget:
        parts = [(title, path, [(e, element_markdown(e)) for e in body if e.text])]
    else:
        parts = _pack(title, path, body, budget)
    rows = []
    for part_index, (part_title, part_path, pieces) in enumerate(parts):
        shown = title if part_title == title else f"{title} / {part_title}"
        markdown = "\n\n".join([f"# {shown}"] + [text for _, text in pieces])
        members = list(dict.fromkeys(e.element_id for e, _ in pieces))
        member_rows = [e for e in elements if e.element_id in set(members)]
        pages = [e.number for e in member_rows] or [e.number for e in elements]
        rows.append(
            ChunkRow(
                chunk_id=chunk_id_for(doc_id, unit, min(pages), max(pages), part_index, shown),
                doc_id=doc_id,
                source_path=source_path,
                unit=unit,
                page_start=min(pages),
                page_end=max(pages),
                chapter_index=chapter_index,
                part_index=part_index,
                title=shown,
                heading_path=part_path,
                markdown=markdown,
                token_count=count_tokens(markdown),
                element_ids=members,
                **_flags(member_rows),
            )
        )
    return rows


def pdf_chunks(
    doc_id: str,
    source_path: str,
    elements: Sequence[ElementRow],
    outline: Sequence[OutlineEntry],
    n_pages: int,
    settings: Settings,
) -> list[ChunkRow]:
    """Chunks per chapter (from the outline, else from headings) split to the token budget, else per window of pages."""
    ordered = sorted(elements, key=lambda e: (e.number, e.order))
    book = _Book(doc_id, source_path, settings.chunking.max_tokens)
    starts = select_outline_chapters(
        outline, n_pages, settings.pdf.dominant_chapter_share, settings.pdf.dominant_chapter_min_pages
    ) or heading_chapters(ordered)
    rows: list[ChunkRow] = []
    if starts:
        front, groups = _assign(ordered, starts)
        if any(e.text for e in front):
            rows += _chapter_rows(book, "pages", None, "Front matter", ["Front matter"], front)
        for index, (start, members) in enumerate(zip(starts, groups)):
            rows += _chapter_rows(book, start.unit, index, start.title, list(start.heading_path), members)
        return rows
    window = settings.pdf.fallback_window
    for first in range(1, n_pages + 1, window):
        last = min(first + window - 1, n_pages)
        members = [e for e in ordered if first <= e.number <= last]
        if any(e.text for e in members):
            title = f"Pages {first}-{last}" if first != last else f"Page {first}"
            rows += _chapter_rows(book, "pages", None, title, [title], members)
    return rows


def build_chunks(
    doc_id: str,
    source_path: str,
    format: str,
    elements: Sequence[ElementRow],
    outline: Sequence[OutlineEntry],
    n_units: int,
    settings: Settings,
) -> list[ChunkRow]:
    """The chunks of one document: per slide for a .pptx, per chapter or page window otherwise."""
    if format == "pptx":
        return slide_chunks(doc_id, source_path, elements)
    return pdf_chunks(doc_id, source_path, elements, outline, n_units, settings)
