"""``ragprep search``: query the built index and say when it is stale.

The query is embedded with the embedder the index was built with (its manifest names it), so the
vectors always compare like with like. An index built from another dataset version than LATEST,
with another embedder than the settings name, or with another BM25 tokenizer still answers, with
a warning line for each difference and the command that rebuilds it.
"""

from __future__ import annotations

from collections.abc import Callable

from pydantic import BaseModel
from rich.markup import escape

from ragprep.engines.embedder import Embedder
from ragprep.engines.embedders import EmbedderConfigError, EmbedderSpec, embeddings_cache_dir
from ragprep.report import Report
from ragprep.retrieval import Fusion, check_mode, query_language
from ragprep.settings import IndexSettings, Settings
from ragprep.text import TOKENIZER_ID
from tasks.dataset.versions import dataset_store
from tasks.index.loaded import index_embedder, opened_index
from tasks.index.store import IndexManifest, SearchHit, SearchIndex, index_folder

SNIPPET_CHARS = 90


class SearchResult(BaseModel):
    """A query's ranked chunks, the index they came from and any staleness warnings."""

    query: str
    mode: str
    k: int
    variant: str
    index_version: str
    index_embedder: str
    warnings: list[str]
    hits: list[dict]
    encoder: str = ""

    def report(self) -> Report:
        """The hits as a table for the terminal: rank, score, document, slide/page, section path, split, start of the text.

        Cells are escaped for rich (a Markdown link ``[alt](path)`` would be read as markup)."""
        rows = [[h["rank"], f"{h['score']:.4f}", escape(h["document"]), h["where"], escape(h["section"] or h["title"]),
                 h["split"] or "", escape(_snippet(h["text"]))] for h in self.hits]
        return Report(
            title=escape(f"{self.mode} search ({self.variant}, version {self.index_version}): {self.query}"),
            columns=["#", "score", "document", "slide/page", "section", "split", "text"], rows=rows,
            notes=([] if rows else ["no passage matched"]) + ([f"queries encoded by {self.encoder}"] if self.encoder else []),
        )


def _snippet(text: str) -> str:
    body = text.split("\n---\n", 1)[-1] if "\n---\n" in text else text  # skip a report header block
    flat = " ".join(body.split())
    return flat if len(flat) <= SNIPPET_CHARS else flat[: SNIPPET_CHARS - 1] + "…"


def fusion_for(index: IndexSettings, query: str) -> Fusion:
    """The hybrid fusion of ``query``'s language: ``rrf_k_ko``/``bm25_weight_ko`` for Korean, else ``rrf_k``/``bm25_weight``."""
    if query_language(query) == "ko":
        return Fusion(index.rrf_k_ko, index.bm25_weight_ko, index.sentence_weight)
    return Fusion(index.rrf_k, index.bm25_weight, index.sentence_weight)


def rank_passages(index: SearchIndex, settings: IndexSettings, query: str, k: int, mode: str,
                  embedder: Embedder | None) -> list[SearchHit]:
    """``query``'s ``k`` best passages in ``mode`` with the settings' RRF and the language's fusion: how ``search``,
    ``ask`` and the query adapter's publish judge rank (``embedder`` encodes the query; BM25 ignores it)."""
    return index.search(query, k, mode, embedder, settings.rrf_k, settings.rrf_depth, fusion_for(settings, query))


def staleness_warnings(manifest: IndexManifest, settings: Settings) -> list[str]:
    """One line per way the index differs from LATEST and the settings (empty when it is current)."""
    warnings = []
    latest = dataset_store(settings).latest()
    if latest != manifest.version_id:
        now = f"LATEST is {latest}" if latest else "no dataset version is published now"
        warnings.append(f"index built from dataset version {manifest.version_id}, but {now}: "
                        f"run `ragprep index --variant {manifest.variant}` to index it")
    try:
        configured = EmbedderSpec.from_settings(settings)
    except EmbedderConfigError as exc:
        warnings.append(f"the configured embedder is unusable ({exc}); queries use the index's {manifest.embedder_name}")
    else:
        if configured != manifest.embedder:
            warnings.append(f"index built with embedder {manifest.embedder_name}, but the settings name {configured.name}: "
                            f"queries use {manifest.embedder_name}; run `ragprep index` to rebuild with the configured one")
    if manifest.tokenizer != TOKENIZER_ID:
        warnings.append(f"index BM25 tokenized by {manifest.tokenizer}, this ragprep uses {TOKENIZER_ID}: run `ragprep index`")
    return warnings


Encoder = Callable[[Embedder], tuple[Embedder, str]]
"""From the index's embedder to what encodes the queries and its name (the CLI passes the published query adapter)."""


def search_index(settings: Settings, query: str, k: int = 10, mode: str | None = None,
                 variant: str | None = None, encoder: Encoder | None = None) -> SearchResult:
    """Search the ``variant`` index (default ``index.variant``) in ``mode`` (default ``index.mode``); each hit's text is
    its passage grown with its chunk neighbours up to ``index.expand_chars`` (small-to-big).

    ``encoder`` wraps the index's embedder for the query (a trained query adapter); the result names what encoded it."""
    mode = check_mode(mode or settings.index.mode)
    variant = variant or settings.index.variant
    index = opened_index(index_folder(settings, variant))  # loaded once per process
    manifest = index.manifest
    warnings = staleness_warnings(manifest, settings)
    embedder = index_embedder(manifest.embedder, settings, embeddings_cache_dir(settings)) \
        if mode != "bm25" else None  # the one embedder of the index (queries are never cached)
    used = "none (BM25 only)"
    if embedder is not None:
        embedder, used = encoder(embedder) if encoder else (embedder, f"{embedder.name} (vanilla)")
    hits = index.with_neighbours(rank_passages(index, settings.index, query, k, mode, embedder), settings.index.expand_chars)
    return SearchResult(query=query, mode=mode, k=k, variant=variant, index_version=manifest.version_id,
                        index_embedder=manifest.embedder_name, warnings=warnings, hits=[h.as_dict() for h in hits],
                        encoder=used)
