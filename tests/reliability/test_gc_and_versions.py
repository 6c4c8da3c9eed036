"""Downstream state (issue 24): the parts and images of removed documents are reclaimed by ``ragprep gc`` (a
published version keeps its images), and ``versions`` does not list a damaged version as simply published."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq

from ragprep.gc import collect_garbage
from ragprep.settings import Settings
from tasks.dataset.versions import build_version
from tests.conftest import REPO, SAMPLE_DOCS, ingest_into

RAGPREP = str(Path(sys.executable).with_name("ragprep"))
KEPT = SAMPLE_DOCS / "meeting_notes_weekly_safety.pptx"
REMOVED = SAMPLE_DOCS / "crash_report_side_pole.pptx"


def _cli(root: Path, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAGPREP_")} | {"PYTHONPATH": str(REPO)}
    return subprocess.run([RAGPREP, *args, "--root", str(root)], capture_output=True, text=True, env=env, cwd=REPO,
                          timeout=300)


def _images(root: Path, table: str = "elements") -> set[str]:
    return {v for v in pq.read_table(root / "tables" / f"{table}.parquet", columns=["image_path"]).column(0).to_pylist() if v}


def _files(folder: Path) -> set[str]:
    return {p.relative_to(folder.parent).as_posix() for p in folder.rglob("*") if p.is_file()}


def test_gc_reclaims_parts_and_images_of_removed_documents(tmp_path):
    root = tmp_path / "root"
    ingest_into(root, [KEPT, REMOVED])
    both_parts = {p.name for p in (root / "parts").iterdir() if p.is_dir()}
    removed_images = _images(root)
    ingest_into(root, [KEPT])  # the crash report leaves the inputs
    kept_images = _images(root)
    orphan_images = removed_images - kept_images
    assert orphan_images, "the removed deck had pictures of its own"
    kept_parts = {p.name for p in (root / "parts").iterdir() if p.is_dir()}
    assert kept_parts == both_parts  # ingest keeps the removed document's part (a return would reuse it)

    proc = _cli(root, "gc", "--dry-run")
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert f"would remove 1 parts and {len(orphan_images)} images" in proc.stdout
    assert _files(root / "images") >= orphan_images  # nothing removed yet

    proc = _cli(root, "gc")
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert f"removed 1 parts and {len(orphan_images)} images" in proc.stdout
    assert _files(root / "images") == kept_images
    [part] = [p for p in (root / "parts").iterdir() if p.is_dir() and p.name != "quotes"]
    [kept] = [d for d in pq.read_table(root / "tables" / "documents.parquet").to_pylist() if d["status"] == "ok"]
    assert kept["file_name"] == KEPT.name and part.name == f"{kept['doc_id']}-{kept['settings_fingerprint']}"
    again = ingest_into(root, [KEPT])  # the kept document is still reused, its images intact
    assert _images(root) == kept_images and again is not None
    assert collect_garbage(Settings(root=root)).parts == []


def test_gc_keeps_the_images_of_dataset_versions(tmp_path):
    root = tmp_path / "root"
    settings = ingest_into(root, [KEPT, REMOVED])
    assert build_version(settings).published
    versioned = _images(root)
    ingest_into(root, [KEPT])
    report = collect_garbage(Settings(root=root))
    assert len(report.parts) == 1 and report.images == []  # the version still shows the removed deck's pictures
    assert _files(root / "images") == versioned


def test_versions_says_a_damaged_version_is_damaged(tmp_path):
    root = tmp_path / "root"
    settings = ingest_into(root, [KEPT])
    version = build_version(settings)
    assert version.published
    healthy = _cli(root, "versions")
    assert healthy.returncode == 0 and "DAMAGED" not in healthy.stdout + healthy.stderr
    chunks = sorted((Path(version.path) / "chunks").glob("*.parquet"))[0]
    chunks.write_bytes(b"\x00" * chunks.stat().st_size)  # same size, garbage: only the footer check sees it
    proc = _cli(root, "versions")
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "DAMAGED (1 files)" in proc.stdout
    assert (f"warning: version {version.version_id} is damaged: 1 files do not match its manifest; "
            f"`ragprep versions --verify --version {version.version_id}` names them") in " ".join(proc.stderr.split())
