"""PDFs: chapters from outlines, tables, Korean text, OCR of scans."""

from __future__ import annotations

import re

import pytest

from ragprep.settings import Settings
from tasks.ingest.chunking import select_outline_chapters
from tests.conftest import CORPUS, SAMPLE_DOCS, needs_tesseract

TEXTBOOK = SAMPLE_DOCS / "textbook_vehicle_safety.pdf"


def chapter_titles(result) -> list[str]:
    """Titles of the chapters, one per chapter (parts of a split chapter share an index; each part is titled by
    its own section, shown after the chapter's title and " / ")."""
    seen: dict[int, str] = {}
    for chunk in result.chunks:
        if chunk.unit == "chapter" and chunk.part_index == 0:
            seen[chunk.chapter_index] = chunk.title.split(" / ")[0]
    return [seen[i] for i in sorted(seen)]


def top_level_outline(result) -> list[str]:
    entries = [e for e in result.doc.outline if e.page >= 1]
    top = min(e.level for e in entries)
    return [e.title for e in entries if e.level == top]


def squash(text: str) -> str:
    return re.sub(r"\s+", " ", text)


def test_textbook_chapters_equal_outline_chapters(extracted):
    result = extracted(TEXTBOOK)
    assert top_level_outline(result) == ["1 Crash Pulse Basics", "2 Occupant Restraint Systems", "3 Injury Criteria"]
    assert chapter_titles(result) == top_level_outline(result)
    first = next(c for c in result.chunks if c.chapter_index == 0)
    assert (first.page_start, first.heading_path) == (2, ["1 Crash Pulse Basics"])
    third = next(c for c in result.chunks if c.chapter_index == 2)
    assert (third.page_start, third.page_end) == (8, 10)


def test_textbook_table_as_markdown(extracted):
    result = extracted(TEXTBOOK)
    tables = result.kind("table")
    assert len(tables) == 1 and tables[0].number == 9
    md = tables[0].text
    assert md.splitlines()[0] == "**Table 3.1 Reference injury thresholds.**"  # its caption, attached
    assert md.splitlines()[2] == "| Injury criterion | Threshold | Body region |"
    for row in ("| HIC15 | 700 | Head |", "| Viscous criterion (V*C) | 1.0 m/s | Thorax |", "| Tibia index | 1.3 | Lower leg |"):
        assert row in md
    chapter3 = next(c for c in result.chunks if c.chapter_index == 2)
    assert chapter3.has_table and "| Nij | 1.0 | Neck |" in chapter3.markdown
    # the cell text is not repeated as loose paragraphs beside the table
    assert chapter3.markdown.count("Femur axial force") == 1


def test_textbook_image_saved(extracted):
    result = extracted(TEXTBOOK)
    pictures = result.kind("picture")
    assert [p.number for p in pictures] == [4]
    assert (result.layout.root / pictures[0].image_path).is_file()


def test_long_chapter_split_at_subheading_within_budget(extracted):
    result = extracted(TEXTBOOK)
    budget = Settings().chunking.max_tokens
    parts = [c for c in result.chunks if c.chapter_index == 1]
    assert len(parts) >= 2, "chapter 2 is longer than the default budget"
    assert all(c.token_count <= budget for c in result.chunks)
    assert parts[1].title.startswith("2 Occupant Restraint Systems / 2.")
    assert parts[1].heading_path[0] == "2 Occupant Restraint Systems"


def test_nhtsa_report_chapters(extracted, corpus):
    result = extracted(corpus / "pdf_auto_nhtsa_simfil_report.pdf")
    expected = ["Introduction", "Signal Transformations", "DFT-Based Filter", "SimFil Implementation", "References"]
    assert top_level_outline(result) == expected
    assert chapter_titles(result) == expected
    intro = next(c for c in result.chunks if c.title == "Introduction")
    assert intro.page_start == 7
    assert "Digital low-pass" in squash(intro.markdown)
    assert any(c.title == "Front matter" and c.page_start == 1 for c in result.chunks)
    assert len(result.kind("table")) >= 1
    # the report sets "fi", "ffi" as ligature glyphs (U+FB01, U+FB03): they reach no element nor chunk as glyphs
    texts = [e.text for e in result.elements] + [c.markdown for c in result.chunks]
    assert not any(re.search("[\ufb00-\ufb06]", t or "") for t in texts)
    assert "filter" in squash(intro.markdown).lower()


def test_redbook_dominant_chapter_splits_at_its_sections(extracted, corpus):
    result = extracted(corpus / "pdf_en_ibm_redbook_chapters_toc.pdf")
    settings = Settings()
    selected = select_outline_chapters(
        result.doc.outline, result.doc.n_units, settings.pdf.dominant_chapter_share, settings.pdf.dominant_chapter_min_pages
    )
    titles = [s.title for s in selected]
    # "Executive overview" holds pages 3-36 of 40: its 13 sections become chapters too
    assert titles[:3] == ["Front cover", "Executive overview", "IBM Z: An overview"]
    assert titles[-2:] == ["Notices", "Back cover"]
    assert len(titles) == 4 + 13
    assert "Use case 2: Credit default risk assessment" in titles
    assert chapter_titles(result) == titles
    uc2 = next(c for c in result.chunks if c.title == "Use case 2: Credit default risk assessment")
    assert uc2.heading_path == ["Executive overview", "Use case 2: Credit default risk assessment"]
    assert uc2.page_start == 24
    assert len(result.kind("picture")) >= 20


def test_korean_pdf_text_and_tables(extracted, corpus):
    result = extracted(corpus / "pdf_ko_card_terms_tables.pdf")
    md = result.chunk_text()
    assert "| 업종 | 적립 대상 |" in md
    assert "| 주유 | 모든 주유소 |" in md
    assert "| 할인점 | 이마트, 이마트 트레이더스, 롯데마트, 홈플러스 |" in md
    assert "빅포인트 적립" in md
    assert not result.doc.warnings


def test_korean_report_hangul_intact(extracted, corpus):
    result = extracted(corpus / "pdf_ko_assembly_review_report.pdf")
    md = result.chunk_text()
    assert "탄소중립" in md and "일부개정법률안" in md and "환경노동위원회" in md
    hangul = sum("\uac00" <= ch <= "\ud7a3" for ch in md)
    assert hangul > 3000
    assert len(result.kind("table")) >= 6
    # word spaces the text layer lacks (words placed by glyph offsets) are read from the glyph gaps, in text
    # blocks and table cells alike; a letter-spaced title keeps its word whole
    assert "대표할 수 있는 대통령령으로" in md and "노동계 대표는 없으나" in md
    assert "대표할수있는" not in md


def test_scan_pages_are_flagged_for_ocr_when_ocr_is_off(extracted, corpus):
    result = extracted(corpus / "pdf_scan_multipage_ocr.pdf", ocr=False)
    ocr_rows = result.kind("ocr_page")
    assert {e.number for e in ocr_rows} == {1, 2, 3, 5, 6}
    assert all(e.ocr_status == "disabled" for e in ocr_rows)
    assert any("no text layer, OCR disabled" in w for w in result.doc.warnings)
    assert chapter_titles(result) == ["Chapter II", "Huge Page", "Wikipedia image"]


@pytest.mark.slow  # OCR of a whole scanned document
@needs_tesseract
def test_scan_ocr_recovers_known_words(extracted, corpus):
    result = extracted(corpus / "pdf_scan_multipage_ocr.pdf", ocr=True)
    page1 = result.kind("ocr_page", 1)[0]
    assert page1.ocr_status == "ok"
    text = squash(page1.ocr_text).lower()
    for word in ("tip-toeing", "widow", "garden", "kitchen", "branches"):
        assert word in text
    chunk = next(c for c in result.chunks if c.title == "Chapter II")
    assert chunk.has_ocr and "> **OCR text of page 1**" in chunk.markdown
    assert result.doc.n_ocr_units >= 4
    assert not result.doc.warnings


def test_garbage_ratio_detects_broken_text():
    from tasks.ingest.extract.pdf import garbage_ratio

    assert garbage_ratio("Plain readable text, 123.") == 0
    assert garbage_ratio("충돌 시험 결과") == 0
    assert garbage_ratio("\ue001\ue002\ue003 ab") > 0.5
    assert garbage_ratio("(cid:12)(cid:13)(cid:14)") == 1.0


@pytest.mark.slow  # every corpus PDF extracted whole
@pytest.mark.parametrize("name", sorted(p.name for p in CORPUS.glob("*.pdf")))
def test_every_corpus_pdf_extracts_with_chunks_under_budget(extracted, name):
    result = extracted(CORPUS / name)
    assert result.chunks, name
    assert all(c.token_count <= Settings().chunking.max_tokens for c in result.chunks)
    assert all(c.markdown.startswith("# ") for c in result.chunks)


def test_a_protocol_whose_bookmarks_are_its_figure_captions_is_chunked_by_its_sections(extracted):
    # IIHS roof strength: the PDF's only bookmarks are "Figure 3 ...", "Figure 4 ...", "Table 1 ...". They used to
    # become the chapters, filing the first five pages under "Front matter" and the rest under captions.
    chunks = extracted(CORPUS / "pdf_auto_iihs_roof_strength_protocol.pdf").chunks
    paths = [" / ".join(c.heading_path) for c in chunks]
    assert not any("Front matter" in p for p in paths), paths
    assert not any(re.search(r"(^|/ )(Figure|Table) \d", p) for p in paths), paths
    testing = [c for c in chunks if "Vehicle Position at the Initial Contact Point" in c.markdown]
    assert testing and all(c.heading_path[-1] == "TESTING" for c in testing), [c.heading_path for c in testing]
    assert any(c.heading_path[-1] == "TEST VEHICLE PREPARATION" for c in chunks), paths


def test_a_figure_caption_set_bold_opens_no_section(extracted):
    # FMVSS 214 page 1 opens with two figures of the previous standard, their captions bold on two lines each
    # ("Figure 14a to § 571.213b—HIII–10C Dummy Neck Angle Setting is SP–16" / "Degrees").
    chunks = extracted(CORPUS / "pdf_auto_fmvss214_side_impact.pdf").chunks
    titles = [c.title for c in chunks]
    assert not any(t.startswith("Figure") or t.endswith("Degrees") for t in titles), titles
    first = chunks[0]
    assert first.page_start == 1 and "Figure 14a to § 571.213b" in first.markdown
    assert "# Figure" not in first.markdown and "# Degrees" not in first.markdown  # no heading for a passage path
    assert any(c.heading_path[0].startswith("§ 571.214") for c in chunks), titles


@pytest.mark.parametrize(
    ("text", "caption"),
    [("Figure 4 Vehicle Position at the Initial Contact Point", True), ("Table 1 Roof Strength Rating Boundaries", True),
     ("Fig. 2.3 Sled pulse", True), ("[그림 1] 시험 장치", True), ("<표 2> 예산 현황", True), ("Table A.1 Limits", True),
     ("Table of contents", False), ("Tables and figures", False), ("Figures 1 to 3 show", False), ("표준 약관", False),
     ("5.2 Figure out the load", False)],
)
def test_caption_lines(text, caption):
    from tasks.ingest.extract.pdf_sections import is_caption

    assert is_caption(text) is caption
