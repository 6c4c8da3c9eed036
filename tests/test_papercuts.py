"""Issue 23's papercuts: the privacy guard names the ragprep.toml key that works, ``review apply`` says which header
values it stored, a field an expert marked "Not stated" is not missing, a failed SQL query names the tables, the stage
table keeps words whole at 120 columns, and a run's piped output carries no library's DEBUG line."""

from __future__ import annotations

import json
import logging
import re
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path

import pytest
from rich.console import Console
from typer.testing import CliRunner

from ragprep.cli import app
from ragprep.engines.guard import PrivacyGuardError, check_endpoint
from ragprep.report import WORD_MAX, Report
from ragprep.settings import build_settings
from ragprep.storage import Layout
from ragprep.tables import TableStore
from schemas.documents import DocumentRow
from schemas.headers import HeaderField, HeaderRow
from schemas.review import HeaderReviewRow
from tasks.enrich.headers import apply_header_decisions
from tasks.stage import StageReport, stages_report
from tests.conftest import SAMPLE_DOCS

RAGPREP = str(Path(sys.executable).with_name("ragprep"))


def test_the_privacy_guard_names_the_toml_key_that_works(tmp_path, monkeypatch):
    with pytest.raises(PrivacyGuardError) as refused:
        check_endpoint("http://llm.corp.example:8000/v1", [], "openai")
    message = str(refused.value)
    assert "llm_allowed_hosts" not in message and "under [llm] in ragprep.toml" in message
    snippet = re.search(r"\(allowed_hosts = (\[.*?\])\)", message).group(1)
    (tmp_path / "ragprep.toml").write_text(f"[llm]\nallowed_hosts = {snippet}\n", encoding="utf-8")  # as the message says
    monkeypatch.setenv("RAGPREP_CONFIG", str(tmp_path / "ragprep.toml"))
    settings = build_settings(root=tmp_path / "root")
    assert check_endpoint("http://llm.corp.example:8000/v1", settings.llm.allowed_hosts, "openai") == "llm.corp.example"


def _header(doc_id: str) -> HeaderRow:
    fields = [HeaderField(name="Test Name", value="SP-1", source="slide 1 table", confidence=0.95),
              HeaderField(name="Region", value=None), HeaderField(name="Stage", value=None)]
    return HeaderRow(doc_id=doc_id, source_path="x.pptx", fields=fields, missing=["Region", "Stage"],
                     review=["Region", "Stage"], header_block="Test Name: SP-1", provider="heuristic", model="m", prompt="p")


def test_a_field_marked_not_stated_is_neither_missing_nor_for_review():
    now = datetime.now(timezone.utc)
    decisions = [HeaderReviewRow(doc_id="d1", field="Region", value=None, reviewer="kim", applied_at=now, source_file="f"),
                 HeaderReviewRow(doc_id="d1", field="Stage", value="P2", reviewer="kim", applied_at=now, source_file="f")]
    [row] = apply_header_decisions([_header("d1")], decisions)
    fields = {f.name: f for f in row.fields}
    assert fields["Region"].value is None and fields["Region"].source == "expert"  # stated as "not stated"
    assert row.missing == [] and row.review == []
    [untouched] = apply_header_decisions([_header("d2")], decisions)
    assert untouched.missing == ["Region", "Stage"]  # another report's missing fields still count


def test_review_apply_lists_the_header_values_it_stored(tmp_path):
    root = tmp_path / "root"
    store = TableStore(Layout(root))
    document = DocumentRow.model_validate({**json.loads((Path(__file__).parent / "schema_rows.json").read_text())["DOCUMENTS_SCHEMA"],
                                           "doc_id": "d1", "file_name": "crash_side.pptx"})
    store.write("documents", [document])
    decisions = tmp_path / "decisions.json"
    decisions.write_text(json.dumps({"format": "ragprep-review-decisions/1", "decisions": [], "headers": [
        {"doc_id": "d1", "field": "Stage", "value": "P2", "reviewer": "kim"},
        {"doc_id": "d1", "field": "Region", "value": None, "reviewer": "kim"},
        {"doc_id": "d9", "field": "Stage", "value": "P1", "reviewer": "kim"}]}), encoding="utf-8")
    result = CliRunner().invoke(app, ["review", "apply", str(decisions), "--root", str(root)], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert "header value: crash_side.pptx: Stage = P2" in result.output
    assert "header value: crash_side.pptx: Region = (not stated)" in result.output
    assert "header value: d9 (no such document now): Stage = P1" in result.output
    assert "3 header value(s) stored; they take effect on the next build" in result.output


def test_a_failed_query_names_the_tables(tmp_path):
    root = tmp_path / "root"
    store = TableStore(Layout(root))
    rows = json.loads((Path(__file__).parent / "schema_rows.json").read_text())
    store.write("documents", [DocumentRow.model_validate(rows["DOCUMENTS_SCHEMA"])])
    result = CliRunner().invoke(app, ["sql", "select * from chunkz", "--root", str(root)], env={"COLUMNS": "200"})
    assert result.exit_code == 2
    assert "chunkz does not exist" in result.output and "(tables: documents)" in result.output


def _words(text: str) -> set[str]:
    """The words of ``text`` a table must keep whole (box lines and list punctuation are not part of a word)."""
    return {w.rstrip(":") for w in re.findall(r"[^\s,│┃]+", text) if len(w) <= WORD_MAX}


def test_the_stage_table_keeps_words_whole_at_120_columns():
    reports = [StageReport(stage=stage, provider="openai", model="qwen2.5-7b-instruct", prompt=f"{prompt}@v2", items=412,
                           flagged=flagged, flags=flags, usage=[{"calls": 412, "cache_hits": 3, "structured_mode": "json_schema"}],
                           seconds=81.3)
               for stage, prompt, flagged, flags in [
                   ("describe", "describe_image", 0, {}), ("correct", "correct_slide", 2, {"numbers_changed": 2}),
                   ("headers", "extract_header", 1, {"missing_field": 1}),
                   ("qa", "generate_qa", 31, {"near_duplicate": 20, "unsupported_segment": 11}),
                   ("judge", "judge_qa", 9, {"low_quality:grounded": 5, "low_quality:well_formed": 4})]]
    documents = Report("ragprep: documents", ["document", "type", "format", "status", "change", "units", "chunks", "ocr",
                                              "reason"],
                       [["meeting_notes_ko_design_review.pptx", "meeting_note", "pptx", "partial", "changed", 3, 3, 0,
                         "slide 2: picture could not be decoded"]])
    for report in (stages_report(reports), documents):
        console = Console(width=120, record=True, color_system=None)
        console.print(report.rich_table(console.width))
        text = console.export_text()
        assert max(len(line) for line in text.splitlines()) <= 120
        expected = _words(" ".join(report.columns)) | {w for row in report.rows for v in row for w in _words(str(v))}
        assert expected <= _words(text), expected - _words(text)
    console = Console(width=120, record=True, color_system=None)
    console.print(stages_report(reports).rich_table(console.width))
    assert "provider: openai, model: qwen2.5-7b-instruct" in console.export_text()  # said once, under the table
    wide = Console(width=200, record=True, color_system=None)  # a pipe (the CLI widens it to 200): every column stays
    wide.print(stages_report(reports).rich_table(wide.width))
    assert re.search(r"│ describe\s+│ openai\s+│ qwen2.5-7b-instruct\s+│ describe_image@v2", wide.export_text())


def test_no_library_debug_line_in_a_piped_run(prefect_server, tmp_path):
    env = {"PREFECT_API_URL": prefect_server, "RAGPREP_OCR__ENABLED": "false", "RAGPREP_LLM__PROVIDER": "heuristic",
           "PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    docs = tmp_path / "docs"
    docs.mkdir()
    for name in ("crash_report_side_pole.pptx", "meeting_notes_weekly_safety.pptx"):
        (docs / name).write_bytes((SAMPLE_DOCS / name).read_bytes())
    proc = subprocess.run(f"{RAGPREP} run {docs} --root {tmp_path / 'x'} 2>&1 | cat", shell=True, env=env,
                          capture_output=True, text=True, timeout=600)
    assert "published (LATEST)" in proc.stdout, proc.stdout[-3000:]
    assert "negatives:" in proc.stdout  # the stage that builds a bm25s index ran
    assert not [line for line in proc.stdout.splitlines() if "| DEBUG" in line]


def test_quiet_library_loggers_raises_only_libraries_below_info():
    from ragprep.library_logs import quiet_library_loggers

    noisy, own, fine = logging.getLogger("somelib.debugging"), logging.getLogger("ragprep.test"), logging.getLogger("otherlib")
    noisy.setLevel(logging.DEBUG)
    own.setLevel(logging.DEBUG)
    fine.setLevel(logging.INFO)
    try:
        assert "somelib.debugging" in quiet_library_loggers()
        assert (noisy.level, own.level, fine.level) == (logging.WARNING, logging.DEBUG, logging.INFO)
    finally:
        for logger in (noisy, own, fine):
            logger.setLevel(logging.NOTSET)
