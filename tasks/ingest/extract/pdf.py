"""PDF books and reports with PyMuPDF: text blocks in reading order, tables, images, OCR.

Per page: text blocks (``pdf_text``) in column-aware reading order (``pdf_order``), less running heads,
feet and page numbers (``pdf_running``), headings recognised by font size and weight relative
to the document's body text, text-layer health checked (``pdf_health``: word spaces missing from the
text layer are read from glyph positions, lost glyphs send the page to OCR; each element records its
``text_source``), tables found by
``find_tables`` (``pdf_table_find``: line strategy, without the layout model) rendered as Markdown with
the text they cover removed from the blocks (structure, captions and continuations: ``pdf_tables``),
embedded images saved once (``pdf_pictures``: content-addressed), and OCR of the rendered page when the
page has no text layer or its text is unreadable (broken font-to-Unicode maps).  The outline is returned
for chaptering.  This module is the backend's entry point (``extract_pdf``): it scans the pages and turns
them into element rows.

MuPDF is not thread-safe, so every PyMuPDF call runs under one process-wide lock;
OCR (a Tesseract subprocess) runs outside it, so documents still overlap there.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

import pymupdf

from ragprep import __version__
from ragprep.engines.hyphens import Hyphenation
from ragprep.engines.ocr import OcrResult
from ragprep.engines.pdf import PDF_LOCK, TEXT_FLAGS
from ragprep.ids import element_id_for
from ragprep.settings import Settings
from schemas.elements import ElementRow
from tasks.ingest.extract.base import (
    DocumentError,
    ExtractContext,
    ExtractedDocument,
    OutlineEntry,
    dumps_meta,
)
from tasks.ingest.extract.markdown import markdown_table, quote_block
from tasks.ingest.extract.ocr_table import read_table
from tasks.ingest.extract.pdf_health import lost_glyphs, lost_spaces
from tasks.ingest.extract.pdf_limits import page_refusal
from tasks.ingest.extract.pdf_order import reading_order
from tasks.ingest.extract.pdf_pictures import PageImage, save_images
from tasks.ingest.extract.pdf_running import PlacedText, running_indices
from tasks.ingest.extract.pdf_table_find import Table, cell_lines, find_tables, mend_cells
from tasks.ingest.extract.pdf_tables import CAPTION_GAP_PT, continues, is_caption
from tasks.ingest.extract.pdf_text import BBox, Block, assign_headings, block_lines, garbage_ratio, mend_hyphens, text_blocks


@dataclass(frozen=True)
class _TextQuality:
    """How much visible text a page's text layer gives, and the share of it that is garbage."""

    n_chars: int
    garbage: float


@dataclass(frozen=True)
class _Item:
    """One element of a page before numbering: its kind, text, box and metadata."""

    kind: str
    text: str
    bbox: BBox
    meta: dict
    image: PageImage | None = None


@dataclass
class _Page:
    """What one page yields: text blocks, tables, images, and why (and what) to OCR."""

    number: int
    blocks: list[Block] = field(default_factory=list)
    tables: list[Table] = field(default_factory=list)
    images: list[PageImage] = field(default_factory=list)
    ocr_png: bytes | None = None
    ocr_reason: str | None = None
    warnings: list[str] = field(default_factory=list)
    n_running: int = 0
    """Running heads, feet and page numbers removed from the page."""


def _check_header(path: Path) -> None:
    with open(path, "rb") as handle:
        head = handle.read(1024)
    if not head:
        raise DocumentError(f"{path.name}: empty file (0 bytes)")
    if head.startswith(b"PK\x03\x04") and b"%PDF-" not in head:
        raise DocumentError(
            f"{path.name}: not a PDF but a zip archive (a .pptx or other Office file?); rename it to its real type"
        )
    if b"%PDF-" not in head:
        raise DocumentError(f"{path.name}: not a PDF (no %PDF- header in the first 1 KiB)")


def _outline(doc: pymupdf.Document) -> list[OutlineEntry]:
    entries: list[OutlineEntry] = []
    for item in doc.get_toc(simple=False):
        level, title, page = item[0], " ".join(str(item[1]).split()), item[2]
        if page < 1 or page > doc.page_count or not title:
            continue
        y = None
        dest = item[3] if len(item) > 3 and isinstance(item[3], dict) else {}
        point = dest.get("to")
        if point is not None:
            # PyMuPDF gives LINK_GOTO targets in page (top-down) coordinates and named
            # destinations in PDF user space (bottom-up).
            height = doc[page - 1].rect.height
            raw = float(point.y)
            y = max(0.0, min(height, raw if dest.get("kind") == pymupdf.LINK_GOTO else height - raw))
        entries.append(OutlineEntry(level=level, title=title, page=page, y=y))
    return entries


def _check_spacing(result: _Page) -> None:
    """Warn when the page's Hangul still lies in long runs after word spaces were read from glyph gaps."""
    reason = lost_spaces(" ".join(b.text for b in result.blocks))
    if reason:
        result.warnings.append(f"page {result.number}: {reason}, not recoverable from glyph positions")


def _text_quality(blocks: list[Block], tables: list[Table]) -> _TextQuality:
    """Visible characters of the page's text and tables, and their garbage ratio."""
    page_text = " ".join(b.text for b in blocks) + " ".join(t.markdown for t in tables)
    n_chars = sum(1 for ch in page_text if not ch.isspace())
    return _TextQuality(n_chars=n_chars, garbage=garbage_ratio(page_text))


def _ocr_reason(page: pymupdf.Page, quality: _TextQuality, settings: Settings, blocks: list[Block]) -> str | None:
    """Why the page needs OCR (no text layer, unreadable text, lost glyphs), or None."""
    if quality.n_chars < settings.pdf.min_text_chars and (page.get_images() or len(page.get_cdrawings()) > 50):
        return "no text layer"
    if quality.garbage > settings.pdf.garbage_threshold:
        return f"unreadable text ({quality.garbage:.0%} garbage characters)"
    return lost_glyphs(" ".join(b.text for b in blocks), [b.text for b in blocks])


def _render_for_ocr(page: pymupdf.Page, settings: Settings) -> bytes:
    """The page as a grayscale PNG, at the OCR resolution capped by the longest-side limit."""
    longest_pt = max(page.rect.width, page.rect.height) or 1.0
    dpi = max(36, min(settings.ocr.dpi, int(settings.ocr.max_side_px * 72 / longest_pt)))
    return page.get_pixmap(dpi=dpi, colorspace=pymupdf.csGRAY).tobytes("png")


def _scan_page(doc: pymupdf.Document, index: int, ctx: ExtractContext, seen_xrefs: set[int]) -> _Page:
    """Blocks, tables, images and the OCR decision (with its rendering) for one page."""
    settings = ctx.settings
    page = doc[index]
    result = _Page(number=index + 1)
    textpage = page.get_textpage(flags=TEXT_FLAGS)
    if settings.pdf.tables:
        result.tables = find_tables(page, textpage, result.number, result.warnings)
    result.blocks = text_blocks(page, textpage, result.number, [t.bbox for t in result.tables])
    _check_spacing(result)
    quality = _text_quality(result.blocks, result.tables)
    result.ocr_reason = _ocr_reason(page, quality, settings, result.blocks)
    if result.ocr_reason and settings.ocr.enabled:
        result.ocr_png = _render_for_ocr(page, settings)
    unusable = quality.garbage > settings.pdf.garbage_threshold or result.ocr_reason and result.ocr_reason.startswith("lost")
    if result.ocr_reason and unusable and (settings.ocr.enabled or quality.garbage > settings.pdf.garbage_threshold):
        result.blocks, result.tables = [], []  # unusable text is not kept beside its OCR
    if settings.pdf.save_images:
        result.images = save_images(doc, page, ctx, seen_xrefs, result.number, result.warnings)
    return result


def _open_pdf(path: Path) -> pymupdf.Document:
    """Open the PDF (call under ``PDF_LOCK``); corrupt or encrypted files raise ``DocumentError``."""
    try:
        doc = pymupdf.open(path, filetype="pdf")
    except Exception as exc:
        raise DocumentError(f"{path.name}: corrupt or unreadable PDF ({type(exc).__name__}: {exc})") from exc
    if doc.needs_pass:
        doc.close()
        raise DocumentError(f"{path.name}: password-protected PDF; provide an unencrypted copy")
    return doc


def _scan_pages(doc: pymupdf.Document, n_pages: int, ctx: ExtractContext, warnings: list[str]) -> list[_Page]:
    """Scan every page (an unreadable page becomes an empty one and a warning), then close ``doc``."""
    pages: list[_Page] = []
    seen_xrefs: set[int] = set()
    try:
        for index in range(n_pages):
            try:
                with PDF_LOCK:
                    refusal = page_refusal(doc, index, ctx.settings.limits)  # sized before anything decodes
                    scanned = _Page(number=index + 1, warnings=[refusal]) if refusal else _scan_page(doc, index, ctx, seen_xrefs)
            except Exception as exc:
                warnings.append(f"page {index + 1}: unreadable: {type(exc).__name__}: {exc}")
                scanned = _Page(number=index + 1)
            warnings.extend(scanned.warnings)
            pages.append(scanned)
            ctx.report(index + 1, n_pages)
    finally:
        with PDF_LOCK:
            doc.close()
    return pages


def _mend_hyphens(pages: list[_Page]) -> None:
    """Line-end hyphens of blocks and table cells resolved by the words of the whole document (``hyphens``)."""
    lines = [line for page in pages for line in block_lines(page.blocks) + cell_lines(page.tables)]
    hyphens = Hyphenation.of_lines(lines)
    for page in pages:
        mend_hyphens(page.blocks, hyphens)
        mend_cells(page.tables, hyphens)


def _strip_running(pages: list[_Page]) -> None:
    """Remove running heads, feet and page numbers (lines repeated at one place across pages) from every page."""
    placed = [[PlacedText(p.number, b.bbox, b.text) for b in p.blocks] for p in pages]
    for page, drop in zip(pages, running_indices(placed, len(pages))):
        page.n_running = len(drop)
        page.blocks = [b for i, b in enumerate(page.blocks) if i not in drop]


def _attach_captions(page: _Page) -> None:
    """Move a caption block ("Table 3 ...") right above or below a table into the table."""
    for table in page.tables:
        for block in page.blocks:
            above = 0 <= table.bbox[1] - block.bbox[3] <= CAPTION_GAP_PT
            below = 0 <= block.bbox[1] - table.bbox[3] <= CAPTION_GAP_PT
            if (above or below) and is_caption(block.text) and table.caption is None:
                table.caption = block.text
                page.blocks = [b for b in page.blocks if b is not block]
                break


def _is_last(page: _Page, table: Table) -> bool:
    return not any(b.bbox[1] >= table.bbox[3] - 2 for b in page.blocks) and table is max(page.tables, key=lambda t: t.bbox[3])


def _is_first(page: _Page, table: Table) -> bool:
    return not any(b.bbox[3] <= table.bbox[1] + 2 for b in page.blocks) and table is min(page.tables, key=lambda t: t.bbox[1])


def _join_continued(pages: list[_Page]) -> None:
    """Join a table that runs on at the top of the next page (same columns, nothing between) into one."""
    for page, following in zip(pages, pages[1:]):
        if not page.tables or not following.tables or following.number != page.number + 1:
            continue
        last = max(page.tables, key=lambda t: t.bbox[3])
        first = min(following.tables, key=lambda t: t.bbox[1])
        if last.cols != first.cols or not _is_last(page, last) or not _is_first(following, first):
            continue
        last.cells += continues(last.cells, first.cells)
        last.continued_pages += [following.number] + first.continued_pages
        last.caption = last.caption or first.caption
        following.tables = [t for t in following.tables if t is not first]


def _page_items(page: _Page) -> list[_Item]:
    """The page's blocks, tables and images in column-aware reading order."""
    items: list[_Item] = []
    for block in page.blocks:
        kind = "title" if block.heading_level else "text"
        meta = {
            "font_size": block.size,
            "heading_level": block.heading_level,
            "bold": block.bold or None,
            "text_source": block.text_source,
            "text_source_reason": block.source_reason,
        }
        items.append(_Item(kind, block.text, block.bbox, meta))
    for table in page.tables:
        items.append(_Item("table", table.markdown, table.bbox, table.facts()))
    for image in page.images:
        text = f"![Image on page {page.number} ({image.width}x{image.height} px)]({image.rel_path})"
        items.append(_Item("picture", text, image.bbox, {"note": image.note}, image))
    return [items[i] for i in reading_order([item.bbox for item in items])]


def _element_row(ctx: ExtractContext, page_number: int, order: int, item: _Item) -> ElementRow:
    """The element row for one page item at its reading-order position."""
    image = item.image
    return ElementRow(
        element_id=element_id_for(ctx.doc_id, "page", page_number, order, item.kind),
        doc_id=ctx.doc_id,
        source_path=ctx.source_path,
        unit="page",
        number=page_number,
        order=order,
        kind=item.kind,
        text=item.text,
        bbox=list(item.bbox) if item.bbox else None,
        image_path=image.rel_path if image else None,
        image_width=image.width if image else None,
        image_height=image.height if image else None,
        extractor="pymupdf",
        text_source=item.meta.pop("text_source", None) or ("text" if item.kind in ("title", "text", "table") else None),
        meta=dumps_meta(**item.meta, sha256=image.sha256 if image else None),
    )


def _ocr_row(ctx: ExtractContext, page: _Page, order: int, warnings: list[str]) -> tuple[ElementRow, OcrResult | None]:
    """OCR the page's rendering into an ``ocr_page`` row (and the OCR result when it read text); OCR problems
    become warnings."""
    status, result, warning = ctx.ocr_image(page.ocr_png or b"")
    if warning:
        warnings.append(f"page {page.number}: {warning}")
    if status in ("unavailable", "disabled"):
        warnings.append(f"page {page.number}: {page.ocr_reason}, OCR {status}; page text may be missing")
    text = quote_block(f"OCR text of page {page.number}", result.text) if status == "ok" and result else ""
    row = ElementRow(
        element_id=element_id_for(ctx.doc_id, "page", page.number, order, "ocr_page"),
        doc_id=ctx.doc_id,
        source_path=ctx.source_path,
        unit="page",
        number=page.number,
        order=order,
        kind="ocr_page",
        text=text,
        ocr_text=result.text if result else None,
        ocr_status=status,
        text_source="ocr" if status == "ok" else None,
        extractor="pymupdf+tesseract",
        meta=dumps_meta(reason=page.ocr_reason, mean_confidence=result.mean_confidence if result else None),
    )
    return row, (result if status == "ok" else None)


def _ocr_table_row(ctx: ExtractContext, page_number: int, order: int, grid: list[list[str]]) -> ElementRow:
    """A ``table`` row for a scanned page that is a table, read from its OCR word boxes (``ocr_table``)."""
    return ElementRow(
        element_id=element_id_for(ctx.doc_id, "page", page_number, order, "table"),
        doc_id=ctx.doc_id,
        source_path=ctx.source_path,
        unit="page",
        number=page_number,
        order=order,
        kind="table",
        text=markdown_table(grid),
        text_source="ocr",
        extractor="pymupdf+tesseract-grid",
        meta=dumps_meta(rows=len(grid), cols=len(grid[0]), read_from="ocr_page"),
    )


def _page_elements(page: _Page, ctx: ExtractContext, warnings: list[str]) -> list[ElementRow]:
    """The page's element rows in reading order, then its OCR row when the page needs OCR (and a table row when
    the scanned page is a table: most of its words in one grid)."""
    rows = [_element_row(ctx, page.number, order, item) for order, item in enumerate(_page_items(page))]
    if page.ocr_reason:
        row, result = _ocr_row(ctx, page, len(rows), warnings)
        rows.append(row)
        grid = read_table(result.words) if result is not None else None
        if grid:
            rows.append(_ocr_table_row(ctx, page.number, len(rows), grid))
    return rows


PLACEHOLDER_TITLE_RE = re.compile(
    r"^(untitled|제목\s*없음|microsoft word\b.*|.*\.(docx?|hwpx?|pdf|pptx?)|[\w/.-]*\d[\w/.-]*)$", re.IGNORECASE
)


def dedup_title(text: str) -> str:
    """A title set twice ("X X", or the same words repeated) once."""
    flat = " ".join(text.split())
    words = flat.split(" ")
    half = len(words) // 2
    if len(words) % 2 == 0 and half and words[:half] == words[half:]:
        return " ".join(words[:half])
    return flat


def document_title(metadata_title: str | None, elements: list[ElementRow]) -> str | None:
    """The metadata title when it reads as one, else the largest heading of the first pages, de-duplicated."""
    if metadata_title and not PLACEHOLDER_TITLE_RE.match(metadata_title.strip()) and re.search(r"[^\W\d_]{3}", metadata_title):
        return dedup_title(metadata_title)
    headings = [e for e in elements if e.kind == "title" and e.number <= 2]
    if not headings:
        return None
    levels = [json.loads(e.meta or "{}").get("heading_level") or 9 for e in headings]
    top = min(levels)
    first = [e.text for e, level in zip(headings, levels) if level == top]
    return dedup_title(first[0])[:200] or None


def extract_pdf(path: Path, ctx: ExtractContext) -> ExtractedDocument:
    """Extract a PDF into page elements, its outline and warnings; unreadable files raise ``DocumentError``."""
    _check_header(path)
    with PDF_LOCK:
        doc = _open_pdf(path)
        n_pages = doc.page_count
        outline = _outline(doc)
        title = (doc.metadata or {}).get("title") or None
    if n_pages == 0:
        raise DocumentError(f"{path.name}: PDF has no pages")
    warnings: list[str] = []
    pages = _scan_pages(doc, n_pages, ctx, warnings)
    _mend_hyphens(pages)
    _strip_running(pages)
    for page in pages:
        _attach_captions(page)
    _join_continued(pages)
    assign_headings([block for page in pages for block in page.blocks])
    elements: list[ElementRow] = []
    for page in pages:
        elements.extend(_page_elements(page, ctx, warnings))
    n_ocr = sum(1 for e in elements if e.kind == "ocr_page" and e.ocr_status == "ok")
    title = document_title(title, elements)
    return ExtractedDocument(
        format="pdf",
        n_units=n_pages,
        title=title,
        elements=elements,
        outline=outline,
        warnings=warnings,
        n_ocr_units=n_ocr,
        extractor=f"ragprep {__version__} pdf backend (PyMuPDF {pymupdf.VersionBind})",
    )
