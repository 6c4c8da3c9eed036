"""The persistent search index: LanceDB vectors + metadata, a saved BM25 index and a manifest.

One folder per text variant, ``<root>/index/<variant>/`` (``index.uri`` names another local
folder)::

    chunks.lance/      LanceDB table ``chunks``, one row per passage (``tasks/index/passages.py``): passage_id,
                       chunk_id (its chunk), position in the chunk, section path, context line, document,
                       slide/page, title, split, text (the passage body), text_hash and the ``vector`` of
                       context + body (float32, L2-normalised)
    bm25/              bm25s index over ragprep.text.tokens of context + body
    unit_ids.json      passage id of each BM25 position (the table's row order)
    manifest.json      the dataset version, variant and embedder it was built from, and counts

A build is written to a staging folder beside the index and swapped in under an exclusive lock,
so a search sees the old index or the new one, never a half-written one. Dense search is the exact
cosine over every stored vector, read from LanceDB once per opened index into one numpy matrix
(0.4 s for 100,000 chunks of 384 dims); LanceDB's own flat scan was measured 9-20x slower per query
than that product on two cores, and its approximate indexes trade recall (IVF_HNSW_SQ: recall@10 0.89,
5 minutes to build at 100,000) for speed, so neither is used. The ranking, BM25 and the fusion are
``ragprep/retrieval.py``'s, so the index ranks exactly like ``Retriever``.

LanceDB is used embedded (a local folder): it opens no network connection and sends no telemetry
(checked for lancedb 0.40: no analytics code in the package, no ``connect`` system call while
building and querying). Its Rust log is kept to errors (``LANCE_LOG``). An ``s3://`` location is
not supported yet: LanceDB could write there, but the swap and the BM25 files assume a local folder.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import tempfile
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
from pydantic import BaseModel

from ragprep.engines.embedder import Embedder
from ragprep.engines.embedders import EmbedderSpec
from ragprep.errors import RagprepError
from ragprep.retrieval import (
    SENTENCE_DEPTH,
    Bm25Ranker,
    Fusion,
    Hit,
    Retriever,
    check_mode,
    embed_queries,
    ranked_hits,
    rerank_by_sentences,
    sentence_match,
    top_indices,
)
from ragprep.settings import Settings
from ragprep.storage import Layout, atomic_write_bytes, exchange_paths
from ragprep.tables import spec
from tasks.index.passages import neighbour_span

TABLE = "chunks"
MANIFEST = "manifest.json"
METADATA = spec("index_entries").schema
"""Every column of the LanceDB table but the vector."""
UNIT_IDS = "unit_ids.json"
UNITS = "passages"
"""What one row of the index is; an index of another unit (an older ragprep's chunks) must be rebuilt."""


class SearchIndexError(RagprepError):
    """No usable index where one was expected; the message says which command builds it."""


def unreadable_index(folder: Path, part: str, exc: BaseException) -> SearchIndexError:
    """The one-line error for a corrupt, truncated or half-deleted index file, with the repair."""
    reason = " ".join(str(exc).split())[:200] or type(exc).__name__
    return SearchIndexError(f"the search index in {folder} is unreadable ({part}: {type(exc).__name__}: {reason}); "
                            f"rebuild it with `ragprep index` (--variant {folder.name})")


class IndexManifest(BaseModel):
    """What an index was built from, beside it as ``manifest.json``."""

    version_id: str
    variant: str
    text_column: str
    embedder: EmbedderSpec
    embedder_name: str
    dim: int
    chunks: int
    passages: int = 0
    units: str = "chunks"
    embedded: int
    reused: int
    text_fallbacks: int
    tokenizer: str
    bm25_vocabulary: int
    created_at: str
    ragprep_version: str
    lancedb_version: str
    dataset_store: str


@dataclass(frozen=True)
class SearchHit:
    """A ranked chunk with what a reader needs to find it."""

    rank: int
    score: float
    passage_id: str
    chunk_id: str
    section: str
    context: str
    document: str
    where: str
    title: str
    split: str | None
    doc_id: str
    doc_type: str | None
    source_path: str
    slide: int | None
    page_start: int | None
    page_end: int | None
    text: str

    def as_dict(self) -> dict:
        """The hit as a JSON-ready dict."""
        return asdict(self)


def where_in_document(slide: int | None, page_start: int | None, page_end: int | None) -> str:
    """``slide 3``, ``p. 5`` or ``p. 2-4`` (empty when unknown)."""
    if slide is not None:
        return f"slide {slide}"
    if page_start is None:
        return ""
    return f"p. {page_start}" if page_end in (None, page_start) else f"p. {page_start}-{page_end}"


def index_folder(settings: Settings, variant: str) -> Path:
    """Where the index of ``variant`` lives: ``<index.uri or root/index>/<variant>``."""
    base = settings.index.uri
    if base and "://" in base:
        raise SearchIndexError(f"index.uri {base!r}: only a local folder is supported for the search index so far (not S3)")
    return (Path(base) if base else Layout(settings.root).index_dir) / variant


def quiet_lancedb() -> None:
    """Keep LanceDB's Rust log to errors (it warns on every new table otherwise)."""
    os.environ.setdefault("LANCE_LOG", "error")


@contextmanager
def _locked(folder: Path) -> Iterator[None]:
    folder.parent.mkdir(parents=True, exist_ok=True)
    with open(folder.parent / f".{folder.name}.lock", "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def folder_bytes(folder: Path) -> int:
    """Bytes of every file under ``folder``."""
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


def indexed_text(context: str | None, text: str) -> str:
    """What the encoder and BM25 see for a row: its context line(s), then its text."""
    return f"{context}\n\n{text}" if context else text


def indexed_texts(metadata: pa.Table) -> list[str]:
    """``indexed_text`` of every row of ``metadata``."""
    return [indexed_text(c, t) for c, t in zip(metadata.column("context").to_pylist(), metadata.column("text").to_pylist())]


def write_index(folder: Path, metadata: pa.Table, vectors: np.ndarray, manifest: IndexManifest) -> Bm25Ranker:
    """Write the index of ``metadata`` rows (``METADATA`` columns) and their ``vectors`` to ``folder``, atomically."""
    import lancedb

    quiet_lancedb()
    metadata = metadata.select(METADATA.names).cast(METADATA)
    dim = int(vectors.shape[1]) if vectors.ndim == 2 else 0
    column = pa.FixedSizeListArray.from_arrays(pa.array(np.ascontiguousarray(vectors, dtype=np.float32).ravel()), dim)
    table = metadata.append_column(pa.field("vector", pa.list_(pa.float32(), dim)), column)
    folder.parent.mkdir(parents=True, exist_ok=True)
    with _locked(folder):
        _sweep_leftovers(folder)
        staging = Path(tempfile.mkdtemp(prefix=f".staging-{folder.name}-", dir=folder.parent))
        try:
            lancedb.connect(str(staging)).create_table(TABLE, table)
            ranker = Bm25Ranker.build(indexed_texts(metadata))
            ranker.save(staging / "bm25")
            atomic_write_bytes(staging / UNIT_IDS, json.dumps(metadata.column("passage_id").to_pylist()).encode())
            manifest = manifest.model_copy(update={"bm25_vocabulary": ranker.vocabulary})
            atomic_write_bytes(staging / MANIFEST, manifest.model_dump_json(indent=2).encode())
            _swap(staging, folder)
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise
    return ranker


def _sweep_leftovers(folder: Path) -> None:
    """Remove the staging and old folders a killed build left beside ``folder`` (call under its lock: no build of
    this index is running then). An old index whose replacement never arrived (killed between the two renames of
    the fallback swap) is put back first."""
    olds = sorted(folder.parent.glob(f".old-{folder.name}-*"), key=lambda p: p.stat().st_mtime)
    if olds and not folder.exists():
        os.replace(olds.pop(), folder)
    for leftover in [*folder.parent.glob(f".staging-{folder.name}-*"), *olds]:
        shutil.rmtree(leftover, ignore_errors=True)


def _swap(staging: Path, target: Path) -> None:
    """Put ``staging`` in place of ``target``: one atomic exchange where Linux offers it (a reader, or a kill at
    any moment, sees the old index or the new one), else two renames (the old one kept aside until the second)."""
    if target.exists() and exchange_paths(staging, target):
        shutil.rmtree(staging, ignore_errors=True)  # now the old index
        return
    old = None
    if target.exists():
        old = target.with_name(f".old-{target.name}-{uuid.uuid4().hex[:8]}")
        os.replace(target, old)
    os.replace(staging, target)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


def read_manifest(folder: Path) -> IndexManifest | None:
    """The manifest of the index in ``folder``; None when there is none."""
    path = folder / MANIFEST
    return IndexManifest.model_validate_json(path.read_text(encoding="utf-8")) if path.is_file() else None


class SearchIndex:
    """A built index opened for search: LanceDB for dense candidates and metadata, bm25s for BM25."""

    def __init__(self, folder: Path, manifest: IndexManifest, table, bm25: Bm25Ranker, unit_ids: list[str]) -> None:
        self.folder = folder
        self.manifest = manifest
        self.table = table
        self.bm25 = bm25
        self.unit_ids = unit_ids
        self.position = {c: i for i, c in enumerate(unit_ids)}
        self._matrix: np.ndarray | None = None
        self._chunks: dict[str, list[int]] | None = None
        self._documents: dict[str, list[int]] | None = None

    @property
    def chunk_ids(self) -> list[str]:
        """The distinct chunks the passages come from, in row order."""
        return list(self._chunk_rows())

    def _chunk_rows(self) -> dict[str, list[int]]:
        if self._chunks is None:
            rows = self.table.search().select(["passage_id", "chunk_id", "position"]).limit(max(1, len(self.unit_ids)))
            table = rows.to_arrow().to_pylist()
            ordered = sorted(table, key=lambda r: (self.position[r["passage_id"]]))
            chunks: dict[str, list[tuple[int, int]]] = {}
            for r in ordered:
                chunks.setdefault(r["chunk_id"], []).append((r["position"], self.position[r["passage_id"]]))
            self._chunks = {c: [row for _, row in sorted(v)] for c, v in chunks.items()}
        return self._chunks

    @classmethod
    def open(cls, folder: Path) -> SearchIndex:
        """Open the index in ``folder``; raise ``SearchIndexError`` naming the command that builds it. Every file is
        checked at open (manifest, chunk ids, BM25, the LanceDB table and its row count): a truncated, deleted or
        garbage file is one line naming it, never a traceback later."""
        import lancedb

        quiet_lancedb()
        if not (folder / MANIFEST).is_file():
            raise SearchIndexError(f"no search index in {folder}; build it with `ragprep index` (--variant {folder.name})")
        part = MANIFEST
        try:
            manifest = read_manifest(folder)
            if manifest.units != UNITS:
                raise SearchIndexError(f"the index in {folder} holds {manifest.units}, this ragprep searches {UNITS}: "
                                       f"rebuild it with `ragprep index --variant {folder.name}`")
            part = UNIT_IDS
            unit_ids = json.loads((folder / part).read_text(encoding="utf-8"))
            if not isinstance(unit_ids, list) or len(unit_ids) != manifest.passages:
                raise ValueError(f"{len(unit_ids) if isinstance(unit_ids, list) else 'no'} ids, the manifest says "
                                 f"{manifest.passages}")
            part = "bm25"
            bm25 = Bm25Ranker.load(folder / part)
            part = f"{TABLE}.lance"
            table = lancedb.connect(str(folder)).open_table(TABLE)
            if (rows := table.count_rows()) != len(unit_ids):
                raise ValueError(f"{rows} rows, {len(unit_ids)} passage ids")
        except SearchIndexError:
            raise
        except Exception as exc:  # any unreadable part: one line with the repair
            raise unreadable_index(folder, part, exc) from None
        return cls(folder, manifest, table, bm25, unit_ids)

    def dense_ranking(self, vector: np.ndarray, depth: int) -> list[tuple[str, float]]:
        """``(passage_id, cosine)`` of the ``depth`` nearest passages (exact), best first; ties in row order."""
        if not self.unit_ids:
            return []
        scores = self.vectors() @ np.asarray(vector, dtype=np.float32)
        return [(self.unit_ids[i], float(scores[i])) for i in top_indices(scores, depth)]

    def bm25_ranking(self, query: str, depth: int) -> list[tuple[str, float]]:
        """``(passage_id, BM25)`` of the best ``depth`` passages sharing a token with ``query``."""
        return [(self.unit_ids[i], s) for i, s in self.bm25.ranking(query, depth)]

    def search(self, query: str, k: int = 10, mode: str = "hybrid", embedder: Embedder | None = None,
               rrf_k: int = 60, rrf_depth: int = 100, fusion: Fusion | None = None) -> list[SearchHit]:
        """The ``k`` best passages for ``query``; dense and hybrid need the index's embedder for the query.

        ``fusion`` (default: plain RRF with ``rrf_k``) weighs the two rankings of a hybrid search."""
        check_mode(mode)
        depth = k if mode != "hybrid" else max(k, rrf_depth)
        dense: list[tuple[str, float]] = []
        if mode != "bm25":
            if embedder is None:
                raise ValueError(f"{mode} search needs the index's embedder")
            dense = self.dense_ranking(embed_queries(embedder, [query])[0], depth)
        lexical = self.bm25_ranking(query, depth) if mode != "dense" else []
        if mode == "hybrid" and fusion is not None and fusion.sentence_weight > 0:
            fused = [(h.chunk_id, h.score) for h in ranked_hits(mode, dense, lexical, max(k, SENTENCE_DEPTH), rrf_k, fusion)]
            texts = self.section_texts([u for u, _ in fused[:SENTENCE_DEPTH]])
            ranked = rerank_by_sentences(fused, lambda u: sentence_match(query, texts.get(u, ""), self.bm25.idf),
                                         fusion.sentence_weight)[:k]
            return self.describe([Hit(u, s, n) for n, (u, s) in enumerate(ranked, start=1)])
        return self.describe(ranked_hits(mode, dense, lexical, k, rrf_k, fusion))

    def section_texts(self, unit_ids: Sequence[str]) -> dict[str, str]:
        """Section path + text of the named passages (what a reader sees, what the sentence match reads)."""
        if not unit_ids:
            return {}
        rows = self.table.take_offsets([self.position[u] for u in unit_ids]).select(["passage_id", "section", "text"])
        return {r["passage_id"]: f"{r['section']}\n{r['text']}" if r["section"] else r["text"]
                for r in rows.to_arrow().to_pylist()}

    def describe(self, hits: list[Hit]) -> list[SearchHit]:
        """The hits with their chunks' metadata (document, slide/pages, title, split, text)."""
        if not hits:
            return []
        try:
            rows = self.table.take_offsets([self.position[h.chunk_id] for h in hits]).select(METADATA.names).to_arrow()
        except Exception as exc:  # a data file of the table truncated or deleted after open
            raise unreadable_index(self.folder, f"{TABLE}.lance", exc) from None
        by_id = {r["passage_id"]: r for r in rows.to_pylist()}
        out = []
        for hit in hits:
            r = by_id[hit.chunk_id]
            out.append(SearchHit(
                rank=hit.rank, score=round(hit.score, 6), passage_id=hit.chunk_id, chunk_id=r["chunk_id"],
                section=r["section"] or "", context=r["context"] or "", document=r["document"],
                where=where_in_document(r["slide"], r["page_start"], r["page_end"]), title=r["title"], split=r["split"],
                doc_id=r["doc_id"], doc_type=r["doc_type"], source_path=r["source_path"], slide=r["slide"],
                page_start=r["page_start"], page_end=r["page_end"], text=r["text"],
            ))
        return out

    def expand(self, hit: SearchHit) -> SearchHit:
        """Small-to-big: the hit with the text of its whole chunk (every passage of the chunk, in order)."""
        rows = self._chunk_rows().get(hit.chunk_id, [])
        if not rows:
            return hit
        texts = self.table.take_offsets(rows).select(["passage_id", "text"]).to_arrow().to_pylist()
        by_id = {r["passage_id"]: r["text"] for r in texts}
        body = "\n\n".join(by_id[self.unit_ids[row]] for row in rows)
        return SearchHit(**{**hit.as_dict(), "text": body})

    def _document_rows(self) -> dict[str, list[int]]:
        """Each document's passage rows in reading order: its chunks by first page or slide (then last page), each
        chunk's passages by position."""
        if self._documents is None:
            table = self.table.search().select(["passage_id", "chunk_id", "doc_id", "slide", "page_start", "page_end"]) \
                .limit(max(1, len(self.unit_ids))).to_arrow().to_pylist()
            starts: dict[str, tuple[int, int]] = {}
            for r in table:
                where = r["slide"] if r["slide"] is not None else (r["page_start"] or 0)
                old = starts.get(r["chunk_id"], (where, 0))
                starts[r["chunk_id"]] = (min(old[0], where), max(old[1], r["page_end"] or where))
            chunk_doc = {r["chunk_id"]: r["doc_id"] for r in table}
            rows = self._chunk_rows()
            documents: dict[str, list[int]] = {}
            for chunk in sorted(rows, key=lambda c: (*starts.get(c, (0, 0)), c)):
                documents.setdefault(chunk_doc.get(chunk, chunk), []).extend(rows[chunk])
            self._documents = documents
        return self._documents

    def neighbour_texts(self, unit_ids: Sequence[str], budget: int) -> dict[str, str]:
        """Small-to-big: each named passage's body joined with its neighbours in reading order in its document (across
        chunk, page and slide boundaries: a short slide shows the slides around it) while the text stays within
        ``budget`` characters (``passages.neighbour_span``); a passage that gains none keeps its own body."""
        documents = self._document_rows()
        document_of = {self.unit_ids[row]: doc for doc, rows in documents.items() for row in rows}
        wanted = {d for u in unit_ids if (d := document_of.get(u))}
        needed = sorted({row for d in wanted for row in documents[d]})
        if not needed:
            return {}
        table = self.table.take_offsets(needed).select(["passage_id", "text"]).to_arrow().to_pylist()
        body = {r["passage_id"]: r["text"] or "" for r in table}
        out = {}
        for unit in unit_ids:
            if unit not in document_of:
                continue
            ids = [self.unit_ids[row] for row in documents[document_of[unit]]]
            lo, hi = neighbour_span([len(body[i]) for i in ids], ids.index(unit), budget)
            out[unit] = "\n\n".join(body[i] for i in ids[lo:hi + 1])
        return out

    def _unit_chunks(self) -> dict[str, str]:
        return {self.unit_ids[row]: chunk for chunk, rows in self._chunk_rows().items() for row in rows}

    def with_neighbours(self, hits: list[SearchHit], budget: int) -> list[SearchHit]:
        """The hits with their text grown by ``neighbour_texts`` (their passage id, section and rank unchanged)."""
        if budget <= 0 or not hits:
            return hits
        texts = self.neighbour_texts([h.passage_id for h in hits], budget)
        return [SearchHit(**{**h.as_dict(), "text": texts.get(h.passage_id, h.text)}) for h in hits]

    def chunk_hits(self, chunk_ids: Sequence[str]) -> list[SearchHit]:
        """The named chunks the index holds, each as its first passage expanded to the whole chunk."""
        rows = self._chunk_rows()
        known = [c for c in dict.fromkeys(chunk_ids) if c in rows]
        hits = self.describe([Hit(self.unit_ids[rows[c][0]], 0.0, n) for n, c in enumerate(known, start=1)])
        return [self.expand(h) for h in hits]

    def vectors(self) -> np.ndarray:
        """(n_passages, dim) stored passage vectors in ``unit_ids`` order (read from LanceDB once)."""
        if self._matrix is None:
            if not self.unit_ids:
                self._matrix = np.zeros((0, self.manifest.dim), dtype=np.float32)
            else:
                try:
                    table = self.table.search().select(["passage_id", "vector"]).limit(len(self.unit_ids)).to_arrow()
                except Exception as exc:  # a data file of the table truncated or deleted
                    raise unreadable_index(self.folder, f"{TABLE}.lance", exc) from None
                flat = table.column("vector").combine_chunks().flatten().to_numpy()
                matrix = flat.reshape(table.num_rows, -1)
                ids = table.column("passage_id").to_pylist()
                if ids != self.unit_ids:  # scan order is write order for an index written once; reorder otherwise
                    row = {c: i for i, c in enumerate(ids)}
                    matrix = matrix[[row[c] for c in self.unit_ids]]
                self._matrix = np.ascontiguousarray(matrix, dtype=np.float32)
        return self._matrix

    def retriever(self, embedder: Embedder | None, rrf_k: int = 60) -> Retriever:
        """An in-memory ``Retriever`` over the index's passages with its stored vectors (no re-embedding)."""
        rows = self.table.search().select(["passage_id", "context", "text"]).limit(max(1, len(self.unit_ids))).to_arrow()
        texts = dict(zip(rows.column("passage_id").to_pylist(), indexed_texts(rows)))
        return Retriever(self.unit_ids, [texts[c] for c in self.unit_ids], embedder, rrf_k=rrf_k,
                         passage_vectors=self.vectors())

    def size_bytes(self) -> int:
        """Bytes on disk (vectors, metadata, BM25, manifest)."""
        return folder_bytes(self.folder)
