"""Coverage rules by registry name, on text of real chunks (FMVSS 214 and 201 as the PDFs' text layer reads them):
procedure steps and set-up statements of numbered provisions, asked only for a chunk no other rule asks of."""

from __future__ import annotations

import asyncio

from ragprep.engines.generator import Generator
from ragprep.prompts import load_prompt
from ragprep.settings import Settings
from schemas.chunks import ChunkRow
from tasks.qa import generate as qa_generate
from tasks.qa import rules
from tasks.qa.registry import RULES, load_all
from tasks.qa.rules import ChunkView, Handle
from tasks.qa.rules.coverage import COVERAGE_SOURCES, coverage_candidates

load_all()

FMVSS214 = Handle(title="FMVSS No. 214", kind="standard")
FMVSS201 = Handle(title="FMVSS No. 201", kind="standard")

SECOND_ROW = ("# § 571.214 Standard No. 214; Side impact protection / S8.3.3 5th Percentile Female Dummy in Second Row Seat\n\n"
              "S8.3.3 5th Percentile Female Dummy in Second Row Seat.\n\n"
              "S8.3.3.1 Lumbar support adjustment. Position adjustable lumbar supports so that the lumbar support is in its "
              "lowest, retracted or deflated adjustment position.\n\n"
              "S8.3.3.2 Other seat adjustments. Position any adjustable parts of the seat that provide additional support so "
              "that they are in the lowest or non-deployed adjustment position.\n")

DUMMIES = ("# § 571.214 Standard No. 214; Side impact protection / S11 Anthropomorphic test dummies\n\n"
           "S11 Anthropomorphic test dummies. The anthropomorphic test dummies used to evaluate a vehicle’s performance in "
           "the moving deformable barrier and vehicle-to-pole tests are specified in 49 CFR part 572.\n\n"
           "S11.3 The stabilized temperature of the test dummy at the time of the test is at any temperature between 20.6 "
           "degrees C and 22.2 degrees C.\n")

POSITIONING = ("# § 571.214 Standard No. 214; Side impact protection / S12.1.2 Positioning a Part 572 Subpart F (SID) dummy\n\n"
               "S12.1.2 Positioning a Part 572 Subpart F (SID) dummy in any front outboard passenger seating position.\n\n"
               "(a) Torso. Hold the dummy’s head in place and push laterally on the non-impacted side of the upper torso in "
               "a single stroke with a force of 66.7–89.0 N (15–20 lb) towards the impacted side.\n\n"
               "(d) Feet. The feet of the test dummy are placed on the vehicle’s toeboard with the heels resting on the "
               "floorpan as close as possible to the intersection of the toeboard and floorpan.\n")

EXCLUSIONS = ("# § 571.214 Standard No. 214; Side impact protection / S5 General exclusions\n\n"
              "S5 General exclusions. (a) Exclusions from S6 (door crush resistance). A vehicle need not meet the "
              "requirements of S6 (door crush resistance) for—\n\n"
              "(4) Any side door that is designed to be easily attached to or removed (e.g., using simple hand tools such "
              "as pliers and/or a screwdriver) from a motor vehicle manufactured for operation without doors.\n")


def view(markdown: str, handle: Handle = FMVSS214) -> ChunkView:
    return ChunkView(title=markdown.splitlines()[0].lstrip("# "), language="en", markdown=markdown, handle=handle)


def made(name: str, v: ChunkView) -> list[tuple[str, str]]:
    return [(c.question, c.answer) for c in RULES[name].check(v)]


def test_rules_are_registered_by_name():
    for name in ("generate.coverage.procedure_step", "generate.coverage.provision_statement", "generate.coverage.imperative"):
        assert RULES[name].kind == "generate"
    # the protocol test-condition rule is a coverage rule too (under the bar by default: rules/protocols.py)
    assert [RULES[n].check for n in ("generate.coverage.procedure_step", "generate.coverage.provision_statement",
                                     "generate.protocol.test_condition", "generate.requirement.stated_value")
            ] == list(COVERAGE_SOURCES)


def test_an_instruction_is_an_imperative_and_a_statement_is_not():
    imperative = RULES["generate.coverage.imperative"].check
    assert imperative("Position adjustable lumbar supports so that the lumbar support is in its lowest position.")
    assert imperative("For other seating positions, without inducing pelvis or torso movement, place the heels of the "
                      "dummy as far forward as possible on the floor pan.")
    assert not imperative("The upper torso of the test dummy rests against the seat back.")
    assert not imperative("Set-up of the dummy is described in Annex 5.")  # "Set-up" is a noun


def test_a_numbered_procedure_step_is_asked_by_its_paragraph_and_title():
    asked = made("generate.coverage.procedure_step", view(SECOND_ROW))
    assert asked == [
        ("What does paragraph S8.3.3.1 (Lumbar support adjustment) of FMVSS No. 214 prescribe?",
         "Position adjustable lumbar supports so that the lumbar support is in its lowest, retracted or deflated "
         "adjustment position."),
        ("What does paragraph S8.3.3.2 (Other seat adjustments) of FMVSS No. 214 prescribe?",
         "Position any adjustable parts of the seat that provide additional support so that they are in the lowest or "
         "non-deployed adjustment position."),
    ]


def test_an_item_takes_its_inline_title_and_keeps_its_value():
    steps = made("generate.coverage.procedure_step", view(POSITIONING))
    assert steps == [("What does paragraph S12.1.2(a) (Torso) of FMVSS No. 214 prescribe?",
                      "Hold the dummy’s head in place and push laterally on the non-impacted side of the upper torso in a "
                      "single stroke with a force of 66.7–89.0 N (15–20 lb) towards the impacted side.")]
    statements = made("generate.coverage.provision_statement", view(POSITIONING))
    assert [q for q, _ in statements] == ["What does paragraph S12.1.2(d) (Feet) of FMVSS No. 214 specify?"]
    assert statements[0][1].startswith("The feet of the test dummy are placed on the vehicle’s toeboard")


def test_a_set_up_statement_is_asked_but_a_pointer_is_not():
    asked = made("generate.coverage.provision_statement", view(DUMMIES))
    assert asked == [("What does paragraph S11.3 (Anthropomorphic test dummies) of FMVSS No. 214 specify?",
                      "The stabilized temperature of the test dummy at the time of the test is at any temperature between "
                      "20.6 degrees C and 22.2 degrees C.")]  # S11 only says where the dummies are specified


def test_an_item_of_a_list_is_not_asked_without_its_lead_in():
    assert made("generate.coverage.provision_statement", view(EXCLUSIONS)) == []


def test_nothing_is_asked_without_a_document_handle_or_of_administrative_paragraphs():
    assert made("generate.coverage.procedure_step", view(SECOND_ROW, Handle())) == []
    phase_in = ("# S13 Phase-in of moving deformable barrier and vehicle-to-pole performance requirements\n\n"
                "S13.2.1 Attribution. Count a vehicle produced by more than one manufacturer once, for the manufacturer "
                "that imported it.\n")
    assert made("generate.coverage.procedure_step", view(phase_in)) == []


def test_a_paragraph_in_blocks_is_asked_once_and_lost_glyphs_or_pointers_are_not_asked():
    joints = ("# Annex 7 Description of manikin / 4. Adjustment of the joints\n\n4.2. Knee joint\n\nTighten the knee joint.\n\n"
              "Set the thigh and lower leg vertical.\n\nRotate the lower leg through 30°.\n")
    asked = made("generate.coverage.procedure_step", view(joints, Handle(title="UN Regulation No. 16", kind="standard")))
    assert [q for q, _ in asked] == ["What does paragraph 4.2 (Knee joint) of Annex 7 to UN Regulation No. 16 prescribe?"]
    assert asked[0][1].split() == "Tighten the knee joint. Set the thigh and lower leg vertical. Rotate the lower leg through 30°.".split()
    lost = ("# Appendix 2\n\n2.7. Test procedure. Push vertically downwards on the centre of the fixture with a force of "
            "100 N \uf0b1 10 N, and remove the force.\n\n2.8. Test procedure. Push rearwards with a force of 100 N  10 N.\n")
    assert made("generate.coverage.procedure_step", view(lost)) == []
    pointer = ("# Annex 6\n\n4.1.1. Mass. The masses of the main dummy components are presented in table 2 of this annex.\n\n"
               "2.5.1. Thorax. The thorax is shown as part No. 4 in Figure 1 of this annex.\n\n"
               "3.2.1. Neck-shoulder-thorax. The neck-bracket is mounted to the shoulder block by four screws.\n")
    assert made("generate.coverage.provision_statement", view(pointer)) == []


def test_a_long_step_is_asked_for_its_first_sentence():
    text = ("# § 571.214 Standard No. 214; Side impact protection / S8.3 Adjustable seats\n\n"
            "S8.3.1.3.1 Seat position adjustment. Using only the controls that primarily move the seat and seat cushion "
            "independent of the seat back in the fore and aft directions, move the seat cushion reference point (SCRP) to "
            "the rearmost position. Using any part of any control, other than those just used, determine the full range "
            "of angles of the seat cushion reference line and set the seat cushion reference line to the middle of the "
            "range. Using any part of any control other than those that primarily move the seat or seat cushion fore and "
            "aft, while maintaining the seat cushion reference line angle, place the SCRP to its lowest position.\n")
    assert made("generate.coverage.procedure_step", view(text)) == [
        ("What is the first step that paragraph S8.3.1.3.1 (Seat position adjustment) of FMVSS No. 214 prescribes?",
         "Using only the controls that primarily move the seat and seat cushion independent of the seat back in the fore "
         "and aft directions, move the seat cushion reference point (SCRP) to the rearmost position.")]


def _chunk(markdown: str) -> ChunkRow:
    return ChunkRow(chunk_id="c1", doc_id="d1", source_path="/x/fmvss214.pdf", unit="section", markdown=markdown,
                    title="T", heading_path=[markdown.splitlines()[0].lstrip("# ")], element_ids=[], token_count=200,
                    page_start=9, page_end=9, has_table=False, has_image=False, has_chart=False, has_ocr=False)


async def _hooked(markdown: str, tmp_path, on: bool = True) -> list[str]:
    settings = Settings(root=tmp_path, llm={"provider": "heuristic"}, qa={"coverage_rules": on})
    generator = Generator(settings, "llm")
    try:
        chunk = _chunk(markdown)
        rows, failure = await qa_generate.generate_for_chunk(chunk, view(markdown), settings, generator,
                                                             load_prompt("generate_qa"))
    finally:
        await generator.aclose()
    assert failure is None
    return [r.question for r in rows]


def test_the_fallback_adds_pairs_only_where_no_other_rule_asks(tmp_path):
    assert rules.generate(view(SECOND_ROW), 5) == []  # no other rule asks of this procedure text
    # procedure steps are asked by default (qa-cov2: >= 0.85 usable on the documents each check was not developed on)
    assert asyncio.run(_hooked(SECOND_ROW, tmp_path, on=False)) == asyncio.run(_hooked(SECOND_ROW, tmp_path))
    asked = asyncio.run(_hooked(SECOND_ROW, tmp_path))
    assert asked[:1] == ["What does paragraph S8.3.3.1 (Lumbar support adjustment) of FMVSS No. 214 prescribe?"]
    fallback = coverage_candidates(view(SECOND_ROW), len(asked))
    assert asked == [c.question for c in fallback]
    # each pair records the coverage rule that made it (qa_pairs.generator_rule, what the gate's bands read)
    assert {c.rule for c in fallback} <= {"generate.coverage.procedure_step", "generate.coverage.provision_statement"}
    assert fallback[0].rule == "generate.coverage.procedure_step"
    # a chunk another rule asks of keeps exactly that rule's pairs (the hook is ``rules.generate(...) or coverage``)
    requirement = ("# § 571.214 Standard No. 214; Side impact protection / S11 Anthropomorphic test dummies\n\n"
                   "S11.2 Limb joints. Each limb joint shall be set at between 1 and 2 g.\n\n"
                   "S11.3 The stabilized temperature of the test dummy at the time of the test is at any temperature "
                   "between 20.6 degrees C and 22.2 degrees C.\n")
    others = rules.generate(view(requirement), 10)
    assert others
    hooked = asyncio.run(_hooked(requirement, tmp_path))
    assert hooked and hooked == [c.question for c in others][:len(hooked)]
