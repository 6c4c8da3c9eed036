"""Critic rules of round 7 of the critic (issue 22) by registry name, each on the real chunks of labelled pairs of
``tests/data``: the unusable pairs a rule fires on, and usable pairs it must leave alone."""

from __future__ import annotations

from tasks.qa import calibrate
from tasks.qa.judge import PairContext
from tasks.qa.registry import load_all
from tests.qa_labelled import fires, labelled, labelled_rows

load_all()


def with_siblings(question: str, answer_start: str = "", usable: bool | None = None) -> PairContext:
    """The critic's view of the labelled pair, with the other labelled pairs of its chunk as siblings (as the judge
    sees the other pairs of the chunk at run time)."""
    rows = labelled_rows()
    siblings = calibrate.siblings_of(rows)
    n = next(i for i, r in enumerate(rows) if r["question"].startswith(question) and r["answer"].startswith(answer_start)
             and (usable is None or bool(r["usable"]) == usable))
    return calibrate.context(rows[n], siblings=siblings[n])


def test_several_answers_is_the_same_question_answered_otherwise_in_its_chunk():
    name = "critic.question.several_answers"
    knee = "What does paragraph 4.2 (Knee joint) of Annex 7 to UN Regulation No. 16 prescribe?"
    assert fires(name, with_siblings(knee, "Set the thigh"))  # one step block of five, labelled unusable
    assert fires(name, with_siblings(knee, "Rotate the lower leg"))
    shock = "What does paragraph 5.3.7.1 (Protection against electrical shock) of UN Regulation No. 95 require?"
    assert fires(name, with_siblings(shock, "After the impact"))  # another document
    # a cut answer beside its whole sentence fires; the whole sentence does not (Korean report, labelled 0 and 1)
    ko = "이수진 의원안(의안번호 제2125318호) 탄소중립기본법 개정안은 무엇을 법률에 명시하려는 것인가요?"
    assert fires(name, with_siblings(ko, "다양한 사회계층의", usable=False))
    assert not fires(name, with_siblings(ko, "다양한 사회계층의", usable=True))
    # an OCR variant of one answer is the same answer ('4l2.6' beside '412.6'), labelled usable
    assert not fires(name, with_siblings("What HIC15 did the driver dummy record in the FO-2024-017", "412.6"))
    # an answer that stops at its sentence end beside a twin that runs on into the next item (labelled usable)
    assert not fires(name, with_siblings("What does section 2.2.2(g) (CRS placement) of the \"CP 008-1",
                                         "The CRS can be placed on the rear seats without excessive force, difficulty or "
                                         "interaction with the door aperture."))
    # a question asked once has no sibling to disagree with
    assert not fires(name, with_siblings("What does paragraph 7.7.3 of UN Regulation No. 16 require?"))


def test_next_item_is_a_span_that_crosses_into_the_next_list_item():
    name = "critic.answer.next_item"
    assert fires(name, labelled("What does section 2.2.5.1(d) (Ease of use of tethers & straps)", usable=False))
    assert fires(name, labelled("What does section 2.2.2(g) (CRS placement)", usable=False))
    assert fires(name, labelled("According to the \"Termination of star rating\" section"))  # the question ran on
    # a dash that opens an appendix title is no list item (UN R16, labelled usable)
    assert not fires(name, labelled("What does paragraph 8.2.1 (General requirements) of UN Regulation No. 16 require?"))
    assert not fires(name, labelled("What does paragraph 8.2.2 (General requirements) of UN Regulation No. 16 require?"))


def test_restated_condition_asks_nothing_the_question_does_not_say():
    name = "critic.provision.restated_condition"
    assert fires(name, labelled("According to paragraph S7 (Test conditions) of FMVSS No. 301, when must the vehicle"))
    assert fires(name, labelled("According to paragraph 3.2.2 (Ventilation device mounting procedure) of Annex 5"))
    assert fires(name, labelled("According to paragraph 6.4.1.3.2 (Dynamic test) of UN Regulation No. 16, when shall"))
    # a real condition, 'each other' is not relative (FMVSS 214, labelled usable)
    assert not fires(name, labelled("According to paragraph S8.3.1.3 (Seat position adjustment) of FMVSS No. 214"))
    assert not fires(name, labelled("According to the \"Instructions\" section of UN Regulation No. 16, when must"))


def test_several_values_reads_whole_numbers_and_every_occurrence():
    name = "critic.answer.several_values"
    assert fires(name, labelled("What angle does section 3.5 of the \"Roof Strength Test Protocol\" document specify?"))
    assert fires(name, labelled("What acceleration does paragraph 6.2.5.3.1.2 (Emergency locking retractors)"))
    # 'within 10 mm' is not the '10' of '100 mm/min'; '200 mm + 40 mm' is one value with its tolerance (usable)
    assert not fires(name, labelled("What distance does paragraph 7.4.2.4 (Test of breaking strength of strap"))
    assert not fires(name, labelled("What distance does paragraph 7.4.3.2 (Width under load) of UN Regulation No. 16"))
    # a range answer's own ends are not other values (UN R95, labelled usable)
    assert not fires(name, labelled("What time does paragraph 3 (Assessment procedure for low electrical energy)"))
    # '5°' also stands alone in its own paragraph 2.5.4, not only among the angles of 2.3.6 (labelled usable)
    assert not fires(name, labelled("What angle does paragraph 2.5.4 (Thorax) of Annex 6 to UN Regulation No. 95 specify?"))


def test_false_rejections_of_round_12_are_fixed_and_the_rules_still_fire():
    from tasks.qa.critic_rules import garbage_tokens

    # 'the following year' is a time, not a lead-in; '... as follows:' still is
    lead_in = "critic.answer.lead_in"
    pair = labelled("According to the \"Termination of star rating\" section")
    from dataclasses import replace

    assert not fires(lead_in, replace(pair, answer="If there are no registrations by the end of the following year"))
    assert fires(lead_in, replace(pair, answer="The rating will be suspended as follows:"))
    # an arrow between words is a load path, not layout debris; a stray '>' still is
    assert garbage_tokens("subframe -> tunnel -> sill") == []
    assert garbage_tokens("subframe > tunnel")
    # a section named after its all-capitals parent heading is that heading; the IIHS pairs filed under the wrong
    # section (round 8 labels, unusable) still fire
    heading = "critic.section.wrong_heading"
    assert fires(heading, labelled("How is the test weight of the vehicle measured, according to the \"Photography\""))
    from tasks.qa.critic_structure import _same_heading

    assert _same_heading("TEST CONDITIONS Impact speed and overlap", "Impact speed and overlap")
    assert not _same_heading("Intrusion measurements", "Dummy kinematics, contact locations, and kinematic assessments")


def test_value_twin_leaves_a_comparison_of_two_values_alone():
    name = "critic.table.value_twin"
    # '제1기 28명, 제2기 7명' compares two periods: not the twin of 'which item is largest in period 1? 여성' (usable)
    assert not fires(name, with_siblings("제1기와 제2기 2050 탄소중립·녹색성장위원회의 여성 위원 수는 각각 몇 명인가요?"))
    # the value of the 'highest' row is still a twin (UN R95 Table 2, labelled unusable)
    assert fires(name, with_siblings("In Table 2 of UN Regulation No. 95, what is the mass (kg) for Thorax?"))


def test_lead_in_reads_an_object_that_is_only_described_below():
    name = "critic.answer.lead_in"
    assert fires(name, labelled("What does paragraph 6.2.5 (Retractors) of UN Regulation No. 16 require?"))
    # 'according to the method described below' after a requirement of its own (UN R95, labelled usable)
    assert not fires(name, labelled("What does paragraph 6 (Dynamic tests) of Annex 5 to UN Regulation No. 95 require?"))


def test_why_dimension_asks_why_a_specification_has_its_value():
    name = "critic.grammar.why_dimension"
    assert fires(name, labelled("Why is the pole 254 mm ±3 mm (10 inches) in diameter"))  # FMVSS 201
    assert fires(name, labelled("Why is the pole 254 mm (10 inches) ±6 mm (0.25 in) in diameter"))  # FMVSS 214
    # a timing that is the point of the design is a fair 'why' (textbook, labelled usable)
    assert not fires(name, labelled("Why does a thorax airbag deploy between the occupant and the door in about 10 ms"))
