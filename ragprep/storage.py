"""Where ragprep's files live under the root, and how they are written.

Layout under ``root``::

    images/ab/abcdef....png      content-addressed pictures and crops
    cache/ocr/<key>.json         OCR results keyed by image hash + languages + engine
    parts/<doc_id>-<fp>/         per-document Parquet parts (elements, chunks, document)
    tables/<name>.parquet        the assembled tables queried by ``ragprep sql``

Every file is written to a temporary name in the same directory and renamed into
place, so a crash never leaves a half-written file behind.
"""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from ragprep.ids import sha256_bytes

TABLE_NAMES = ("documents", "elements", "chunks", "headers")


def atomic_write_bytes(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def atomic_write_parquet(table: pa.Table, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.close(fd)
    try:
        pq.write_table(table, tmp, compression="zstd")
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


@dataclass(frozen=True)
class StoredImage:
    rel_path: str
    sha256: str


@dataclass(frozen=True)
class Layout:
    """Paths under one ragprep root."""

    root: Path

    @property
    def images_dir(self) -> Path:
        return self.root / "images"

    @property
    def ocr_cache_dir(self) -> Path:
        return self.root / "cache" / "ocr"

    @property
    def parts_dir(self) -> Path:
        return self.root / "parts"

    @property
    def tables_dir(self) -> Path:
        return self.root / "tables"

    def part_dir(self, doc_id: str, fingerprint: str) -> Path:
        return self.parts_dir / f"{doc_id}-{fingerprint}"

    def table_path(self, name: str) -> Path:
        return self.tables_dir / f"{name}.parquet"

    def save_image(self, data: bytes, ext: str) -> StoredImage:
        """Store image bytes once under their SHA-256; return the root-relative path."""
        digest = sha256_bytes(data)
        ext = ext.lower().lstrip(".") or "bin"
        rel = Path("images") / digest[:2] / f"{digest}.{ext}"
        target = self.root / rel
        if not target.exists():
            atomic_write_bytes(target, data)
        return StoredImage(rel_path=rel.as_posix(), sha256=digest)

    def write_json(self, path: Path, payload: object) -> None:
        atomic_write_bytes(path, json.dumps(payload, ensure_ascii=False, indent=2, sort_keys=True).encode("utf-8"))
