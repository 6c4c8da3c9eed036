"""The qa stage over the working tables: generate, flag and review-apply QA pairs; and the judge stage:
the critic scores them, and only the pairs it passes (without flags) are auto-approved."""

from __future__ import annotations

from collections import Counter

from ragprep.settings import Settings
from schemas.qa_pairs import LOW_QUALITY
from tasks.qa.generate import build_qa_pairs, document_handles, generate_pairs
from tasks.qa.judge import judge_pairs
from tasks.qa.review import apply_review, chunk_bases, load_decisions
from tasks.stage import Progress, StageReport, StageRun, counter


def run_qa(settings: Settings, progress: Progress | None = None) -> StageReport:
    """Generate, flag and review-apply QA pairs; writes ``qa_pairs`` and ``qa_failures``.

    Questions name each document by its handle: the test name and stage from ``headers`` for a test
    report, else the real title from ``documents`` (both optional), else the chunk's heading.
    """
    run = StageRun(settings, "generate_qa")
    chunks = run.store.read("chunks")
    elements = run.store.read("elements")
    handles = document_handles(chunks, run.store.read("documents", optional=True), run.store.read("headers", optional=True))
    pairs, failures = run.generate(
        "llm", lambda g: generate_pairs(chunks, elements, settings, g, run.prompt, counter(len(chunks), progress), handles)
    )
    final = build_qa_pairs(pairs, chunks, settings, load_decisions(run.layout.root))
    run.store.write_set({"qa_pairs": final, "qa_failures": failures})
    flags = [code for p in final for code in p.flags] + [f"generation_failed: {f.reason}" for f in failures]
    return run.report("qa", len(final), flags)


def run_judge(settings: Settings, progress: Progress | None = None) -> StageReport:
    """Score every QA pair with the critic (``judge_qa``), flag the failing criteria and approve the passing,
    unflagged pairs; writes ``qa_pairs`` (the experts' decisions are applied last and always win)."""
    run = StageRun(settings, "judge_qa")
    pairs = run.store.read("qa_pairs")
    chunks = run.store.read("chunks")
    documents = run.store.read("documents", optional=True)
    judged = run.generate(
        "llm", lambda g: judge_pairs(pairs, chunks, documents, settings, g, run.prompt, counter(len(pairs), progress))
    )
    final = apply_review(judged, load_decisions(run.layout.root), chunk_bases(chunks))
    run.store.write("qa_pairs", final)
    flags = [f for p in final for f in p.flags if f.startswith(f"{LOW_QUALITY}:")]
    report = run.report("judge", len(final), flags)
    return report.model_copy(update={"flags": dict(Counter(flags))})  # per criterion, not one "low_quality" count
