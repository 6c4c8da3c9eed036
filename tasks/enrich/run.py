"""The enrich stages over the working tables: describe, correct, headers.

Each reads the tables the previous stages wrote, runs its step on every item with one
``Generator`` and rewrites the tables it changes. A bad reply never fails a stage: the item
is flagged and keeps its input.
"""

from __future__ import annotations

from ragprep.settings import Settings
from tasks.enrich.correct import correct_chunks
from tasks.enrich.describe import (
    DESCRIBED_KINDS,
    attach_descriptions,
    describe_elements,
)
from tasks.enrich.headers import HeaderRules, apply_header_decisions, apply_headers, extract_headers
from tasks.stage import Progress, StageReport, StageRun, counter


def run_describe(settings: Settings, progress: Progress | None = None) -> StageReport:
    """Describe every picture, chart and table; writes ``elements`` and ``chunks``."""
    run = StageRun(settings, "describe_image")
    elements = run.store.read("elements")
    chunks = run.store.read("chunks")
    targets = sum(e.kind in DESCRIBED_KINDS for e in elements)
    described = run.generate(
        "vlm", lambda g: describe_elements(elements, run.layout.root, g, run.prompt, counter(targets, progress))
    )
    run.store.write_set({"elements": described, "chunks": attach_descriptions(chunks, described)})
    return run.report("describe", targets, [e.vlm_flag for e in described if e.vlm_flag])


def run_correct(settings: Settings, progress: Progress | None = None) -> StageReport:
    """Correct each slide's Markdown; writes ``chunks`` (with headers re-applied)."""
    run = StageRun(settings, "correct_slide")
    chunks = run.store.read("chunks")
    corrected = run.generate("llm", lambda g: correct_chunks(chunks, g, run.prompt, counter(len(chunks), progress)))
    run.store.write("chunks", apply_headers(corrected, run.store.read("headers", optional=True)))
    flags = [f for c in corrected for f in c.correction_flags]
    return run.report("correct", sum(c.unit == "slide" for c in corrected), flags)


def run_headers(settings: Settings, progress: Progress | None = None) -> StageReport:
    """Type decks by content where no file-name rule did, extract test-report headers (expert values win);
    writes ``documents``, ``headers`` and prepends the headers to ``chunks``."""
    run = StageRun(settings, "extract_header")
    documents = run.store.read("documents")
    chunks = run.store.read("chunks")
    elements = run.store.read("elements")
    rules = HeaderRules.from_settings(settings.headers)
    typed, headers = run.generate("llm", lambda g: extract_headers(documents, chunks, elements, rules, g, run.prompt))
    headers = apply_header_decisions(headers, run.store.read("header_review", optional=True))
    if progress:
        progress(len(headers), len(headers))
    run.store.write_set({"documents": typed, "headers": headers, "chunks": apply_headers(chunks, headers)})
    flags = [h.flag for h in headers if h.flag] + [f"missing_field: {m}" for h in headers for m in h.missing]
    flags += [f"needs_review: {f}" for h in headers for f in h.review if f not in h.missing]
    flags += [f"typed_by_content: {d.file_name}" for d, before in zip(typed, documents) if d.doc_type != before.doc_type]
    return run.report("headers", len(headers), flags)
