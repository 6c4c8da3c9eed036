"""quotes: pages and slides as MMDocRAG quotes (text quotes and image quotes).

PDF pages go through a layout backend (``ragprep.engines.layout``): text regions become text
quotes; tables and figures become image quotes with a rendered crop of the region, the
OCR text of that crop (Tesseract) and a VLM description (``describe_image`` prompt; the
heuristic provider offline). Slides give one quote per shape group, table, chart and
picture, made from the ``elements`` rows: pictures keep their image, OCR and VLM text;
tables and charts are rendered from their cells (so every image quote has an image
file), their ``ocr_text`` is the cell text itself (``ocr_status = from_source``).

A quote's identity is ``(doc_id, page_id, layout_id)``: 0-based page (slide) index and
0-based position of the region in the page's reading order. PDF quotes are stored per
document under ``parts/quotes/`` keyed by the document and the quote settings, so a
re-run over unchanged documents costs nothing.
"""

from __future__ import annotations

import html
from collections.abc import Callable, Sequence
from pathlib import Path

import pymupdf

from ragprep import __version__
from ragprep.engines.generator import Generator
from ragprep.engines.layout import LayoutBackend
from ragprep.engines.pdf import PDF_LOCK
from ragprep.ids import quote_id_for, stable_id
from ragprep.prompts import PromptTemplate
from ragprep.settings import Settings
from ragprep.storage import Layout
from ragprep.tables import TableStore
from schemas.chunks import ChunkRow
from schemas.documents import DocumentRow
from schemas.elements import ElementRow
from schemas.quotes import IMAGE_TYPES, QuoteRow
from tasks.enrich.describe import Visual, describe_visual, image_input, vlm_fields
from tasks.ingest.extract.base import ExtractContext
from tasks.ingest.extract.pdf_limits import page_refusal
from tasks.stage import run_items

QUOTE_RULES_VERSION = "quotes-v1"
"""Bump when quote building changes (invalidates the per-document quote parts)."""

SLIDE_TEXT_KINDS = ("title", "text", "smartart")
SLIDE_IMAGE_KINDS = {"table": "table", "chart": "chart", "picture": "picture"}


def quote_fingerprint(settings: Settings, backend_name: str) -> str:
    """What changes a document's PDF quotes: backend, crop resolution, OCR settings, rules."""
    return stable_id("quotes", backend_name, settings.fingerprint("ocr", "quotes"), QUOTE_RULES_VERSION, __version__)[:12]


def _ocr_fields(ctx: ExtractContext, png: bytes) -> tuple[str | None, str]:
    status, result, _warning = ctx.ocr_image(png)
    text = result.text.strip() if result is not None and status == "ok" else None
    return text or None, status


def pdf_quotes(
    document: DocumentRow, backend: LayoutBackend, ctx: ExtractContext, dpi: int, max_side_px: int = 3000
) -> list[QuoteRow]:
    """Quotes of one PDF: a layout pass, then a crop + OCR for every table and figure
    (rendered at ``dpi``, lowered so the crop's longest side stays within ``max_side_px``)."""
    path = Path(document.path)
    rows: list[QuoteRow] = []
    with PDF_LOCK:
        pdf = pymupdf.open(path)
    try:
        with PDF_LOCK:  # pages over limits.max_decoded_bytes are never read (ingest warned about them)
            refused = frozenset(i for i in range(pdf.page_count) if page_refusal(pdf, i, ctx.settings.limits))
        for page in backend.pages(path, skip=refused):
            for layout_id, region in enumerate(page.regions):
                fields: dict = {}
                if region.type in IMAGE_TYPES:
                    longest = max(region.bbox[2] - region.bbox[0], region.bbox[3] - region.bbox[1], 1.0)
                    crop_dpi = max(36, min(dpi, int(max_side_px * 72 / longest)))
                    with PDF_LOCK:
                        pix = pdf[page.page_id].get_pixmap(clip=pymupdf.Rect(region.bbox), dpi=crop_dpi)
                        png = pix.tobytes("png")
                    stored = ctx.layout.save_image(png, "png")
                    ocr_text, ocr_status = _ocr_fields(ctx, png)
                    fields = {"img_path": stored.rel_path, "img_width": pix.width, "img_height": pix.height,
                              "ocr_text": ocr_text, "ocr_status": ocr_status}
                rows.append(QuoteRow(
                    quote_id=quote_id_for(document.doc_id, page.page_id, layout_id),
                    doc_id=document.doc_id, source_path=document.path, unit="page", page_id=page.page_id,
                    layout_id=layout_id, modality="image" if region.type in IMAGE_TYPES else "text", type=region.type,
                    text=region.text, bbox=list(region.bbox), page_size=list(page.size), layout_backend=backend.name,
                    **fields,
                ))
    finally:
        with PDF_LOCK:
            pdf.close()
    return rows


def cached_pdf_quotes(
    document: DocumentRow, backend: LayoutBackend, ctx: ExtractContext, settings: Settings
) -> tuple[list[QuoteRow], bool]:
    """(quotes, reused): read from ``parts/quotes/`` when this document was done with these settings."""
    part = ctx.layout.quotes_part(document.doc_id, quote_fingerprint(settings, backend.name))
    cached = TableStore.read_cached_part(part, "quotes")  # None: never done, or unreadable (warned; recomputed)
    if cached is not None:
        return cached, True
    rows = pdf_quotes(document, backend, ctx, settings.quotes.crop_dpi, settings.ocr.max_side_px)
    part.parent.mkdir(parents=True, exist_ok=True)
    staged = part.with_name(f".{part.name}.tmp")
    TableStore.write_part(staged, "quotes", rows)
    staged.replace(part)
    return rows, False


def _markdown_html(markdown: str) -> str:
    """Markdown tables and lines (what slide extraction writes) as simple HTML."""
    parts: list[str] = []
    table: list[list[str]] = []

    def flush() -> None:
        if table:
            head, *body = table
            cells = "".join(f"<th>{html.escape(c)}</th>" for c in head)
            rows = "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in r) + "</tr>" for r in body)
            parts.append(f"<table><tr>{cells}</tr>{rows}</table>")
            table.clear()

    for line in markdown.splitlines():
        stripped = line.strip()
        if stripped.startswith("|"):
            cells = [c.strip() for c in stripped.strip("|").split("|")]
            if not all(set(c) <= set(":- ") for c in cells):
                table.append(cells)
            continue
        flush()
        if stripped:
            parts.append(f"<p>{html.escape(stripped.replace('**', ''))}</p>")
    flush()
    return "".join(parts)


def render_structure_png(markdown: str, dpi: int, width_pt: float = 640) -> tuple[bytes, int, int]:
    """A table or chart drawn from its cells (Markdown) as PNG, cropped to what was drawn."""
    css = ("body{font-family:sans-serif;font-size:10pt} table{border-collapse:collapse} "
           "td,th{border:1px solid #555;padding:2px 4px} th{background:#eee} p{margin:2px 0}")
    with PDF_LOCK:
        doc = pymupdf.open()
        page = doc.new_page(width=width_pt, height=4000)
        area = pymupdf.Rect(8, 8, width_pt - 8, 3992)
        spare, _scale = page.insert_htmlbox(area, _markdown_html(markdown) or "<p>(empty)</p>", css=css, scale_low=0.2)
        drawn = pymupdf.Rect(area.x0, area.y0, area.x0, area.y0)
        for block in page.get_text("dict")["blocks"]:
            drawn |= pymupdf.Rect(block["bbox"])
        for path in page.get_drawings():
            drawn |= path["rect"]
        clip = (drawn + (-4, -4, 4, 4)) & page.rect
        if clip.is_empty:
            clip = pymupdf.Rect(0, 0, width_pt, max(16.0, 4000 - spare))
        pix = page.get_pixmap(clip=clip, dpi=dpi)
        png = pix.tobytes("png")
        doc.close()
    return png, pix.width, pix.height


def _union(boxes: Sequence[Sequence[float]]) -> list[float]:
    return [min(b[0] for b in boxes), min(b[1] for b in boxes), max(b[2] for b in boxes), max(b[3] for b in boxes)]


def slide_size(path: Path) -> tuple[float, float] | None:
    """The deck's slide (width, height) in points; None when it cannot be read."""
    try:
        from pptx import Presentation

        prs = Presentation(str(path))
        return round(prs.slide_width.pt, 2), round(prs.slide_height.pt, 2)
    except Exception:  # the deck was read at ingest; a size is a nicety
        return None


def slide_quotes(document: DocumentRow, elements: Sequence[ElementRow], layout: Layout, dpi: int) -> list[QuoteRow]:
    """One quote per shape group (its texts merged), table, chart and picture of every slide.

    Speaker notes are not quotes (they are not on the slide); a picture whose image could not
    be saved at ingest is no image quote either."""
    size = slide_size(Path(document.path))
    by_slide: dict[int, list[ElementRow]] = {}
    for element in elements:
        if element.doc_id == document.doc_id and element.unit == "slide":
            by_slide.setdefault(element.number, []).append(element)
    rows: list[QuoteRow] = []
    for number in sorted(by_slide):
        items = sorted(by_slide[number], key=lambda e: e.order)
        page_size = list(size) if size else _union([e.bbox for e in items if e.bbox] or [[0, 0, 720, 540]])[2:]
        groups: list[tuple[str, list[ElementRow]]] = []  # (kind, members) in reading order
        open_groups: dict[str, int] = {}
        for element in items:
            if element.kind in SLIDE_TEXT_KINDS:
                if not element.text.strip():
                    continue
                outer = element.group_path.split("/")[0] if element.group_path else None
                if outer is not None and outer in open_groups:
                    groups[open_groups[outer]][1].append(element)
                    continue
                if outer is not None:
                    open_groups[outer] = len(groups)
                groups.append(("title" if element.kind == "title" else "text", [element]))
            elif element.kind in SLIDE_IMAGE_KINDS and (element.kind != "picture" or element.image_path):
                groups.append((SLIDE_IMAGE_KINDS[element.kind], [element]))
        for layout_id, (kind, members) in enumerate(groups):
            first = members[0]
            boxes = [m.bbox for m in members if m.bbox]
            fields: dict = {}
            text = "\n\n".join(m.text.strip() for m in members)
            if kind in IMAGE_TYPES:
                if kind == "picture":
                    fields = {"img_path": first.image_path, "img_width": first.image_width, "img_height": first.image_height,
                              "ocr_text": first.ocr_text, "ocr_status": first.ocr_status}
                    text = first.ocr_text or ""
                else:
                    png, width, height = render_structure_png(first.text, dpi)
                    stored = layout.save_image(png, "png")
                    fields = {"img_path": stored.rel_path, "img_width": width, "img_height": height,
                              "ocr_text": first.text, "ocr_status": "from_source"}
                fields |= {"vlm_text": first.vlm_text, "vlm_provider": first.vlm_provider, "vlm_model": first.vlm_model,
                           "vlm_prompt": first.vlm_prompt, "vlm_flag": first.vlm_flag}
            rows.append(QuoteRow(
                quote_id=quote_id_for(document.doc_id, number - 1, layout_id),
                doc_id=document.doc_id, source_path=document.path, unit="slide", page_id=number - 1, layout_id=layout_id,
                modality="image" if kind in IMAGE_TYPES else "text", type=kind, text=text,
                bbox=_union(boxes) if boxes else [0.0, 0.0, *page_size], page_size=page_size,
                element_id=first.element_id, layout_backend="python-pptx", **fields,
            ))
    return rows


def assign_chunks(quotes: Sequence[QuoteRow], chunks: Sequence[ChunkRow]) -> list[QuoteRow]:
    """Each quote gets the chunk covering its slide or page (the first part of a split chapter)."""
    by_slide: dict[tuple[str, int], str] = {}
    by_page: dict[str, list[tuple[int, int, int, int, str]]] = {}
    for chunk in chunks:
        if chunk.slide is not None:
            by_slide[(chunk.doc_id, chunk.slide)] = chunk.chunk_id
        elif chunk.page_start is not None:
            by_page.setdefault(chunk.doc_id, []).append(
                (chunk.page_start, chunk.page_end or chunk.page_start, chunk.chapter_index or 0, chunk.part_index, chunk.chunk_id)
            )
    for spans in by_page.values():
        spans.sort(key=lambda s: (s[2], s[3]))
    out = []
    for quote in quotes:
        number = quote.page_id + 1
        if quote.unit == "slide":
            chunk_id = by_slide.get((quote.doc_id, number))
        else:
            chunk_id = next((s[4] for s in by_page.get(quote.doc_id, []) if s[0] <= number <= s[1]), None)
        out.append(quote.model_copy(update={"chunk_id": chunk_id}))
    return out


def needs_description(quote: QuoteRow) -> bool:
    """True for an image quote without a VLM text or a VLM flag."""
    return quote.modality == "image" and not quote.vlm_text and not quote.vlm_flag


async def describe_quotes(
    quotes: Sequence[QuoteRow], root: Path, generator: Generator, prompt: PromptTemplate,
    on_done: Callable[[QuoteRow], None] | None = None,
) -> list[QuoteRow]:
    """VLM text for every image quote that has none yet (slide quotes bring theirs from ``describe``)."""

    async def describe(quote: QuoteRow) -> QuoteRow:
        image = image_input(root / quote.img_path) if quote.img_path else None
        structure = quote.ocr_text if quote.ocr_status == "from_source" else ""
        visual = Visual(quote.type, quote.unit, quote.page_id + 1, Path(quote.source_path).name, structure or "",
                        quote.ocr_text if quote.ocr_status != "from_source" else None, image, quote.img_width, quote.img_height)
        source = f"{quote.text or ''}\n{quote.ocr_text or ''}"
        return quote.model_copy(update=vlm_fields(await describe_visual(visual, generator, prompt), source))

    described = {q.quote_id: q for q in await run_items([q for q in quotes if needs_description(q)], describe, on_done)}
    return [described.get(q.quote_id, q) for q in quotes]


def quote_counts(quotes: Sequence[QuoteRow]) -> dict[str, int]:
    """Quotes per type, sorted by type."""
    counts: dict[str, int] = {}
    for quote in quotes:
        counts[quote.type] = counts.get(quote.type, 0) + 1
    return dict(sorted(counts.items()))
