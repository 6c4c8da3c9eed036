"""One huge text cannot stall a run (issue 24): a slide holding ~10 MB of text goes through every stage of
``ragprep run`` (ingest to dataset) in a time proportional to the same deck without it, because element and
chunk texts are capped at ingest (``limits.max_element_chars``, ``limits.max_chunk_tokens``) with a warning. Both runs'
embeddings caches start with the same seed (``seed_embeddings`` in tests/conftest.py: the session's vectors but a fixed
few), so both runs load the model and embed the texts the seed lacks: the same ones for what the two decks share."""

from __future__ import annotations

import shutil
import time

import pyarrow.parquet as pq
import pytest

from ragprep.storage import Layout
from tests.conftest import SAMPLE_DOCS
from tests.reliability import faults

BASE = SAMPLE_DOCS / "crash_report_side_pole.pptx"


def _run(prefect_server, folder, root) -> tuple[float, object]:
    from flows.pipeline import pipeline_flow

    started = time.monotonic()
    summary = pipeline_flow(paths=[str(folder)], root=str(root), ocr=False)
    return time.monotonic() - started, summary


@pytest.mark.slow
def test_ten_megabyte_slide_runs_in_time_proportional_to_a_normal_deck(prefect_server, tmp_path, seed_embeddings):
    normal, huge = tmp_path / "normal", tmp_path / "huge"
    normal.mkdir()
    huge.mkdir()
    shutil.copy(BASE, normal / BASE.name)
    faults.huge_text_deck(huge / BASE.name, BASE, megabytes=10)
    roots = (tmp_path / "root-normal", tmp_path / "root-huge")
    with seed_embeddings(*(Layout(root).embeddings_cache_dir for root in roots)) as seed:  # one seed for both
        normal_s, _ = _run(prefect_server, normal, roots[0])
        huge_s, summary = _run(prefect_server, huge, roots[1])
    assert all(seed.added(folder) for folder in seed.folders)  # both runs loaded the model and embedded
    print(f"whole run: normal deck {normal_s:.1f} s, the same deck with a 10 MB slide {huge_s:.1f} s")
    [document] = pq.read_table(tmp_path / "root-huge" / "tables" / "documents.parquet").to_pylist()
    assert document["status"] == "partial"
    assert any("element of 10,000,0" in w and "limits.max_element_chars" in w for w in document["warnings"])
    chunks = pq.read_table(tmp_path / "root-huge" / "tables" / "chunks.parquet").to_pylist()
    assert max(c["token_count"] for c in chunks) <= 4000
    assert max(len(c["markdown_v1"] or "") for c in chunks) < 40_000
    assert summary.dataset is not None and summary.dataset.created  # the dataset stage ran to its gate ...
    assert not [f for f in summary.dataset.failed_expectations if "token" in f]  # ... and no chunk is over its bounds
    # one more slide than the normal deck, capped: at most a few times the normal deck's run, never minutes more
    assert huge_s < 2.5 * normal_s + 30, (normal_s, huge_s)
