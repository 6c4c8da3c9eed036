"""The ``openai`` provider against a real server: llama-cpp-python + SmolLM2-135M (marker ``llm``).

Deselected by default (``-m "not llm"`` in the pytest options): building llama-cpp-python takes
about 25 minutes on two cores. ``make test-llm`` builds ``.venv-llm``, starts the server and runs
this test against it (``RAGPREP_TEST_LLM_BASE_URL``); run alone (``pytest -m llm``) it starts its
own server from ``.venv-llm``, and skips, saying what is missing, when that venv or the model is not there.

What is asserted is the protocol, not the quality: the stages complete without an exception, the
server was called, structured replies parsed or were repaired/flagged, and the negotiated
structured-output mode was recorded and remembered.
"""

from __future__ import annotations

import json
import os

import pytest

from ragprep.engines.structured import MODES
from ragprep.settings import Settings
from tests.conftest import SAMPLE_DOCS, ingest_into
from tests.llm_server_run import MODEL_ALIAS, llama_server, llm_environment, missing_reason

pytestmark = [pytest.mark.llm, pytest.mark.timeout(1800)]


@pytest.fixture(scope="module")
def llm_base_url(tmp_path_factory):
    """A running server: the one make test-llm started, else one started here from .venv-llm."""
    given = os.environ.get("RAGPREP_TEST_LLM_BASE_URL")
    if given:
        yield given
        return
    reason = missing_reason()
    if reason:
        pytest.skip(reason)
    with llama_server(tmp_path_factory.mktemp("llm") / "server.log") as base_url:
        yield base_url


def test_stages_complete_against_llama_cpp(llm_base_url, tmp_path, monkeypatch):
    from tasks.enrich.run import run_correct, run_headers
    from tasks.qa.run import run_qa

    root = tmp_path / "root"
    ingest_into(root, [SAMPLE_DOCS / "crash_report_side_pole.pptx"])
    for name, value in llm_environment(llm_base_url).items():
        monkeypatch.setenv(name, value)
    settings = Settings(root=root, ocr={"enabled": False})
    assert (settings.llm.provider, settings.llm.model) == ("openai", MODEL_ALIAS)

    correct = run_correct(settings)  # text replies
    headers = run_headers(settings)  # structured: one test report
    qa = run_qa(settings)  # structured: pairs per chunk
    for report in (correct, headers, qa):
        print(f"{report.stage}: {report.seconds:.1f} s, {report.items} items, {report.calls} calls, {report.repairs} repairs, "
              f"{report.failures} failures, mode {report.structured_mode}, flags {report.flag_summary()}")
        assert report.provider == "openai" and report.model == MODEL_ALIAS

    assert correct.calls >= 1 and correct.structured_mode == "-", "text replies ask for no JSON"
    assert headers.calls + qa.calls >= 2 and headers.failures + qa.failures < headers.calls + qa.calls
    for report in (headers, qa):
        assert report.calls == 0 or any(mode in report.structured_mode for mode in MODES), report.structured_mode

    remembered = json.loads((root / "cache" / "llm" / "modes.json").read_text())
    assert remembered == {f"{llm_base_url} {MODEL_ALIAS}": remembered[f"{llm_base_url} {MODEL_ALIAS}"]}
    assert remembered[f"{llm_base_url} {MODEL_ALIAS}"] in MODES

    # a structured reply parsed (pairs written by the model), or the repair / flag path recorded it
    from ragprep.storage import Layout
    from ragprep.tables import TableStore

    pairs = TableStore(Layout(root)).read("qa_pairs")
    assert pairs or qa.repairs or qa.flagged, "no pair, no repair, no flag: the structured path did nothing"
    assert headers.items == 1
