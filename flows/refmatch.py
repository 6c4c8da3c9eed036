"""The ``refmatch`` flow: check answers from any RAG system against the corpus, segment by segment."""

from __future__ import annotations

from prefect import flow

from flows.artifacts import publish_markdown
from flows.runtime import deployment_settings
from tasks.refmatch.run import RefmatchReport
from tasks.wrappers import refmatch_task


@flow(name="refmatch")
def refmatch_flow(answers: str, root: str | None = None, out: str | None = None) -> RefmatchReport:
    """Split every answer into segments and link each to the chunk it came from (or mark it unsupported).

    Reads a JSONL of {"question", "answer", optional "id" and "chunk_ids"} lines; candidates are the named
    chunks, else the question's and the answer's top chunks in the search index (`ragprep index` first).
    Writes one Parquet row per segment with its chunk, document, slide/page and score, and publishes the
    counts as the ``refmatch`` artifact.

    Args:
        answers: Path of the JSONL file of (question, answer) pairs.
        root: Output root holding the search index; default RAGPREP_ROOT or ./ragprep-data.
        out: Parquet file to write; default <root>/refmatch/<answers file name>.parquet.
    """
    result = refmatch_task(deployment_settings(root), answers, out)
    publish_markdown("refmatch", result.report(), f"reference matching of {result.input}")
    return result
