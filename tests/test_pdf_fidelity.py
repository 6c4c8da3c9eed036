"""Reading real PDF defects right: small PDFs with one defect each, built with PyMuPDF at test time."""

from __future__ import annotations

import json
from pathlib import Path

import pymupdf
import pytest

from ragprep.engines.pdf import page_words
from ragprep.settings import Settings
from ragprep.storage import Layout
from tasks.ingest.chunking import build_chunks, pack_sections, section_paths
from tasks.ingest.extract import ExtractContext, extract
from tasks.ingest.extract.pdf import dedup_title
from tasks.ingest.extract.pdf_health import lost_glyphs, lost_spaces
from tasks.ingest.extract.pdf_order import reading_order
from tasks.ingest.extract.pdf_sections import Label, parse_label

KOREAN_FONT = "korea"  # PyMuPDF's built-in CJK font (no file needed)


def read(path: Path, tmp_path: Path, max_tokens: int = 400):
    settings = Settings(root=tmp_path / "root", ocr={"enabled": False}, chunking={"max_tokens": max_tokens})
    ctx = ExtractContext(doc_id="d", source_path=path.name, settings=settings, layout=Layout(settings.root), ocr=None)
    result = extract(path, ctx)
    chunks = build_chunks("d", path.name, result.format, result.elements, result.outline, result.n_units, settings)
    return result, chunks


LOREM = (
    "The test vehicle is loaded to its unloaded vehicle weight plus the rated cargo and luggage capacity. "
    "Each dummy is positioned as specified and restrained by the belt system provided for that seat. "
)


def write_body(page: pymupdf.Page, paragraphs: list[str], x0: float = 72, x1: float = 540, y: float = 90) -> float:
    for text in paragraphs:
        rect = pymupdf.Rect(x0, y, x1, y + 200)
        spare = page.insert_textbox(rect, text, fontsize=10, fontname="helv")
        y += 200 - spare + 8
    return y


def test_running_heads_and_page_numbers_never_reach_chunks_or_titles(tmp_path):
    doc = pymupdf.open()
    for n in range(1, 6):
        page = doc.new_page()
        head = "Nat'l Highway Traffic Safety Admin., DOT" if n % 2 else "49 CFR Ch. V (10-1-24 Edition)"
        page.insert_text((72, 40), head, fontsize=12, fontname="hebo")  # bold: a heading candidate
        page.insert_text((450, 40), f"§ 571.{200 + n}", fontsize=12, fontname="hebo")
        write_body(page, [f"S{n}. Section {n}. " + LOREM * 2])
        page.insert_text((300, 780), str(1000 + n), fontsize=9)
    path = tmp_path / "heads.pdf"
    doc.save(path)
    result, chunks = read(path, tmp_path)
    text = "\n".join(c.markdown for c in chunks)
    assert "Highway Traffic" not in text and "49 CFR" not in text and "1003" not in text
    assert not any("Highway" in c.title or "CFR" in c.title for c in chunks)
    assert "Section 3" in text  # the body stays


def test_two_columns_read_left_then_right(tmp_path):
    doc = pymupdf.open()
    page = doc.new_page()
    page.insert_text((72, 60), "A Full Width Title Across Both Columns Of The Page", fontsize=16, fontname="hebo")
    for i in range(4):
        page.insert_textbox(pymupdf.Rect(72, 100 + i * 120, 290, 210 + i * 120), f"Left{i} " + LOREM, fontsize=9)
        page.insert_textbox(pymupdf.Rect(320, 100 + i * 120, 540, 210 + i * 120), f"Right{i} " + LOREM, fontsize=9)
    path = tmp_path / "columns.pdf"
    doc.save(path)
    result, _ = read(path, tmp_path)
    words = [e.text.split()[0] for e in sorted(result.elements, key=lambda e: e.order) if e.kind == "text"]
    assert words == [f"Left{i}" for i in range(4)] + [f"Right{i}" for i in range(4)]


def test_reading_order_keeps_full_width_blocks_in_place():
    boxes = [(72, 50, 540, 70), (72, 100, 290, 200), (320, 100, 540, 200), (72, 210, 290, 300), (320, 210, 540, 300),
             (72, 320, 540, 340), (72, 350, 290, 400), (320, 350, 540, 400), (72, 410, 290, 450), (320, 410, 540, 450)]
    assert reading_order(boxes) == [0, 1, 3, 2, 4, 5, 6, 8, 7, 9]


def test_numbered_sections_without_outline_title_the_chunks(tmp_path):
    doc = pymupdf.open()
    page = doc.new_page()
    y = write_body(page, ["§ 571.208 Standard No. 208; Occupant crash protection.", "S1. Scope. " + LOREM,
                          "S5. Requirements. " + LOREM, "S5.1 Test weight. " + LOREM, "S5.2 Impact speed. " + LOREM])
    page = doc.new_page()
    write_body(page, ["S5.3 Fuel system integrity. " + LOREM * 2, "§ 571.209 Standard No. 209; Seat belt assemblies.",
                      "S1. Purpose and scope. " + LOREM])
    path = tmp_path / "numbered.pdf"
    doc.save(path)
    assert y > 0
    _, chunks = read(path, tmp_path, max_tokens=120)
    for chunk in chunks:
        if "Seat belt assemblies" in chunk.markdown or "Purpose and scope" in chunk.markdown:
            assert chunk.heading_path[0].startswith("§ 571.209"), chunk.heading_path
        if "Fuel system integrity. The test" in chunk.markdown:
            assert chunk.heading_path[0].startswith("§ 571.208")
            assert chunk.heading_path[-1].startswith(("S5.3", "S5 "))  # its own section or the parent holding it
    assert any(c.heading_path[0].startswith("§ 571.209") for c in chunks)


def test_sibling_sections_share_a_chunk_only_under_their_parent():
    from schemas.elements import ElementRow

    def el(i: int, text: str) -> ElementRow:
        return ElementRow(element_id=f"e{i}", doc_id="d", source_path="x", unit="page", number=1, order=i, kind="text",
                          text=text, extractor="test")

    elements = [el(0, "S5. Requirements."), el(1, "S5.1 Weight. Short."), el(2, "S5.2 Speed. Short."), el(3, "S6. Test. Short.")]
    parts = pack_sections((), list(zip(elements, section_paths(elements))), room=30)
    titles = [[n[1] for n in prefix] for prefix, _ in parts]
    assert titles[0] == ["S5. Requirements"]  # S5 with both its subsections, titled by S5
    assert [e.element_id for e, _ in parts[0][1]] == ["e0", "e1", "e2"]
    assert titles[-1] == ["S6. Test"]


def test_labels_of_every_kind():
    assert parse_label("§ 571.209 Standard No. 209") == Label("§", ("571.209",))
    assert parse_label("S5.1.2 Impact speed. The vehicle") == Label("S", ("5", "1", "2"))
    assert parse_label("5.2.1. Impact speed") == Label("num", ("5", "2", "1"))
    assert parse_label("Annex 3") == Label("annex", ("3",))
    assert parse_label("제3조(목적) 이 법은") == Label("jo", ("3",))
    assert parse_label("Ⅲ 제안요청 내용").kind == "roman"
    assert parse_label("가. 일반사항").kind == "ga"
    # a list item in running text is not a section
    assert parse_label("5. The vehicle shall be tested at 50 km/h. It shall then be inspected again.") is None
    assert Label("S", ("5",)).holds(Label("S", ("5", "1"))) and not Label("S", ("5", "1")).holds(Label("S", ("5", "2")))


def test_korean_glyph_gap_spacing_is_re_read(tmp_path):
    words = ["제안요청서에", "대한", "의문사항은", "서면으로", "제출하여야", "합니다"] * 4
    doc = pymupdf.open()
    page = doc.new_page()
    for row in range(4):
        x, y = 60.0, 100.0 + row * 30
        for word in words:
            for ch in word:  # one glyph at a time, the word space a gap only (as HWP exports do)
                page.insert_text((x, y), ch, fontsize=11, fontname=KOREAN_FONT)
                x += 11.0
            x += 6.0
            if x > 520:
                break
    path = tmp_path / "korean.pdf"
    doc.save(path)
    result, chunks = read(path, tmp_path)
    texts = [e for e in result.elements if e.kind == "text"]
    assert texts and all(e.text_source == "repaired" for e in texts)
    assert "제안요청서에 대한 의문사항은" in "\n".join(c.markdown for c in chunks)
    assert "missing word spaces" in (texts[0].meta or "")


def _glyphs(page: pymupdf.Page, x: float, y: float, words: list[str], gap: float, size: float = 11.0) -> float:
    """Write the words one glyph at a time, a word space only a ``gap`` (as HWP exports do); the end x."""
    for word in words:
        for ch in word:
            page.insert_text((x, y), ch, fontsize=size, fontname=KOREAN_FONT)
            x += size
        x += gap
    return x


def test_word_gaps_split_table_cells_and_letter_spacing_is_not_a_word_space(tmp_path):
    doc = pymupdf.open()
    page = doc.new_page()
    _glyphs(page, 72, 60, list("환경노동위원회"), gap=6.0, size=14.0)  # a letter-spaced title
    for x in (72, 272, 472):
        page.draw_line((x, 90), (x, 150))
    for y in (90, 120, 150):
        page.draw_line((72, y), (472, y))
    _glyphs(page, 76, 110, ["구분"], gap=6.0)
    _glyphs(page, 276, 110, ["내용"], gap=6.0)
    _glyphs(page, 76, 140, ["위원"], gap=6.0)
    _glyphs(page, 276, 140, ["대표할", "수", "있는", "단체"], gap=6.0)
    page.insert_text((72, 200), "English text with its spaces is read as it was.", fontsize=11)
    path = tmp_path / "gaps.pdf"
    doc.save(path)
    result, _ = read(path, tmp_path)
    (table,) = [e for e in result.elements if e.kind == "table"]
    assert "| 위원 | 대표할 수 있는 단체 |" in table.text
    texts = {e.text: e for e in result.elements if e.kind in ("text", "title")}
    assert "환경노동위원회" in texts and texts["환경노동위원회"].text_source == "text"
    english = texts["English text with its spaces is read as it was."]
    assert english.text_source == "text"
    page = pymupdf.open(path)[0]
    plain = [w for w in page.get_text("words") if w[4].isascii()]
    assert [w[:5] for w in page_words(page) if w[4].isascii()] == [w[:5] for w in plain]


def test_health_detectors():
    assert lost_glyphs("THOR sh ll be clothed with fo mfitting cotton stretch und rg rm nts " * 5)
    assert lost_glyphs("The dummy shall be clothed with formfitting cotton stretch garments " * 5) is None
    assert lost_spaces("제안요청서에대한의문사항은서면으로제출하여야합니다" * 3)
    assert lost_spaces("제안요청서에 대한 의문사항은 서면으로 제출하여야 합니다 " * 3) is None


def test_lost_glyph_page_goes_to_ocr_not_to_chunks(tmp_path):
    doc = pymupdf.open()
    page = doc.new_page()
    write_body(page, ["THOR sh ll be clothed with fo mfitting cotton stretch und rg rm nts and sh ll w r sho s. " * 6])
    path = tmp_path / "lost.pdf"
    doc.save(path)
    result, _ = read(path, tmp_path)
    ocr = [e for e in result.elements if e.kind == "ocr_page"]
    assert ocr and "lost glyphs" in (ocr[0].meta or "")
    assert any("lost glyphs" in w for w in result.warnings)


def test_document_title_is_not_doubled():
    assert dedup_title("제안요청서(RFP) 제안요청서(RFP)") == "제안요청서(RFP)"
    assert dedup_title("Roof Strength Test Protocol") == "Roof Strength Test Protocol"


@pytest.mark.parametrize("placeholder", ["책갈피", "Bookmark 1"])
def test_placeholder_bookmarks_never_title_chunks(tmp_path, placeholder):
    doc = pymupdf.open()
    for n in range(2):
        page = doc.new_page()
        page.insert_text((72, 72), f"{n + 1}. Chapter {n + 1}", fontsize=18, fontname="hebo")
        write_body(page, [LOREM * 3], y=100)
    doc.set_toc([[1, placeholder, 1], [1, placeholder, 2]])
    path = tmp_path / "bookmarks.pdf"
    doc.save(path)
    _, chunks = read(path, tmp_path)
    assert chunks and not any(placeholder in c.title or placeholder in c.heading_path for c in chunks)
    assert [c.title for c in chunks if c.unit == "chapter"] == ["1. Chapter 1", "2. Chapter 2"]


def draw_table(page: pymupdf.Page, top: float, rows: list[list[str]], merged: dict[tuple[int, int], int] | None = None,
               widths: tuple[float, ...] = (160, 160, 120), height: float = 20) -> float:
    """Rule a grid at ``top`` and write the cells; ``merged[(r, c)] = n``: the cell spans n rows (no rule between)."""
    merged = merged or {}
    x0 = 72
    xs = [x0]
    for w in widths:
        xs.append(xs[-1] + w)
    covered = {(r + k, c) for (r, c), n in merged.items() for k in range(1, n)}
    bottom = top + height * len(rows)
    for x in xs:
        page.draw_line((x, top), (x, bottom))
    for r in range(len(rows) + 1):
        y = top + r * height
        for c in range(len(widths)):
            if (r, c) not in covered:  # no rule inside a merged cell
                page.draw_line((xs[c], y), (xs[c + 1], y))
    for r, row in enumerate(rows):
        for c, text in enumerate(row):
            if text and (r, c) not in covered:
                page.insert_text((xs[c] + 4, top + r * height + 14), text, fontsize=10)
    return bottom


def test_merged_label_applies_to_the_rows_it_spans_and_totals_are_marked(tmp_path):
    doc = pymupdf.open()
    page = doc.new_page()
    page.insert_text((72, 80), "Table 3: Frontal scoring", fontsize=10)
    draw_table(page, 90, [["Test", "Item", "Points"], ["Frontal impact", "Head", "3"], ["", "Chest", "4"],
                          ["", "Femur", "12"], ["Total", "", "19"]], merged={(1, 0): 3})
    path = tmp_path / "merged.pdf"
    doc.save(path)
    result, _ = read(path, tmp_path)
    (table,) = [e for e in result.elements if e.kind == "table"]
    md = table.text
    assert md.startswith("**Table 3: Frontal scoring**")
    assert "| Frontal impact | Chest | 4 |" in md and "| Frontal impact | Femur | 12 |" in md
    assert "| **Total** |  | 19 |" in md
    meta = json.loads(table.meta)
    assert meta["header_rows"] == 1 and meta["total_rows"] == [4] and meta["caption"].startswith("Table 3")
    assert not any(e.kind == "text" and e.text.startswith("Table 3") for e in result.elements)  # attached, not loose


def test_table_continued_on_the_next_page_is_one_element(tmp_path):
    doc = pymupdf.open()
    header = ["Criterion", "Limit", "Region"]
    page = doc.new_page()
    write_body(page, [LOREM * 3], y=72)
    draw_table(page, 560, [header] + [[f"Crit {i}", f"{i}0", "Head"] for i in range(1, 11)])
    page = doc.new_page()
    draw_table(page, 72, [header] + [[f"Crit {i}", f"{i}0", "Neck"] for i in range(11, 16)])
    write_body(page, [LOREM * 2], y=220)
    path = tmp_path / "continued.pdf"
    doc.save(path)
    result, _ = read(path, tmp_path)
    tables = [e for e in result.elements if e.kind == "table"]
    assert len(tables) == 1 and tables[0].number == 1
    md = tables[0].text
    assert "| Crit 1 | 10 | Head |" in md and "| Crit 15 | 150 | Neck |" in md
    assert md.count("| Criterion | Limit | Region |") == 1  # the repeated header is dropped
    assert "continued on page 2" in md
    assert json.loads(tables[0].meta)["continued_pages"] == [2]


def test_slide_ocr_text_is_filtered_and_syllables_rejoined():
    from tasks.ingest.extract.ocr_text import clean_ocr_text

    raw = "승 차 종 승 객 수\n| ~ ee = \\ ;\nFrontal Offset test 64 km/h\n— . :: ||| a e\n충돌 시험 결과 요약"
    assert clean_ocr_text(raw) == "승차종승객수\nFrontal Offset test 64 km/h\n충돌 시험 결과 요약"
    assert clean_ocr_text("가 나") == "가 나"  # two syllables may be two one-syllable words


def test_an_outline_that_leaves_the_numbered_body_out_is_not_its_structure():
    from schemas.elements import ElementRow
    from tasks.ingest.chunking import usable_outline
    from tasks.ingest.extract.base import OutlineEntry

    def el(page: int, text: str) -> ElementRow:
        return ElementRow(element_id=f"e{page}-{text[:4]}", doc_id="d", source_path="x", unit="page", number=page,
                          order=0, kind="text", text=text, extractor="test")

    body = [el(p, f"{p}.1. The requirement number {p} applies to every vehicle.") for p in range(1, 8)]
    late = [OutlineEntry(1, "1. Trade name or mark", 20), OutlineEntry(1, "Figure 1", 38)]
    assert usable_outline(late, 76, body) == []
    front = [el(1, "The SimFil Program"), el(2, "Abstract. This report describes a filter.")]
    good = [OutlineEntry(1, "Introduction", 7), OutlineEntry(1, "책갈피", 3), OutlineEntry(1, "Results", 30)]
    assert [e.title for e in usable_outline(good, 76, front)] == ["Introduction", "Results"]


def test_a_sentence_broken_by_a_column_break_reads_as_one_paragraph():
    from schemas.elements import ElementRow
    from tasks.ingest.chunking import joined_paragraphs

    def el(i: int, kind: str, text: str) -> tuple[ElementRow, str]:
        row = ElementRow(element_id=f"e{i}", doc_id="d", source_path="x", unit="page", number=1, order=i, kind=kind,
                         text=text, extractor="test")
        return row, text

    pieces = [el(0, "text", "S2. Purpose. The purpose is to reduce fires that result"), el(1, "text", "from fuel spillage."),
              el(2, "text", "S3. Application. This standard applies"), el(3, "table", "| a | b |")]
    assert joined_paragraphs(pieces) == [
        "S2. Purpose. The purpose is to reduce fires that result from fuel spillage.",
        "S3. Application. This standard applies", "| a | b |",
    ]


def test_figure_only_pages_keep_their_captions_even_when_they_repeat_in_place(tmp_path):
    doc = pymupdf.open()
    for n in range(1, 4):
        page = doc.new_page()
        page.draw_rect(pymupdf.Rect(100, 100, 500, 600))  # the figure: drawings only
        page.insert_text((100, 630), f"Figure {n} to § 571.216 Test device position", fontsize=10)
    path = tmp_path / "figures.pdf"
    doc.save(path)
    result, chunks = read(path, tmp_path)
    text = "\n".join(c.markdown for c in chunks)
    for n in range(1, 4):
        assert f"Figure {n} to § 571.216 Test device position" in text


@pytest.mark.parametrize(("left", "right", "joined"), [
    ("an al-", "cohol fuel", "an alcohol fuel"),  # a split word of the word list: joined
    ("vehicles manufac-", "tured on", "vehicles manufactured on"),
    ("the Z-", "axis is", "the Z-axis is"),  # one letter: a compound
    ("BeSafe i-", "Size seat", "BeSafe i-Size seat"),
    ("has a 1.9-", "cm thick piece", "has a 1.9-cm thick piece"),  # a number
    ("the ISOFIX-", "compatible seat", "the ISOFIX-compatible seat"),  # an acronym
    ("the vehicle-to-", "pole test", "the vehicle-to-pole test"),  # a chain goes on
    ("the vehicle-", "to-pole test", "the vehicle-to-pole test"),
    ("a steel semi-", "cylinder", "a steel semi-cylinder"),  # two words whose join is none: a compound
    ("range 20-", "30 mm", "range 20- 30 mm"),  # a range: left as it is
    ("of -", "5 degrees", "of - 5 degrees"),
    ("combined DC-", "or AC-buses", "combined DC- or AC-buses"),  # a suspended hyphen
    ("inter-", "and intra-city", "inter- and intra-city"),
    ("the results -", "see Table 2", "the results - see Table 2"),  # a dash set apart is no broken word
    ("시험 결과-", "기준", "시험 결과- 기준"),  # Korean is left as it is
    ("for the proce-", "S12.2 Pelvic", "for the proce- S12.2 Pelvic"),  # upper case after a split: not guessed
])
def test_a_word_broken_at_a_line_end_is_joined_kept_or_left_by_its_kind(left, right, joined):
    from ragprep.engines.pdf import join_lines

    assert join_lines([left, right]) == joined


def test_the_documents_own_words_decide_a_line_end_hyphen():
    from ragprep.engines.hyphens import Hyphenation
    from ragprep.engines.pdf import join_lines

    plain = Hyphenation.of_lines(["Non-linear is how the R95 text writes it.", "the head-form impacts"])
    assert join_lines(["the non-", "linear part"]) == "the nonlinear part"  # the word list alone joins it
    assert join_lines(["the non-", "linear part"], plain) == "the non-linear part"  # the document writes it so
    assert join_lines(["the head-", "form of"], plain) == "the head-form of"
    joined = Hyphenation.of_lines(["the headform impacts the headform target"])
    assert join_lines(["the head-", "form of"], joined) == "the headform of"  # not in the word list, in the document
    subpart = Hyphenation.of_lines(["Subpart F", "Part 572 Sub-", "part U"])  # the broken parts are not words
    assert join_lines(["Part 572 Sub-", "part U"], subpart) == "Part 572 Subpart U"
    assert "sub" not in subpart.words and subpart.words["part"] == 1 and subpart.words["subpart"] == 1


def test_line_end_hyphens_in_blocks_cells_and_page_breaks_read_as_the_document_writes_them(tmp_path):
    doc = pymupdf.open()
    page = doc.new_page()
    lines = [
        "S5.7 Alcohol fuel vehicles. Each vehicle manufactured to operate on an al-",
        "cohol fuel shall meet S6.6. The seating reference point and the H-",
        "point are located as specified. The test device is a semi-",
        "cylinder. Each type-approval mark and the type-",
        "approval number are shown. Crashworthiness is tested. The crash-",
        "worthiness of a body-in-",
        "white is a range 20-",
        "30 mm in a DC-",
        "or AC-bus.",
    ]
    page.insert_text((72, 90), "\n".join(lines), fontsize=10, fontname="helv")
    for x in (72, 272, 472):
        page.draw_line((x, 300), (x, 360))
    for y in (300, 330, 360):
        page.draw_line((72, y), (472, y))
    page.insert_text((76, 314), "Seat", fontsize=10)
    page.insert_text((276, 314), "Note", fontsize=10)
    page.insert_text((76, 344), "BeSafe iZi Flex FIX", fontsize=10)
    page.insert_text((276, 340), "Anti-rotation bar up; anti-\nrotation bar down; i-\nSize seat", fontsize=8)
    page.insert_text((72, 760), "The text runs on to the next page where the require-", fontsize=10, fontname="helv")
    doc.new_page().insert_text((72, 90), "ments for side doors are listed.", fontsize=10, fontname="helv")
    path = tmp_path / "hyphens.pdf"
    doc.save(path)
    result, chunks = read(path, tmp_path)
    text = "\n".join(c.markdown for c in chunks)
    for expected in ("an alcohol fuel", "the H-point are", "is a semi-cylinder.", "and the type-approval number",
                     "The crashworthiness of a body-in-white", "a range 20- 30 mm", "a DC- or AC-bus",
                     "the requirements for side doors"):
        assert expected in text, expected
    (table,) = [e for e in result.elements if e.kind == "table"]
    assert "Anti-rotation bar up; anti-rotation bar down; i-Size seat" in table.text


def _raw_line(x: float, y: float, text: str, size: float = 8.0) -> dict:
    """A ``rawdict`` line of glyphs 4 pt wide set from ``x``."""
    chars = [{"c": c, "bbox": (x + 4 * i, y, x + 4 * (i + 1), y + size)} for i, c in enumerate(text)]
    return {"bbox": (x, y, x + 4 * len(text), y + size), "spans": [{"size": size, "flags": 0, "font": "helv", "chars": chars}]}


def test_a_section_opening_inside_a_text_block_opens_its_own_section():
    """The CFR sets paragraphs with no space between them, so MuPDF reads several as one block (FMVSS 214: S7.2.5
    was filed under S7.2.1); a numbered section opening on an indented line after a finished sentence is cut into
    a block of its own, while a cross-reference that a line break puts first and a label at the margin are not."""
    from tasks.ingest.extract.pdf_text import read_blocks

    rows = [
        (140, "S7.2 MDB test with advanced dummies. The following"),
        (132, "applies to vehicles made on or after 2010, as specified in"),
        (132, "S7.2.1 of this section and (49 CFR 571.214)."),
        (140, "S7.2.3 [Reserved]"),
        (140, "S7.2.5 Dynamic performance requirements. The HIC shall"),
        (132, "not exceed 1000 when calculated as specified."),
        (132, "S7.2.6 quoted at the margin is no paragraph opening."),
        (140, "1.3  0.1"),
    ]
    lines = [_raw_line(x, 100 + 9 * i, text) for i, (x, text) in enumerate(rows)]
    block = {"type": 0, "bbox": (132, 100, 400, 100 + 9 * len(rows)), "lines": lines}
    texts = [b.text for b in read_blocks(1, {"blocks": [block]})]
    assert texts == [
        "S7.2 MDB test with advanced dummies. The following applies to vehicles made on or after 2010, as specified in "
        "S7.2.1 of this section and (49 CFR 571.214).",
        "S7.2.3 [Reserved]",
        "S7.2.5 Dynamic performance requirements. The HIC shall not exceed 1000 when calculated as specified. "
        "S7.2.6 quoted at the margin is no paragraph opening. 1.3  0.1",
    ]


def test_fmvss_214_sections_opening_inside_a_block_hold_their_own_text(extracted, corpus):
    result = extracted(corpus / "pdf_auto_fmvss214_side_impact.pdf")
    holder = next(c for c in result.chunks if "S7.2.5 Dynamic performance requirements" in c.markdown)
    assert any(h.startswith("S7.2 MDB test with advanced test dummies") for h in holder.heading_path)
    assert not any(h.startswith(("S7.2.1", "S7.1")) for h in holder.heading_path)
    text = "\n".join(c.markdown for c in result.chunks)
    assert "accel- eration" not in text and "resultant head acceleration" in text  # line-end hyphens joined
    assert "H-point" in text and "Hpoint" not in text and "vehicle-to-pole" in text  # compounds kept
