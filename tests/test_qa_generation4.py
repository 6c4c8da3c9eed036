"""Generator rules of round 6 by registry name: pointer predicates, an annex's own scope, the sentence after a list,
chunks that start inside a list, procedure-tool trivia, Korean review opinions and a chart's change between stages."""

from __future__ import annotations

from tasks.qa.registry import RULES, load_all
from tasks.qa.rules import ChunkView, Handle
from tasks.qa.rules.provisions import garbled

load_all()

R16 = Handle(title="UN Regulation No. 16", kind="standard")
FMVSS = Handle(title="FMVSS No. 214", kind="standard", section="S7.2.1 Vehicles manufactured on or after 2010")


def view(markdown: str, handle: Handle = R16, language: str = "en", title: str = "T", **extra) -> ChunkView:
    return ChunkView(title=title, language=language, markdown=markdown, handle=handle, **extra)


def made(name: str, v: ChunkView) -> list[tuple[str, str]]:
    return [(c.question, c.answer) for c in RULES[name].check(v)]


def test_a_requirement_whose_predicate_only_points_elsewhere_is_not_asked():
    pointer = RULES["generate.provision.pointer_predicate"].check
    assert pointer("In order to inform the vehicle user(s) of the provisions made for the transport of children, vehicles "
                   "of categories M1, M2, M3 and N1 shall meet the information requirements of Annex 17.")
    assert pointer("The types of safety-belts for each seating position shall be those specified in Annex 16.")
    assert pointer("After the impact at least one of the four criteria specified in paragraph 5.3.7.1.1. through "
                   "paragraph 5.3.7.1.4.2. shall be met.")
    assert pointer("The force-deflection of the impactor as a whole shall fall between corridors of Figure 2e.")
    assert pointer("If parts are not energized, the protection shall be proved by either 5.3.7.1.3. or 5.3.7.1.4. below.")
    # the predicate goes on with a requirement of its own, or states a value: not a pointer
    assert not pointer("The side impact dummy shall comply with the specifications given in Annex 6 and be installed in "
                       "the front seat on the impact side.")
    assert not pointer("Each vehicle shall meet S7.3 and the following requirements in a 53 ±1.0 km/h (33.5 mph) impact.")
    assert not pointer("The strap shall not exceed 5 mm in thickness.")
    text = ("# 8. Installation requirements\n\n8.3.5. Information. In order to inform the vehicle user(s) of the provisions "
            "made for the transport of children, vehicles of categories M1 and N1 shall meet the information requirements "
            "of Annex 17.\n\n8.3.6. Buckles. The buckle shall be released by a force not exceeding 60 N.\n")
    asked = made("generate.provision.requirement", view(text))
    assert [q for q, _ in asked] == ["What does paragraph 8.3.6 (Buckles) of UN Regulation No. 16 require?"]


def test_an_annex_that_states_its_own_scope_is_not_asked_what_it_requires():
    scope = RULES["generate.provision.self_scope"].check
    assert scope("The test procedure and the requirements in this appendix shall be used to determine the suitability "
                 "of seat positions for the installation of child restraints.")
    assert not scope("The test procedure shall use a trolley of 1,100 kg.")
    text = ("# Appendix 1\n\n1.1. General. The test procedure and the requirements in this appendix shall be used to "
            "determine the suitability of seat positions for child restraints.\n")
    assert made("generate.provision.requirement", view(text)) == []


def test_the_sentence_after_a_list_is_not_asked_as_its_last_item():
    text = ("# Test report\n\n7.10.1. The test report shall record the results of all the tests and in particular:\n\n"
            "(a) The type of device used for the test;\n\n(b) The total velocity change;\n\n"
            "(c) The maximum forward displacement of the manikin;\n\n(d) Any failure or breakage.\n\n"
            "If the anchorages prescribed in Annex 6 have not been respected, the test report shall describe how the "
            "belt assembly was installed.\n")
    asked = made("generate.provision.requirement", view(text))
    assert not any("belt assembly was installed" in a for _, a in asked)
    assert RULES["generate.provision.after_list"].check is not None


def test_a_chunk_that_starts_inside_a_list_asks_no_limit_under_its_heading():
    orphan = RULES["generate.section.orphan_items"].check
    body = ("(1) The sum of the front, middle and rear abdominal forces, shall not exceed 2,500 N (562 lb). (2) The pubic "
            "symphysis force shall not exceed 6,000 N (1,350 pounds).\n")
    text = "# S7.2.1 Vehicles manufactured on or after 2010\n\n" + body
    assert orphan(text)
    assert made("generate.requirement.limit", view(text, FMVSS)) == []
    owned = "# S7.2.5 ES-2re requirements\n\nS7.2.5(c) Force measurements.\n\n" + body
    assert not orphan(owned)
    assert made("generate.requirement.limit", view(owned, FMVSS))  # its paragraph is in the chunk: asked


def test_procedure_tools_instruments_and_back_references_are_not_defined():
    trivial = RULES["generate.definition.trivial_use"].check
    assert trivial("A utility knife is used to cut a small v in the carpet at each point on the toepan.")
    assert trivial("The plane of the ground is used to define the X-Y plane.")
    assert trivial("The elapsed time is determined using a stopwatch.")
    assert trivial("The corresponding Vk and Dk coefficients are readily computed by using the consistency requirements.")
    assert not trivial("Chest injury risk is assessed mainly through the compression of the rib cage.")
    assert not trivial("A load limiter is used to cap the belt force on the occupant's chest during the crash.")


def test_a_plus_read_for_a_plus_minus_and_line_break_hyphens_are_garbled():
    assert garbled("placed in a refrigerated cabinet at -10 °C + 1 °C for two hours")
    assert garbled("a vehicle manufactured to operate on an al- cohol fuel")
    assert not garbled("front- and rear-facing child restraints at 20 °C")


KO_REVIEW = Handle(title="기후위기 대응 기본법 일부개정법률안", kind="document", section="위원 후보 추천 단체 명시")
KO_TEXT = (
    "# III 검토의견 / 1. 위원 후보 추천 단체 명시\n\n"
    "또한, 지방위원회의 경우 노동계, 농업계,\n\n청년 등이 포함되지 않아 다양한 사회계층이 참여하지 못하고 있다는 비\n\n"
    "판이 제기되고 있는 상황임(참고자료2).\n\n"
    "이에 개정안은 위원 위촉 시 총연합단체의 추천을 받도록 하여 법적 근거를 마련하려는\n\n"
    "것으로 그 취지는 타당한 방향으로 보임.\n\n"
    "2) 추천단체가 과도하게 많아 행정 비효율이 발생할 수 있음.\n"
)


def test_a_korean_review_opinion_is_asked_for_its_verdict_and_the_criticism_it_reports():
    asked = made("generate.opinion.review_ko", view(KO_TEXT, KO_REVIEW, "ko", heading_path=("III 검토의견",)))
    questions = [q for q, _ in asked]
    assert questions == [
        "'기후위기 대응 기본법 일부개정법률안' 문서의 '위원 후보 추천 단체 명시' 검토의견에 따르면 지방위원회에 대해 "
        "어떤 지적이 제기되고 있나요?",
        "'기후위기 대응 기본법 일부개정법률안' 문서의 '위원 후보 추천 단체 명시' 검토의견은 개정안의 취지를 어떻게 평가하나요?",
    ]
    assert all(a in KO_TEXT for _, a in asked)  # a span of the chunk, over its line breaks
    assert asked[0][1].endswith("비\n\n판이 제기되고 있는 상황임(참고자료2).")
    assert asked[1][1].startswith("이에 개정안은") and asked[1][1].endswith("그 취지는 타당한 방향으로 보임.")
    # not a review section (or no document name): nothing is asked
    assert made("generate.opinion.review_ko", view(KO_TEXT.replace("검토의견", "제안이유"), KO_REVIEW, "ko")) == []
    assert made("generate.opinion.review_ko", view(KO_TEXT, Handle(section="x"), "ko", heading_path=("검토의견",))) == []


DECK = Handle(title="Positioning HBCUs", kind="presentation", section="Attainment", section_kind="slide")


def test_a_chart_over_two_stages_asks_each_series_change_with_both_values():
    chart = "| Category | College Enrollment | Degree Attainment | Same |\n|---|---|---|---|\n| 2000 | 32 | 5 | 7 |\n| 2008 | 37 | 6 | 7 |"
    asked = made("generate.chart.stage_change", view("# Attainment", DECK, charts=(("e1", "Attainment by year", chart),)))
    assert asked == [
        ('In the "Positioning HBCUs" presentation, how did "College Enrollment" change from 2000 to 2008 in the '
         '"Attainment by year" chart?', "from 32 in 2000 to 37 in 2008"),
        ('In the "Positioning HBCUs" presentation, how did "Degree Attainment" change from 2000 to 2008 in the '
         '"Attainment by year" chart?', "from 5 in 2000 to 6 in 2008"),
    ]  # an unchanged series is no change to ask
    builds = "| Build | Chest deflection (mm) |\n|---|---|\n| P1 | 37.5 |\n| P2 | 31.4 |"
    assert made("generate.chart.stage_change", view("# x", DECK, charts=(("e2", "Chest", builds),)))[0][1] == (
        "from 37.5 in P1 to 31.4 in P2")
    regions = "| Category | Share |\n|---|---|\n| Asian | 32 |\n| White | 37 |"  # two categories that are no stages
    assert made("generate.chart.stage_change", view("# x", DECK, charts=(("e3", "Share", regions),))) == []


def test_a_requirement_that_refers_back_or_an_item_requirement_read_as_title_is_not_asked():
    back = RULES["generate.provision.back_reference"].check
    assert back("Where there is no such door, it shall be possible to allow the evacuation of all the occupants.")
    assert back("For vehicles of category N1 this evacuation may be done via an emergency window.")
    assert not back("The rigid parts of the safety-belt, such as buckles, shall not have sharp edges.")
    assert not back("During this test, the steady load of 0.5 daN shall be maintained.")
    text = ("# 5.3 Particular requirements\n\n5.3.3.1. Open at least one door per row of seats. Where there is no such door, "
            "it shall be possible to allow the evacuation of all the occupants by activating the displacement system.\n")
    r95 = Handle(title="UN Regulation No. 95", kind="standard")
    assert made("generate.provision.requirement", view(text, r95)) == []  # no title '(Open at least one door ...)'
