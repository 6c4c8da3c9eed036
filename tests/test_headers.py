"""Report headers wherever real reports put them: a variety set of decks made here, English and
Korean, with the field-level precision and recall of the offline extractor, decoys and expert values."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pptx import Presentation
from pptx.util import Pt

from ragprep.settings import Settings
from ragprep.storage import Layout
from ragprep.tables import TableStore
from tasks.enrich.header_candidates import Labels, SlideText, header_candidates
from tasks.enrich.run import run_headers
from tasks.qa.review import apply_decisions_file
from tests.conftest import SAMPLE_DOCS, ingest_into

EN = {"Test Name": "FO-2024-017 ODB 64 km/h", "Region": "EU", "Stage": "Prototype P2", "Purpose": "Verify chest deflection"}
KO = {"Test Name": "KX7 정면 충돌 시험", "Region": "한국", "Stage": "개발 단계 2", "Purpose": "흉부 변위 확인"}
KO_LABELS = {"Test Name": "시험명", "Region": "지역", "Stage": "단계", "Purpose": "목적"}
NONE = dict.fromkeys(EN)


def _deck(path: Path, build) -> Path:
    prs = Presentation()
    build(prs)
    prs.save(path)
    return path


def _slide(prs, title: str | None = None):
    slide = prs.slides.add_slide(prs.slide_layouts[5 if title else 6])
    if title:
        slide.shapes.title.text = title
    return slide


def _table(slide, rows: list[list[str]], merge: list[tuple[int, int, int]] = ()):
    shape = slide.shapes.add_table(len(rows), len(rows[0]), Pt(40), Pt(150), Pt(620), Pt(30 * len(rows)))
    for r, row in enumerate(rows):
        for c, text in enumerate(row):
            shape.table.cell(r, c).text = text
    for r, c0, c1 in merge:
        shape.table.cell(r, c0).merge(shape.table.cell(r, c1))


def _box(slide, text: str, x: float, y: float, w: float = 200, h: float = 90):
    slide.shapes.add_textbox(Pt(x), Pt(y), Pt(w), Pt(h)).text_frame.text = text


def _labels(values: dict[str, str | None], korean: bool) -> list[tuple[str, str]]:
    return [(KO_LABELS[k] if korean else k, v) for k, v in values.items() if v]


def first_column(values, korean=False):
    return lambda prs: _table(_slide(prs, "Test Report"), [[k, v] for k, v in _labels(values, korean)])


def first_row(values, korean=False):
    pairs = _labels(values, korean)
    return lambda prs: _table(_slide(prs, "Test Report"), [[k for k, _ in pairs], [v for _, v in pairs]])


def grid(values, korean=False):
    p = _labels(values, korean)
    return lambda prs: _table(_slide(prs, "Test Report"), [[p[0][0], p[0][1], p[1][0], p[1][1]], [p[2][0], p[2][1], p[3][0], p[3][1]]])


def merged_labels(values, korean=False):
    rows = [[k, "", v] for k, v in _labels(values, korean)]  # the label cell spans two columns
    return lambda prs: _table(_slide(prs, "Test Report"), rows, merge=[(r, 0, 1) for r in range(len(rows))])


def key_value(values, korean=False, colon=": "):
    return lambda prs: _box(_slide(prs, "Test Report"), "\n".join(f"{k}{colon}{v}" for k, v in _labels(values, korean)), 40, 150, 600, 200)


def side_by_side(values, korean=False):
    def build(prs):
        slide = _slide(prs, "Test Report")
        pairs = _labels(values, korean)
        _box(slide, "\n".join(k for k, _ in pairs), 40, 150, 150, 120)
        _box(slide, "\n".join(v for _, v in pairs), 220, 150, 420, 120)
    return build


def split_over_two(values, korean=False):
    def build(prs):
        pairs = _labels(values, korean)
        _box(_slide(prs, "Test Report"), "\n".join(f"{k}: {v}" for k, v in pairs[:2]), 40, 150, 600, 120)
        _table(_slide(prs, "Test Conditions"), [[k, v] for k, v in pairs[2:]])
    return build


def title_line(_values=None, korean=False):
    return lambda prs: _box(_slide(prs, "Frontal ODB — Project KX7, P2"), "Summary of the chest results follows.", 40, 150)


def decoy_results(_values=None, korean=False):
    def build(prs):
        slide = _slide(prs, "Test Report")
        _box(slide, f"Test Name: {EN['Test Name']}", 40, 100, 600, 40)
        _table(slide, [["Stage", "Time (ms)", "Chest (g)"], ["Initial", "0", "0.0"], ["Peak", "60", "38.2"]])
    return build


def no_header(_values=None, korean=False):
    return lambda prs: _box(_slide(prs, "Test Report"), "Results are summarised on the next slide.", 40, 150)


CASES = [
    # (file name, builder, expected fields)
    ("report_a_column_en.pptx", first_column(EN), EN),
    ("report_a_column_ko.pptx", first_column(KO, True), KO),
    ("report_b_row_en.pptx", first_row(EN), EN),
    ("report_b_row_ko.pptx", first_row(KO, True), KO),
    ("report_c_grid_en.pptx", grid(EN), EN),
    ("report_c_grid_ko.pptx", grid(KO, True), KO),
    ("report_d_merged_en.pptx", merged_labels(EN), EN),
    ("report_d_merged_ko.pptx", merged_labels(KO, True), KO),
    ("report_e_keyvalue_en.pptx", key_value(EN), EN),
    ("report_e_keyvalue_ko.pptx", key_value(KO, True, " ： "), KO),
    ("report_f_boxes_en.pptx", side_by_side(EN), EN),
    ("report_f_boxes_ko.pptx", side_by_side(KO, True), KO),
    ("report_g_split_en.pptx", split_over_two(EN), EN),
    ("report_g_split_ko.pptx", split_over_two(KO, True), KO),
    ("crash_h_title_line.pptx", title_line(), {"Test Name": "Frontal ODB", "Region": None, "Stage": "P2", "Purpose": None}),
    ("crash_i_decoy_results.pptx", decoy_results(), {**NONE, "Test Name": EN["Test Name"]}),
    ("crash_j_no_header.pptx", no_header(), NONE),
]


@pytest.fixture(scope="module")
def variety(tmp_path_factory):
    folder = tmp_path_factory.mktemp("decks")
    for name, build, _ in CASES:
        _deck(folder / name, build)
    root = tmp_path_factory.mktemp("root")
    settings = ingest_into(root, [folder])
    report = run_headers(settings)
    store = TableStore(Layout(settings.root))
    return settings, report, store


def _found(store) -> dict[str, dict[str, dict]]:
    documents = {d.doc_id: d.file_name for d in store.read("documents")}
    return {documents[h.doc_id]: {f.name: f.model_dump() for f in h.fields} for h in store.read("headers")}


def test_every_layout_is_typed_as_a_report_and_read(variety):
    _, _, store = variety
    documents = {d.file_name: d for d in store.read("documents")}
    for name, _, expected in CASES:
        if name.startswith("report_"):  # no file-name rule applies: typed by what the first slides carry
            assert documents[name].doc_type == "test_report", (name, documents[name].doc_type_reason)
            assert documents[name].doc_type_reason.startswith("content: its first slides carry"), name
    assert documents["crash_j_no_header.pptx"].doc_type_reason == "file name matches '*crash*'"


def test_field_level_precision_and_recall(variety, capsys):
    _, _, store = variety
    found = _found(store)
    predicted = correct = expected_n = 0
    wrong = []
    for name, _, expected in CASES:
        fields = found[name]
        for field, value in expected.items():
            got = fields[field]["value"]
            expected_n += value is not None
            predicted += got is not None
            if got is not None and got == value:
                correct += 1
            elif got is not None:
                wrong.append((name, field, got, value))
    precision, recall = correct / predicted, correct / expected_n
    with capsys.disabled():
        print(f"\nheader fields over {len(CASES)} decks: precision {precision:.3f} ({correct}/{predicted}), "
              f"recall {recall:.3f} ({correct}/{expected_n})")
    assert not wrong, wrong  # a wrong header is worse than none
    assert precision == 1.0
    assert recall >= 0.95


def test_sources_and_confidence_are_recorded(variety):
    _, _, store = variety
    found = _found(store)
    assert found["report_b_row_en.pptx"]["Stage"]["source"] == "slide 1 table r2c3"
    assert found["report_a_column_ko.pptx"]["Test Name"]["source"] == "slide 1 table r1c2"
    assert found["report_f_boxes_en.pptx"]["Region"]["source"] == "slide 1 boxes"
    assert found["report_g_split_en.pptx"]["Purpose"]["source"].startswith("slide 2 table")
    title = found["crash_h_title_line.pptx"]
    assert title["Stage"]["source"] == "slide 1 title" and title["Stage"]["confidence"] < 0.8


def test_missing_and_low_confidence_fields_go_to_review(variety):
    _, report, store = variety
    documents = {d.doc_id: d.file_name for d in store.read("documents")}
    review = {documents[h.doc_id]: h.review for h in store.read("headers")}
    assert review["report_a_column_en.pptx"] == []
    assert set(review["crash_h_title_line.pptx"]) == {"Test Name", "Region", "Stage", "Purpose"}
    assert set(review["crash_j_no_header.pptx"]) == set(EN)
    assert report.flags.get("needs_review", 0) >= 2 and report.flags.get("typed_by_content") == 14


def test_expert_values_win_on_the_next_build(variety, tmp_path):
    settings, _, store = variety
    doc_id = next(d.doc_id for d in store.read("documents") if d.file_name == "crash_h_title_line.pptx")
    decisions = tmp_path / "decisions.json"
    decisions.write_text(json.dumps({"format": "ragprep-review-decisions/1", "decisions": [], "headers": [
        {"doc_id": doc_id, "field": "Region", "value": "EU", "reviewer": "kim"},
        {"doc_id": doc_id, "field": "Stage", "value": "P2", "reviewer": "kim"},
    ]}))
    assert apply_decisions_file(decisions, settings.root).header_values == 2
    run_headers(settings)
    row = next(h for h in store.read("headers") if h.doc_id == doc_id)
    fields = {f.name: f for f in row.fields}
    assert (fields["Region"].value, fields["Region"].source, fields["Region"].confidence) == ("EU", "expert", 1.0)
    assert "Region: EU" in row.header_block and "Stage" not in row.review and "Region" not in row.missing
    chunk = next(c for c in store.read("chunks") if c.doc_id == doc_id)
    assert chunk.markdown_v1.startswith("Test Name: Frontal ODB\nRegion: EU\nStage: P2")


def test_full_width_values_are_normalised():
    labels = Labels(["Test Name", "Stage"], Settings().headers.aliases)
    slide = SlideText(1, "시험명：ＦＯ－２０２４－０１７\n\n| 단계 | Ｐ２ |")
    found = {c.field: c.value for c in header_candidates([slide], "deck.pptx", labels)}
    assert found == {"Test Name": "FO-2024-017", "Stage": "P2"}


def test_sample_docs_headers_are_unchanged_by_the_new_rules(tmp_path):
    settings = ingest_into(tmp_path, [SAMPLE_DOCS / "crash_report_side_pole.pptx"])
    run_headers(settings)
    [row] = TableStore(Layout(settings.root)).read("headers")
    assert {f.name: f.value for f in row.fields} == {
        "Test Name": "SP-2024-031 Oblique Pole 32 km/h", "Region": "US", "Stage": "Pilot Production",
        "Purpose": "Confirm curtain airbag head coverage at 75 degree impact angle",
    }
