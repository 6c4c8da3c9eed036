"""Critic rules on what a provision answer lost or only points to, read against the words around it in the chunk.

The pairs the other rules pass but a reader rejects (labelled regulation and protocol pairs, round 7) fall into a few
classes that recur across documents, each with a signal in the text rather than in one question template:

- **pointer phrase**: a requirement whose predicate only says where the requirement is, in phrasings the older pointer
  rule does not read ('conditioned as described under paragraph 7.4.1.1', 'shall have the characteristics set out in
  Annex 5', 'must be according to Figure 8', 'at least one of the four criteria specified in paragraph ...');
- **production accounting**: the phase-in bookkeeping of a standard (which manufacturer a vehicle is attributed to,
  the share of a manufacturer's production that must comply): no technical fact;
- **bound in context**: the answer's value stands in the chunk with a tolerance, the other end of a range, a 'between'
  or an offset ('175-250 kg greater than the curb weight') that the answer dropped;
- **coordinate convention**: the definition of a coordinate plane or axis ('the X-Y plane is the horizontal zero
  plane'), notation of the document rather than a fact a user asks;
- **deictic subject**: the question's subject points back to something the question does not name ('both joints',
  'the latter requirement', 'the above approval mark').

Every rule is registered in ``tasks.qa.registry`` and counted only when document-grouped cross-validation keeps it
(``tasks.qa.calibrate``).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from tasks.qa.critic_rules.grounded import Signal
from tasks.qa.registry import rule

if TYPE_CHECKING:
    from tasks.qa.pair_context import PairContext

_REF = (r"(?:paragraphs?\s+\d|sections?\s+\d|annex(?:es)?\s+\d|appendix\s+\d|figures?\s+\d|tables?\s+\d|S\d|§|"
        r"this\s+(?:annex|appendix|regulation|standard|section))")
_POINTER_PHRASE_RE = re.compile(
    r"\b(?:conditioned|tested|measured|positioned|installed|prepared|carried\s+out|performed|determined|calculated|"
    r"mounted|adjusted|fitted|applied)\s+as\s+(?:described|specified|prescribed|defined|indicated|detailed|shown|set\s+out)"
    r"\s+(?:under|in|by)\s+" + _REF +
    r"|\b(?:shall|must)\s+(?:have|possess)\s+(?:the\s+)?(?:characteristics|properties|dimensions|features)\s+"
    r"(?:set\s+out|specified|described|defined|given|shown|indicated|laid\s+down)\s+in\s+" + _REF +
    r"|\b(?:shall|must)\s+be\s+(?:according\s+to|as\s+(?:shown|specified|described|defined)\s+in)\s+" + _REF +
    r"|\bone\s+of\s+the\s+(?:\w+\s+)?(?:criteria|conditions|options|requirements)\s+(?:specified|set\s+out|listed|given|"
    r"described)\s+in\s+" + _REF +
    r"|\b(?:complying|comply|complies|in\s+compliance)\s+with\s+the\s+requirements\s+(?:indicated|specified|set\s+out|"
    r"given|laid\s+down|described)\s+in\s+" + _REF +
    r"|\b(?:must|shall)\s+be\s+met\s+as\s+(?:detailed|described|specified|set\s+out)\s+in\s+" + _REF +
    r"|\brequirements\s+of\s+(?:either,?\s+)?(?:at\s+the\s+manufacturer['’]s\s+option,?\s+)?" + _REF + r"[\w.()]*\s+or\s+"
    + _REF +
    r"|\bsubjected\s+to\s+(?:a|an|the)\s+(?:[\w-]+\s+){0,3}tests?\s+in\s+(?:accordance|conformity|compliance)\s+with\s+"
    + _REF +
    r"|\bmeans\s+(?:a|an|the|any)\s+(?:[\w-]+\s+){0,3}?(?:(?:as\s+)?defined\s+in|(?:which|that)\s+conforms?\s+to)\s+"
    r"(?:the\s+specifications\s+of\s+)?(?:Regulation\s+No\.|part\s+\d|Standard\s+No\.)"
    r"|\b(?:proved|demonstrated|verified|shown)\s+by\s+either\s+(?:paragraphs?\s+)?\d[\d.]*\s+or\s+\d"
    r"|\b(?:shall|must)\s+be\s+those\s+(?:specified|set\s+out|listed|given|described)\s+in\s+" + _REF +
    r"|\bthe\s+requirements\s+of\s+" + _REF + r"[\w.()]*(?:\s+of\s+this\s+(?:section|standard|regulation))?\s+"
    r"(?:must|shall)\s+be\s+met\b", re.IGNORECASE)
_UNIT_VALUE_RE = re.compile(r"\d\s*(?:%|per\s?cent|percent|°|mm|cm|km/h|kph|mph|m/s|km|m|kg|lb|g|ms|s|seconds?|minutes?|"
                            r"hours?|kPa|MPa|Pa|bar|psi|kN|daN|N|J|kJ|V|VAC|VDC)(?![\w/])", re.IGNORECASE)
POINTER_PHRASE_MAX_WORDS = 60


@rule("critic.answer.pointer_phrase", "critic", "an answer that states a requirement",
      "its predicate only says where the requirement is, in phrasings the pointer_only rule does not read: 'conditioned as "
      "described under paragraph 7.4.1.1', 'shall have the characteristics set out in Annex 5', 'must be according to "
      "Figure 8', 'one of the four criteria specified in paragraph ...', 'complying with the requirements indicated in "
      "this annex', 'must be met as detailed in Section 2.1', 'the requirements of either S6.1 or S6.2', 'shall be those "
      "specified in Annex 16', 'the requirements of S7.1 must be met'; with no value of its own", "useful")
def pointer_phrase(ctx: PairContext) -> list[Signal]:
    """The requirement the answer should state is in the paragraph, figure or annex it names."""
    answer = ctx.answer
    if len(answer.split()) > POINTER_PHRASE_MAX_WORDS or _UNIT_VALUE_RE.search(answer):
        return []
    found = _POINTER_PHRASE_RE.search(answer)
    return [Signal("useful", 2, f"the answer only says where the requirement is ('{found.group(0)}')")] if found else []


_ACCOUNTING_RE = re.compile(
    r"\bshall\s+be\s+attributed\s+to\b|\bmanufacturer['’]s\s+(?:\w+\s+)?production\b|\bpercentage\s+of\s+(?:a|the|each)\s+"
    r"manufacturer|\bnot\s+part\s+of\s+the\s+percentage\b|\bproduction\s+(?:of|by)\s+(?:a|the|each)\s+manufacturer",
    re.IGNORECASE)
_NUMBER_RE = re.compile(r"\d+(?:[.,]\d+)*")


@rule("critic.answer.production_accounting", "critic", "the answer",
      "the phase-in bookkeeping of a standard: which manufacturer a vehicle 'shall be attributed to', the share of 'a "
      "manufacturer's production' that must comply: no technical fact", "useful")
def production_accounting(ctx: PairContext) -> list[Signal]:
    """'A vehicle which is imported shall be attributed to the importer.' asked as what a paragraph requires."""
    found = _ACCOUNTING_RE.search(ctx.answer)
    return [Signal("useful", 2, f"phase-in bookkeeping ('{found.group(0)}')")] if found else []


def _occurrences(value: str, markdown: str) -> list[re.Match]:
    return list(re.finditer(r"(?<![\d.,])" + re.escape(value) + r"(?![\d])", markdown))


_RANGE_END = r"(?:\s*(?:–|-|to)\s*\d+(?:[.,]\d+)?)?"
_UNIT_AFTER_RE = re.compile(r"^" + _RANGE_END + r"\s?(?:%|per\s?cent|percent|°\s?C?|º|degrees?|mm|cm|km/\s?h|kph|mph|m/s|"
                            r"km|m|kg|lb|g|ms|s|seconds?|minutes?|hours?|kPa|MPa|Pa|bar|psi|kN|daN|N|J|kJ)(?![\w/])",
                            re.IGNORECASE)
_TOLERANCE = r"(?:±|\uf0b1|\+/-|\+\s?/\s?-|\+\s?-|plus\s?/\s?minus|plus\s+or\s+minus)"
_TOLERANCE_AFTER_RE = re.compile(r"^\s*" + _TOLERANCE + r"\s*\d", re.IGNORECASE)
_TOLERANCE_BEFORE_RE = re.compile(_TOLERANCE + r"\s*$", re.IGNORECASE)
_OTHER_END_AFTER_RE = re.compile(r"^\s*(?:,\s*)?and\s+(?:not\s+(?:more|less|greater|lower|higher)|no\s+(?:more|less)|at\s+"
                                 r"(?:most|least)|(?:a\s+)?(?:maximum|minimum)\s+of)\b", re.IGNORECASE)
_OFFSET_AFTER_RE = re.compile(r"^\s*(?:greater|more|less|higher|lower|larger|smaller|heavier|lighter)\s+than\s+(?:the|its|a)\b",
                              re.IGNORECASE)
_BETWEEN_BEFORE_RE = re.compile(r"\bbetween\s+(?:and\s+including\s+)?$", re.IGNORECASE)
_THAN_BEFORE_RE = re.compile(r"\bthan\b[^.;,\d]{0,40}$", re.IGNORECASE)
_HALF_BOUND_RE = re.compile(r"^\s*(?:not\s+(?:less|more)\s+than|no\s+(?:less|more)\s+than|at\s+(?:least|most)|(?:a\s+)?"
                            r"(?:minimum|maximum)\s+of)\s", re.IGNORECASE)


def _context_loss(answer: str, before: str, after: str) -> str:
    """What the chunk says around one occurrence of the answer's value that the answer dropped ('' when nothing)."""
    if not re.search(_TOLERANCE, answer, re.IGNORECASE) and _TOLERANCE_AFTER_RE.match(after):
        return "its tolerance"
    if _TOLERANCE_BEFORE_RE.search(before):
        return "the tolerance sign that makes it a tolerance"
    if _HALF_BOUND_RE.match(answer) and len(_NUMBER_RE.findall(answer)) == 1 and _OTHER_END_AFTER_RE.match(after):
        return "the other end of its range"
    if not re.search(r"\bthan\b|exceed", answer, re.IGNORECASE) and _OFFSET_AFTER_RE.match(after):
        return "what it is an offset from"
    if not re.search(r"\bbetween\b", answer, re.IGNORECASE) and _BETWEEN_BEFORE_RE.search(before):
        return "its 'between'"
    if (not re.search(r"\bthan\b|exceed|\bleast\b|\bmost\b|\bup to\b|\bwithin\b|maximum|minimum", answer, re.IGNORECASE)
            and _THAN_BEFORE_RE.search(before)):
        return "the comparison it is a bound of"
    return ""


@rule("critic.answer.bound_in_context", "critic", "a value answer and the words around every occurrence of its value in "
      "the chunk", "wherever the chunk gives the value it carries something the answer dropped: a tolerance ('15° ± 10°' "
      "answered '15°'), the other end of a range ('not less than 1.4 daN and not more than 2.2 daN'), a 'between', an "
      "offset ('175-250 kg greater than the measured curb weight') or a comparison with words in between ('no further "
      "forward than a torso angle of 15 degrees')", "grounded")
def bound_in_context(ctx: PairContext) -> list[Signal]:
    """A limit, tolerance or offset answered as a plain value."""
    answer = ctx.answer.strip()
    value = _NUMBER_RE.search(answer)
    if not value or len(answer.split()) > 10 or not _UNIT_AFTER_RE.match(answer[value.end():]):
        return []
    markdown = ctx.chunk_markdown
    losses = []
    for found in _occurrences(value.group(0), markdown):
        unit = _UNIT_AFTER_RE.match(markdown[found.end():found.end() + 12])
        if not unit:
            continue
        after = markdown[unit.end() + found.end():unit.end() + found.end() + 60]
        losses.append(_context_loss(answer, markdown[max(0, found.start() - 60):found.start()], after))
    if losses and all(losses):
        return [Signal("grounded", 2, f"the chunk gives '{value.group(0)}' with {losses[0]}, which the answer dropped")]
    return []


_COORDINATE_Q_RE = re.compile(r"\bwhat\s+(?:is|are)\s+(?:the\s+)?[XYZ]\s?-\s?[XYZ]\s+planes?\b"
                              r"|\bwhat\s+is\s+the\s+[XYZ][- ]axis\b|\bpurpose\s+of\s+the\s+(?:plane|axis|axes|origin)\b",
                              re.IGNORECASE)
_COORDINATE_A_RE = re.compile(r"\b(?:zero\s+plane|used\s+to\s+define\s+the\s+[XYZ]|[XYZ]\s?-\s?[XYZ]\s+planes?\b"
                              r"|[XYZ][- ]axis\b)")


@rule("critic.definition.coordinate_convention", "critic", "a definition or purpose question and its answer",
      "it asks what a coordinate plane or axis is ('what is the X-Y plane?', 'the purpose of the plane of the ground') and "
      "the answer defines a plane or axis: the document's notation, not a fact a user asks", "useful")
def coordinate_convention(ctx: PairContext) -> list[Signal]:
    """'What is the Y-Z plane?' -> 'the vertical transverse zero plane ...'."""
    if _COORDINATE_Q_RE.search(ctx.question) and _COORDINATE_A_RE.search(ctx.answer):
        return [Signal("useful", 2, "a coordinate-system convention")]
    return []


_DEICTIC_SUBJECT_RE = re.compile(r"\b(?:for|of|to|on|in|with|by|does|do|is|are|shall|must|may)\s+(?:both|each\s+of\s+the)\s+"
                                 r"(?!the\b|of\b|sides?\b|ends?\b)[a-z]+s\b|\bthe\s+(?:latter|former|above|aforementioned)\b",
                                 re.IGNORECASE)


@rule("critic.grammar.deictic_subject", "critic", "the subject of the question (its quoted names aside)",
      "it points back to something the question does not name: 'both joints', 'the latter requirement', 'the above "
      "approval mark', 'the former'", "standalone")
def deictic_subject(ctx: PairContext) -> list[Signal]:
    """'What angle is specified for both joints?': joints of what?"""
    question = re.sub(r"\"[^\"]*\"|“[^”]*”", '"X"', ctx.question)
    found = _DEICTIC_SUBJECT_RE.search(question)
    return [Signal("standalone", 2, f"the subject points back ('{found.group(0)}')")] if found else []


CONDITION_RULES = (pointer_phrase, production_accounting, bound_in_context, coordinate_convention, deictic_subject)
"""The rules of this module, in the order their reasons are listed."""
