"""Coverage rules on by default (qa-cov2): each failure class of their labelled unusable pairs, by rule name, on the
text of the real chunks it came from (FMVSS 201/214, UN R16/R95, IIHS roof strength, FMVSS 301)."""

from __future__ import annotations

from tasks.qa.registry import RULES, load_all
from tasks.qa.rules import ChunkView, Handle
from tasks.qa.rules.coverage import COVERAGE_SOURCES, DEFAULT_COVERAGE_SOURCES

load_all()

FMVSS201 = Handle(title="FMVSS No. 201", kind="standard")
FMVSS214 = Handle(title="FMVSS No. 214", kind="standard")
R95 = Handle(title="UN Regulation No. 95", kind="standard")
R16 = Handle(title="UN Regulation No. 16", kind="standard")


def view(markdown: str, handle: Handle) -> ChunkView:
    return ChunkView(title=markdown.splitlines()[0].lstrip("# "), language="en", markdown=markdown, handle=handle)


def made(name: str, v: ChunkView) -> list[tuple[str, str]]:
    return [(c.question, c.answer) for c in RULES[name].check(v)]


def test_test_condition_and_stated_value_stay_behind_the_setting():
    assert [s.__name__ for s in COVERAGE_SOURCES if s not in DEFAULT_COVERAGE_SOURCES] == [
        "test_condition_candidates", "stated_value_candidates"]


def test_a_step_of_a_geometric_construction_is_not_asked_alone():
    # FMVSS 201 S8.14 and S8.15: steps that locate Point X, Plane Z, plane B only mean something with the steps after them
    text = ("# § 571.201 Standard No. 201; Occupant protection in interior impact / S8.14 Multiple impacts\n\n"
            "S8.14 Multiple impacts.\n\n(g) Determine two spheres centered on Point X. Radii of these spheres are 150 mm "
            "and 200 mm, respectively.\n\n(i) Locate a vertical plane, Plane Z, passing through Point X and coincident "
            "(within ±5°) with the horizontal approach angle used.\n\n"
            "S8.15 Upper Roof.\n\n(b) Locate the transverse vertical plane B at the rearmost point where it contacts the "
            "interior roof (including trim) at the vehicle centerline.\n")
    assert made("generate.coverage.procedure_step", view(text, FMVSS201)) == []
    zone = ("# § 571.201 / S8.10 Forehead impact zone\n\nS8.10 Forehead impact zone.\n\n(f) Forehead impact zone. The "
            "forehead impact zone is the surface area on the FMH forehead bounded by lines a-O-b and c-P-d, and a-c and "
            "b-d.\n")
    assert made("generate.coverage.provision_statement", view(zone, FMVSS201)) == []
    # a step that names no construction point is still asked
    windows = ("# § 571.214 / S10 Test conditions\n\nS10.6 Windows and sunroofs. Movable vehicle windows and vents are "
               "placed in the fully closed position on the struck side of the vehicle.\n")
    assert made("generate.coverage.provision_statement", view(windows, FMVSS214)) == [
        ("What does paragraph S10.6 (Windows and sunroofs) of FMVSS No. 214 specify?",
         "Movable vehicle windows and vents are placed in the fully closed position on the struck side of the vehicle.")]


def test_an_instruction_taken_for_a_title_stays_in_the_answer():
    # FMVSS 214 S12.3.2(a)(2): "Fully recline the seat back, if adjustable." is the first step, not the item's heading
    text = ("# § 571.214 / S12.3 Positioning\n\nS12.3.2 Driver position.\n\n(a) Upper body.\n\n(2) Fully recline the "
            "seat back, if adjustable. Install the dummy into the driver’s seat, such that when the legs are positioned "
            "120 degrees to the thighs, the calves of the legs are not touching the seat cushion.\n")
    asked = made("generate.coverage.procedure_step", view(text, FMVSS214))
    assert asked and all(a.startswith("Fully recline the seat back, if adjustable. Install the dummy") for _, a in asked)
    assert not any("(Fully recline" in q for q, _ in asked)


def test_lead_ins_pointer_captions_and_assembly_trivia_are_not_asked():
    lead_in = ("# § 571.214 / S8.11 Impact reference line\n\nS8.11 Impact reference line. Place a vertical reference line "
               "at the location described below on the side of the vehicle that will be struck.\n")
    assert made("generate.coverage.procedure_step", view(lead_in, FMVSS214)) == []
    trivia = ("# Annex 6\n\n3.4.3. Thorax-lumbar spine-abdomen. The lumbar spine adapter is mounted to the top of the "
              "lumbar spine with four screws.\n\n3.4.4. Thorax-lumbar spine-abdomen. The mounting flange of the central "
              "abdominal casting is clamped between the lumbar spine adapter and the lumbar spine top plate.\n\n"
              "2.5.8. Thorax. A tuning spring is located in the guide system assembly (part No. 4h).\n")
    assert made("generate.coverage.provision_statement", view(trivia, R95)) == []
    caption = ("# Annex 7 Description of manikin\n\n1.2.9. Overalls. The manikin is covered by a special overall (see "
               "Table 1).\n")
    assert made("generate.coverage.provision_statement", view(caption, R16)) == []
    # a statement with a pointer that still says enough of its own is asked
    neck = ("# Annex 6\n\n5.6.1. Neck. The head-neck interface of the neck is mounted to a special certification "
            "head-form with a mass of 3.9 ± 0.05 kg (see Figure 6 of this annex).\n")
    assert len(made("generate.coverage.provision_statement", view(neck, R95))) == 1


def test_a_value_with_a_direction_is_a_where_question_and_an_ownerless_point_is_not_asked():
    ask = RULES["generate.requirement.stated_value"].check.__globals__["stated_value_question"]
    assert ask("The midpoint of the platen’s forward edge is 254 ± 10 mm beyond the most forward point of the roof.") == \
        "where is the midpoint of the platen’s forward edge?"
    assert ask("The center of gravity is located 1,372 mm ±38 mm rearward of the front wheel axis.") == ""
    assert ask("The onboard braking system weighs approximately 11 kg.") == "how much does the onboard braking system weigh?"


def test_the_test_condition_rule_no_longer_asks_through_its_verb():
    ask = RULES["generate.protocol.test_condition"].check.__globals__["condition_question"]
    assert ask("The face is attached to the extension at a height of 20 cm from the ground.") == ""
    assert ask("Offset barrier crash tests are conducted at 64.4 ± 1 km/h.") == \
        "at what speed are offset barrier crash tests conducted?"
