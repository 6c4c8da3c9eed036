"""`ragprep ask` and the refmatch flow over a real index of sample_docs/ (split from test_refmatch.py so that under
pytest-xdist the index build and the evaluation set's embedding, the two longest set-ups of reference matching, run
on different workers)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from ragprep.settings import Settings
from tasks.refmatch.answer import EXTRACTIVE_LABEL
from tests.conftest import REPO, SAMPLE_DOCS

RAGPREP = str(Path(sys.executable).with_name("ragprep"))


@pytest.fixture(scope="module")
def indexed(tmp_path_factory, ingest_copy):
    """sample_docs/ ingested, corrected and headed, published as a version and indexed (v1)."""
    from tasks.dataset.versions import build_version
    from tasks.enrich.run import run_correct, run_headers
    from tasks.index.run import run_index

    root = tmp_path_factory.mktemp("refmatch-index") / "root"
    settings = ingest_copy([SAMPLE_DOCS], root)
    run_correct(settings)
    run_headers(settings)
    assert build_version(settings).published
    run_index(settings)
    return root


@pytest.mark.slow  # a version built and indexed, then ask
def test_ask_answers_extractively_and_cites_the_table_row(indexed):
    from ragprep.engines.embedders import embeddings_cache_dir
    from ragprep.matching.sentences import split_sentences
    from tasks.index.loaded import index_embedder, opened_index
    from tasks.index.store import index_folder
    from tasks.refmatch.ask import ask

    settings = Settings(root=indexed)
    embedder = index_embedder(opened_index(index_folder(settings, "v1")).manifest.embedder, settings,
                              embeddings_cache_dir(settings))  # the one ask uses (kept per process)
    before = (embedder.counts.embedded, embedder.counts.queries_embedded, embedder.counts.queries_reused)
    question = "What was the HIC15 of the driver dummy in the frontal offset test?"
    result = ask(settings, question, 5)
    # the index embedded every passage and window ask reads; the question's vector serves retrieval, re-ranking and the
    # matcher's question prior, embedded once, as is each answer sentence
    assert embedder.counts.embedded == before[0]
    assert embedder.counts.queries_embedded - before[1] == len({question} | {s.text for s in split_sentences(result.answer)})
    assert embedder.counts.queries_reused - before[2] >= 2
    assert result.provider == "heuristic" and result.label == EXTRACTIVE_LABEL
    hic = [s for s in result.segments if "412.6" in s.text]
    assert hic and hic[0].status == "supported" and hic[0].document == "crash_report_frontal_offset.pptx"
    assert hic[0].where == "slide 3" and hic[0].title.startswith("Dummy Measurements")
    assert hic[0].section.startswith("Dummy Measurements") and hic[0].passage_id.startswith(hic[0].chunk_id + "#p")
    cited = result.passages[hic[0].passage - 1]
    assert cited.passage_id == hic[0].passage_id and "412.6" in " ".join(s.text for s in result.segments)
    assert all(s.passage is not None for s in result.segments if s.status == "supported")
    assert 0 < result.scorer_calls <= result.naive_calls < result.naive_calls_corpus
    lines = result.lines()
    assert lines[1] == EXTRACTIVE_LABEL and any("-> [" in line for line in lines)
    assert result.encoder.endswith("(vanilla: no published query adapter)")  # which model retrieved is shown
    assert f"Retrieved with {result.encoder}; re-ranked by {result.reranker}." in lines


def test_cli_ask_json_and_refmatch_flow(indexed, tmp_path, prefect_server):
    env = {**os.environ, "PREFECT_API_URL": prefect_server}
    proc = subprocess.run([RAGPREP, "ask", "측면 기둥 충돌 조건은 무엇인가요?", "--json", "--k", "3", "--root", str(indexed)],
                          capture_output=True, text=True, env=env, timeout=600, cwd=REPO)
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(proc.stdout)
    assert len(result["passages"]) == 3 and result["segments"]
    assert result["segments"][0]["document"] == "meeting_notes_ko_design_review.pptx"
    answers = tmp_path / "answers.jsonl"
    answers.write_text(json.dumps({"question": "What was the driver HIC15 in the frontal offset test?",
                                   "answer": "The driver HIC15 was 412.6. The fuel tank leaked 3.1 litres."}) + "\n", encoding="utf-8")
    proc = subprocess.run([RAGPREP, "refmatch", str(answers), "--root", str(indexed)], capture_output=True, text=True,
                          env=env, timeout=600, cwd=REPO)
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = pq.read_table(indexed / "refmatch" / "answers.parquet").to_pylist()
    assert [r["status"] for r in rows] == ["supported", "unsupported"]
    assert rows[0]["document"] == "crash_report_frontal_offset.pptx" and rows[0]["slide"] == 3
    assert "1 answers, 2 segments" in proc.stdout.replace("**", "")
    bad = subprocess.run([RAGPREP, "ask", "anything", "--root", str(tmp_path / "empty")], capture_output=True, text=True,
                         env=env, timeout=300, cwd=REPO)
    assert bad.returncode == 2 and "ragprep index" in bad.stderr
