"""Deterministic generator for the ragprep sample corpus.

Run from the repository root (or anywhere) with::

    .venv/bin/python sample_docs/generate.py          # (re)generate all files
    .venv/bin/python sample_docs/generate.py --check  # print a summary of the outputs

All files are written into the directory that contains this script and are
byte-for-byte reproducible between runs, because content-hash ids in ragprep
depend on them:

* PPTX core properties (created / modified / last_modified_by / revision /
  author / title) are fixed constants.
* PPTX (and the XLSX workbooks python-pptx embeds behind every chart) are
  re-zipped with a fixed member timestamp of 1980-01-01 00:00:00, the original
  stable member order and fixed file attributes; the embedded workbook's
  ``docProps/core.xml`` dates (XlsxWriter stamps "now") are also pinned.
* PDF metadata (creationDate / modDate / producer / creator ...) is fixed and
  the file is saved without a fresh random /ID.

Requirements: python-pptx, pymupdf, pillow and a TrueType font for the raster
images.  DejaVu Sans (Debian package ``fonts-dejavu-core``) was already present
under /usr/share/fonts/truetype/dejavu on the machine that produced the
committed files, so nothing extra had to be installed.  Note that PNG bytes
depend on the font file and the Pillow/zlib versions, so regenerating on a
machine with different versions may change the image bytes (and therefore the
file hashes) even though the script itself is deterministic.

The ``--check`` mode additionally runs ``tesseract`` (if installed) on every
picture embedded in the decks to confirm the OCR text is recoverable.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import io
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

import pymupdf
from lxml import etree
from PIL import Image, ImageDraw, ImageFont
from pptx import Presentation
from pptx.chart.data import CategoryChartData
from pptx.enum.chart import XL_CHART_TYPE, XL_LEGEND_POSITION
from pptx.enum.text import PP_ALIGN
from pptx.oxml.ns import qn
from pptx.util import Inches, Pt

OUT_DIR = Path(__file__).resolve().parent

FIXED_DATETIME = _dt.datetime(2024, 1, 1, 0, 0, 0)
FIXED_ISO = "2024-01-01T00:00:00Z"
FIXED_PDF_DATE = "D:20240101000000+00'00'"
ZIP_EPOCH = (1980, 1, 1, 0, 0, 0)
AUTHOR = "ragprep sample generator"

FONT_CANDIDATES = [
    "/usr/share/fonts/truetype/dejavu/DejaVuSans-Bold.ttf",
    "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/dejavu/DejaVuSans-Bold.ttf",
    "/usr/share/fonts/TTF/DejaVuSans-Bold.ttf",
]


# --------------------------------------------------------------------------
# Raster helpers (Pillow)
# --------------------------------------------------------------------------


def _font(size: int) -> ImageFont.FreeTypeFont:
    for cand in FONT_CANDIDATES:
        if Path(cand).is_file():
            return ImageFont.truetype(cand, size)
    raise SystemExit(
        "No TrueType font found; install the Debian package fonts-dejavu-core "
        "(apt-get install fonts-dejavu-core)."
    )


def _png_bytes(img: Image.Image) -> bytes:
    buf = io.BytesIO()
    # No text chunks / timestamps are written by Pillow unless pnginfo is given.
    img.save(buf, format="PNG", optimize=False, compress_level=9)
    return buf.getvalue()


def make_label_png(lines: list[str], size=(800, 400), font_px: int = 60) -> bytes:
    """White image with large, black, centred lines of text (OCR friendly)."""
    img = Image.new("RGB", size, "white")
    draw = ImageDraw.Draw(img)
    font = _font(font_px)
    gap = font_px // 2
    heights = []
    widths = []
    for line in lines:
        left, top, right, bottom = draw.textbbox((0, 0), line, font=font)
        widths.append(right - left)
        heights.append(bottom - top)
    total_h = sum(heights) + gap * (len(lines) - 1)
    y = (size[1] - total_h) // 2
    for line, w, h in zip(lines, widths, heights):
        left, top, _, _ = draw.textbbox((0, 0), line, font=font)
        draw.text(((size[0] - w) // 2 - left, y - top), line, fill="black", font=font)
        y += h + gap
    return _png_bytes(img)


def make_pulse_diagram_png() -> bytes:
    """Idealised crash-pulse diagram with clear text labels (for the PDF)."""
    w, h = 900, 450
    img = Image.new("RGB", (w, h), "white")
    d = ImageDraw.Draw(img)
    title_font = _font(34)
    label_font = _font(24)
    x0, y0 = 110, 380  # origin
    x1, y1 = 860, 90
    d.line([(x0, y0), (x1, y0)], fill="black", width=3)  # time axis
    d.line([(x0, y0), (x0, y1 - 20)], fill="black", width=3)  # decel axis
    # tick marks every 20 ms over 0..120 ms
    for i in range(7):
        x = x0 + i * (x1 - x0) // 6
        d.line([(x, y0), (x, y0 + 10)], fill="black", width=2)
        d.text((x - 12, y0 + 14), str(i * 20), fill="black", font=_font(18))
    # idealised trapezoid-ish pulse
    pts = [
        (x0, y0),
        (x0 + 60, y0 - 110),
        (x0 + 150, y0 - 170),
        (x0 + 330, y0 - 230),
        (x0 + 420, y0 - 250),
        (x0 + 520, y0 - 120),
        (x0 + 620, y0),
    ]
    d.line(pts, fill="black", width=5, joint="curve")
    d.text((x0 + 330, y0 - 300), "PEAK 38 g", fill="black", font=label_font)
    d.text((250, 20), "IDEALIZED CRASH PULSE", fill="black", font=title_font)
    d.text((x1 - 170, y0 + 40), "TIME (ms)", fill="black", font=label_font)
    d.text((10, y1 - 60), "DECEL (g)", fill="black", font=label_font)
    return _png_bytes(img)


# --------------------------------------------------------------------------
# PPTX helpers (python-pptx)
# --------------------------------------------------------------------------

LAYOUT_TITLE = 0
LAYOUT_TITLE_CONTENT = 1
LAYOUT_TITLE_ONLY = 5


def _fix_core_props(prs: Presentation, title: str, subject: str) -> None:
    cp = prs.core_properties
    cp.title = title
    cp.subject = subject
    cp.author = AUTHOR
    cp.last_modified_by = AUTHOR
    cp.revision = 1
    cp.created = FIXED_DATETIME
    cp.modified = FIXED_DATETIME
    cp.last_printed = FIXED_DATETIME
    cp.keywords = "ragprep sample"
    cp.category = "sample"
    cp.comments = ""


def _title_slide(prs, title: str, lines: list[str], font_pt: int = 20):
    """Title-slide layout, title placeholder + a plain text box with key lines.

    The layout's subtitle placeholder is removed so the body text lives in a
    genuine text box (one paragraph per line).
    """
    slide = prs.slides.add_slide(prs.slide_layouts[LAYOUT_TITLE])
    slide.shapes.title.text = title
    for ph in list(slide.placeholders):
        if ph.placeholder_format.idx != 0:
            ph._element.getparent().remove(ph._element)
    box = slide.shapes.add_textbox(Inches(1.0), Inches(4.1), Inches(8.0), Inches(2.6))
    box.name = "Test Summary"
    tf = box.text_frame
    tf.word_wrap = True
    for i, line in enumerate(lines):
        p = tf.paragraphs[0] if i == 0 else tf.add_paragraph()
        p.text = line
        p.alignment = PP_ALIGN.LEFT
        for r in p.runs:
            r.font.size = Pt(font_pt)
    return slide


def _bullet_slide(prs, title: str, items: list[tuple[int, str]]):
    slide = prs.slides.add_slide(prs.slide_layouts[LAYOUT_TITLE_CONTENT])
    slide.shapes.title.text = title
    body = slide.placeholders[1].text_frame
    for i, (level, text) in enumerate(items):
        p = body.paragraphs[0] if i == 0 else body.add_paragraph()
        p.text = text
        p.level = level
    return slide


def _title_only(prs, title: str):
    slide = prs.slides.add_slide(prs.slide_layouts[LAYOUT_TITLE_ONLY])
    slide.shapes.title.text = title
    return slide


def _set_notes(slide, text: str) -> None:
    slide.notes_slide.notes_text_frame.text = text


def _fill_table(table, rows: list[list[str]], font_pt: int = 14) -> None:
    for r, row in enumerate(rows):
        for c, val in enumerate(row):
            cell = table.cell(r, c)
            if cell.is_spanned:
                continue
            cell.text = val
            for p in cell.text_frame.paragraphs:
                for run in p.runs:
                    run.font.size = Pt(font_pt)


def _measurement_table_slide(prs, title: str, metric_rows: list[list[str]]):
    """Two header rows: 'Measured' spans Driver+Passenger (horizontal merge);
    'Metric' and 'Limit' span both header rows (vertical merges)."""
    slide = _title_only(prs, title)
    n_rows = 2 + len(metric_rows)
    shape = slide.shapes.add_table(
        n_rows, 4, Inches(0.6), Inches(1.7), Inches(8.8), Inches(0.45 * n_rows)
    )
    shape.name = "Measurements"
    table = shape.table
    table.columns[0].width = Inches(3.4)
    for i in (1, 2, 3):
        table.columns[i].width = Inches(1.8)
    table.cell(0, 1).merge(table.cell(0, 2))  # header spanning 2 columns
    table.cell(0, 0).merge(table.cell(1, 0))
    table.cell(0, 3).merge(table.cell(1, 3))
    rows = [
        ["Metric", "Measured", "", "Limit"],
        ["", "Driver", "Passenger", ""],
    ] + metric_rows
    _fill_table(table, rows)
    return slide


def _to_three_d_column(chart) -> None:
    """Rewrite a python-pptx clustered-column chart into a true 3-D column chart.

    python-pptx cannot *write* XL_CHART_TYPE.THREE_D_COLUMN, so we build a
    COLUMN_CLUSTERED chart and transform its XML: c:barChart -> c:bar3DChart
    (grouping "standard", box shape, a third axis id) plus a c:serAx depth
    axis and a c:view3D element - the layout PowerPoint uses for "3-D Column".
    """
    cs = chart._chartSpace
    c_chart = cs.find(qn("c:chart"))
    plot_area = c_chart.find(qn("c:plotArea"))
    bar = plot_area.find(qn("c:barChart"))
    bar.tag = qn("c:bar3DChart")
    bar.find(qn("c:grouping")).set("val", "standard")
    for tag in ("c:overlap", "c:serLines"):
        for el in bar.findall(qn(tag)):
            bar.remove(el)
    ax_ids = bar.findall(qn("c:axId"))
    val_id = ax_ids[1].get("val")
    ser_ax_id = "-2068030304"
    if bar.find(qn("c:gapWidth")) is None:
        gap_width = etree.Element(qn("c:gapWidth"))
        gap_width.set("val", "150")
        ax_ids[0].addprevious(gap_width)
    gap_depth = etree.Element(qn("c:gapDepth"))
    gap_depth.set("val", "150")
    shape = etree.Element(qn("c:shape"))
    shape.set("val", "box")
    ax_ids[0].addprevious(gap_depth)
    ax_ids[0].addprevious(shape)
    third = etree.Element(qn("c:axId"))
    third.set("val", ser_ax_id)
    ax_ids[1].addnext(third)

    # depth (series) axis after the value axis
    val_ax = plot_area.find(qn("c:valAx"))
    ser_ax = etree.fromstring(
        '<c:serAx xmlns:c="http://schemas.openxmlformats.org/drawingml/2006/chart">'
        f'<c:axId val="{ser_ax_id}"/>'
        '<c:scaling><c:orientation val="minMax"/></c:scaling>'
        '<c:delete val="0"/><c:axPos val="b"/>'
        '<c:majorTickMark val="out"/><c:minorTickMark val="none"/>'
        '<c:tickLblPos val="nextTo"/>'
        f'<c:crossAx val="{val_id}"/><c:crosses val="autoZero"/>'
        "</c:serAx>"
    )
    val_ax.addnext(ser_ax)

    view3d = etree.fromstring(
        '<c:view3D xmlns:c="http://schemas.openxmlformats.org/drawingml/2006/chart">'
        '<c:rotX val="15"/><c:rotY val="20"/><c:depthPercent val="100"/>'
        '<c:rAngAx val="0"/><c:perspective val="30"/>'
        "</c:view3D>"
    )
    plot_area.addprevious(view3d)


def _chart_slide(prs, title, chart_type, chart_title, categories, series, notes=None):
    slide = _title_only(prs, title)
    data = CategoryChartData()
    data.categories = categories
    for name, values in series:
        data.add_series(name, values)
    build_type = (
        XL_CHART_TYPE.COLUMN_CLUSTERED
        if chart_type == XL_CHART_TYPE.THREE_D_COLUMN
        else chart_type
    )
    gf = slide.shapes.add_chart(
        build_type, Inches(0.7), Inches(1.6), Inches(8.6), Inches(5.4), data
    )
    gf.name = "Chart"
    chart = gf.chart
    chart.has_title = True
    chart.chart_title.text_frame.text = chart_title
    chart.has_legend = True
    chart.legend.position = XL_LEGEND_POSITION.BOTTOM
    chart.legend.include_in_layout = False
    if chart_type == XL_CHART_TYPE.THREE_D_COLUMN:
        _to_three_d_column(chart)
    if notes:
        _set_notes(slide, notes)
    return slide


def _picture_slide(prs, title, png: bytes, caption: str):
    slide = _title_only(prs, title)
    pic = slide.shapes.add_picture(io.BytesIO(png), Inches(1.0), Inches(1.7), width=Inches(8.0))
    pic.name = "Camera Overlay"
    box = slide.shapes.add_textbox(Inches(1.0), Inches(6.0), Inches(8.0), Inches(0.6))
    box.text_frame.text = caption
    return slide


def _textbox(shapes, text, left, top, width=3.6, height=0.6, pt=16):
    box = shapes.add_textbox(Inches(left), Inches(top), Inches(width), Inches(height))
    box.text_frame.word_wrap = True
    box.text_frame.text = text
    for r in box.text_frame.paragraphs[0].runs:
        r.font.size = Pt(pt)
    return box


def _nested_group_slide(prs, title, outer_text, inner_texts, notes=None):
    """Group shape containing a text box and a nested group of text boxes."""
    slide = _title_only(prs, title)
    outer = slide.shapes.add_group_shape()
    outer.name = "Outer Group"
    _textbox(outer.shapes, outer_text, 1.0, 1.8, width=8.0, pt=20)
    inner = outer.shapes.add_group_shape()
    inner.name = "Inner Group"
    for i, text in enumerate(inner_texts):
        _textbox(inner.shapes, text, 1.0, 3.0 + 0.8 * i, width=8.0)
    # python-pptx only recomputes the extents of the group being added to, so
    # refresh the outer group now that the nested group is populated.
    outer.shapes._recalculate_extents()
    if notes:
        _set_notes(slide, notes)
    return slide


# --------------------------------------------------------------------------
# Deterministic zip rewriting
# --------------------------------------------------------------------------

_CORE_DATE_RE = re.compile(
    rb"(<dcterms:(created|modified)\b[^>]*>)[^<]*(</dcterms:\2>)"
)


def _pin_core_dates(xml: bytes) -> bytes:
    return _CORE_DATE_RE.sub(
        lambda m: m.group(1) + FIXED_ISO.encode() + m.group(3), xml
    )


def normalize_zip(data: bytes) -> bytes:
    """Re-zip with fixed timestamps/attributes; recurse into embedded xlsx."""
    src = zipfile.ZipFile(io.BytesIO(data))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as dst:
        for info in src.infolist():  # original (stable) member order
            blob = src.read(info.filename)
            if info.filename.lower().endswith(".xlsx"):
                blob = normalize_zip(blob)
            elif info.filename == "docProps/core.xml":
                blob = _pin_core_dates(blob)
            zi = zipfile.ZipInfo(info.filename, date_time=ZIP_EPOCH)
            zi.compress_type = zipfile.ZIP_DEFLATED
            zi.create_system = 0
            zi.external_attr = 0
            dst.writestr(zi, blob, compresslevel=6)
    return out.getvalue()


def save_pptx(prs: Presentation, name: str) -> Path:
    buf = io.BytesIO()
    prs.save(buf)
    path = OUT_DIR / name
    path.write_bytes(normalize_zip(buf.getvalue()))
    return path


# --------------------------------------------------------------------------
# Crash-test report decks
# --------------------------------------------------------------------------

TIME_CATEGORIES = ["0 ms", "20 ms", "40 ms", "60 ms", "80 ms"]

CRASH_DECKS = [
    {
        "file": "crash_report_frontal_offset.pptx",
        "title": "Frontal Offset Crash Test Report",
        "meta": [
            "Test Name: FO-2024-017 ODB 64 km/h",
            "Region: EU",
            "Stage: Prototype P2",
            "Purpose: Verify driver chest deflection after airbag retune",
        ],
        "setup_title": "Test Setup",
        "setup": [
            (0, "Barrier: offset deformable barrier, 40% overlap"),
            (1, "Measured impact speed 64.3 km/h"),
            (2, "Speed trap tolerance +/- 1.0 km/h"),
            (0, "Dummies: Hybrid III 50th male, driver and passenger"),
            (1, "Driver seat in mid track, 25 degree back angle"),
            (2, "H-point verified with SAE J826 manikin"),
            (0, "Restraints: P2 driver airbag with enlarged 42 mm vent"),
        ],
        "setup_notes": "The P2 build uses the retuned driver airbag with a 42 mm vent "
        "instead of the 36 mm vent used on the P1 build.",
        "table_title": "Dummy Measurements (Hybrid III 50th)",
        "table": [
            ["HIC15", "412.6", "388.9", "700"],
            ["Chest deflection (mm)", "31.4", "27.8", "42"],
            ["Femur load (kN)", "3.87", "4.12", "10"],
            ["Neck Nij", "0.47", "0.39", "1.0"],
        ],
        "table_notes": "Driver chest deflection improved by 6.1 mm versus the P1 build "
        "after the airbag vent retune.",
        "chart_type": XL_CHART_TYPE.COLUMN_CLUSTERED,
        "chart_slide_title": "Chest Acceleration Time History",
        "chart_title": "Chest acceleration vs time",
        "series": [
            ("Driver chest accel (g)", (0.0, 12.4, 31.7, 38.2, 17.9)),
            ("Passenger chest accel (g)", (0.0, 10.9, 28.3, 34.6, 15.2)),
        ],
        "chart_notes": "The chest acceleration peak at 60 ms coincides with the "
        "belt load limiter activation at 4.5 kN.",
        "ocr": ["PEAK DECEL 38.2 g", "SLED PULSE OK"],
        "picture_title": "High-Speed Camera Overlay",
        "picture_caption": "Frame 412 of the overhead high-speed camera, 1000 fps.",
        "group_title": "Front Structure Load Path",
        "group_outer": "Front structure summary: no rail buckling observed",
        "group_inner": [
            "Load path: bumper beam -> crash box -> longitudinal",
            "Secondary path: subframe -> tunnel -> sill",
        ],
        "group_notes": "Crash box folding was progressive with four regular folds "
        "on both the left and the right side.",
    },
    {
        "file": "crash_report_side_pole.pptx",
        "title": "Side Pole Crash Test Report",
        "meta": [
            "Test Name: SP-2024-031 Oblique Pole 32 km/h",
            "Region: US",
            "Stage: Pilot Production",
            "Purpose: Confirm curtain airbag head coverage at 75 degree impact angle",
        ],
        "setup_title": "Test Setup",
        "setup": [
            (0, "Rigid pole, 254 mm diameter, 75 degree oblique impact"),
            (1, "Measured impact speed 32.1 km/h"),
            (2, "Pole aligned with the driver head centre of gravity"),
            (0, "Dummy: WorldSID 50th male in the driver seat"),
            (1, "Seat in rearmost position for head exposure"),
            (2, "Window glass lowered per protocol"),
            (0, "Restraints: roof-rail curtain airbag and seat thorax airbag"),
        ],
        "setup_notes": "Pilot production vehicles were taken from the second pilot "
        "build lot and had the revised curtain tether.",
        "table_title": "Dummy Measurements (WorldSID 50th)",
        "table": [
            ["HIC15", "276.3", "254.8", "1000"],
            ["Chest deflection (mm)", "24.6", "22.9", "55"],
            ["Abdomen force (kN)", "1.38", "1.21", "2.5"],
            ["Pelvis force (kN)", "3.54", "3.17", "6.0"],
        ],
        "table_notes": "Curtain airbag coverage prevented any head contact with the "
        "pole; the HIC15 of 276.3 came from cushion loading only.",
        "chart_type": XL_CHART_TYPE.THREE_D_COLUMN,
        "chart_slide_title": "Thorax and Pelvis Acceleration",
        "chart_title": "Lateral acceleration vs time",
        "series": [
            ("Driver thorax accel (g)", (0.0, 18.6, 42.3, 27.5, 9.8)),
            ("Driver pelvis accel (g)", (0.0, 22.1, 51.4, 30.2, 11.7)),
        ],
        "chart_notes": "The pelvis acceleration peak of 51.4 g at 40 ms is below the "
        "internal target of 60 g.",
        "ocr": ["PEAK DECEL 27.5 g", "CURTAIN DEPLOY OK"],
        "picture_title": "Curtain Airbag Deployment Frame",
        "picture_caption": "Frame 138 of the onboard camera, curtain fully deployed.",
        "group_title": "Side Structure Load Path",
        "group_outer": "Side structure summary: B-pillar intrusion 187 mm",
        "group_inner": [
            "Load path: sill -> seat cross member -> tunnel",
            "Roof path: roof rail -> roof bow -> opposite rail",
        ],
        "group_notes": "The seat cross member carried most of the load; no weld "
        "failures were found at the sill joint.",
    },
    {
        "file": "crash_report_rear_whiplash.pptx",
        "title": "Rear Whiplash Crash Test Report",
        "meta": [
            "Test Name: RW-2024-008 Sled 16 km/h Medium Pulse",
            "Region: KR",
            "Stage: Design Validation",
            "Purpose: Assess NIC reduction with revised head restraint geometry",
        ],
        "setup_title": "Test Setup",
        "setup": [
            (0, "Sled test, 16 km/h medium pulse, delta-v 15.8 km/h"),
            (1, "Peak sled acceleration 10.4 g"),
            (2, "Pulse corridor check passed for all channels"),
            (0, "Dummy: BioRID II in the driver seat"),
            (1, "Backset measured at 38 mm"),
            (2, "Head restraint height 812 mm above H-point"),
            (0, "Seat: DV build with revised head restraint geometry"),
        ],
        "setup_notes": "The revised head restraint moves the cushion 14 mm forward "
        "and 20 mm upward compared with the previous design.",
        "table_title": "Dummy Measurements (BioRID II)",
        "table": [
            ["NIC (m2/s2)", "11.7", "12.3", "15"],
            ["Nkm", "0.26", "0.29", "0.50"],
            ["Head rebound velocity (m/s)", "3.42", "3.61", "4.5"],
            ["T1 acceleration (g)", "9.63", "10.18", "13.1"],
        ],
        "table_notes": "NIC dropped from 16.9 to 11.7 with the revised head restraint, "
        "a reduction of 31 percent.",
        "chart_type": XL_CHART_TYPE.LINE,
        "chart_slide_title": "Head and T1 Acceleration",
        "chart_title": "Head vs T1 acceleration",
        "series": [
            ("Head accel (g)", (0.0, 2.8, 7.9, 11.6, 6.3)),
            ("T1 accel (g)", (0.0, 4.1, 9.2, 9.6, 4.4)),
        ],
        "chart_notes": "Head restraint contact occurs at 62 ms, roughly 20 ms earlier "
        "than with the previous head restraint.",
        "ocr": ["PEAK DECEL 11.6 g", "HEAD RESTRAINT OK"],
        "picture_title": "Head Restraint Contact Frame",
        "picture_caption": "Frame 62 of the lateral high-speed camera, 1000 fps.",
        "group_title": "Seat Load Path",
        "group_outer": "Seat structure summary: recliner rotation 11 degrees",
        "group_inner": [
            "Load path: head restraint -> seat back frame -> recliner",
            "Energy absorber: recliner bracket yields at 1.9 kNm",
        ],
        "group_notes": "The recliner bracket yielded as designed and the seat back "
        "returned to within 3 degrees of its initial angle.",
    },
]


def build_crash_deck(spec: dict) -> Path:
    prs = Presentation()
    _fix_core_props(prs, spec["title"], "Crash test report")

    _title_slide(prs, spec["title"], spec["meta"])

    s = _bullet_slide(prs, spec["setup_title"], spec["setup"])
    _set_notes(s, spec["setup_notes"])

    s = _measurement_table_slide(prs, spec["table_title"], spec["table"])
    _set_notes(s, spec["table_notes"])

    _chart_slide(
        prs,
        spec["chart_slide_title"],
        spec["chart_type"],
        spec["chart_title"],
        TIME_CATEGORIES,
        spec["series"],
        notes=spec["chart_notes"],
    )

    _picture_slide(
        prs, spec["picture_title"], make_label_png(spec["ocr"]), spec["picture_caption"]
    )

    _nested_group_slide(
        prs,
        spec["group_title"],
        spec["group_outer"],
        spec["group_inner"],
        notes=spec["group_notes"],
    )
    return save_pptx(prs, spec["file"])


# --------------------------------------------------------------------------
# Meeting-note decks
# --------------------------------------------------------------------------


def _simple_table_slide(prs, title, rows, col_widths_in, font_pt=16, name="Table"):
    slide = _title_only(prs, title)
    shape = slide.shapes.add_table(
        len(rows),
        len(rows[0]),
        Inches(0.5),
        Inches(1.7),
        Inches(sum(col_widths_in)),
        Inches(0.5 * len(rows)),
    )
    shape.name = name
    for i, w in enumerate(col_widths_in):
        shape.table.columns[i].width = Inches(w)
    _fill_table(shape.table, rows, font_pt)
    return slide


def build_weekly_safety() -> Path:
    prs = Presentation()
    title = "Weekly Safety Meeting"
    _fix_core_props(prs, title, "Meeting notes")
    _title_slide(
        prs,
        title,
        [
            "Date: 2024-11-21",
            "Chair: Dana Whitfield",
            "Attendees: Priya Raman, Tomas Keller, Grace Okafor, Ben Laurent",
        ],
    )
    s = _bullet_slide(
        prs,
        "Agenda",
        [
            (0, "Review frontal offset test FO-2024-017"),
            (1, "Driver chest deflection trend after airbag retune"),
            (2, "P1 to P2 improvement of 6.1 mm"),
            (0, "Side pole curtain coverage status"),
            (1, "Curtain tether revision for pilot production"),
            (0, "Rear whiplash seat redesign"),
            (1, "NIC target below 12 for design validation"),
            (0, "Any other business"),
        ],
    )
    _set_notes(
        s,
        "Tomas asked that the whiplash seat item be moved to the top of next "
        "week's agenda because the supplier deadline is December 2.",
    )
    s = _simple_table_slide(
        prs,
        "Decisions and Action Items",
        [
            ["Owner", "Action", "Due"],
            ["Priya Raman", "Repeat ODB test with P2 airbag module", "2024-12-02"],
            ["Tomas Keller", "Release curtain airbag fold drawing rev C", "2024-12-06"],
            ["Grace Okafor", "Correlate whiplash CAE model to sled data", "2024-12-13"],
            ["Ben Laurent", "Order six BioRID II calibration kits", "2024-12-09"],
        ],
        [2.2, 5.3, 1.6],
        name="Action Items",
    )
    _set_notes(
        s,
        "Decision: the P2 airbag calibration is frozen for pilot production; "
        "any further vent change needs safety board approval.",
    )
    s = _bullet_slide(
        prs,
        "Risks and Open Issues",
        [
            (0, "Inflator supplier capacity limited to 1,800 units per week"),
            (1, "Second source qualification planned for Q1"),
            (0, "Sled facility closed for maintenance in week 50"),
        ],
    )
    _set_notes(s, "Next meeting is moved to Thursday because of the sled maintenance.")
    return save_pptx(prs, "meeting_notes_weekly_safety.pptx")


def build_ko_design_review() -> Path:
    prs = Presentation()
    title = "설계 검토 회의"
    _fix_core_props(prs, title, "회의록")
    _title_slide(
        prs,
        title,
        [
            "일시: 2024년 11월 28일",
            "부서: 승객 안전 설계팀",
            "참석자: 김민수, 이서연, 박지훈",
        ],
    )
    s = _bullet_slide(
        prs,
        "검토 안건",
        [
            (0, "에어백 전개 시간 검토"),
            (1, "운전석 에어백 전개 시간 32.5 ms"),
            (2, "목표 대비 2.5 ms 단축 필요"),
            (0, "커튼 에어백 머리 보호 범위 확인"),
            (1, "75도 측면 기둥 충돌 조건"),
            (0, "다음 회의: 12월 5일"),
        ],
    )
    _set_notes(s, "에어백 인플레이터 출력을 10% 높이는 방안을 검토하기로 했다.")
    s = _simple_table_slide(
        prs,
        "시험 결과 요약",
        [
            ["항목", "결과", "비고"],
            ["전개 시간 (ms)", "32.5", "목표 30 이하"],
            ["흉부 변위 (mm)", "28.7", "기준 충족"],
            ["머리 상해 지수 HIC15", "455.2", "기준 충족"],
        ],
        [3.6, 2.0, 3.4],
        font_pt=18,
        name="결과 표",
    )
    _set_notes(s, "흉부 변위 결과는 지난 시험보다 2.4 mm 개선되었다.")
    return save_pptx(prs, "meeting_notes_ko_design_review.pptx")


# --------------------------------------------------------------------------
# Textbook PDF (PyMuPDF)
# --------------------------------------------------------------------------

PAGE_W, PAGE_H = 432, 648  # 6 x 9 inch trim
MARGIN_L = MARGIN_R = 54
MARGIN_T, MARGIN_B = 54, 54
BODY_FONT, BODY_SIZE, BODY_LEAD = "tiro", 11, 14
H1_FONT, H1_SIZE = "hebo", 20
H2_FONT, H2_SIZE = "hebo", 14
CAPTION_FONT, CAPTION_SIZE = "tiit", 10


class _Book:
    def __init__(self) -> None:
        self.doc = pymupdf.open()
        self.page = None
        self.y = 0.0
        self.toc: list[list] = []

    @property
    def width(self) -> float:
        return PAGE_W - MARGIN_L - MARGIN_R

    def new_page(self) -> None:
        self.page = self.doc.new_page(width=PAGE_W, height=PAGE_H)
        self.y = MARGIN_T

    def ensure(self, h: float) -> None:
        if self.page is None or self.y + h > PAGE_H - MARGIN_B:
            self.new_page()

    def _wrap(self, text: str, font: str, size: float, width: float) -> list[str]:
        lines, cur = [], ""
        for word in text.split():
            trial = f"{cur} {word}" if cur else word
            if pymupdf.get_text_length(trial, fontname=font, fontsize=size) <= width:
                cur = trial
            else:
                lines.append(cur)
                cur = word
        if cur:
            lines.append(cur)
        return lines

    def text_line(self, x, text, font, size, lead) -> None:
        self.page.insert_text((x, self.y + size), text, fontname=font, fontsize=size)
        self.y += lead

    def heading(self, level: int, text: str) -> None:
        if level == 1:
            self.new_page()
            self.y += 30
            self.toc.append([1, text, self.page.number + 1])
            self.text_line(MARGIN_L, text, H1_FONT, H1_SIZE, H1_SIZE + 18)
        else:
            # keep the heading together with at least three body lines
            self.ensure(10 + H2_SIZE + 10 + 3 * BODY_LEAD)
            if self.y > MARGIN_T:
                self.y += 10
            self.toc.append([2, text, self.page.number + 1])
            self.text_line(MARGIN_L, text, H2_FONT, H2_SIZE, H2_SIZE + 10)

    def paragraph(self, text: str) -> None:
        for line in self._wrap(text, BODY_FONT, BODY_SIZE, self.width):
            self.ensure(BODY_LEAD)
            self.text_line(MARGIN_L, line, BODY_FONT, BODY_SIZE, BODY_LEAD)
        self.y += 6

    def figure(self, png: bytes, px_w: int, px_h: int, caption: str) -> None:
        w = self.width * 0.85
        h = w * px_h / px_w
        self.ensure(h + 30)
        x0 = MARGIN_L + (self.width - w) / 2
        rect = pymupdf.Rect(x0, self.y, x0 + w, self.y + h)
        self.page.insert_image(rect, stream=png)
        self.y += h + 6
        self.text_line(MARGIN_L, caption, CAPTION_FONT, CAPTION_SIZE, CAPTION_SIZE + 12)

    def table(self, rows: list[list[str]], col_w: list[float], caption: str) -> None:
        row_h = 20.0
        total_h = row_h * len(rows)
        self.ensure(total_h + 40)
        self.text_line(MARGIN_L, caption, CAPTION_FONT, CAPTION_SIZE, CAPTION_SIZE + 8)
        x0, y0 = MARGIN_L, self.y
        x_edges = [x0]
        for cw in col_w:
            x_edges.append(x_edges[-1] + cw)
        y_edges = [y0 + i * row_h for i in range(len(rows) + 1)]
        for y in y_edges:
            self.page.draw_line((x_edges[0], y), (x_edges[-1], y), color=(0, 0, 0), width=0.8)
        for x in x_edges:
            self.page.draw_line((x, y_edges[0]), (x, y_edges[-1]), color=(0, 0, 0), width=0.8)
        for r, row in enumerate(rows):
            font = "hebo" if r == 0 else "helv"
            for c, val in enumerate(row):
                self.page.insert_text(
                    (x_edges[c] + 5, y_edges[r] + 14.5), val, fontname=font, fontsize=11
                )
        self.y = y_edges[-1] + 14


TEXTBOOK = [
    (1, "1 Crash Pulse Basics"),
    (2, "1.1 What a Crash Pulse Describes"),
    "When a vehicle strikes a barrier, a pole or another vehicle, its velocity does not "
    "drop to zero instantly. The change in velocity is spread over a short interval, "
    "typically between 70 and 150 milliseconds for a frontal impact, and the history of "
    "deceleration over that interval is called the crash pulse. Engineers usually plot it "
    "as acceleration in multiples of gravity (g) against time in milliseconds, measured at "
    "a rigid location such as the rocker panel near the B-pillar.",
    "The crash pulse is the single most important input to the design of occupant "
    "protection. The occupant is not rigidly attached to the vehicle, so the body keeps "
    "moving forward at the pre-impact speed until the belt, the airbag or the interior "
    "catches it. Whatever velocity the car sheds before the occupant is coupled to it must "
    "later be removed from the occupant over a shorter distance, which raises the loads on "
    "the body.",
    "Two numbers summarise a pulse at a glance: the total velocity change, often written "
    "delta-v, and the peak deceleration. Delta-v is the area under the acceleration curve "
    "and depends mostly on impact speed and on the mass ratio of the colliding objects. "
    "Peak deceleration depends on how stiff the front structure is and on how evenly it "
    "crushes. Two vehicles with the same delta-v can produce very different occupant loads "
    "if one of them concentrates the deceleration into a sharp spike late in the event.",
    (2, "1.2 Ride-Down and Stopping Distance"),
    "The distance available to stop the occupant is the sum of the vehicle crush and the "
    "occupant's own excursion inside the cabin. A front structure that crushes 600 mm in a "
    "56 km/h rigid barrier test gives an average deceleration of roughly 20 g; if the "
    "restraint then allows another 250 mm of controlled forward motion, the occupant's mean "
    "deceleration falls further. This is the ride-down benefit: the earlier the occupant is "
    "coupled to the decelerating vehicle, the more of the structural crush is shared with "
    "the person inside.",
    "Ride-down explains why pretensioners, which remove belt slack in the first 10 to 15 ms, "
    "are so effective. Slack in the belt delays coupling and wastes stopping distance. It "
    "also explains why a front-loaded pulse, with high deceleration early and a gentle tail, "
    "is generally kinder to occupants than a back-loaded pulse of the same delta-v. "
    "Structural engineers therefore try to make the crash box and the forward part of the "
    "longitudinal rails collapse at a high, stable force.",
    "There are practical limits. A very stiff early pulse increases the loads in the engine "
    "mounts and can damage components that must keep working after the crash, such as the "
    "fuel cut-off and the high-voltage disconnect. In compatibility tests with a lighter "
    "partner, an overly stiff front end also transfers more energy into the other car. The "
    "pulse that the safety team requests is therefore a negotiated compromise between "
    "occupant loads, partner protection and repairability.",
    (2, "1.3 Measuring the Pulse"),
    "Crash pulses are recorded with piezoresistive accelerometers mounted on rigid brackets "
    "at the base of the B-pillars and sometimes at the rear seat cross member. Data are "
    "sampled at 10 kHz or more and filtered with a channel frequency class 60 filter for "
    "structural signals, as defined in SAE J211. Integrating the filtered signal gives "
    "velocity and then displacement, which lets the engineer check that the measured crush "
    "matches the deformation found when the car is measured after the test.",
    "Figure 1.1 shows an idealised pulse for an offset deformable barrier test at 64 km/h. "
    "The rise from zero to the plateau reflects the bumper beam and crash boxes collapsing; "
    "the plateau corresponds to the longitudinal rails folding in a controlled pattern; the "
    "final drop occurs as the engine block and the firewall stack up and the vehicle begins "
    "to rebound.",
    ("figure", "Figure 1.1 Idealised crash pulse, ODB 64 km/h (peak 38 g)."),
    "Sled tests reproduce such a pulse without destroying a vehicle. A hydraulic or "
    "pneumatic sled accelerates a body-in-white buck with seats, belts and airbags along a "
    "track, and the acceleration profile is shaped to match the full-vehicle measurement. "
    "Because a sled run costs a fraction of a full crash, most restraint tuning happens on "
    "the sled, with full-vehicle tests used to confirm the final configuration.",
    (1, "2 Occupant Restraint Systems"),
    (2, "2.1 Seat Belts and Pretensioners"),
    "The three-point seat belt remains the primary restraint in every passenger car. Its "
    "lap portion holds the pelvis against the seat cushion while the diagonal portion "
    "spreads the load across the clavicle and the rib cage, two of the strongest parts of "
    "the upper body. Correct routing matters: a lap belt that rides above the iliac crest "
    "lets the pelvis slide underneath it, a motion called submarining that loads the soft "
    "abdomen instead of the skeleton.",
    "A modern belt system contains several devices that are invisible to the user. The "
    "retractor spools the webbing and locks either when the vehicle decelerates sharply or "
    "when the webbing is pulled out quickly. A pyrotechnic pretensioner, fired by the airbag "
    "control unit within roughly 10 ms of impact detection, pulls the buckle or the "
    "retractor spool back by 80 to 150 mm. This removes slack from clothing and from the "
    "webbing roll and couples the occupant to the seat before the main deceleration begins.",
    "Many vehicles also use a lap pretensioner at the outboard anchor. Tensioning both the "
    "lap and the shoulder portions keeps the pelvis in place and reduces forward excursion "
    "of the knees, which in turn lowers the chance of contact with the instrument panel. "
    "Rear seat belts have historically been simpler, but recent consumer test protocols "
    "that place a small female dummy in the second row have pushed manufacturers to fit "
    "pretensioners and load limiters there as well.",
    "Belt geometry is fixed early in a programme because the anchor positions are part of "
    "the body structure. The upper anchorage is usually height-adjustable on the B-pillar, "
    "and the buckle is mounted on the seat so that it moves with fore-aft adjustment. "
    "Engineers verify anchor strength with quasi-static pull tests in which blocks shaped "
    "like the torso and pelvis are loaded to several tens of kilonewtons.",
    (2, "2.2 Frontal and Side Airbags"),
    "An airbag is a fabric cushion that is filled by an inflator within 20 to 40 ms and "
    "then vents gas through calibrated holes as the occupant loads it. The driver airbag "
    "sits in the steering wheel hub and has a volume of about 60 litres; the passenger "
    "airbag, packaged in the instrument panel, is larger, typically 100 to 140 litres, "
    "because it must bridge a greater distance to the occupant. Both are designed to work "
    "together with the belt rather than to replace it.",
    "Deployment is decided by the airbag control unit, which reads a central accelerometer "
    "and, in most cars, one or two satellite sensors near the front of the vehicle. The "
    "algorithm must fire early enough that the bag is fully inflated before the occupant "
    "reaches it, yet it must not fire in rough-road events, kerb strikes or low-speed "
    "collisions in which the belt alone is sufficient. For a 56 km/h full frontal test the "
    "required time to fire is often around 15 ms.",
    "Dual-stage inflators allow the system to adjust its output. A low first stage is used "
    "for a belted occupant in a moderate crash, while both stages fire together for a "
    "severe crash or an unbelted occupant. Adaptive vents go further by opening or staying "
    "closed depending on seat position and occupant size. Tuning of the vent area is one of "
    "the main levers available late in a programme: enlarging the vent softens the cushion "
    "and reduces chest loading, but too much venting lets the head bottom out against the "
    "steering wheel.",
    "Side impact protection relies on two further cushions. A thorax airbag, mounted in the "
    "outboard side of the seat back, deploys between the occupant and the door in about "
    "10 ms, because there is very little crush space in a side impact. A curtain airbag, "
    "stored along the roof rail, unrolls downward to cover the side windows and protects "
    "the head against a pole or the front of a tall striking vehicle. Curtains are also held "
    "inflated for several seconds to reduce the risk of ejection in a rollover.",
    "Knee airbags and far-side airbags complete the set in some vehicles. The knee airbag "
    "controls femur loads and pelvis motion in frontal impacts, while the far-side airbag, "
    "deployed between the front seats, limits how far an occupant on the non-struck side "
    "travels toward the centre of the car and toward the other occupant.",
    (2, "2.3 Load Limiters and Restraint Tuning"),
    "A load limiter caps the force in the shoulder belt once a preset level is reached, "
    "usually between 3 and 6 kN. Above that level the retractor spool pays out webbing in a "
    "controlled way, for example by twisting a torsion bar. Limiting the belt force protects "
    "the ribs, which are vulnerable in older occupants, but it also allows more forward "
    "motion, so the airbag must be ready to absorb the remaining energy.",
    "The interaction between belt, airbag and seat is tuned as a system. A typical "
    "development loop starts with computer simulation using finite element or multibody "
    "models of the dummy, followed by a series of sled runs in which one parameter is "
    "changed at a time: load limiter level, vent size, inflator output or firing time. "
    "Engineers compare the dummy readings from each run against the injury criteria "
    "described in Chapter 3 and against internal targets that are stricter than the legal "
    "limits.",
    "Tuning for one occupant size can penalise another. A load limiter set low enough to "
    "protect a small elderly occupant may let a heavy occupant strike the steering wheel. "
    "Two-level or switchable load limiters, triggered by seat position or occupant weight "
    "sensors, address this conflict. Similarly, the passenger airbag must be soft enough for "
    "a small adult sitting close to the dashboard and firm enough for a large adult who sits "
    "further back.",
    "Restraint tuning also has to respect the crash pulse. A stiffer structure shortens the "
    "available time and demands an earlier fire decision, while a softer structure gives the "
    "restraints more time but allows more intrusion. This is why the structural and "
    "restraint teams work from a shared target pulse, agreed early and updated as prototypes "
    "are tested. When a late change to the body alters the pulse, the restraint calibration "
    "has to be confirmed again on the sled.",
    "Finally, robustness matters as much as the headline result. Production tolerances in "
    "inflator output, fabric permeability, fold pattern and belt webbing stretch all shift "
    "the dummy readings. A calibration that passes with a small margin in one test may fail "
    "in a repeat, so engineers run design of experiments studies and verify the worst "
    "realistic combination before signing off a configuration for production.",
    (1, "3 Injury Criteria"),
    (2, "3.1 Head Injury Criterion"),
    "Injury criteria translate the forces, accelerations and deflections measured on a "
    "crash test dummy into an estimate of injury risk. They are derived from biomechanical "
    "studies with volunteers at low severity, post-mortem human subjects and accident "
    "reconstruction, and each one is tied to a particular body region and type of injury.",
    "The Head Injury Criterion, HIC, is calculated from the resultant acceleration of the "
    "head centre of gravity. The calculation searches for the time window in which the "
    "average acceleration, raised to the power 2.5 and multiplied by the window length, is "
    "greatest. Regulations limit the window length to 15 ms, hence the name HIC15, and the "
    "usual limit is 700 for the mid-size male dummy. A value of 700 corresponds to roughly "
    "a five percent risk of a severe head injury.",
    "HIC does not account for rotation of the head, which is associated with diffuse brain "
    "injury. Criteria based on angular velocity, such as BrIC, are therefore used in some "
    "consumer test programmes alongside HIC.",
    (2, "3.2 Thoracic and Lower Extremity Criteria"),
    "Chest injury risk is assessed mainly through chest deflection, the compression of the "
    "rib cage measured by a potentiometer or by infrared telescoping rods inside the dummy "
    "thorax. For the Hybrid III 50th percentile male the regulatory limit for sternum "
    "deflection is 50 mm in some regulations and 42 mm in others; consumer programmes award "
    "full points only for much lower values. The viscous criterion, the product of "
    "deflection velocity and relative compression, captures injury from fast impacts with "
    "small deflection.",
    "The lower extremities are assessed through the axial force in the femur, measured by a "
    "load cell in the thigh, and through the tibia index, which combines axial force and "
    "bending moment in the lower leg. Femur loads above 10 kN are associated with fractures "
    "of the femur, patella or hip. Table 3.1 summarises the thresholds used throughout this "
    "book.",
    ("table", "Table 3.1 Reference injury thresholds."),
    "Thresholds differ between regulations and consumer programmes, and they are revised "
    "from time to time as dummies become more biofidelic. The numbers in Table 3.1 should "
    "therefore be read as typical reference values rather than as a definitive legal "
    "standard.",
    (2, "3.3 Neck Injury Criteria"),
    "Neck loads in frontal impacts are evaluated with Nij, which combines the axial force "
    "and the flexion or extension moment at the upper neck load cell, each normalised by a "
    "critical intercept value. Four combinations are calculated, namely tension-flexion, "
    "tension-extension, compression-flexion and compression-extension, and the largest must "
    "stay below 1.0.",
    "Rear impacts at low speed cause soft tissue neck injuries, commonly called whiplash, "
    "rather than fractures. The BioRID II dummy, which has a flexible spine, is used on a "
    "sled with a 16 km/h medium pulse, and the Neck Injury Criterion, NIC, is computed from "
    "the relative acceleration and velocity between the head and the first thoracic "
    "vertebra. Seats with a close, high head restraint and an energy-absorbing seat back "
    "keep NIC low by limiting the relative motion between head and torso early in the "
    "event.",
    "Because injury criteria are tied to specific dummies, results cannot be compared "
    "directly across dummy types. A value that passes on the Hybrid III may not be "
    "meaningful on THOR or WorldSID, and engineers always report the dummy, its seating "
    "position and the test configuration together with each criterion value.",
]

INJURY_TABLE = [
    ["Injury criterion", "Threshold", "Body region"],
    ["HIC15", "700", "Head"],
    ["Chest deflection", "42 mm", "Thorax"],
    ["Viscous criterion (V*C)", "1.0 m/s", "Thorax"],
    ["Femur axial force", "10 kN", "Upper leg"],
    ["Tibia index", "1.3", "Lower leg"],
    ["Nij", "1.0", "Neck"],
]


def build_textbook() -> Path:
    book = _Book()
    # title page
    book.new_page()
    book.y = 170
    book.text_line(MARGIN_L, "Vehicle Passive Safety", H1_FONT, 26, 40)
    book.text_line(MARGIN_L, "A Short Textbook on Crash Pulses,", "helv", 14, 20)
    book.text_line(MARGIN_L, "Restraints and Injury Criteria", "helv", 14, 60)
    book.text_line(MARGIN_L, "Sample edition for the ragprep test corpus", "tiit", 11, 16)

    pulse_png = make_pulse_diagram_png()
    for item in TEXTBOOK:
        if isinstance(item, str):
            book.paragraph(item)
        elif item[0] == "figure":
            book.figure(pulse_png, 900, 450, item[1])
        elif item[0] == "table":
            book.table(INJURY_TABLE, [150, 80, 94], item[1])
        else:
            book.heading(item[0], item[1])

    doc = book.doc
    doc.set_toc(book.toc)
    doc.set_metadata(
        {
            "title": "Vehicle Passive Safety",
            "author": AUTHOR,
            "subject": "Crash pulses, occupant restraints and injury criteria",
            "keywords": "ragprep sample, passive safety, textbook",
            "creator": "sample_docs/generate.py",
            "producer": "PyMuPDF",
            "creationDate": FIXED_PDF_DATE,
            "modDate": FIXED_PDF_DATE,
            "trapped": "",
        }
    )
    path = OUT_DIR / "textbook_vehicle_safety.pdf"
    data = doc.tobytes(garbage=4, deflate=True, no_new_id=True)
    doc.close()
    path.write_bytes(data)
    return path


# --------------------------------------------------------------------------
# Entry points
# --------------------------------------------------------------------------

OUTPUT_FILES = [
    "crash_report_frontal_offset.pptx",
    "crash_report_side_pole.pptx",
    "crash_report_rear_whiplash.pptx",
    "meeting_notes_weekly_safety.pptx",
    "meeting_notes_ko_design_review.pptx",
    "textbook_vehicle_safety.pdf",
]


def generate() -> list[Path]:
    paths = [build_crash_deck(spec) for spec in CRASH_DECKS]
    paths.append(build_weekly_safety())
    paths.append(build_ko_design_review())
    paths.append(build_textbook())
    return paths


def _chart_kind(chart) -> str:
    try:
        return str(chart.chart_type)
    except Exception:  # python-pptx cannot read bar3DChart plots
        tags = [etree.QName(x).localname for x in chart._chartSpace.plotArea.iter_xCharts()]
        return "unreadable by python-pptx; xChart=" + ",".join(tags)


def _iter_shapes(shapes, depth=0):
    for sh in shapes:
        yield sh, depth
        if sh.shape_type is not None and sh.shape_type == 6:  # GROUP
            yield from _iter_shapes(sh.shapes, depth + 1)


def check() -> None:
    tess = shutil.which("tesseract")
    for name in OUTPUT_FILES:
        path = OUT_DIR / name
        print(f"== {name}  sha256={hashlib.sha256(path.read_bytes()).hexdigest()}")
        if name.endswith(".pptx"):
            prs = Presentation(str(path))
            print(f"   slides={len(prs.slides)}")
            for i, slide in enumerate(prs.slides, 1):
                kinds = []
                for sh, depth in _iter_shapes(slide.shapes):
                    if getattr(sh, "has_chart", False) and sh.has_chart:
                        ch = sh.chart
                        c_ns = "{http://schemas.openxmlformats.org/drawingml/2006/chart}"
                        names = [  # raw XML: python-pptx can't iterate bar3DChart series
                            v.text for v in ch._chartSpace.iter(c_ns + "tx") for v in v.iter(c_ns + "v")
                        ]
                        kinds.append(f"chart[{_chart_kind(ch)}; series={names}]")
                    elif getattr(sh, "has_table", False) and sh.has_table:
                        merges = sum(
                            1 for r in sh.table.rows for c in r.cells if c.is_merge_origin
                        )
                        kinds.append(f"table[{len(sh.table.rows)}x{len(sh.table.columns)} merges={merges}]")
                    elif sh.shape_type == 6:
                        kinds.append(f"group(depth={depth})")
                    elif sh.shape_type == 13:
                        text = ""
                        if tess:
                            with tempfile.NamedTemporaryFile(suffix=".png") as tmp:
                                tmp.write(sh.image.blob)
                                tmp.flush()
                                text = subprocess.run(
                                    [tess, tmp.name, "-", "-l", "eng"],
                                    capture_output=True,
                                    text=True,
                                ).stdout
                            text = " | ".join(t for t in text.split("\n") if t.strip())
                        kinds.append(f"picture[ocr={text!r}]")
                notes = (
                    slide.notes_slide.notes_text_frame.text if slide.has_notes_slide else ""
                )
                title = slide.shapes.title.text if slide.shapes.title is not None else None
                print(f"   slide {i}: title={title!r} {' '.join(kinds)} notes={bool(notes)}")
        else:
            doc = pymupdf.open(path)
            print(f"   pages={doc.page_count} metadata={doc.metadata}")
            print(f"   toc={doc.get_toc()}")
            for page in doc:
                tabs = page.find_tables()
                imgs = page.get_images()
                extra = ""
                if tabs.tables:
                    tab = tabs.tables[0]
                    # Table.extract() in this PyMuPDF uses glyph-tight char boxes,
                    # which split "1.0" and drop spaces; clip-based text is exact.
                    cells = [
                        [page.get_text("text", clip=c).strip() if c else None for c in row.cells]
                        for row in tab.rows
                    ]
                    extra = f" bbox={tuple(round(v) for v in tab.bbox)} cells={cells}"
                    extra += f"\n      extract()={tab.extract()}"
                for xref, *_ in imgs:
                    if tess:
                        with tempfile.NamedTemporaryFile(suffix=".png") as tmp:
                            tmp.write(pymupdf.Pixmap(doc, xref).tobytes("png"))
                            tmp.flush()
                            ocr = subprocess.run(
                                [tess, tmp.name, "-", "-l", "eng"], capture_output=True, text=True
                            ).stdout
                        extra += " image_ocr=" + repr(" | ".join(t for t in ocr.split("\n") if t.strip()))
                print(f"   page {page.number + 1}: tables={len(tabs.tables)} images={len(imgs)}{extra}")


def main(argv: list[str]) -> int:
    if "--check" in argv:
        check()
        return 0
    for p in generate():
        print(p.name, hashlib.sha256(p.read_bytes()).hexdigest())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
