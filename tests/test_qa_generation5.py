"""Generator rules of round 8 by registry name, on real chunks (the chunk text stored with the labelled pairs of
``tests/data``): a value that is the bound of a condition, a subject cut before its identifier, and a requirement
that is only a test pointer."""

from __future__ import annotations

from tasks.qa.registry import RULES, load_all
from tasks.qa.rules import ChunkView, Handle
from tests.qa_labelled import real_view

load_all()

R16 = Handle(title="UN Regulation No. 16", kind="standard")
R95 = Handle(title="UN Regulation No. 95", kind="standard")


def asked(name: str, view: ChunkView) -> list[tuple[str, str]]:
    return [(c.question, c.answer) for c in RULES[name].check(view)]


def test_a_value_that_bounds_a_condition_is_not_asked_as_a_specification():
    threshold = RULES["generate.value.condition_threshold"].check
    assert threshold("The anchorages for normal use are the points A, B and K if the strap length between the upper edge of "
                     "the buckle and the hole for attachment of the strap support is ", "not more than")
    assert threshold("If the mass of the measuring apparatus on board of the vehicle exceeds the ")
    assert threshold("When the ignition is switched off for more than ")
    # a test condition stated in a 'when' clause is the test's own value (labelled usable: FMVSS 301 S6.3(a), S6.2(a))
    assert not threshold("When the vehicle is impacted laterally on either side by a barrier moving at ")
    assert not threshold("When the vehicle travelling longitudinally forward at any speed up to and including ")
    # and a requirement after its condition states its value ("if ..., the load shall not exceed")
    assert not threshold("If the belt is fitted with a retractor, the load shall not exceed ")

    view = real_view("strap length between the upper edge", R16)
    questions = [q for q, _ in asked("generate.provision.value", view)]
    assert questions, "the Annex 6 chunk still gets its other value questions"
    assert not any("strap length" in q for q in questions)
    view = real_view("exceeds the 25 kg allowed", R95)
    assert not any("measuring apparatus" in q for q, _ in asked("generate.provision.value", view))


def test_a_subject_cut_before_its_identifier_is_not_asked():
    ident = RULES["generate.value.subject_identifier"].check
    assert ident(" 2 shall be equal to 15 ± 2 kJ.")
    assert ident(" 5 and 6 during the test shall be equal to 3.5 ± 1 kJ")
    assert not ident(" shall be equal to 45 ± 3 kJ.")
    assert not ident(" of the trolley shall be 950 ± 20 kg.")
    view = real_view("dissipated energy against block 2", R95)
    pairs = asked("generate.provision.value", view)
    assert not any(q.rstrip("?").endswith(("against block", "against blocks")) for q, _ in pairs)
    assert any("45 ± 3 kJ" in a or "330 ± 20 mm" in a for _, a in pairs), "values whose subject is whole are still asked"


def test_a_requirement_that_only_names_its_test_is_a_pointer():
    pointer = RULES["generate.provision.pointer_predicate"].check
    assert pointer("The belt assembly or restraint system shall be subjected to a dynamic test in conformity with "
                   "paragraph 7.7. below.")
    assert not pointer("The belt assembly shall be subjected to a dynamic test at 50 km/h in conformity with paragraph 7.7.")
    view = real_view("subjected to a dynamic test in conformity with paragraph 7.7", R16)
    assert not any(a.startswith("The belt assembly or restraint system shall be subjected")
                   for _, a in asked("generate.provision.requirement", view))
    critic = RULES["critic.answer.pointer_phrase"].check
    from tasks.qa.judge import PairContext
    pair = PairContext("What does paragraph 6.4.1.1 of UN Regulation No. 16 require?", "The belt assembly or restraint "
                       "system shall be subjected to a dynamic test in conformity with paragraph 7.7. below.", view.markdown,
                       view.title, "r16.pdf", "factual", "text", "en")
    assert critic(pair)


def test_the_value_rule_does_not_emit_in_regulations_and_protocols():
    from dataclasses import replace

    gate = RULES["generate.value.kind_gate"].check
    view = real_view("dissipated energy against block 2", R95)
    assert asked("generate.provision.value", view), "without a known kind the rule still asks (unit tests, other kinds)"
    for kind in ("regulation", "protocol"):
        gated = replace(view, handle=replace(R95, doc_kind=kind))
        assert gate(gated) and asked("generate.provision.value", gated) == []
    report = replace(view, handle=replace(R95, doc_kind="other"))
    assert not gate(report) and asked("generate.provision.value", report)
    # the paragraphs' requirements are still asked in a regulation
    r16 = real_view("In the case of other types of belts, the forward displacement", R16)
    assert asked("generate.provision.requirement", replace(r16, handle=replace(R16, doc_kind="regulation")))


def test_a_condition_relative_to_something_unnamed_is_not_asked():
    relative = RULES["generate.provision.conditional_relative"].check
    assert relative("In the case of other types of belts")
    assert relative("Where the prerequisite is met")
    assert not relative("If the driver and any front outboard passenger seats do not adjust independently of each other")
    assert not relative("When the strap has been kept under load for 30 minutes in the same low-temperature chamber")
    view = real_view("In the case of other types of belts, the forward displacement", R16)
    answers = [a for _, a in asked("generate.provision.conditional", view)]
    assert "In the case of other types of belts" not in answers


def test_a_proof_by_either_paragraph_is_a_pointer():
    sentence = ("In the case that the test is performed under the condition that part(s) of the high voltage system are not "
                "energized, the protection against electrical shock shall be proved by either 5.3.7.1.3. or 5.3.7.1.4. for "
                "the relevant part(s).")
    assert RULES["generate.provision.pointer_predicate"].check(sentence)
    view = real_view("shall be proved by either 5.3.7.1.3. or 5.3.7.1.4. for the relevant part(s)", R95)
    assert not any(a.endswith("for the relevant part(s).") for _, a in asked("generate.provision.requirement", view))
    from tasks.qa.judge import PairContext
    pair = PairContext("What does paragraph 5.3.7.1 of UN Regulation No. 95 require?", sentence, view.markdown, view.title,
                       "r95.pdf", "factual", "text", "en")
    assert RULES["critic.answer.pointer_phrase"].check(pair)


def test_a_definition_that_only_points_to_another_document_is_not_asked():
    pointer = RULES["generate.definition.pointer_only"].check
    assert pointer('"Child restraint" means a safety device as defined in Regulation No. 44.')
    assert pointer("Free motion headform means a test device which conforms to the specifications of part 572, subpart L "
                   "of this chapter.")
    # a definition with content of its own, even beside a reference, is asked
    assert not pointer('"Passenger airbag" means an airbag assembly intended to protect occupant(s) in seats other than '
                       "the driver's in the event of a frontal collision.")
    assert not pointer('"ISOFIX child restraint system" means a child restraint system, fulfilling the requirements of '
                       "Regulation No. 44, which has to be attached to an ISOFIX anchorages system, fulfilling the "
                       "requirements of Regulation No. 14.")
    view = real_view('"Child restraint" means a safety device as defined in Regulation No. 44.', R16)
    terms = [q for q, _ in asked("generate.provision.definition", view)]
    assert terms and not any('"Child restraint"' in q for q in terms)
    from tasks.qa.judge import PairContext
    pair = PairContext('According to paragraph 2.10 of UN Regulation No. 16, what does "Child restraint" mean?',
                       '"Child restraint" means a safety device as defined in Regulation No. 44.', view.markdown, view.title,
                       "r16.pdf", "definitional", "text", "en")
    assert RULES["critic.answer.pointer_phrase"].check(pair)
