"""Generator rules of the regcov round by registry name, on real chunks (the chunk text stored with the round's labelled
pairs, ``tests/data/qa_labels_regcov_round1.jsonl``): a measured value stated without a modal
(``generate.requirement.stated_value``, a coverage rule) and a table named by the bold caption it carries."""

from __future__ import annotations

from tasks.qa import rules
from tasks.qa.registry import RULES, load_all
from tasks.qa.rules import ChunkView, Handle
from tasks.qa.rules.coverage import coverage_candidates
from tests.qa_labelled import labelled_rows

load_all()

IIHS = Handle(title="Moderate Overlap Frontal Crashworthiness Evaluation 2.0: Crash Test Protocol", kind="document",
              section="Test vehicle preparation", doc_kind="protocol")
R95 = Handle(title="UN Regulation No. 95", kind="standard", doc_kind="regulation")
FMVSS201 = Handle(title="FMVSS No. 201", kind="standard", section="S8 Target location and test conditions",
                  doc_kind="regulation")


def real_view(text: str, handle: Handle) -> ChunkView:
    row = next(r for r in labelled_rows() if text in r["chunk_markdown"] and r["part"].startswith("regcov"))
    return ChunkView(title=row["chunk_title"], language="en", markdown=row["chunk_markdown"], handle=handle)


def asked(name: str, view: ChunkView) -> dict[str, str]:
    return {c.question: c.answer for c in RULES[name].check(view)}


def test_stated_values_are_asked_by_what_they_measure():
    pairs = asked("generate.requirement.stated_value", real_view("The onboard braking system weighs", IIHS))
    place = ('According to the "Test vehicle preparation" section of the "Moderate Overlap Frontal Crashworthiness '
             'Evaluation 2.0: Crash Test Protocol" document, ')
    assert pairs[place + "how much does the onboard braking system weigh?"] == (
        "The onboard braking system weighs approximately 11 kg.")
    later = asked("generate.requirement.stated_value", real_view("The test weight of the vehicle is 175", IIHS))
    assert later[place + "what is the test weight of the vehicle?"].startswith("The test weight of the vehicle is 175–250 kg")
    # "The combined weight of the systems is 14 kg.": which systems only the sentence before says
    assert "The combined weight of the systems is 14 kg." in real_view("The onboard braking system weighs", IIHS).markdown
    assert not any("the systems" in q for q in pairs)
    # "The weight of this rack is approximately 14 kg.": a deictic subject
    assert "The weight of this rack is approximately 14 kg." in real_view("The onboard braking system weighs", IIHS).markdown
    assert not any("rack" in q for q in pairs)


def test_a_located_value_is_a_where_question_with_its_condition():
    pairs = asked("generate.requirement.stated_value", real_view("the head center of gravity (CG-R) is located", FMVSS201))
    question = ('According to the "S8 Target location and test conditions" section of FMVSS No. 201, where is the head '
                'center of gravity located for rear outboard designated seating positions?')
    assert pairs[question].startswith("For rear outboard designated seating positions, the head center of gravity (CG-R)")


def test_dimensions_and_requirements():
    ask = RULES["generate.requirement.stated_value"].check.__globals__["stated_value_question"]
    assert ask("The front plates are 1,500 ± 1 mm wide and 250 ± 1 mm high.") == "what are the dimensions of the front plates?"
    assert ask("The base unit is 184 cm high.") == "how high is the base unit?"
    assert ask("The mass of the trolley shall be 1,000 kg.") == ""  # a requirement: the limit rules ask it
    assert ask("It is 50 km/h.") == ""
    assert ask("The number of seats is 7.") == ""  # a count, not a measure with its unit


def test_stated_value_is_a_coverage_rule_asked_only_where_no_other_rule_asks():
    view = real_view("The XSensor power supply weighs 9 kg.", IIHS)
    assert not any(c.question.endswith("how much does the XSensor power supply weigh?") for c in rules.generate(view, 30))
    bare = ChunkView(title="Test vehicle preparation", language="en", handle=IIHS,
                     markdown="# Test vehicle preparation\n\nThe XSensor power supply weighs 9 kg.")
    assert not rules.generate(bare, 5)  # no default rule asks it, so the fallback would
    assert [c.rule for c in coverage_candidates(bare, 5)] == ["generate.requirement.stated_value"]
    # only regulations and protocols
    report = ChunkView(title=bare.title, language="en", markdown=bare.markdown, handle=Handle(title=IIHS.title, doc_kind="report"))
    assert not asked("generate.requirement.stated_value", report)


def test_a_table_is_named_by_its_bold_caption_and_annex():
    row = next(r for r in labelled_rows() if "**Table 2 Dummy Component Masses**" in r["chunk_markdown"])
    markdown = row["chunk_markdown"]
    start = markdown.index("**Table 2 Dummy Component Masses**")
    table = markdown[start:markdown.index("\n\n4.2. Principal dimensions")]
    view = ChunkView(title=row["chunk_title"], language="en", markdown=markdown, handle=R95,
                     heading_path=["Annex 6 Technical description of the side impact dummy", "4. Main characteristics"],
                     tables=[("t2", table)])
    questions = [c.question for c in rules._table_candidates(view)]  # generate.source.table_candidates
    assert "In Table 2 of Annex 6 of UN Regulation No. 95, what is the mass (kg) for head?" in questions
    assert not any("the table of paragraph" in q for q in questions)
