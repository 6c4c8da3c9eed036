"""The ``index`` flow: embed a dataset version's chunks and write the search index (LanceDB + BM25)."""

from __future__ import annotations

from typing import Literal

from prefect import flow

from flows.artifacts import publish_markdown
from flows.runtime import deployment_settings
from ragprep.settings import Settings
from tasks.index.run import IndexReport
from tasks.wrappers import build_index_task


def run_index_stage(settings: Settings, version: str | None = None, variant: str | None = None) -> IndexReport:
    """Build the index and publish its counts as the ``search-index`` artifact."""
    result = build_index_task(settings, version, variant)
    publish_markdown("search-index", result.report(), f"search index {result.variant} of dataset version {result.version_id}")
    return result


@flow(name="index")
def index_flow(root: str | None = None, version: str | None = None, variant: Literal["v1", "v0"] | None = None) -> IndexReport:
    """Embed every chunk of a dataset version and write the search index (dense vectors in LanceDB, BM25, hybrid by RRF).

    Only new or changed chunks are embedded: passage vectors are cached by text hash and model.

    Args:
        root: Output root holding the dataset versions; default RAGPREP_ROOT or ./ragprep-data.
        version: Dataset version id to index; default the latest published (LATEST).
        variant: Chunk text to embed: v1 = report header + text (markdown_v1), v0 = without header; default index.variant (v1).
    """
    return run_index_stage(deployment_settings(root), version, variant)
