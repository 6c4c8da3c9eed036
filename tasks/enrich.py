"""Run the generative stages (describe, correct, headers) over the current tables.

Each stage reads the tables written by the previous ones, runs its step on every item
with one ``Generator`` (async, limited, cached), and rewrites the tables it changes
atomically. A stage never fails for a bad reply: the item is flagged and keeps its input.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from pydantic import BaseModel

from ragprep.prompts import load_prompt
from ragprep.providers.generator import HEURISTIC_MODEL, Generator, UsageMeter
from ragprep.settings import Settings
from ragprep.storage import Layout, atomic_write_parquet
from schemas import read_rows, rows_to_table
from schemas.chunks import CHUNKS_SCHEMA, ChunkRow
from schemas.documents import DOCUMENTS_SCHEMA, DocumentRow
from schemas.elements import ELEMENTS_SCHEMA, ElementRow
from schemas.headers import HEADERS_SCHEMA, HeaderRow
from tasks.correct import correct_chunks
from tasks.describe import DESCRIBED_KINDS, attach_descriptions, describe_elements
from tasks.headers import apply_headers, extract_headers
from tasks.qa import build_qa_pairs, generate_pairs
from tasks.review import load_decisions
from schemas.mm_items import MM_ITEMS_SCHEMA, MmItemRow
from schemas.qa_pairs import QA_FAILURES_SCHEMA, QA_PAIRS_SCHEMA, QaFailureRow, QaPairRow
from schemas.quotes import QUOTES_SCHEMA, QuoteRow

Progress = Callable[[int, int], None]


class StageReport(BaseModel):
    stage: str
    provider: str
    model: str
    prompt: str
    items: int
    flagged: int
    flags: dict[str, int]
    usage: list[dict]


class MissingTablesError(Exception):
    pass


TABLES = {
    "documents": (DocumentRow, DOCUMENTS_SCHEMA),
    "elements": (ElementRow, ELEMENTS_SCHEMA),
    "chunks": (ChunkRow, CHUNKS_SCHEMA),
    "headers": (HeaderRow, HEADERS_SCHEMA),
    "qa_pairs": (QaPairRow, QA_PAIRS_SCHEMA),
    "qa_failures": (QaFailureRow, QA_FAILURES_SCHEMA),
    "quotes": (QuoteRow, QUOTES_SCHEMA),
    "mm_items": (MmItemRow, MM_ITEMS_SCHEMA),
}
"""Row model and Arrow schema of each table a stage reads or writes."""


def save_table(layout: Layout, name: str, rows) -> None:
    atomic_write_parquet(rows_to_table(rows, TABLES[name][1]), layout.table_path(name))


def load_table(layout: Layout, name: str, *, optional: bool = False):
    """A table's rows; a missing table raises with the fix, or is empty when ``optional``."""
    model, schema = TABLES[name]
    path = layout.table_path(name)
    if not path.exists():
        if optional:
            return []
        raise MissingTablesError(f"{path} does not exist; run `ragprep ingest PATHS --root {layout.root}` first")
    return read_rows(path, model, schema)


def _flag_counts(flags: list[str]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for flag in flags:
        key = flag.split(":", 1)[0]
        counts[key] = counts.get(key, 0) + 1
    return counts


def counter(total: int, progress: Progress | None) -> Callable[[object], None]:
    state = {"done": 0}

    def tick(_: object) -> None:
        state["done"] += 1
        if progress:
            progress(state["done"], total)

    return tick


def with_generator(settings: Settings, role: str, layout: Layout, meter: UsageMeter, step):
    """Run ``step(generator)`` in a fresh event loop; return (its result, the generator)."""

    async def go():
        generator = Generator(settings, role, cache_dir=layout.root / "cache" / "llm", meter=meter)
        try:
            return await step(generator), generator
        finally:
            await generator.aclose()

    return asyncio.run(go())


def stage_report(stage: str, generator: Generator, prompt_ref: str, items: int, flags: list[str], meter: UsageMeter) -> StageReport:
    return StageReport(
        stage=stage,
        provider=generator.provider,
        model=generator.model,
        prompt=prompt_ref if generator.backend else f"heuristic:{prompt_ref.split('@')[0]}@{HEURISTIC_MODEL}",
        items=items,
        flagged=len(flags),
        flags=_flag_counts(flags),
        usage=meter.table(),
    )


def run_describe(settings: Settings, progress: Progress | None = None) -> StageReport:
    layout = Layout(settings.root)
    elements: list[ElementRow] = load_table(layout, "elements")
    chunks: list[ChunkRow] = load_table(layout, "chunks")
    prompt = load_prompt("describe_image")
    meter = UsageMeter(prices=settings.llm_prices)
    targets = sum(e.kind in DESCRIBED_KINDS for e in elements)

    described, generator = with_generator(
        settings, "vlm", layout, meter,
        lambda g: describe_elements(elements, layout.root, g, prompt, counter(targets, progress)),
    )
    save_table(layout, "elements", described)
    save_table(layout, "chunks", attach_descriptions(chunks, described))
    flags = [e.vlm_flag for e in described if e.vlm_flag]
    return stage_report("describe", generator, prompt.ref, targets, flags, meter)


def run_correct(settings: Settings, progress: Progress | None = None) -> StageReport:
    layout = Layout(settings.root)
    chunks: list[ChunkRow] = load_table(layout, "chunks")
    prompt = load_prompt("correct_slide")
    meter = UsageMeter(prices=settings.llm_prices)

    corrected, generator = with_generator(
        settings, "llm", layout, meter, lambda g: correct_chunks(chunks, g, prompt, counter(len(chunks), progress))
    )
    save_table(layout, "chunks", apply_headers(corrected, load_table(layout, "headers", optional=True)))
    flags = [f for c in corrected for f in c.correction_flags]
    return stage_report("correct", generator, prompt.ref, sum(c.unit == "slide" for c in corrected), flags, meter)


def run_headers(settings: Settings, progress: Progress | None = None) -> StageReport:
    layout = Layout(settings.root)
    documents: list[DocumentRow] = load_table(layout, "documents")
    chunks: list[ChunkRow] = load_table(layout, "chunks")
    prompt = load_prompt("extract_header")
    meter = UsageMeter(prices=settings.llm_prices)

    headers, generator = with_generator(
        settings, "llm", layout, meter,
        lambda g: extract_headers(documents, chunks, settings.header_fields, settings.header_slides, g, prompt),
    )
    if progress:
        progress(len(headers), len(headers))
    save_table(layout, "headers", headers)
    save_table(layout, "chunks", apply_headers(chunks, headers))
    flags = [h.flag for h in headers if h.flag] + [f"missing_field: {m}" for h in headers for m in h.missing]
    return stage_report("headers", generator, prompt.ref, len(headers), flags, meter)


def run_qa(settings: Settings, progress: Progress | None = None) -> StageReport:
    """Generate, flag and review-apply QA pairs; writes ``qa_pairs`` and ``qa_failures``."""
    layout = Layout(settings.root)
    chunks: list[ChunkRow] = load_table(layout, "chunks")
    elements: list[ElementRow] = load_table(layout, "elements")
    prompt = load_prompt("generate_qa")
    meter = UsageMeter(prices=settings.llm_prices)

    (pairs, failures), generator = with_generator(
        settings, "llm", layout, meter,
        lambda g: generate_pairs(chunks, elements, settings, g, prompt, counter(len(chunks), progress)),
    )
    final = build_qa_pairs(pairs, chunks, settings, load_decisions(layout.root))
    save_table(layout, "qa_pairs", final)
    save_table(layout, "qa_failures", failures)
    flags = [code for p in final for code in p.flags] + [f"generation_failed: {f.reason}" for f in failures]
    return stage_report("qa", generator, prompt.ref, len(final), flags, meter)


__all__ = ["MissingTablesError", "StageReport", "load_table", "run_correct", "run_describe", "run_headers", "run_qa", "save_table"]
