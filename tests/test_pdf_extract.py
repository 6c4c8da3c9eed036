"""PDFs: chapters from outlines, tables, Korean text, OCR of scans."""

from __future__ import annotations

import json
import re

import pytest

from ragprep.settings import Settings
from schemas.elements import ElementRow
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


COVERED = {
    # document: (its cover's title block as the chunker titles it, sections that must now be top-level)
    "pdf_auto_iihs_roof_strength_protocol.pdf": (
        "Crashworthiness Evaluation Roof Strength Test Protocol Version V November 2022",
        {"TESTING", "TEST VEHICLE PREPARATION", "CALCULATING THE STRENGTH-TO-WEIGHT RATIO (SWR) RATING"},
    ),
    "pdf_auto_euroncap_star_rating_scoring.pdf": ("Application of Star Rating Protocol", {"DEFINITIONS", "PREFACE"}),
}


@pytest.mark.parametrize("name", sorted(COVERED))
def test_a_cover_title_block_heads_only_the_cover_not_every_section(extracted, name):
    # The cover's title (set larger than any later heading) used to be the root of the section tree, so every chunk
    # title began with the long document name ("Crashworthiness Evaluation ... November 2022 / TESTING").
    cover, sections = COVERED[name]
    chunks = extracted(CORPUS / name).chunks
    under_cover = [c for c in chunks if c.heading_path[0] == cover]
    assert under_cover and all(c.page_end <= 2 for c in under_cover), [(c.page_start, c.heading_path) for c in chunks]
    assert all(c.heading_path == [cover] for c in under_cover)  # the cover heads no section
    tops = {c.heading_path[0] for c in chunks}
    assert sections <= tops, tops
    assert not any(c.title.startswith(cover + " /") for c in chunks)


def test_a_first_page_that_opens_a_numbered_section_is_no_cover(extracted):
    # FMVSS 214 page 1 opens § 571.214 (after the captions of the previous standard's figures): no cover, the
    # standard stays the root of its paragraphs.
    from tasks.ingest.page_roles import cover_headings

    result = extracted(CORPUS / "pdf_auto_fmvss214_side_impact.pdf")
    assert cover_headings(sorted(result.elements, key=lambda e: (e.number, e.order))) == set()
    assert sum(c.heading_path[0].startswith("§ 571.214") for c in result.chunks) >= 30


def _title(element_id: str, page: int, text: str, size: float):
    return ElementRow(element_id=element_id, doc_id="d", source_path="d.pdf", unit="page", number=page, order=0,
                      kind="title", text=text, extractor="test", meta=json.dumps({"font_size": size, "heading_level": 1}))


def _body(element_id: str, page: int, text: str):
    return ElementRow(element_id=element_id, doc_id="d", source_path="d.pdf", unit="page", number=page, order=1,
                      kind="text", text=text, extractor="test", meta=json.dumps({"font_size": 10.0}))


def test_cover_headings_need_the_title_type_a_later_page_and_no_numbered_section_first():
    from tasks.ingest.chunking import section_paths
    from tasks.ingest.page_roles import cover_headings

    doc = [_title("t", 1, "Roof Strength Test Protocol", 16), _title("v", 1, "Version V", 16), _body("b0", 1, "IIHS"),
           _title("h", 3, "TESTING", 13), _body("b1", 3, "The roof is crushed at 5 mm/s."), _title("i", 4, "RATING", 13)]
    assert cover_headings(doc) == {"t", "v"}
    paths = [[n[1] for n in p] for p in section_paths(doc, cover_headings(doc))]
    assert paths == [["Roof Strength Test Protocol Version V"]] * 3 + [["TESTING"]] * 2 + [["RATING"]]
    # the same type later ("Agreement" then "1. Scope" set alike), one page only, or a numbered section first: no cover
    assert cover_headings(doc[:3] + [_title("h", 3, "TESTING", 16)]) == set()
    assert cover_headings([e.model_copy(update={"number": 1}) for e in doc]) == set()
    assert cover_headings([_body("s", 1, "S1. Scope. This standard ...")] + doc) == set()


def test_a_korean_list_label_is_one_of_ga_na_da_not_any_syllable():
    from tasks.ingest.extract.pdf_sections import Label, parse_label

    assert parse_label("가. 목적", heading=True) == Label("ga", ("가",))
    assert parse_label("하. 기타", heading=True) == Label("ga", ("하",))
    assert parse_label("음. 또한 지방자치단체의 탄소중립 녹색성장 기본계획") is None  # a sentence ending "…있음." broken at the line


def _qa_pair(chunk, question: str, answer: str):
    from schemas.qa_pairs import QaPairRow

    return QaPairRow(qa_id=f"{chunk.chunk_id}-q", chunk_id=chunk.chunk_id, doc_id=chunk.doc_id, source_path=chunk.source_path,
                     question=question, answer=answer, generated_question=question, generated_answer=answer,
                     question_type="factual", target_modality="text", language="en", status="pending",
                     provider="heuristic", model="m", prompt="p")


def test_a_standard_printed_in_two_extracts_keeps_its_pair_in_the_extract_it_belongs_to(extracted):
    # The FMVSS 214 extract ends with the opening of § 571.216 (its last page is the first page of 216); the FMVSS 216
    # extract prints it whole. The same scope question asked of both is kept in the 216 extract, whichever comes first.
    from tasks.ingest.ownership import owned_chunk_ids, principal_sections
    from tasks.qa.generate import flag_pairs

    side = extracted(CORPUS / "pdf_auto_fmvss214_side_impact.pdf").chunks
    roof = extracted(CORPUS / "pdf_auto_fmvss216_roof_crush.pdf").chunks
    scope = "This standard establishes strength requirements for the passenger compartment roof."
    carried = [c for c in side if scope in c.markdown]
    own = [c for c in roof if scope in c.markdown and c.heading_path[0].startswith("§ 571.216 ")]
    assert len(carried) == 1 and carried[0].heading_path[0].startswith("§ 571.216 ") and carried[0].page_start == 28
    assert own, [c.heading_path for c in roof]
    assert principal_sections(side + roof) == {side[0].doc_id: "§ 571.214", roof[0].doc_id: "§ 571.216"}
    owned = owned_chunk_ids(side + roof)
    assert carried[0].chunk_id not in owned and own[0].chunk_id in owned
    assert any(c.heading_path[0].startswith("§ 571.216a") and c.chunk_id not in owned for c in roof)  # 216a starts on p. 5
    question = "What is the scope of FMVSS No. 216?"
    chunks = {c.chunk_id: c for c in side + roof}
    for order in ([carried[0], own[0]], [own[0], carried[0]]):
        flagged = {p.chunk_id: p for p in flag_pairs([_qa_pair(c, question, scope) for c in order], chunks, Settings())}
        assert not {"ambiguous_gold", "near_duplicate"} & set(flagged[own[0].chunk_id].flags)  # the kept copy is clean
        assert "ambiguous_gold" in flagged[carried[0].chunk_id].flags
        assert own[0].chunk_id in " ".join(flagged[carried[0].chunk_id].flag_reasons)


def test_a_cross_reference_at_the_top_of_a_page_opens_no_section(extracted):
    # FMVSS 214 p. 24 opens "S10.3.2, use only the control that primarily moves the seat ...": the end of a sentence of
    # S12.3.3 (a page break before the reference), which used to title two chunks "S10.3.2, use only the control …".
    from tasks.ingest.extract.pdf_sections import Label, parse_label

    assert parse_label("S10.3.2, use only the control that primarily moves the seat", heading=True) is None
    assert parse_label("S10.3.2 Seat adjustment", heading=True) == Label("S", ("10", "3", "2"))
    chunks = extracted(CORPUS / "pdf_auto_fmvss214_side_impact.pdf").chunks
    assert not any("S10.3.2," in c.title for c in chunks), [c.title for c in chunks]
    page_24 = [c for c in chunks if c.page_start <= 24 <= c.page_end]
    assert page_24 and all(c.heading_path[-1].startswith("S12.3.3") for c in page_24), [c.heading_path for c in page_24]
