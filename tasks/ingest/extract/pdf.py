"""PDF books and reports with PyMuPDF: text blocks in reading order, tables, images, OCR.

Per page: text blocks in column-aware reading order (``pdf_order``), less running heads,
feet and page numbers (``pdf_running``), headings recognised by font size and weight relative
to the document's body text, text-layer health checked (``pdf_health``: lost word spaces are
re-read from glyph positions, lost glyphs send the page to OCR; each element records its
``text_source``), tables found by
``find_tables`` (line strategy, without the layout model) rendered as Markdown with
the text they cover removed from the blocks, embedded images saved once
(content-addressed), and OCR of the rendered page when the page has no text layer or
its text is unreadable (broken font-to-Unicode maps).  The outline is returned for
chaptering.

MuPDF is not thread-safe, so every PyMuPDF call runs under one process-wide lock;
OCR (a Tesseract subprocess) runs outside it, so documents still overlap there.
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import pymupdf

from ragprep import __version__
from ragprep.engines.pdf import PDF_LOCK, TEXT_FLAGS, join_lines
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
from tasks.ingest.extract.pdf_health import lost_glyphs, lost_spaces, spaced_block_text
from tasks.ingest.extract.pdf_limits import page_refusal
from tasks.ingest.extract.pdf_order import reading_order
from tasks.ingest.extract.pdf_running import PlacedText, running_indices
from tasks.ingest.extract.pdf_tables import (
    CAPTION_GAP_PT,
    continues,
    fill_row_spans,
    header_rows,
    is_caption,
    mark_totals,
    total_rows,
)

BOLD_FONT_RE = re.compile(r"bold|black|heavy|semibold|demi|[-,]b\b|bx", re.IGNORECASE)
CID_RE = re.compile(r"\(cid:\d+\)")
MIN_IMAGE_SIDE_PT = 24.0


def garbage_ratio(text: str) -> float:
    """Share of visible characters that cannot be real text.

    Counted as unreadable: the replacement character, private-use code points (what
    broken ToUnicode maps usually yield), control characters, unassigned code points,
    and ``(cid:N)`` escapes (each counts as its length).
    """
    visible = [ch for ch in text if not ch.isspace()]
    if not visible:
        return 0.0
    bad = sum(len(m.group()) for m in CID_RE.finditer(text))
    for ch in CID_RE.sub("", text):
        if ch.isspace():
            continue
        category = unicodedata.category(ch)
        if ch == "\ufffd" or category in ("Co", "Cn") or (category == "Cc"):
            bad += 1
    return bad / len(visible)


BBox = tuple[float, float, float, float]
"""(x0, y0, x1, y1) in points from the page's top-left corner, rounded to 2 decimals."""


@dataclass
class _Block:
    """A text block of one page, with its dominant font size and weight."""

    page: int
    bbox: BBox
    text: str
    """The block's lines joined, words hyphenated at a line end mended."""
    size: float
    """The font size (pt) of most of the block's characters."""
    bold: bool
    n_lines: int
    heading_level: int | None = None
    """1 for a chapter-size heading, 2 for a section heading, None for body text."""
    text_source: str = "text"
    """text (the text layer as is), repaired (word spaces re-read from glyph positions)."""
    source_reason: str | None = None


@dataclass
class _Table:
    """A detected table: its cell texts (row spans filled), rendered as Markdown."""

    bbox: BBox
    cells: list[list[str | None]]
    cols: int
    caption: str | None = None
    continued_pages: list[int] = field(default_factory=list)
    """Pages the table continues on (joined into this one)."""

    @property
    def rows(self) -> int:
        """Number of rows."""
        return len(self.cells)

    @property
    def markdown(self) -> str:
        """The caption (bold), the table as Markdown (header row detected, totals in bold), a continuation note."""
        totals = total_rows(self.cells)
        grid = mark_totals(self.cells, totals)
        if not header_rows(self.cells):
            grid = [[""] * self.cols] + grid  # no header row in the table: an empty Markdown header
        text = markdown_table(grid)
        if text and self.caption:
            text = f"**{self.caption}**\n\n{text}"
        if text and self.continued_pages:
            pages = ", ".join(str(p) for p in self.continued_pages)
            text += f"\n\n(Table continued on page {pages}; joined here.)"
        return text

    def facts(self) -> dict:
        """The element meta of the table."""
        return {
            "rows": self.rows,
            "cols": self.cols,
            "header_rows": header_rows(self.cells),
            "total_rows": total_rows(self.cells) or None,
            "caption": self.caption,
            "continued_pages": self.continued_pages or None,
        }


@dataclass(frozen=True)
class _Image:
    """An embedded image saved to the layout, where it is drawn on the page."""

    bbox: BBox
    rel_path: str
    """Where the picture is stored, relative to the root (content-addressed)."""
    width: int
    height: int
    sha256: str
    note: str | None
    """Why the stored picture differs from the embedded one (downscaled), if it does."""


@dataclass(frozen=True)
class _ImageData:
    """Encoded image bytes with their format and pixel size, as they will be saved."""

    data: bytes | None
    """The encoded image, None when it cannot be read."""
    ext: str
    width: int
    height: int
    note: str | None = None


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
    image: _Image | None = None


@dataclass
class _Page:
    """What one page yields: text blocks, tables, images, and why (and what) to OCR."""

    number: int
    blocks: list[_Block] = field(default_factory=list)
    tables: list[_Table] = field(default_factory=list)
    images: list[_Image] = field(default_factory=list)
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
        raise DocumentError(f"{path.name}: not a PDF but a zip archive (a .pptx or other Office file?); rename it to its real type")
    if b"%PDF-" not in head:
        raise DocumentError(f"{path.name}: not a PDF (no %PDF- header in the first 1 KiB)")


def _span_text(span: dict) -> str:
    return span["text"] if "text" in span else "".join(c["c"] for c in span.get("chars", []))


def _read_blocks(page_number: int, text_dict: dict, spaced: bool = False) -> list[_Block]:
    """The page's text blocks; ``spaced``: ``text_dict`` is a rawdict and word spaces are read from glyph gaps."""
    blocks: list[_Block] = []
    for block in text_dict.get("blocks", []):
        if block.get("type", 0) != 0:
            continue
        lines, sizes, bold_chars, n_chars = [], Counter(), 0, 0
        for line in block.get("lines", []):
            spans = line.get("spans", [])
            lines.append("".join(_span_text(span) for span in spans))
            for span in spans:
                count = len(_span_text(span).strip())
                if not count:
                    continue
                sizes[round(span["size"] * 2) / 2] += count
                n_chars += count
                if span["flags"] & 16 or BOLD_FONT_RE.search(span.get("font", "")):
                    bold_chars += count
        text = spaced_block_text(block) if spaced else join_lines(lines)
        if not text:
            continue
        size = sizes.most_common(1)[0][0] if sizes else 0.0
        blocks.append(
            _Block(page_number, tuple(round(v, 2) for v in block["bbox"]), text, size, bold_chars > 0.6 * n_chars, len(lines))
        )
    return blocks


def _inside(inner: tuple[float, ...], outer: tuple[float, ...], slack: float = 2.0) -> bool:
    cx, cy = (inner[0] + inner[2]) / 2, (inner[1] + inner[3]) / 2
    return outer[0] - slack <= cx <= outer[2] + slack and outer[1] - slack <= cy <= outer[3] + slack


def _table_rows(table, words: list[tuple]) -> list[list[str | None]]:
    """Cell texts assembled from the page's words (read once per page).

    ``Table.extract()`` in PyMuPDF 2.0 reorders punctuation inside cells ("1.0" comes
    back as "1 0\\n."), and ``get_textbox`` per cell rescans every character of the page
    in Python; words placed by their centre into cell boxes are exact and cheap.
    """
    rows: list[list[str | None]] = []
    for row in table.rows:
        cells: list[str | None] = []
        for cell in row.cells:
            if cell is None:
                cells.append(None)
                continue
            x0, y0, x1, y1 = cell
            inside = [
                w for w in words
                if x0 <= (w[0] + w[2]) / 2 <= x1 and y0 <= (w[1] + w[3]) / 2 <= y1
            ]
            inside.sort(key=lambda w: (w[5], w[6], w[7]))  # block, line, word order
            cells.append(" ".join(w[4] for w in inside))
        rows.append(cells)
    return rows


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


def _assign_headings(blocks: list[_Block]) -> float:
    """Mark heading blocks (level 1 = largest) and return the body font size."""
    weights: Counter = Counter()
    for block in blocks:
        weights[block.size] += len(block.text)
    if not weights:
        return 0.0
    body = weights.most_common(1)[0][0]
    candidates = []
    for block in blocks:
        short = len(block.text) <= 120 and block.n_lines <= 3 and not block.text.endswith((".", ",", ";"))
        if not short or not re.search(r"[^\W\d_]{2}", block.text) or block.text[:1].islower():
            continue  # a line starting in lower case continues a sentence: bold words, not a heading
        if block.size >= body * 1.2 or (block.bold and block.size >= body * 1.05):
            candidates.append(block)
    sizes = sorted({b.size for b in candidates}, reverse=True)[:3]
    for block in candidates:
        block.heading_level = sizes.index(block.size) + 1 if block.size in sizes else 3
    return body


def ruled_regions(page: pymupdf.Page, min_lines: int = 3, slack: float = 2.0) -> list[pymupdf.Rect]:
    """Areas of the page where drawn rules form a grid: candidates for ruled tables.

    Horizontal and vertical rules (from lines and rectangle edges) that touch are grouped;
    a group with rules at ``min_lines`` distinct heights and ``min_lines`` distinct x
    positions (a 2x2 table has three of each) is a candidate. ``find_tables`` with the
    line strategy can only find such tables, so pages without one skip its costly
    per-character analysis.
    """
    segments: list[tuple[float, float, float, float, bool]] = []  # x0, y0, x1, y1, horizontal
    for path in page.get_cdrawings():
        for item in path.get("items", ()):
            if item[0] == "re":
                x0, y0, x1, y1 = item[1]
                x0, x1, y0, y1 = min(x0, x1), max(x0, x1), min(y0, y1), max(y0, y1)
                if x1 - x0 > 3:
                    segments += [(x0, y0, x1, y0, True), (x0, y1, x1, y1, True)]
                if y1 - y0 > 3:
                    segments += [(x0, y0, x0, y1, False), (x1, y0, x1, y1, False)]
            elif item[0] == "l":
                (ax, ay), (bx, by) = item[1], item[2]
                if abs(ay - by) < 1 and abs(ax - bx) > 3:
                    segments.append((min(ax, bx), ay, max(ax, bx), ay, True))
                elif abs(ax - bx) < 1 and abs(ay - by) > 3:
                    segments.append((ax, min(ay, by), ax, max(ay, by), False))
    groups: list[list] = []  # [x0, y0, x1, y1, rows, columns]
    for x0, y0, x1, y1, horizontal in segments:
        merged = [x0 - slack, y0 - slack, x1 + slack, y1 + slack, set(), set()]
        (merged[4] if horizontal else merged[5]).add(round(y0 if horizontal else x0))
        keep = []
        for group in groups:
            if group[0] <= merged[2] and merged[0] <= group[2] and group[1] <= merged[3] and merged[1] <= group[3]:
                merged = [min(group[0], merged[0]), min(group[1], merged[1]), max(group[2], merged[2]),
                          max(group[3], merged[3]), group[4] | merged[4], group[5] | merged[5]]
            else:
                keep.append(group)
        groups = keep + [merged]
    return [
        pymupdf.Rect(g[0], g[1], g[2], g[3]) for g in groups if len(g[4]) >= min_lines and len(g[5]) >= min_lines
    ]


def _downscaled(doc: pymupdf.Document, xref: int, max_pixels: int) -> _ImageData:
    """A huge image halved (in MuPDF) until it fits ``max_pixels``, as PNG."""
    pix = pymupdf.Pixmap(doc, xref)
    original = f"{pix.width}x{pix.height}"
    if pix.alpha or pix.n not in (1, 3):
        pix = pymupdf.Pixmap(pymupdf.csRGB, pix)
    factor = 0
    while (pix.width >> factor) * (pix.height >> factor) > max_pixels:
        factor += 1
    if factor:
        pix.shrink(factor)
    return _ImageData(pix.tobytes("png"), "png", pix.width, pix.height, f"downscaled from {original} px")


def _find_tables(page: pymupdf.Page, textpage: pymupdf.TextPage, result: _Page) -> list[_Table]:
    """Ruled tables of the page as Markdown; a detection failure becomes a warning on ``result``."""
    # find_tables(clip=...) finds nothing in PyMuPDF 2.0, so the regions only gate
    # whether the whole page is searched.
    found_tables = []
    if ruled_regions(page):
        try:
            found_tables = page.find_tables(use_layout=False).tables
        except Exception as exc:  # table detection is best effort per page
            result.warnings.append(f"page {result.number}: table detection failed: {type(exc).__name__}: {exc}")
    tables: list[_Table] = []
    words: list[tuple] | None = None
    for table in found_tables:
        if words is None:
            words = page.get_text("words", textpage=textpage)
        rows = fill_row_spans([row.cells for row in table.rows], [row.bbox for row in table.rows], _table_rows(table, words))
        if not markdown_table(rows):
            continue
        box = tuple(round(v, 2) for v in table.bbox)
        tables.append(_Table(bbox=box, cells=rows, cols=table.col_count))
    return tables


def _text_blocks(
    page: pymupdf.Page, textpage: pymupdf.TextPage, number: int, tables: list[_Table], spaced: bool = False
) -> list[_Block]:
    """Text blocks, less those lying inside a table; ``spaced``: word spaces re-read from glyph positions."""
    text_dict = page.get_text("rawdict" if spaced else "dict", textpage=textpage, sort=True)
    return [b for b in _read_blocks(number, text_dict, spaced) if not any(_inside(b.bbox, t.bbox) for t in tables)]


def _repair_spacing(page: pymupdf.Page, textpage: pymupdf.TextPage, result: _Page) -> None:
    """Re-read the page's blocks with word spaces from glyph gaps when its text has lost them."""
    reason = lost_spaces(" ".join(b.text for b in result.blocks))
    if not reason:
        return
    result.blocks = _text_blocks(page, textpage, result.number, result.tables, spaced=True)
    for block in result.blocks:
        block.text_source, block.source_reason = "repaired", reason


def _text_quality(blocks: list[_Block], tables: list[_Table]) -> _TextQuality:
    """Visible characters of the page's text and tables, and their garbage ratio."""
    page_text = " ".join(b.text for b in blocks) + " ".join(t.markdown for t in tables)
    n_chars = sum(1 for ch in page_text if not ch.isspace())
    return _TextQuality(n_chars=n_chars, garbage=garbage_ratio(page_text))


def _ocr_reason(page: pymupdf.Page, quality: _TextQuality, settings: Settings, blocks: list[_Block]) -> str | None:
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


def _image_bbox(page: pymupdf.Page, item: tuple) -> BBox | None:
    """Where an image is placed on the page, or None when unknown, invalid or too small to keep."""
    try:
        # get_image_bbox reads the placement from the page; get_image_rects would
        # decode and hash the whole image to find it.
        rect = page.get_image_bbox(item, transform=False)
    except Exception:
        return None
    if not rect.is_valid or rect.is_infinite or min(rect.width, rect.height) < MIN_IMAGE_SIDE_PT:
        return None
    x0, y0, x1, y1 = rect
    return (round(x0, 2), round(y0, 2), round(x1, 2), round(y1, 2))


def _image_data(doc: pymupdf.Document, item: tuple, max_pixels: int) -> _ImageData:
    """The image's bytes as stored in the PDF, or downscaled to PNG when over ``max_pixels``."""
    xref, width, height = item[0], item[2], item[3]
    if width * height > max_pixels:
        return _downscaled(doc, xref, max_pixels)
    extracted = doc.extract_image(xref)
    return _ImageData(
        data=extracted.get("image"),
        ext=extracted.get("ext", "png"),
        width=extracted.get("width", width),
        height=extracted.get("height", height),
    )


def _save_images(
    doc: pymupdf.Document, page: pymupdf.Page, ctx: ExtractContext, seen_xrefs: set[int], result: _Page
) -> list[_Image]:
    """Save the page's images not seen on earlier pages; unreadable ones become warnings on ``result``."""
    images: list[_Image] = []
    for item in page.get_images(full=True):
        xref = item[0]
        if xref <= 0 or xref in seen_xrefs:
            continue
        bbox = _image_bbox(page, item)
        if bbox is None:
            continue
        seen_xrefs.add(xref)
        try:
            image = _image_data(doc, item, ctx.settings.pdf.max_image_pixels)
        except Exception as exc:
            result.warnings.append(f"page {result.number}: image xref {xref} unreadable: {exc}")
            continue
        if not image.data:
            continue
        stored = ctx.layout.save_image(image.data, image.ext)
        images.append(_Image(bbox, stored.rel_path, image.width, image.height, stored.sha256, image.note))
    return images


def _scan_page(doc: pymupdf.Document, index: int, ctx: ExtractContext, seen_xrefs: set[int]) -> _Page:
    """Blocks, tables, images and the OCR decision (with its rendering) for one page."""
    settings = ctx.settings
    page = doc[index]
    result = _Page(number=index + 1)
    textpage = page.get_textpage(flags=TEXT_FLAGS)
    if settings.pdf.tables:
        result.tables = _find_tables(page, textpage, result)
    result.blocks = _text_blocks(page, textpage, result.number, result.tables)
    _repair_spacing(page, textpage, result)
    quality = _text_quality(result.blocks, result.tables)
    result.ocr_reason = _ocr_reason(page, quality, settings, result.blocks)
    if result.ocr_reason and settings.ocr.enabled:
        result.ocr_png = _render_for_ocr(page, settings)
    unusable = quality.garbage > settings.pdf.garbage_threshold or result.ocr_reason and result.ocr_reason.startswith("lost")
    if result.ocr_reason and unusable and (settings.ocr.enabled or quality.garbage > settings.pdf.garbage_threshold):
        result.blocks, result.tables = [], []  # unusable text is not kept beside its OCR
    if settings.pdf.save_images:
        result.images = _save_images(doc, page, ctx, seen_xrefs, result)
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


def _is_last(page: _Page, table: _Table) -> bool:
    return not any(b.bbox[1] >= table.bbox[3] - 2 for b in page.blocks) and table is max(page.tables, key=lambda t: t.bbox[3])


def _is_first(page: _Page, table: _Table) -> bool:
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


def _ocr_row(ctx: ExtractContext, page: _Page, order: int, warnings: list[str]) -> ElementRow:
    """OCR the page's rendering into an ``ocr_page`` row; OCR problems become warnings."""
    status, result, warning = ctx.ocr_image(page.ocr_png or b"")
    if warning:
        warnings.append(f"page {page.number}: {warning}")
    if status in ("unavailable", "disabled"):
        warnings.append(f"page {page.number}: {page.ocr_reason}, OCR {status}; page text may be missing")
    text = quote_block(f"OCR text of page {page.number}", result.text) if status == "ok" and result else ""
    return ElementRow(
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


def _page_elements(page: _Page, ctx: ExtractContext, warnings: list[str]) -> list[ElementRow]:
    """The page's element rows in reading order, then its OCR row when the page needs OCR."""
    rows = [_element_row(ctx, page.number, order, item) for order, item in enumerate(_page_items(page))]
    if page.ocr_reason:
        rows.append(_ocr_row(ctx, page, len(rows), warnings))
    return rows


PLACEHOLDER_TITLE_RE = re.compile(r"^(untitled|제목\s*없음|microsoft word\b.*|.*\.(docx?|hwpx?|pdf|pptx?)|[\w/.-]*\d[\w/.-]*)$", re.IGNORECASE)


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
    _strip_running(pages)
    for page in pages:
        _attach_captions(page)
    _join_continued(pages)
    _assign_headings([block for page in pages for block in page.blocks])
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
