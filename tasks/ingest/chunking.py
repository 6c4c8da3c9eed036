"""Elements to Markdown chunks: one slide = one chunk, one chapter = one chunk.

Chapters of a PDF come from its outline (the top level, or the sections of a chapter
that dominates the book; placeholder bookmarks such as "책갈피" are ignored), else from the
top level of its section tree (headings and numbered labels: § 571.209, Annex 3, S5.1, 5.2.1,
제3조), else from fixed page windows. A chapter over the token budget is cut along its section
tree, so every chunk is titled by the section it lies in, then between elements, then between
sentences: never inside a sentence.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence, Set
from dataclasses import dataclass, field
from functools import lru_cache

from ragprep.engines.hyphens import DEFAULT, KEEP, Hyphenation
from ragprep.engines.pdf import LINE_END_HYPHEN_RE
from ragprep.ids import chunk_id_for
from ragprep.settings import Settings
from ragprep.tokens import count_tokens
from schemas.chunks import ChunkRow
from schemas.elements import ElementRow
from tasks.ingest.extract.base import OutlineEntry
from tasks.ingest.extract.pdf_sections import (
    LABEL_RE,
    Label,
    SectionTree,
    is_caption,
    parse_label,
    section_title,
)
from tasks.ingest.page_roles import TOC_LINE_RE, caption_lines, cover_headings, font_size, toc_pages

PLACEHOLDER_RE = re.compile(r"^\s*(책갈피|bookmark|untitled|제목\s*없음)\s*\d*\s*$", re.IGNORECASE)

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


def _unlabelled(text: str) -> str:
    """Normalised text, less a leading numbered-section label when the rest is a heading's words."""
    label = LABEL_RE.match(text)
    rest = text[label.end():] if label and parse_label(text, heading=True) else text
    return _normalise(rest) or _normalise(text)


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


@dataclass(frozen=True)
class _Book:
    """The document a chapter's chunks belong to, and the token budget of one chunk."""

    doc_id: str
    source_path: str
    budget: int
    hyphens: Hyphenation | None = None
    """The document's words, deciding a hyphen at a column or page break (``joined_paragraphs``)."""


Node = tuple[int, str, "Label | None"]
"""A section of the tree: (id, title, numbered label or None)."""


def _captions_as_text(elements: Sequence[ElementRow]) -> list[ElementRow]:
    """The elements with captions set as headings read as text: a chunk shows them as a line under the figure's
    section, not as a heading that passages would take into their section path."""
    ids = caption_lines(elements)
    return [e.model_copy(update={"kind": "text"}) if e.kind == "title" and e.element_id in ids else e for e in elements]


def _continues(previous: ElementRow | None, element: ElementRow, label: Label | None, first_page: int) -> bool:
    """Whether an unnumbered heading continues the heading just before it: no text between, and set no smaller or
    on the first page (a title block's lines: title, subtitle, "Revision 3", a date)."""
    if previous is None or element.kind != "title" or label is not None:
        return False
    before, size = font_size(previous), font_size(element)
    return before is None or size is None or size >= before - 0.5 or previous.number == first_page


def section_paths(elements: Sequence[ElementRow], cover: Set[str] = frozenset()) -> list[tuple[Node, ...]]:
    """Per element (in reading order), the sections it lies in, outermost first.

    Headings (title elements) and paragraphs opening with a numbered label (S5.1, 5.2.1, § 571.209,
    Annex 3, 제3조) open sections; ``SectionTree`` closes the open ones a new section does not lie in.
    An unnumbered heading right after a heading, with no text between them and set no smaller, continues it
    ("Annex 12" / "Corrosion test"); a smaller one opens a sub-section ("MEASUREMENTS AND OBSERVATIONS" / "Test weight"),
    except in the first page's title block.
    Entries of a table of contents (dot leaders, or a page of them) open nothing, nor do figure and table
    captions ("Figure 4 Vehicle Position ...", set bold as a heading, and the heading lines right after that
    continue one: "Degrees").
    The ``cover`` headings (element ids: ``cover_headings``) open one section, the document's title, which the next
    section closes: it heads the cover and the pages before the first section, never the sections.
    """
    tree = SectionTree()
    cover_node: int | None = None
    nodes: list[Node] = []
    paths: list[tuple[Node, ...]] = []
    previous: ElementRow | None = None  # the heading just read, with no text after it yet
    toc = toc_pages(elements)
    captions = caption_lines(elements)
    first_page = min((e.number for e in elements if e.text), default=0)
    for element in elements:
        label = None
        if element.kind in ("title", "text") and element.number not in toc and not TOC_LINE_RE.search(element.text):
            label = parse_label(element.text, heading=element.kind == "title")
        caption = element.element_id in captions
        if element.number in toc or caption:
            previous = None if caption else previous
            # a table of contents lists sections and a caption names a figure: they open none
        elif element.element_id in cover and cover_node is not None and not _continues(previous, element, label, first_page):
            pass  # a later line of the cover's title block (a subtitle, the issuer): text under the title
        elif label is not None or element.kind == "title":
            if cover_node is not None and element.element_id not in cover:
                tree.close(cover_node)  # the first section ends the cover's pages
                cover_node = None
            if _continues(previous, element, label, first_page) and nodes:
                node_id, title, last_label = nodes[-1]
                nodes[-1] = (node_id, f"{title} {element.text}"[:200], last_label)
                tree.retitle(nodes[-1][1])
                paths = [tuple(nodes[-1] if n[0] == node_id else n for n in p) for p in paths]
            else:
                title = section_title(element.text) if label else element.text[:200]
                nodes.append((len(nodes), title, label))
                tree.push(title, label, font_size(element) if element.kind == "title" else None, key=len(nodes) - 1)
                cover_node = len(nodes) - 1 if element.element_id in cover and cover_node is None else cover_node
            previous = element if element.kind == "title" else None
        elif element.text:
            previous = None
        paths.append(tuple(nodes[i] for i in tree.keys()))
    return paths


def _groupable(parent: tuple[Node, ...], child: Node, root: Label | None) -> bool:
    """Whether sibling sections under ``parent`` may share a chunk titled by ``parent``: only when the
    parent's own label (or no label at all) holds them, so the chunk's heading path stays their section."""
    label = child[2]
    if label is None:
        return True
    holder = parent[-1][2] if parent else root
    return holder is not None and holder.holds(label)


Part = tuple[tuple[Node, ...], list[tuple[ElementRow, str]]]


_element_tokens = lru_cache(maxsize=4096)(count_tokens)
"""``count_tokens`` of an element's Markdown, remembered: ``pack_sections`` measures the same elements again at
every level of the section tree and for every group it grows."""


def _tokens(items: Sequence[tuple[ElementRow, tuple[Node, ...]]]) -> int:
    return sum(_element_tokens(element_markdown(e)) + 1 for e, _ in items if e.text)


def _own_parts(prefix: tuple[Node, ...], own: Sequence[ElementRow], room: int) -> list[Part]:
    """A section's own elements (before its sub-sections) packed greedily, long ones cut between sentences."""
    parts: list[Part] = []
    current: list[tuple[ElementRow, str]] = []
    used = 0
    for element, text in _pieces(own, room):
        cost = count_tokens(text) + 1
        if current and used + cost > room:
            parts.append((prefix, current))
            current, used = [], 0
        current.append((element, text))
        used += cost
    if current:
        parts.append((prefix, current))
    return parts


def _children(prefix: tuple[Node, ...], items: Sequence[tuple[ElementRow, tuple[Node, ...]]]):
    """The section's own elements, then its sub-sections in order as (node, their items)."""
    own = [e for e, path in items if len(path) <= len(prefix)]
    runs: list[tuple[Node, list]] = []
    for element, path in items:
        if len(path) <= len(prefix):
            continue
        node = path[len(prefix)]
        if not runs or runs[-1][0][0] != node[0]:
            runs.append((node, []))
        runs[-1][1].append((element, path))
    return own, runs


def pack_sections(
    prefix: tuple[Node, ...], items: Sequence[tuple[ElementRow, tuple[Node, ...]]], room: int, root: Label | None = None
) -> list[Part]:
    """Parts of a section that fit ``room`` tokens, each titled by the section it lies in.

    A section that fits is one part. Otherwise its own text (parts of its own when over budget) and
    consecutive small sub-sections share a part titled by this section (when it holds them: a chunk's
    heading path is always the section its text lies in); a large sub-section is packed the same way
    one level down.
    """
    if _tokens(items) <= room:  # root: the label of the chapter the prefix starts in
        whole = [(e, element_markdown(e)) for e, _ in items if e.text]
        return [(prefix, whole)] if whole else []
    own, runs = _children(prefix, items)
    group: list = [(e, prefix) for e in own]
    group_prefix = prefix
    parts: list[Part] = []
    if _tokens(group) > room:  # its own text alone is over budget: parts of its own, cut between sentences
        parts, group = _own_parts(prefix, own, room), []
    for node, members in runs:
        size = _tokens(members)
        if group and (size + _tokens(group) > room or not _groupable(prefix, node, root)):
            parts.append((group_prefix, [(e, element_markdown(e)) for e, _ in group if e.text]))
            group = []
        if size > room:
            parts += pack_sections(prefix + (node,), members, room, root)
            continue
        group_prefix = prefix + (node,) if not group else prefix
        group += members
        if not _groupable(prefix, node, root):
            parts.append((group_prefix, [(e, element_markdown(e)) for e, _ in group if e.text]))
            group = []
    if group:
        parts.append((group_prefix, [(e, element_markdown(e)) for e, _ in group if e.text]))
    return [p for p in parts if p[1]]


SENTENCE_END_RE = re.compile(r"[.!?:;)\]\"”’]\s*$")


def joined_paragraphs(pieces: Sequence[tuple[ElementRow, str]], hyphens: Hyphenation | None = None) -> list[str]:
    """Piece texts as paragraphs; a text block continuing the previous one's sentence (broken by a column or
    page break: no sentence end before, a lower-case word after) joins it with a space, and a word broken by a
    hyphen at the break is joined, kept as a compound or left as it is by ``hyphens`` (``ragprep.engines.hyphens``)."""
    rule = hyphens or DEFAULT
    out: list[str] = []
    previous: ElementRow | None = None
    for element, text in pieces:
        continued = out and previous is not None and previous.kind == element.kind == "text"
        sep = rule.separator(out[-1], text) if continued and LINE_END_HYPHEN_RE.search(out[-1]) else None
        if continued and sep is not None and (sep != KEEP or re.match(r"[a-z]", text)):
            out[-1] = rule.join(out[-1], text)
        elif continued and not SENTENCE_END_RE.search(out[-1]) and re.match(r"[a-z]", text):
            out[-1] = f"{out[-1]} {text}"
        else:
            out.append(text)
        previous = element
    return out


def _chapter_rows(
    book: _Book, unit: str, chapter_index: int | None, title: str, path: list[str], elements: Sequence[ElementRow],
    paths: Sequence[tuple[Node, ...]] | None = None,
) -> list[ChunkRow]:
    """The chunks of one chapter: whole when it fits, else cut along its section tree (``pack_sections``)."""
    doc_id, source_path, budget = book.doc_id, book.source_path, book.budget
    if not elements:
        return []
    items = list(zip(elements, paths)) if paths is not None else None
    body = list(elements)
    while body and body[0].kind == "title" and _unlabelled(body[0].text) in _normalise(title):
        body.pop(0)  # the chapter heading itself (possibly set on several lines, or numbered: "1 Introduction")
    body = [e for e in body if not (e.kind == "title" and _unlabelled(e.text) == _normalise(title))]
    if body and body[0].kind == "text" and _normalise(body[0].text) == _normalise(title):
        body.pop(0)  # a numbered paragraph that is all heading ("Annex 4 - Appendix 1")
    if not any(e.text for e in body):
        return []  # a section that is its heading alone (its figure drawn, not written) makes no chunk
    kept = {e.element_id for e in body}
    if items is None:
        items = list(zip(body, section_paths(body)))
    else:
        items = [(e, p) for e, p in items if e.element_id in kept]
    room = max(budget - count_tokens(f"# {title}") - 2, 20)
    parts = pack_sections((), items, room, parse_label(title, heading=True))
    rows = []
    for part_index, (prefix, pieces) in enumerate(parts):
        sub = [n[1] for n in prefix]
        shown = title if not sub else f"{title} / {sub[-1]}"
        if count_tokens(f"# {shown}") > count_tokens(f"# {title}") + budget // 8:
            shown = title
        markdown = "\n\n".join([f"# {shown}"] + joined_paragraphs(pieces, book.hyphens))
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
                heading_path=path + sub,
                markdown=markdown,
                token_count=count_tokens(markdown),
                element_ids=members,
                **_flags(member_rows),
            )
        )
    return rows


def _tree_chapters(book: _Book, ordered: Sequence[ElementRow]) -> list[ChunkRow] | None:
    """Chunks of a document without a usable outline: its top-level sections are the chapters (a cover's title
    block heads only the pages before the first section: ``cover_headings``)."""
    paths = section_paths(ordered, cover_headings(ordered))
    if not any(paths):
        return None
    rows: list[ChunkRow] = []
    front = [e for e, p in zip(ordered, paths) if not p]
    if any(e.text for e in front):
        rows += _chapter_rows(book, "pages", None, "Front matter", ["Front matter"], front, [()] * len(front))
    chapters: list[tuple[Node, list[ElementRow], list[tuple[Node, ...]]]] = []
    for element, path in zip(ordered, paths):
        if not path:
            continue
        if not chapters or chapters[-1][0][0] != path[0][0]:
            chapters.append((path[0], [], []))
        chapters[-1][1].append(element)
        chapters[-1][2].append(path[1:])
    for index, (node, members, sub_paths) in enumerate(chapters):
        rows += _chapter_rows(book, "chapter", index, node[1], [node[1]], members, sub_paths)
    return rows


MIN_SKIPPED_SECTIONS = 5
"""An outline that starts after this many numbered sections of the document's own text leaves its body out:
bookmarks made from an appendix's form fields or figure captions, not the document's structure."""


def usable_outline(
    outline: Sequence[OutlineEntry], n_pages: int, elements: Sequence[ElementRow] = ()
) -> list[OutlineEntry]:
    """The outline less placeholder bookmarks ("책갈피", "Bookmark 3", "Untitled") and figure or table captions
    ("Figure 3 MGA Roof Crush Test System": a list of figures, not chapters); none when only they are
    left or when the pages before its first entry already hold ``MIN_SKIPPED_SECTIONS`` numbered sections."""
    entries = [
        e for e in outline if not PLACEHOLDER_RE.match(e.title) and not is_caption(e.title) and 1 <= e.page <= n_pages
    ]
    if not entries:
        return []
    first = min(e.page for e in entries)
    before = [e for e in elements if e.number < first]
    labelled = {n[0] for path in section_paths(before) for n in path if n[2] is not None}
    return [] if len(labelled) >= MIN_SKIPPED_SECTIONS else entries


def pdf_chunks(
    doc_id: str,
    source_path: str,
    elements: Sequence[ElementRow],
    outline: Sequence[OutlineEntry],
    n_pages: int,
    settings: Settings,
) -> list[ChunkRow]:
    """Chunks per chapter (from the outline, else from the section tree) split along sections to the token budget,
    else per window of pages."""
    ordered = _captions_as_text(sorted(elements, key=lambda e: (e.number, e.order)))
    hyphens = Hyphenation.of_lines(e.text for e in ordered if e.kind in ("text", "title"))
    book = _Book(doc_id, source_path, settings.chunking.max_tokens, hyphens)
    starts = select_outline_chapters(
        usable_outline(outline, n_pages, ordered), n_pages, settings.pdf.dominant_chapter_share, settings.pdf.dominant_chapter_min_pages
    )
    rows: list[ChunkRow] = []
    if starts:
        front, groups = _assign(ordered, starts)
        if any(e.text for e in front):
            rows += _chapter_rows(book, "pages", None, "Front matter", ["Front matter"], front)
        for index, (start, members) in enumerate(zip(starts, groups)):
            rows += _chapter_rows(book, start.unit, index, start.title, list(start.heading_path), members)
        return rows
    tree_rows = _tree_chapters(book, ordered)
    if tree_rows:
        return tree_rows
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
