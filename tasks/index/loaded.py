"""The search index and its query embedder, loaded once per process (``ragprep/kept.py``).

``ask`` and ``search`` in a long-lived process (``ragprep serve``'s ``ask`` endpoint) reuse the index
they opened while its ``manifest.json`` is the same file (a rebuild swaps the folder, so the stamp
changes and the next call opens the new index), and the embedder built for the index's spec.
"""

from __future__ import annotations

from pathlib import Path

from ragprep.engines.embedders import CachedEmbedder, EmbedderSpec, make_embedder
from ragprep.kept import file_stamp, kept
from ragprep.settings import Settings
from tasks.index.store import MANIFEST, SearchIndex


def opened_index(folder: Path) -> SearchIndex:
    """The index in ``folder``, opened once per build of it (``SearchIndex.open``'s errors when there is none)."""
    stamp = file_stamp(folder / MANIFEST)
    if stamp is None:
        return SearchIndex.open(folder)  # raises the error naming `ragprep index`
    return kept("search-index", (str(folder.resolve()), stamp), lambda: SearchIndex.open(folder))


def index_embedder(spec: EmbedderSpec, settings: Settings, cache_dir: Path | None) -> CachedEmbedder:
    """The embedder ``spec`` names with its passage cache under ``cache_dir``, built once per process (an
    endpoint embedder is rebuilt when the settings that reach it change)."""
    reach = settings.index.model_dump_json() + settings.llm.model_dump_json() if spec.kind == "openai" else ""
    key = (spec, str(cache_dir), settings.index.batch_size, reach)
    return kept("index-embedder", key, lambda: make_embedder(spec, settings, cache_dir))
