"""Chunking rules on crafted elements: budgets, sentence boundaries, fallbacks."""

from __future__ import annotations

import json

from ragprep.settings import Settings
from ragprep.tokens import count_tokens
from schemas.elements import ElementRow
from tasks.ingest.chunking import (
    build_chunks,
    select_outline_chapters,
    split_sentences,
)
from tasks.ingest.extract.base import OutlineEntry


def el(page: int, order: int, kind: str, text: str, y: float, level: int | None = None) -> ElementRow:
    return ElementRow(
        element_id=f"e{page}-{order}", doc_id="d", source_path="x.pdf", unit="page", number=page, order=order,
        kind=kind, text=text, bbox=[50, y, 500, y + 12], extractor="test",
        meta=json.dumps({"heading_level": level}) if level else None,
    )


SENTENCES = [f"Sentence number {i} explains the crash pulse of test {i} in plain words." for i in range(60)]


def test_long_chapter_splits_between_sentences_never_inside(tmp_path):
    paragraph = " ".join(SENTENCES)
    elements = [el(1, 0, "title", "Only Chapter", 40, 1), el(1, 1, "text", paragraph, 80), el(2, 0, "title", "Next", 40, 1), el(2, 1, "text", "Short.", 80)]
    outline = [OutlineEntry(1, "Only Chapter", 1, 30.0), OutlineEntry(1, "Next", 2, 30.0)]
    settings = Settings(root=tmp_path, chunking={"max_tokens": 200})
    chunks = build_chunks("d", "x.pdf", "pdf", elements, outline, 2, settings)
    parts = [c for c in chunks if c.chapter_index == 0]
    assert len(parts) >= 3
    assert all(c.token_count <= 200 for c in chunks)
    body = " ".join(c.markdown.split("\n\n", 1)[1] for c in parts)
    assert body == paragraph  # nothing lost, nothing duplicated, cut only at sentence ends
    for part in parts:
        assert part.markdown.rstrip().endswith(".")
    assert [c.part_index for c in parts] == list(range(len(parts)))


def test_long_chapter_prefers_subheadings(tmp_path):
    elements = [el(1, 0, "title", "Chapter", 40, 1)]
    for i, name in enumerate(["Alpha", "Beta", "Gamma"]):
        elements.append(el(1 + i, 10 + i * 2, "title", f"Section {name}", 100, 2))
        elements.append(el(1 + i, 11 + i * 2, "text", " ".join(SENTENCES[:8]), 140))
    settings = Settings(root=tmp_path, chunking={"max_tokens": 260})
    chunks = build_chunks("d", "x.pdf", "pdf", elements, [OutlineEntry(1, "Chapter", 1, 30.0)], 3, settings)
    titles = [c.title for c in chunks]
    # each part is titled by the section it lies in (the first no longer by the chapter alone)
    assert titles == ["Chapter / Section Alpha", "Chapter / Section Beta", "Chapter / Section Gamma"]
    assert chunks[1].heading_path == ["Chapter", "Section Beta"]


def test_one_chapter_book_splits_at_sections():
    outline = [OutlineEntry(1, "The Book", 1), OutlineEntry(2, "Part A", 2), OutlineEntry(2, "Part B", 12), OutlineEntry(3, "B.1", 13)]
    chapters = select_outline_chapters(outline, n_pages=20, dominant_share=0.6, dominant_min_pages=10)
    assert [c.title for c in chapters] == ["The Book", "Part A", "Part B"]
    assert chapters[2].heading_path == ("The Book", "Part B")
    # a short document keeps its single chapter whole
    assert [c.title for c in select_outline_chapters(outline, n_pages=6, dominant_share=0.6, dominant_min_pages=10)] == ["The Book"]


def test_outline_entries_outside_the_document_are_ignored():
    outline = [OutlineEntry(1, "Web link", -1), OutlineEntry(1, "One", 1), OutlineEntry(1, "Two", 5), OutlineEntry(1, "Broken", 99)]
    assert [c.title for c in select_outline_chapters(outline, 10, 0.6, 10)] == ["One", "Two"]


def test_heading_chapters_without_outline_merge_multiline_titles(tmp_path):
    elements = [
        el(1, 0, "title", "Climate Act", 40, 1), el(1, 1, "title", "Amendment Review", 60, 1), el(1, 2, "text", "Body one.", 100),
        el(3, 0, "title", "Findings", 40, 1), el(3, 1, "text", "Body two.", 100),
    ]
    chunks = build_chunks("d", "x.pdf", "pdf", elements, [], 3, Settings(root=tmp_path))
    assert [c.title for c in chunks] == ["Climate Act Amendment Review", "Findings"]
    assert [c.page_start for c in chunks] == [1, 3]
    assert chunks[0].markdown == "# Climate Act Amendment Review\n\nBody one."


def test_page_windows_as_last_resort(tmp_path):
    elements = [el(p, 0, "text", f"Plain text on page {p}.", 100) for p in range(1, 24)]
    chunks = build_chunks("d", "x.pdf", "pdf", elements, [], 23, Settings(root=tmp_path, pdf={"fallback_window": 10}))
    assert [(c.page_start, c.page_end, c.title) for c in chunks] == [(1, 10, "Pages 1-10"), (11, 20, "Pages 11-20"), (21, 23, "Pages 21-23")]
    assert all(c.unit == "pages" for c in chunks)


def test_sentence_splitter_handles_abbreviations_and_korean():
    assert split_sentences("Dr. Kim measured 38.2 g in test no. 4 today. The limit is 60 g.") == [
        "Dr. Kim measured 38.2 g in test no. 4 today. ", "The limit is 60 g."
    ]
    assert len(split_sentences("에어백 전개 시간을 검토했다. 다음 회의는 12월 5일이다.")) == 2


def test_token_count_rule():
    assert count_tokens("") == 0
    assert count_tokens("crash") == 2  # 5 Latin letters -> ceil(5/4)
    assert count_tokens("38.2 g") == 4  # "38", ".", "2", "g"
    assert count_tokens("충돌시험") == 2  # 4 Hangul syllables -> 2
