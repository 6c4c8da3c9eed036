"""Slide decks with python-pptx: one slide in, its elements out, in reading order.

Per slide: title, text with bullet levels, tables (merged cells repeated into the cells
they span), charts as a categories x series data table (from python-pptx, or from the
chart XML's cached values for plot types python-pptx cannot read, such as 3-D bar
charts), SmartArt text, pictures (stored once, content-addressed, OCR'd when they carry
text; a picture of a table also becomes a ``table`` element read from its OCR word boxes,
``tasks.ingest.extract.ocr_table``) and speaker notes.  Group shapes are walked recursively and their children placed
by their absolute position on the slide.
"""

from __future__ import annotations

import zipfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from lxml import etree
from pptx import Presentation
from pptx.enum.shapes import MSO_SHAPE_TYPE, PP_PLACEHOLDER
from pptx.exc import PackageNotFoundError
from pptx.oxml.ns import qn

from ragprep import __version__
from ragprep.ids import element_id_for
from ragprep.settings import LimitsSettings
from schemas.elements import ElementRow
from tasks.ingest.extract.archive import check_archive
from tasks.ingest.extract.base import (
    DocumentError,
    ExtractContext,
    ExtractedDocument,
    dumps_meta,
)
from tasks.ingest.extract.markdown import (
    bullet,
    chart_markdown,
    markdown_table,
    quote_block,
)
from tasks.ingest.extract.ocr_table import read_table
from tasks.ingest.extract.ocr_text import clean_ocr_text

EMU_PER_POINT = 12700
OLE_MAGIC = bytes.fromhex("D0CF11E0A1B11AE1")
OCR_FORMATS = {"png", "jpg", "jpeg", "gif", "bmp", "tif", "tiff"}
TITLE_TYPES = {PP_PLACEHOLDER.TITLE, PP_PLACEHOLDER.CENTER_TITLE, PP_PLACEHOLDER.VERTICAL_TITLE}
BULLET_PLACEHOLDERS = {PP_PLACEHOLDER.BODY, PP_PLACEHOLDER.OBJECT, PP_PLACEHOLDER.VERTICAL_BODY, PP_PLACEHOLDER.VERTICAL_OBJECT}
FURNITURE_TYPES = {PP_PLACEHOLDER.SLIDE_NUMBER, PP_PLACEHOLDER.FOOTER, PP_PLACEHOLDER.DATE}
DIAGRAM_URI = "http://schemas.openxmlformats.org/drawingml/2006/diagram"
NS = {
    "c": "http://schemas.openxmlformats.org/drawingml/2006/chart",
    "a": "http://schemas.openxmlformats.org/drawingml/2006/main",
    "dgm": "http://schemas.openxmlformats.org/drawingml/2006/diagram",
    "r": "http://schemas.openxmlformats.org/officeDocument/2006/relationships",
}

Transform = Callable[[float, float], tuple[float, float]]
"""Maps a shape's (x, y) or (width, height) scale from its parent space to slide space."""


@dataclass
class _Placed:
    shape: object
    x: float
    y: float
    w: float
    h: float
    group_path: list[str]
    placeholder: object | None = None
    """The shape's placeholder type (PP_PLACEHOLDER), looked up once: python-pptx runs an
    XPath query on every ``is_placeholder`` / ``placeholder_format`` / ``shape_type`` access."""
    shape_type: object | None = None
    children: list[_Placed] = field(default_factory=list)


def _open_presentation(path: Path, limits: LimitsSettings):
    with open(path, "rb") as handle:
        head = handle.read(8)
    if not head:
        raise DocumentError(f"{path.name}: empty file (0 bytes)")
    if head.startswith(b"%PDF-"):
        raise DocumentError(f"{path.name}: not a PowerPoint deck but a PDF; rename it to .pdf")
    if head == OLE_MAGIC:
        raise DocumentError(
            f"{path.name}: password-protected (encrypted) or legacy binary PowerPoint file; "
            "remove the password or re-save it as .pptx"
        )
    check_archive(path, limits)  # before python-pptx reads every member into memory
    try:
        return Presentation(str(path))
    except (zipfile.BadZipFile, PackageNotFoundError, EOFError) as exc:
        detail = f": {exc}" if isinstance(exc, zipfile.BadZipFile) and "CRC" in str(exc) else ""
        raise DocumentError(f"{path.name}: not a readable PPTX (corrupt or truncated zip archive{detail})") from exc
    except KeyError as exc:
        raise DocumentError(f"{path.name}: not a PowerPoint deck (missing part {exc})") from exc


def _group_child_transform(group) -> tuple[float, float, float, float, float, float]:
    """(off_x, off_y, ch_off_x, ch_off_y, scale_x, scale_y) of a group's child space."""
    xfrm = group._element.grpSpPr.find(qn("a:xfrm"))
    if xfrm is None:
        return 0.0, 0.0, 0.0, 0.0, 1.0, 1.0

    def pair(tag: str, a: str, b: str) -> tuple[float, float]:
        node = xfrm.find(qn(tag))
        return (float(node.get(a, 0)), float(node.get(b, 0))) if node is not None else (0.0, 0.0)

    off, ext = pair("a:off", "x", "y"), pair("a:ext", "cx", "cy")
    ch_off, ch_ext = pair("a:chOff", "x", "y"), pair("a:chExt", "cx", "cy")
    sx = ext[0] / ch_ext[0] if ch_ext[0] else 1.0
    sy = ext[1] / ch_ext[1] if ch_ext[1] else 1.0
    return off[0], off[1], ch_off[0], ch_off[1], sx, sy


def _place_shapes(shapes: Iterable, to_slide, group_path: list[str], band: float) -> list[_Placed]:
    placed: list[_Placed] = []
    for shape in shapes:
        left, top = shape.left or 0, shape.top or 0
        width, height = shape.width or 0, shape.height or 0
        x, y, w, h = to_slide(left, top, width, height)
        item = _Placed(shape, x, y, w, h, group_path, _placeholder_type(shape), shape.shape_type)
        if item.shape_type == MSO_SHAPE_TYPE.GROUP:
            ox, oy, cx, cy, sx, sy = _group_child_transform(shape)

            def child_to_slide(cl, ct, cw, ch, _ox=ox, _oy=oy, _cx=cx, _cy=cy, _sx=sx, _sy=sy):
                return to_slide(_ox + (cl - _cx) * _sx, _oy + (ct - _cy) * _sy, cw * _sx, ch * _sy)

            item.children = _place_shapes(shape.shapes, child_to_slide, group_path + [shape.name], band)
        placed.append(item)
    placed.sort(key=lambda p: (p.placeholder not in TITLE_TYPES, int(p.y // band), p.x, p.y))
    return placed


def _flatten(placed: list[_Placed]) -> list[_Placed]:
    out: list[_Placed] = []
    for item in placed:
        if item.children or item.shape_type == MSO_SHAPE_TYPE.GROUP:
            out.extend(_flatten(item.children))
        else:
            out.append(item)
    return out


def _placeholder_type(shape):
    ph = getattr(shape._element, "ph", None)
    return ph.type if ph is not None else None


def _one_line(text: str) -> str:
    return " ".join(text.replace("\v", " ").split())


def _text_frame_markdown(text_frame, bullets_by_default: bool) -> str:
    parts: list[str] = []
    previous_bullet = False
    for paragraph in text_frame.paragraphs:
        text = _one_line(paragraph.text)
        if not text:
            continue
        ppr = paragraph._p.pPr
        explicit = ppr is not None and (ppr.find(qn("a:buChar")) is not None or ppr.find(qn("a:buAutoNum")) is not None)
        suppressed = ppr is not None and ppr.find(qn("a:buNone")) is not None
        is_bullet = explicit or paragraph.level > 0 or (bullets_by_default and not suppressed)
        line = bullet(text, paragraph.level) if is_bullet else text
        if parts:
            parts.append("\n" if (is_bullet and previous_bullet) else "\n\n")
        parts.append(line)
        previous_bullet = is_bullet
    return "".join(parts)


def _table_grid(table) -> tuple[list[list[str]], int]:
    """Cell texts with merged regions repeated into every cell they cover; also the merge count."""
    n_rows, n_cols = len(table.rows), len(table.columns)
    grid = [["" for _ in range(n_cols)] for _ in range(n_rows)]
    merges = 0
    for r in range(n_rows):
        for c in range(n_cols):
            cell = table.cell(r, c)
            if cell.is_spanned:
                continue
            text = _one_line(cell.text_frame.text if cell.text_frame else "")
            if cell.is_merge_origin:
                merges += 1
                for rr in range(r, min(r + cell.span_height, n_rows)):
                    for cc in range(c, min(c + cell.span_width, n_cols)):
                        grid[rr][cc] = text
            else:
                grid[r][c] = text
    return grid, merges


def _chart_from_api(chart) -> tuple[str | None, str, list[str], list[tuple[str, list]]]:
    chart_type = chart.chart_type.name.lower()
    title = _one_line(chart.chart_title.text_frame.text) if chart.has_title else None
    categories: list[str] = []
    series: list[tuple[str, list]] = []
    for plot in chart.plots:
        if not categories:
            categories = [str(c) for c in plot.categories]
        for s in plot.series:
            series.append((s.name or f"Series {len(series) + 1}", list(s.values)))
    return title or None, chart_type, categories, series


def _pt_values(node) -> list[tuple[int, str]]:
    if node is None:
        return []
    return sorted(
        (int(pt.get("idx", 0)), (pt.findtext("c:v", namespaces=NS) or ""))
        for pt in node.iterfind(".//c:pt", NS)
    )


def _dense(points: list[tuple[int, str]]) -> list[str]:
    if not points:
        return []
    out = [""] * (max(i for i, _ in points) + 1)
    for i, v in points:
        out[i] = v
    return out


def _to_float(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def _series_or_title_text(node) -> str | None:
    """Text of a c:tx or c:title: rich-text runs, else the cached string value (never the formula)."""
    if node is None:
        return None
    runs = [t.text or "" for t in node.iterfind(".//a:t", NS)]
    if runs:
        return _one_line("".join(runs)) or None
    cached = [v.text or "" for v in node.iterfind(".//c:v", NS)]
    return _one_line(" ".join(cached)) or None


def chart_from_xml(chart_space) -> tuple[str | None, str, list[str], list[tuple[str, list]]]:
    """Read a chart's cached categories and values straight from its XML (any plot type)."""
    plot_area = chart_space.find(".//c:plotArea", NS)
    title_node = chart_space.find("c:chart/c:title", NS)
    title = _series_or_title_text(title_node)
    kinds: list[str] = []
    categories: list[str] = []
    series: list[tuple[str, list]] = []
    for plot in plot_area if plot_area is not None else []:
        tag = etree.QName(plot).localname
        if not tag.endswith("Chart"):
            continue
        bar_dir = plot.find("c:barDir", NS)
        kinds.append(tag + (f"/{bar_dir.get('val')}" if bar_dir is not None else ""))
        for ser in plot.iterfind("c:ser", NS):
            name = _series_or_title_text(ser.find("c:tx", NS)) or ""
            cat_node = ser.find("c:cat", NS) if ser.find("c:cat", NS) is not None else ser.find("c:xVal", NS)
            val_node = ser.find("c:val", NS) if ser.find("c:val", NS) is not None else ser.find("c:yVal", NS)
            cats = _dense(_pt_values(cat_node))
            if cats and not categories:
                categories = cats
            values = [_to_float(v) for v in _dense(_pt_values(val_node))]
            series.append((name or f"Series {len(series) + 1}", values))
    return title or None, "+".join(kinds) or "unknown", categories, series


def heading_like(text: str) -> bool:
    """One short line that reads as a heading: 2-15 words with letters, no list marker, no closing full stop."""
    line = text.strip()
    if not line or "\n" in line or line.startswith(("- ", "* ", "• ")) or line.endswith((".", ",", ";", ":")):
        return False
    words = line.split()
    return 2 <= len(words) <= 15 and len(line) <= 120 and sum(ch.isalpha() for ch in line) >= 0.5 * len(line.replace(" ", ""))


def _smartart_text(shape, slide_part) -> str | None:
    graphic_data = shape._element.find(".//" + qn("a:graphicData"))
    if graphic_data is None or graphic_data.get("uri") != DIAGRAM_URI:
        return None
    rel_ids = graphic_data.find("dgm:relIds", NS)
    if rel_ids is None:
        return ""
    data_part = slide_part.related_part(rel_ids.get(qn("r:dm")))
    root = etree.fromstring(data_part.blob)
    lines = []
    for pt in root.iterfind(".//dgm:pt", NS):
        if pt.get("type") not in (None, "node"):
            continue
        text_body = pt.find("dgm:t", NS)
        if text_body is None:
            continue
        for paragraph in text_body.iterfind("a:p", NS):
            text = _one_line("".join(paragraph.itertext()))
            if text:
                lines.append(bullet(text, 0))
    return "\n".join(lines)


class _SlideBuilder:
    def __init__(self, ctx: ExtractContext, slide_number: int) -> None:
        self.ctx = ctx
        self.number = slide_number
        self.rows: list[ElementRow] = []
        self.warnings: list[str] = []
        self.n_ocr = 0

    def add(self, kind: str, text: str, item: _Placed | None, extractor: str = "python-pptx", **extra) -> None:
        order = len(self.rows)
        bbox = None
        if item is not None:
            bbox = [round(v / EMU_PER_POINT, 2) for v in (item.x, item.y, item.x + item.w, item.y + item.h)]
        self.rows.append(
            ElementRow(
                element_id=element_id_for(self.ctx.doc_id, "slide", self.number, order, kind),
                doc_id=self.ctx.doc_id,
                source_path=self.ctx.source_path,
                unit="slide",
                number=self.number,
                order=order,
                kind=kind,
                text=text,
                bbox=bbox,
                group_path="/".join(item.group_path) if item and item.group_path else None,
                extractor=extractor,
                **extra,
            )
        )

    def promote_title(self) -> None:
        """A slide without a title placeholder takes its first heading-like text (one short line, no bullet,
        no full stop, before any notes) as its title, so its chunk is not named "Slide N"."""
        if any(row.kind == "title" for row in self.rows):
            return
        for index, row in enumerate(self.rows):
            if row.kind == "text" and heading_like(row.text):
                element_id = element_id_for(self.ctx.doc_id, "slide", self.number, row.order, "title")
                self.rows[index] = row.model_copy(update={"kind": "title", "element_id": element_id})
                return

    def picture(self, item: _Placed) -> None:
        shape = item.shape
        try:
            image = shape.image
        except (AttributeError, ValueError, KeyError) as exc:
            self.warnings.append(f"slide {self.number}: picture {shape.name!r} has no embedded image ({exc})")
            return
        ext = (image.ext or "bin").lower()
        stored = self.ctx.layout.save_image(image.blob, ext)
        try:
            width, height = image.size
        except Exception:  # vector formats python-pptx cannot measure
            width = height = None
        alt = shape._element.find(".//" + qn("p:cNvPr"))
        label = (alt.get("descr") if alt is not None else None) or shape.name
        size = f" ({width}x{height} px)" if width else ""
        text = f"![{_one_line(label)}{size}]({stored.rel_path})"
        ocr_status, ocr_text, meta_note, grid = "not_needed", None, None, None
        small = width is not None and min(width, height) < self.ctx.settings.ocr.min_image_px
        if ext not in OCR_FORMATS:
            meta_note = f"{ext} image not OCR'd (vector format)"
        elif small:
            meta_note = "too small to OCR"
        else:
            ocr_status, result, warning = self.ctx.ocr_image(image.blob)
            if warning:
                self.warnings.append(f"slide {self.number}: picture {shape.name!r}: {warning}")
            if ocr_status == "ok" and result is not None:
                ocr_text = result.text
                self.n_ocr += 1
                cleaned = clean_ocr_text(result.text)  # garbage lines out, spaced-out syllables joined
                grid = read_table(result.words)
                if grid:
                    meta_note = "read as a table: the table element after this picture"
                elif cleaned:
                    text += "\n\n" + quote_block(f'OCR text of picture "{_one_line(label)}"', cleaned)
                else:
                    meta_note = "OCR text was no words (left out of the chunk; kept in ocr_text)"
        self.add(
            "picture",
            text,
            item,
            extractor="python-pptx+tesseract" if ocr_text else "python-pptx",
            image_path=stored.rel_path,
            image_width=width,
            image_height=height,
            ocr_text=ocr_text,
            ocr_status=ocr_status,
            meta=dumps_meta(format=ext, sha256=stored.sha256, note=meta_note),
        )
        if grid:
            self.add("table", markdown_table(grid), item, extractor="tesseract-grid", text_source="ocr",
                     meta=dumps_meta(rows=len(grid), cols=len(grid[0]), read_from="picture", sha256=stored.sha256))

    def chart(self, item: _Placed) -> None:
        chart = item.shape.chart
        extractor = "python-pptx"
        try:
            title, chart_type, categories, series = _chart_from_api(chart)
        except (NotImplementedError, KeyError, ValueError, AttributeError, TypeError):
            title, chart_type, categories, series = chart_from_xml(chart._chartSpace)
            extractor = "chart-xml"
        text = chart_markdown(title, chart_type, categories, series)
        meta = dumps_meta(chart_type=chart_type, title=title, n_series=len(series), n_categories=len(categories))
        self.add("chart", text, item, extractor=extractor, meta=meta)

    def table(self, item: _Placed) -> None:
        grid, merges = _table_grid(item.shape.table)
        meta = dumps_meta(rows=len(grid), cols=len(grid[0]) if grid else 0, merged_regions=merges)
        self.add("table", markdown_table(grid), item, meta=meta)

    def shape(self, item: _Placed, slide_part) -> None:
        shape = item.shape
        if item.placeholder in FURNITURE_TYPES:
            return
        if item.placeholder in TITLE_TYPES:
            title = _one_line(shape.text_frame.text)
            if title:
                self.add("title", title, item)
            return
        if getattr(shape, "has_chart", False) and shape.has_chart:
            self.chart(item)
            return
        if getattr(shape, "has_table", False) and shape.has_table:
            self.table(item)
            return
        if item.shape_type == MSO_SHAPE_TYPE.PICTURE or (item.placeholder is not None and hasattr(shape, "image")):
            self.picture(item)
            return
        if shape._element.tag == qn("p:graphicFrame"):
            smart = _smartart_text(shape, slide_part)
            if smart:
                self.add("smartart", smart, item)
            return
        if getattr(shape, "has_text_frame", False) and shape.has_text_frame:
            bullets = item.placeholder in BULLET_PLACEHOLDERS
            text = _text_frame_markdown(shape.text_frame, bullets)
            if text:
                self.add("text", text, item)


def extract_pptx(path: Path, ctx: ExtractContext) -> ExtractedDocument:
    """The elements of every slide (shapes in reading order, then notes); unreadable shapes and slides become warnings."""
    presentation = _open_presentation(path, ctx.settings.limits)
    slides = list(presentation.slides)
    band = (presentation.slide_height or 6858000) / 24
    elements: list[ElementRow] = []
    warnings: list[str] = []
    n_ocr = 0
    title: str | None = None
    for number, slide in enumerate(slides, start=1):
        builder = _SlideBuilder(ctx, number)
        try:
            placed = _flatten(_place_shapes(slide.shapes, lambda x, y, w, h: (x, y, w, h), [], band))
            for item in placed:
                try:
                    builder.shape(item, slide.part)
                except Exception as exc:  # one odd shape must not lose the slide
                    builder.warnings.append(f"slide {number}: shape {item.shape.name!r} skipped: {type(exc).__name__}: {exc}")
            builder.promote_title()
            if slide.has_notes_slide and slide.notes_slide.notes_text_frame is not None:
                notes = slide.notes_slide.notes_text_frame.text.strip()
                if notes:
                    builder.add("notes", notes, None)
        except Exception as exc:
            builder.warnings.append(f"slide {number}: unreadable: {type(exc).__name__}: {exc}")
        if title is None:
            title = next((row.text for row in builder.rows if row.kind == "title"), None)
        elements.extend(builder.rows)
        warnings.extend(builder.warnings)
        n_ocr += builder.n_ocr
        ctx.report(number, len(slides))
    core_title = (presentation.core_properties.title or "").strip()
    return ExtractedDocument(
        format="pptx",
        n_units=len(slides),
        title=core_title or title,
        elements=elements,
        warnings=warnings,
        n_ocr_units=n_ocr,
        extractor=f"ragprep {__version__} pptx backend (python-pptx)",
    )
