"""Ingest against hostile and broken input (issue 15): each case gets its specific outcome, and the other
documents of the same run keep their usual rows. The fault corpus is made by ``tests/reliability/faults.py``.

Peak memory is measured in a child process, the only way to see one run's peak: its ``VmHWM`` (the high-water mark
of the child's own address space). ``ru_maxrss`` is not used where ``VmHWM`` exists: Linux carries the parent's peak
across fork and exec into it, so a child of a large pytest process reported the parent's size (859 MiB measured).
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from ragprep.engines.ocr import make_ocr_engine
from ragprep.settings import Settings
from ragprep.storage import Layout
from ragprep.tables import TableStore
from tasks.ingest.extract.archive import check_archive
from tasks.ingest.extract.base import DocumentError
from tasks.ingest.run import assemble_tables, discover, ingest_document
from tests.bad_inputs import make_bad_inputs
from tests.conftest import REPO, SAMPLE_DOCS, needs_tesseract
from tests.reliability import faults

MIB = 1 << 20
RSS_BOUND = 768 * MIB
"""Peak RSS allowed to an ingest child process. Importing PyMuPDF, pyarrow and python-pptx and ingesting
sample_docs/ peaks near 300 MiB; a 1 GiB archive member inflated even once would exceed the bound (the unguarded
bomb run peaked at 2.1 GiB), and so would a PDF backend that kept 2,000 pages' text dicts, pixmaps or Arrow rows
alive at once."""

_CHILD = """
import json, resource, sys
from datetime import datetime, timezone
from pathlib import Path
from ragprep.settings import Settings
from tasks.ingest.run import assemble_tables, discover, ingest_document
settings = Settings(root=Path(sys.argv[1]), ocr={"enabled": False})
outcomes = [ingest_document(ref, settings, None) for ref in discover([Path(p) for p in sys.argv[2:]], settings)]
run, documents = assemble_tables(outcomes, settings, datetime.now(timezone.utc))
hwm = [line for line in open("/proc/self/status") if line.startswith("VmHWM:")]
peak = int(hwm[0].split()[1]) * 1024 if hwm else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
print(json.dumps({"peak_rss": peak,
                  "documents": [d.model_dump(mode="json") for d in documents]}))
"""


def ingest_in_child(root: Path, *paths: Path) -> tuple[int, dict[str, dict]]:
    """Ingest in a fresh interpreter (OCR off): (its peak RSS in bytes, documents by file name)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAGPREP_")}
    proc = subprocess.run([sys.executable, "-c", _CHILD, str(root), *map(str, paths)], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=240)
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    return result["peak_rss"], {d["file_name"]: d for d in result["documents"]}


def ingest_here(root: Path, *paths: Path, ocr: bool = False) -> dict[str, dict]:
    """Ingest in this process: documents by file name, as written to ``documents.parquet``."""
    return ingest_here_with(root, *paths, ocr={"enabled": ocr})


def ingest_here_with(root: Path, *paths: Path, **groups: dict) -> dict[str, dict]:
    """Ingest in this process with the settings ``groups``: documents by file name, as in ``documents.parquet``."""
    settings = Settings(root=root, **groups)
    engine = make_ocr_engine(settings, Layout(root))
    outcomes = [ingest_document(ref, settings, engine) for ref in discover(list(paths), settings)]
    assemble_tables(outcomes, settings, datetime.now(timezone.utc))
    return {d["file_name"]: d for d in pq.read_table(root / "tables" / "documents.parquet").to_pylist()}


def chunk_ids_by_doc(root: Path) -> dict[str, list[str]]:
    by_doc: dict[str, list[str]] = {}
    for chunk in pq.read_table(root / "tables" / "chunks.parquet", columns=["doc_id", "chunk_id"]).to_pylist():
        by_doc.setdefault(chunk["doc_id"], []).append(chunk["chunk_id"])
    return by_doc


@pytest.fixture(scope="module")
def samples(tmp_path_factory) -> tuple[Path, dict[str, dict], dict[str, list[str]]]:
    """sample_docs/ (documents only) in a folder, ingested alone once: the rows every other run must reproduce."""
    base = tmp_path_factory.mktemp("samples")
    folder = base / "docs"
    shutil.copytree(SAMPLE_DOCS, folder, ignore=shutil.ignore_patterns("*.py", "*.md"))
    documents = ingest_here(base / "root", folder)
    assert {d["status"] for d in documents.values()} == {"ok"}
    return folder, documents, chunk_ids_by_doc(base / "root")


def assert_samples_intact(samples, documents: dict[str, dict], root: Path) -> None:
    """Every sample document is ok with exactly the chunks it gets when ingested alone."""
    _, alone, alone_chunks = samples
    chunks = chunk_ids_by_doc(root)
    for name, doc in alone.items():
        assert documents[name]["status"] == "ok", (name, documents[name]["error"], documents[name]["warnings"])
        assert documents[name]["n_chunks"] == doc["n_chunks"], name
        assert chunks[doc["doc_id"]] == alone_chunks[doc["doc_id"]], name


@pytest.mark.slow  # whole-ingest runs in bounded-memory subprocesses
def test_zip_bombs_fail_alone_in_bounded_memory(samples, tmp_path):
    folder, _, _ = samples
    bombs = tmp_path / "bombs"
    bombs.mkdir()
    faults.zip_bomb(bombs / "bomb_1gib.pptx")  # 4.6 MB on disk, a 1 GiB slide
    faults.ratio_bomb(bombs / "bomb_ratio.pptx")  # 64 KiB to 64 MiB
    faults.lying_bomb(bombs / "bomb_lying.pptx")  # 64 MiB of zeros declared as 4 KiB
    peak, documents = ingest_in_child(tmp_path / "root", folder, bombs)
    assert documents["bomb_1gib.pptx"]["status"] == "failed"
    assert documents["bomb_1gib.pptx"]["error"] == (
        "bomb_1gib.pptx: archive member ppt/slides/slide1.xml inflates to 1.0 GiB (limit 512.0 MiB); "
        "raise limits.max_member_bytes if the file is trusted"
    )
    assert documents["bomb_ratio.pptx"]["status"] == "failed"
    assert documents["bomb_ratio.pptx"]["error"].startswith(
        "bomb_ratio.pptx: archive member ppt/slides/slide1.xml inflates 1,0"
    ) and "limit 200); raise limits.max_ratio" in documents["bomb_ratio.pptx"]["error"]
    assert documents["bomb_lying.pptx"]["status"] == "failed"
    assert "Bad CRC-32 for file 'ppt/slides/slide1.xml'" in documents["bomb_lying.pptx"]["error"]
    assert_samples_intact(samples, documents, tmp_path / "root")
    print(f"peak RSS with three zip bombs and sample_docs: {peak / MIB:.0f} MiB")
    assert peak < RSS_BOUND, f"peak RSS {peak / MIB:.0f} MiB"


def test_archive_limits_are_settings_and_pass_real_decks(corpus, tmp_path):
    decks = [*SAMPLE_DOCS.glob("*.pptx"), *corpus.glob("*.pptx")]
    assert len(decks) >= 8
    for deck in decks:
        check_archive(deck, Settings().limits)  # the defaults refuse no real deck
    bomb = faults.ratio_bomb(tmp_path / "small_bomb.pptx", inflated=8 * MIB)  # 8 KiB inflating to 8 MiB
    with pytest.raises(DocumentError, match=r"slide1.xml inflates 1,0\d\d times \(8\.0 KiB to 8\.0 MiB; limit 200\)"):
        check_archive(bomb, Settings().limits)
    check_archive(bomb, Settings(limits={"ratio_min_bytes": 16 * MIB}).limits)  # the ratio counts above this size only
    lenient = {"max_ratio": 10_000}
    with pytest.raises(DocumentError, match=r"inflates to 8\.0 MiB \(limit 4\.0 MiB\); raise limits.max_member_bytes"):
        check_archive(bomb, Settings(limits=lenient | {"max_member_bytes": 4 * MIB}).limits)
    with pytest.raises(DocumentError, match=r"members inflate to 8\.\d MiB in all \(limit 5\.0 MiB\); raise limits.max_total"):
        check_archive(bomb, Settings(limits=lenient | {"max_total_bytes": 5 * MIB}).limits)


@needs_tesseract
def test_huge_picture_is_refused_and_its_deck_partial(samples, tmp_path):
    folder, _, _ = samples
    extra = tmp_path / "extra"
    extra.mkdir()
    faults.deck_with_picture(extra / "huge_picture.pptx", faults.huge_png_header(20_000, 20_000))
    documents = ingest_here(tmp_path / "root", extra, ocr=True)
    deck = documents["huge_picture.pptx"]
    assert deck["status"] == "partial" and deck["n_chunks"] == 1
    assert any("DecompressionBombError" in w and "400000000 pixels" in w for w in deck["warnings"]), deck["warnings"]


def test_hostile_names_and_symlink_loops(samples, tmp_path):
    folder, _, _ = samples
    hostile = tmp_path / "hostile"
    titles = faults.hostile_folder(hostile)
    documents = ingest_here(tmp_path / "root", folder, hostile)  # returns: no hang on the loops
    for name, title in titles.items():
        assert documents[name]["status"] == "ok", (name, documents[name]["error"])
        assert documents[name]["title"] == title
    [odd] = [d for n, d in documents.items() if "report-" in n]
    assert odd["status"] == "failed"
    assert odd["file_name"] == "report-\\xff\\xfe-cp949.pptx"
    assert odd["error"] == ("report-\\xff\\xfe-cp949.pptx: file name is not valid UTF-8; rename the file "
                            "(e.g. `convmv -f cp949 -t utf8 --notest`)")
    assert "self.pptx" not in documents and "dangling.pdf" not in documents
    assert len(documents) == len(titles) + 1 + 6  # nothing found twice through the loops
    assert not (Path.cwd() / "pwned").exists() and not (hostile / "pwned").exists()
    assert_samples_intact(samples, documents, tmp_path / "root")


def test_bad_files_fail_alone_with_their_reasons(samples, tmp_path):
    """Empty, truncated, swapped extensions (a PDF named .pptx, a deck named .pdf), locked, unsupported: each a
    failed row with its reason, in one run with the sample documents."""
    folder, _, _ = samples
    expected = make_bad_inputs(tmp_path / "bad")
    documents = ingest_here(tmp_path / "root", folder, tmp_path / "bad")
    for name, reason in expected.items():
        assert documents[name]["status"] == "failed" and documents[name]["change"] == "failed", name
        assert documents[name]["error"].startswith(f"{name}: ") and reason in documents[name]["error"], documents[name]
    assert_samples_intact(samples, documents, tmp_path / "root")


def _corrupt(path: Path, how: str) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2] if how == "truncate" else b"\x00garbage\xff" * 10)


def test_corrupt_parts_are_cache_misses(samples, tmp_path, caplog):
    folder, _, _ = samples
    root = tmp_path / "root"
    first = ingest_here(root, folder)
    chunks_before = pq.read_table(root / "tables" / "chunks.parquet").to_pylist()
    parts = {d["file_name"]: root / "parts" / f"{d['doc_id']}-{d['settings_fingerprint']}" for d in first.values()}
    _corrupt(parts["crash_report_side_pole.pptx"] / "chunks.parquet", "truncate")
    _corrupt(parts["textbook_vehicle_safety.pdf"] / "elements.parquet", "garbage")
    _corrupt(parts["meeting_notes_weekly_safety.pptx"] / "document.json", "truncate")
    with caplog.at_level(logging.WARNING, logger="ragprep.cache"):
        again = ingest_here(root, folder)
    warned = [r.getMessage() for r in caplog.records if r.name == "ragprep.cache"]
    assert len(warned) == 3, warned
    for name, file in (("crash_report_side_pole.pptx", "chunks.parquet"), ("textbook_vehicle_safety.pdf", "elements.parquet"),
                       ("meeting_notes_weekly_safety.pptx", "document.json")):
        assert any(str(parts[name] / file) in w and "treated as a miss, recomputed and replaced" in w for w in warned), name
        assert again[name]["change"] == "changed"  # re-extracted, not reused
        assert pq.read_table(parts[name] / "chunks.parquet").num_rows == again[name]["n_chunks"]  # replaced, readable
    assert sum(d["change"] == "unchanged" for d in again.values()) == 3
    assert pq.read_table(root / "tables" / "chunks.parquet").to_pylist() == chunks_before


def test_part_corrupted_after_the_check_is_recomputed_in_assembly(samples, tmp_path, caplog):
    folder, _, _ = samples
    settings = Settings(root=tmp_path / "root", ocr={"enabled": False})
    ingest_here(settings.root, folder)
    outcomes = [ingest_document(ref, settings, None) for ref in discover([folder], settings)]
    assert all(o.reused for o in outcomes)
    victim = next(o for o in outcomes if o.document.file_name == "crash_report_rear_whiplash.pptx")
    _corrupt(Path(victim.part_dir) / "elements.parquet", "truncate")  # between the reuse check and assembly
    with caplog.at_level(logging.WARNING, logger="ragprep.cache"):
        run, documents = assemble_tables(outcomes, settings, datetime.now(timezone.utc))
    assert [r.getMessage() for r in caplog.records if "elements.parquet" in r.getMessage()]
    assert run.n_ok == 6 and run.n_reused == 5
    assert pq.read_table(Path(victim.part_dir) / "elements.parquet").num_rows == victim.document.n_elements


def test_unreadable_cached_part_reads_as_none(tmp_path, caplog):
    """What the per-PDF quotes cache (parts/quotes/) reads through: garbage is a miss, not an ArrowInvalid."""
    part = tmp_path / "quotes" / "doc-fp.parquet"
    part.parent.mkdir()
    part.write_bytes(b"PAR1 truncated")
    with caplog.at_level(logging.WARNING, logger="ragprep.cache"):
        assert TableStore.read_cached_part(part, "quotes") is None
        assert TableStore.read_cached_part(tmp_path / "missing.parquet", "quotes") is None
    [record] = caplog.records
    assert str(part) in record.getMessage() and "\n" not in record.getMessage()


@pytest.mark.slow  # a 2,000-page document ingested whole
def test_2000_page_pdf_in_bounded_memory(tmp_path):
    folder = tmp_path / "long"
    folder.mkdir()
    faults.text_pdf(folder / "long_book.pdf", pages=2000)
    peak, documents = ingest_in_child(tmp_path / "root", folder)
    book = documents["long_book.pdf"]
    assert (book["status"], book["n_units"]) == ("ok", 2000)
    assert book["n_chunks"] == 2000  # one chapter per "Chapter N" heading
    print(f"peak RSS ingesting a 2,000-page PDF: {peak / MIB:.0f} MiB")
    assert peak < RSS_BOUND, f"peak RSS {peak / MIB:.0f} MiB"
