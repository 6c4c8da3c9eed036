"""Results tables of tests x measures (``generate.table.results``) and a deck named by its title slide's subtitle
(``generate.handle.title_slide_subtitle``): on made-up tables of several shapes and on the real crash-test deck whose
result tables are pictures (its OCR read once per module)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from tasks.qa import rules
from tasks.qa.generate import carried_sections, chunk_handle, chunk_view, document_handles
from tasks.qa.registry import RULES, load_all
from tasks.qa.rules.text import ChunkView, Handle
from tests.conftest import CORPUS, needs_tesseract

DECK = CORPUS / "pptx_auto_crashtest_report_pyisomme.pptx"
RESULTS = "generate.table.results"
SHAPE = "generate.table.results_shape"
SUBTITLE = "generate.handle.title_slide_subtitle"
SCORES = "generate.table.score_shape"

TESTS_BY_MEASURES = """|  | 11391 | 14084 |
|---|---|---|
| HIC 15 [] | 327.7 | 277.7 |
| Chest Deflection [mm] | -26.56 | -31.11 |
| Neck Fz tension [KN] | 0.6988 | 1.209 |
| Shoulder Belt Load [nan] | nan | nan |
"""


def _view(markdown: str, section: str = "Driver Values", title: str = "Frontal test series") -> ChunkView:
    handle = Handle(title=title, kind="report", section=section, section_kind="slide")
    return ChunkView(markdown=f"# {section}\n\n{markdown}", language="en", title=section, heading_path=[section],
                     tables=[("t1", markdown)], handle=handle)


def _candidates(view: ChunkView) -> list:
    load_all()
    return list(RULES[RESULTS].check(view))


def test_results_rules_are_registered():
    load_all()
    assert {RESULTS, SHAPE, SUBTITLE} <= set(RULES)
    assert rules.source_rule(RULES[RESULTS].check) == RESULTS


def test_shape_tests_by_measures_and_transposed():
    shape = RULES[SHAPE].check
    table = shape(TESTS_BY_MEASURES)
    assert table.tests == ["11391", "14084"]
    assert table.measures[1] == ("Chest Deflection", "mm") and table.measures[2] == ("Neck Fz tension", "kN")
    transposed = shape("|  | OLC [g] |\n|---|---|\n| 11391 | 33.60 |\n| 14084 | 37.34 |\n")
    assert transposed.tests == ["11391", "14084"] and transposed.values == [["33.60", "37.34"]]
    stages = shape("|  | P1 | P2 |\n|---|---|---|\n| HIC15 [-] | 410 | 388 |\n| Chest deflection (mm) | 31.4 | 29.0 |\n")
    assert stages.tests == ["P1", "P2"]


@pytest.mark.parametrize("markdown", [
    "| Metric | Driver | Passenger | Limit |\n|---|---|---|---|\n| HIC15 | 412.6 | 388.9 | 700 |\n| Chest (mm) | 31 | 27 | 42 |\n",
    "|  | 11391 | 14084 |\n|---|---|---|\n| Head | 4.0 | 4.0 |\n| Neck | 4.0 | 4.0 |\n| Femur | 4.0 | 0.0 |\n",
    "|  | 2019 | 2020 |\n|---|---|---|\n| Revenue | 10 | 12 |\n| Staff | 4 | 5 |\n",
    "| 11391 | 14084 |\n|---|---|\n| 4.0 | 4.0 |\n",
])
def test_shape_refuses_other_tables(markdown):
    """Dummies by metric with a limit column, scores without units, a table of years, a headless block: no results."""
    assert RULES[SHAPE].check(markdown) is None


def test_cells_name_test_and_measure_with_unit_and_skip_empty_cells():
    pairs = _candidates(_view(TESTS_BY_MEASURES))
    lookups = {p.question: p.answer for p in pairs if p.question_type == "numeric"}
    assert lookups['In test 14084 of the "Frontal test series" report, what was the driver\'s chest deflection?'] == "-31.11 mm"
    assert not any("HIC" in q for q in lookups), "the compared measure's cells are in the comparison's answer"
    assert lookups['In test 14084 of the "Frontal test series" report, what was the driver\'s neck Fz tension?'] == "1.209 kN"
    assert not any("nan" in p.answer.lower() or "Shoulder" in p.question for p in pairs)


def test_one_comparison_on_one_positive_measure_never_across_units():
    pairs = _candidates(_view(TESTS_BY_MEASURES))
    compared = [p for p in pairs if p.question_type == "comparative"]
    assert len(compared) == 1
    assert "HIC 15" in compared[0].question and compared[0].answer == "11391 (327.7 vs. 277.7)"
    negative = "\n".join(ln for ln in TESTS_BY_MEASURES.splitlines() if "HIC" not in ln and "Neck" not in ln)
    # deflections are negative: "higher" means nothing there
    assert not [p for p in _candidates(_view(negative)) if p.question_type == "comparative"]
    assert not any("highest" in p.question for p in pairs)


def test_scores_asked_only_where_the_tests_differ():
    scores = "|  | 11391 | 14084 |\n|---|---|---|\n| Head | 4.0 | 4.0 |\n| Femur | 4.0 | 0.0 |\n| Chest | nan | nan |\n"
    pairs = _candidates(_view(scores, section="Driver Rating"))
    assert [(p.question.split(" of ")[0], p.question.rsplit("what was ", 1)[1], p.answer) for p in pairs] == [
        ("In test 11391", "the driver's femur rating?", "4.0"), ("In test 14084", "the driver's femur rating?", "0.0")]
    assert RULES[SCORES].check(scores, "Driver Values") is None, "only a title naming the score says what the cells are"
    assert _candidates(_view(scores, section="Driver Values")) == []


def test_no_handle_no_question():
    view = _view(TESTS_BY_MEASURES, title="")
    assert _candidates(view) == []


def test_subtitle_names_a_deck_whose_title_slide_says_report():
    subtitle = RULES[SUBTITLE].check
    slide = "# Report\n\nEuro NCAP | Frontal-Impact against Rigid Wall with 100 % Overlap at 50 km/h\n\n11391 | 14084\n"
    assert subtitle(slide) == "Euro NCAP Frontal-Impact against Rigid Wall with 100 % Overlap at 50 km/h"
    assert subtitle("# Report\n\n11391 | 14084\n\nEuro NCAP frontal test\n") == ""  # only the first line is a subtitle
    assert subtitle("# Report\n\n- Test Name: FO-2024-017\n") == ""


@pytest.fixture(scope="module")
def deck_pairs(extracted):
    """The generator's candidates per slide of the real deck (OCR on), handles built as the QA stage builds them."""
    run = extracted(DECK, ocr=True)
    elements = {e.element_id: e for e in run.elements}
    chunks = list(run.chunks)
    handle = document_handles(chunks)[chunks[0].doc_id]
    carried = carried_sections(chunks)
    out = {}
    for chunk in chunks:
        view = chunk_view(chunk, elements)
        view = replace(view, handle=chunk_handle(chunk, handle, carried.get(chunk.chunk_id, "")))
        out[chunk.slide] = rules.generate(view, 6)
    return handle, out


@needs_tesseract
def test_real_deck_named_by_its_title_slide_subtitle(deck_pairs):
    handle, _ = deck_pairs
    assert handle.title == "Euro NCAP Frontal-Impact against Rigid Wall with 100 % Overlap at 50 km/h"


@needs_tesseract
def test_real_deck_results_pairs(deck_pairs):
    _, by_slide = deck_pairs
    results = {s: [p for p in pairs if p.rule == RESULTS] for s, pairs in by_slide.items()}
    name = '"Euro NCAP Frontal-Impact against Rigid Wall with 100 % Overlap at 50 km/h"'

    def asked(slide: int, test: str, measure: str) -> str:
        found = [p.answer for p in results[slide]
                 if p.question.startswith(f"In test {test} of the {name} ") and p.question.endswith(f", what was {measure}?")]
        assert len(found) == 1, (test, measure, [p.question for p in results[slide]])
        return found[0]

    assert asked(5, "11391", "the driver's chest deflection") == "-26.56 mm"
    assert asked(5, "14084", "the driver's neck Fz tension") == "1.209 kN"
    assert any(p.question.endswith("the driver's HIC 15: test 11391 or test 14084?") for p in results[5])
    assert any("front passenger's" in p.question for p in results[14])
    assert [p.answer for p in results[29]] == ["14084 (37.34 g vs. 33.60 g)"]
    every = [p for pairs in by_slide.values() for p in pairs]
    assert not any(p.answer.strip().lower() == "nan" or " 11391 for " in p.question for p in every)
    assert not results[23], "the rear passenger's table is all nan: nothing asked"
    assert [p.answer for p in results[4]] == ["4.0", "0.0"] and "driver's femur rating" in results[4][1].question
    assert not results[13], "the front passenger's ratings are alike in both tests: a constant, not asked"
