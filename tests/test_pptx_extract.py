"""Slide decks: concrete content from sample_docs/ and the shared corpus decks."""

from __future__ import annotations

import json
import re

import pytest

from tests.conftest import CORPUS, SAMPLE_DOCS, needs_tesseract

FRONTAL = SAMPLE_DOCS / "crash_report_frontal_offset.pptx"
SIDE_POLE = SAMPLE_DOCS / "crash_report_side_pole.pptx"
REAR = SAMPLE_DOCS / "crash_report_rear_whiplash.pptx"
MEETING = SAMPLE_DOCS / "meeting_notes_weekly_safety.pptx"
KOREAN = SAMPLE_DOCS / "meeting_notes_ko_design_review.pptx"


def test_one_chunk_per_slide_with_titles(extracted):
    result = extracted(FRONTAL)
    assert result.doc.n_units == 6
    assert [c.slide for c in result.chunks] == [1, 2, 3, 4, 5, 6]
    assert result.chunks[0].title == "Frontal Offset Crash Test Report"
    assert result.chunks[0].markdown.startswith("# Frontal Offset Crash Test Report")
    assert "Test Name: FO-2024-017 ODB 64 km/h" in result.chunks[0].markdown
    assert "Stage: Prototype P2" in result.chunks[0].markdown


def test_table_cells_and_merged_header_in_markdown(extracted):
    chunk = extracted(FRONTAL).chunks[2]
    assert chunk.has_table
    md = chunk.markdown
    assert "| HIC15 | 412.6 | 388.9 | 700 |" in md
    assert "| Chest deflection (mm) | 31.4 | 27.8 | 42 |" in md
    assert "| Femur load (kN) | 3.87 | 4.12 | 10 |" in md
    # "Measured" spans Driver and Passenger: repeated into both cells it covers
    assert "| Metric | Measured | Measured | Limit |" in md
    assert "| Metric | Driver | Passenger | Limit |" in md
    table = extracted(FRONTAL).kind("table")[0]
    assert json.loads(table.meta)["merged_regions"] == 3


def test_clustered_chart_as_data_table(extracted):
    result = extracted(FRONTAL)
    chart = result.kind("chart")[0]
    assert chart.extractor == "python-pptx"
    assert "**Chart: Chest acceleration vs time** (column_clustered)" in chart.text
    assert "| Category | Driver chest accel (g) | Passenger chest accel (g) |" in chart.text
    assert "| 60 ms | 38.2 | 34.6 |" in chart.text
    assert result.chunks[3].has_chart


def test_line_chart_values(extracted):
    chart = extracted(REAR).kind("chart")[0]
    assert "| Category | Head accel (g) | T1 accel (g) |" in chart.text
    assert "| 60 ms | 11.6 | 9.6 |" in chart.text


def test_3d_bar_chart_read_from_xml_cache(extracted):
    chart = extracted(SIDE_POLE).kind("chart")[0]
    assert chart.extractor == "chart-xml"
    assert "bar3DChart" in json.loads(chart.meta)["chart_type"]
    assert "**Chart: Lateral acceleration vs time**" in chart.text
    assert "| Category | Driver thorax accel (g) | Driver pelvis accel (g) |" in chart.text
    assert "| 40 ms | 42.3 | 51.4 |" in chart.text
    assert "Sheet1" not in chart.text  # the series formula is not its name


def test_speaker_notes(extracted):
    result = extracted(FRONTAL)
    notes = " ".join(e.text for e in result.kind("notes"))
    assert "Driver chest deflection improved by 6.1 mm versus the P1 build after the airbag vent retune." in notes
    assert "**Speaker notes**" in result.chunks[1].markdown


def test_text_inside_nested_groups(extracted):
    result = extracted(FRONTAL)
    nested = [e for e in result.elements if e.group_path and e.group_path.count("/") >= 1]
    assert any("Load path: bumper beam -> crash box -> longitudinal" in e.text for e in nested)
    assert "Load path: bumper beam -> crash box -> longitudinal" in result.chunks[5].markdown
    # grouped shapes get absolute slide coordinates inside the slide (points)
    for element in nested:
        x0, y0, x1, y1 = element.bbox
        assert 0 <= x0 < x1 <= 720.5 and 0 <= y0 < y1 <= 540.5


def test_bullet_levels(extracted):
    md = extracted(FRONTAL).chunks[1].markdown
    levels = {len(m.group(1)) // 2 for m in re.finditer(r"^( *)- ", md, re.MULTILINE)}
    assert levels == {0, 1, 2}


def test_meeting_notes_table(extracted):
    md = extracted(MEETING).chunk_text()
    assert "| Owner | Action | Due |" in md
    assert "| Priya Raman | Repeat ODB test with P2 airbag module | 2024-12-02 |" in md
    assert "the P2 airbag calibration is frozen for pilot production" in md


def test_korean_text_intact(extracted):
    result = extracted(KOREAN)
    md = result.chunk_text()
    assert result.chunks[0].title == "설계 검토 회의"
    for phrase in ("에어백 전개 시간 검토", "운전석 에어백 전개 시간 32.5 ms", "다음 회의: 12월 5일"):
        assert phrase in md
    assert "| 전개 시간 (ms) | 32.5 | 목표 30 이하 |" in md
    assert "에어백 인플레이터 출력을 10% 높이는 방안을 검토하기로 했다." in md


def test_pictures_saved_once_content_addressed(extracted):
    result = extracted(CORPUS / "pptx_auto_crashtest_report_pyisomme.pptx")
    pictures = result.kind("picture")
    assert len(pictures) == 28
    for picture in pictures:
        path = result.layout.root / picture.image_path
        assert path.is_file()
        assert path.stem == json.loads(picture.meta)["sha256"]
        assert picture.image_width > 0 and picture.image_height > 0
        assert f"({picture.image_width}x{picture.image_height} px)" in picture.text
    assert all(c.has_image for c in result.chunks if c.slide >= 2)


@needs_tesseract
def test_picture_text_is_ocrd_into_a_marked_block(extracted):
    result = extracted(SIDE_POLE, ocr=True)
    picture = result.kind("picture")[0]
    assert picture.ocr_status == "ok"
    assert "PEAK DECEL 27.5" in picture.ocr_text
    assert "CURTAIN DEPLOY OK" in picture.ocr_text
    chunk = next(c for c in result.chunks if c.slide == picture.number)
    assert chunk.has_ocr
    assert '> **OCR text of picture "image.png"**' in chunk.markdown
    assert "> CURTAIN DEPLOY OK" in chunk.markdown
    assert result.doc.n_ocr_units == 1


def test_ocr_off_leaves_pictures_without_text(extracted):
    picture = extracted(SIDE_POLE, ocr=False).kind("picture")[0]
    assert picture.ocr_status == "disabled"
    assert picture.ocr_text is None


# --- the shared corpus decks -------------------------------------------------

def test_corpus_charts_and_tables(extracted):
    result = extracted(CORPUS / "pptx_en_hbcu_tables_charts.pptx")
    assert result.doc.n_units == 16
    assert len(result.kind("chart")) == 2
    assert len(result.kind("table")) == 4
    stacked = result.kind("chart", 6)[0].text
    assert "(column_stacked_100)" in stacked
    assert "| Category | Less than HS | HS Diploma / GED | College Enrollment | Degree Attained |" in stacked
    assert "| African American | 26 | 30 | 37 | 6 |" in stacked
    clustered = result.kind("chart", 7)[0].text
    assert "| 2008 | 26 | 30 | 37 | 6 |" in clustered
    table = result.kind("table", 13)[0].text
    assert "| Strategy | How | Result |" in table
    assert result.chunks[0].title == "Positioning HBCUs in the Current Environment"
    assert not result.doc.warnings


def test_corpus_nested_groups_and_notes(extracted):
    result = extracted(CORPUS / "pptx_en_refactor_groups_pictures.pptx")
    assert result.doc.n_units == 28
    slides_with_notes = {e.number for e in result.kind("notes")}
    assert len(slides_with_notes) == 12
    notes4 = result.kind("notes", 4)[0].text
    assert notes4.startswith("Refactoring includes:")
    assert "Extract local variable" in notes4
    grouped = [e for e in result.elements if e.group_path]
    assert any(e.group_path.count("/") >= 1 for e in grouped), "expected text inside groups within groups"
    slide6 = next(c for c in result.chunks if c.slide == 6).markdown
    assert "root-canal refactoring" in slide6
    assert "Do Programmers Usually Floss Refactor?" in slide6
    assert len(result.kind("picture")) >= 60


@pytest.mark.parametrize("name", ["pptx_en_hbcu_tables_charts.pptx", "pptx_en_refactor_groups_pictures.pptx"])
def test_reading_order_is_top_to_bottom(extracted, name):
    result = extracted(CORPUS / name)
    for number in range(1, result.doc.n_units + 1):
        rows = [e for e in result.elements if e.number == number and e.bbox and e.kind != "title" and not e.group_path]
        tops = [e.bbox[1] for e in rows]
        band = 540 / 24
        assert [int(t // band) for t in tops] == sorted(int(t // band) for t in tops), f"slide {number}"
