"""The heuristic provider's QA generator: answerable pairs read straight off a chunk.

Lookups over table cells and chart values, comparisons between two numeric columns,
key-value facts, definitional and causal sentences, numbered steps, and text read by
OCR from pictures. Every answer is a verbatim span of the chunk. Questions name the
document and the table/chart/slide they are about, in the chunk's language.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from ragprep.markdown import KEY_VALUE_RE, parse_number, table_rows


@dataclass(frozen=True)
class Candidate:
    """One question-answer pair read off a chunk, before it becomes a row."""

    question: str
    answer: str
    question_type: str
    target_modality: str
    evidence_element_id: str | None = None
    """The table, chart or picture a modality question is about."""


@dataclass(frozen=True)
class ChunkView:
    """What the generator needs of a chunk and its elements."""

    title: str
    document: str
    language: str
    markdown: str
    tables: Sequence[tuple[str, str]]  # (element_id, markdown table)
    charts: Sequence[tuple[str, str, str]]  # (element_id, chart title, markdown table)
    pictures: Sequence[tuple[str, str]]  # (element_id, OCR text)


_DEFINITION_RE = re.compile(r"^(?P<term>[A-Z][\w\- ]{1,60}?) (?:is|are|refers to|means|describes) (?P<rest>.{10,})$")
_CAUSAL_RE = re.compile(r"\b(because|due to|so that|therefore|since)\b", re.IGNORECASE)
_NUMBERED_RE = re.compile(r"^\s*(?:\d+[.)]|-)\s+(?P<text>.{8,})$")
_SENTENCE_RE = re.compile(r"(?<=[.!?])\s+")


TEMPLATES: dict[str, dict[str, str]] = {
    "en": {
        "table_cell": 'In the table "{title}" of {doc}, what is the {column} value for {row}?',
        "table_compare": 'In the table "{title}" of {doc}, which is higher for {row}: {a} or {b}?',
        "chart_peak_value": 'In the chart "{chart}" of {doc}, what is the peak value of {series}?',
        "chart_peak_at": 'In the chart "{chart}" of {doc}, at which point does {series} reach its peak?',
        "chart_value": 'In the chart "{chart}" of {doc}, what is {series} at {category}?',
        "picture_text": 'What text is printed on the picture in "{title}" of {doc}?',
        "key_value": 'According to "{title}" in {doc}, what is the {key}?',
        "definition": "According to {doc}, what is {term}?",
        "causal": 'According to "{title}" in {doc}, what explains the statement beginning "{start}"?',
        "step": 'What is one of the numbered steps listed under "{title}" in {doc}?',
    },
    "ko": {
        "table_cell": "{doc}의 '{title}' 표에서 {row}의 {column} 값은 무엇인가요?",
        "table_compare": "{doc}의 '{title}' 표에서 {row}은(는) {a}와 {b} 중 어느 쪽이 더 큰가요?",
        "chart_peak_value": "{doc}의 '{chart}' 차트에서 {series}의 최댓값은 얼마인가요?",
        "chart_peak_at": "{doc}의 '{chart}' 차트에서 {series}는 어느 지점에서 최대인가요?",
        "chart_value": "{doc}의 '{chart}' 차트에서 {category}일 때 {series} 값은 얼마인가요?",
        "picture_text": "{doc}의 '{title}' 그림에 적힌 문구 중 하나는 무엇인가요?",
        "key_value": "{doc}의 '{title}'에 따르면 {key}은(는) 무엇인가요?",
        "step": "{doc}의 '{title}'에 나열된 단계 중 하나는 무엇인가요?",
    },
}
"""Question templates per chunk language; definitional and causal rules are English-only."""


def _ask(view: ChunkView, template: str, **values: str) -> str | None:
    """A question in the chunk's language, or None when that language has no such template."""
    pattern = TEMPLATES.get(view.language, TEMPLATES["en"]).get(template)
    return pattern.format(doc=view.document, title=view.title, **values) if pattern else None


def _table_candidates(view: ChunkView) -> Iterator[Candidate]:
    for element_id, markdown in view.tables:
        rows = table_rows(markdown)
        if len(rows) < 2:
            continue
        header, body = list(rows[0]), rows[1:]
        while body and body[0] and body[0][0] == header[0]:
            # a second header row under vertically merged cells: "Measured" over "Driver"
            header = [h if h == c or not c else f"{h} {c}" for h, c in zip(header, body[0])] + header[len(body[0]):]
            body = body[1:]
        for row in body:
            label = row[0] if row else ""
            if not label or label in header:
                continue
            numeric_cols = [(i, parse_number(row[i])) for i in range(1, min(len(row), len(header))) if parse_number(row[i]) is not None]
            for col in range(1, min(len(row), len(header))):
                value, name = row[col], header[col]
                if not value or not name or name == label:
                    continue
                q = _ask(view, "table_cell", column=name, row=label)
                yield Candidate(q, value, "numeric" if parse_number(value) is not None else "factual", "table", element_id)
            if len(numeric_cols) >= 2:
                (ia, va), (ib, vb) = numeric_cols[0], numeric_cols[1]
                if va != vb and header[ia] != header[ib]:
                    higher = header[ia] if va > vb else header[ib]
                    q = _ask(view, "table_compare", row=label, a=header[ia], b=header[ib])
                    yield Candidate(q, higher, "comparative", "table", element_id)


def _chart_candidates(view: ChunkView) -> Iterator[Candidate]:
    for element_id, chart_title, markdown in view.charts:
        rows = table_rows(markdown)
        if len(rows) < 2:
            continue
        header, body = rows[0], rows[1:]
        name = chart_title or view.title
        for col in range(1, len(header)):
            series = header[col]
            points = [(r[0], r[col]) for r in body if col < len(r) and parse_number(r[col]) is not None]
            if not points:
                continue
            peak_category, peak_value = max(points, key=lambda p: parse_number(p[1]))
            yield Candidate(_ask(view, "chart_peak_value", chart=name, series=series), peak_value, "numeric", "chart", element_id)
            yield Candidate(_ask(view, "chart_peak_at", chart=name, series=series), peak_category, "comparative", "chart", element_id)
            for category, value in points[1:3]:
                q = _ask(view, "chart_value", chart=name, series=series, category=category)
                yield Candidate(q, value, "numeric", "chart", element_id)


def _picture_candidates(view: ChunkView) -> Iterator[Candidate]:
    for element_id, ocr_text in view.pictures:
        lines = [ln.strip() for ln in ocr_text.splitlines() if len(ln.strip()) >= 4]
        for line in lines[:2]:
            yield Candidate(_ask(view, "picture_text"), line, "factual", "image", element_id)


def _text_lines(markdown: str) -> Iterator[str]:
    for line in markdown.splitlines():
        stripped = line.strip()
        if not stripped or stripped.startswith(("|", "#", ">", "![", "**")):
            continue
        yield stripped.lstrip("- ").strip()


def _text_candidates(view: ChunkView) -> Iterator[Candidate]:
    for line in _text_lines(view.markdown):
        match = KEY_VALUE_RE.match(line)
        if match and len(match.group("value")) >= 2:
            key, value = match.group("key").strip(), match.group("value").strip()
            q = _ask(view, "key_value", key=key)
            yield Candidate(q, value, "numeric" if parse_number(value.split()[0]) is not None else "factual", "text")
            continue
        numbered = _NUMBERED_RE.match(line)
        for sentence in _SENTENCE_RE.split(line):
            sentence = sentence.strip()
            if len(sentence) < 25 or len(sentence) > 400:
                continue
            definition = _DEFINITION_RE.match(sentence)
            if definition and (q := _ask(view, "definition", term=definition.group("term").strip())):
                yield Candidate(q, sentence, "definitional", "text")
            elif _CAUSAL_RE.search(sentence) and (q := _ask(view, "causal", start=" ".join(sentence.split()[:6]))):
                yield Candidate(q, sentence, "causal", "text")
        if numbered and re.match(r"^\s*\d", line):
            step = numbered.group("text").strip()
            yield Candidate(_ask(view, "step"), step, "procedural", "text")


def generate(view: ChunkView, n: int) -> list[Candidate]:
    """Up to ``n`` pairs, round-robin over question sources so types stay mixed."""
    sources = [
        list(_table_candidates(view)),
        list(_chart_candidates(view)),
        list(_picture_candidates(view)),
        list(_text_candidates(view)),
    ]
    out: list[Candidate] = []
    seen: set[str] = set()
    index = 0
    while len(out) < n and any(index < len(s) for s in sources):
        for source in sources:
            if index < len(source) and len(out) < n and source[index].question not in seen:
                seen.add(source[index].question)
                out.append(source[index])
        index += 1
    return out


MULTI_TEMPLATES = {
    "en": 'In {doc}, what is stated about {keys}?',
    "ko": "{doc}에서 {keys}에 대해 무엇이라고 하나요?",
}
_FACT_SPLIT_RE = re.compile(r"(?<=[.!?。])\s+|\n+")


def fact_of(text: str) -> str | None:
    """The sentence a multi-quote question asks about: the first with a digit, else the first of 6+ words."""
    sentences = [s.strip(" -•*#|") for s in _FACT_SPLIT_RE.split(text) if s.strip(" -•*#|")]
    with_digit = [s for s in sentences if re.search(r"\d", s) and len(s.split()) >= 3]
    long_enough = [s for s in sentences if len(s.split()) >= 6]
    chosen = (with_digit or long_enough or [None])[0]
    return chosen[:300] if chosen else None


def multi_quote_question(document: str, facts: Sequence[str], language: str) -> dict[str, str]:
    """One question over 2-3 facts (one per quote); the answer is the facts themselves."""
    keys = [" ".join(re.findall(r"[^\W_]+", fact)[:5]) for fact in facts]
    quoted = [f'"{k}"' for k in keys]
    joiner = " 및 " if language == "ko" else " and "
    listed = joiner.join(quoted) if len(quoted) == 2 else ", ".join(quoted[:-1]) + ("," if language != "ko" else "") + joiner + quoted[-1]
    template = MULTI_TEMPLATES.get(language, MULTI_TEMPLATES["en"])
    return {"question": template.format(doc=document, keys=listed), "answer": " ".join(facts), "question_type": "factual"}
