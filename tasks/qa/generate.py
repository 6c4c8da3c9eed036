"""qa: question-answer pairs per chunk, flagged, with expert decisions applied.

Pairs per chunk scale with its length (``qa_tokens_per_pair``, capped by
``qa_max_per_chunk``), mix question types, and include questions only a chunk's table,
chart or picture can answer. A chunk whose generation fails is recorded in
``qa_failures`` and retried on the next run; the run goes on.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path

from pydantic import BaseModel, Field

from ragprep.engines.generator import Generator
from ragprep.ids import stable_id
from ragprep.prompts import PromptTemplate
from ragprep.settings import Settings
from schemas.chunks import ChunkRow
from schemas.elements import ElementRow
from schemas.qa_pairs import QaFailureRow, QaPairRow
from tasks.qa import rules
from tasks.qa.flags import duplicate_flags, language_of, pair_flags
from tasks.qa.review import apply_review
from tasks.stage import run_items

PROVENANCE = {"chunk_id", "doc_id", "source_path", "slide", "page_start", "page_end"}
"""The chunk's fields every QA pair carries as its provenance."""

QUESTION_TYPES = ("factual", "numeric", "comparative", "procedural", "causal", "definitional")
MODALITIES = ("text", "table", "chart", "image")


class GeneratedPair(BaseModel):
    question: str
    answer: str
    question_type: str = "factual"
    target_modality: str = "text"


class GeneratedPairs(BaseModel):
    pairs: list[GeneratedPair] = Field(default_factory=list)


def pairs_wanted(chunk: ChunkRow, settings: Settings) -> int:
    """Pairs to ask of a chunk: one per ``qa_tokens_per_pair`` tokens, between 1 and ``qa_max_per_chunk``."""
    return max(1, min(settings.qa.max_per_chunk, round(chunk.token_count / settings.qa.tokens_per_pair)))


def chunk_view(chunk: ChunkRow, elements: dict[str, ElementRow]) -> rules.ChunkView:
    """What the QA step sees of a chunk: its Markdown (corrected when available), language, tables, charts and OCR'd pictures."""
    members = [elements[e] for e in chunk.element_ids if e in elements]
    markdown = chunk.markdown_v0 or chunk.markdown
    return rules.ChunkView(
        title=chunk.title,
        document=Path(chunk.source_path).name,
        language=language_of(markdown),
        markdown=markdown,
        tables=[(e.element_id, e.text) for e in members if e.kind == "table"],
        charts=[(e.element_id, (json.loads(e.meta).get("title") if e.meta else None) or "", e.text) for e in members if e.kind == "chart"],
        pictures=[(e.element_id, e.ocr_text) for e in members if e.kind == "picture" and e.ocr_text],
    )


async def generate_for_chunk(
    chunk: ChunkRow, elements: dict[str, ElementRow], settings: Settings, generator: Generator, prompt: PromptTemplate
) -> tuple[list[QaPairRow], QaFailureRow | None]:
    """The pending QA pairs generated for one chunk, or a failure row when the reply was unusable."""
    view = chunk_view(chunk, elements)
    n = pairs_wanted(chunk, settings)
    modalities = sorted({m for m, present in (("table", view.tables), ("chart", view.charts), ("image", view.pictures)) if present})
    location = f"slide {chunk.slide}" if chunk.slide is not None else f"pages {chunk.page_start}-{chunk.page_end}"
    generation = await generator.generate(
        "generate_qa",
        prompt,
        {"n_pairs": n, "document": view.document, "location": location, "modalities": modalities, "chunk_markdown": view.markdown},
        heuristic=lambda: {"pairs": [c.__dict__ for c in rules.generate(view, n)]},
        output_model=GeneratedPairs,
    )
    if generation.data is None:
        return [], QaFailureRow(chunk_id=chunk.chunk_id, source_path=chunk.source_path, reason=generation.flag or "no output")
    evidence_by_modality = {"table": view.tables, "chart": view.charts, "image": view.pictures}
    rows: list[QaPairRow] = []
    for raw in generation.data["pairs"]:
        pair = GeneratedPair.model_validate(raw)
        qtype = pair.question_type if pair.question_type in QUESTION_TYPES else "factual"
        modality = pair.target_modality if pair.target_modality in MODALITIES else "text"
        evidence = raw.get("evidence_element_id") or (
            evidence_by_modality[modality][0][0] if modality != "text" and evidence_by_modality[modality] else None
        )
        question, answer = pair.question.strip(), pair.answer.strip()
        rows.append(
            QaPairRow(
                qa_id=stable_id("qa", chunk.chunk_id, qtype, question, answer),
                **chunk.model_dump(include=PROVENANCE),
                question=question, answer=answer, generated_question=question, generated_answer=answer,
                question_type=qtype, target_modality=modality, evidence_element_id=evidence,
                language=language_of(question), status="pending", provider=generation.provider,
                model=generation.model, prompt=generation.prompt_ref, prompt_sha256=generation.prompt_sha256,
            )
        )
    return rows, None


def flag_pairs(pairs: Sequence[QaPairRow], chunks: dict[str, ChunkRow], settings: Settings) -> list[QaPairRow]:
    """The pairs with their flags; approved when unflagged and ``qa_auto_approve`` is on, else pending."""
    duplicates = duplicate_flags([p.question for p in pairs], [p.chunk_id for p in pairs], settings.qa.duplicate_threshold)
    out = []
    for pair, duplicate in zip(pairs, duplicates):
        chunk = chunks[pair.chunk_id]
        found = pair_flags(pair.question, pair.answer, chunk.markdown_v0 or chunk.markdown, settings)
        if duplicate:
            found.append(duplicate)
        codes = list(dict.fromkeys(code for code, _ in found))
        reasons = [f"{code}: {reason}" for code, reason in found]
        status = "pending" if codes or not settings.qa.auto_approve else "approved"
        out.append(pair.model_copy(update={"flags": codes, "flag_reasons": reasons, "status": status}))
    return out


async def generate_pairs(
    chunks: Sequence[ChunkRow],
    elements: Sequence[ElementRow],
    settings: Settings,
    generator: Generator,
    prompt: PromptTemplate,
    on_done: Callable[[object], None] | None = None,
) -> tuple[list[QaPairRow], list[QaFailureRow]]:
    """QA pairs of every chunk, generated concurrently (duplicates kept once), and a failure row per chunk that failed."""
    by_id = {e.element_id: e for e in elements}

    async def generate(chunk: ChunkRow):
        try:
            return await generate_for_chunk(chunk, by_id, settings, generator, prompt)
        except Exception as exc:  # one chunk's bug must not abort the run
            return [], QaFailureRow(chunk_id=chunk.chunk_id, source_path=chunk.source_path, reason=f"{type(exc).__name__}: {exc}")

    results = await run_items(chunks, generate, on_done)
    pairs = [p for rows, _ in results for p in rows]
    failures = [f for _, f in results if f is not None]
    unique: dict[str, QaPairRow] = {}
    for pair in pairs:  # the same pair generated twice for a chunk is kept once
        unique.setdefault(pair.qa_id, pair)
    return list(unique.values()), failures


def build_qa_pairs(
    pairs: Sequence[QaPairRow], chunks: Sequence[ChunkRow], settings: Settings, decisions: dict
) -> list[QaPairRow]:
    """Flags, then the experts' decisions (rejected pairs dropped, edits applied)."""
    flagged = flag_pairs(pairs, {c.chunk_id: c for c in chunks}, settings)
    return apply_review(flagged, decisions)
