"""Critic rules on pairs asked from numbered provisions (regulations, protocols): the reference, the rate, the tense,
the definition and the approval procedure, read against the chunk and not against one question template.

- **dropped item level**: the question cites a numbered item straight under a paragraph ('S9.2.3(3)') while the
  chunk's paragraph is split into lettered items ('(a)', '(b)'): the letter was lost and the reference points nowhere;
- **rate as a quantity**: the answer's value is a rate in the chunk ('2° per second', '100 mm/min') but the question
  asks an angle, a distance or a time;
- **past tense of a provision**: 'What was the ...' asked of a regulation or protocol, which specifies and does not
  report (the pair is built from a label, not a finding);
- **circular definition**: 'X means ...' whose answer adds at most one word to the term it defines;
- **approval procedure**: the answer is the procedure of applying for or granting approval ('submitted for approval',
  'at the opinion of the manufacturer'): no technical fact;
- **glued footnote word**: a footnote number glued to a word of the answer ('vehicles10, shall ...'): the sentence was
  cut around the footnote.

Every rule is registered in ``tasks.qa.registry`` and judged only by document-grouped cross-validation
(``tasks.qa.calibrate``): a rule whose firings on the training documents are not mostly unusable is not counted.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from tasks.qa.critic_rules.grounded import Signal
from tasks.qa.registry import rule

if TYPE_CHECKING:
    from tasks.qa.pair_context import PairContext

_ITEM_REF_RE = re.compile(r"\b((?:S\d+(?:\.\d+)*|\d+(?:\.\d+)+))\((\d+|[ivx]+)\)")
_LETTERED_RE = re.compile(r"(?m)(?:^|\s)\(([a-h])\)\s")


@rule("critic.provision.dropped_item_level", "critic", "the paragraph reference of the question",
      "it cites a numbered or roman item straight under a paragraph ('S9.2.3(3)') while the chunk splits that "
      "paragraph into lettered items ('(a)', '(b)'): the lettered level was dropped", "grounded")
def dropped_item_level(ctx: PairContext) -> list[Signal]:
    """'S9.2.3(3)' for 'S9.2.3(b)(3)'."""
    found = _ITEM_REF_RE.search(ctx.question)
    if not found or len(set(_LETTERED_RE.findall(ctx.chunk_markdown))) < 2:
        return []
    return [Signal("grounded", 2, f"'{found.group(0)}' skips the lettered item its paragraph is split into")]


_RATE_AFTER_RE = re.compile(
    r"^\s*(?:[°º%]|[a-zA-Z]{1,12})?\s*(?:per\s+(?:second|minute|hour|sec|min|s|h)\b|/\s?(?:s|sec|min|h)\b)", re.IGNORECASE)
_ASKED_RE = re.compile(r"^\s*what\s+(?:is\s+the\s+)?(angle|distance|time|length|height|displacement|mass)\b", re.IGNORECASE)
_VALUE_RE = re.compile(r"\d+(?:[.,]\d+)?")


@rule("critic.provision.rate_as_quantity", "critic", "a 'what angle/distance/time ...' question and its answer's value",
      "the chunk gives the value as a rate ('2° per second', '100 millimetres per minute'): not the quantity asked",
      "grounded")
def rate_as_quantity(ctx: PairContext) -> list[Signal]:
    """'not exceeding 2°' cut out of 'a speed not exceeding 2° per second' and asked as an angle."""
    if not _ASKED_RE.match(ctx.question):
        return []
    value = _VALUE_RE.search(ctx.answer)
    if not value:
        return []
    for found in re.finditer(r"(?<![\d.])" + re.escape(value.group(0)) + r"(?![\d])", ctx.chunk_markdown):
        if _RATE_AFTER_RE.match(ctx.chunk_markdown[found.end():found.end() + 30]):
            return [Signal("grounded", 2, f"'{value.group(0)}' is a rate in the chunk, asked as a quantity")]
    return []


_PAST_RE = re.compile(r"^\s*what\s+(?:was|were)\s+the\b", re.IGNORECASE)


@rule("critic.provision.past_tense", "critic", "a question on a regulation or protocol (the document's detected kind)",
      "'What was the ...': a provision specifies, it does not report; such questions come from a label read as a finding",
      "well_formed")
def past_tense(ctx: PairContext) -> list[Signal]:
    """'What was the CAC in UN Regulation No. 95?'"""
    if ctx.doc_kind in ("regulation", "protocol") and _PAST_RE.match(ctx.question):
        return [Signal("well_formed", 2, f"past tense asked of a {ctx.doc_kind}")]
    return []


_MEANS_RE = re.compile(r"^\s*(.{2,80}?)\s+(?:means|is defined as|refers to)\s+(.+?)\.?\s*$", re.IGNORECASE | re.DOTALL)
_WORD_RE = re.compile(r"[^\W_]+")
_STOP = frozenset("a an the of to in on for and or any its it is are that which with by as at this".split())


@rule("critic.provision.circular_definition", "critic", "a definition answer ('X means ...')",
      "the definition adds at most one word to the term it defines ('convertible roof frame means the frame of a "
      "convertible roof')", "useful")
def circular_definition(ctx: PairContext) -> list[Signal]:
    """A definition that restates its term."""
    found = _MEANS_RE.match(ctx.answer)
    if not found:
        return []
    term = {w.casefold() for w in _WORD_RE.findall(found.group(1))}
    new = [w for w in _WORD_RE.findall(found.group(2).casefold()) if w not in term and w not in _STOP]
    return [Signal("useful", 2, "the definition restates its term")] if len(new) <= 1 else []


_APPROVAL_RE = re.compile(
    r"\b(?:submitted for approval|(?:at|in) the opinion of the manufacturer|to be approved|approval (?:authority|procedure)|"
    r"(?:the )?manufacturer (?:shall|may) (?:submit|choose|select)|granting (?:of )?approval|conformity of production)\b",
    re.IGNORECASE)


@rule("critic.provision.approval_procedure", "critic", "the answer",
      "it is the procedure of applying for or granting approval ('submitted for approval', 'at the opinion of the "
      "manufacturer', 'conformity of production'): no technical fact", "useful")
def approval_procedure(ctx: PairContext) -> list[Signal]:
    """The approval paperwork of a regulation asked as what a paragraph requires."""
    found = _APPROVAL_RE.search(ctx.answer)
    return [Signal("useful", 2, f"approval procedure ('{found.group(0)}')")] if found else []


_GLUED_WORD_RE = re.compile(r"\b[a-z]{3,}\d{1,2}(?=[,;:]?\s)")


@rule("critic.answer.glued_footnote_word", "critic", "the answer",
      "a footnote number glued to a word ('vehicles10, shall be ...'): the sentence was cut around a footnote", "grounded")
def glued_footnote_word(ctx: PairContext) -> list[Signal]:
    """An answer spliced at a footnote mark: its opening was lost with the mark."""
    found = _GLUED_WORD_RE.search(ctx.answer)
    return [Signal("grounded", 2, f"a footnote mark glued to a word ('{found.group(0)}')")] if found else []


PROVISION_RULES = (dropped_item_level, rate_as_quantity, past_tense, circular_definition, approval_procedure,
                   glued_footnote_word)
"""The rules of this module, in the order their reasons are listed."""
