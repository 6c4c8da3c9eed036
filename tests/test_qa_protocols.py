"""Protocol generator rules by registry name, on real chunks (the chunk text stored with the round-11 labelled pairs of
the IIHS moderate overlap protocol, the development document): test conditions in prose, dimensions, rating tables and
glossary lines."""

from __future__ import annotations

import functools
import json
from pathlib import Path

from tasks.qa import rules
from tasks.qa.registry import RULES, load_all
from tasks.qa.rules import ChunkView, Handle

load_all()

IIHS = Handle(title="Moderate Overlap Frontal Crashworthiness Evaluation 2.0: Crash Test Protocol", kind="document",
              doc_kind="protocol")
LABELS = Path(__file__).parent / "data" / "qa_labels_gen_round11.jsonl"


@functools.cache
def _rows() -> list[dict]:
    return [json.loads(line) for line in LABELS.read_text(encoding="utf-8").splitlines() if line.strip()]


def real_view(text: str, handle: Handle, section: str = "") -> ChunkView:
    row = next(r for r in _rows() if text in r["chunk_markdown"])
    return ChunkView(title=row["chunk_title"], language="en", markdown=row["chunk_markdown"],
                     handle=Handle(**{**handle.__dict__, "section": section}))


def asked(name: str, view: ChunkView) -> dict[str, str]:
    return {c.question: c.answer for c in RULES[name].check(view)}


def test_a_test_condition_in_prose_is_asked_with_its_quantity_and_subject():
    view = real_view("Offset barrier crash tests are conducted", IIHS, "Impact speed and overlap")
    pairs = asked("generate.protocol.test_condition", view)
    question = ('According to the "Impact speed and overlap" section of the "Moderate Overlap Frontal Crashworthiness '
                'Evaluation 2.0: Crash Test Protocol" document, at what speed are offset barrier crash tests conducted?')
    assert pairs[question] == "Offset barrier crash tests are conducted at 64.4 ± 1 km/h and a 40 ± 1% overlap."
    # the barrier's dimensions are the stated-value rule's (named by their own section), not asked twice here
    assert not any(q.endswith("what are the dimensions of the base unit?") for q in pairs)
    # a generic distance names no dimension: "25 cm before the barrier" is not asked as "what distance ..."
    assert not any("what distance" in q for q in pairs)
    # no question without a protocol: the same chunk in a document of another kind gives none
    other = ChunkView(title=view.title, language="en", markdown=view.markdown,
                      handle=Handle(title=IIHS.title, doc_kind="report"))
    assert not asked("generate.protocol.test_condition", other)
    # a coverage rule behind qa.coverage_rules (too few labelled pairs to measure), so the default generator does not ask it
    assert not any(q.endswith("at what speed are offset barrier crash tests conducted?") for q in
                   (c.question for c in rules.generate(view, 15)))


def test_condition_question_forms():
    ask = RULES["generate.protocol.test_condition"].check.__globals__["condition_question"]
    assert ask("The roof is crushed to 127 mm at 5 mm/s.") == "to what distance is the roof crushed?"
    assert ask("The load shall not exceed 10 kN.") == ""  # a requirement: the limit rules ask it
    assert ask("It is conducted at 50 km/h.") == ""  # a pronoun subject
    assert ask("The model HX210:36.48.05M is used.") == ""  # an identifier is no measured value


def test_rating_table_asks_every_row_with_both_names():
    table = ("| Rating | Strength-to-weight ratio |\n|---|---|\n| Good | ≥ 4.00 |\n| Acceptable | ≥ 3.25 |\n"
             "| Marginal | ≥ 2.50 |\n| Poor | < 2.50 |")
    rows = RULES["generate.protocol.rating_table"].check.__globals__["rating_rows"](table)
    assert rows == [("Good", "Strength-to-weight ratio", "≥ 4.00"), ("Acceptable", "Strength-to-weight ratio", "≥ 3.25"),
                    ("Marginal", "Strength-to-weight ratio", "≥ 2.50"), ("Poor", "Strength-to-weight ratio", "< 2.50")]
    view = ChunkView(title="Ratings", language="en", markdown=table, tables=[("t1", table)],
                     handle=Handle(title="Roof Strength Test Protocol", doc_kind="protocol", section="Ratings"))
    pairs = asked("generate.protocol.rating_table", view)
    assert pairs['According to the "Ratings" section of the "Roof Strength Test Protocol" document, what '
                 'Strength-to-weight ratio gives a rating of "Poor"?'] == "Strength-to-weight ratio < 2.50"
    # a table without a rating column is none
    assert not RULES["generate.protocol.rating_table"].check.__globals__["rating_rows"](
        "| Test | Speed |\n|---|---|\n| ODB | 64 km/h |\n| Side | 50 km/h |")


def test_glossary_lines_drop_the_dash_and_skip_trivial_or_verb_like_terms():
    entry = RULES["generate.protocol.glossary"].check.__globals__["glossary_entry"]
    assert entry("Variant - is a version of a Model that differs in mass, trim or powertrain.") == (
        "Variant", "a version of a Model that differs in mass, trim or powertrain.")
    assert entry("Manufacturer - is the company which produces the cars.") is None  # trivial
    assert entry("Make - is the trade name of the Manufacturer as shown on the car.") is None  # reads as a verb
    assert entry("Partner - is short.") is None  # too short to be a definition


def test_a_glossary_line_is_asked_only_by_the_glossary_rule():
    from tasks.qa.rules import generate

    markdown = ("# DEFINITIONS\n\nMake - is the trade name of the Manufacturer as shown on the car badge.\n\n"
                "Variant - is a version of a Model that differs in mass, trim or powertrain from the tested car.")
    view = ChunkView(title="DEFINITIONS", language="en", markdown=markdown,
                     handle=Handle(title="Star Rating Protocol", doc_kind="protocol", section="DEFINITIONS"))
    assert RULES["generate.definition.glossary_line"].check("Make - is the trade name of the Manufacturer.")
    pairs = {c.question: (c.answer, c.rule) for c in generate(view, 10)}
    assert pairs == {'According to the "DEFINITIONS" section of the "Star Rating Protocol" document, what does "Variant" mean?': (
        "a version of a Model that differs in mass, trim or powertrain from the tested car.",
        "generate.protocol.glossary")}
