"""A dataset version read into memory for the downstream stages (evaluate, export train, train).

The downstream stages never read the working tables: they read one committed version (the
latest published one unless named), whose tables carry the ``split`` column the dataset stage
assigned. A :class:`Snapshot` holds what they need of it: every chunk with both header
variants of its text (``markdown_v0``, the paper's Ver.0, and ``markdown_v1`` = report header +
Ver.0, the paper's Ver.1), its document's type and file name, and every approved QA pair with
its split, document type and target modality.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from ragprep.dataset_store import DatasetStore, StoredVersion
from ragprep.errors import RagprepError
from ragprep.settings import Settings
from tasks.dataset.versions import dataset_store, find_version, read_version_table

TEXT_VARIANTS = ("v0", "v1")
"""``v0``: the chunk's corrected Markdown without the report header (Ver.0); ``v1``: with it (Ver.1)."""


class SnapshotError(RagprepError):
    """A version that lacks what a downstream stage needs; the message says what to run."""


@dataclass(frozen=True)
class ChunkRecord:
    """One chunk of a version, with both header variants of its text."""

    chunk_id: str
    doc_id: str
    source_path: str
    title: str
    split: str
    doc_type: str
    text_v0: str
    text_v1: str
    location: str = ""
    """``slide 3``, ``page 12`` or ``pages 12-15``."""

    def text(self, variant: str) -> str:
        """The chunk's text in ``variant`` (``v0`` or ``v1``)."""
        return self.text_v1 if variant == "v1" else self.text_v0

    @property
    def file_name(self) -> str:
        """The source document's file name (``deck.pptx``)."""
        return Path(self.source_path).name


@dataclass(frozen=True)
class QuestionRecord:
    """One approved QA pair of a version; its gold chunk is ``chunk_id``."""

    qa_id: str
    chunk_id: str
    doc_id: str
    question: str
    answer: str
    split: str
    doc_type: str
    target_modality: str
    question_type: str
    language: str


@dataclass(frozen=True)
class Snapshot:
    """What the downstream stages read of one dataset version."""

    version_id: str
    location: str
    chunks: tuple[ChunkRecord, ...]
    questions: tuple[QuestionRecord, ...]

    def chunks_in(self, splits: Iterable[str] | None = None) -> list[ChunkRecord]:
        """The chunks of the given splits (every chunk when None), in version order."""
        wanted = None if splits is None else set(splits)
        return [c for c in self.chunks if wanted is None or c.split in wanted]

    def questions_in(self, splits: Iterable[str]) -> list[QuestionRecord]:
        """The approved QA pairs of the given splits whose gold chunk is in the version."""
        wanted = set(splits)
        return [q for q in self.questions if q.split in wanted and q.chunk_id in self.chunk_index]

    def chunk(self, chunk_id: str) -> ChunkRecord:
        """The chunk with this id."""
        return self.chunk_index[chunk_id]

    @cached_property
    def chunk_index(self) -> dict[str, ChunkRecord]:
        """Chunk id -> chunk."""
        return {c.chunk_id: c for c in self.chunks}

    def split_counts(self) -> dict[str, dict[str, int]]:
        """Chunks and QA pairs per split."""
        out: dict[str, dict[str, int]] = {"chunks": {}, "questions": {}}
        for c in self.chunks:
            out["chunks"][c.split] = out["chunks"].get(c.split, 0) + 1
        for q in self.questions:
            out["questions"][q.split] = out["questions"].get(q.split, 0) + 1
        return out


def _location(row: dict) -> str:
    if row.get("slide") is not None:
        return f"slide {row['slide']}"
    first, last = row.get("page_start"), row.get("page_end")
    if first is None:
        return ""
    return f"page {first}" if last in (None, first) else f"pages {first}-{last}"


def _chunk_records(rows: list[dict], doc_types: dict[str, str]) -> tuple[ChunkRecord, ...]:
    out = []
    for row in sorted(rows, key=lambda r: r["chunk_id"]):
        v0 = row.get("markdown_v0") or row["markdown"]
        v1 = row.get("markdown_v1") or v0
        out.append(ChunkRecord(
            chunk_id=row["chunk_id"], doc_id=row["doc_id"], source_path=row["source_path"], title=row.get("title") or "",
            split=row.get("split") or "unassigned", doc_type=doc_types.get(row["doc_id"], "other"), text_v0=v0, text_v1=v1,
            location=_location(row),
        ))
    return tuple(out)


def _question_records(rows: list[dict], doc_types: dict[str, str]) -> tuple[QuestionRecord, ...]:
    out = []
    for row in sorted(rows, key=lambda r: r["qa_id"]):
        if row.get("status", "approved") != "approved":
            continue
        out.append(QuestionRecord(
            qa_id=row["qa_id"], chunk_id=row["chunk_id"], doc_id=row["doc_id"], question=row["question"], answer=row["answer"],
            split=row.get("split") or "unassigned", doc_type=doc_types.get(row["doc_id"], "other"),
            target_modality=row.get("target_modality") or "text", question_type=row.get("question_type") or "factual",
            language=row.get("language") or "other",
        ))
    return tuple(out)


def read_snapshot(store: DatasetStore, version: StoredVersion) -> Snapshot:
    """The chunks and approved QA pairs of a committed version."""
    chunks = read_version_table(store, version, "chunks")
    if chunks is None:
        raise SnapshotError(f"dataset version {version.version_id} has no chunks table")
    documents = read_version_table(store, version, "documents")
    doc_types = {}
    if documents is not None:
        doc_types = dict(zip(documents.column("doc_id").to_pylist(), documents.column("doc_type").to_pylist()))
    qa = read_version_table(store, version, "qa_pairs")
    return Snapshot(
        version_id=version.version_id,
        location=version.location,
        chunks=_chunk_records(chunks.to_pylist(), doc_types),
        questions=_question_records(qa.to_pylist() if qa is not None else [], doc_types),
    )


def load_snapshot(settings: Settings, version: str | None = None) -> Snapshot:
    """The snapshot of ``version`` (the latest published one when None) of the settings' dataset store."""
    store = dataset_store(settings)
    try:
        found = find_version(store, version)
    except FileNotFoundError as exc:
        raise SnapshotError(str(exc)) from exc
    return read_snapshot(store, found)
