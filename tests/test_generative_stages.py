"""describe -> correct -> headers over sample_docs/, with the heuristic provider and with an
OpenAI-compatible endpoint (real SDK, real loopback server)."""

from __future__ import annotations

import json
import re

import pyarrow.parquet as pq
import pytest

from ragprep.settings import Settings
from ragprep.tables import MissingTablesError
from ragprep.text import numbers_in
from tasks.enrich.correct import invented_numbers
from tasks.enrich.run import run_correct, run_describe, run_headers
from tasks.ingest.run import assemble_tables, discover, ingest_document
from tests.conftest import SAMPLE_DOCS, copy_root
from tests.fake_llm_server import FakeLLMServer, last_user_text

EXPECTED_HEADERS = {
    "crash_report_frontal_offset.pptx": {
        "Test Name": "FO-2024-017 ODB 64 km/h", "Region": "EU", "Stage": "Prototype P2",
        "Purpose": "Verify driver chest deflection after airbag retune",
    },
    "crash_report_side_pole.pptx": {
        "Test Name": "SP-2024-031 Oblique Pole 32 km/h", "Region": "US", "Stage": "Pilot Production",
        "Purpose": "Confirm curtain airbag head coverage at 75 degree impact angle",
    },
    "crash_report_rear_whiplash.pptx": {
        "Test Name": "RW-2024-008 Sled 16 km/h Medium Pulse", "Region": "KR", "Stage": "Design Validation",
        "Purpose": "Assess NIC reduction with revised head restraint geometry",
    },
}


@pytest.fixture(scope="module")
def ingested(tmp_path_factory, ingest_copy):
    """sample_docs/ ingested once (OCR off, shared by the session); each test copies the root."""
    root = tmp_path_factory.mktemp("ingested") / "root"
    ingest_copy([SAMPLE_DOCS], root)
    return root


@pytest.fixture
def root(ingested, tmp_path):
    return copy_root(ingested, tmp_path)


def table(root, name):
    return pq.read_table(root / "tables" / f"{name}.parquet").to_pylist()


def test_heuristic_headers_recover_all_four_fields(root):
    settings = Settings(root=root)
    run_describe(settings)
    run_correct(settings)
    report = run_headers(settings)
    assert report.items == 3 and report.flagged == 0
    headers = {h["source_path"].rsplit("/", 1)[-1]: h for h in table(root, "headers")}
    assert set(headers) == set(EXPECTED_HEADERS)
    for name, expected in EXPECTED_HEADERS.items():
        got = {f["name"]: f["value"] for f in headers[name]["fields"]}
        assert got == expected, name
        assert headers[name]["missing"] == []
        assert headers[name]["provider"] == "heuristic"
        assert all(f["source"] == "slide 1 key-value" for f in headers[name]["fields"])
    chunks = table(root, "chunks")
    side = [c for c in chunks if c["source_path"].endswith("crash_report_side_pole.pptx")]
    for chunk in side:
        assert chunk["markdown_v1"].startswith("Test Name: SP-2024-031 Oblique Pole 32 km/h\nRegion: US\nStage: Pilot Production\n")
        assert chunk["markdown_v1"].endswith(chunk["markdown_v0"])
        assert not chunk["markdown_v0"].startswith("Test Name:") or chunk["slide"] == 1
    meeting = [c for c in chunks if "meeting_notes" in c["source_path"]]
    assert all(c["markdown_v1"] == c["markdown_v0"] for c in meeting), "only test reports get a header"


def test_heuristic_describe_and_correct(root):
    settings = Settings(root=root)
    describe = run_describe(settings)
    assert describe.items == 13 and describe.provider == "heuristic"
    elements = table(root, "elements")
    chart = next(e for e in elements if e["kind"] == "chart" and "side_pole" in e["source_path"])
    assert chart["vlm_text"].startswith("Heuristic description: bar3DChart/col chart \"Lateral acceleration vs time\"")
    assert "Driver pelvis accel (g) peaks at 51.4 (40 ms)" in chart["vlm_text"]
    assert chart["vlm_provider"] == "heuristic" and chart["vlm_prompt"] == "heuristic:describe_image@ragprep-rules-1"
    table_el = next(e for e in elements if e["kind"] == "table" and "frontal" in e["source_path"])
    assert "table of 6 rows x 4 columns" in table_el["vlm_text"] and "HIC15" in table_el["vlm_text"]
    picture = next(e for e in elements if e["kind"] == "picture" and "frontal" in e["source_path"])
    assert "OCR found no legible text" in picture["vlm_text"]  # OCR was off for this root
    slide5 = next(c for c in table(root, "chunks") if "frontal" in c["source_path"] and c["slide"] == 5)
    assert '> **Description of picture "image.png"** (heuristic, ragprep-rules-1)' in slide5["markdown"]
    run_describe(settings)  # idempotent: still one description block
    slide5 = next(c for c in table(root, "chunks") if "frontal" in c["source_path"] and c["slide"] == 5)
    assert slide5["markdown"].count("Description of picture") == 1

    correct = run_correct(settings)
    assert correct.items == 25 and correct.flagged == 0
    chunks = table(root, "chunks")
    assert {c["correction"] for c in chunks if c["slide"]} <= {"corrected", "unchanged"}
    assert {c["correction"] for c in chunks if c["slide"] is None} == {"not_applicable"}
    for chunk in chunks:
        assert invented_numbers(chunk["markdown"], chunk["markdown_v0"]) == []


def test_numbers_are_sacred():
    assert numbers_in("HIC15 412.6 and 1,000 N") == {"15", "412.6", "1000"}
    assert invented_numbers("Peak 38.2 g at 60 ms", "Peak 38.2 g at 60 ms") == []
    assert invented_numbers("Peak 38.2 g at 60 ms", "Peak 38 g at 60 ms") == ["38"]


def test_stages_need_ingested_tables(tmp_path):
    with pytest.raises(MissingTablesError, match="ragprep ingest"):
        run_correct(Settings(root=tmp_path))


def test_openai_endpoint_end_to_end_with_flags_and_cache(root):
    """A model that rounds a number gets its slide flagged and kept uncorrected; header values
    not in the source are dropped; the second run is answered from the cache (zero requests)."""

    def responder(body, api):
        system = body["messages"][0]["content"]
        user = last_user_text(body)
        if "header fields" in system:
            values = {"Test Name": None, "Region": None, "Stage": None, "Purpose": None}
            match = re.search(r"Test Name: (.+)", user)
            values["Test Name"] = match.group(1).strip() if match else None
            values["Region"] = "Mars"  # not in the source: must be dropped
            return json.dumps(values)
        if "describe figures" in system:
            return "A chart of accelerations over time."
        slide = user.split("\n\n", 1)[1]
        return slide.replace("412.6", "413")  # a model that rounds a number

    with FakeLLMServer() as server:
        server.responder = responder
        settings = Settings(root=root, llm={"provider": "openai", "model": "local-llm", "base_url": server.openai_base_url})
        reports = [run_describe(settings), run_correct(settings), run_headers(settings)]
        first_calls = server.request_count
        assert first_calls == 13 + 25 + 3
        assert server.images_seen == 4  # three slide pictures and the textbook diagram

        chunks = table(root, "chunks")
        measured = next(c for c in chunks if "frontal" in c["source_path"] and c["slide"] == 3)
        assert measured["correction"] == "flagged"
        assert measured["correction_flags"] == ["numbers_not_in_source: 413"]
        assert "412.6" in measured["markdown_v0"]  # kept uncorrected
        assert measured["correct_provider"] == "openai" and measured["correct_prompt"] == "correct_slide@1"
        assert reports[1].flags == {"numbers_not_in_source": 1}

        headers = {h["source_path"].rsplit("/", 1)[-1]: h for h in table(root, "headers")}
        frontal = {f["name"]: f["value"] for f in headers["crash_report_frontal_offset.pptx"]["fields"]}
        assert frontal["Test Name"] == "FO-2024-017 ODB 64 km/h"
        assert frontal["Region"] is None  # "Mars" is nowhere in the slides: dropped, reported
        assert "Region" in headers["crash_report_frontal_offset.pptx"]["missing"]
        assert "values_not_in_source: Region" in headers["crash_report_frontal_offset.pptx"]["flag"]

        elements = table(root, "elements")
        described = [e for e in elements if e["vlm_text"]]
        assert all(e["vlm_provider"] == "openai" and e["vlm_model"] == "local-llm" for e in described)

        usage = {r.stage: r.usage[0] for r in reports}
        assert usage["correct"]["calls"] == 25 and usage["correct"]["input_tokens"] > 0

        again = [run_describe(settings), run_correct(settings), run_headers(settings)]
        assert server.request_count == first_calls, "unchanged inputs: zero new calls"
        assert sum(r.usage[0]["cache_hits"] for r in again) == first_calls
        assert table(root, "chunks") == chunks


def test_headers_not_stated_stay_empty_and_are_reported(tmp_path, corpus):
    """The corpus crash-test deck states none of the four fields: nothing is invented."""
    from datetime import datetime, timezone

    settings = Settings(root=tmp_path, ocr={"enabled": False})
    refs = discover([corpus / "pptx_auto_crashtest_report_pyisomme.pptx"], settings)
    assert refs[0].doc_type == "test_report"
    assemble_tables([ingest_document(r, settings, None) for r in refs], settings, datetime.now(timezone.utc))
    report = run_headers(settings)
    [header] = table(tmp_path, "headers")
    assert header["missing"] == ["Test Name", "Region", "Stage", "Purpose"]
    assert all(f["value"] is None and f["source"] is None for f in header["fields"])
    assert header["header_block"] == ""
    assert report.flags == {"missing_field": 4}
    assert all(c["markdown_v1"] == c["markdown_v0"] for c in table(tmp_path, "chunks"))


def test_korean_and_state_synonyms_and_file_name_tokens():
    from ragprep.settings import Settings
    from tasks.enrich.header_candidates import Labels, SlideText, best_per_field, header_candidates

    fields = ["Test Name", "Region", "Stage", "Purpose"]
    slides = [SlideText(1, "# 정면 충돌 시험\n\n시험명: FO-2025-003\n\n목적: 흉부 변위 확인\n\n| State | Design Validation |")]
    best = best_per_field(header_candidates(slides, "crash_KR_report.pptx", Labels(fields, Settings().headers.aliases)), fields)
    found = {name: (c.value, c.source) for name, c in best.items()}
    assert found["Test Name"] == ("FO-2025-003", "slide 1 key-value")
    assert found["Purpose"][0] == "흉부 변위 확인"
    assert found["Stage"] == ("Design Validation", "slide 1 table r1c2")
    assert found["Region"] == ("KR", "file name")
