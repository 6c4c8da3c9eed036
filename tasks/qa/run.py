"""The qa stage over the working tables: generate, flag and review-apply QA pairs."""

from __future__ import annotations

from ragprep.settings import Settings
from tasks.qa.generate import build_qa_pairs, generate_pairs
from tasks.qa.review import load_decisions
from tasks.stage import Progress, StageReport, StageRun, counter


def run_qa(settings: Settings, progress: Progress | None = None) -> StageReport:
    """Generate, flag and review-apply QA pairs; writes ``qa_pairs`` and ``qa_failures``."""
    run = StageRun(settings, "generate_qa")
    chunks = run.store.read("chunks")
    elements = run.store.read("elements")
    pairs, failures = run.generate(
        "llm", lambda g: generate_pairs(chunks, elements, settings, g, run.prompt, counter(len(chunks), progress))
    )
    final = build_qa_pairs(pairs, chunks, settings, load_decisions(run.layout.root))
    run.store.write("qa_pairs", final)
    run.store.write("qa_failures", failures)
    flags = [code for p in final for code in p.flags] + [f"generation_failed: {f.reason}" for f in failures]
    return run.report("qa", len(final), flags)
