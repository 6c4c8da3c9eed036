"""Issue 15, broken state: corrupt caches are misses, a full disk is one line and leaves the working
tables as they were, versions are verified against their manifests, a missing LATEST is reported,
the working tables stay queryable, and what killed runs left is swept by the next build.

One root (two small decks, one published version) is prepared per module and copied per test."""

from __future__ import annotations

import errno
import io
import json
import logging
import os
import shutil
import socket
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from ragprep.cli import app
from ragprep.dataset_store import open_store
from ragprep.engines.embedders import CachedEmbedder, PassageCache
from ragprep.settings import Settings
from ragprep.storage import PROCESS_STARTED, DiskFullError, Layout, atomic_write_bytes
from ragprep.tables import TableStore
from tasks.dataset.versions import (
    LatestMissingError,
    assemble_version_tables,
    build_version,
    catalog_lock,
    dataset_store,
    find_version,
    version_id_for,
)
from tasks.enrich.run import run_correct
from tasks.ingest.run import assemble_tables, discover, ingest_document
from tests.conftest import SAMPLE_DOCS, copy_root, ingest_into, needs_tesseract

DECKS = [SAMPLE_DOCS / "crash_report_side_pole.pptx", SAMPLE_DOCS / "meeting_notes_ko_design_review.pptx"]
LONG_AGO = PROCESS_STARTED - 3600


@pytest.fixture(scope="module")
def prepared(tmp_path_factory):
    """Two decks ingested and one version published: (root, version id)."""
    root = tmp_path_factory.mktemp("state") / "root"
    settings = ingest_into(root, DECKS)
    return root, build_version(settings).version_id


@pytest.fixture
def root(prepared, tmp_path):
    return copy_root(prepared[0], tmp_path)


def settings_of(root: Path) -> Settings:
    """The settings the prepared root was built with (OCR off: part of the version id)."""
    return Settings(root=root, ocr={"enabled": False})


def cli(*args: str):
    return CliRunner().invoke(app, list(args), catch_exceptions=False)


def warnings_in(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING and r.name.startswith("ragprep")]


# -- corrupt caches are misses ---------------------------------------------------------------------


CORRUPTIONS = {
    "truncated": lambda data: data[: len(data) // 2],
    "garbage": lambda data: b"\x00\xffnot a cache entry\x13" * 7,
    "wrong_shape": lambda data: b'["a", "list", "not", "an", "object"]',
}


def test_corrupt_llm_reply_cache_entries_are_misses_asked_again_and_replaced(root, server, caplog):
    settings = Settings(root=root, llm={"provider": "openai", "model": "local-llm", "base_url": server.openai_base_url})
    run_correct(settings)
    clean = pq.read_table(Layout(root).table_path("chunks")).to_pylist()
    calls = server.request_count
    entries = sorted(p for p in Layout(root).llm_cache_dir.rglob("*.json") if p.name != "modes.json")
    assert len(entries) >= 3
    broken = dict(zip(CORRUPTIONS, entries))
    for kind, path in broken.items():
        path.write_bytes(CORRUPTIONS[kind](path.read_bytes()))

    with caplog.at_level(logging.WARNING):
        run_correct(settings)
    assert pq.read_table(Layout(root).table_path("chunks")).to_pylist() == clean, "the same output as the clean run"
    assert server.request_count == calls + len(broken), "exactly the unreadable entries were asked again"
    for path in broken.values():
        reply = json.loads(path.read_text())
        assert isinstance(reply, dict) and isinstance(reply["text"], str), f"{path} replaced by a valid entry"
        assert any(str(path) in line for line in warnings_in(caplog)), f"a warning names {path}"


@needs_tesseract
def test_corrupt_ocr_cache_entry_is_a_miss_recomputed_and_replaced(tmp_path, caplog):
    from PIL import Image, ImageDraw

    from ragprep.engines.ocr import TesseractOcr

    picture = Image.new("RGB", (900, 160), "white")
    ImageDraw.Draw(picture).text((20, 40), "CRASH TEST 412", fill="black", font_size=72)
    buffer = io.BytesIO()
    picture.save(buffer, format="PNG")
    engine = TesseractOcr("eng", 30.0, tmp_path / "cache" / "ocr")
    clean = engine.recognize(buffer.getvalue())
    assert "412" in clean.text
    (entry,) = (tmp_path / "cache" / "ocr").rglob("*.json")
    for kind, corrupt in CORRUPTIONS.items():
        entry.write_bytes(corrupt(entry.read_bytes()))
        caplog.clear()
        with caplog.at_level(logging.WARNING):
            assert engine.recognize(buffer.getvalue()) == clean, kind
        assert json.loads(entry.read_text())["text"] == clean.text, f"{kind}: replaced by a valid entry"
        assert any(str(entry) in line for line in warnings_in(caplog)), kind


class CountingEmbedder:
    """A deterministic stand-in model: vectors from the text's bytes, every call counted."""

    name = "counting"
    dim = 8

    def __init__(self) -> None:
        self.embedded = 0

    def passages(self, texts):
        self.embedded += len(texts)
        return np.array([[(len(t) + i * b) % 7 for i, b in enumerate(t.encode()[:8].ljust(8, b"x"))] for t in texts],
                        dtype=np.float32)

    def queries(self, texts):
        return self.passages(texts)


EMBEDDING_CORRUPTIONS = {
    **CORRUPTIONS,
    "wrong_shape": lambda data: _npz(keys=np.array(["a", "b"]), vectors=np.zeros(5, dtype=np.float32)),
    "wrong_dimension": lambda data: _npz(keys=np.array(["a"]), vectors=np.zeros((1, 3), dtype=np.float32)),
}


def _npz(**arrays) -> bytes:
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)
    return buffer.getvalue()


@pytest.mark.parametrize("kind", sorted(EMBEDDING_CORRUPTIONS))
def test_corrupt_embeddings_cache_is_a_miss_recomputed_and_replaced(tmp_path, caplog, kind):
    texts = ["first passage", "second passage", "third one"]
    path = tmp_path / "cache" / "embeddings" / "counting.npz"
    model = CountingEmbedder()
    clean = CachedEmbedder(model, PassageCache(path)).passages(texts)
    path.write_bytes(EMBEDDING_CORRUPTIONS[kind](path.read_bytes()))

    with caplog.at_level(logging.WARNING):
        again = CachedEmbedder(model, PassageCache(path)).passages(texts)
    assert np.array_equal(again, clean) and model.embedded == 2 * len(texts), "recomputed, the same vectors"
    assert any(str(path) in line for line in warnings_in(caplog))
    with np.load(path) as data:  # replaced by a valid cache: the next run embeds nothing
        assert sorted(data["keys"].tolist()) and data["vectors"].shape == (3, CountingEmbedder.dim)
    CachedEmbedder(model, PassageCache(path)).passages(texts)
    assert model.embedded == 2 * len(texts)


# -- disk full -------------------------------------------------------------------------------------


def _table_bytes(root: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted((root / "tables").iterdir())}


def test_disk_full_mid_assembly_leaves_the_previous_tables_and_is_one_line(root, monkeypatch):
    settings = Settings(root=root, ocr={"enabled": False})
    outcomes = [ingest_document(ref, settings, None) for ref in discover(DECKS[:1], settings)]  # a different set
    before = _table_bytes(root)
    real_write = pq.write_table
    written = []

    def fills_up(table, where, **kwargs):
        if written:  # the first table fits, the second fills the disk
            raise OSError(errno.ENOSPC, "No space left on device")
        written.append(where)
        return real_write(table, where, **kwargs)

    monkeypatch.setattr(pq, "write_table", fills_up)
    with pytest.raises(DiskFullError) as caught:
        assemble_tables(outcomes, settings, datetime.now(timezone.utc))
    message = str(caught.value)
    assert "\n" not in message and message.startswith("no space left on device writing ")
    assert str(root / "tables") in message and "--root" in message
    assert "Errno" not in message
    monkeypatch.undo()
    assert written, "one table was written before the disk filled"
    assert _table_bytes(root) == before, "the previous set of working tables is intact, no temporaries are left"


@pytest.fixture
def small_tmpfs(tmp_path):
    """A 1 MiB tmpfs (mounting needs root: skipped elsewhere), unmounted afterwards."""
    mount = tmp_path / "tmpfs"
    mount.mkdir()
    made = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mount)], capture_output=True, text=True)
    if made.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here ({made.stderr.strip()}); the simulated ENOSPC tests cover it")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "--lazy", str(mount)], check=True)  # lazy: a failed writer's handle may linger until collected


def test_a_really_full_disk_keeps_the_previous_tables(root, small_tmpfs):
    full_root = small_tmpfs / "root"
    shutil.copytree(root / "tables", full_root / "tables")
    before = _table_bytes(full_root)
    filler = small_tmpfs / "filler"
    with open(filler, "wb") as out:  # leave about 8 KiB: less than the next set of tables needs
        try:
            while shutil.disk_usage(small_tmpfs).free > 8192:
                out.write(b"\0" * 4096)
                out.flush()
        except OSError:
            pass
    settings = Settings(root=root, ocr={"enabled": False})
    outcomes = [ingest_document(ref, settings, None) for ref in discover(DECKS, settings)]
    with pytest.raises(DiskFullError) as caught:
        assemble_tables(outcomes, Settings(root=full_root, ocr={"enabled": False}), datetime.now(timezone.utc))
    assert str(caught.value).startswith(f"no space left on device writing {full_root / 'tables'}/")
    assert _table_bytes(full_root) == before, "the previous tables are intact and no temporary file is left"


def test_disk_full_on_a_cli_write_is_one_line_not_a_traceback(root, prepared, monkeypatch):
    latest = root / "datasets" / "LATEST"
    before = latest.read_bytes()

    def full(self, data):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(Path, "write_bytes", full)
    result = cli("versions", "--root", str(root), "--set-latest", prepared[1])
    monkeypatch.undo()
    assert result.exit_code == 2
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and "no space left on device writing" in lines[0] and "LATEST" in lines[0], result.output
    assert "Traceback" not in result.output and "Errno 28" not in result.output
    assert latest.read_bytes() == before
    assert not [p for p in latest.parent.iterdir() if p.name.endswith(".tmp")]


def test_a_full_disk_outside_ragprep_writers_is_one_line_at_the_cli(capsys):
    import typer

    from ragprep.cli.common import user_errors, widen_for_pipes

    widen_for_pipes()  # what every command does first: whole lines on a pipe
    def library_write():  # Prefect's database, a library's own file: a raw OSError
        raise OSError(errno.ENOSPC, "No space left on device", "/data/root/.prefect/prefect.db")

    with pytest.raises(typer.Exit) as caught:
        user_errors(library_write)()
    assert caught.value.exit_code == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert lines == ["error: no space left on device writing /data/root/.prefect/prefect.db; free space on the disk "
                     "holding /data/root/.prefect or point --root (RAGPREP_ROOT) elsewhere, then run again"]


def test_atomic_write_translates_quota_exceeded(tmp_path, monkeypatch):
    target = tmp_path / "x.json"
    atomic_write_bytes(target, b"old")
    monkeypatch.setattr(Path, "write_bytes", lambda self, data: (_ for _ in ()).throw(OSError(errno.EDQUOT, "quota")))
    with pytest.raises(DiskFullError, match=f"disk quota exceeded writing {target}"):
        atomic_write_bytes(target, b"new")
    monkeypatch.undo()
    assert target.read_bytes() == b"old" and [p.name for p in tmp_path.iterdir()] == ["x.json"]


# -- versions --verify and corrupt versions --------------------------------------------------------


def test_versions_verify_names_missing_truncated_changed_and_unexpected_files(root, prepared):
    version = prepared[1]
    folder = root / "datasets" / "versions" / version
    manifest = json.loads((folder / "manifest.json").read_text())
    files = manifest["files"]
    assert set(files) == {p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file()} - {"manifest.json"}
    assert all(len(f["sha256"]) == 64 and f["size"] == (folder / name).stat().st_size for name, f in files.items())
    settings = settings_of(root)
    assert version == version_id_for(assemble_version_tables(Layout(root), settings), settings), \
        "the recorded files do not enter the version id"

    ok = cli("versions", "--verify", "--root", str(root))
    assert ok.exit_code == 0 and f"{version}: ok, {len(files)} files match the manifest" in ok.output

    chunks = sorted(n for n in files if n.startswith("chunks/"))
    (folder / chunks[0]).write_bytes((folder / chunks[0]).read_bytes()[:100])
    (folder / chunks[1]).unlink()
    changed = bytearray((folder / chunks[2]).read_bytes())
    changed[len(changed) // 2] ^= 0xFF
    (folder / chunks[2]).write_bytes(bytes(changed))
    (folder / "chunks" / "extra.parquet").write_bytes(b"PAR1")
    bad = cli("versions", "--verify", "--version", version, "--root", str(root))
    assert bad.exit_code == 1
    assert f"truncated: {folder / chunks[0]} (100 of {files[chunks[0]]['size']} bytes)" in bad.output
    assert f"missing: {folder / chunks[1]}" in bad.output
    assert f"changed: {folder / chunks[2]}" in bad.output
    assert f"unexpected: {folder / 'chunks' / 'extra.parquet'}" in bad.output
    assert "4 of" in bad.output

    query = cli("sql", "select count(*) from chunks", "--root", str(root))
    assert query.exit_code == 2
    lines = [line for line in query.output.splitlines() if line.strip()]
    assert len(lines) == 1 and str(folder / "chunks") in lines[0] and "--verify" in lines[0], query.output
    compared = cli("diff", version, version, "--root", str(root))
    assert compared.exit_code == 2 and len(compared.output.strip().splitlines()) == 1, compared.output
    assert str(folder / "chunks") in compared.output
    store = dataset_store(settings)
    with pytest.raises(Exception) as caught:  # the downstream readers (snapshot, index, export) read through the store
        store.read_table(find_version(store, None), "chunks")
    assert type(caught.value).__name__ == "CorruptVersionError" and "\n" not in str(caught.value)
    assert str(folder / "chunks") in str(caught.value)


def test_versions_published_before_checksums_say_so(root, prepared):
    manifest_path = root / "datasets" / "versions" / prepared[1] / "manifest.json"
    manifest = json.loads(manifest_path.read_text())
    del manifest["files"]
    manifest_path.write_text(json.dumps(manifest))
    result = cli("versions", "--verify", "--root", str(root))
    assert result.exit_code == 0
    assert f"{prepared[1]}: no checksums recorded (published by an older ragprep)" in result.output


# -- LATEST missing or dangling --------------------------------------------------------------------


def test_missing_latest_is_reported_by_versions_sql_and_readers_and_can_be_restored(root, prepared):
    version = prepared[1]
    latest = root / "datasets" / "LATEST"
    latest.unlink()
    expected = (f"{latest} is missing but 1 published version exists; newest published is {version}; "
                f"restore with `ragprep versions --set-latest {version}`")

    listed = cli("versions", "--root", str(root))
    assert listed.exit_code == 0 and expected in " ".join(listed.output.split())
    assert "[LATEST]" not in listed.output
    query = cli("sql", "select count(*) as n from chunks", "--root", str(root), "-f", "json")
    assert query.exit_code == 0 and expected in " ".join(query.output.split())
    assert "reads the working tables" in query.output
    with pytest.raises(LatestMissingError, match="restore with `ragprep versions --set-latest"):
        find_version(dataset_store(settings_of(root)), None)

    latest.write_text("0123456789abcdef")  # dangling: names no committed version
    dangling = cli("versions", "--root", str(root))
    assert "names 0123456789abcdef, which is not a committed published version" in " ".join(dangling.output.split())

    restored = cli("versions", "--root", str(root), "--set-latest", version)
    assert restored.exit_code == 0 and latest.read_text() == version and "[LATEST]" in restored.output
    assert "warning" not in restored.output

    latest.unlink()  # a rebuild of the same tables finds its version and points LATEST at it again
    build_version(settings_of(root))
    assert latest.read_text() == version


# -- the working tables stay queryable (issue 14) --------------------------------------------------


def test_sql_version_working_queries_the_working_tables(root):
    versioned = cli("sql", "select * from chunks limit 1", "--root", str(root), "-f", "json")
    working = cli("sql", "select * from chunks limit 1", "--root", str(root), "--version", "working", "-f", "json")
    assert versioned.exit_code == 0 and working.exit_code == 0, working.output
    assert "split" in json.loads(versioned.stdout)[0]
    assert "split" not in json.loads(working.stdout)[0], "the working tables carry no split column"
    TableStore(Layout(root)).write_arrow("chunks", pq.read_table(Layout(root).table_path("chunks")).slice(0, 2))
    count = cli("sql", "select count(*) as n from chunks", "--root", str(root), "--version", "working", "-f", "json")
    assert json.loads(count.stdout) == [{"n": 2}]


# -- leftovers of killed runs ----------------------------------------------------------------------


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def _aged(path: Path) -> Path:
    os.utime(path, (LONG_AGO, LONG_AGO))
    return path


def _leftovers(root: Path) -> list[Path]:
    found = list((root / "datasets").glob(".staging-*"))
    found += [p for p in (root / "parts").iterdir() if p.name.startswith(".")]
    found += [p for p in root.rglob(".*.tmp")]
    return sorted(found)


def test_leftovers_of_killed_runs_are_swept_by_the_next_build(root):
    datasets, host = root / "datasets", socket.gethostname()
    old_format = datasets / ".staging-k1ll3d00"
    dead = datasets / f".staging-{_dead_pid()}@{host}-abcd1234"
    live = datasets / f".staging-{os.getpid()}@{host}-efgh5678"  # a build in progress: kept
    for folder in (old_format, dead, live):
        (folder / "chunks").mkdir(parents=True)
        (folder / "chunks" / "train.parquet").write_bytes(b"half")
    _aged(old_format)
    part = root / "parts" / ".somedoc-fingerprint.x1y2z3"
    part.mkdir()
    (part / "elements.parquet").write_bytes(b"half")
    _aged(part)
    stale_tmp = [root / "tables" / ".chunks.parquet.abc123.tmp", root / "cache" / "llm" / ".x.json.q9.tmp"]
    for path in stale_tmp:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"half")
        _aged(path)
    fresh_tmp = root / "tables" / ".documents.parquet.new999.tmp"  # written after this process started: not ours to judge
    time.sleep(0.01)
    fresh_tmp.write_bytes(b"being written")

    with catalog_lock(root):  # another build holds the catalog: its staging folders are not judged
        build_version(settings_of(root))
    assert dead.exists() and old_format.exists()
    build_version(settings_of(root))
    assert _leftovers(root) == sorted([live, fresh_tmp]), "dead runs' leftovers removed, live ones kept"
    assert not any(p.exists() for p in (old_format, dead, part, *stale_tmp))

    shutil.rmtree(live)
    fresh_tmp.unlink()
    build_version(settings_of(root))
    assert _leftovers(root) == [], "a successful rerun leaves nothing behind"
    assert open_store(root).latest() is not None
