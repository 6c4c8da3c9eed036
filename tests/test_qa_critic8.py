"""Critic rules of round 8 of the critic (issue 22) by registry name, each on the real chunks of labelled pairs of
``tests/data``: the unusable pairs a rule fires on, and usable pairs it must leave alone."""

from __future__ import annotations

from tasks.qa.registry import load_all
from tests.qa_labelled import fires, labelled

load_all()


def test_construction_label_is_an_answer_resting_on_a_figure_or_construction_label():
    name = "critic.answer.construction_label"
    # FMVSS 201 construction steps (labelled unusable): a letter label, a numbered plane in a step
    assert fires(name, labelled("What does paragraph S8.14(g) of FMVSS No. 201 prescribe?", usable=False))
    assert fires(name, labelled("What does paragraph S8.10(f) (Forehead impact zone) of FMVSS No. 201", usable=False))
    assert fires(name, labelled("What is the first step that paragraph S10.6(a) (Target SR1)", usable=False))
    # another document: R16 Annex 7's 'point P' of a figure (labelled unusable)
    assert fires(name, labelled("What does paragraph 4.5 (Neck) of Annex 7 to UN Regulation No. 16 require?",
                                "The displacement measurement at point P", usable=False))
    # labels listed as what the question asks for are the answer, not a reference (R16 Annex 6, labelled usable)
    assert not fires(name, labelled("According to the \"Annex 6 Description of trolley, seat, anchorages",
                                    "The anchorages for normal use are the points A, B and K", usable=True))
    # a target named by the question, placed by numbered planes, is not a step (FMVSS 201, labelled usable)
    assert not fires(name, labelled("According to the \"S10 Target Locations\" section of FMVSS No. 201, what is target AP3?",
                                    usable=True))
    # a distance to a point ('a point 162 mm rearward') is no label (FMVSS 216, labelled usable)
    assert not fires(name, labelled("According to FMVSS No. 216, what does roof over the front seat area mean?",
                                    usable=True))


def test_fragment_handle_is_a_heading_cut_inside_a_phrase_or_a_figure_caption():
    name = "critic.handle.fragment"
    assert fires(name, labelled("How is the Viscous Criterion (VC) calculated, according to the \"for EUROSID 1\" section",
                                usable=False))  # UN R95
    assert fires(name, labelled("What angle does the \"Figure 3 MGA Roof Crush Test System\" section", usable=False))  # IIHS
    # a full heading with a curly apostrophe inside is no fragment (IBM redbook, labelled usable)
    assert not fires(name, labelled("Why must video data be transformed into frames, according to the \"Use case 5",
                                    usable=True))
    # a lower-case heading that opens with a long word is a heading (UN R16 'rearward-facing ISOFIX ...')
    assert not fires(name, labelled("In the \"rearward-facing ISOFIX child restraint systems"))


def test_circular_definition_reads_hyphens_and_a_deferral_to_the_manufacturer():
    name = "critic.provision.circular_definition"
    # UN R95 2.6 (labelled unusable): 'fuel-tank capacity as specified by the manufacturer' restates its term
    assert fires(name, labelled("According to paragraph 2.6 of UN Regulation No. 95, what does \"Capacity of the fuel tank\"",
                                usable=False))
    # FMVSS 201 (another document, labelled unusable) still fires
    assert fires(name, labelled("According to the \"S3. Definitions\" section of FMVSS No. 201, what does convertible roof frame mean?"))
    # a real definition is left alone (UN R95, labelled usable)
    assert not fires(name, labelled("According to paragraph 2.10 of UN Regulation No. 95, what does \"Reference mass\"",
                                    usable=True))
