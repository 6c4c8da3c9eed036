"""A QA pair cites the page(s) its answer is on (``tasks.qa.pages``), not every page of its chunk: on real multi-page
chunks of a regulation (FMVSS 201) and a Korean report, checked against PyMuPDF's text of the cited page."""

from __future__ import annotations

import re

import pymupdf
import pytest

from ragprep.storage import Layout
from ragprep.tables import TableStore
from schemas.chunks import ChunkRow
from schemas.elements import ElementRow
from tasks.qa import pages
from tasks.qa.run import run_qa
from tests.conftest import CORPUS, SAMPLE_DOCS

FMVSS201 = CORPUS / "pdf_auto_fmvss201_interior_impact.pdf"
KOREAN = CORPUS / "pdf_ko_assembly_review_report.pdf"
DECK = SAMPLE_DOCS / "crash_report_side_pole.pptx"


def _page_text(path, number: int) -> str:
    with pymupdf.open(path) as doc:
        return pages.compared(doc[number - 1].get_text())


def _chunk_with(extracted, path, text: str) -> tuple[ChunkRow, pages.ChunkPages]:
    run = extracted(path)
    by_id = {e.element_id: e for e in run.elements}
    chunk = next(c for c in run.chunks if pages.compared(text) in pages.compared(c.markdown))
    return chunk, pages.chunk_pages(chunk, by_id)


def test_each_page_of_a_real_multi_page_chunk_is_cited_for_a_sentence_it_holds(extracted):
    run = extracted(FMVSS201)
    by_id = {e.element_id: e for e in run.elements}
    checked = 0
    for chunk in (c for c in run.chunks if c.page_end and c.page_end > c.page_start):
        chunk_pages = pages.chunk_pages(chunk, by_id)
        texts = [by_id[e] for e in chunk.element_ids if by_id[e].kind == "text"]
        for element in texts:
            sentence = next((s for s in re.split(r"(?<=\.)\s+", element.text) if len(s) > 60), "")
            needle = pages.compared(sentence)
            if not sentence or sum(needle in t for _, t in chunk_pages.pages) != 1:
                continue  # a sentence said twice in the chunk proves nothing about which page holds it
            cited = pages.cite(chunk_pages, "What does it say?", sentence, None)
            assert (cited["page_start"], cited["page_end"], cited["page_source"]) == (element.number, element.number, "answer")
            assert needle in _page_text(FMVSS201, element.number)
            checked += 1
    assert checked >= 20


def test_an_answer_over_a_page_break_cites_both_pages_and_one_on_the_next_page_cites_that_page(extracted):
    answer = ("Except as provided in S5.2.1, when that area of the seat back that is within the head impact area is "
              "impacted in accordance with S5.2.2 by a 6.8 kilogram, 165 mm diameter head form at a relative velocity of "
              "24 kilometers per hour, the deceleration of the head form shall not exceed 80g continuously for more than "
              "3 milliseconds.")
    chunk, chunk_pages = _chunk_with(extracted, FMVSS201, "seat back that is within the head impact area is impacted in accordance with S5.2.2")
    assert (chunk.page_start, chunk.page_end) == (3, 4)
    cited = pages.cite(chunk_pages, "According to S5.2 of FMVSS No. 201, what limit applies?", answer, None)
    assert (cited["page_start"], cited["page_end"], cited["page_source"]) == (3, 4, "answer")
    head, tail = pages.compared(answer)[:30], pages.compared(answer)[-30:]
    assert head in _page_text(FMVSS201, 3) and tail in _page_text(FMVSS201, 4)
    cited = pages.cite(chunk_pages, "How long may the head form's deceleration exceed 80g?", "3 milliseconds", None)
    assert (cited["page_start"], cited["page_end"]) == (4, 4)  # found on page 4 only, though the chunk starts on 3


def test_a_korean_answer_is_found_whatever_its_spacing_and_line_breaks(extracted):
    chunk, chunk_pages = _chunk_with(extracted, KOREAN, "다양한 사회계층이 참여하지 못하고")
    assert chunk.page_end - chunk.page_start >= 2
    answer = ("또한, 2050 지방탄소중립‧녹색성장위원회의 경우 노동계, 농업계,\n\n청년 등이 포함되지 않은 채 "
              "탄소중립‧녹색성장위원회가 구성된 광역\n\n지방자치단체가 있어, 다양한 사회계층이 참여하지 못하고 있다는 비\n\n판이 제기")
    cited = pages.cite(chunk_pages, "2050 지방탄소중립‧녹색성장위원회에는 누가 포함되지 않았나요?", answer, None)
    assert cited["page_source"] == "answer"
    first, last = cited["page_start"], cited["page_end"]
    assert chunk.page_start <= first <= last <= first + 1 and (first, last) != (chunk.page_start, chunk.page_end)
    text = "".join(_page_text(KOREAN, n) for n in range(first, last + 1))
    assert pages.compared("다양한사회계층이참여하지못하고") in text


def test_the_rules_evidence_element_is_cited_with_the_pages_its_table_continues_on():
    def element(element_id: str, number: int, kind: str, text: str, meta: str | None = None) -> ElementRow:
        return ElementRow(element_id=element_id, doc_id="d", source_path="x.pdf", unit="page", number=number, order=0,
                          kind=kind, text=text, extractor="pymupdf", meta=meta)

    rows = [element("t1", 24, "text", "Table 3 lists the seats"), element("tab", 24, "table", "| Seat | Approval |\n| A | R129 |",
                                                                           '{"continued_pages": [25]}'),
            element("t2", 26, "text", "The notes follow.")]
    chunk = ChunkRow.model_construct(chunk_id="c", element_ids=["t1", "tab", "t2"], slide=None, page_start=24, page_end=26)
    chunk_pages = pages.chunk_pages(chunk, {e.element_id: e for e in rows})
    assert pages.cite(chunk_pages, "What approval has seat A?", "R129", "tab") == {
        "page_start": 24, "page_end": 25, "page_source": "element"}
    assert pages.cite(chunk_pages, "What follows?", "The notes follow.", "elsewhere") == {
        "page_start": 26, "page_end": 26, "page_source": "answer"}  # an element of another chunk is not evidence here
    assert pages.cite(chunk_pages, "What is the HIC limit?", "700 HIC15", None) == {
        "page_start": 24, "page_end": 26, "page_source": "chunk"}  # not found: the chunk's pages, and it says so


def test_a_run_cites_answer_pages_for_pdf_pairs_and_keeps_slides(ingest_copy, tmp_path):
    settings = ingest_copy([FMVSS201, DECK], tmp_path / "root")
    run_qa(settings)
    store = TableStore(Layout(settings.root))
    chunks = {c.chunk_id: c for c in store.read("chunks")}
    pairs = store.read("qa_pairs")
    slides = [p for p in pairs if chunks[p.chunk_id].slide is not None]
    assert slides and all(p.slide == chunks[p.chunk_id].slide and p.page_start is None and p.page_source for p in slides)
    pdf = [p for p in pairs if p.source_path.endswith(".pdf")]
    assert len(pdf) >= 20 and all(p.page_source in ("element", "answer", "chunk") for p in pdf)
    chunk_of = {p.qa_id: chunks[p.chunk_id] for p in pdf}
    assert all(chunk_of[p.qa_id].page_start <= p.page_start <= p.page_end <= chunk_of[p.qa_id].page_end for p in pdf)
    narrowed = [p for p in pdf if (p.page_start, p.page_end) != (chunk_of[p.qa_id].page_start, chunk_of[p.qa_id].page_end)]
    assert narrowed, "no pair of a multi-page chunk cites fewer pages than its chunk"
    holds = [pages.compared(p.answer)[:40] in _page_text(FMVSS201, p.page_start) for p in pdf]
    assert sum(holds) >= 0.9 * len(pdf), f"{sum(holds)}/{len(pdf)} cited first pages hold the answer's start"


@pytest.mark.parametrize("answer", ["", "5"])
def test_an_answer_too_short_to_locate_falls_back_to_the_chunk(answer):
    chunk = ChunkRow.model_construct(chunk_id="c", element_ids=[], slide=None, page_start=3, page_end=4)
    assert pages.cite(pages.chunk_pages(chunk, {}), "q?", answer, None)["page_source"] == "chunk"


def test_the_review_page_says_when_the_answer_was_not_located():
    from tasks.qa.review_page import unit_text

    assert unit_text({"page_start": 5, "page_end": 5, "page_source": "answer"}, None) == "page 5"
    assert unit_text({"page_start": 3, "page_end": 5, "page_source": "chunk"}, None) == "pages 3\u20135 (the chunk's; answer not located)"
    assert unit_text({"slide": 2, "page_source": "chunk"}, None) == "slide 2"
