"""Memory by input kind (issues 24 and 27): PDF content-stream bombs, PDF images with huge declared sizes and zip
archives whose headers under-declare a member all stay under the same peak-RSS bound as the zip bombs
(``RSS_BOUND`` of ``test_ingest_faults.py``), measured in a child process; the other documents are intact.

Measured without the guards (ingest alone, OCR off): the 16,000 x 16,000 image peaked at 969 MiB (decoded to be
downscaled) and the 1 GiB lying deck at 2.1 GiB; MuPDF itself refuses the 100,000 x 100,000 image ("Overly large
image") and streams the 1 GiB content stream (275 MiB), so for those two the guard saves time and the later stages
(rendering, layout) rather than ingest's memory."""

from __future__ import annotations

import shutil

import pymupdf
import pytest

from ragprep.settings import Settings
from tasks.ingest.extract.archive import check_archive
from tasks.ingest.extract.base import DocumentError
from tasks.ingest.extract.pdf_limits import inflated_size_over, page_refusal
from tests.conftest import SAMPLE_DOCS
from tests.reliability import faults
from tests.reliability.test_ingest_faults import MIB, RSS_BOUND, ingest_in_child


def test_pdf_bombs_and_lying_archive_in_bounded_memory(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    faults.pdf_stream_bomb(docs / "stream_bomb.pdf", inflated=1 << 30)  # ~5 MB on disk, a 1 GiB content stream
    faults.pdf_huge_image(docs / "huge_image.pdf", 100_000, 100_000)  # 27.9 GiB declared, a few bytes stored
    faults.pdf_huge_image(docs / "large_image.pdf", 16_000, 16_000)  # 732 MiB: MuPDF would decode it (969 MiB peak)
    faults.lying_bomb(docs / "lying_1gib.pptx", inflated=1 << 30, declared=4096, level=1)  # 1 GiB declared as 4 KiB
    shutil.copy(SAMPLE_DOCS / "textbook_vehicle_safety.pdf", docs)
    shutil.copy(SAMPLE_DOCS / "crash_report_side_pole.pptx", docs)
    peak, documents = ingest_in_child(tmp_path / "root", docs)
    bomb = documents["stream_bomb.pdf"]
    assert bomb["status"] == "partial" and bomb["n_units"] == 3, bomb
    assert [w for w in bomb["warnings"] if w.startswith("page 2: content stream xref ")
            and "inflates to more than 256.0 MiB (limits.max_decoded_bytes); page skipped" in w], bomb["warnings"]
    image = documents["huge_image.pdf"]
    assert image["status"] == "partial", image
    assert [w for w in image["warnings"] if w.startswith("page 2: image xref ")
            and "declares 100,000 x 100,000 px, 27.9 GiB decoded, over 256.0 MiB (limits.max_decoded_bytes)" in w]
    large = documents["large_image.pdf"]
    assert large["status"] == "partial" and [w for w in large["warnings"] if w.startswith("page 2: image xref ")
                                             and "declares 16,000 x 16,000 px, 732.4 MiB decoded" in w], large
    lying = documents["lying_1gib.pptx"]
    assert lying["status"] == "failed"
    assert lying["error"].startswith("lying_1gib.pptx: archive member ppt/slides/slide1.xml is corrupt or inflates to "
                                     "more than its header declares (4.0 KiB)"), lying["error"]
    for name in ("textbook_vehicle_safety.pdf", "crash_report_side_pole.pptx"):
        assert documents[name]["status"] == "ok", documents[name]
    print(f"peak RSS with a 1 GiB PDF stream, 27.9 GiB and 732 MiB PDF images, a 1 GiB lying archive and two samples: "
          f"{peak / MIB:.0f} MiB")
    assert peak < RSS_BOUND, f"peak RSS {peak / MIB:.0f} MiB"


def test_pdf_limits_are_settings_and_pass_real_pdfs(corpus, tmp_path):
    limits = Settings().limits
    pdfs = [*SAMPLE_DOCS.glob("*.pdf"), *corpus.glob("*.pdf")]
    assert len(pdfs) >= 10
    for path in pdfs:  # the defaults refuse no page of a real PDF
        with pymupdf.open(path) as doc:
            assert [page_refusal(doc, i, limits) for i in range(doc.page_count)] == [None] * doc.page_count, path.name
    bomb = faults.pdf_stream_bomb(tmp_path / "small_bomb.pdf", inflated=8 * MIB)
    with pymupdf.open(bomb) as doc:
        assert page_refusal(doc, 1, limits) is None  # 8 MiB is within the default limit ...
        tight = Settings(limits={"max_decoded_bytes": 4 * MIB}).limits
        assert "inflates to more than 4.0 MiB" in page_refusal(doc, 1, tight)  # ... and over a lower one
        assert page_refusal(doc, 0, tight) is None
    assert inflated_size_over(b"not zlib at all", 10) is None


def test_lying_header_is_caught_before_python_pptx_reads(tmp_path):
    lying = faults.lying_bomb(tmp_path / "lying.pptx", inflated=8 * MIB, declared=4096)
    with pytest.raises(DocumentError, match=r"slide1.xml is corrupt or inflates to more than its header declares "
                                            r"\(4\.0 KiB\): Bad CRC-32"):
        check_archive(lying, Settings().limits)
