"""Critic rules on statements that carry no fact of their own, found in the labelled pairs the critic passed.

Two classes recur across documents (leave-one-document-out misses of the calibrated critic on the round 7-9 labels):

- **pointer statement**: a sentence whose only content is where something is shown, listed or done ('The head is shown
  as part No. 1 in Figure 1 of this annex', 'The masses ... are presented in table 2', 'In the table below are listed
  ...', 'Use the procedure in UN Regulation No. 173', 'apply the relevant assessment outlined in Section 2.2.5', 'are
  readily computed by using the consistency requirements (3.2)'): the pointer rules of ``conditions`` and ``spans`` read
  requirement predicates ('shall comply with ...'), not these descriptive and imperative forms;
- **dangling participle**: a value question whose subject is cut down to a participle ('... specify for the force
  required?', '... for the moving barrier assemblies specified?'): what the value is of is lost;
- **quantity noun**: a value question names a quantity ('What distance ...', 'What mass ...') and the chunk names the
  value as another one just before or after it (a stature of 125cm, a force of 66.7-89.0 N (15-20 lb), 3 mm thick, 3
  degrees of freedom): the question asks the wrong quantity;
- **line-break hyphen**: the answer keeps a word split at a line end ('an al- cohol fuel') or starts in the middle of
  one ('Size markings' where the chunk has 'i-' at the end of the line before): layout debris in the answer.

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

_TARGET = (r"(?:paragraphs?\s+\d|sections?\s+\d|annex(?:es)?\s+\d|appendix\s+\d|figures?\s+\w|tables?\s+\d|"
           r"(?:UN\s+)?Regulation\s+No\.?\s*\d|equations?\s+\(?\d|\(\d+(?:\.\d+)*\))")
_POINTER_STATEMENT_RE = re.compile(
    r"\b(?:is|are)\s+(?:shown|presented|given|listed|illustrated|depicted|described|specified|defined|detailed|tabulated)"
    r"\s+(?:as\s+part\s+No\.?\s*\w+\s+)?in\s+" + _TARGET +
    r"|\bin\s+the\s+(?:table|figure|list)\s+below\b"
    r"|^\s*(?:the\s+)?(?:\w+\s+){0,8}\(see\s+(?:table|figure|annex|paragraph)s?\s+[\w.]+(?:\s+and\s+\w+)?\)\.?\s*$"
    r"|\bproceed\s+(?:according\s+to|as\s+(?:described|specified)\s+in|in\s+accordance\s+with)\s+" + _TARGET +
    r"|\bapply\s+the\s+(?:\w+\s+){0,3}(?:assessment|procedure|test|requirements?)\s+(?:outlined|described|specified|"
    r"detailed|given)\s+in\s+" + _TARGET +
    r"|^\s*(?:use|follow|apply|perform|carry\s+out)\s+the\s+(?:\w+\s+){0,2}(?:procedure|method|test|assessment)s?\s+"
    r"(?:in|of|described\s+in|specified\s+in|given\s+in|according\s+to)\s+" + _TARGET +
    r"|\bby\s+using\s+the\s+(?:\w+\s+){0,3}(?:requirements?|equations?|formulae?|relations?)\s+\(\d",
    re.IGNORECASE)
POINTER_STATEMENT_MAX_WORDS = 45
"""A longer answer has room for content besides its pointer."""


@rule("critic.answer.pointer_statement", "critic", "the answer (at most 45 words)",
      "its only content is where something is shown, listed or done: 'shown as part No. 1 in Figure 1', 'presented in "
      "table 2', 'in the table below are listed', '(see Table 1)', 'proceed according to paragraphs ...', 'apply the "
      "assessment outlined in Section 2.2.5', 'use the procedure in UN Regulation No. 173', 'computed by using the "
      "consistency requirements (3.2)'", "useful")
def pointer_statement(ctx: PairContext) -> list[Signal]:
    """'The head is shown as part No. 1 in Figure 1 of this annex.' asked as what a paragraph specifies."""
    answer = ctx.answer
    if len(answer.split()) > POINTER_STATEMENT_MAX_WORDS:
        return []
    found = _POINTER_STATEMENT_RE.search(answer)
    return [Signal("useful", 2, f"the answer only says where it is shown or done ('{found.group(0).strip()}')")] if found else []


_DANGLING_PARTICIPLE_RE = re.compile(r"\bfor\s+the\s+(?:[\w-]+\s+){0,4}(?:required|specified|used|given|described|mentioned|"
                                     r"shown|concerned|indicated)\?$", re.IGNORECASE)


@rule("critic.grammar.dangling_participle", "critic", "the end of the question",
      "the subject a value is asked for ends in a bare participle ('specify for the force required?', 'for the moving "
      "barrier assemblies specified?'): the noun it qualified was cut", "well_formed")
def dangling_participle(ctx: PairContext) -> list[Signal]:
    """'What force does paragraph 6.2.3.4 ... specify for the force required?'."""
    found = _DANGLING_PARTICIPLE_RE.search(ctx.question)
    return [Signal("well_formed", 2, f"the subject ends in a bare participle ('{found.group(0)}')")] if found else []


_SPLIT_WORD_RE = re.compile(r"\b[a-z]{1,8}- (?!and\b|or\b|to\b|nor\b)[a-z]{2,}\b")
_LINE_END_HYPHEN_RE = re.compile(r"[A-Za-z]-[ \t]*\n?[ \t]*$")


@rule("critic.answer.line_break_hyphen", "critic", "the answer and the chunk text just before it",
      "a word split at a line end is kept in the answer ('an al- cohol fuel'), or the answer starts right after such a "
      "split ('Size markings ...' where the chunk reads 'i-' at the end of the line before)", "well_formed")
def line_break_hyphen(ctx: PairContext) -> list[Signal]:
    """'Each vehicle manufactured to operate on an al- cohol fuel ...'."""
    found = _SPLIT_WORD_RE.search(ctx.answer)
    if found:
        return [Signal("well_formed", 2, f"a word split at a line end ('{found.group(0)}')")]
    answer = ctx.answer.strip()
    at = ctx.chunk_markdown.find(answer[:40]) if len(answer) >= 10 else -1
    if at > 1 and _LINE_END_HYPHEN_RE.search(ctx.chunk_markdown[max(0, at - 6):at]):
        return [Signal("well_formed", 2, "the answer starts in the middle of a word split at a line end")]
    return []


_ASKED_QUANTITY_RE = re.compile(r"^What\s+(distance|length|height|width|mass|weight|angle)\s+does\b", re.IGNORECASE)
_OTHER_QUANTITY_BEFORE = {
    "distance": r"stature|thickness|radius|radii|diameter", "length": r"stature|thickness|radius|diameter",
    "height": r"stature|thickness|radius|diameter", "width": r"stature|thickness|radius|diameter",
    "mass": r"force|push|pull|load|pressure", "weight": r"force|push|pull|pressure", "angle": r"(?!)",
}
_OTHER_QUANTITY_AFTER = {"distance": r"thick\b|in\s+thickness", "angle": r"(?:degrees?\s+)?of\s+freedom"}
_BOUND_PREFIX_RE = re.compile(
    r"^(?:up\s+to|at\s+(?:least|most)|not\s+(?:more|less)\s+than|within|a\s+(?:maximum|minimum)\s+of)\s+", re.IGNORECASE)
QUANTITY_WINDOW = 45
"""How many characters before the value the chunk's noun for it is looked for."""


@rule("critic.answer.quantity_noun", "critic", "a value question ('What distance/mass/angle does ...') and the chunk "
      "around every occurrence of its value", "the chunk names the value as another quantity just before or after it "
      "('a stature of 125cm' asked as a distance, 'a force of 66.7-89.0 N (15-20 lb)' asked as a mass, '3 mm thick' asked "
      "as a distance, '3 degrees of freedom' asked as an angle)", "grounded")
def quantity_noun(ctx: PairContext) -> list[Signal]:
    """'What distance does section 2.3.1 (Q6 Dummy) specify?' -> '125cm' (the dummy's stature)."""
    asked = _ASKED_QUANTITY_RE.search(ctx.question)
    value = _BOUND_PREFIX_RE.sub("", ctx.answer.strip())[:10]
    if not asked or not re.search(r"\d", value):
        return []
    kind = asked.group(1).casefold()
    before = re.compile(r"\b(?:" + _OTHER_QUANTITY_BEFORE[kind] + r")\b", re.IGNORECASE)
    after = re.compile(r"^\s*(?:" + _OTHER_QUANTITY_AFTER.get(kind, "(?!)") + ")", re.IGNORECASE)
    markdown = ctx.chunk_markdown
    starts = [m.start() for m in re.finditer(re.escape(value), markdown)]
    if starts and all(before.search(markdown[max(0, i - QUANTITY_WINDOW):i])
                      or after.search(markdown[i + len(ctx.answer.strip()):i + len(ctx.answer.strip()) + 25]) for i in starts):
        return [Signal("grounded", 2, f"the chunk gives '{value}' as another quantity than the {kind} asked")]
    return []


STATEMENT_RULES = (pointer_statement, dangling_participle, line_break_hyphen, quantity_noun)
"""The rules of this module, in the order their reasons are listed."""
