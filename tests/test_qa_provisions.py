"""The generator's provision, Korean-limit, table-structure and budget rules, each by its registry name."""

from __future__ import annotations

from tasks.qa.registry import RULES, load_all
from tasks.qa.rules import ChunkView, Handle, parse_table
from tasks.qa.rules.provisions import provision_units

load_all()

FMVSS = Handle(title="FMVSS No. 216", kind="standard")
R95 = Handle(title="UN Regulation No. 95", kind="standard")


def view(markdown: str, handle: Handle = FMVSS, language: str = "en", title: str = "T", **extra) -> ChunkView:
    return ChunkView(title=title, language=language, markdown=markdown, handle=handle, **extra)


def made(name: str, v: ChunkView) -> list[tuple[str, str]]:
    return [(c.question, c.answer) for c in RULES[name].check(v)]


PROCEDURE = (
    "# Test procedure\n\n"
    "S7.2 Orient the test device as shown in Figure 1, so that—\n\n"
    "(a) Its longitudinal axis is at a forward angle (in side view) of 5 degrees below the horizontal;\n\n"
    "(b) Its transverse axis is at an outboard angle, in the front view projection, of 25 degrees below the horizontal.\n\n"
    "S7.5 Apply force so that the test device moves at a rate of not more than 13 millimeters per second until it "
    "reaches 1,500 mm.\n"
)


def test_value_rule_names_paragraph_item_and_document_and_answers_the_qualified_value():
    pairs = made("generate.provision.value", view(PROCEDURE))
    assert not any("angle" in q for q, _ in pairs)  # "Its ... axis is at a forward angle of 5 degrees": whose axis is not said
    assert ("What rate does paragraph S7.5 of FMVSS No. 216 specify for the test device?",
            "not more than 13 millimeters per second") in pairs
    assert all(a in PROCEDURE for _, a in pairs)  # verbatim spans
    assert made("generate.provision.value", view(PROCEDURE, handle=Handle())) == []  # never without a handle


def test_value_rule_skips_two_values_of_one_kind_it_cannot_tell_apart_and_bare_tolerances():
    text = "# Mass\n\n4.3.2. The mass of the vehicle shall be 1,200 kg or 1,400 kg, measured to ± 1 per cent.\n"
    pairs = made("generate.provision.value", view(text, R95))
    assert not any("mass" in q for q, _ in pairs)
    assert not any(a.startswith("±") for _, a in pairs)


def test_requirement_and_definition_rules_on_titled_and_quoted_paragraphs():
    text = ("# Annex 5 Mobile deformable barrier\n\n5.3.7.3. REESS retention\n\n"
            "REESS located inside the passenger compartment shall remain in the location in which they are installed.\n\n"
            '2.1. "Vehicle type" means a category of power-driven vehicles which do not differ in essential respects.\n')
    v = view(text, R95, title="Annex 5 Mobile deformable barrier")
    assert made("generate.provision.requirement", v) == [(
        "What does paragraph 5.3.7.3 (REESS retention) of Annex 5 to UN Regulation No. 95 require?",
        "REESS located inside the passenger compartment shall remain in the location in which they are installed.")]
    question, answer = made("generate.provision.definition", v)[0]
    assert question == 'According to paragraph 2.1 of Annex 5 to UN Regulation No. 95, what does "Vehicle type" mean?'
    assert answer.startswith('"Vehicle type" means a category')


def test_korean_limits_name_the_case_and_subject():
    handle = Handle(title="차량 안전 기준", kind="document", section="좌석 안전띠")
    text = "# 좌석 안전띠\n\n승용차의 경우 안전띠 하중은 15 kN 이하로 한다. 그 값은 5 이상이다.\n"
    pairs = made("generate.requirement.limit_ko", view(text, handle, language="ko"))
    assert pairs == [("'차량 안전 기준' 문서의 '좌석 안전띠'에 따르면 승용차의 경우 안전띠 하중의 기준은 무엇인가요?", "15 kN 이하")]


def test_tables_without_header_zone_grids_and_list_numbers():
    continued = "| 12.5 | 30 | 40 |\n|---|---|---|\n| 13.0 | 31 | 41 |\n"
    assert parse_table(continued) is None  # a continued table without its header row: columns cannot be named
    grid = "| A1 | A2 | A3 |\n|---|---|---|\n| B1 | B2 | B3 |\n| C1 |  | C3 |\n"
    assert parse_table(grid) is None
    listed = ("| CRS | Approval |\n|---|---|\n| 1 Maxi-Cosi Pebble 360 | R129 40cm-83cm |\n"
              "| 2 Britax Kidfix i-Size | R129 100cm-150cm |\n")
    table = parse_table(listed)
    assert [label for label, _ in table.rows] == ["Maxi-Cosi Pebble 360", "Britax Kidfix i-Size"]


def test_budget_counts_facts_and_falls_back_to_length():
    budget = RULES["generate.budget.information"].check
    assert budget(view(PROCEDURE)) >= 3
    assert budget(view("# Notes\n\nThe team met and talked about plans for next year.\n")) == 0
    from tasks.qa.budget import pairs_for

    assert pairs_for(4, 1000, 70, 15) == 4
    assert pairs_for(0, 700, 70, 15) == 10
    assert pairs_for(40, 10, 70, 15) == 15 and pairs_for(0, 5, 70, 15) == 1


def test_items_are_named_with_their_parents_and_signed_or_temperature_values_are_not_angles():
    text = ("# Door\n\nS9.2.3 Door opening.\n\n(a) Any door struck by the pole shall not separate from the car.\n\n"
            "(b) Any door that is not struck by the pole shall meet the following requirements:\n\n"
            "(1) The door shall not disengage from the latched position; and\n\n"
            "(2) The latch shall not separate from the striker.\n\n"
            "S9.2.4 The samples are placed in a cabinet at -10° + 1 °C for two hours, at an angle of less than "
            "+ 10° or - 10° with the vertical.\n")
    units = [u.number for u in provision_units(view(text))]
    assert units[:4] == ["S9.2.3(a)", "S9.2.3(b)", "S9.2.3(b)(1)", "S9.2.3(b)(2)"]
    asked = made("generate.provision.requirement", view(text))
    assert ("What does paragraph S9.2.3(b)(2) (Door opening) of FMVSS No. 216 require?",
            "The latch shall not separate from the striker.") in asked
    assert not any("angle" in q for q, _ in made("generate.provision.value", view(text)))


def test_a_requirement_asked_by_two_rules_is_asked_once_and_administrative_sections_are_not_asked():
    from tasks.qa.rules import generate

    text = ("# Requirements\n\n6.2.5.1.1. The strap of a safety-belt assembly equipped with a manually unlocking "
            "retractor shall not move more than 25 mm between locking positions of the retractor.\n")
    answers = [c.answer for c in generate(view(text, R95), 10)]
    assert len(answers) == len(set(a for a in answers if len(a) >= 40) | {a for a in answers if len(a) < 40})
    transitional = ("# 10. Transitional provisions\n\n10.16. As from 5 July 2024, Contracting Parties applying this "
                    "Regulation shall not be obliged to accept type approvals issued to the preceding series.\n")
    assert made("generate.provision.requirement", view(transitional, R95, title="10. Transitional provisions")) == []


def test_items_under_a_requirements_lead_in_are_requirements():
    text = ("# Ease of use\n\n2.2.5.2 Ease of use of support legs\n\n"
            "The vehicle meets the requirements if all of the following are met:\n\n"
            "a) The vehicle provides sufficient space to adjust the support leg.\n")
    handle = Handle(title="CP 008-1 Child Occupant Protection", kind="document")
    assert made("generate.provision.requirement", view(text, handle)) == [(
        'What does section 2.2.5.2(a) (Ease of use of support legs) of the "CP 008-1 Child Occupant Protection" '
        "document require?", "The vehicle provides sufficient space to adjust the support leg.")]


def test_audit_coverage_counts_pairs_per_fact_chunk():
    from types import SimpleNamespace as NS

    from tasks.qa.audit import coverage

    chunks = [NS(chunk_id="a", source_path="/d/x.pdf", qa_text="# A\n\nThe speed is 50 km/h.", title="A"),
              NS(chunk_id="b", source_path="/d/x.pdf", qa_text="# B\n\nThe mass is 950 kg.", title="B"),
              NS(chunk_id="c", source_path="/d/x.pdf", qa_text="# Agenda\n\nWelcome.", title="Agenda")]
    pairs = [NS(chunk_id="a", status="approved"), NS(chunk_id="a", status="pending"), NS(chunk_id="c", status="pending")]
    (row,) = coverage(pairs, chunks)
    assert (row.chunks, row.fact_chunks, row.with_pair, row.pairs, row.with_approved) == (3, 2, 1, 3, 1)


def test_roman_items_nest_under_letters_and_a_letter_i_after_h_is_a_letter():
    text = ("# X\n\nS5.1 Limits.\n\n(a) The first item shall be met.\n\n(i) The first sub-item shall be met.\n\n"
            "(ii) The second sub-item shall be met.\n\n(h) Item h shall be met.\n\n(i) Item i shall be met.\n")
    assert [u.number for u in provision_units(view(text))] == ["S5.1(a)", "S5.1(a)(i)", "S5.1(a)(ii)", "S5.1(h)", "S5.1(i)"]


def test_negated_garbled_and_word_written_values_are_not_asked_and_still_count():
    text = ("# Anchorages\n\n3.3. The upper anchorage must not be displaced by more than 0.2 mm when a load is applied.\n\n"
            "7.4.1.5.1. The strap shall be kept immersed in water at a temperature of 20 + 5 °C.\n\n"
            "7.6.3.1. For a period of five hours, the dust shall be agitated every 20 minutes.\n")
    pairs = made("generate.provision.value", view(text, R95))
    assert ("What distance does paragraph 3.3 of UN Regulation No. 95 specify?", "more than 0.2 mm") not in pairs
    assert not any("20 + 5" in a for _, a in pairs)  # ± read as +: not grounded as written
    assert not any(a == "20 minutes" for _, a in pairs)  # "five hours" is a second duration of the paragraph


def test_lead_ins_and_definitions_are_not_asked_as_requirements():
    lead = "# MDB\n\nS7.1 MDB test with SID. For vehicles manufactured before 2010, the following requirements must be met.\n"
    assert made("generate.provision.requirement", view(lead)) == []
    definitions = ("# 2. Definitions\n\n2.26. Enclosed buckle-release button\n\nA buckle-release button such that it must "
                   "not be possible to release the buckle using a sphere having a diameter of 40 mm.\n")
    assert made("generate.provision.requirement", view(definitions, R95, title="2. Definitions")) == []


def test_a_truncated_heading_is_no_section_handle():
    from schemas.chunks import ChunkRow
    from tasks.qa.generate import chunk_handle

    chunk = ChunkRow.model_construct(title="§ 571.216 Standard No. 216; Roof crush resistance; Applicable unless a vehicle is…",
                                     heading_path=["§ 571.216 Standard No. 216; Roof crush resistance; Applicable unless a vehicle is…"],
                                     source_path="/d/fmvss.pdf", slide=None)
    assert chunk_handle(chunk, Handle(title="FMVSS No. 216", kind="standard")).section == ""


def test_results_tables_ask_the_tests_own_stage_first_and_measured_against_limit():
    from tasks.qa.rules.tables import _table_candidates

    md = ("| Metric | P1 | P2 | Limit |\n|---|---|---|---|\n| HIC15 | 520.4 | 412.6 | 700 |\n"
          "| Chest deflection (mm) | 38.1 | 31.4 | 42 |\n| Femur load (kN) | 4.9 | 3.9 | 10 |\n")
    handle = Handle(test_name="FO-2024-017 ODB 64 km/h", stage="Prototype P2", kind="report")
    v = view(f"# Results\n\n{md}", handle, tables=[("t1", md)])
    made_pairs = [(c.question, c.answer) for c in _table_candidates(v)]
    assert made_pairs[0] == ("In the FO-2024-017 ODB 64 km/h test (Prototype P2), what HIC15 was recorded for P2?", "412.6")
    assert ("Did the P2 chest deflection (mm) of 31.4 stay within the limit of 42 in the FO-2024-017 ODB 64 km/h test "
            "(Prototype P2)?", "Yes: 31.4 vs. limit 42") in made_pairs


def test_headline_facts_ranges_and_item_requirements():
    text = ("# § 571.216a Standard No. 216a\n\nS1. Scope. This standard establishes strength requirements for the "
            "passenger compartment roof.\n\nS2. Purpose. The purpose of this standard is to reduce deaths and injuries "
            "due to the crushing of the roof into the occupant compartment in rollover crashes.\n\n"
            "S5.1 The load limiter caps the belt force at a level between 3 and 6 kN, never at 2.2 and 2.7 kN.\n")
    handle = Handle(title="FMVSS No. 216a", kind="standard")
    assert made("generate.provision.headline", view(text, handle)) == [
        ("What is the scope of FMVSS No. 216a?", "This standard establishes strength requirements for the passenger "
                                                  "compartment roof."),
        ("What is the purpose of FMVSS No. 216a?", "The purpose of this standard is to reduce deaths and injuries due to "
                                                    "the crushing of the roof into the occupant compartment in rollover crashes.")]
    assert made("generate.provision.value", view(text, handle)) == []  # a range and a list of the same kind: ambiguous
    ranged = "# X\n\nS5.1 The load limiter is set at a level between 3 and 6 kN.\n"
    assert made("generate.provision.value", view(ranged, handle)) == [
        ("What force does paragraph S5.1 of FMVSS No. 216a specify for the load limiter?", "between 3 and 6 kN")]


def test_a_value_question_names_the_subject_the_value_belongs_to_or_is_not_asked():
    """Failure class: "What angle does section 3.5 specify?" names no subject. The subject of the value's clause is
    named; with neither it nor a specific quantity noun, nothing is asked."""
    text = ("# Test setup\n\n3.5 Rotate the fixture to 25 degrees.\n\n"
            "3.6 The roof crusher shall be applied at 5 millimeters per second; the platen is tilted to 10 degrees.\n")
    pairs = made("generate.provision.value", view(text))
    assert not any("3.5" in q for q, _ in pairs)  # imperative, no subject, bare "angle": no question
    owners = ("# Crash\n\nS6.3 When the vehicle is impacted laterally by a barrier moving at 32 km/h, spillage shall not "
              "exceed 28 g.\n\nS6.6 Each vehicle shall have means that prevent any hose, with a length of not less than "
              "1200 millimeters, from contacting fuel.\n\nS7.1 The test weight is 175 kg greater than the curb weight.\n\n"
              "S7.2 The barrier strikes the vehicle with a 70 percent overlap.\n")
    owned = made("generate.provision.value", view(owners))
    assert ("What speed does paragraph S6.3 of FMVSS No. 216 specify for the barrier?", "32 km/h") in owned  # the agent
    assert not any("S6.6" in q or "S7.1" in q for q, _ in owned)  # the hose's length; a difference, not the weight
    assert not any("S7.2" in q for q, _ in owned)  # "70 percent overlap": a one-word noun, and its owner unknown
    assert not any(a == "not exceed 28 g" for _, a in owned)  # its clause ("spillage shall ...") has no subject
    assert ("What rate does paragraph 3.6 of FMVSS No. 216 specify for the roof crusher?", "5 millimeters per second") in pairs
    assert ("What angle does paragraph 3.6 of FMVSS No. 216 specify for the platen?", "10 degrees") in pairs


def test_conditional_requirements_ask_when():
    text = ("# Tests\n\n7.4.2.4. If the strap slips or breaks at or within 10 mm of either of the clamps, the test shall "
            "be invalid.\n\n7.4.2.5. If it breaks, the test shall be repeated.\n")
    assert made("generate.provision.conditional", view(text, R95)) == [(
        "According to paragraph 7.4.2.4 of UN Regulation No. 95, when shall the test be invalid?",
        "If the strap slips or breaks at or within 10 mm of either of the clamps")]
    prose = ("# Installation of child restraint systems\n\nWhere there is any asymmetry between the sides, all seating "
             "positions must be assessed individually.\n")
    handle = Handle(title="CP 008-1 Child Occupant Protection", kind="document", section="Installation of child restraint systems")
    assert made("generate.provision.conditional", view(prose, handle)) == [(
        'According to the "Installation of child restraint systems" section of the "CP 008-1 Child Occupant Protection" '
        "document, when must all seating positions be assessed individually?", "Where there is any asymmetry between the sides")]


def test_a_continued_table_whose_first_row_is_measured_data_has_no_header():
    continued = ("| 12 BeSafe Stretch | R129 100cm- 135cm | Belted, forward facing |\n|---|---|---|\n"
                 "| 13 Britax Trifix | R129 76cm- 105cm | ISOFIX, forward facing |\n")
    assert parse_table(continued) is None
    results = "| Metric | Driver | Limit |\n|---|---|---|\n| HIC15 | 412.6 | 700 |\n| Chest deflection (mm) | 31.4 | 42 |\n"
    assert parse_table(results) is not None


def test_ranges_with_two_bounds_rates_footnotes_and_approval_sections():
    text = ("# Retractors\n\n6.2.5.1.2. The strap shall extract within 6 mm of its length when a tension of not less than "
            "1.4 daN and not more than 2.2 daN is applied.\n\n7.6.2.3. The table is tilted with a speed not exceeding 2° per "
            "second until locking has occurred.\n\n6.2.5.3.1.1. The locking must have occurred when the deceleration "
            "reaches 0.45 g6 in the case of type 4.\n")
    pairs = made("generate.provision.value", view(text, R95))
    assert not any("tension" in q for q, _ in pairs)  # "a tension of ...": the value's owner is not named
    ranged = made("generate.provision.value", view("# Retractors\n\n6.2.5.1.2. The strap tension is not less than 1.4 daN "
                                                   "and not more than 2.2 daN.\n", R95))
    assert ranged == [("What is the strap tension according to paragraph 6.2.5.1.2 of UN Regulation No. 95?",
                       "not less than 1.4 daN and not more than 2.2 daN")]  # both bounds, one answer
    assert not any("2°" in a or "g6" in a for _, a in pairs)
    assert not any("g6" in a for _, a in made("generate.provision.requirement", view(text, R95)))
    approval = "# 5. Approval\n\n5.2.2. An approval number shall be assigned to each type approved.\n"
    assert made("generate.provision.requirement", view(approval, R95, title="5. Approval")) == []


def test_a_regulation_table_without_caption_is_named_by_its_paragraph():
    from tasks.qa.rules.tables import _table_candidates

    md = ("|  | Load daN | Frequency Hz |\n|---|---|---|\n| Procedure 1 | 2.5 | 0.5 |\n| Procedure 2 | 0.5 | 0.5 |\n"
          "| Procedure 3 | 0.5 | 0.5 |\n")
    text = f"# 7.4 Abrasion\n\n7.4.1.6.3. In the table below are listed the general conditions for each abrasion procedure.\n\n{md}"
    questions = [c.question for c in _table_candidates(view(text, R95, tables=[("t1", md)]))]
    assert questions and all(q.startswith("In the table of paragraph 7.4.1.6.3 of UN Regulation No. 95,") for q in questions)


def test_a_key_value_table_is_asked_field_by_field_not_as_columns():
    from tasks.qa.rules.tables import _table_candidates

    md = "| Test Name | FO-2024-017 ODB 64 km/h |\n|---|---|\n| Region | EU |\n| Stage | Prototype P2 |\n| Purpose | Verify chest deflection |\n"
    handle = Handle(test_name="FO-2024-017 ODB 64 km/h", stage="Prototype P2", kind="report", title="Test Report")
    pairs = [(c.question, c.answer) for c in _table_candidates(view(f"# Test Report\n\n{md}", handle, tables=[("t", md)]))]
    assert pairs == [("For which region was the FO-2024-017 ODB 64 km/h test (Prototype P2) run?", "EU"),
                     ("What was the purpose of the FO-2024-017 ODB 64 km/h test (Prototype P2)?", "Verify chest deflection")]


def test_combined_item_labels_and_s_paragraphs_joined_into_one_block_are_told_apart():
    """"(c)(1)" opens item (c) and its sub-item (1); "... 571.214). S7.3 Rear ..." starts S7.3 inside a block."""
    text = ("# S6.3\n\nS6.3 Side crash. (a) Old vehicles are tested at 32 km/h.\n\n(b) New vehicles are tested.\n\n"
            "(c)(1) Heavy vehicles may meet S6.3(a).\n\n(2) Heavy vehicles built later must meet S6.3(b).\n\n"
            "S7.2 Side barrier. The conditions are those of Standard 214 (49 CFR 571.214). S7.3 Rear barrier test "
            "conditions. The barrier is traveling at 48 km/h.\n")
    numbers = [u.number for u in provision_units(view(text))]
    assert "S6.3(c)(1)" in numbers and "S6.3(c)(2)" in numbers and "S6.3(b)(2)" not in numbers
    assert "S7.3" in numbers
    pairs = made("generate.provision.value", view(text))
    assert ("What speed does paragraph S7.3 (Rear barrier test conditions) of FMVSS No. 216 specify for the barrier?",
            "48 km/h") in pairs


def test_limits_stated_as_list_items_are_asked_without_their_labels():
    # the items' own paragraph is in the chunk (qa-gen4: a chunk that starts inside a list names no owner, round-5 label)
    text = ("# S7.2.1 Vehicles manufactured on or after September 1, 2010\n\nS7.2.5 Force measurements. (1) The sum of the "
            "front, middle and rear "
            "abdominal forces, shall not exceed 2,500 N (562 lb). (2) The pubic symphysis force shall not exceed 6,000 N "
            "(1,350 pounds).\n")
    v = view(text, Handle(title="FMVSS No. 214", kind="standard", section="S7.2.1 Vehicles manufactured on or after "
                                                                             "September 1, 2010"))
    pairs = made("generate.requirement.limit", v)
    assert any(q.endswith("paragraph S7.2.5 of FMVSS No. 214, what limit applies to the pubic symphysis force?")
               and a == "The pubic symphysis force shall not exceed 6,000 N (1,350 pounds)." for q, a in pairs)


def test_a_share_names_what_it_is_a_share_of():
    text = ("# Test weight\n\nS8.1 Test weight. Add solvent in an amount equal to not less than 92 percent and not more than "
            "94 percent of the fuel tank’s usable capacity stated by the manufacturer.\n\n"
            "S13.1 Phase-in. Not less than 20 percent of the vehicles shall comply.\n")
    pairs = made("generate.provision.value", view(text))
    assert ("What percentage of the fuel tank’s usable capacity does paragraph S8.1 (Test weight) of FMVSS No. 216 "
            "specify?", "not less than 92 percent and not more than 94 percent") in pairs
    assert not any("S13.1" in q for q, _ in pairs)  # "20 percent of the vehicles": no subject worth the name


def test_items_of_one_block_failure_conditions_and_inclusive_ranges():
    text = ("# 2.2.2 CRS placement\n\n2.2.2 CRS placement\n\nThe vehicle meets the requirements if all of the following are "
            "met:\n\ng) The CRS shall be placed without excessive force. h) The front seat shall not interfere with the CRS.\n\n"
            "The vehicle would not meet the requirements if any of the following occur:\n\n"
            "k) The child seat or base does not fit through the door aperture.\n\n"
            "5.5.3 Head. The peak resultant head acceleration should be between and including 100 g and 150 g.\n\n"
            "5.3 Plates. The samples are compressed between loading plates which are at least 20 mm larger than the block.\n")
    handle = Handle(title="CP 008-1", kind="document")
    required = dict(made("generate.provision.requirement", view(text, handle)))
    assert required.get('What does section 2.2.2(g) (CRS placement) of the "CP 008-1" document require?') == (
        "The CRS shall be placed without excessive force.")  # item h) is cut off
    assert not any("(k)" in q for q in required)  # a failure condition is no requirement
    values = made("generate.provision.value", view(text, handle))
    assert any(a == "between and including 100 g and 150 g" for _, a in values)
    assert not any(a == "at least 20 mm" for _, a in values)  # "20 mm larger than": a difference


def test_a_limit_whose_subject_follows_its_conditions_is_asked_with_the_whole_sentence():
    sentence = ("Except as provided in S5.1.2, when that area of the instrument panel that is within the head impact area is "
                "impacted by a 6.8 kilogram head form at a relative velocity of 24 kilometers per hour, the deceleration of "
                "the head form shall not exceed 80 g continuously for more than 3 milliseconds.")
    assert made("generate.requirement.limit", view(f"# S5.1\n\nS5.1 Instrument panels. {sentence}\n")) == [
        ("According to paragraph S5.1 of FMVSS No. 216, what limit applies to the deceleration of the head form?", sentence)]


def test_lost_or_misread_tolerances_glued_footnotes_and_lead_ins_are_not_asked():
    text = ("# Tests\n\n7.5.3. Two samples of the belt assembly shall be placed in a cabinet at -10° + 1 °C for two hours.\n\n"
            "3.1. The CRF base shall have a pitch angle of 15°  10°, above the horizontal plane.\n\n"
            "6.2.5. Retractors. Retractors shall fulfil the requirements specified below.\n\n"
            "8.4. Reminder. Where the manufacturer provides a reminder system on another seat, the system may be approved "
            "according to this Regulation11.\n")
    pairs = [p for name in ("generate.provision.value", "generate.provision.requirement", "generate.provision.conditional")
             for p in made(name, view(text, R95))]
    assert not any("+ 1" in a or a == "15°" or "Regulation11" in q for q, a in pairs)
    assert not any("6.2.5" in q for q, _ in pairs)  # "the requirements specified below": a lead-in


def test_a_subject_without_determiner_opens_its_clause():
    text = ("# Impact speed and overlap\n\nOffset barrier crash tests are conducted at 64.4 ± 1 km/h.\n\n"
            "Impact speed shall be 50 km/h for the sled.\n\nIt is made of steel with a total mass of 145,150 kg.\n")
    handle = Handle(title="Moderate Overlap Protocol", kind="document", section="Impact speed and overlap")
    pairs = made("generate.provision.value", view(text, handle))
    assert ('What speed does the "Impact speed and overlap" section of the "Moderate Overlap Protocol" document specify '
            'for offset barrier crash tests?', "64.4 ± 1 km/h") in pairs
    assert any(q.startswith("What is the impact speed according to") and a == "50 km/h" for q, a in pairs)
    assert not any("145,150" in a for _, a in pairs)  # "It is made of ...": a pronoun owns nothing we can name


# --- qa-gen3: owner, bound and section checks (written from the labelled errors of R95, R16, FMVSS 201/301, Korean) ---


def test_a_value_whose_bound_glyph_was_lost_is_not_asked_but_still_counts():
    lost = RULES["generate.value.bound_lost"].check
    assert lost("with elongation  ") and lost("The impact speed shall be 35  ") and not lost("shall be at least ")
    text = ("# Annex 5\n\n2.2.2.1. Material characteristics\n\nThe front plates are manufactured from aluminium with "
            "elongation  12 per cent.\n\n6.3.1. Speed\n\nThe impact speed shall be 35  0.5 km/h.\n")
    pairs = made("generate.provision.value", view(text, R95, title="Annex 5"))
    assert not any(a in ("12 per cent", "0.5 km/h") for _, a in pairs)
    assert RULES["generate.budget.information"].check(view(text, R95)) >= 2  # the facts still count in the budget


def test_a_value_that_modifies_the_noun_after_it_is_not_given_to_the_clause_subject():
    assert RULES["generate.value.attributive"].check(" holding force of the arm")
    assert RULES["generate.value.attributive"].check(" diameter head form.")
    assert not RULES["generate.value.attributive"].check(" and width of 3 m")
    text = ("# Annex 6\n\n3.3.1. Shoulder-arm\n\nThe screw shall be tightened to obtain a 1 - 2 g holding force of the arm "
            "on its pivot.\n")
    assert made("generate.provision.value", view(text, R95, title="Annex 6")) == []
    overlap = ("# Rear\n\nS6.2 Rear moving barrier crash. (b) When the vehicle is impacted from the rear by a moving "
               "deformable barrier 80 ±1.0 km/h with a 70 percent overlap, fuel spillage must not exceed the limits.\n")
    assert "70 percent" in [a for _, a in made("generate.provision.value", view(overlap))]  # "overlap" is its own noun


def test_the_quantity_noun_must_agree_with_the_values_unit():
    agrees = RULES["generate.value.unit_agrees"].check
    assert not agrees("mass", "share") and agrees("mass", "mass") and agrees("overlap", "share")
    assert agrees("percentage of the fuel tank's usable capacity", "share") and not agrees("percentage of the mass", "mass")
    text = ("# Annex 4\n\n4.3.2. Mass of the vehicle\n\nThe fuel tank shall be filled with water to a mass equal to 90 per "
            "cent of the mass of a full load of fuel.\n")
    assert not any(a == "90 per cent" for _, a in made("generate.provision.value", view(text, R95, title="Annex 4")))


def test_a_difference_a_pronoun_owner_or_a_participle_owner_is_not_asked():
    text = ("# Vehicle type\n\n6.1.2.2. Modification\n\nThis would be the case if the reference mass is not more than 8 per "
            "cent different from the original vehicle.\n\n6.1.2.3. Wall\n\nTheir edges shall clear adjacent areas by 20 mm."
            "\n\n6.6.3.4. Deflection\n\nThe maximum deflection calculated from each of the three accelerometers should be "
            "within 10 mm.\n")
    pairs = made("generate.provision.value", view(text, R95))
    assert not any("8 per cent" in a or "their" in q.lower() or "calculated" in q for q, a in pairs), pairs


def test_a_requirement_that_only_points_elsewhere_is_not_asked():
    pointer = RULES["generate.provision.cross_reference"].check
    assert pointer("The strap shall be conditioned as described under paragraph 7.4.1.1.")
    assert pointer("Vehicles manufactured on or after September 1, 1998 shall comply with the requirements of S5 and S6.")
    assert not pointer("For the back plate the minimum bonding strength shall be 0.6 MPa, tested according to paragraph 2.5.3.")
    assert not pointer("Any side door that is struck by the moving deformable barrier shall not separate totally from the vehicle.")
    text = ("# Straps\n\n7.4.1.3.1. Cold-conditioning\n\nThe strap shall be conditioned as described under paragraph 7.4.1.1."
            "\n\n6.1.3. General specifications\n\nThe straps of the belt shall not be liable to assume a dangerous configuration.\n")
    asked = made("generate.provision.requirement", view(text, Handle(title="UN Regulation No. 16", kind="standard")))
    assert [a for _, a in asked] == ["The straps of the belt shall not be liable to assume a dangerous configuration."]


def test_a_titled_annex_heading_is_a_section_not_a_caption():
    caption = RULES["generate.section.titled_annex"].check
    assert not caption("Annex 6 Description of trolley, seat, anchorages and stopping device")
    assert not caption("Annex 4 - Appendix 1 Determination of performance data")
    assert caption("Annex 9 – Appendix 1") and caption("Figure 3 MGA Roof Crush Test System")
    from schemas.chunks import ChunkRow
    from tasks.qa.generate import carried_sections, chunk_handle

    def chunk(i: int, title: str, markdown: str) -> ChunkRow:
        return ChunkRow(chunk_id=f"c{i}", doc_id="d", source_path="r16.pdf", unit="section", page_start=50 + i, title=title,
                        heading_path=[title], markdown=markdown, token_count=50, has_table=False, has_image=False,
                        has_chart=False, has_ocr=False, element_ids=[])

    chunks = [chunk(0, "Annex 5 Figures", "# Annex 5 Figures\n\nAIRBAG\n\n" + "The airbag module is shown. " * 4),
              chunk(1, "Annex 6 Description of trolley, seat, anchorages and stopping device", "# Annex 6\n\n1. Trolley")]
    carried = carried_sections(chunks)
    handle = chunk_handle(chunks[1], Handle(title="UN Regulation No. 16", kind="standard"), carried["c1"])
    assert handle.section == "Annex 6 Description of trolley, seat, anchorages and stopping device"  # not "AIRBAG"


def test_a_cell_of_a_merged_label_span_is_not_asked_and_bullets_leave_the_answer():
    merged = RULES["generate.table.merged_label"].check
    labels, body = ["", "Head", "Neck"], [["", "2", "x"], ["Head", "4", "y"], ["Neck", "1", "z"]]
    assert merged(labels, body) == {1}  # the span's label sits in its second row: its cells are sub-items
    assert merged(["A", "", "B"], [["A", "1"], ["", "2"], ["B", "3"]]) == {0}  # the empty row continues A, not B
    assert RULES["generate.table.cell_bullet"].check("· 여성(28명, 35%) 남성(51명, 65%)") == "여성(28명, 35%) 남성(51명, 65%)"
    assert RULES["generate.table.cell_bullet"].check("-5") == "-5"


def test_a_load_case_alone_is_no_test_handle():
    load_case = RULES["generate.handle.load_case"].check
    assert load_case("ODB 64 kph") and load_case("Full Width Rigid Barrier 56 km/h")
    assert not load_case("FO-2024-017 ODB 64 km/h") and not load_case("SP-2024-031 Oblique Pole 32 km/h")


def test_a_korean_count_table_is_no_zone_grid_and_asks_no_highest_head_count():
    table = ("|  | 제1기 위원회 | 제2기 위원회 |\n|---|---|---|\n| 여성 | 28명 | 7명 |\n| 농업계 | 1명 | - |\n"
             "| 청년 | 6명 | 1명 |\n| 시민사회 | 10명 | 2명 |")
    parsed = parse_table(table)
    assert parsed is not None and [label for label, _ in parsed.rows][:2] == ["여성", "농업계"]  # short Korean words
    assert RULES["generate.table.head_count"].check(parsed, 0)
    handle = Handle(title="탄소중립기본법 일부개정법률안", kind="document")
    from tasks.qa.rules import _table_candidates

    asked = [c.question for c in _table_candidates(view("# 위원 구성\n\n" + table, handle, language="ko", tables=[("t1", table)]))]
    assert asked and not any("가장 큰" in q for q in asked)
    assert any(q.endswith("제1기 위원회의 여성은 몇 명인가요?") for q in asked)


def test_a_wrapped_cross_reference_is_no_paragraph_start_and_an_appendix_is_named_with_its_annex():
    assert RULES["generate.provision.reference_line"].check("and a force of 100N shall be applied")
    assert not RULES["generate.provision.reference_line"].check("Obstruction & Stability of the CRS")
    assert not RULES["generate.provision.reference_line"].check("i-Size equipped vehicles")
    text = ("# 2.2.3.4 Obstruction & Stability of the CRS\n\n2.2.3.4 Obstruction & Stability of the CRS\n\n"
            "f) The CRS shall be returned to the initial position with the belt tightened as per Section\n\n"
            "2.2.3.2 and a force of 100N shall be applied perpendicular to the CRS.\n\n"
            "The vehicle meets the requirements if all of the following are met:\n\n"
            "h) The vehicle interior can accommodate installation of the CRS in all orientations.\n")
    numbers = {u.number for u in provision_units(view(text, Handle(title="CP 008-1", kind="document")))}
    assert "2.2.3.4(h)" in numbers and not any(n.startswith("2.2.3.2") for n in numbers)
    annex = RULES["generate.provision.annex_appendix"].check
    assert annex(view("x", title="Annex 17 - Appendix 1 Provisions concerning ...")) == "Appendix 1 to Annex 17"
    assert annex(view("x", title="Annex 4 Collision test procedure")) == "Annex 4"
    limit = ("# Annex 4 Collision test procedure\n\n4.3.5. The mass of the measuring apparatus shall not change each axle "
             "reference load by more than 5 per cent.\n")
    asked = [q for q, _ in made("generate.requirement.limit", view(limit, R95, title="Annex 4 Collision test procedure"))]
    assert asked and all("paragraph 4.3.5 of Annex 4 to UN Regulation No. 95" in q for q in asked), asked


def test_a_figure_label_layout_is_no_table_and_a_figure_pointer_is_no_requirement():
    assert parse_table("| Zone 5 | Zone 4 | Zone 6 | |\n|---|---|---|---|\n| Zone 1 | Zone 2 | Zone 3 | |") is None
    assert parse_table("| Test | HIC |\n|---|---|\n| Test 1 | 400 |\n| Test 2 | 500 |") is not None
    pointer = RULES["generate.provision.cross_reference"].check
    assert pointer("The anchorages shall be positioned as shown in Figure 1.")
    assert pointer("For two seater vehicles, specific vehicle provisions must be met as detailed in Section 2.1.")


def test_conditions_a_main_clause_depends_on_coordinated_causes_and_sentence_continuations_are_not_asked():
    deictic = RULES["generate.provision.conditional_deictic"].check
    assert deictic("Where a range is specified", "be capable of meeting the requirements at all points within the range")
    assert not deictic("If the strap slips in the buckle by more than 25 mm", "be invalid")
    assert not RULES["generate.causal.one_predicate"].check(
        "The pole is 254 mm ±3 mm (10 inches) in diameter and set off from any mounting surface")
    assert RULES["generate.causal.one_predicate"].check("The passenger airbag is larger")
    assert not RULES["generate.causal.one_predicate"].check(
        "The pressure mat is oriented and landmarked prior to testing according to the procedure in the Appendix")
    continues = RULES["generate.prose.continuation"].check
    md = ("(2) If a sun roof opening is located forward of the front edge of the upper roof, then in either front "
          "outboard seating position, target\n\nFH2 is the nearest point that is forward of Plane 24.")
    assert continues("FH2 is the nearest point that is forward of Plane 24.", md)
    assert not continues("The pole is a rigid structure.", "# Rigid Pole\n\nCurb Weight Measurement\n\nThe pole is a rigid structure.")
    text = ("# Annex 8 Partial test\n\n2.2.1. Using the new padding materials, seat, etc. presented for the extension, tests "
            "shall be repeated.\n\n2.2.1.1. If the HPC calculated from both approval tests is lower, the extension shall be granted.\n")
    titles = {u.number: u.title for u in provision_units(view(text, R95, title="Annex 8 Partial test"))}
    assert titles.get("2.2.1.1", "") == ""  # a sentence cut at "etc." is no paragraph title


def test_criteria_listed_under_a_lead_in_are_asked_for_their_bound():
    text = ("# 5. Specifications and tests\n\n5.2. Performance criteria\n\n5.2.1.1. The head performance criterion (HPC) shall "
            "be less than or equal to 1,000; when there is no head contact, then the HPC shall be recorded as \"No Head "
            "Contact.\"\n\n"
            "5.2.1.2. The thorax performance criteria shall be:\n\n(a) Rib Deflection Criterion (RDC) less than or equal to "
            "42 mm;\n\n5.2.1.5. For vehicles with a wheelbase greater than 2 m the test is repeated.\n")
    pairs = made("generate.provision.criterion_limit", view(text, R95, title="5. Specifications and tests"))
    assert ("What limit does paragraph 5.2.1.2(a) (Performance criteria) of UN Regulation No. 95 set for the Rib Deflection "
            "Criterion (RDC)?", "less than or equal to 42 mm") in pairs
    assert any(q.endswith("set for the head performance criterion (HPC)?") and a == "less than or equal to 1,000"
               for q, a in pairs)
    assert len(pairs) == 2  # "For vehicles with a wheelbase greater than 2 m" names no criterion
    assert made("generate.provision.criterion_limit", view(text, Handle(), title="5.")) == []  # never without a handle
    asked = text.replace('recorded as \"No Head Contact.\"', "not measured.")  # now the requirement rule asks 5.2.1.1
    assert any("5.2.1.1" in q for q, _ in made("generate.provision.requirement", view(asked, R95, title="5.")))
    assert not any("5.2.1.1" in q for q, _ in made("generate.provision.criterion_limit", view(asked, R95, title="5.")))


def test_unread_bounds_offsets_lost_glyph_words_cut_subjects_and_sentence_case_headings():
    lost = RULES["generate.value.bound_lost"].check
    assert lost("The seatback angle must be no further forward than a torso angle of ")
    assert lost("The lateral coordinate of the footrest is obtained by adding ")
    assert not lost("The impactor shall strike the pole at ")
    from tasks.qa.rules.provisions import garbled

    assert garbled("When checking a Child Restraint Fixture (CRF) behind the d ive ’s se t")
    assert not garbled("between and including 100 g and 150 g") and not garbled("in the x and y directions")
    text = "# Annex 5\n\n1.6. The front and rear track width of the trolley shall be 1,500 ± 10 mm.\n"
    assert not any("for the front" in q for q, _ in made("generate.provision.value", view(text, R95, title="Annex 5")))
    from tasks.qa.rules.sections import inner_headings

    md = ("# Intrusion measurements\n\nB-pillar (one point): The B-pillar is marked on the inside of the door opening.\n\n"
          "Dummy kinematics, contact locations, and kinematic assessments\n\n"
          "Each dummy is inspected in its undisturbed postcrash position and any damage is noted.\n")
    assert [h for _, h in inner_headings(md)] == ["Dummy kinematics, contact locations, and kinematic assessments"]


def test_a_section_heading_that_is_the_standard_itself_is_no_section():
    from schemas.chunks import ChunkRow
    from tasks.qa.generate import chunk_handle

    title = "§ 571.214 Standard No. 214; Side impact protection"
    chunk = ChunkRow(chunk_id="c", doc_id="d", source_path="fmvss214.pdf", unit="section", page_start=1, title=title,
                     heading_path=[title], markdown="# x", token_count=5, has_table=False, has_image=False,
                     has_chart=False, has_ocr=False, element_ids=[])
    assert chunk_handle(chunk, Handle(title="FMVSS No. 214", kind="standard")).section == ""


def test_phase_in_production_bookkeeping_is_not_asked():
    text = ("# S6.1 Phase-in\n\nS6.3 Side moving barrier crash. (c)(3) Vehicles produced by more than one manufacturer. For "
            "the purpose of calculating average annual production, a vehicle produced by more than one manufacturer shall be "
            "attributed to a single manufacturer as follows.\n\n(i) A vehicle which is imported shall be attributed to the "
            "importer.\n\nS6.4 Static rollover. When the vehicle is rotated, fuel spillage shall not exceed the limits of S5.6.\n")
    asked = [a for _, a in made("generate.provision.requirement", view(text, Handle(title="FMVSS No. 301", kind="standard")))]
    assert not any("attributed" in a for a in asked)
    assert any(a.startswith("When the vehicle is rotated") for a in asked)  # the rollover requirement is still asked
