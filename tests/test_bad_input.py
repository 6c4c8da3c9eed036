"""Bad input: each broken file becomes a failed row with a one-line reason naming it."""

from __future__ import annotations

import pytest

from ragprep.settings import Settings
from tasks.ingest.run import discover, ingest_document
from tests.bad_inputs import make_bad_inputs
from tests.conftest import SAMPLE_DOCS


@pytest.fixture(scope="module")
def bad_folder(tmp_path_factory):
    folder = tmp_path_factory.mktemp("bad")
    return folder, make_bad_inputs(folder)


def test_every_bad_file_fails_with_its_reason(bad_folder, tmp_path):
    folder, expected = bad_folder
    settings = Settings(root=tmp_path / "root", ocr={"enabled": False})
    refs = discover([folder], settings)
    assert sorted(r.path.rsplit("/", 1)[-1] for r in refs) == sorted(expected)
    for ref in refs:
        outcome = ingest_document(ref, settings, ocr=None)
        doc = outcome.document
        name = doc.file_name
        assert doc.status == "failed", name
        assert doc.error.startswith(f"{name}: "), doc.error
        assert expected[name] in doc.error, doc.error
        assert "\n" not in doc.error
        assert outcome.part_dir is None
    assert not (tmp_path / "root" / "parts").exists() or not any((tmp_path / "root" / "parts").iterdir())


def test_discover_skips_hidden_and_non_documents(tmp_path):
    (tmp_path / "deck.pptx").write_bytes((SAMPLE_DOCS / "meeting_notes_weekly_safety.pptx").read_bytes())
    (tmp_path / ".hidden.pdf").write_bytes(b"%PDF-1.7")
    (tmp_path / "script.py").write_text("print()")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "book.PDF").write_bytes(b"%PDF-1.7")
    refs = discover([tmp_path], Settings(root=tmp_path / "root"))
    assert [r.path.rsplit("/", 1)[-1] for r in refs] == ["deck.pptx", "book.PDF"]
    assert [r.format for r in refs] == ["pptx", "pdf"]
    with pytest.raises(FileNotFoundError, match="no such file"):
        discover([tmp_path / "missing"], Settings(root=tmp_path / "root"))


def test_explicit_file_with_unknown_suffix_is_included(tmp_path):
    odd = tmp_path / "notes.xyz"
    odd.write_text("x")
    [ref] = discover([odd], Settings(root=tmp_path / "root"))
    outcome = ingest_document(ref, Settings(root=tmp_path / "root"), ocr=None)
    assert outcome.document.status == "failed"
    assert "unsupported file type '.xyz'" in outcome.document.error
