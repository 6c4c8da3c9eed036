"""Issue 15 cases that already held, kept as tests: a run killed with kill -9 mid-ingest resumes
without redoing finished documents or duplicating rows, and API keys never reach outputs, logs or
Prefect's database."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq

from tests.conftest import REPO, SAMPLE_DOCS, ingest_into

DECKS = sorted(SAMPLE_DOCS.glob("*.pptx"))

KILLABLE_INGEST = """
import sys, time
import tasks.ingest.run as run
import tasks.wrappers as wrappers
real = run.ingest_document
done = []
def ingest_then_stall(ref, *args, **kwargs):
    outcome = real(ref, *args, **kwargs)
    done.append(ref.path)
    print("done", ref.path, flush=True)
    if len(done) == 2:
        time.sleep(600)  # killed here: two documents finished, the others never started
    return outcome
run.ingest_document = wrappers.ingest_document = ingest_then_stall
from flows.ingest import ingest_flow
ingest_flow(paths=[sys.argv[1]], root=sys.argv[2], workers=1, ocr=False)
"""


def test_kill_9_mid_ingest_resumes_without_redoing_or_duplicating(prefect_server, tmp_path):
    inbox, root = tmp_path / "inbox", tmp_path / "root"
    inbox.mkdir()
    for deck in DECKS[:4]:
        shutil.copy(deck, inbox / deck.name)
    env = {**os.environ, "PREFECT_API_URL": prefect_server}
    proc = subprocess.Popen([sys.executable, "-c", KILLABLE_INGEST, str(inbox), str(root)],
                            stdout=subprocess.PIPE, text=True, cwd=REPO, env=env)
    finished = [proc.stdout.readline().split(" ", 1)[1].strip() for _ in range(2)]
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    assert not (root / "tables" / "chunks.parquet").exists(), "killed before assembly: no tables yet"
    parts = {p: p.stat().st_mtime_ns for p in (root / "parts").glob("*/document.json")}
    assert len(parts) == 2 and len(finished) == 2
    staging = root / "parts" / ".doc-killed.abc123"  # what a kill during a part's write leaves
    staging.mkdir()
    (staging / "chunks.parquet").write_bytes(b"PAR1 half")
    old = os.stat(root).st_mtime - 3600
    os.utime(staging, (old, old))

    from flows.ingest import ingest_flow

    summary = ingest_flow(paths=[str(inbox)], root=str(root), workers=1, ocr=False)
    assert summary.run.n_documents == 4 and summary.run.n_failed == 0
    assert summary.run.n_reused == 2, "the two documents finished before the kill are not extracted again"
    assert all(p.stat().st_mtime_ns == mtime for p, mtime in parts.items()), "their parts were not rewritten"
    assert len(list((root / "parts").glob("*/document.json"))) == 4
    chunks = pq.read_table(root / "tables" / "chunks.parquet").column("chunk_id").to_pylist()
    assert len(chunks) == len(set(chunks)) and len(chunks) == summary.run.n_chunks
    fresh = ingest_into(tmp_path / "fresh", [inbox])  # the same inputs in one uninterrupted run
    expected = pq.read_table(fresh.root / "tables" / "chunks.parquet").column("chunk_id").to_pylist()
    assert sorted(chunks) == sorted(expected)
    leftovers = [p for p in (root / "parts").iterdir() if p.name.startswith(".")]
    assert not leftovers, f"staging folders left behind: {leftovers}"


SECRET = "sk-ragprep-test-7f3c9e1d2b"


def _files_holding(folder: Path, needle: bytes) -> list[Path]:
    return [p for p in folder.rglob("*") if p.is_file() and needle in p.read_bytes()]


def test_api_key_never_reaches_outputs_logs_or_prefect(prefect_server, tmp_path, capfd):
    """The key goes to the endpoint only: not into any table, cache, report or artifact, not into the
    run's logs, not into Prefect's database (flow parameters, task inputs, logs, artifacts)."""
    from prefect.settings import PREFECT_API_DATABASE_CONNECTION_URL

    from flows.qa import qa_flow
    from tests.fake_llm_server import FakeLLMServer

    root = tmp_path / "root"
    ingest_into(root, [SAMPLE_DOCS / "crash_report_frontal_offset.pptx"])
    with FakeLLMServer() as server:

        def responder(body, api):
            return '{"pairs": []}'

        server.responder = responder
        env = {"RAGPREP_LLM__PROVIDER": "openai", "RAGPREP_LLM__MODEL": "m",
               "RAGPREP_LLM__BASE_URL": server.openai_base_url, "RAGPREP_LLM__API_KEY": SECRET}
        old = {k: os.environ.get(k) for k in env}
        os.environ.update(env)
        try:
            qa_flow(root=str(root))
        finally:
            for key, value in old.items():
                os.environ.pop(key) if value is None else os.environ.__setitem__(key, value)
        seen_keys = [r.get("headers", {}).get("authorization", "") for r in server.requests]
    assert server.request_count > 0 and any(SECRET in k for k in seen_keys), "the endpoint did receive the key"
    out, errors = capfd.readouterr()
    assert SECRET not in out and SECRET not in errors
    assert _files_holding(root, SECRET.encode()) == []
    database = PREFECT_API_DATABASE_CONNECTION_URL.value() or ""
    assert database.startswith("sqlite"), "the test server keeps its database in a SQLite file"
    db_file = Path(database.split("///", 1)[1])
    assert db_file.exists()
    for path in (db_file, db_file.with_name(db_file.name + "-wal")):
        assert not path.exists() or SECRET.encode() not in path.read_bytes(), path
