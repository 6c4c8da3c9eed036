"""index: cut a dataset version's chunks into passages, embed them and write the search index (``ragprep index``).

Reads the chunks of one published dataset version (LATEST unless ``version`` names one), takes
each chunk's text of the variant — ``v1``: ``markdown_v1`` (report header + text, the paper's
Ver.1), ``v0``: ``markdown_v0`` (no header, Ver.0); a chunk whose column is empty (the headers or
correct stage did not run) falls back to the next one (v1 -> v0 -> markdown) and is counted —,
cuts each chunk into passages on its structure with their section paths and the document's name
as context (``tasks/index/passages.py``), finds each passage's page among its chunk's elements,
embeds context + passage with the configured embedder and writes LanceDB + BM25 + manifest
(``tasks/index/store.py``). The windows that the re-ranker and the reference matcher read a retrieved
passage in (``ragprep/passage_windows.py``: the matcher's only when its scorer embeds them) are embedded here
too, into the same cache: an ``ask`` over the index then embeds only its question and answer sentences.

Incremental: passage vectors are cached by text hash + model, so a new version re-embeds only
its new or changed passages; the report counts passages embedded and reused.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime
from pathlib import Path

import pyarrow as pa
from pydantic import BaseModel

from ragprep import __version__
from ragprep.engines.embedders import EmbedderSpec, embeddings_cache_dir, make_embedder, text_hash
from ragprep.passage_windows import MATCHER_EMBEDS, index_windows
from ragprep.report import Report
from ragprep.settings import Settings
from ragprep.text import TOKENIZER_ID
from tasks.dataset.versions import dataset_store, find_version, read_version_table
from tasks.index.passages import Passage, comparable, cut_passages, document_label, locate_page
from tasks.index.store import UNITS, IndexManifest, folder_bytes, index_folder, indexed_text, write_index
from tasks.stage import Progress

TEXT_COLUMNS = {"v1": ("markdown_v1", "markdown_v0", "markdown"), "v0": ("markdown_v0", "markdown")}
"""The chunk columns a variant's text is taken from, first non-empty wins."""


class IndexReport(BaseModel):
    """What one index build did, for the CLI and the ``search-index`` artifact."""

    version_id: str
    variant: str
    text_column: str
    embedder: str
    dim: int
    chunks: int
    passages: int
    embedded: int
    reused: int
    windows: int = 0
    """Distinct windows the re-ranker and the reference matcher read a retrieved passage in (embedded here, so
    ``ask`` finds their vectors in the cache)."""
    windows_embedded: int = 0
    text_fallbacks: int
    bm25_vocabulary: int
    path: str
    size_bytes: int
    seconds: float
    embed_seconds: float

    def report(self) -> Report:
        """The counts as a two-column table, with a lead line and notes."""
        rows = [
            ["dataset version", self.version_id], ["variant", f"{self.variant} ({self.text_column})"],
            ["embedder", f"{self.embedder} ({self.dim} dims)"], ["chunks", self.chunks], ["passages indexed", self.passages],
            ["passages embedded", self.embedded], ["passages reused (cache)", self.reused],
            ["reading windows (embedded now)", f"{self.windows} ({self.windows_embedded})"],
            ["BM25 vocabulary", self.bm25_vocabulary], ["size on disk", f"{self.size_bytes / 2**20:.2f} MiB"],
            ["seconds (embedding)", f"{self.seconds:.1f} ({self.embed_seconds:.1f})"], ["index", self.path],
        ]
        notes = []
        if self.text_fallbacks:
            notes.append(f"{self.text_fallbacks} chunks had no {self.text_column} and were indexed with the next text "
                         "column (run the correct and headers stages before `ragprep dataset`).")
        notes.append('Search it: ragprep search "question" --mode hybrid|dense|bm25')
        return Report(
            title="ragprep: search index", columns=["", "value"], rows=rows, notes=notes,
            lead=[f"**Indexed {self.passages} passages of {self.chunks} chunks** of dataset version {self.version_id} "
                  f"({self.variant}): "
                  f"{self.embedded} passages embedded, {self.reused} reused from the cache."],
        )


def chunk_texts(chunks: pa.Table, variant: str) -> tuple[list[str], int]:
    """Each chunk's text of ``variant`` and how many chunks fell back to a later column."""
    columns = [c for c in TEXT_COLUMNS[variant] if c in chunks.column_names]
    values = [chunks.column(c).to_pylist() for c in columns]
    texts, fallbacks = [], 0
    for row in zip(*values):
        chosen = next((i for i, v in enumerate(row) if v), None)
        texts.append(row[chosen] if chosen is not None else "")
        fallbacks += chosen != 0
    return texts, fallbacks


def _column(table: pa.Table | None, name: str) -> list:
    if table is None:
        return []
    return table.column(name).to_pylist() if name in table.column_names else [None] * table.num_rows


def document_labels(chunks: pa.Table, documents: pa.Table | None) -> dict[str, str]:
    """Each document's context label (its standard, title and file name; ``passages.document_label``)."""
    titles = dict(zip(_column(documents, "doc_id"), _column(documents, "title")))
    first: dict[str, str] = {}
    for doc_id, text in zip(_column(chunks, "doc_id"), _column(chunks, "markdown")):
        first.setdefault(doc_id, text or "")
    names = dict(zip(_column(chunks, "doc_id"), (Path(p).name for p in _column(chunks, "source_path"))))
    return {d: document_label(names[d], titles.get(d), first.get(d, "")) for d in names}


def element_pages(elements: pa.Table | None) -> dict[str, tuple[int, str]]:
    """Page number and normalised text of every page element, by element id (for a passage's page)."""
    if elements is None:
        return {}
    out = {}
    for eid, unit, number, text in zip(_column(elements, "element_id"), _column(elements, "unit"),
                                       _column(elements, "number"), _column(elements, "text")):
        if unit == "page" and text:
            out[eid] = (number, comparable(text))
    return out


def chunk_passages(chunks: pa.Table, texts: list[str], labels: dict[str, str],
                   pages: dict[str, tuple[int, str]]) -> list[tuple[int, Passage]]:
    """``(chunk row, passage)`` for every passage of every chunk, each passage with its page when it has one."""
    out = []
    for row, (chunk_id, doc_id, heading_path, element_ids, page_start) in enumerate(zip(
        _column(chunks, "chunk_id"), _column(chunks, "doc_id"), _column(chunks, "heading_path"),
        _column(chunks, "element_ids"), _column(chunks, "page_start"),
    )):
        chunk_pages = [pages[e] for e in element_ids or [] if e in pages]
        for passage in cut_passages(chunk_id, texts[row], heading_path or [], labels.get(doc_id, "")):
            page = locate_page(passage.body, chunk_pages, page_start) if chunk_pages else page_start
            out.append((row, Passage(**{**passage.__dict__, "page": page})))
    return out


def index_metadata(chunks: pa.Table, documents: pa.Table | None, texts: list[str],
                   elements: pa.Table | None = None) -> pa.Table:
    """The index's metadata columns (``store.METADATA``): one row per passage of every chunk."""
    doc_types = dict(zip(_column(documents, "doc_id"), _column(documents, "doc_type")))
    cut = chunk_passages(chunks, texts, document_labels(chunks, documents), element_pages(elements))
    rows = [r for r, _ in cut]
    passages = [p for _, p in cut]

    def column(name: str) -> list:
        values = _column(chunks, name)
        return [values[r] for r in rows]

    doc_ids = column("doc_id")
    units = column("unit")
    return pa.table({
        "passage_id": [p.passage_id for p in passages], "chunk_id": [p.chunk_id for p in passages],
        "position": [p.position for p in passages], "section": [p.section for p in passages],
        "context": [p.context for p in passages], "doc_id": doc_ids,
        "document": [Path(p).name for p in column("source_path")], "source_path": column("source_path"),
        "doc_type": [doc_types.get(d) for d in doc_ids], "unit": units, "slide": column("slide"),
        "page_start": [p.page if u != "slide" else None for p, u in zip(passages, units)],
        "page_end": [p.page if u != "slide" else None for p, u in zip(passages, units)], "title": column("title"),
        "split": column("split"), "text": [p.body for p in passages],
        "text_hash": [text_hash(p.indexed) for p in passages],
    })


def _two_phases(progress: Progress | None) -> tuple[Progress | None, Progress | None]:
    """Progress callbacks for the passages, then the windows, as one count (the windows' ticks after the passages')."""
    if progress is None:
        return None, None
    first = [0]

    def passages(done: int, total: int) -> None:
        first[0] = total
        progress(done, total)

    def windows(done: int, total: int) -> None:
        progress(first[0] + done, first[0] + total)

    return passages, windows


def run_index(settings: Settings, version: str | None = None, variant: str | None = None,
              progress: Progress | None = None) -> IndexReport:
    """Embed the chunks of ``version`` (default LATEST) and write the ``variant`` index (default ``index.variant``)."""
    import lancedb

    started = time.perf_counter()
    variant = variant or settings.index.variant
    if variant not in TEXT_COLUMNS:
        raise ValueError(f"unknown variant {variant!r}: v1 (with report header) or v0 (without)")
    store = dataset_store(settings)
    found = find_version(store, version)
    chunks = read_version_table(store, found, "chunks")
    if chunks is None:
        raise FileNotFoundError(f"dataset version {found.version_id} has no chunks table")
    chunks = chunks.sort_by("chunk_id")  # row order (and BM25 positions) independent of split files
    texts, fallbacks = chunk_texts(chunks, variant)
    spec = EmbedderSpec.from_settings(settings)
    folder = index_folder(settings, variant)  # checks index.uri before any embedding
    metadata = index_metadata(chunks, read_version_table(store, found, "documents"), texts,
                              read_version_table(store, found, "elements"))
    indexed = [indexed_text(c, t) for c, t in zip(metadata.column("context").to_pylist(), metadata.column("text").to_pylist())]
    embedder = make_embedder(spec, settings, embeddings_cache_dir(settings))
    embed_started = time.perf_counter()
    passages_progress, windows_progress = _two_phases(progress)
    vectors = embedder.passages(indexed, passages_progress)
    passage_counts = (embedder.counts.embedded, embedder.counts.reused)
    match_words = settings.refmatch.window_words if settings.refmatch.scorer in MATCHER_EMBEDS else None
    windows = index_windows(indexed, metadata.column("text").to_pylist(), match_words)
    embedder.passages(windows, windows_progress)  # read after retrieval: embedded now, found in the cache by ask/refmatch
    embed_seconds = time.perf_counter() - embed_started
    manifest = IndexManifest(
        version_id=found.version_id, variant=variant, text_column=TEXT_COLUMNS[variant][0], embedder=spec,
        embedder_name=embedder.name, dim=int(vectors.shape[1]) if len(indexed) else embedder.dim, chunks=len(texts),
        passages=len(indexed), units=UNITS, embedded=passage_counts[0], reused=passage_counts[1],
        text_fallbacks=fallbacks, tokenizer=TOKENIZER_ID,
        bm25_vocabulary=0, created_at=datetime.now(UTC).isoformat(timespec="seconds"), ragprep_version=__version__,
        lancedb_version=lancedb.__version__, dataset_store=store.uri,
    )
    ranker = write_index(folder, metadata, vectors, manifest)
    return IndexReport(
        version_id=found.version_id, variant=variant, text_column=manifest.text_column, embedder=embedder.name,
        dim=manifest.dim, chunks=len(texts), passages=len(indexed), embedded=manifest.embedded, reused=manifest.reused,
        windows=len(windows), windows_embedded=embedder.counts.embedded - passage_counts[0], text_fallbacks=fallbacks,
        bm25_vocabulary=ranker.vocabulary, path=str(folder), size_bytes=folder_bytes(folder),
        seconds=round(time.perf_counter() - started, 2), embed_seconds=round(embed_seconds, 2),
    )
