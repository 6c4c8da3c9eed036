"""The ragprep command line, run as a user runs it (subprocess), against the test Prefect server."""

from __future__ import annotations

import csv
import io
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from tests.bad_inputs import make_bad_inputs
from tests.conftest import REPO, SAMPLE_DOCS

RAGPREP = str(Path(sys.executable).with_name("ragprep"))


def ragprep(*args: str, api_url: str, timeout: int = 300) -> subprocess.CompletedProcess:
    env = {**os.environ, "PREFECT_API_URL": api_url, "RAGPREP_OCR__ENABLED": "false"}
    return subprocess.run([RAGPREP, *args], capture_output=True, text=True, env=env, timeout=timeout, cwd=REPO)


@pytest.fixture(scope="module")
def demo_root(demo_run):
    """(root, process) of the session's ``ragprep run sample_docs/`` (conftest ``demo_run``: what ``make demo``
    runs, on a fresh HOME, the run the no-outbound-network test traces); the tests here work on its root."""
    proc = demo_run.proc
    assert proc.returncode == 0, proc.stderr[-3000:]
    return demo_run.root, proc


def test_run_prints_summary_and_plain_progress(demo_root):
    root, proc = demo_root
    assert "6 documents: 6 ok, 0 partial, 0 failed" in proc.stdout
    assert f"tables:  {root}/tables" in proc.stdout
    assert f"review:  {root}/review/latest.html" in proc.stdout and f"dataset: {root}/datasets" in proc.stdout
    assert "crash_report_side_pole.pptx" in proc.stdout
    # the QA pairs by status; on the default (calibrated) gate the offline critic's missing auto-approval is said
    from tasks.qa.judge import POLICY

    said = " ".join(proc.stdout.split())
    assert re.search(r"qa: \d+ pairs: ", said), said[-2000:]
    if not (POLICY.get("auto_approve") or {}).get("bands"):
        assert "every pair waits for review" in said and "pending" in said
    # not a terminal: plain log lines carry per-document progress
    assert "crash_report_side_pole.pptx: slide 6/6" in proc.stderr + proc.stdout
    assert "textbook_vehicle_safety.pdf: ok, 10 pages" in proc.stderr + proc.stdout


def test_sql_json_and_csv(demo_root, prefect_server):
    root, _ = demo_root
    proc = ragprep("sql", "select status, count(*) as n from documents group by 1", "--root", str(root),
                   "--format", "json", api_url=prefect_server)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == [{"status": "ok", "n": 6}]
    proc = ragprep("sql", "select slide, title from chunks where source_path like '%frontal%' order by slide",
                   "--root", str(root), "--format", "csv", api_url=prefect_server)
    rows = list(csv.reader(io.StringIO(proc.stdout)))
    assert rows[0] == ["slide", "title"] and rows[1] == ["1", "Frontal Offset Crash Test Report"] and len(rows) == 7


def test_sql_errors_are_clear(demo_root, prefect_server, tmp_path):
    root, _ = demo_root
    proc = ragprep("sql", "select nope from chunks", "--root", str(root), api_url=prefect_server)
    assert proc.returncode == 2 and "query failed" in proc.stderr
    proc = ragprep("sql", "select 1", "--root", str(tmp_path / "empty"), api_url=prefect_server)
    assert proc.returncode == 2 and "no tables under" in proc.stderr and "ragprep run" in proc.stderr


def test_exit_code_nonzero_only_when_every_document_failed(prefect_server, tmp_path):
    make_bad_inputs(tmp_path / "bad")
    proc = ragprep("run", str(tmp_path / "bad"), "--root", str(tmp_path / "out"), api_url=prefect_server)
    assert proc.returncode == 1
    assert "every document failed" in proc.stderr
    assert "locked.pdf" in proc.stdout and "password-protected PDF" in proc.stdout  # the summary table, then the reason
    assert "Traceback" not in proc.stderr
    shutil.copy(SAMPLE_DOCS / "meeting_notes_weekly_safety.pptx", tmp_path / "bad" / "good.pptx")
    proc = ragprep("run", str(tmp_path / "bad"), "--root", str(tmp_path / "out"), api_url=prefect_server)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "1 ok" in proc.stdout and "failed" in proc.stdout


def test_missing_path_and_bad_settings(prefect_server, tmp_path):
    """A missing input is one line and exit 1 (no document found) before Prefect starts; bad settings
    are one line per problem naming the variable, with the closest known name for a typo."""
    proc = ragprep("run", str(tmp_path / "nowhere"), "--root", str(tmp_path / "out"), api_url=prefect_server)
    assert proc.returncode == 1, proc.stderr
    assert proc.stderr.strip().count("\n") == 0 and "no such file or folder" in proc.stderr and "nowhere" in proc.stderr
    assert "Traceback" not in proc.stderr and not (tmp_path / "out").exists()
    env_bad = {**os.environ, "RAGPREP_WORKERS": "zero", "RAGPREP_OCR__ENABLD": "false"}
    proc = subprocess.run([RAGPREP, "sql", "select 1"], capture_output=True, text=True, env=env_bad, cwd=tmp_path)
    assert proc.returncode == 2 and "invalid settings" in proc.stderr
    assert "workers (RAGPREP_WORKERS): Input should be a valid integer" in proc.stderr
    assert "ocr.enabld (RAGPREP_OCR__ENABLD): Extra inputs are not permitted; did you mean RAGPREP_OCR__ENABLED?" in proc.stderr
    assert "Traceback" not in proc.stderr and "errors.pydantic.dev" not in proc.stderr


def test_unknown_variable_warns_with_the_closest_setting(tmp_path):
    env = {**os.environ, "RAGPREP_LLM_PROVIDER": "openai"}
    proc = subprocess.run([RAGPREP, "versions", "--root", str(tmp_path)], capture_output=True, text=True, env=env, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.count("RAGPREP_LLM_PROVIDER") == 1
    assert "warning: environment variable RAGPREP_LLM_PROVIDER is not a ragprep setting and is ignored; " \
        "did you mean RAGPREP_LLM__PROVIDER?" in proc.stderr


def test_help_lists_commands():
    proc = subprocess.run([RAGPREP, "--help"], capture_output=True, text=True)
    assert proc.returncode == 0
    for command in ("run", "ingest", "sql"):
        assert command in proc.stdout


def test_run_includes_generative_stages(demo_root, prefect_server):
    root, proc = demo_root
    assert "ragprep: generative stages" in proc.stdout
    for stage in ("describe", "correct", "headers"):
        assert re.search(rf"│ {stage}\s+│ heuristic\s+│ ragprep-rules-1", proc.stdout), stage
    out = ragprep("sql", "select count(*) as n from headers where len(missing) = 0", "--root", str(root),
                  "--format", "json", api_url=prefect_server)
    assert json.loads(out.stdout) == [{"n": 3}]


def test_privacy_guard_stops_a_stage_with_a_clear_message(demo_root, prefect_server):
    root, _ = demo_root
    env = {
        **os.environ, "PREFECT_API_URL": prefect_server, "RAGPREP_LLM__PROVIDER": "openai",
        "RAGPREP_LLM__MODEL": "gpt-x", "RAGPREP_LLM__BASE_URL": "https://api.openai.com/v1",
    }
    proc = subprocess.run([RAGPREP, "correct", "--root", str(root)], capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 2
    assert "privacy guard" in proc.stderr and "api.openai.com" in proc.stderr and "RAGPREP_LLM__ALLOWED_HOSTS" in proc.stderr


def test_review_report_and_apply_from_the_command_line(demo_root, prefect_server, tmp_path):
    root, proc = demo_root
    assert (root / "review" / "latest.html").is_file(), "ragprep run writes the review report"
    out = ragprep("review", "report", "--root", str(root), "--out", str(tmp_path / "r.html"), api_url=prefect_server)
    assert out.returncode == 0 and f"review report: {tmp_path / 'r.html'}" in out.stdout
    assert (tmp_path / "r.html").read_text().startswith("<!DOCTYPE html>")
    # the demo runs on the default (calibrated) gate, so its pairs may all wait for review: decide two of the working
    # table's pairs as an expert would, plus one whose pair does not exist
    pairs = sorted(pq.read_table(root / "tables" / "qa_pairs.parquet", columns=["qa_id"]).column("qa_id").to_pylist())[:2]
    decisions = tmp_path / "decisions.json"
    decisions.write_text(json.dumps({"format": "ragprep-review-decisions/1", "decisions": [
        {"qa_id": pairs[0], "decision": "reject", "reviewer": "kim"},
        {"qa_id": pairs[1], "decision": "approve", "reviewer": "kim"},
        {"qa_id": "ffffffffffffffff", "decision": "approve"},
    ]}))
    applied = ragprep("review", "apply", str(decisions), "--root", str(root), api_url=prefect_server)
    assert applied.returncode == 0, applied.stderr
    assert "3 decisions" in applied.stdout and "2 applied" in applied.stdout, applied.stdout
    assert "1 orphaned decision(s): their QA pair no longer exists" in applied.stdout and "ffffffffffffffff" in applied.stdout
    rebuilt = ragprep("dataset", "--root", str(root), api_url=prefect_server)  # the next build drops the rejected pair
    assert rebuilt.returncode == 0 and "published (LATEST)" in rebuilt.stdout
    for qa_id, expected in ((pairs[0], 0), (pairs[1], 1)):  # the published version has the approved pair, not the rejected
        left = json.loads(ragprep("sql", f"select count(*) as n from qa_pairs where qa_id = '{qa_id}'", "--root",
                                  str(root), "--format", "json", api_url=prefect_server).stdout)
        assert left == [{"n": expected}], (qa_id, left)
    decisions.write_text("{broken")
    bad = ragprep("review", "apply", str(decisions), "--root", str(root), api_url=prefect_server)
    assert bad.returncode == 2 and "not JSON" in bad.stderr


def test_judge_command_scores_every_pair(demo_root, prefect_server):
    root, proc = demo_root
    stage_row = r"│ judge\s+│ heuristic\s+│ ragprep-rules-1\s+│ heuristic:judge_qa@ragprep-rules-1\s+│"
    assert re.search(stage_row, proc.stdout), "ragprep run judges the pairs after qa"
    out = ragprep("judge", "--root", str(root), api_url=prefect_server)
    assert out.returncode == 0, out.stderr[-2000:]
    assert re.search(stage_row, out.stdout), out.stdout[-2000:]
    judged = pq.read_table(root / "tables" / "qa_pairs.parquet", columns=["critic_usable"]).column("critic_usable").to_pylist()
    assert judged and all(v is not None for v in judged), "every pair (approved or waiting for review) carries the critic's verdict"


def test_dataset_versions_and_diff_from_the_command_line(demo_root, prefect_server, tmp_path):
    root, proc = demo_root
    assert re.search(r"dataset version ([0-9a-f]{16}): published \(LATEST\)", proc.stdout), proc.stdout[-2000:]
    first = ragprep("dataset", "--root", str(root), api_url=prefect_server)  # other tests may have changed the tables
    version = re.search(r"dataset version ([0-9a-f]{16})", first.stdout).group(1)
    again = ragprep("dataset", "--root", str(root), api_url=prefect_server)
    assert again.returncode == 0 and f"dataset version {version}: already published" in again.stdout
    listed = ragprep("versions", "--root", str(root), api_url=prefect_server)
    assert version in listed.stdout and "[LATEST]" in listed.stdout
    same = ragprep("diff", version, version, "--root", str(root), api_url=prefect_server)
    assert same.returncode == 0 and re.search(r"│ chunks\s+│ 0\s+│ 0\s+│ 0", same.stdout)
    missing = ragprep("diff", version, "0000000000000000", "--root", str(root), api_url=prefect_server)
    assert missing.returncode == 2 and "not found" in missing.stderr
    splits = json.loads(ragprep("sql", "select distinct split from chunks order by 1", "--root", str(root), "--version",
                                version, "--format", "json", api_url=prefect_server).stdout)
    assert {row["split"] for row in splits} <= {"train", "val", "test"}
