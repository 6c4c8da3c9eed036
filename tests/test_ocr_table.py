"""Pictures of tables read as tables (tasks/ingest/extract/ocr_table.py, ragprep/engines/ocr.py).

Word-box grids are checked on made-up boxes (fast); the real crash-test deck's result-table screenshots are OCR'd
one picture at a time (about a second each) and checked cell by cell against what the picture shows (read by eye).
"""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pytest
from pptx import Presentation
from pptx.util import Inches

from ragprep.engines.ocr import TesseractOcr, flatten, ruling_lines
from ragprep.markdown import table_rows
from ragprep.settings import Settings
from tasks.ingest.extract.ocr_table import grid_verdict, read_table
from tests.conftest import CORPUS, needs_tesseract

DECK = CORPUS / "pptx_auto_crashtest_report_pyisomme.pptx"


def _words(lines: list[list[tuple[str, int]]], height: int = 20, pitch: int = 60) -> list[tuple]:
    """Word boxes for rows of (text, left x) cells; each word 12 px per character."""
    words = []
    for r, cells in enumerate(lines):
        for text, left in cells:
            x = left
            for word in text.split():
                words.append((word, 95.0, x, 100 + r * pitch, 12 * len(word), height))
                x += 12 * len(word) + 8
    return words


def test_a_result_table_is_read_row_by_column():
    lines = [[("11391", 700), ("14084", 1100)],
             [("HIC 15", 60), ("327.7", 700), ("277.7", 1100)],
             [("Chest Deflection [mm]", 60), ("-26.56", 690), ("-31.11", 1090)],
             [("Femur Axial Force Left [N]", 60), ("nan", 710), ("nan", 1110)]]
    grid = read_table(_words(lines))
    assert grid == [["", "11391", "14084"], ["HIC 15", "327.7", "277.7"],
                    ["Chest Deflection [mm]", "-26.56", "-31.11"], ["Femur Axial Force Left [N]", "nan", "nan"]]


def test_tick_labels_of_side_by_side_plots_are_not_a_table():
    # y-axis ticks of two plots next to each other: aligned numbers, but nothing labels them
    lines = [[("0.04", 30), ("0.04", 500)], [("0.02", 30), ("0.02", 500)], [("0.00", 30), ("0.00", 500)],
             [("-0.02", 20), ("-0.02", 490)]]
    grid, why = grid_verdict(_words(lines))
    assert grid is None and "labels" in why


def test_two_panes_of_code_are_not_a_table():
    lines = [[("public void write(int i)", 20), ("public void write(int i)", 600)],
             [("char[] buf = getBuf();", 20), ("char[] buffer = getBuf();", 600)],
             [("if (buf.length < i)", 20), ("if (buffer.length < i)", 600)]]
    grid, why = grid_verdict(_words(lines))
    assert grid is None and why == "no column of values"


def test_lines_of_prose_and_a_single_column_are_not_a_table():
    prose = [[("The sled pulse was within the corridor.", 20)], [("Peak deceleration 38.2 g", 20)],
             [("Head restraint OK", 20)]]
    assert grid_verdict(_words(prose))[0] is None
    ragged = [[("Driver", 20), ("nan", 700)], [("Front", 20)], [("Rear", 20)], [("Overall", 20)], [("x", 20)]]
    assert grid_verdict(_words(ragged))[0] is None


def _picture(slide: int) -> bytes:
    """The blob of the (one) picture on a slide of the real deck."""
    shapes = Presentation(str(DECK)).slides[slide - 1].shapes
    return next(s.image.blob for s in shapes if hasattr(s, "image"))


@pytest.fixture(scope="module")
def engine(tmp_path_factory):
    settings = Settings()
    return TesseractOcr(settings.ocr.languages, settings.ocr.min_confidence, tmp_path_factory.mktemp("ocr-cache"))


@needs_tesseract
def test_real_deck_injury_table_read_cell_by_cell(engine):
    """Slide 5: the driver's injury values, 10 criteria x two tests (checked by eye against the picture); the
    values sit on semi-transparent green/orange/red fills that a plain RGB conversion turned dark."""
    image = _picture(5)
    result = engine.recognize(image)
    grid = read_table(result.words)
    assert grid is not None and len(grid) == 11 and len(grid[0]) == 3
    assert grid[0] == ["", "11391", "14084"]
    rows = {row[0]: row[1:] for row in grid[1:]}
    assert rows["HIC 15 []"] == ["327.7", "277.7"]
    assert rows["Chest Deflection [mm]"] == ["-26.56", "-31.11"]
    assert rows["Neck Fz tension [KN]"] == ["0.6988", "1.209"]  # Tesseract reads the "kN" of the picture as "KN"
    assert rows["Femur Axial Force Right [N]"] == ["-1.488", "-0.4496"]
    # the raw OCR text is still the page-layout read of the picture (today it has the row labels but misses the values in
    # the filled cells, which only the table read, rules painted out and one uniform block, gets)
    assert "Chest Deflection [mm]" in result.text


@needs_tesseract
def test_real_deck_chart_is_not_read_as_a_table(engine):
    """Slide 8: neck channel plots with grid lines and rating bands (ruled, so it gets the layout read) are no
    table."""
    image = _picture(8)
    from PIL import Image

    rows, cols = ruling_lines(flatten(Image.open(io.BytesIO(image))))
    assert len(rows) >= 3 and len(cols) >= 2  # ruled like a table: the test below is the grid check's, not the trigger's
    assert read_table(engine.recognize(image).words) is None


@needs_tesseract
def test_pptx_picture_of_a_table_becomes_a_table_element(tmp_path: Path, extracted):
    """A slide holding the real deck's slide-2 picture: the picture element keeps its image link and raw OCR text,
    and a table element with the rows and columns follows it."""
    deck = Presentation()
    slide = deck.slides.add_slide(deck.slide_layouts[6])
    slide.shapes.add_picture(io.BytesIO(_picture(2)), Inches(0.5), Inches(1), width=Inches(9))
    path = tmp_path / "table_picture.pptx"
    deck.save(str(path))
    elements = extracted(path, ocr=True).elements
    kinds = [e.kind for e in elements]
    assert kinds == ["picture", "table"]
    picture, table = elements
    assert picture.text.startswith("![") and "OCR text" not in picture.text
    assert picture.ocr_text and "Door Opening During Impact" in picture.ocr_text
    assert table.text_source == "ocr" and table.extractor == "tesseract-grid"
    rows = table_rows(table.text)
    assert ["Door Opening During Impact", "-1.0", "0.0"] in rows
    assert ["Overall", "nan", "nan"] in rows


def test_a_small_table_beside_a_chart_is_read_from_its_side_of_the_picture():
    chart = [[("0.0", 30), ("11391 SEATLERE", 300)], [("-2.5", 20)], [("-5.0", 20)], [("-7.5", 20), ("x", 200)],
             [("-10.0", 10)], [("-50", 60), ("0", 150), ("50", 240), ("100", 330)]]
    table = [[("OLC [g]", 1100)], [("11391", 740), ("33.60", 1110)], [("14084", 740), ("37.34", 1110)]]
    words = _words(chart, pitch=90) + [(w, c, x, y + 180, wd, h) for w, c, x, y, wd, h in _words(table)]
    grid, why = grid_verdict(words)
    assert grid == [["", "OLC [g]"], ["11391", "33.60"], ["14084", "37.34"]], why
    assert "one side" in why
    # a band between the columns of one table (whose last column is ragged, so the whole is refused as a grid): the words
    # level with the rows on the other side are its cells, so the left side alone is not offered as the table
    table = [[("Test", 20), ("Drop height", 300), ("Min", 700)], [("1", 20), ("815", 300), ("46.0", 780)],
             [("2", 20), ("204", 300), ("23.5", 860)], [("3", 20), ("459", 300), ("36.0", 940)]]
    assert grid_verdict(_words(table))[0] is None  # without the level-words guard: the 4x2 left side


@needs_tesseract
def test_scanned_pdf_page_of_a_table_gets_a_table_element(tmp_path: Path, extracted):
    """A PDF page that is only a picture (a scan) of the real deck's slide-4 rating table: the OCR page row keeps the
    raw OCR text and a table row follows it. (The page is rendered in grey for OCR, where the orange "14084" of the
    header is as light as a pastel cell fill, so only the body rows and the first test number are asserted.)"""
    import pymupdf

    pdf = pymupdf.open()
    page = pdf.new_page(width=842, height=595)
    page.insert_image(pymupdf.Rect(20, 60, 822, 504), stream=_picture(4))
    path = tmp_path / "scanned_table.pdf"
    pdf.save(str(path))
    elements = extracted(path, ocr=True).elements
    ocr_page = next(e for e in elements if e.kind == "ocr_page")
    tables = [e for e in elements if e.kind == "table"]
    assert ocr_page.ocr_status == "ok" and "Femur" in ocr_page.ocr_text
    assert len(tables) == 1 and tables[0].extractor == "pymupdf+tesseract-grid" and tables[0].order > ocr_page.order
    rows = table_rows(tables[0].text)
    assert rows[0][:2] == ["", "11391"] and len(rows) == 6
    assert ["Femur", "4.0", "0.0"] in rows and ["Chest", "nan", "nan"] in rows and ["Head", "4.0", "4.0"] in rows


def test_a_scanned_page_of_prose_is_not_ruled_but_a_ruled_table_is():
    """Dense lines of scanned text are dark pixel rows but broken between letters: no second, table-layout OCR read
    for them (it doubled the OCR time of a scanned document). The real deck's table picture keeps its rules."""
    import pymupdf
    from PIL import Image

    with pymupdf.open(CORPUS / "pdf_scan_multipage_ocr.pdf") as doc:
        pix = doc[0].get_pixmap(dpi=200, colorspace=pymupdf.csGRAY)
    page = Image.open(io.BytesIO(pix.tobytes("png")))
    assert (np.asarray(page) < 160).mean(axis=1).max() >= 0.3  # some text rows are as dark as a rule on average
    assert ruling_lines(page) == ([], [])
    rows, cols = ruling_lines(flatten(Image.open(io.BytesIO(_picture(5)))))
    assert len(rows) >= 3 and len(cols) >= 2
