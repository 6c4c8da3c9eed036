"""qa: the page(s) a QA pair cites: where its answer (its evidence) is, not every page of its chunk.

A chunk often runs over two or three pages; a reviewer who opens the cited page to check a pair must find the
answer there. The cited pages are, in order:

1. ``element``: the page of the evidence element the generator names (a table, chart or picture rule knows it;
   a table continued on later pages is cited on all of them);
2. ``answer``: the page(s) of the chunk whose text holds the answer (compared without spaces, case or punctuation,
   so Korean spacing and Markdown marks do not matter): where it stands whole; else, for a longer answer, the two
   pages its first and second half end and start (it runs over a page break), else the page rapidfuzz matches it
   best on; an answer found on several pages is cited on the one that also holds most of the question's words;
3. ``chunk``: neither found: the chunk's own pages, as before.

A slide keeps its slide number (a slide chunk is one slide); its source still says whether the answer was found.
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from rapidfuzz import fuzz

from schemas.chunks import ChunkRow
from schemas.elements import ElementRow

MIN_ANSWER_CHARS = 2
"""A shorter answer (compared form) is found on too many pages to locate."""
FUZZY_MIN_CHARS = 12
"""Answers at least this long (compared form) may match approximately (OCR, repaired spacing, a reworded mark)."""
FUZZY_CUTOFF = 90.0
"""rapidfuzz ``partial_ratio`` an approximate match needs."""
BREAK_MARGIN = 6
"""Characters an answer must take from each of two pages to be cited on both (it runs over the page break)."""
_NOT_COMPARED = re.compile(r"[\W_]+")
_WORD = re.compile(r"[^\W_]{2,}")


def compared(text: str) -> str:
    """``text`` as the locator compares it: NFKC, lower case, without spaces, punctuation or Markdown marks."""
    return _NOT_COMPARED.sub("", unicodedata.normalize("NFKC", text or "").lower())


@dataclass(frozen=True)
class ChunkPages:
    """The text of one chunk on each of its pages (slides: its slide), compared form, in page order."""

    unit: str
    """page | slide"""
    pages: tuple[tuple[tuple[int, int], str], ...]
    """((first, last), text): a page's elements, each table continued on later pages under its own span."""
    element_pages: Mapping[str, tuple[int, int]]
    """element id -> the first and last page (slide) it stands on, for the chunk's own elements."""
    fallback: tuple[int | None, int | None]
    """The chunk's own first and last page (or slide)."""


def _span(element: ElementRow) -> tuple[int, int]:
    """The first and last page of an element: a table continued on later pages (meta ``continued_pages``) spans them."""
    try:
        continued = json.loads(element.meta).get("continued_pages") if element.meta else None
    except (ValueError, AttributeError):
        continued = None
    later = [n for n in continued or [] if isinstance(n, int)]
    return element.number, max([element.number, *later])


def chunk_pages(chunk: ChunkRow, elements: Mapping[str, ElementRow]) -> ChunkPages:
    """The chunk's elements grouped by the page (slide) they stand on; picture OCR text counts as the page's text."""
    texts: dict[tuple[int, int], list[str]] = {}
    where: dict[str, tuple[int, int]] = {}
    for element_id in chunk.element_ids:
        element = elements.get(element_id)
        if element is None:
            continue
        where[element_id] = _span(element)
        texts.setdefault(where[element_id], []).extend(t for t in (element.text, element.ocr_text) if t)
    unit = "slide" if chunk.slide is not None else "page"
    fallback = (chunk.slide, chunk.slide) if unit == "slide" else (chunk.page_start, chunk.page_end)
    pages = tuple((n, compared("\n".join(texts[n]))) for n in sorted(texts))
    return ChunkPages(unit, pages, where, fallback)


def _question_words(question: str) -> set[str]:
    return {compared(w) for w in _WORD.findall(unicodedata.normalize("NFKC", question).lower())}


_Page = tuple[tuple[int, int], str]


def _best_by_question(candidates: Sequence[_Page], question: str) -> tuple[int, int]:
    """Of the pages that hold the answer, the one that also holds most of the question's words (the first on a tie)."""
    words = _question_words(question)
    return max(candidates, key=lambda page: (sum(w in page[1] for w in words), -page[0][0]))[0]


def _fuzzy_on(needle: str, pages: Sequence[_Page]) -> list[_Page]:
    """The pages whose text holds ``needle`` approximately (the best rapidfuzz score, at least ``FUZZY_CUTOFF``);
    none for a short needle."""
    if len(needle) < FUZZY_MIN_CHARS:
        return []
    scored = [(fuzz.partial_ratio(needle, text, score_cutoff=FUZZY_CUTOFF), (n, text)) for n, text in pages]
    best = max((s for s, _ in scored), default=0.0)
    return [p for s, p in scored if s and s >= best]


def _across_break(needle: str, pages: Sequence[_Page]) -> tuple[int, int] | None:
    """Consecutive pages where the answer starts at the end of one and goes on at the top of the next: its best
    rapidfuzz match in the first page's tail joined to the next page's head takes at least ``BREAK_MARGIN``
    characters from each side."""
    if len(needle) < FUZZY_MIN_CHARS:
        return None
    for (first, text), (second, following) in zip(pages, pages[1:]):
        if second[0] != first[1] + 1:
            continue
        tail = text[-len(needle):]
        match = fuzz.partial_ratio_alignment(needle, tail + following[:len(needle)], score_cutoff=FUZZY_CUTOFF)
        if match and match.dest_start <= len(tail) - BREAK_MARGIN and match.dest_end >= len(tail) + BREAK_MARGIN:
            return first[0], second[1]
    return None


def answer_pages(pages: ChunkPages, question: str, answer: str) -> tuple[int, int] | None:
    """The first and last page (slide) of the chunk whose text holds ``answer``; None when no page does."""
    needle = compared(answer)
    if len(needle) < MIN_ANSWER_CHARS or not pages.pages:
        return None
    exact = [p for p in pages.pages if needle in p[1]]
    spanning = None if exact else _across_break(needle, pages.pages)
    if spanning:
        return spanning
    found = exact or _fuzzy_on(needle, pages.pages)
    if not found:
        return None
    return found[0][0] if len(found) == 1 else _best_by_question(found, question)


def cite(pages: ChunkPages, question: str, answer: str, evidence_element_id: str | None) -> dict[str, object]:
    """The pair's ``page_start``/``page_end`` (a slide's stay its chunk's) and ``page_source``: element, answer or chunk."""
    if evidence_element_id in pages.element_pages:
        found, source = pages.element_pages[evidence_element_id], "element"
    else:
        located = answer_pages(pages, question, answer)
        found, source = (located, "answer") if located else (pages.fallback, "chunk")
    if pages.unit == "slide":
        return {"page_source": source}
    return {"page_start": found[0], "page_end": found[1], "page_source": source}
