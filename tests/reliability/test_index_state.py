"""The search index is as safe as the tables (issues 24 and 27): a truncated, deleted or garbage index file is one
line naming ``ragprep index`` (exit 2) on ``search`` and ``ask``, a rebuild repairs it, and ``kill -9`` during
``index`` leaves the previous index answering (the next build sweeps what the killed one left)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from ragprep.settings import Settings
from ragprep.storage import Layout, exchange_paths
from tasks.dataset.versions import build_version
from tasks.index.run import run_index
from tasks.index.store import SearchIndex, index_folder
from tests.conftest import REPO, SAMPLE_DOCS, copy_root, ingest_into
from tests.reliability.faults import kill_at_marker

RAGPREP = str(Path(sys.executable).with_name("ragprep"))


@pytest.fixture(scope="module")
def indexed(tmp_path_factory, seed_embeddings):
    """Two sample decks published and indexed; the embeddings cache seeded (``seed_embeddings``), then pruned to what
    the index asked for."""
    root = tmp_path_factory.mktemp("index-state") / "root"
    settings = ingest_into(root, [SAMPLE_DOCS / "crash_report_side_pole.pptx", SAMPLE_DOCS / "meeting_notes_weekly_safety.pptx"])
    assert build_version(settings).published
    with seed_embeddings(Layout(root).embeddings_cache_dir, prune=True):
        run_index(settings)
    return root


def _cli(root: Path, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAGPREP_")} | {"PYTHONPATH": str(REPO)}
    return subprocess.run([RAGPREP, *args, "--root", str(root)], capture_output=True, text=True, env=env, cwd=REPO,
                          timeout=300)


def _lance_data_file(folder: Path) -> Path:
    return max((folder / "chunks.lance" / "data").glob("*.lance"), key=lambda p: p.stat().st_size)


DAMAGE = {
    "manifest truncated": lambda f: (f / "manifest.json").write_text((f / "manifest.json").read_text()[:40]),
    "unit ids deleted": lambda f: (f / "unit_ids.json").unlink(),
    "bm25 garbage": lambda f: [p.write_bytes(b"\x00garbage" * 8) for p in (f / "bm25").iterdir() if p.is_file()],
    "lance data deleted": lambda f: _lance_data_file(f).unlink(),
    "lance data truncated": lambda f: _lance_data_file(f).write_bytes(_lance_data_file(f).read_bytes()[:100]),
    "lance table deleted": lambda f: __import__("shutil").rmtree(f / "chunks.lance"),
}


@pytest.mark.parametrize("damage", sorted(DAMAGE))
def test_damaged_index_is_one_line_naming_ragprep_index(indexed, tmp_path, damage):
    root = copy_root(indexed, tmp_path)
    folder = index_folder(Settings(root=root), "v1")
    DAMAGE[damage](folder)
    commands = [("search", "pulse", "--mode", "hybrid")]
    if damage in ("lance data truncated", "unit ids deleted"):  # ask opens the index the same way: two cases suffice
        commands.append(("ask", "What is the peak pulse?"))
    for args in commands:
        proc = _cli(root, *args)
        assert proc.returncode == 2, (damage, args, proc.stdout[-1500:], proc.stderr[-3000:])
        lines = [line for line in proc.stderr.strip().splitlines() if not line.startswith("warning:")]
        assert len(lines) == 1 and "Traceback" not in proc.stderr, (damage, proc.stderr[-3000:])
        assert lines[0].startswith("error: the search index in ") and "rebuild it with `ragprep index`" in lines[0], lines
    run_index(Settings(root=root))  # the repair the message names
    proc = _cli(root, "search", "pulse", "--mode", "bm25")
    assert proc.returncode == 0, proc.stderr[-2000:]


KILLED_BUILD = """
import sys, time
from pathlib import Path
from ragprep.settings import Settings
from ragprep.storage import exchange_paths
from tasks.index import store
from tasks.index.run import run_index

def stalled_swap(staging, target):  # the new index is written: stop right before it replaces the old one
    Path(sys.argv[2]).write_text(str(staging))
    time.sleep(600)

store._swap = stalled_swap
run_index(Settings(root=Path(sys.argv[1])), variant="v1")
"""


def test_kill_9_during_index_leaves_the_previous_index_answering(indexed, tmp_path):
    root = copy_root(indexed, tmp_path)
    settings = Settings(root=root)
    folder = index_folder(settings, "v1")
    before = [h.chunk_id for h in SearchIndex.open(folder).search("pulse", 5, "bm25")]
    marker = tmp_path / "staged"
    assert kill_at_marker(KILLED_BUILD, [str(root), str(marker)], marker, 240), "the build never reached the swap"
    staging = Path(marker.read_text())
    assert staging.is_dir()  # the killed build's new index, never swapped in
    assert [h.chunk_id for h in SearchIndex.open(folder).search("pulse", 5, "bm25")] == before
    proc = _cli(root, "search", "pulse", "--mode", "bm25")
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr[-2000:]
    run_index(settings)  # the next build sweeps the leftover
    assert not staging.exists() and not list(folder.parent.glob(".staging-*"))
    assert [h.chunk_id for h in SearchIndex.open(folder).search("pulse", 5, "bm25")] == before


def test_swap_is_one_atomic_exchange_and_an_interrupted_fallback_is_repaired(indexed, tmp_path):
    from tasks.index import store

    root = copy_root(indexed, tmp_path)
    folder = index_folder(Settings(root=root), "v1")
    before = [h.chunk_id for h in SearchIndex.open(folder).search("pulse", 5, "bm25")]
    staging = folder.with_name(".staging-v1-test")
    (staging / "marker").parent.mkdir()
    (staging / "marker").write_text("new")
    assert exchange_paths(staging, folder)  # Linux: renameat2(RENAME_EXCHANGE)
    assert (folder / "marker").exists() and (staging / "manifest.json").exists()
    assert exchange_paths(staging, folder)  # and back
    # the two-rename fallback killed between its renames: the old index aside, no index in place
    aside = folder.with_name(".old-v1-deadbeef")
    os.replace(folder, aside)
    store._sweep_leftovers(folder)  # what the next build does first, under the lock
    assert not aside.exists() and not staging.exists()
    assert [h.chunk_id for h in SearchIndex.open(folder).search("pulse", 5, "bm25")] == before
