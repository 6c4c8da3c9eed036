"""headers: per test report, the configured header fields from its first slides and file name;
stored in ``headers`` and prepended to each of its chunks (``markdown_v1``).

Candidates come from ``header_candidates`` (tables in either orientation, key-value lines,
label/value boxes, the title line, the file name), each with a source and a confidence; the offline
rule keeps the most trusted one per field, and a model is shown the same candidates. A value is kept
only if it occurs in what was read (slides or file name): a field not found stays empty and is
reported in ``missing``, never invented; missing and low-confidence fields are listed in ``review``
for an expert, whose values (``ragprep review apply``) win on the next build. A deck that no
file-name rule typed becomes a ``test_report`` when its first slides carry enough header fields.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from pydantic import RootModel

from ragprep.engines.generator import Generator
from ragprep.prompts import PromptTemplate
from ragprep.settings import HeaderSettings
from ragprep.untrusted import suspicious_content
from schemas.chunks import ChunkRow
from schemas.documents import USABLE_STATUSES, DocumentRow
from schemas.elements import ElementRow
from schemas.headers import HeaderField, HeaderRow
from schemas.review import HeaderReviewRow
from tasks.enrich.header_candidates import (
    CONFIDENCE,
    Candidate,
    Labels,
    SlideText,
    best_per_field,
    header_candidates,
    normalise_value,
)
from tasks.stage import run_items


class HeaderReply(RootModel[dict[str, str | None]]):
    """What a model must return: field name -> stated value or null."""


def _squash(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip().lower()


def header_block(fields: Sequence[HeaderField]) -> str:
    """The small block prepended to each chunk: one ``Field: value`` line per found field."""
    lines = [f"{f.name}: {f.value}" for f in fields if f.value]
    return "\n".join(lines)


@dataclass(frozen=True)
class HeaderRules:
    """The configured fields, their labels, and the confidence below which a value goes to review."""

    fields: tuple[str, ...]
    labels: Labels
    min_confidence: float
    n_slides: int
    report_min_fields: int

    @classmethod
    def from_settings(cls, settings: HeaderSettings) -> HeaderRules:
        """The rules of ``settings.headers``."""
        return cls(tuple(settings.fields), Labels(settings.fields, settings.aliases), settings.min_confidence,
                   settings.slides, settings.report_min_fields)


def first_slides(
    chunks: Sequence[ChunkRow], elements: Sequence[ElementRow], n: int
) -> list[SlideText]:
    """What the header rules read of a document's first ``n`` slides (or pages)."""
    boxes: dict[int, list[tuple[str, tuple[float, float, float, float]]]] = {}
    for element in elements:
        if element.number <= n and element.kind in ("text", "title") and element.bbox and element.text.strip():
            boxes.setdefault(element.number, []).append((element.text, tuple(element.bbox)))
    slides = []
    for chunk in chunks:
        number = chunk.slide if chunk.slide is not None else chunk.page_start
        if number is not None and number <= n:
            slides.append(SlideText(number, chunk.qa_text, chunk.title, tuple(boxes.get(number, []))))
    return sorted(slides, key=lambda s: s.number)


def _field_row(name: str, value: str | None, best: Candidate | None, candidates: Sequence[Candidate], offline: bool) -> HeaderField:
    """One field as stored: the rules' reading, or the model's value with the candidate it matches (if any)."""
    if value is None:
        return HeaderField(name=name, value=None)
    if offline and best is not None:
        return HeaderField(name=name, value=value, source=best.source, confidence=best.confidence)
    match = next((c for c in candidates if c.field == name and normalise_value(c.value) == normalise_value(value)), None)
    if match is not None:
        return HeaderField(name=name, value=value, source=match.source, confidence=match.confidence)
    return HeaderField(name=name, value=value, source="model", confidence=CONFIDENCE["model"])


async def extract_header_row(
    document: DocumentRow, slides: Sequence[SlideText], rules: HeaderRules, generator: Generator, prompt: PromptTemplate
) -> HeaderRow:
    """A document's header fields from its first slides; a model's value not found there is dropped and flagged."""
    candidates = header_candidates(slides, document.file_name, rules.labels)
    best = best_per_field(candidates, rules.fields)
    generation = await generator.generate(
        "extract_header",
        prompt,
        {
            "fields": list(rules.fields),
            "file_name": document.file_name,
            "slides": [{"number": s.number, "markdown": s.markdown} for s in slides],
            "candidates": [{"field": c.field, "value": c.value, "source": c.source} for c in candidates],
        },
        heuristic=lambda: {name: c.value if c else None for name, c in best.items()},
        output_model=HeaderReply,
    )
    offline = generation.provider == "heuristic"
    shown = _squash(" ".join(s.markdown for s in slides) + " " + document.file_name)
    reply = generation.data or {}
    values: list[HeaderField] = []
    dropped: list[str] = []
    suspicious: list[str] = []
    for name in rules.fields:
        value = reply.get(name)
        value = normalise_value(value) if isinstance(value, str) and value.strip() else None
        if value is not None and not offline and _squash(value) not in shown:
            dropped.append(name)
            value = None
        if value is not None and (why := suspicious_content(value)):  # model output is untrusted
            suspicious.append(f"{name}: {why}")
            value = None
        values.append(_field_row(name, value, best[name], candidates, offline))
    flag = generation.flag
    if dropped:
        flag = (flag + "; " if flag else "") + f"values_not_in_source: {', '.join(dropped)}"
    if suspicious:
        flag = (flag + "; " if flag else "") + f"suspicious_content: {'; '.join(suspicious)}"
    return HeaderRow(
        doc_id=document.doc_id,
        source_path=document.path,
        fields=values,
        missing=[f.name for f in values if f.value is None],
        review=[f.name for f in values if f.value is None or (f.confidence or 0) < rules.min_confidence],
        header_block=header_block(values),
        provider=generation.provider,
        model=generation.model,
        prompt=generation.prompt_ref,
        prompt_sha256=generation.prompt_sha256,
        flag=flag,
    )


def type_by_content(
    document: DocumentRow, slides: Sequence[SlideText], rules: HeaderRules
) -> DocumentRow:
    """A deck no file-name rule typed becomes a ``test_report`` when its first slides carry enough header
    fields read from tables, key-value lines or label/value boxes (the reason is recorded)."""
    if document.doc_type != "other" or document.format != "pptx" or document.status not in USABLE_STATUSES:
        return document
    strong = {c.field for c in header_candidates(slides, "", rules.labels) if c.confidence >= CONFIDENCE["boxes"]}
    if len(strong) < rules.report_min_fields:
        return document
    found = ", ".join(f for f in rules.fields if f in strong)
    reason = f"content: its first slides carry {found} (at least {rules.report_min_fields} header fields)"
    return document.model_copy(update={"doc_type": "test_report", "doc_type_reason": reason})


async def extract_headers(
    documents: Sequence[DocumentRow],
    chunks: Sequence[ChunkRow],
    elements: Sequence[ElementRow],
    rules: HeaderRules,
    generator: Generator,
    prompt: PromptTemplate,
) -> tuple[list[DocumentRow], list[HeaderRow]]:
    """Documents typed by content where no file-name rule applied, and one header row per test report
    that did not fail, extracted concurrently."""
    by_doc: dict[str, list[ChunkRow]] = {}
    for chunk in chunks:
        by_doc.setdefault(chunk.doc_id, []).append(chunk)
    elements_by_doc: dict[str, list[ElementRow]] = {}
    for element in elements:
        elements_by_doc.setdefault(element.doc_id, []).append(element)
    slides = {d.doc_id: first_slides(by_doc.get(d.doc_id, []), elements_by_doc.get(d.doc_id, []), rules.n_slides)
              for d in documents}
    typed = [type_by_content(d, slides[d.doc_id], rules) for d in documents]
    reports = [d for d in typed if d.doc_type == "test_report" and d.status in USABLE_STATUSES]
    headers = await run_items(reports, lambda d: extract_header_row(d, slides[d.doc_id], rules, generator, prompt))
    return typed, headers


def apply_header_decisions(headers: Sequence[HeaderRow], decisions: Sequence[HeaderReviewRow]) -> list[HeaderRow]:
    """Expert values (the latest per report and field) replace what was read: source ``expert``, confidence 1.

    A field the expert marked "not stated" (value None) stays empty but is no longer missing nor up for review:
    the expert confirmed the report does not give it."""
    latest = {(d.doc_id, d.field): d for d in decisions}
    out = []
    for row in headers:
        fields = [
            HeaderField(name=f.name, value=latest[(row.doc_id, f.name)].value, source="expert", confidence=CONFIDENCE["expert"])
            if (row.doc_id, f.name) in latest else f
            for f in row.fields
        ]
        if fields == row.fields:
            out.append(row)
            continue
        out.append(row.model_copy(update={
            "fields": fields,
            "missing": [f.name for f in fields if f.value is None and (row.doc_id, f.name) not in latest],
            "review": [name for name in row.review if (row.doc_id, name) not in latest],
            "header_block": header_block(fields),
        }))
    return out


def apply_headers(chunks: Sequence[ChunkRow], headers: Sequence[HeaderRow]) -> list[ChunkRow]:
    """markdown_v1 = header block + markdown_v0 for reports; = markdown_v0 otherwise."""
    blocks = {h.doc_id: h.header_block for h in headers if h.header_block}
    out = []
    for chunk in chunks:
        v0 = chunk.markdown_v0 if chunk.markdown_v0 is not None else chunk.markdown
        block = blocks.get(chunk.doc_id)
        v1 = f"{block}\n\n---\n\n{v0}" if block else v0
        out.append(chunk.model_copy(update={"markdown_v0": v0, "markdown_v1": v1}))
    return out
