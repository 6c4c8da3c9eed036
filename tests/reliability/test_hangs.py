"""No stage can hang a run (issue 24): a hung OCR engine is killed per call and per document, and the run goes on."""

from __future__ import annotations

import os
import time
from pathlib import Path

from ragprep.engines.ocr import OcrTimeout, TesseractOcr
from tests.reliability import faults
from tests.reliability.test_ingest_faults import ingest_here_with

TIMEOUT_S = 1.5
DEADLINE_S = 4.0


def test_hung_tesseract_leaves_the_document_partial_and_the_run_goes_on(tmp_path, monkeypatch):
    fake = faults.sleeping_tesseract(tmp_path / "bin")
    monkeypatch.setenv("PATH", f"{fake.parent}{os.pathsep}{os.environ['PATH']}")
    docs = tmp_path / "docs"
    docs.mkdir()
    faults.picture_deck(docs / "pictures.pptx", pictures=6)  # 6 OCR calls: 9 s at the per-call timeout alone
    faults.titled_deck(docs / "good.pptx", "A good deck")
    started = time.monotonic()
    documents = ingest_here_with(tmp_path / "root", docs, ocr={"enabled": True, "timeout_s": TIMEOUT_S,
                                                                  "document_deadline_s": DEADLINE_S})
    elapsed = time.monotonic() - started
    pictures = documents["pictures.pptx"]
    assert pictures["status"] == "partial" and pictures["n_chunks"] == 6, pictures
    timed_out = [w for w in pictures["warnings"] if "OCR timed out" in w]
    assert timed_out and all("ocr.timeout_s" in w for w in timed_out), pictures["warnings"]
    assert any("ocr.document_deadline_s" in w for w in pictures["warnings"]), pictures["warnings"]
    assert len(timed_out) < 6  # the document deadline stopped OCR before every picture had its own timeout
    assert documents["good.pptx"]["status"] == "ok"
    print(f"ingest with a hung tesseract: {elapsed:.1f} s (deadline {DEADLINE_S} s + timeout {TIMEOUT_S} s)")
    assert elapsed < DEADLINE_S + TIMEOUT_S + 15, elapsed


def test_a_single_ocr_call_is_killed_at_its_timeout(tmp_path, monkeypatch):
    fake = faults.sleeping_tesseract(tmp_path / "bin")
    monkeypatch.setenv("PATH", f"{fake.parent}{os.pathsep}{os.environ['PATH']}")
    faults.picture_deck(tmp_path / "one.pptx", pictures=1)
    import zipfile

    with zipfile.ZipFile(tmp_path / "one.pptx") as deck:
        [png] = [deck.read(n) for n in deck.namelist() if n.startswith("ppt/media/")]
    engine = TesseractOcr("kor+eng", 50.0, None, timeout_s=1.0)
    assert engine.unavailable_reason() is None
    started = time.monotonic()
    try:
        engine.recognize(png)
    except OcrTimeout as exc:
        assert "within 1 s (ocr.timeout_s)" in str(exc)
    else:
        raise AssertionError("the sleeping tesseract returned")
    assert time.monotonic() - started < 6
    # no sleeping child left behind: pytesseract killed the process it started
    assert not [p for p in Path("/proc").iterdir() if p.name.isdigit() and _cmdline(p).startswith("sleep 600")
                and _parent_is(p, os.getpid())]


def _cmdline(proc: Path) -> str:
    try:
        return (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def _parent_is(proc: Path, pid: int) -> bool:
    try:
        return int((proc / "stat").read_text().rsplit(")", 1)[1].split()[1]) == pid
    except (OSError, ValueError, IndexError):
        return False
