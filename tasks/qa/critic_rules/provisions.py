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
  cut around the footnote;
- **bound dropped**: a bare value whose every occurrence in the chunk is a bound ('less than + 10°');
- **temperature as angle**: 'what angle' answered with a value the chunk gives in degrees Celsius;
- **double verb**: 'What heel has an inclination does ... specify?': a subject that took a clause's verb in;
- **wrong item**: the value stands under another lettered item of the chunk than the one the question cites;
- **generic subject**: '... specify for the vehicle?': the subject is the document's generic object, not the value's owner;
- **outside paragraph**: the answer's value is not in the text of the paragraph the question cites.

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


_DEFERRAL_RE = re.compile(
    r"\b(?:as\s+)?(?:specified|declared|stated|designated|indicated)\s+by\s+the\s+(?:vehicle\s+)?manufacturer"
    r"(?:\s+of\s+the\s+vehicle)?\b", re.IGNORECASE)
"""'as specified by the manufacturer (of the vehicle)': the definition defers to someone else, it adds no content."""


@rule("critic.provision.circular_definition", "critic", "a definition answer ('X means ...')",
      "the definition adds at most one word to the term it defines ('convertible roof frame means the frame of a "
      "convertible roof'; 'capacity of the fuel tank means the fuel-tank capacity as specified by the manufacturer': "
      "hyphens split, a deferral to the manufacturer adds nothing)", "useful")
def circular_definition(ctx: PairContext) -> list[Signal]:
    """A definition that restates its term."""
    found = _MEANS_RE.match(ctx.answer)
    if not found:
        return []
    term = {w.casefold() for w in _WORD_RE.findall(found.group(1).replace("-", " "))}
    body = _DEFERRAL_RE.sub(" ", found.group(2).replace("-", " "))
    new = [w for w in _WORD_RE.findall(body.casefold()) if w not in term and w not in _STOP]
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


_BARE_VALUE_RE = re.compile(r"\s*([-+]?\d+(?:[.,]\d+)?)\s*([^\d\s.]{0,12})\s*\.?\s*")
_BOUND_BEFORE_RE = re.compile(r"\b(?:less|more|greater|fewer|lower|higher) than|\bnot exceeding|\bexceeding|\bat (?:least|most)|"
                              r"\bup to|\b(?:maximum|minimum) of|\bbelow|\babove|±\s*$|\+/-\s*$", re.IGNORECASE)


def _occurrences(value: str, markdown: str) -> list[re.Match]:
    return list(re.finditer(r"(?<![\d.,])" + re.escape(value.lstrip("+-")) + r"(?![\d])", markdown))


@rule("critic.answer.bound_dropped", "critic", "an answer that is a bare value ('10°')",
      "wherever the chunk gives the value it is a bound or a tolerance ('less than + 10°', 'at least 20 mm', '± 10°') "
      "that the answer dropped",
      "grounded")
def bound_dropped(ctx: PairContext) -> list[Signal]:
    """'10°' for 'less than + 10° or - 10°': a limit read as a value."""
    bare = _BARE_VALUE_RE.fullmatch(ctx.answer)
    if not bare:
        return []
    unit = bare.group(2)
    found = [m for m in _occurrences(bare.group(1), ctx.chunk_markdown)
             if ctx.chunk_markdown[m.end():m.end() + len(unit) + 2].lstrip().startswith(unit)]  # the same value with its unit
    before = [ctx.chunk_markdown[max(0, m.start() - 22):m.start()] for m in found]
    if found and all(_BOUND_BEFORE_RE.search(b) for b in before):
        return [Signal("grounded", 2, f"the chunk gives '{bare.group(1)}' as a bound the answer dropped")]
    return []


_TEMPERATURE_AFTER_RE = re.compile(r"^\s*(?:°|º)?\s*(?:[-+±]\s*\d+(?:[.,]\d+)?\s*)?(?:°|º)\s?C\b|^\s*degrees?\s+C", re.IGNORECASE)


@rule("critic.answer.temperature_as_angle", "critic", "a 'what angle ...' question and its answer's value",
      "the chunk gives the value as a temperature ('-10° + 1 °C'): not an angle", "grounded")
def temperature_as_angle(ctx: PairContext) -> list[Signal]:
    """'10°' of '-10° + 1 °C' asked as an angle."""
    if not re.match(r"^\s*what\s+(?:is\s+the\s+)?angle\b", ctx.question, re.IGNORECASE):
        return []
    value = _VALUE_RE.search(ctx.answer)
    found = _occurrences(value.group(0), ctx.chunk_markdown) if value else []
    if any(_TEMPERATURE_AFTER_RE.match(ctx.chunk_markdown[m.end():m.end() + 16]) for m in found):
        return [Signal("grounded", 2, f"'{value.group(0)}' is a temperature in the chunk, asked as an angle")]
    return []


_DOUBLE_VERB_RE = re.compile(r"^\s*what\s+(?:[\w-]+\s+){1,4}(?:has|have|is|are|was|were)\s+(?:[\w-]+\s+){0,6}(?:does|do|did)\s",
                             re.IGNORECASE)


@rule("critic.grammar.double_verb", "critic", "an English 'what ...' question (its quoted names aside)",
      "two finite verbs: the subject took a clause's verb in ('What heel has an inclination does ... specify?')",
      "well_formed")
def double_verb(ctx: PairContext) -> list[Signal]:
    """A noun phrase cut from a sentence with its verb, then framed as 'what ... does X specify?'."""
    question = re.sub(r"\"[^\"]*\"|“[^”]*”", '"X"', ctx.question)
    return [Signal("well_formed", 2, "two finite verbs in one question")] if _DOUBLE_VERB_RE.search(question) else []


_CITED_ITEM_RE = re.compile(r"(?:S?\d+(?:\.\d+)*\.?|\))\(([a-h])\)(?:\s|\(|$)")
_ITEM_MARK_RE = re.compile(r"(?:^|(?<=\s))\(?([a-h])\)\s")


@rule("critic.provision.wrong_item", "critic", "the lettered item the question cites ('2.2.3.1(a)') and where the answer "
      "stands in the chunk", "the answer's value stands under another lettered item of the chunk ('d)'): the fact is "
      "asked under the wrong item", "grounded")
def wrong_item(ctx: PairContext) -> list[Signal]:
    """'What angle does section 2.2.3.1(a) specify?' answered from item d)."""
    cited = _CITED_ITEM_RE.search(ctx.question)
    value = _VALUE_RE.search(ctx.answer)
    if not cited or not value:
        return []
    for found in _occurrences(value.group(0), ctx.chunk_markdown):
        marks = _ITEM_MARK_RE.findall(ctx.chunk_markdown[:found.start()])
        if not marks or marks[-1] == cited.group(1):
            return []
    if not _occurrences(value.group(0), ctx.chunk_markdown):
        return []
    return [Signal("grounded", 2, f"the value stands under item {marks[-1]}), not ({cited.group(1)})")]


_GENERIC_SUBJECT_RE = re.compile(
    r"\b(?:specify|specified|apply|applies|required?)\s+(?:for|to|of)\s+(?:the|each|every|a|an|any)\s+"
    r"(?:(?:test\s+)?vehicles?|systems?|devices?|tests?|items?|parts?)\s*\??\s*$", re.IGNORECASE)


@rule("critic.grammar.generic_subject", "critic", "the subject a value question names ('... specify for the vehicle?')",
      "the subject is only the document's generic object (the vehicle, each vehicle, the system, the test): it does not "
      "say which value is meant, and the value usually belongs to something else (the barrier's speed, the hose's length)",
      "grounded")
def generic_subject(ctx: PairContext) -> list[Signal]:
    """'What speed does paragraph S6.3(a) specify for the vehicle?' answered with the barrier's speed."""
    found = _GENERIC_SUBJECT_RE.search(ctx.question)
    return [Signal("grounded", 2, f"a generic subject ('{found.group(0).strip(' ?')}')")] if found else []


_CITED_PARAGRAPH_RE = re.compile(r"\b(?:paragraph|section)\s+(S?\d+(?:\.\d+)*)", re.IGNORECASE)
_NEXT_PARAGRAPH_RE = re.compile(r"(?:\n|(?<=[.;:]\s)(?<!No\.\s)(?<!Nos\.\s))(S?\d+(?:\.\d+)+|S\d+|\d+)\.?\s+[A-Z(]")
"""The start of a numbered paragraph: at a line start or after a sentence, not 'Standard No. 214 (49 CFR ...)'."""


def _paragraph_text(number: str, markdown: str) -> str | None:
    """The text of paragraph ``number`` in the chunk: from its number to the next paragraph that is not its own
    sub-paragraph (None when the chunk does not start it)."""
    start = re.search(r"(?:^|\n|(?<=[.;:]\s))" + re.escape(number) + r"\.?\s", markdown)
    if not start:
        return None
    for found in _NEXT_PARAGRAPH_RE.finditer(markdown, start.end()):
        if found.group(1) != number and not found.group(1).startswith(number + "."):
            return markdown[start.start():found.start()]
    return markdown[start.start():]


@rule("critic.provision.outside_paragraph", "critic", "the numbered paragraph the question cites and the chunk's text of it",
      "the answer's value is not in that paragraph's text (from its number to the next paragraph that is not its own "
      "sub-paragraph): the fact belongs to a neighbouring paragraph", "grounded")
def outside_paragraph(ctx: PairContext) -> list[Signal]:
    """'What speed does paragraph S7.2(b)(2) specify?' answered with S7.3(a)(2)'s 48 km/h."""
    cited = _CITED_PARAGRAPH_RE.search(ctx.question)
    value = _VALUE_RE.search(ctx.answer)
    if not cited or not value or ("." not in cited.group(1) and not cited.group(1).startswith("S")):
        return []
    text = _paragraph_text(cited.group(1), ctx.chunk_markdown)
    if text is None or _occurrences(value.group(0), text):
        return []
    return [Signal("grounded", 2, f"'{value.group(0)}' is not in the text of {cited.group(1)}")]


PROVISION_RULES = (wrong_item, outside_paragraph, generic_subject, dropped_item_level, rate_as_quantity, past_tense,
                   circular_definition, approval_procedure, glued_footnote_word, bound_dropped, temperature_as_angle, double_verb)
"""The rules of this module, in the order their reasons are listed."""
