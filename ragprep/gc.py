"""``ragprep gc``: reclaim the per-document parts and the images nothing refers to any more.

A document that leaves the input folders (or is extracted again under other settings) keeps its
``parts/<doc_id>-<fingerprint>/`` folder, its ``parts/quotes/<doc_id>-*.parquet`` and its content-addressed
images under ``images/``: ingest never deletes them, so a document that comes back is reused for free.
``ragprep gc`` removes them once they are garbage:

- a part folder whose ``<doc_id>-<fingerprint>`` is not an ``ok``/``partial`` document of the working
  ``documents`` table (a ``removed`` row keeps no part);
- a quotes part whose document is not in that table;
- an image that no row refers to: neither the working ``elements``/``quotes`` tables nor any committed dataset
  version (published or rejected) names it, so a version's images stay readable.

It holds the root's build lock (no build runs meanwhile), refuses to run before a first ingest (no
``documents`` table) or when a version cannot be read (nothing is removed then), and ``--dry-run`` only lists.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow.parquet as pq

from ragprep.buildlock import build_lock
from ragprep.dataset_store import open_store
from ragprep.errors import RagprepError
from ragprep.settings import Settings
from ragprep.storage import Layout

LIVE_STATUSES = ("ok", "partial")
"""Documents whose part is in use; ``removed``, ``failed`` and ``duplicate`` rows have none."""

IMAGE_COLUMNS = {"elements": "image_path", "quotes": "img_path"}
"""The columns that name an image file (root-relative)."""


@dataclass
class GcReport:
    """What ``gc`` found (and removed unless ``dry_run``)."""

    parts: list[Path] = field(default_factory=list)
    images: list[Path] = field(default_factory=list)
    bytes: int = 0
    dry_run: bool = False


def _size(path: Path) -> int:
    if path.is_dir():
        return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())
    return path.stat().st_size


def _working_column(layout: Layout, table: str, column: str) -> set[str]:
    path = layout.table_path(table)
    if not path.exists():
        return set()
    return {v for v in pq.read_table(path, columns=[column]).column(column).to_pylist() if v}


def referenced_images(settings: Settings) -> set[str]:
    """Root-relative image paths named by the working tables or by any committed dataset version."""
    layout = Layout(settings.root)
    names = set()
    for table, column in IMAGE_COLUMNS.items():
        names |= _working_column(layout, table, column)
    store = open_store(settings.root, settings.dataset_uri)
    for version in store.versions():
        for table, column in IMAGE_COLUMNS.items():
            try:
                rows = store.read_table(version, table)
            except Exception as exc:  # a damaged version: keep every image rather than guess
                raise RagprepError(f"gc: cannot read {table} of dataset version {version.version_id} ({exc}); nothing "
                                   "removed; check it with `ragprep versions --verify`") from None
            if rows is not None and column in rows.column_names:
                names |= {v for v in rows.column(column).to_pylist() if v}
    return names


def garbage(settings: Settings) -> tuple[list[Path], list[Path]]:
    """(part folders and quote parts, image files) that nothing refers to."""
    layout = Layout(settings.root)
    documents = layout.table_path("documents")
    if not documents.exists():
        raise RagprepError(f"gc: no documents table in {layout.tables_dir}; run `ragprep ingest` first (nothing removed)")
    rows = [r for r in pq.read_table(documents, columns=["doc_id", "settings_fingerprint", "status"]).to_pylist()
            if r["status"] in LIVE_STATUSES]
    live_parts = {f"{r['doc_id']}-{r['settings_fingerprint']}" for r in rows}
    live_docs = {r["doc_id"] for r in rows}
    parts: list[Path] = []
    if layout.parts_dir.is_dir():
        for entry in sorted(layout.parts_dir.iterdir()):
            if entry.is_dir() and not entry.name.startswith(".") and entry.name != "quotes" and entry.name not in live_parts:
                parts.append(entry)
        quotes = layout.parts_dir / "quotes"
        if quotes.is_dir():
            parts += [p for p in sorted(quotes.glob("*.parquet")) if p.stem.rsplit("-", 1)[0] not in live_docs]
    keep = referenced_images(settings)
    images = [p for p in sorted(layout.images_dir.rglob("*")) if p.is_file()
              and p.relative_to(settings.root).as_posix() not in keep] if layout.images_dir.is_dir() else []
    return parts, images


def collect_garbage(settings: Settings, dry_run: bool = False) -> GcReport:
    """Find (and unless ``dry_run`` remove) the unreferenced parts and images, under the root's build lock."""
    with build_lock(settings.root, "gc"):
        parts, images = garbage(settings)
        report = GcReport(parts=parts, images=images, bytes=sum(_size(p) for p in [*parts, *images]), dry_run=dry_run)
        if not dry_run:
            for path in [*parts, *images]:
                if path.is_dir():
                    shutil.rmtree(path)
                else:
                    path.unlink()
    return report
