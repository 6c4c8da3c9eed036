"""The ingest flow on a real Prefect server (loopback), over sample_docs/ plus broken files."""

from __future__ import annotations

import asyncio
import shutil

import pyarrow.parquet as pq
import pytest

from flows.ingest import ingest_flow
from ragprep.settings import Settings
from ragprep.storage import Layout
from tests.bad_inputs import make_bad_inputs
from tests.conftest import SAMPLE_DOCS, needs_tesseract


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    folder = tmp_path_factory.mktemp("inputs")
    shutil.copytree(SAMPLE_DOCS, folder / "docs", ignore=shutil.ignore_patterns("*.py", "*.md"))
    expected_failures = make_bad_inputs(folder / "bad")
    return folder, expected_failures


def read(root, name):
    return pq.read_table(root / "tables" / f"{name}.parquet").to_pylist()


async def artifacts_of(flow_run_id, key: str):
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import (
        ArtifactFilter,
        ArtifactFilterFlowRunId,
        ArtifactFilterKey,
    )

    async with get_client() as client:
        return await client.read_artifacts(
            artifact_filter=ArtifactFilter(key=ArtifactFilterKey(any_=[key]), flow_run_id=ArtifactFilterFlowRunId(any_=[flow_run_id]))
        )


@needs_tesseract
def test_ingest_flow_end_to_end(prefect_server, inputs, tmp_path):
    folder, expected_failures = inputs
    root = tmp_path / "out"
    state = ingest_flow(paths=[str(folder / "docs"), str(folder / "bad")], root=str(root), workers=2, ocr=True, return_state=True)
    assert state.is_completed()
    summary = state.result()

    documents = {d["file_name"]: d for d in read(root, "documents")}
    assert len(documents) == 6 + len(expected_failures)
    for name, reason in expected_failures.items():
        assert documents[name]["status"] == "failed" and reason in documents[name]["error"]
    good = [d for d in documents.values() if d["status"] != "failed"]
    assert len(good) == 6 and all(d["status"] == "ok" for d in good), [d["warnings"] for d in good]
    assert documents["crash_report_side_pole.pptx"]["doc_type"] == "test_report"
    assert documents["meeting_notes_ko_design_review.pptx"]["doc_type"] == "meeting_note"
    assert documents["textbook_vehicle_safety.pdf"]["doc_type"] == "textbook"

    chunks = read(root, "chunks")
    assert sum(c["slide"] is not None for c in chunks) == 6 + 6 + 6 + 4 + 3
    assert {c["doc_id"] for c in chunks} == {d["doc_id"] for d in good}
    elements = read(root, "elements")
    assert any(e["ocr_status"] == "ok" and "SLED PULSE OK" in e["ocr_text"] for e in elements)
    assert summary.run.n_failed == len(expected_failures)
    assert len(read(root, "runs")) == 1

    [artifact] = asyncio.run(artifacts_of(state.state_details.flow_run_id, "ingest-summary"))
    assert artifact.type == "table"
    assert "crash_report_side_pole.pptx" in str(artifact.data) and "password-protected PDF" in str(artifact.data)
    assert "6 ok" in artifact.description

    # Second run over unchanged inputs: every good document is reused, ids are identical.
    again = ingest_flow(paths=[str(folder / "docs"), str(folder / "bad")], root=str(root), workers=2, ocr=True)
    assert again.run.n_reused == 6
    assert [c["chunk_id"] for c in read(root, "chunks")] == [c["chunk_id"] for c in chunks]
    assert [e["element_id"] for e in read(root, "elements")] == [e["element_id"] for e in elements]
    assert len(read(root, "runs")) == 2


def test_flow_with_only_bad_files_ends_failed(prefect_server, inputs, tmp_path):
    """Every document failed: the summary is published and written, then the flow run ends Failed with the reason."""
    folder, expected_failures = inputs
    state = ingest_flow(paths=[str(folder / "bad")], root=str(tmp_path / "out"), workers=3, ocr=False, return_state=True)
    assert state.is_failed()
    assert "NothingIngestedError" in state.message and f"every document failed ({len(expected_failures)} of" in state.message
    assert str(folder / "bad") in state.message and "fix or remove those files" in state.message
    assert read(tmp_path / "out", "chunks") == []
    assert {d["status"] for d in read(tmp_path / "out", "documents")} == {"failed"}
    [artifact] = asyncio.run(artifacts_of(state.state_details.flow_run_id, "ingest-summary"))
    assert "password-protected PDF" in str(artifact.data)


def test_flow_over_empty_folder_ends_failed(prefect_server, tmp_path):
    """At 02:00 an unmounted share (an empty mount point) must not look like success, and writes nothing."""
    (tmp_path / "share").mkdir()
    state = ingest_flow(paths=[str(tmp_path / "share")], root=str(tmp_path / "out"), ocr=False, return_state=True)
    assert state.is_failed()
    assert f"no documents found under {tmp_path / 'share'}" in state.message
    assert "nothing was changed" in state.message and "check that the folder is mounted" in state.message
    assert not Layout(tmp_path / "out").table_path("documents").exists()


def _table_bytes(root):
    tables = Layout(root).tables_dir
    return {p.name: p.read_bytes() for p in sorted(tables.glob("*.parquet"))}


def test_unmounted_or_half_synced_share_changes_nothing(prefect_server, tmp_path):
    """A nightly over a share that failed to mount (empty) or half-synced (most documents gone) ends Failed before any
    table is touched: the tables stay byte-identical and the next good run finds every document unchanged. A deliberate
    removal passes with allow_removals."""
    share, root = tmp_path / "share", tmp_path / "out"
    share.mkdir()
    decks = ["crash_report_frontal_offset.pptx", "crash_report_side_pole.pptx", "meeting_notes_weekly_safety.pptx"]
    for name in decks:
        shutil.copy(SAMPLE_DOCS / name, share / name)
    ingest_flow(paths=[str(share)], root=str(root), ocr=False)
    before = _table_bytes(root)
    assert {"documents.parquet", "chunks.parquet"} <= set(before)

    hidden = tmp_path / "hidden"
    share.rename(hidden)
    share.mkdir()  # the mount point is there, its file system is not
    state = ingest_flow(paths=[str(share)], root=str(root), ocr=False, return_state=True)
    assert state.is_failed() and "no documents found" in state.message and "nothing was changed" in state.message
    assert _table_bytes(root) == before

    shutil.copy(hidden / decks[0], share / decks[0])  # 2 of 3 documents gone: more than max_removed_share (0.5)
    state = ingest_flow(paths=[str(share)], root=str(root), ocr=False, return_state=True)
    assert state.is_failed() and "2 of the previous run's 3 documents are no longer under" in state.message
    assert "--allow-removals" in state.message and _table_bytes(root) == before

    for name in decks[1:]:
        shutil.copy(hidden / name, share / name)
    summary = ingest_flow(paths=[str(share)], root=str(root), ocr=False)
    assert {d.change for d in summary.documents} == {"unchanged"}

    (share / decks[1]).unlink()
    (share / decks[2]).unlink()
    summary = ingest_flow(paths=[str(share)], root=str(root), ocr=False, allow_removals=True)
    assert sorted(d.change for d in summary.documents) == ["removed", "removed", "unchanged"]


def test_duplicate_content_is_ingested_once(prefect_server, tmp_path):
    deck = (SAMPLE_DOCS / "meeting_notes_weekly_safety.pptx").read_bytes()
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "a.pptx").write_bytes(deck)
    (tmp_path / "in" / "b.pptx").write_bytes(deck)
    summary = ingest_flow(paths=[str(tmp_path / "in")], root=str(tmp_path / "out"), ocr=False)
    statuses = {d.file_name: (d.status, d.error, d.duplicate_of) for d in summary.documents}
    first = str(tmp_path / "in" / "a.pptx")
    assert statuses["a.pptx"] == ("ok", None, None)
    assert statuses["b.pptx"] == ("duplicate", f"b.pptx: identical content to {first}; ingested once, under that path", first)
    assert (summary.run.n_ok, summary.run.n_duplicate, summary.run.n_failed) == (1, 1, 0)
    assert "1 failed" not in summary.headline() and "1 duplicate" in summary.headline()
    assert len(read(tmp_path / "out", "chunks")) == 4


def test_incremental_runs_record_changes(prefect_server, tmp_path):
    """new | changed | unchanged | removed | failed per document, in documents.parquet, the ingest-summary artifact
    and the headline; removed documents leave the next dataset version."""
    from tasks.dataset.versions import assemble_version_tables

    folder = tmp_path / "in"
    shutil.copytree(SAMPLE_DOCS, folder, ignore=shutil.ignore_patterns("*.py", "*.md"))
    root = tmp_path / "out"
    first = ingest_flow(paths=[str(folder)], root=str(root), ocr=False)
    assert {d.change for d in first.documents} == {"new"} and "6 new, 0 changed, 0 unchanged" in first.headline()

    (folder / "meeting_notes_weekly_safety.pptx").unlink()  # removed
    shutil.copy(SAMPLE_DOCS / "meeting_notes_weekly_safety.pptx", folder / "renamed_notes.pptx")  # new (known bytes)
    shutil.copy(SAMPLE_DOCS / "crash_report_side_pole.pptx", folder / "crash_report_rear_whiplash.pptx")  # changed
    (folder / "broken.pdf").write_bytes(b"%PDF-1.7 truncated")  # failed
    state = ingest_flow(paths=[str(folder)], root=str(root), ocr=False, return_state=True)
    summary = state.result()
    changes = {d["file_name"]: (d["status"], d["change"]) for d in read(root, "documents")}
    assert changes == {
        "broken.pdf": ("failed", "failed"),
        "crash_report_frontal_offset.pptx": ("ok", "unchanged"),
        "crash_report_rear_whiplash.pptx": ("ok", "changed"),
        "crash_report_side_pole.pptx": ("duplicate", "unchanged"),
        "meeting_notes_ko_design_review.pptx": ("ok", "unchanged"),
        "meeting_notes_weekly_safety.pptx": ("removed", "removed"),
        "renamed_notes.pptx": ("ok", "new"),
        "textbook_vehicle_safety.pdf": ("ok", "unchanged"),
    }
    assert "1 new, 1 changed, 4 unchanged, 1 removed, 1 failed" in summary.headline()
    assert (summary.run.n_documents, summary.run.n_removed) == (7, 1)
    [artifact] = asyncio.run(artifacts_of(state.state_details.flow_run_id, "ingest-summary"))
    assert "1 new, 1 changed, 4 unchanged, 1 removed, 1 failed" in artifact.description
    assert "removed" in str(artifact.data) and "unchanged" in str(artifact.data)

    version = assemble_version_tables(Layout(root), Settings(root=root))
    kept = {d["file_name"] for d in version["documents"].to_pylist()}
    assert "meeting_notes_weekly_safety.pptx" not in kept and "renamed_notes.pptx" in kept

    third = ingest_flow(paths=[str(folder)], root=str(root), ocr=False)  # a removal is reported once
    assert third.run.n_removed == 0 and "meeting_notes_weekly_safety.pptx" not in {d.file_name for d in third.documents}


def test_pipeline_flow_publishes_stage_artifacts(prefect_server, tmp_path, monkeypatch, shared_embeddings):
    from flows.pipeline import pipeline_flow

    monkeypatch.setenv("RAGPREP_EMBEDDINGS_CACHE", str(shared_embeddings))  # what the run embeds is not checked here
    (tmp_path / "in").mkdir()
    shutil.copy(SAMPLE_DOCS / "crash_report_side_pole.pptx", tmp_path / "in")
    state = pipeline_flow(paths=[str(tmp_path / "in")], root=str(tmp_path / "out"), ocr=False, return_state=True)
    summary = state.result()
    assert [s.stage for s in summary.stages] == ["describe", "correct", "headers", "qa", "judge"]
    [artifact] = asyncio.run(artifacts_of(state.state_details.flow_run_id, "generative-stages"))
    assert "| headers | heuristic | ragprep-rules-1 | heuristic:extract_header@ragprep-rules-1 | 1 | 0 |" in artifact.data
    [review] = asyncio.run(artifacts_of(state.state_details.flow_run_id, "qa-review"))
    assert "QA pairs** (heuristic, ragprep-rules-1)" in review.data
    assert str(tmp_path / "out" / "review" / "report-") in review.data
    assert (tmp_path / "out" / "review" / "latest.html").is_file()
    [header] = read(tmp_path / "out", "headers")
    assert {f["name"]: f["value"] for f in header["fields"]}["Stage"] == "Pilot Production"
    assert summary.dataset.published and summary.dataset.created
    [gate] = asyncio.run(artifacts_of(state.state_details.flow_run_id, "quality-gate"))
    assert "quality gate passed, published" in gate.description
    assert '"result": "pass"' in gate.data and "FAIL" not in gate.data
    [run_summary] = asyncio.run(artifacts_of(state.state_details.flow_run_id, "run-summary"))
    assert "**documents:** 1 found: 1 new, 0 changed, 0 unchanged, 0 removed; 1 ok, 0 partial, 0 failed" in run_summary.data
    assert f"**dataset:** version {summary.dataset.version_id} published (LATEST)" in run_summary.data
    approved = sum(p["status"] == "approved" for p in read(tmp_path / "out", "qa_pairs"))
    assert f"({approved} approved," in run_summary.data and approved > 0
    assert "**review report:**" in run_summary.data and "**quality page:**" in run_summary.data
    assert "file://" not in run_summary.data and ".staging" not in run_summary.data
