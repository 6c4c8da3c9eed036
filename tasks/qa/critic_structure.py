"""Critic rules that read structure, not templates: the handle a question names, the section and table cell its
answer stands in, the answer span's shape, grammar that holds for any question frame, and round-trip retrieval.

Each rule is registered by name in ``tasks.qa.registry`` and returns ``Signal`` objects like the rules of
``tasks.qa.critic_rules``. They were written from the failure classes of the QA rubric and of the issue's audit
(running heads and placeholders as titles, a fact asked under the wrong heading, merged-cell sub-rows, '±' read
as '+', agreement errors) and are judged only by document-grouped cross-validation (``tasks.qa.calibrate``).
"""

from __future__ import annotations

import re
import unicodedata
from typing import TYPE_CHECKING

from ragprep.markdown import markdown_tables
from tasks.qa.critic_rules import Signal, locate
from tasks.qa.critic_rules.ambiguity import AMBIGUITY_RULES
from tasks.qa.critic_rules.conditions import CONDITION_RULES
from tasks.qa.critic_rules.provisions import PROVISION_RULES
from tasks.qa.critic_rules.spans import SPAN_RULES
from tasks.qa.critic_rules.statements import STATEMENT_RULES
from tasks.qa.registry import RULES, rule

if TYPE_CHECKING:
    from tasks.qa.pair_context import PairContext

_QUOTE = r"(?:\"([^\"]{2,200})\"|“([^”]{2,200})”|'([^']{2,200})'|‘([^’]{2,200})’|「([^」]{2,200})」)"
_DOC_HANDLE_RE = re.compile(_QUOTE + r"\s*(?:document|presentation|report|deck|book|paper|protocol|regulation|standard"
                            r"|문서|보고서|자료|발표)", re.IGNORECASE)
_SECTION_HANDLE_RE = re.compile(_QUOTE + r"\s*(?:section|slide|chapter|annex|part|clause|절|장|항|슬라이드)", re.IGNORECASE)
_HEADING_RE = re.compile(r"(?m)^(#{1,6})\s+(.+?)\s*$")
_NUMBERING_RE = re.compile(r"^\s*(?:(?:chapter|section|annex)\s+)?[\dA-Z]{0,3}(?:\.\d+)*\.?\s+", re.IGNORECASE)


def document_handles(question: str) -> list[str]:
    """The quoted names the question gives a document ('... the "X" document', "'X' 문서")."""
    return [next(g for g in m.groups() if g) for m in _DOC_HANDLE_RE.finditer(question)]


def section_handles(question: str) -> list[str]:
    """The quoted names the question gives a section or slide ('the "X" section')."""
    return [next(g for g in m.groups() if g) for m in _SECTION_HANDLE_RE.finditer(question)]


def _norm(text: str) -> str:
    text = unicodedata.normalize("NFKC", text).casefold()
    return " ".join(re.findall(r"[^\W_]+", _NUMBERING_RE.sub("", text)))


# --- the document handle ------------------------------------------------------------------------------

_BROKEN_GLYPH_RE = re.compile(r"[\ufb00-\ufb06\u1100-\u11ff\ue000-\uf8ff\ufffd•▪●◦‣➢➤►▸■□]")
"""Ligatures (ﬁ ﬂ ﬀ ﬃ), stray Hangul jamo (a mis-decoded middle dot 'ᆞ'), private-use and bullet glyphs."""
_PLACEHOLDERS = frozenset(
    "agreement document presentation untitled title slide contents introduction overview draft template chapter "
    "section report annex appendix 책갈피 제목 목차 문서 슬라이드".split()
)


def _doubled(name: str) -> bool:
    words = name.split()
    half = len(words) // 2
    return len(words) >= 2 and len(words) % 2 == 0 and _norm(" ".join(words[:half])) == _norm(" ".join(words[half:]))


@rule("critic.handle.doubled", "critic", "the quoted document name", "its words repeat twice in a row ('X X')", "well_formed")
def doubled_handle(ctx: PairContext) -> list[Signal]:
    """A document name that is its own words twice (a cover heading the PDF repeats)."""
    return [Signal("well_formed", 1, f"the document name repeats itself ('{n[:60]}')") for n in document_handles(ctx.question)
            if _doubled(n)]


@rule("critic.handle.placeholder", "critic", "the quoted document name",
      "one word with no digits or a known placeholder (Agreement, 책갈피, Untitled): no document is named", "standalone")
def placeholder_handle(ctx: PairContext) -> list[Signal]:
    """A document named by a placeholder or one generic word."""
    out = []
    for name in document_handles(ctx.question):
        words = re.findall(r"[^\W_]+", name)
        if _norm(name) in _PLACEHOLDERS or (len(words) == 1 and not re.search(r"\d", name) and not name.isupper()):
            out += [Signal("standalone", 2, f"the document is named by a placeholder ('{name}')"),
                    Signal("well_formed", 2, f"'{name}' is not a document title")]
    return out


@rule("critic.handle.running_head", "critic", "the quoted document or section name and the document's chunk titles",
      "the name (digits aside) is the title of several chunks of the document (a page running head), or ends in a page number",
      "well_formed")
def running_head_handle(ctx: PairContext) -> list[Signal]:
    """A page running head used as the document's title."""
    repeats = {re.sub(r"\d+", "#", t): n for t, n in ctx.title_repeats.items()}
    for name in document_handles(ctx.question) + section_handles(ctx.question):
        family = re.sub(r"\d+", "#", _norm(name))
        if repeats.get(family, 0) >= 2 or re.search(r"\s(?:—|-|–)\s*\d{1,3}\s*$", name):
            return [Signal("well_formed", 2, f"a page running head is used as a title ('{name[:60]}')")]
    return []


@rule("critic.text.broken_glyphs", "critic", "the question and the answer",
      "ligature, stray jamo, private-use or bullet glyphs (text mis-decoded from the PDF)", "well_formed")
def broken_glyphs(ctx: PairContext) -> list[Signal]:
    """Glyphs a PDF decoder left in: the question or answer is not clean text."""
    for part, text in (("question", ctx.question), ("answer", ctx.answer)):
        found = _BROKEN_GLYPH_RE.search(text) or (re.match(r"^\s*[·ㆍ]\s", text) if part == "answer" else None)
        if found:
            return [Signal("well_formed", 2, f"mis-decoded glyph {found.group(0).strip()!r} in the {part}")]
    return []


# --- the section the answer stands in --------------------------------------------------------------------


def _headings(markdown: str) -> list[tuple[int, int, str]]:
    """(position, level, text) of every Markdown heading, the chunk's own title line (the first) included."""
    return [(m.start(), len(m.group(1)), m.group(2)) for m in _HEADING_RE.finditer(markdown)]


def _same_heading(named: str, heading: str) -> bool:
    """The named section is this heading: the same words, the heading's last part, or the heading named after its
    all-capitals parent ('TEST CONDITIONS Impact speed and overlap' for the heading 'Impact speed and overlap')."""
    a, b = _norm(named), _norm(heading)
    parent = named[: len(named) - len(heading)].strip() if named.endswith(heading.strip()) else ""
    return bool(a) and (a == b or b.endswith(a) or a in {_norm(p) for p in heading.split(" / ")}
                        or (len(b.split()) >= 2 and _major(parent)))


_NUMBER_RE = re.compile(r"^\s*(?:(?:chapter|section|annex)\s+)?(\d+(?:\.\d+)*)\.?\s")


def _major(heading: str) -> bool:
    """An all-capitals heading of two or more words: a top-level heading in most layouts."""
    letters = [c for c in heading if c.isalpha()]
    return len(heading.split()) >= 2 and len(letters) >= 6 and all(c.isupper() for c in letters if c.isascii())


def _leaves(named_at: tuple[int, int, str] | None, named: str, between: tuple[int, int, str]) -> bool:
    """True when the heading ``between`` closes the named section (a sibling or a higher heading), not a child."""
    _, level, text = between
    if named_at is not None and named_at[0] > 0 and level <= named_at[1]:
        return True
    number, own = _NUMBER_RE.match(text), _NUMBER_RE.match(named_at[2] if named_at else named)
    if number and own:
        return not number.group(1).startswith(own.group(1) + ".")
    return _major(text) and not _major(named)


@rule("critic.section.wrong_heading", "critic", "the section the question names and the headings of the chunk",
      "a heading that closes the named section (same or higher level, a sibling number, an all-capitals heading) "
      "stands between it and the answer: the fact belongs to another section", "grounded")
def wrong_heading(ctx: PairContext) -> list[Signal]:
    """The answer stands under a different heading than the section the question names."""
    named = section_handles(ctx.question)
    located = locate(ctx.answer, ctx.chunk_markdown)
    if not named or located is None:
        return []
    text, start, _ = located
    heads = [h for h in _headings(text) if h[0] < start]
    for name in named:
        at = next((h for h in reversed(heads) if _same_heading(name, h[2])), None)
        after = [h for h in heads if at is None or h[0] > at[0]] if at is not None else []
        closing = next((h for h in after if _leaves(at, name, h)), None)
        if closing is not None:
            return [Signal("grounded", 2, f"the answer stands under '{closing[2][:50]}', not in the section '{name[:40]}'")]
    return []


# --- table structure -------------------------------------------------------------------------------


def _group_rows(table: list[list[str]], label: str) -> list[list[str]] | None:
    """The rows of the group a row label heads: the row and the continuation rows under it (first cell empty)."""
    for i, row in enumerate(table):
        if row and _norm(row[0]) == label:
            group = [row]
            for nxt in table[i + 1:]:
                if nxt and not nxt[0].strip() and any(c.strip() for c in nxt[1:]):
                    group.append(nxt)
                else:
                    break
            return group
    return None


def _labels_in(question: str, table: list[list[str]]) -> list[str]:
    q = _norm(question)
    return [_norm(r[0]) for r in table if r and len(_norm(r[0])) >= 2 and f" {_norm(r[0])} " in f" {q} "]


@rule("critic.table.merged_group", "critic", "the table row the question names",
      "the row heads a merged group (continuation rows with an empty first cell): the answer is one sub-row of it",
      "grounded")
def merged_group(ctx: PairContext) -> list[Signal]:
    """A row label that spans several rows: asking 'the X for <label>' has several answers."""
    answer = _norm(ctx.answer)
    for table in markdown_tables(ctx.chunk_markdown, min_rows=2):
        for label in _labels_in(ctx.question, table):
            group = _group_rows(table, label)
            if group and len(group) > 1 and any(answer == _norm(c) for row in group for c in row[1:]):
                return [Signal("grounded", 2, f"'{label}' spans {len(group)} rows of a merged table: the answer is one of them")]
    return []


_TOTAL_RE = re.compile(r"^(?:total|sum|overall|grand total|합계|총계|소계|계|전체)\b", re.IGNORECASE)


@rule("critic.table.total_as_item", "critic", "a 'which ... highest/lowest' answer",
      "the answer is the table's total row, not one of its items", "useful")
def total_as_item(ctx: PairContext) -> list[Signal]:
    """The 'highest' item is the total row."""
    if (
        re.search(r"\b(?:highest|lowest|largest|smallest|most|least)\b|가장", ctx.question)
        and _TOTAL_RE.match(ctx.answer.strip())
    ):
        return [Signal("useful", 1, "the 'highest' row is the table's total, not an item"),
                Signal("grounded", 2, "a total is not one of the compared items")]
    return []


# --- the answer span ------------------------------------------------------------------------------------

_TOLERANCE_RE = re.compile(r"^\s*\d+(?:[.,]\d+)?\s*\+\s*\d+(?:[.,]\d+)?\s*(?:[a-zA-Z%°]{1,4})?\s*$")
_TOLERANCE_IN_RE = re.compile(r"\d(?:[.,]\d+)?\s?°?\s\+\s\d+(?:[.,]\d+)?\s*(?:°\s?C|%|per\s?cent|mm|kg|daN|ms|km/h)(?!\w)")
"""'20 + 5 °C' inside a sentence: a tolerance whose '±' was decoded as '+'."""
_FOOTNOTE_SPLICE_RE = re.compile(r"[a-z%)\]]\.\d{1,2}\s+[A-Z]")


@rule("critic.answer.tolerance_misread", "critic", "the answer",
      "a value 'X + Y' (alone, or with its unit inside a sentence) where the document means X ± Y", "grounded")
def tolerance_misread(ctx: PairContext) -> list[Signal]:
    """'40.3 + 1.0': a tolerance whose '±' the PDF decoded as '+'."""
    found = _TOLERANCE_RE.match(ctx.answer) or _TOLERANCE_IN_RE.search(ctx.answer)
    return [Signal("grounded", 2, "'X + Y' is a tolerance read without its '±'")] if found else []


@rule("critic.answer.footnote_splice", "critic", "the answer",
      "a footnote number glued to a sentence end ('12.7 mm.7 The ...'): text spliced across a footnote", "grounded")
def footnote_splice(ctx: PairContext) -> list[Signal]:
    """An answer that runs over a footnote marker."""
    found = _FOOTNOTE_SPLICE_RE.search(ctx.answer)
    return [Signal("grounded", 2, f"spliced across a footnote marker ('{found.group(0)}')")] if found else []


# --- grammar that holds for any question frame -------------------------------------------------------

_SINGULAR_AUX = r"(?:is|was|has|does)"
_PLURAL_AUX = r"(?:are|were|have|do)"
_DET = r"(?:the\s+|these\s+|those\s+|many\s+|some\s+|most\s+)?"
_NOT_PLURAL = frozenset("series species news means lens chassis analysis basis status corpus thesis bus gas process "
                        "class glass mass pass bias atlas canvas physics mathematics economics ethics this its".split())


def _plural_noun(word: str) -> bool:
    w = word.casefold()
    return (len(w) > 3 and w.endswith("s") and not w.endswith(("ss", "us", "is", "'s", "’s")) and w not in _NOT_PLURAL
            and word[:1].islower())


@rule("critic.grammar.agreement", "critic", "an English question",
      "a singular auxiliary before a bare plural subject ('Why has scientists believe', 'what is the details')",
      "well_formed")
def agreement(ctx: PairContext) -> list[Signal]:
    """Subject-verb agreement between the question's auxiliary and the head of its subject."""
    match = re.search(rf"\b{_SINGULAR_AUX}\s+{_DET}([A-Za-z]+)(\s+[a-z]+)?", ctx.question, re.IGNORECASE)
    if match and _plural_noun(match.group(1)) and not (match.group(2) or "").strip() in {"of", "per", "in", "for"}:
        return [Signal("well_formed", 2, f"agreement: '{match.group(0).strip()}'")]
    return []


@rule("critic.grammar.why_copula", "critic", "a 'why' question",
      "'Why is the purpose/definition/scope of ...': a statement turned into a question that asks nothing", "well_formed")
def why_copula(ctx: PairContext) -> list[Signal]:
    """A 'why' question built on a definition sentence ('Why is the purpose of this standard to ...')."""
    if re.match(r"^\s*why\s+(?:is|are)\s+the\s+(?:purpose|scope|aim|objective|definition|meaning|name)\b", ctx.question,
                re.IGNORECASE):
        return [Signal("well_formed", 1, "a definition sentence turned into a 'why' question"),
                Signal("useful", 2, "asks why a purpose is a purpose")]
    return []


@rule("critic.grammar.restated_cause", "critic", "a 'why' question and its answer",
      "the answer adds fewer than 3 words of cause to what the question already says", "useful")
def restated_cause(ctx: PairContext) -> list[Signal]:
    """A 'why' answer that only repeats the question."""
    if not re.match(r"^\s*why\b", ctx.question, re.IGNORECASE):
        return []
    asked = set(re.findall(r"[^\W_]+", ctx.question.casefold()))
    new = [w for w in re.findall(r"[^\W_]+", ctx.answer.casefold()) if w not in asked and len(w) > 2]
    return [Signal("useful", 2, "the answer adds no cause to the question")] if len(new) < 3 else []


@rule("critic.grammar.deictic_document", "critic", "the question",
      "'this standard/regulation/protocol/annex', 'the above ...', 'the figure below' or a bare 'it' as the subject: which one "
      "is not said", "standalone")
def deictic_document(ctx: PairContext) -> list[Signal]:
    """'this standard', 'what is it ...' and kin: a reference only the chunk resolves."""
    found = re.search(r"\b(?:this|that|the present)\s+(?:standard|regulation|protocol|annex|appendix|rule|procedure|directive)\b"
                      r"|\b(?:is|was|does|did|are|were|do)\s+(?:it|they)\b|\bthe\s+above\b|\b(?:figure|table|diagram)\s+(?:below|above)\b"
                      r"|\bthe\s+following\b|\b(?:specified|mentioned|described|defined)\s+above\b",
                      ctx.question, re.IGNORECASE)
    return [Signal("standalone", 2, f"deictic reference ('{found.group(0)}')")] if found else []


@rule("critic.grammar.repeated_frame", "critic", "the question",
      "two 'according to' clauses, or a unit in brackets glued to a Korean particle ('시간 (ms)의'): a frame filled twice",
      "well_formed")
def repeated_frame(ctx: PairContext) -> list[Signal]:
    """A question frame filled twice or around a table label's unit."""
    if len(re.findall(r"\baccording to\b", ctx.question, re.IGNORECASE)) >= 2:
        return [Signal("well_formed", 2, "two 'according to' clauses")]
    found = re.search(r"\([^()]{1,8}\)(?:의|은|는|이|가|을|를)\s", ctx.question)
    return [Signal("well_formed", 2, f"a unit in brackets inside the subject ('{found.group(0).strip()}')")] if found else []


# --- round-trip retrieval -----------------------------------------------------------------------------


@rule("critic.roundtrip.own_chunk", "critic", "the question run through BM25 and the embedder over the whole corpus",
      "its own chunk is not among the top k (qa.roundtrip_k): the question does not pin its chunk down", "standalone")
def roundtrip(ctx: PairContext) -> list[Signal]:
    """The question does not find its own chunk among the corpus' top k."""
    if ctx.roundtrip_rank is None or ctx.roundtrip_k <= 0 or ctx.roundtrip_rank <= ctx.roundtrip_k:
        return []
    rank = "not ranked" if ctx.roundtrip_rank >= 10**6 else f"rank {ctx.roundtrip_rank}"
    return [Signal("standalone", 2, f"round trip: its own chunk is {rank}, not in the top {ctx.roundtrip_k}")]


STRUCTURE_RULES = (
    doubled_handle, placeholder_handle, running_head_handle, broken_glyphs, wrong_heading, merged_group, total_as_item,
    tolerance_misread, footnote_splice, agreement, why_copula, restated_cause, deictic_document, repeated_frame,
    *SPAN_RULES, *PROVISION_RULES, *CONDITION_RULES, *STATEMENT_RULES, *AMBIGUITY_RULES, roundtrip,
)
"""The rules above, in the order their reasons are listed."""

RULE_NAMES = {r.check: r.name for r in RULES.values() if r.check in STRUCTURE_RULES}
"""Each rule function's registered name."""


def structure_signals(ctx: PairContext, enabled: frozenset[str] | None = None) -> list[tuple[str, Signal]]:
    """(rule name, signal) of every structure rule that fires on ``ctx`` (only the ``enabled`` names when given)."""
    out = []
    for func in STRUCTURE_RULES:
        name = RULE_NAMES[func]
        if enabled is None or name in enabled:
            out += [(name, s) for s in func(ctx)]
    return out
