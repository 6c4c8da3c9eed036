"""Settings sources, document-type rules, and content-derived ids."""

from __future__ import annotations

import hashlib
import subprocess
import sys

import pytest
from pydantic import ValidationError

from ragprep.settings import MAX_WORKERS, Settings, build_settings
from tasks.ingest.run import discover, ingest_document
from tests.conftest import REPO, SAMPLE_DOCS


def test_env_and_toml_sources(tmp_path, monkeypatch):
    config = tmp_path / "ragprep.toml"
    config.write_text(
        'workers = 3\n[ocr]\nlanguages = "eng"\ndpi = 150\n[[doc_type_rules]]\npattern = "*sled*"\ndoc_type = "test_report"\n'
    )
    monkeypatch.setenv("RAGPREP_CONFIG", str(config))
    monkeypatch.setenv("RAGPREP_WORKERS", "5")
    monkeypatch.setenv("RAGPREP_OCR__DPI", "300")
    settings = Settings()
    assert settings.workers == 5  # env beats the file
    assert settings.ocr.languages == "eng" and settings.ocr.dpi == 300  # groups merge field by field
    assert settings.doc_type_for("Sled_Run_04.PPTX") == "test_report"
    assert settings.doc_type_for("other.pptx") == "other"  # the file's rules replace the defaults
    assert Settings(workers=7).workers == 7  # explicit arguments beat both


def test_nested_groups_from_the_environment(monkeypatch):
    monkeypatch.setenv("RAGPREP_LLM__PROVIDER", "openai")
    monkeypatch.setenv("RAGPREP_LLM__ALLOWED_HOSTS", '["llm.internal.example"]')
    monkeypatch.setenv("RAGPREP_OCR__ENABLED", "false")
    settings = Settings()
    assert settings.llm.provider == "openai" and settings.llm.allowed_hosts == ["llm.internal.example"]
    assert settings.ocr.enabled is False
    assert build_settings(ocr=True).ocr.enabled is True  # an explicit parameter beats the environment


def test_workers_limit_matches_the_task_pool():
    with pytest.raises(ValidationError, match="workers"):
        Settings(workers=MAX_WORKERS + 1)
    assert Settings(workers=MAX_WORKERS).workers == MAX_WORKERS


def test_unknown_group_field_is_refused():
    with pytest.raises(ValidationError, match="dpii"):
        Settings(ocr={"dpii": 100})


def test_invalid_setting_names_the_field(monkeypatch):
    monkeypatch.setenv("RAGPREP_WORKERS", "0")
    with pytest.raises(ValidationError, match="workers"):
        Settings()


def test_unknown_variables_name_the_closest_setting():
    from ragprep.settings import unknown_variables

    environ = {
        "RAGPREP_LLM_PROVIDER": "openai",  # one underscore: pydantic-settings ignores it silently
        "RAGPREP_ROOTS": "/x",
        "RAGPREP_ZZZ_QQQ": "1",
        "RAGPREP_ROOT": "/ok", "RAGPREP_LLM__PROVIDER": "openai", "RAGPREP_CONFIG": "x.toml",  # known
        "RAGPREP_LLM__PRICES__GPT": "{}",  # a key inside a dict setting
        "RAGPREP_OCR__ENABLD": "0",  # an unknown group field: validation refuses it (test above)
        "PATH": "/bin",
    }
    warnings = unknown_variables(environ)
    assert warnings == [
        "environment variable RAGPREP_LLM_PROVIDER is not a ragprep setting and is ignored; did you mean RAGPREP_LLM__PROVIDER?",
        "environment variable RAGPREP_ROOTS is not a ragprep setting and is ignored; did you mean RAGPREP_ROOT?",
        "environment variable RAGPREP_ZZZ_QQQ is not a ragprep setting and is ignored; "
        "see `Settings` in ragprep/settings.py or README 'Settings'",
    ]


def test_default_doc_type_rules():
    settings = Settings()
    assert settings.doc_type_for("crash_report_side_pole.pptx") == "test_report"
    assert settings.doc_type_for("2024 회의록.pptx") == "meeting_note"
    assert settings.doc_type_for("weekly_meeting_notes.pptx") == "meeting_note"
    assert settings.doc_type_for("vehicle_dynamics.pdf") == "textbook"
    assert settings.doc_type_for("random.pptx") == "other"


def test_fingerprint_ignores_where_outputs_go(tmp_path):
    assert Settings(root=tmp_path / "a", workers=1).extraction_fingerprint() == Settings(root=tmp_path / "b", workers=4).extraction_fingerprint()
    assert Settings(chunking={"max_tokens": 900}).extraction_fingerprint() != Settings().extraction_fingerprint()


def test_same_input_same_ids(tmp_path):
    refs = discover([SAMPLE_DOCS], Settings(root=tmp_path))
    first = [ingest_document(r, Settings(root=tmp_path / "one", ocr={"enabled": False}), None) for r in refs]
    second = [ingest_document(r, Settings(root=tmp_path / "two", ocr={"enabled": False}), None) for r in refs]
    assert [o.document.doc_id for o in first] == [o.document.doc_id for o in second]
    import pyarrow.parquet as pq

    for a, b in zip(first, second):
        for table in ("elements", "chunks"):
            ta = pq.read_table(f"{a.part_dir}/{table}.parquet").to_pylist()
            tb = pq.read_table(f"{b.part_dir}/{table}.parquet").to_pylist()
            assert ta == tb, (a.document.file_name, table)
    assert first[0].document.doc_id == hashlib.sha256(refs[0] and open(refs[0].path, "rb").read()).hexdigest()[:16]


def test_sample_docs_are_reproducible(tmp_path):
    """The generator writes byte-identical files, so ids derived from them are stable."""
    work = tmp_path / "sample_docs"
    work.mkdir()
    (work / "generate.py").write_text((SAMPLE_DOCS / "generate.py").read_text())
    subprocess.run([sys.executable, str(work / "generate.py")], check=True, capture_output=True, cwd=REPO, timeout=300)
    for committed in sorted(SAMPLE_DOCS.glob("*.p*")):
        regenerated = work / committed.name
        assert regenerated.exists(), committed.name
        assert hashlib.sha256(regenerated.read_bytes()).hexdigest() == hashlib.sha256(committed.read_bytes()).hexdigest(), committed.name
