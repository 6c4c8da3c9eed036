"""Generator rules of round 10 (regulations) by registry name, on real chunks (the chunk text stored with the labelled
pairs of ``tests/data``): a limit stated before a formula's lead-in, an injury criterion's symbol as the subject, a
certification corridor written with "should", and a definition of "the part of the X" whose X the sentence before
introduced."""

from __future__ import annotations

from tasks.qa.registry import RULES, load_all
from tasks.qa.rules import ChunkView, Handle
from tests.qa_labelled import real_view

load_all()

FMVSS201 = Handle(title="FMVSS No. 201", kind="standard")
FMVSS214 = Handle(title="FMVSS No. 214", kind="standard")
R95 = Handle(title="UN Regulation No. 95", kind="standard")


def limits(view: ChunkView) -> list[tuple[str, str]]:
    return [(c.question, c.answer) for c in RULES["generate.requirement.limit"].check(view)]


def test_a_limit_before_a_formula_lead_in_is_asked_without_the_formula():
    view = real_view("The HIC(d) shall not exceed 1000 when calculated", FMVSS201)
    assert ("According to paragraph S7 of FMVSS No. 201, what limit applies to the HIC(d)?",
            "The HIC(d) shall not exceed 1000") in limits(view)
    # the text layer runs the formula into the sentence (FMVSS 214): neither the formula nor a half sentence is asked
    view = real_view("The HIC shall not exceed 1000 when calculated", FMVSS214)
    assert not any("formula" in a or "∫" in a for _, a in limits(view))


def test_a_certification_corridor_with_should_and_a_filter_clause_is_a_limit():
    view = real_view("The peak resultant head acceleration, filtered using ISO 6487:2000 CFC 1000", R95)
    assert ("According to paragraph 5.5.3 of Annex 6 to UN Regulation No. 95, what limit applies to the peak resultant head "
            "acceleration?",
            "The peak resultant head acceleration, filtered using ISO 6487:2000 CFC 1000, should be between and including "
            "100 g and 150 g.") in limits(view)


def test_a_bare_symbol_or_a_vague_subject_is_still_not_a_limit_subject():
    from tasks.qa.rules.requirements import _subject

    assert _subject("The HIC(d) shall not exceed 1000")[0] == "The HIC(d)"
    assert _subject("The threshold shall not exceed 1000") is None  # which threshold only the chunk says
    assert _subject("The load shall not exceed 1000") is None  # a bare number needs a criterion's symbol


def test_a_part_of_something_introduced_just_before_is_not_defined():
    anaphoric = RULES["generate.definition.anaphoric"].check
    paragraph = ("2.2.2. The head consists of an aluminium shell covered by a pliable vinyl skin. The interior of the shell is "
                 "a cavity accommodating tri-axial accelerometers and ballast.")
    assert anaphoric("The interior of the shell is a cavity accommodating tri-axial accelerometers and ballast.", paragraph)
    assert not anaphoric("The central part of the abdomen is a metal casting (part No. 7A).",
                         "The abdomen consists of three parts. The central part of the abdomen is a metal casting (part No. 7A).")
    view = real_view("The interior of the shell is a cavity", R95)
    from tasks.qa.rules.facts import _definition_candidates

    questions = [c.question for c in _definition_candidates(view)]
    assert not any("interior of the shell" in q for q in questions)
