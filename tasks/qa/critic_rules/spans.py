"""Critic rules that verify the answer span against the chunk's structure, and grammar that no template owns.

- **cell**: when the question names one table row (its first cell) and one column (a header cell) of a table of
  the chunk, the answer must be the cell under them;
- **value header**: a column the question names whose header has the shape of the column's body values
  ('R129 100cm- 135cm' over 'R129 61cm- 125cm'): a body row was read as the header row;
- **numbered label**: a row label asked with its list number ('the approval for 1 Maxi-Cosi Pebble 360');
- **foreign number**: a number of the question (outside the quoted document name) that is nowhere in the chunk;
- **dangling subject**: a question whose subject ends in a list separator, a preposition or an article
  ('what is partner -?', 'what are the bad News of?'), or a capitalised article inside the sentence;
- **value twin**: the value of a row asked beside a sibling 'which ... highest/lowest' question whose answer is that
  row (the rubric counts the pair once; the second is not useful);
- **constant column**: the value of a column that holds the same value in every row (a constant, not a fact of the row);
- **handle validity**: a quoted name cut with '...', two different standard numbers in one question (a fact of one
  standard asked under another), a paragraph of an annex asked as the regulation's own paragraph.

Every rule is registered in ``tasks.qa.registry`` and judged only by document-grouped cross-validation
(``tasks.qa.calibrate``).
"""

from __future__ import annotations

import re
import unicodedata
from typing import TYPE_CHECKING

from ragprep.markdown import markdown_tables
from tasks.qa.critic_rules.grounded import Signal
from tasks.qa.registry import rule

if TYPE_CHECKING:
    from tasks.qa.pair_context import PairContext

_WORD_RE = re.compile(r"[^\W_]+")
_NUMBER_RE = re.compile(r"(?<![\w.])\d+(?:[.,]\d+)*")
_QUOTED_RE = re.compile(r"\"[^\"]{2,200}\"|“[^”]{2,200}”|'[^']{2,200}'|‘[^’]{2,200}’|「[^」]{2,200}」")


def _norm(text: str) -> str:
    return " ".join(_WORD_RE.findall(unicodedata.normalize("NFKC", text).casefold()))


def _contains(haystack: str, needle: str) -> bool:
    """``needle`` occurs in ``haystack`` as whole words (both normalised)."""
    return bool(needle) and f" {needle} " in f" {haystack} "


def _shape(cell: str) -> str:
    """A cell with its digits folded: '#' per number (two values of one column share a shape)."""
    return re.sub(r"\d+(?:[.,]\d+)*", "#", _norm(cell))


# --- the cell under the named row and column -----------------------------------------------------------------


def _named_cell(question: str, table: list[list[str]]) -> tuple[str, str, str] | None:
    """(row label, column header, cell) when the question names exactly one row and one column of ``table``."""
    q = _norm(question)
    header = table[0]
    columns = [j for j, h in enumerate(header) if j and len(_norm(h)) >= 2 and _contains(q, _norm(h))]
    rows = [r for r in table[1:] if r and len(_norm(r[0])) >= 2 and _contains(q, _norm(r[0]))]
    columns = [j for j in columns if not any(_contains(_norm(r[0]), _norm(header[j])) for r in rows)]
    if len(rows) != 1 or len(columns) != 1 or columns[0] >= len(rows[0]):
        return None
    return rows[0][0], header[columns[0]], rows[0][columns[0]]


@rule("critic.answer.cell_mismatch", "critic", "a question naming one row and one column of a table of the chunk",
      "the answer is not the cell under that row and column", "grounded")
def cell_mismatch(ctx: PairContext) -> list[Signal]:
    """The answer is not the cell that the named row and column meet in."""
    answer = _norm(ctx.answer)
    if not answer:
        return []
    for table in markdown_tables(ctx.chunk_markdown, min_rows=2):
        named = _named_cell(ctx.question, table)
        if named is None:
            continue
        label, column, cell = named
        wanted = _norm(cell)
        if wanted and not (_contains(answer, wanted) or _contains(wanted, answer)):
            return [Signal("grounded", 2, f"the cell under '{label[:30]}' and '{column[:30]}' is '{cell[:30]}', "
                                          "not the answer")]
    return []


@rule("critic.table.value_header", "critic", "the table column the question names",
      "its header has the shape of the column's own body values (a body row read as the header row)", "grounded")
def value_header(ctx: PairContext) -> list[Signal]:
    """A column 'named' by a header that is really a value ('R129 100cm- 135cm')."""
    q = _norm(ctx.question)
    for table in markdown_tables(ctx.chunk_markdown, min_rows=2):
        for j, head in enumerate(table[0]):
            name = _norm(head)
            if not (name and re.search(r"\d", name) and _contains(q, name)):
                continue
            body = [r[j] for r in table[1:] if j < len(r) and _norm(r[j])]
            if sum(_shape(c) == _shape(head) for c in body) >= max(1, len(body) // 3):
                return [Signal("grounded", 2, f"the column '{head[:40]}' is a value, not a header"),
                        Signal("well_formed", 2, "a table value is asked as if it were a column name")]
    return []


_LIST_NUMBER_RE = re.compile(r"^\s*\d{1,3}[.)]?\s+[A-Z가-힣]")
"""A running number before a name ('1 Maxi-Cosi', '3. Cybex'); a time or quantity ('60 ms') is no list number."""


@rule("critic.table.numbered_label", "critic", "the table row the question names",
      "the row label is asked with its list number ('for 1 Maxi-Cosi Pebble 360')", "well_formed")
def numbered_label(ctx: PairContext) -> list[Signal]:
    """A row label that keeps the running number of its list."""
    question = unicodedata.normalize("NFKC", ctx.question)
    for table in markdown_tables(ctx.chunk_markdown, min_rows=2):
        for row in table[1:]:
            label = unicodedata.normalize("NFKC", row[0]).strip() if row else ""
            if len(label) > 4 and _LIST_NUMBER_RE.match(label) and label in question:
                return [Signal("well_formed", 2, f"the row label keeps its list number ('{label[:40]}')")]
    return []


# --- the question's own numbers --------------------------------------------------------------------------


_CODE_RE = re.compile(r"\b\w*[A-Za-z가-힣]\w*(?:[-/]\w+)+\b")
"""An identifier with letters and digits ('FO-2024-017', 'R-129'): a handle, often from the document's header."""


_DATE_RE = re.compile(r"\d{1,4}\s*(?:년|월|일)|\b(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\.?\s+\d{1,2}\b"
                      r"|\b\d{1,2}\s+(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\b", re.IGNORECASE)
"""A date: a meeting's or report's handle, taken from the document's header rather than the chunk."""


def _numbers(text: str) -> set[str]:
    text = _DATE_RE.sub(" ", _CODE_RE.sub(" ", unicodedata.normalize("NFKC", text)))
    return {n.replace(",", "") for n in _NUMBER_RE.findall(text)}


@rule("critic.question.foreign_number", "critic", "the numbers of the question (its quoted names aside)",
      "a number of the question is nowhere in the chunk (nor in its title or the file name)", "grounded")
def foreign_number(ctx: PairContext) -> list[Signal]:
    """The question names a number the chunk does not have: it asks about something the chunk does not say."""
    asked = _numbers(_QUOTED_RE.sub(" ", ctx.question))
    known = _numbers(ctx.chunk_markdown) | _numbers(ctx.chunk_title) | _numbers(ctx.file_name)
    missing = sorted(n for n in asked - known if not (len(n) == 4 and n.startswith(("19", "20"))))
    return [Signal("grounded", 2, f"the question's number {missing[0]} is not in the chunk")] if missing else []


# --- grammar that holds for any frame ----------------------------------------------------------------------

_DANGLING_END_RE = re.compile(r"(?:\s[-–—:/,]|\b(?:of|for|to|in|on|with|by|and|or|the|a|an))\s*\?\s*$", re.IGNORECASE)
_PHRASAL_END_RE = re.compile(r"\b(?:stand|stands|used|responsible|known|made|composed|consist|consists|account|accounts|look|ask|"
                             r"apply|applies|refer|refers|belong|belongs|compared|equal|subject|based|depend|depends|rely|"
                             r"relies|designed|intended|required|suitable|eligible|aimed|looking|waiting|paid|called)\s+"
                             r"(?:for|of|to|on|in|with|by)\s*\?\s*$", re.IGNORECASE)
"""A verb or adjective with its preposition ('What does IHEP stand for?'): a complete question."""
_CAPITAL_ARTICLE_RE = re.compile(r"\b(?:is|are|was|were|of|for|in)\s+(?:The|A|An)\s+[a-z]")


@rule("critic.grammar.dangling_subject", "critic", "an English question",
      "its subject ends in a list separator, a preposition or an article, or a capitalised article stands "
      "inside the sentence ('what is partner -?', 'what is The ...'): a label that lost its subject", "well_formed")
def dangling_subject(ctx: PairContext) -> list[Signal]:
    """A label pasted into a frame with its separator or without its head."""
    if ctx.language != "en":
        return []
    found = (None if _PHRASAL_END_RE.search(ctx.question) else _DANGLING_END_RE.search(ctx.question)) \
        or _CAPITAL_ARTICLE_RE.search(ctx.question)
    return [Signal("well_formed", 2, f"the subject is cut or pasted with its separator ('{found.group(0).strip()}')")] \
        if found else []


# --- a value asked twice -----------------------------------------------------------------------------------

_EXTREME_RE = re.compile(r"\b(?:highest|lowest|largest|smallest|greatest|maximum|minimum|most|least)\b|가장|최대|최소",
                         re.IGNORECASE)


@rule("critic.table.value_twin", "critic", "the question and the other questions of its chunk",
      "another question asks which row is highest/lowest and its answer is the row this question asks the value of "
      "(the pair and its twin count once); not an answer of two values (a comparison)", "useful")
def value_twin(ctx: PairContext) -> list[Signal]:
    """'what is the mass for Thorax' beside 'which part has the highest mass? Thorax'."""
    if _EXTREME_RE.search(_QUOTED_RE.sub(" ", ctx.question)):  # a quoted chart title may say 'Highest'
        return []
    if len(re.findall(r"\d+(?:[.,]\d+)?", ctx.answer)) >= 2:  # '제1기 28명, 제2기 7명': two values compared, not a twin
        return []
    q = _norm(ctx.question)
    for question, answer in ctx.siblings:
        row = _norm(answer)
        if (_EXTREME_RE.search(_QUOTED_RE.sub(" ", question)) and len(row) >= 2 and _contains(q, row)
                and not _contains(row, _norm(ctx.answer))):
            return [Signal("useful", 2, f"the value twin of '{question[:60]}'")]
    return []


@rule("critic.table.constant_column", "critic", "a question naming one row and one column of a table of the chunk",
      "the column holds the same value in every one of its (three or more) rows: a constant, not a fact of the row", "useful")
def constant_column(ctx: PairContext) -> list[Signal]:
    """'the frequency for procedure 2' when every procedure runs at 0.5 Hz."""
    for table in markdown_tables(ctx.chunk_markdown, min_rows=2):
        named = _named_cell(ctx.question, table)
        if named is None:
            continue
        j = [_norm(h) for h in table[0]].index(_norm(named[1]))
        values = {_norm(r[j]) for r in table[1:] if j < len(r) and _norm(r[j])}
        if len(table) >= 4 and len(values) == 1:
            return [Signal("useful", 2, f"'{named[1][:30]}' is the same in every row: a constant")]
    return []


# --- handle validity -----------------------------------------------------------------------------------------

_TRUNCATED_RE = re.compile(r"(?:\.\.\.|…)\s*[\"”'’」]")
_STANDARD_NUMBER_RE = re.compile(r"(?:\bNo\.\s*|§\s*\d{3}\.)(\d{2,4})\b|\bR(\d{2,3})\b")
_PARAGRAPH_RE = re.compile(r"\bparagraph\s+\d", re.IGNORECASE)
_ANNEX_RE = re.compile(r"^\s*(?:#+\s*)?(?:annex|appendix|attachment|부속서|별표|별지)\b", re.IGNORECASE)


@rule("critic.handle.truncated", "critic", "the quoted names of the question",
      "a quoted document or section name ends in '...' (a heading cut short)", "well_formed")
def truncated_handle(ctx: PairContext) -> list[Signal]:
    """A handle quoted with an ellipsis: the name was cut."""
    found = _TRUNCATED_RE.search(ctx.question)
    return [Signal("well_formed", 2, "a quoted name is cut short with '...'")] if found else []


_NAMED_HANDLE_RE = re.compile(r"[\"“]([^\"”]{2,120})[\"”]\s+(?:section|document|slide|chapter)\b")
_FRAGMENT_START_RE = re.compile(r"^[a-z]{1,3}\s")
"""A heading cut inside a phrase: it opens with a short lower-case word ('for EUROSID 1', 'of the dummy ...')."""
_CAPTION_RE = re.compile(r"^(?:Figure|Fig\.|Picture|Photo|Chart|Graph)\s*\d", re.IGNORECASE)
"""A figure's caption, not a heading ('Figure 3 MGA Roof Crush Test System')."""


@rule("critic.handle.fragment", "critic", "the quoted section or document names of the question",
      "a quoted section or document name is a fragment of a heading (it opens with a short lower-case word: 'for "
      "EUROSID 1') or a figure caption ('Figure 3 MGA Roof Crush Test System'): no "
      "reader can find the section by it", "well_formed")
def fragment_handle(ctx: PairContext) -> list[Signal]:
    """'According to the "for EUROSID 1" section of UN Regulation No. 95, ...'."""
    for name in _NAMED_HANDLE_RE.findall(ctx.question):
        if _FRAGMENT_START_RE.match(name):
            return [Signal("well_formed", 2, f"the quoted name '{name[:40]}' is a fragment of a heading")]
        if _CAPTION_RE.match(name):
            return [Signal("well_formed", 2, f"the quoted name '{name[:40]}' is a figure caption, not a section")]
    return []


@rule("critic.handle.conflicting_standard", "critic", "the standard numbers the question names",
      "two different numbers ('§ 571.216 ... of FMVSS No. 214'): the fact of one standard asked under another", "grounded")
def conflicting_standard(ctx: PairContext) -> list[Signal]:
    """The question's section belongs to one standard and its document handle names another."""
    numbers = {a or b for a, b in _STANDARD_NUMBER_RE.findall(ctx.question)}
    if len(numbers) >= 2:
        return [Signal("grounded", 2, f"the question names standards {', '.join(sorted(numbers))}: which one holds the fact?")]
    return []


@rule("critic.handle.annex_paragraph", "critic", "the paragraph the question cites and the chunk's title",
      "the chunk is an annex or appendix but the question cites 'paragraph N' of the document without naming it: the "
      "document's own paragraph N is another one", "grounded")
def annex_paragraph(ctx: PairContext) -> list[Signal]:
    """'paragraph 3.3 of UN Regulation No. 16' for paragraph 3.3 of its Annex 6."""
    if _PARAGRAPH_RE.search(ctx.question) and _ANNEX_RE.match(ctx.chunk_title or "") and not re.search(
            r"\b(?:annex|appendix|attachment)\b|부속서|별표", ctx.question, re.IGNORECASE):
        return [Signal("grounded", 2, f"a paragraph of '{ctx.chunk_title[:40]}' cited as the document's own")]
    return []


# --- the answer's value against the question's quantity ---------------------------------------------------------

_KIND_UNITS = {
    "angle": r"°|º|deg(?:ree)?s?", "distance": r"mm|cm|m|km|in(?:ch(?:es)?)?|ft", "height": r"mm|cm|m|in(?:ch(?:es)?)?",
    "width": r"mm|cm|m|in(?:ch(?:es)?)?", "radius": r"mm|cm|m",
    "diameter": r"mm|cm|m|in(?:ch(?:es)?)?", "mass": r"kg|g|t|lb|pounds?", "weight": r"kg|g|t|lb|pounds?|N|kN|daN",
    "speed": r"km/h|kph|mph|m/s", "velocity": r"km/h|kph|mph|m/s", "time": r"ms|s|sec(?:onds?)?|min(?:utes?)?|h|hours?|days?",
    "duration": r"ms|s|sec(?:onds?)?|min(?:utes?)?|h|hours?", "pressure": r"k?Pa|MPa|bar|psi",
    "force": r"N|kN|daN|lbf|lb", "load": r"N|kN|daN|lbf|lb|kg", "temperature": r"°\s?C|ºC|°\s?F|K|degrees?\s?[CF]",
    "percentage": r"%|per\s?cent|percent",
}
_ANY_UNIT_RE = re.compile(r"\d\s*(%|per\s?cent|percent|°\s?C|ºC|degrees?\s?[CF]\b|°|º|degrees?|mm|cm|km/h|kph|mph|m/s|km|m|"
                          r"kg|lb|g|ms|s|seconds?|minutes?|hours?|kPa|MPa|Pa|bar|psi|kN|daN|N)(?![\w/])", re.IGNORECASE)
_KINDS = "|".join(_KIND_UNITS)
_ASKED_KIND_RE = re.compile(r"^\s*what\s+(?:is\s+the\s+|was\s+the\s+)?(?:\w+\s+)?(" + _KINDS + r")\b", re.IGNORECASE)


@rule("critic.answer.unit_kind", "critic", "the quantity a 'what <angle/distance/mass/...>' question asks and the answer's unit",
      "the answer's value carries a unit of another kind ('what distance' answered '20 percent')", "grounded")
def unit_kind(ctx: PairContext) -> list[Signal]:
    """The answer is not a value of the quantity asked."""
    asked = _ASKED_KIND_RE.match(ctx.question)
    units = [u for u in _ANY_UNIT_RE.findall(ctx.answer)]
    if not asked or not units:
        return []
    kind = asked.group(1).casefold()
    if any(re.fullmatch(_KIND_UNITS[kind], u.strip(), re.IGNORECASE) for u in units):
        return []
    return [Signal("grounded", 2, f"asks a {kind} but the answer is in '{units[0]}'")]


def _block_of(markdown: str, at: int) -> str:
    """The paragraph (text between blank lines) of the chunk around position ``at``."""
    start = markdown.rfind("\n\n", 0, at)
    end = markdown.find("\n\n", at)
    return markdown[start + 1 if start >= 0 else 0:end if end >= 0 else len(markdown)]


def _values_around(markdown: str, at: int, unit: str, own: set[str]) -> set[str] | None:
    """The distinct values in ``unit`` of the prose paragraph around ``at`` besides the answer's own numbers (``own``);
    None for a table or a bullet list, whose rows name their values."""
    block = _block_of(markdown, at)
    if re.search(r"(?m)^\s*(?:\||[-*•]\s)", block):
        return None
    block = re.sub(r"(?:±|\+/-|\+)\s*\d+(?:[.,]\d+)?", " ", block)  # a tolerance ('±' read as '+' too) is no other value
    block = re.sub(r"(\d+(?:[.,]\d+)?)\s*\S{0,8}\s*(?:to|and|-|–)\s*\d+(?:[.,]\d+)?", r"\1", block)  # nor a range's end
    with_unit = r"\d+(?:[.,]\d+)?(?=\s*" + re.escape(unit) + r"(?![\w/]))"
    return {m.group(0) for m in re.finditer(with_unit, block, re.IGNORECASE)} - own


@rule("critic.answer.several_values", "critic", "the value answered from a prose paragraph (no table or list)",
      "wherever the chunk gives the value, its paragraph gives another value in the answer's unit (tolerances and the "
      "answer's own range ends aside) and the question shares no word with the four words before the value: which value "
      "is meant is not said", "grounded")
def several_values(ctx: PairContext) -> list[Signal]:
    """'What angle does section 3.5 specify?' where the section gives a roll and a pitch angle."""
    found = _ANY_UNIT_RE.search(ctx.answer)
    if not found or len(ctx.answer.split()) > 6 or ctx.target_modality != "text":
        return []
    value = re.search(r"\d+(?:[.,]\d+)?", ctx.answer).group(0)
    unit, own = found.group(1).casefold(), set(re.findall(r"\d+(?:[.,]\d+)?", ctx.answer))
    asked = set(_norm(_QUOTED_RE.sub(" ", ctx.question)).split()) - _STOP
    most = 0
    for located in re.finditer(r"(?<![\d.,])" + re.escape(value) + r"(?![\d])", ctx.chunk_markdown):  # not the '10' of '100'
        at = located.start()
        others = _values_around(ctx.chunk_markdown, at, unit, own)
        if not others or set(_norm(ctx.chunk_markdown[max(0, at - 60):at]).split()[-4:]) & asked:
            return []
        most = max(most, len(others) + 1)
    if most >= 2:
        return [Signal("grounded", 2, f"the passage gives {most} values in {unit}: which one is asked is not said")]
    return []


_STOP = frozenset("the a an of to in on at by for with and or is are was were what which does do did specify specifies "
                  "according paragraph section document".split())
_LEAD_IN_RE = re.compile(r"(?:the\s+following(?!\s+(?:year|month|week|day|quarter|period|morning)s?\b)(?:\s+[\w-]+){0,5}"
                         r"|as\s+follows)\s*[.:;]?\s*$", re.IGNORECASE)
"""'the following year' is a time, not a lead-in (Euro NCAP star rating 1.3, labelled usable). Not a bare '... below.':
'shall make one dynamic test ... according to the method described below.' states its
requirement before pointing on (a labelled usable UN R95 pair), and a pointer to a paragraph below is pointer_only's."""
_BELOW_OBJECT_RE = re.compile(r"\b(?:at|in|to|fulfil|fulfill|meet|satisfy|with)\s+the\s+(?:\w+\s+){0,2}(?:requirements?|location|"
                              r"positions?|conditions?|values?|points?|dimensions?)\s+(?:described|specified|defined|given|shown|"
                              r"set\s+out|listed)\s+below\b", re.IGNORECASE)
"""The answer's object is only 'the requirements specified below' or 'the location described below' (UN R16 6.2.5,
FMVSS 214 S8.11): what it points at is not in it."""


@rule("critic.answer.lead_in", "critic", "the answer",
      "the answer ends by announcing what follows ('... under the following conditions.', 'as follows:'), or its object "
      "is only 'the location described below': the content is not in it", "useful")
def lead_in(ctx: PairContext) -> list[Signal]:
    """An answer that is only the lead-in of a list or of sub-paragraphs."""
    return [Signal("useful", 2, "the answer is a lead-in: what it announces is not in it")] \
        if _LEAD_IN_RE.search(ctx.answer.strip()) or _BELOW_OBJECT_RE.search(ctx.answer) else []


_ADMINISTRATIVE_RE = re.compile(
    r"\b(?:application for (?:type )?approval|approval numbers?|an approval mark|approval (?:shall|may) be (?:granted|refused|"
    r"extended|withdrawn)|entry into force|series of amendments|Contracting Part(?:y|ies)|type approval authority|"
    r"phase-in|average annual production|express written contract)\b", re.IGNORECASE)


@rule("critic.answer.administrative", "critic", "the answer",
      "it is administrative text of a regulation (approval applications and numbers, entry into force, series of amendments, "
      "phase-in production shares): no technical fact", "useful")
def administrative(ctx: PairContext) -> list[Signal]:
    """'The application for approval ... shall be submitted by ...' asked as what a paragraph requires."""
    found = _ADMINISTRATIVE_RE.search(ctx.answer)
    return [Signal("useful", 2, f"administrative text ('{found.group(0)}')")] if found else []


_CROSS_REF_RE = re.compile(
    r"\b(?:as prescribed in|in accordance with|specified in|set out in|the requirements (?:of|in|specified in))"
    r"\s+(?:paragraphs?|sections?|S\d|annex|appendix|§)", re.IGNORECASE)


@rule("critic.answer.only_reference", "critic", "a requirement answer",
      "the answer's content is a cross-reference ('shall be tested as prescribed in paragraphs 7.5.1.') with no value or "
      "condition of its own", "useful")
def only_reference(ctx: PairContext) -> list[Signal]:
    """The requirement itself is elsewhere: the answer only points to it."""
    answer = ctx.answer
    if not _CROSS_REF_RE.search(answer) or _ANY_UNIT_RE.search(answer) or len(answer.split()) > 30:
        return []
    return [Signal("useful", 2, "the answer only refers to another paragraph")]


_REF = r"(?:paragraphs?\s+\d|annex(?:es)?\s+\d|figures?\s+\d|appendix\s+\d|S\d|§)"
_POINTER_RE = re.compile(
    r"\b(?:shall|must)\s+(?:be\s+able\s+to\s+)?(?:meet|compl(?:y|ies)\s+with|satisfy|fulfil+)\s+(?:all\s+)?(?:the|these|"
    r"those)\s+(?:[\w-]+\s+){0,3}(?:requirements?|specifications?|conditions?)\b"
    r"|\b(?:as\s+shown\s+in|between\s+corridors\s+of|test\s+procedure\s+defined\s+in)\s+" + _REF +
    r"|\bconsidered\s+satisfactory\s+if\b[^.]*\b(?:set\s+out|specified|laid\s+down)\s+in\s+" + _REF +
    r"|\b(?:shall|must)\s+be\s+(?:tested|assessed)\s+(?:for\s+\w+\s+)?(?:as\s+prescribed\s+in|according\s+to|in\s+"
    r"accordance\s+with)\s+" + _REF +
    r"|\b(?:shall|must)\s+(?:be\s+)?(?:(?:tested|calibrated|carried\s+out|performed|conducted)\s+)?in\s+(?:accordance|compliance)"
    r"\s+with\s+the\s+(?:specifications?\s+and\s+)?requirements\s+of\b"
    r"|\b(?:shall|must)\s+compl(?:y|ies)\s+with\s+" + _REF, re.IGNORECASE)
POINTER_MAX_WORDS = 40


@rule("critic.answer.pointer_only", "critic", "an answer that states a requirement",
      "its only predicate points elsewhere: 'shall meet the requirements of S5 and S6', 'positioned as shown in Figure 1', "
      "'tested according to the test procedure defined in Annex 18', 'satisfactory if the conditions set out in "
      "paragraphs 5.2 and 5.3 are satisfied', 'calibrated in compliance with the requirements of the documentation', "
      "'shall comply with paragraph 1.', with no value of its own (written in round 5 from labelled UN R16, UN R95, "
      "FMVSS 201/214 and IBM redbook pairs, then widened after a second batch of UN R16/R95 labels)", "useful")
def pointer_only(ctx: PairContext) -> list[Signal]:
    """The requirement the answer should state is in the paragraph, figure or annex it points to."""
    answer = ctx.answer
    if len(answer.split()) > POINTER_MAX_WORDS or _ANY_UNIT_RE.search(answer):
        return []
    found = _POINTER_RE.search(answer)
    return [Signal("useful", 2, f"the answer only points elsewhere ('{found.group(0)}')")] if found else []


_NEGATED_RE = re.compile(r"\b(?:not|no|never)\s+(?:\w+\s+){0,3}$", re.IGNORECASE)
_BOUND_START_RE = re.compile(r"^\s*(?:more|less|greater|fewer|higher|lower)\s+than\b|^\s*exceed", re.IGNORECASE)


@rule("critic.answer.negation_lost", "critic", "a bound answered alone ('more than 0.2 mm')",
      "the chunk negates it just before ('must not be displaced by more than 0.2 mm'): the answer says the opposite",
      "grounded")
def negation_lost(ctx: PairContext) -> list[Signal]:
    """'more than 0.2 mm' cut out of 'not ... more than 0.2 mm'."""
    if not _BOUND_START_RE.match(ctx.answer):
        return []
    at = ctx.chunk_markdown.find(ctx.answer.strip().rstrip("."))
    if at > 0 and _NEGATED_RE.search(ctx.chunk_markdown[max(0, at - 40):at]):
        return [Signal("grounded", 2, "the chunk's 'not' before the bound is lost")]
    return []


_FOOTNOTE_VALUE_RE = re.compile(r"\d\s?(?:g|kg|kN|daN|N|ms|km/h)[1-9]\b|[a-z]P\d+P\b")


@rule("critic.answer.glued_mark", "critic", "the answer",
      "a footnote mark glued to a unit ('0.45 g6') or a superscript decoded as letters ('kN/mP2P')", "grounded")
def glued_mark(ctx: PairContext) -> list[Signal]:
    """A value carrying a footnote number or a mis-decoded superscript."""
    found = _FOOTNOTE_VALUE_RE.search(ctx.answer)
    return [Signal("grounded", 2, f"a footnote mark or superscript glued to a value ('{found.group(0)}')")] if found else []


SPAN_RULES = (cell_mismatch, value_header, numbered_label, foreign_number, dangling_subject, value_twin, constant_column,
              truncated_handle, fragment_handle, conflicting_standard, annex_paragraph, unit_kind, several_values, lead_in,
              administrative, only_reference, pointer_only, negation_lost, glued_mark)
"""The rules of this module, in the order their reasons are listed."""
