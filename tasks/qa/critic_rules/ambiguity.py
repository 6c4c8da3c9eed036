"""Critic rules on questions that have more than one answer in their own chunk, or none beyond what they say.

Written from the leave-one-document-out misses of the calibrated critic on the 1,547 labels (round 12 of the critic):

- **several answers**: another pair of the same chunk asks the very same question with a different answer ('What does
  paragraph 4.2 (Knee joint) of Annex 7 prescribe?' asked once per step block; 'What does paragraph 5.3.7.1 require?'
  answered by two of its sentences): the question does not say which of them it means, and any one answer is a part.
  This reads the structure of the generator's own output (its pairs per chunk), not a question template;
- **next item**: the answer runs on into the next lettered item of its list ('... tightened easily ... . e) Where
  equipped, ...'), or the question swallowed the next dash item ('... date stamp. - If there has been ...'): the span
  crosses a list boundary of the chunk;
- **restated condition**: a 'when ...?' question whose condition answer adds at most one word to the question ('when
  must the vehicle be capable ... within the range?' -> 'Where a range is specified'; '... gap of > 0.5 mm?' -> 'If
  there is a gap greater than 0.5 mm') or is only relative to something unnamed ('In the case of other types of
  belts'): the pair asks nothing the question does not already say;
- **construction label** (round 13, from the FMVSS 201 construction steps and R16 Annex 7's 'point P'): the answer
  rests on a point, plane or line named by a bare letter (as a reference: 'at point P'), or is a construction step
  naming a numbered plane; without the figure or the earlier steps that place the label, the pair says where nothing is;
- **why dimension**: 'Why is the pole 254 mm ±3 mm in diameter and set off from any mounting surface?': a stated
  dimension is a specification, and the 'so that' clause the answer gives explains only the other predicate.

Every rule is registered in ``tasks.qa.registry`` and counted only when document-grouped cross-validation keeps it
(``tasks.qa.calibrate``).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from rapidfuzz import fuzz
from rapidfuzz.distance import Levenshtein

from tasks.qa.critic_rules.grounded import Signal
from tasks.qa.registry import rule

if TYPE_CHECKING:
    from tasks.qa.pair_context import PairContext

SAME_ANSWER_RATIO = 85
"""Two answers this similar (rapidfuzz ratio of their normalised text), or at most ``SAME_ANSWER_EDITS`` characters
apart, are one answer spelled twice (an OCR variant '4l2.6' of '412.6', a bullet kept or dropped), not two answers."""
SAME_ANSWER_EDITS = 2


def _flat(text: str) -> str:
    return " ".join(re.findall(r"[^\W_]+", text.casefold()))


@rule("critic.question.several_answers", "critic", "the question and the other pairs of its chunk",
      "another pair of the same chunk asks the same question with a different answer that this answer does not "
      "contain (nor only runs on past a sentence this answer ends with): the question has several answers and does not "
      "say which", "grounded")
def several_answers(ctx: PairContext) -> list[Signal]:
    """'What does paragraph 4.2 prescribe?' asked once per step block of paragraph 4.2."""
    question, answer = _flat(ctx.question), _flat(ctx.answer)
    for other_q, other_a in ctx.siblings:
        other = _flat(other_a)
        whole_start = other.startswith(answer) and ctx.answer.rstrip().endswith(".")  # this one stops at its sentence end
        if (_flat(other_q) == question and other and other not in answer and not whole_start
                and fuzz.ratio(other, answer) < SAME_ANSWER_RATIO and Levenshtein.distance(other, answer) > SAME_ANSWER_EDITS):
            return [Signal("grounded", 2, f"the same question has another answer in its chunk ('{other_a[:50]}')")]
    return []


_NEXT_ITEM_ANSWER_RE = re.compile(r"[.;]\s+\(?[a-z]\)\s+[A-Z][a-z]")
"""A sentence end, then a lettered item label ('e)', '(h)') and a capitalised word: the next item of the list."""
_NEXT_ITEM_QUESTION_RE = re.compile(r"\.\s+[-–]\s+[A-Z][a-z]")
"""A sentence end inside the question, then a dash item: the question ran on into the next list item."""


@rule("critic.answer.next_item", "critic", "the answer and the question",
      "the answer runs on into the next lettered item of its list ('... easily. e) Where equipped ...'), or the question "
      "into the next dash item ('... date stamp. - If there has been ...'): the span crosses a list boundary", "grounded")
def next_item(ctx: PairContext) -> list[Signal]:
    """An answer or question that crosses into the next list item."""
    found = _NEXT_ITEM_ANSWER_RE.search(ctx.answer)
    if found:
        return [Signal("grounded", 2, f"the answer runs on into the next list item ('{found.group(0).strip()}')")]
    found = _NEXT_ITEM_QUESTION_RE.search(ctx.question)
    if found:
        return [Signal("well_formed", 2, f"the question runs on into the next list item ('{found.group(0).strip()}')")]
    return []


_CONDITION_ANSWER_RE = re.compile(r"^\s*(?:where|when|if|in\s+(?:the\s+)?case|provided|unless)\b", re.IGNORECASE)
_WHEN_RE = re.compile(r"\bwhen\b|\bunder\s+what\b|\bin\s+what\s+case", re.IGNORECASE)
_CONDITION_STOP = frozenset(
    "the a an of to in on at by for with and or is are be been was were when where if case shall will must may can that "
    "this it its any all there greater less more than not".split()
)
"""Function words and comparison words: 'If there is a gap greater than 0.5 mm' adds nothing to 'a gap of > 0.5 mm'."""
_RELATIVE_RE = re.compile(r"\b(?:other\s+(?:types?|kinds?|cases?)|such|said)\b(?!\s+as\b)", re.IGNORECASE)
"""Relative to something the pair does not name ('In the case of other types of belts', 'Where there is no such
door'); not 'each other', not 'such as'."""


def _content(text: str) -> set[str]:
    words = re.findall(r"[a-z0-9]+(?:\.[0-9]+)?", text.casefold())
    return {w[:-1] if w.endswith("s") and len(w) > 3 else w for w in words if w not in _CONDITION_STOP}


@rule("critic.provision.restated_condition", "critic", "a 'when ...?' question and its condition answer",
      "the answer adds at most one word to the question ('Where a range is specified' to '... within the range?') or is "
      "relative to something unnamed ('In the case of other types of belts'): no condition is given", "useful")
def restated_condition(ctx: PairContext) -> list[Signal]:
    """A condition answer that only restates its question or points at an unnamed alternative."""
    if not (_CONDITION_ANSWER_RE.match(ctx.answer) and _WHEN_RE.search(ctx.question)):
        return []
    new = _content(ctx.answer) - _content(ctx.question)
    if len(new) <= 1:
        return [Signal("useful", 2, "the condition answer restates the question")]
    found = _RELATIVE_RE.search(ctx.answer)
    if found:
        return [Signal("standalone", 2, f"the condition is relative to something unnamed ('{found.group(0)}')")]
    return []


_WHY_DIMENSION_RE = re.compile(
    r"^\s*why\s+(?:is|are)\b[^?]*?\d+(?:[.,]\d+)?\s*(?:±\s*\d+(?:[.,]\d+)?\s*)?(?:mm|cm|m|in(?:ches)?|ft)\b[^?]*?"
    r"\b(?:in\s+diameter|long|wide|high|thick|deep|in\s+length|in\s+width|in\s+height)\b", re.IGNORECASE)


@rule("critic.grammar.why_dimension", "critic", "a 'why is/are ...' question",
      "it asks why something has a stated dimension ('Why is the pole 254 mm ±3 mm in diameter and set off ...?'): a "
      "specification is set, not explained, and the cause the answer gives belongs to another part of the sentence",
      "grounded")
def why_dimension(ctx: PairContext) -> list[Signal]:
    """'Why is the pole 254 mm in diameter and set off from any mounting surface?' ('so that' explains the set-off)."""
    if _WHY_DIMENSION_RE.search(ctx.question):
        return [Signal("grounded", 2, "asks why a stated dimension has its value: the cause given is not for it")]
    return []


_LETTER_LABEL_RE = re.compile(
    r"\b(?:at|through|on|by|from|to|of|in|along|between|about|around|with)\s+(?:the\s+)?(?:[Pp]oints?|[Pp]lanes?|[Ll]ines?|[Ss]pheres?)\s+(?P<label>[A-Z]{1,2}|[a-z](?:-[A-Z]-[a-z])?)\b(?![-’'])")
"""A point, plane or line named by a bare letter and used as a reference ('at point P', 'centered on Point X', 'bounded
by lines a-O-b'): a figure's or a construction's label, not a name. An answer that only lists labels as what the
question asks for ('The anchorages ... are the points A, B and K') is left alone."""
_NUMBER_LABEL_RE = re.compile(
    r"\b(?:[Pp]oints?|[Pp]lanes?|[Ll]ines?)\s+(?P<label>\d{1,3}|[A-Z]{1,3})\b"
    r"(?!\s*(?:mm|cm|m|kg|km|ms|s|per|%|°|degrees?)\b)")
"""A point, plane or line named by a number or a short code ('Plane 26', 'Point APR'), not followed by a unit."""
_CONSTRUCTION_STEP_RE = re.compile(r"^\s*(?:Locate|Draw|Determine|Construct|Mark|Establish|Extend|Project)\b")
"""An answer that opens with an imperative of geometric construction."""


def _unnamed_labels(pattern: re.Pattern[str], answer: str, question: str) -> list[str]:
    """The labels ``pattern`` finds in the answer that the question does not name (as a whole word)."""
    return [m.group(0) for m in pattern.finditer(answer)
            if not re.search(rf"(?<![\w-]){re.escape(m.group('label'))}(?![\w-])", question)]


@rule("critic.answer.construction_label", "critic", "the answer and the question",
      "the answer rests on a construction or figure label the question does not name: a point, plane or line called by a "
      "bare letter as a reference ('through Point X', 'at point P', 'by lines a-O-b'), or a construction step ('Locate "
      "a transverse vertical plane (Plane 26) ...') naming a numbered plane or point: alone, the pair says where nothing "
      "is", "useful")
def construction_label(ctx: PairContext) -> list[Signal]:
    """'Determine two spheres centered on Point X.'; 'The displacement measurement at point P shall not ...'."""
    labels = _unnamed_labels(_LETTER_LABEL_RE, ctx.answer, ctx.question)
    if not labels and _CONSTRUCTION_STEP_RE.match(ctx.answer):
        labels = _unnamed_labels(_NUMBER_LABEL_RE, ctx.answer, ctx.question)
    if labels:
        return [Signal("useful", 2, f"the answer rests on a label the question does not name ('{labels[0]}')")]
    return []


AMBIGUITY_RULES = (several_answers, next_item, restated_condition, why_dimension, construction_label)
"""The rules of this module, in the order their reasons are listed."""
