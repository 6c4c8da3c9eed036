"""Dataset versions: content-derived ids, stable splits, diff, atomic publish, quality gate."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from ragprep.catalog import run_query
from ragprep.settings import Settings
from ragprep.splits import SPLITS, split_of
from ragprep.storage import Layout, atomic_write_parquet
from tasks.dataset.versions import (
    build_version,
    diff_versions,
    latest_version,
    list_versions,
    quality_gate,
)
from tasks.qa.review import apply_decisions_file
from tasks.qa.run import run_judge, run_qa
from tests.conftest import REPO, SAMPLE_DOCS, copy_root, ingest_into

ALL_BUT_ONE = sorted(p for p in SAMPLE_DOCS.glob("*.p*") if p.name != "meeting_notes_weekly_safety.pptx")


def ingest(root, paths):
    settings = ingest_into(root, paths)
    run_qa(settings)
    run_judge(settings)
    return settings


@pytest.fixture(scope="module")
def five_docs(tmp_path_factory):
    root = tmp_path_factory.mktemp("five")
    ingest(root, ALL_BUT_ONE)
    return root


@pytest.fixture
def root(five_docs, tmp_path):
    return copy_root(five_docs, tmp_path)


def test_split_assignment_is_stable_and_close_to_the_ratios():
    ratios = {"train": 0.8, "val": 0.1, "test": 0.1}
    keys = [f"chunk-{i}" for i in range(5000)]
    first = [split_of(k, ratios) for k in keys]
    assert first == [split_of(k, ratios) for k in keys]
    for split, share in ratios.items():
        assert abs(first.count(split) / len(keys) - share) < 0.02
    assert split_of("chunk-1", ratios) == split_of("chunk-1", {"train": 0.8, "val": 0.1, "test": 0.1})


def test_same_inputs_give_the_same_version_and_no_new_directory(root):
    settings = Settings(root=root)
    first = build_version(settings)
    assert first.created and first.published and latest_version(root) == first.version_id
    second = build_version(settings)
    assert second.version_id == first.version_id and not second.created
    assert [v.version_id for v in list_versions(root)] == [first.version_id]
    manifest = json.loads((root / "datasets" / "versions" / first.version_id / "manifest.json").read_text())
    assert manifest["parent"] is None and manifest["validation"]["passed"]
    assert len(manifest["source_documents"]) == 5
    assert "heuristic:generate_qa@ragprep-rules-1" in manifest["prompts"]
    assert manifest["rows"]["chunks"]["total"] == sum(manifest["rows"]["chunks"][s] for s in SPLITS)
    for split in SPLITS:
        assert (root / "datasets" / "versions" / first.version_id / "chunks" / f"{split}.parquet").is_file()


def test_adding_a_document_adds_exactly_its_rows_and_moves_nothing(root):
    settings = Settings(root=root)
    v1 = build_version(settings)
    before = {c["chunk_id"]: c["split"] for c in pq.read_table(root / "datasets" / "versions" / v1.version_id / "chunks").to_pylist()}
    ingest(root, ALL_BUT_ONE + [SAMPLE_DOCS / "meeting_notes_weekly_safety.pptx"])
    v2 = build_version(settings)
    assert v2.created and v2.version_id != v1.version_id and latest_version(root) == v2.version_id
    manifest = json.loads((root / "datasets" / "versions" / v2.version_id / "manifest.json").read_text())
    assert manifest["parent"] == v1.version_id
    diffs = {d.table: d for d in diff_versions(root, v1.version_id, v2.version_id)}
    new_chunks = {c["chunk_id"] for c in pq.read_table(root / "tables" / "chunks.parquet").to_pylist()
                  if c["source_path"].endswith("meeting_notes_weekly_safety.pptx")}
    assert diffs["chunks"].added == len(new_chunks) == 4 and set(diffs["chunks"].added_ids) == new_chunks
    assert diffs["chunks"].removed == 0 and diffs["chunks"].changed == 0
    assert diffs["documents"].added == 1 and diffs["documents"].removed == 0
    after = {c["chunk_id"]: c["split"] for c in pq.read_table(root / "datasets" / "versions" / v2.version_id / "chunks").to_pylist()}
    assert all(after[cid] == split for cid, split in before.items()), "no existing chunk changed split"
    qa = pq.read_table(root / "datasets" / "versions" / v2.version_id / "qa_pairs").to_pylist()
    assert all(q["split"] == after[q["chunk_id"]] for q in qa), "QA pairs follow their chunk"
    assert all(q["status"] == "approved" for q in qa)


def test_sql_reads_the_latest_version_or_a_named_one(root):
    settings = Settings(root=root)
    v1 = build_version(settings)
    columns, rows = run_query(Layout(root), "select split, count(*) from chunks group by 1 order by 1")
    assert columns[0] == "split" and {r[0] for r in rows} <= set(SPLITS)
    _, rows = run_query(Layout(root), "select count(*) from qa_pairs where split is null", version=v1.version_id)
    assert rows == [(0,)]


def test_killed_build_leaves_no_visible_partial_version(root):
    settings = Settings(root=root)
    v1 = build_version(settings)
    ingest(root, ALL_BUT_ONE + [SAMPLE_DOCS / "meeting_notes_weekly_safety.pptx"])
    script = (
        "import sys, time; from pathlib import Path; sys.path.insert(0, %r)\n"
        "import tasks.dataset.versions as d\n"
        "from ragprep.settings import Settings\n"
        "slow = d._write_split_tables\n"
        "def stall(tables, target):\n"
        "    slow(tables, target); print('written', flush=True); time.sleep(60)\n"
        "d._write_split_tables = stall\n"
        "d.build_version(Settings(root=Path(%r)))\n"
    ) % (str(REPO), str(root))
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True, cwd=REPO)
    assert proc.stdout.readline().strip() == "written"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    assert [v.version_id for v in list_versions(root)] == [v1.version_id]
    assert latest_version(root) == v1.version_id
    assert list((root / "datasets" / "versions").iterdir()) == [root / "datasets" / "versions" / v1.version_id]
    v2 = build_version(settings)  # the next build completes normally
    assert v2.published and latest_version(root) == v2.version_id


def test_quality_gate_passes_a_clean_build_and_saves_data_docs(root):
    settings = Settings(root=root)
    gate, holder = quality_gate(settings)
    result = build_version(settings, gate)
    assert result.published and holder["result"].passed
    docs = root / "datasets" / "versions" / result.version_id / "quality" / "data_docs" / "index.html"
    assert docs.is_file() and "http://" not in docs.read_text() and "https://" not in docs.read_text()


@pytest.mark.parametrize("breakage", ["duplicate_chunk_ids", "missing_chunk"])
def test_broken_tables_fail_the_gate_and_latest_does_not_move(root, breakage):
    settings = Settings(root=root)
    good = build_version(settings, quality_gate(settings)[0])
    assert latest_version(root) == good.version_id
    layout = Layout(root)
    if breakage == "duplicate_chunk_ids":
        chunks = pq.read_table(layout.table_path("chunks"))
        atomic_write_parquet(pa.concat_tables([chunks, chunks.slice(0, 2)]), layout.table_path("chunks"))
    else:
        chunks = pq.read_table(layout.table_path("chunks"))
        referenced = {q["chunk_id"] for q in pq.read_table(layout.table_path("qa_pairs")).to_pylist() if q["status"] == "approved"}
        victim = next(c for c in chunks.column("chunk_id").to_pylist() if c in referenced)
        atomic_write_parquet(chunks.filter(pc.not_equal(chunks.column("chunk_id"), victim)), layout.table_path("chunks"))
    gate, holder = quality_gate(settings)
    bad = build_version(settings, gate)
    assert not bad.published and bad.created
    assert latest_version(root) == good.version_id, "LATEST moves only when the gate passes"
    assert (root / "datasets" / "rejected" / bad.version_id / "manifest.json").is_file()
    assert not (root / "datasets" / "versions" / bad.version_id).exists()
    expected = "chunks: expect_column_values_to_be_unique (chunk_id)" if breakage == "duplicate_chunk_ids" else "qa_pairs.chunk_refs"
    assert any(expected in f for f in bad.failed_expectations), bad.failed_expectations
    statuses = {v.version_id: v.status for v in list_versions(root)}
    assert statuses == {good.version_id: "published", bad.version_id: "rejected"}


def test_review_decisions_are_versioned_and_follow_their_chunk(root):
    settings = Settings(root=root)
    v1 = build_version(settings)
    _, rows = run_query(Layout(root), "select qa_id, chunk_id, split from qa_pairs order by qa_id limit 2")
    (rejected, chunk, split), (edited, _, _) = rows
    decisions = root / "decisions.json"
    decisions.write_text(json.dumps({"format": "ragprep-review-decisions/1", "decisions": [
        {"qa_id": rejected, "decision": "reject", "reviewer": "kim"},
        {"qa_id": edited, "decision": "edit", "question": "Edited question?", "answer": "edited", "reviewer": "lee"},
    ]}))
    apply_decisions_file(decisions, root)
    run_qa(settings)  # every later build applies the decisions
    run_judge(settings)
    v2 = build_version(settings)
    assert v2.version_id != v1.version_id
    _, review = run_query(Layout(root), "select qa_id, decision, chunk_id, split from review order by decision")
    assert (rejected, "reject", chunk, split) in review and len(review) == 2
    _, gone = run_query(Layout(root), f"select count(*) from qa_pairs where qa_id = '{rejected}'")
    assert gone == [(0,)]
    table = {d.table: d for d in diff_versions(root, v1.version_id, v2.version_id)}
    assert table["review"].added == 2 and table["qa_pairs"].removed == 1 and table["qa_pairs"].changed == 1
