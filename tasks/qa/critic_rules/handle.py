"""The template critic's standalone and useful rules."""


from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING

from ragprep.markdown import markdown_tables, parse_number
from ragprep.text import numbers_in
from tasks.qa.critic_rules.form import (
    _PREPOSITIONS,
    _SENTENCE_STARTS,
    _has_finite_verb,
    _subject_core,
    well_formed_signals,
)
from tasks.qa.critic_rules.grounded import (
    _DANGLING,
    _DOC_NOUN_RE,
    _FILE_RE,
    _QUOTED_RE,
    _WHAT_IS_RE,
    Signal,
    _asked_key,
    _named_block,
    _quoted,
    _without_files,
    _words,
    grounded_signals,
    names_file,
)

if TYPE_CHECKING:
    from tasks.qa.pair_context import PairContext


# --- standalone ----------------------------------------------------------------------------------

_ID_RE = re.compile(r"\b[A-Z][A-Z0-9]{0,7}-\d{2,}(?:-\d+)*\b|\b[A-Z]{2,6}\s?[A-Z]?\d{3,}\b|\b[A-Z]{1,4}\d{3,}[A-Z0-9-]*\b")
_MONTHS = r"(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Sept|Oct|Nov|Dec)[a-z]*\.?"
_DATE_RE = re.compile(
    rf"\b\d{{4}}-\d{{1,2}}-\d{{1,2}}\b|\b\d{{1,2}}\s+{_MONTHS}\s+\d{{4}}\b|\b{_MONTHS}\s+\d{{1,2}},?\s+\d{{4}}\b"
    r"|\d{4}\s*년\s*\d{1,2}\s*월|\b\d{4}[./]\d{1,2}[./]\d{1,2}\b"
)
_YEAR_RE = re.compile(r"\b(?:19|20)\d{2}\b|(?:19|20)\d{2}\s*년")
_CHAPTER_RE = re.compile(
    r"\b(?:chapter|section|part|appendix|annex)\s+[\dIVX]+|§\s*\d|제?\s*\d+\s*(?:장|절|조|편)(?=[\s'’]|$)"
    r"|[\"“'‘「]\s*(?:chapter\s+)?\d+(?:\.\d+)*\.?\s+[^\W\d_]",
    re.IGNORECASE,
)
_NAMED_DOC_RE = re.compile(
    r"[\"“]([^\"”]{3,120})[\"”]\s+(?:document|report|presentation|deck|book|textbook|manual|guide|handbook|standard|"
    r"paper|study|specification|regulation|proposal|redpaper|redbook)\b"
    r"|'([^']{3,120})'\s*(?:보고서|문서|발표\s?자료|자료|교재|매뉴얼|지침|규정|기준)",
    re.IGNORECASE,
)
GENERIC_WORDS = frozenset(
    """setup set-up agenda summary overview introduction intro result results conclusion conclusions background notes note
    appendix contents references notices front matter rating ratings value values data measurement measurements decision
    decisions action actions item items discussion method methods methodology objective objectives purpose scope next step
    steps test tests testing report reports slide slides page pages table tables figure figures chart charts picture pictures
    image images photo section sections chapter document documents details detail information general key findings review
    status update updates plan schedule meeting meetings minutes weekly monthly daily title abstract preface index glossary
    vs versus time outline agenda topics topic other misc miscellaneous part main new old first second final draft
    presentation deck file source sources comments comment remarks remark list lists overview session sessions
    요약 개요 결과 회의 안건 검토 목차 참고 일정 결정 사항 표 그림 자료 현황 비고 """
    """기타 내용 소개 서론 결론 부록 주요 보고 발표""".split()
)
_STOP = frozenset(
    "a an the of in on at to for from by with and or is are was were be what which who how why when where this that these "
    "those its it as than into about according does do did value has have had".split()
)
_DEICTIC_EN_RE = re.compile(
    r"\b(?:this|that|these|those)\s+(?:slide|document|page|table|chart|figure|picture|image|photo|diagram|graph|section|"
    r"presentation|report|deck|test|file|paper|chapter|meeting|study|experiment|system|product|project)s?\b",
    re.IGNORECASE,
)
_VAGUE_EN_RE = re.compile(
    r"\bthe\s+(?:slide|document|page|presentation|deck|file|picture|image|photo|figure|diagram|chart|graph|table)\b"
    r"(?!\s+(?:[\"“']|(?:titled|named|called|showing|about)\b|(?:in|of|on|from)\s+(?:the\s+)?[\"“'])"
    r"|\s+(?:of|in|under)\s+(?:paragraph|section|annex|appendix|clause|item)\s+[\dA-Z])",
    re.IGNORECASE,
)
_DEICTIC_KO_RE = re.compile(
    r"(?:^|\s)(?:(?:이|본|해당)\s?(?:슬라이드|문서|페이지|표|그림|차트|자료|보고서|회의|시험)"
    r"|(?:위|아래|다음)의?\s?(?:슬라이드|페이지|표|그림|차트))"
)
_SLIDE_REF_RE = re.compile(r"\b(?:slide|page|sheet|series)\s*#?\s*\d+\b|(?:슬라이드|페이지|시리즈)\s*\d+", re.IGNORECASE)
_CONCEPT_BLOCKERS_RE = re.compile(
    r"\b(?:value|values|result|results|date|name|number|source|decision|summary|action|status|owner|total|peak|"
    r"maximum|minimum|average|score|rating)\b", re.IGNORECASE,
)
_INSTANCE_FACT_RE = re.compile(
    r"\b(?:value|values|date|when|who|decided|decision|action|owner|deadline|due|peak|highest|lowest|maximum|minimum|"
    r"score|rating|total|how many|how much)\b|값|얼마|언제|누구|몇|결정|최댓값|최솟값",
    re.IGNORECASE,
)


DISTINCTIVE_TITLE_WORDS = 5
"""Specific words from which a slide, table or chart title is distinctive enough to be a handle ("Test Setup" is not)."""
_ENTITY_RE = re.compile(r"\b[A-Z][a-z]+[A-Z][A-Za-z]*\b|\b[A-Z]{3,}\b(?!\d)|\b[a-z]\d{2,}\b")
"""A named program, product or organisation: SimFil, LinuxONE, IHEP, z16 (a metric such as HIC15 is no handle)."""
_GENERIC_ACRONYMS = frozenset("PDF PPT PPTX FAQ OCR URL USA THE AND FOR".split())
SELF_IDENTIFYING_WORDS = 5
"""Specific words (outside quoted titles) from which a question's own content identifies its fact."""


_KO_PARTICLE_RE = re.compile(r"(?<=[가-힣])(?:에서는|에서|에게|으로|은|는|이|가|을|를|의|에|와|과|로|도|만|란|이란)$")
_KO_STOP = frozenset(
    "무엇 무엇인가요 인가요 언제 언제인가요 얼마 얼마인가요 어디 누구 어느 쪽 "
    "더 이후 열렸나요 되었나요 나요 및 등 중 각".split()
)


def _content_words(text: str) -> list[str]:
    words = [_KO_PARTICLE_RE.sub("", w) for w in _words(text)]
    return [w for w in words if w not in _STOP and w not in _KO_STOP and not w.isdigit() and len(w) >= 2]


def _specific_words(text: str) -> list[str]:
    return [w for w in _content_words(text) if w not in GENERIC_WORDS]


def _instance_handle(text: str, pdf: bool = False) -> str | None:
    """What in the question identifies one test, report, meeting, chapter or table: an ID, a date, a chapter, a
    document or distinctive title (a PDF's section titles count as chapters), a year; or None."""
    for regex, what in ((_ID_RE, "an identifier"), (_DATE_RE, "a date"), (_CHAPTER_RE, "a chapter or section")):
        found = regex.search(text)
        if found:
            return f"{what} ({found.group(0).strip()[:40]})"
    for title in _quoted(text):
        specific = len(_specific_words(title))
        if (_DOC_NOUN_RE.search(title) and specific >= 2) or specific >= DISTINCTIVE_TITLE_WORDS or (pdf and specific >= 2):
            return f"a document, section or distinctive title ('{title[:60]}')"
    for named in _NAMED_DOC_RE.finditer(text):
        title = next(g for g in named.groups() if g)
        if len(_specific_words(title)) >= 2:
            return f"a named document ('{title[:60]}')"
    unquoted = _QUOTED_RE.sub(" ", text)
    for doc in _DOC_NOUN_RE.finditer(unquoted):
        if len(_specific_words(_phrase_before(unquoted, doc.start()))) >= 2:
            return f"a named document ('{_phrase_before(unquoted, doc.end())}')"
    year = _YEAR_RE.search(text)
    return f"a year ({year.group(0)})" if year else None


def _phrase_before(text: str, end: int) -> str:
    """The few words before position ``end`` (the name of a "... report")."""
    return " ".join(text[:end].split()[-5:])


_KO_CONCEPT_RE = re.compile(r"(?:^|\s)(?P<term>[^\s'’]+?)(?:이란|란)\s+무엇")


def concept_subject(ctx: PairContext) -> str | None:
    """The term a "what is X?" question defines, when X is a real term (not an attribute of a document)."""
    question = _without_files(ctx.question, ctx.file_name)
    if ctx.language == "ko":
        korean = _KO_CONCEPT_RE.search(question)
        return korean.group("term") if korean and _specific_words(korean.group("term")) else None
    match = _WHAT_IS_RE.search(question)
    if not match or match.group("verb").casefold() not in ("is", "are"):
        return None
    raw = match.group("subject").strip()
    core = re.sub(r"^(?:The|A|An)\s+", "", _subject_core(raw))  # "what is An airbag?": the term is "airbag"
    words = core.split()
    if not words or len(words) > 6 or _CONCEPT_BLOCKERS_RE.search(core) or _QUOTED_RE.search(raw):
        return None
    if words[0] in _SENTENCE_STARTS or words[-1].casefold() in _DANGLING or _has_finite_verb(words):
        return None
    if words[0].casefold() in _PREPOSITIONS or re.fullmatch(r"[a-z]+(?:ed|en)", words[0]):
        return None  # "what was decided in ...", "what is given in ...": a verb phrase, not a term
    if raw.casefold().startswith("the ") and ctx.question_type != "definitional":
        return None  # "what is the barrier?": an attribute of something the question does not name
    return core if _specific_words(core) else None


def _needs_instance(ctx: PairContext, concept: str | None) -> bool:
    """Does the question ask a fact that belongs to one test, meeting or document (a value, a result, a decision)?"""
    if concept is not None:
        return False
    if ctx.target_modality in ("table", "chart") or ctx.question_type in ("numeric", "comparative"):
        return True
    if (numbers_in(ctx.answer) and len(ctx.answer.split()) <= 6) or _INSTANCE_FACT_RE.search(ctx.question):
        return True
    return Path(ctx.file_name).suffix.lower() in (".pptx", ".ppt")  # a deck's facts belong to its test or meeting


def _entity(text: str) -> str | None:
    """A named program, product, organisation or metric (SimFil, LinuxONE, IHEP, HIC15, z16), or None."""
    return next((m.group(0) for m in _ENTITY_RE.finditer(_QUOTED_RE.sub(" ", text)) if m.group(0) not in _GENERIC_ACRONYMS), None)


def _document_title_for_a_cell(ctx: PairContext, text: str) -> bool:
    """A table-cell question whose quoted "table" is the whole document's title (a bill, a report) and shares no
    word with the row and column it asks about, on a chunk with several tables: which one is meant is not said."""
    if ctx.target_modality != "table" or _CHAPTER_RE.search(text) or re.search(r"\btable\s+\d|표\s*\d", text, re.I):
        return False
    if len(markdown_tables(ctx.chunk_markdown)) < 2:
        return False  # one table: the document names it well enough
    titles = _quoted(text)
    if not titles or not _DOC_NOUN_RE.search(titles[0]) or _named_block(ctx):
        return False
    asked = set(_specific_words(_QUOTED_RE.sub(" ", text)))
    return not asked & set(_specific_words(titles[0]))


def _handle_signal(ctx: PairContext, text: str, mentions_file: bool) -> Signal | None:
    """How well the question names what its fact belongs to (None when it does)."""
    concept = concept_subject(ctx)
    instance = _instance_handle(text, Path(ctx.file_name).suffix.lower() == ".pdf")
    if instance and _document_title_for_a_cell(ctx, text):
        return Signal("standalone", 2, "names the document but not which of its tables the cell is in")
    if instance or concept:
        return None
    own = _specific_words(_QUOTED_RE.sub(" ", text))
    entity = None if mentions_file else _entity(text)
    if _needs_instance(ctx, concept):
        if entity:
            return Signal("standalone", 3, f"names no test, report or meeting, but a named subject ({entity})")
        if not mentions_file and len(own) >= SELF_IDENTIFYING_WORDS:
            return Signal("standalone", 3, f"names no test, report or meeting, but its own content pins the fact down "
                                           f"({', '.join(own[:SELF_IDENTIFYING_WORDS])}, ...)")
        titles = [t for t in _quoted(text) if t.strip()]
        where = (f"only a title ('{titles[0][:50]}') that other documents can share" if titles
                 else "only the file name" if mentions_file else "nothing")
        return Signal("standalone", 2, f"asks a fact of one test, meeting or document but names none of them: {where}")
    if entity or own:
        return Signal("standalone", 3, "names a topic but no report, test or chapter")
    return Signal("standalone", 2, "names no report, test, chapter or topic")


def standalone_signals(ctx: PairContext) -> list[Signal]:
    """Would a user of the whole collection understand the question without the chunk?"""
    question = ctx.question
    text = _without_files(question, ctx.file_name)
    mentions_file = names_file(ctx) or bool(_FILE_RE.search(question))
    out: list[Signal] = []
    if _DEICTIC_EN_RE.search(text) or _DEICTIC_KO_RE.search(text):
        found = (_DEICTIC_EN_RE.search(text) or _DEICTIC_KO_RE.search(text)).group(0).strip()
        out.append(Signal("standalone", 1, f"deictic reference ('{found}')"))
    elif _VAGUE_EN_RE.search(text):
        out.append(Signal("standalone", 2, f"'{_VAGUE_EN_RE.search(text).group(0)}' without saying which"))
    slide_ref = _SLIDE_REF_RE.search(text)
    if slide_ref:
        out.append(Signal("standalone", 2, f"'{slide_ref.group(0)}' is not a handle a user knows"))
        if slide_ref.group(0).casefold().startswith(("series", "시리즈")):
            out.append(Signal("useful", 1, "an anonymous series ('Series N')"))
    handle = _handle_signal(ctx, text, mentions_file)
    return out + ([handle] if handle else [])


# --- useful ---------------------------------------------------------------------------------------

_SKIPPED_SECTION_RE = re.compile(
    r"^(?:\d+(?:\.\d+)*\.?\s+)?(?:contents|table of contents|index|notices?|trademarks?|copyright|legal|disclaimers?|"
    r"acknowledge?ments?|목\s*차|차\s*례|색\s*인)\s*$",
    re.IGNORECASE,
)
_TOC_RE = re.compile(r"(?:\.\s?){5,}|(?:[·•․‥…]\s?){3,}|(?:_\s?){5,}")
_TRIVIA_KEY_RE = re.compile(
    r"\b(?:source|sources|reference(?!\s+(?:coordinate|system|axis|axes|plane|point|line|frame|mark|test|position))"
    r"|references|citation|footnote|copyright|page number|slide number|author|authors|contact|"
    r"e-?mail|phone|fax|url|website|web site|link|version|revision|file name|catalog no|report no|work unit no|"
    r"contract(?: or grant)? no|grant no|isbn|issn|doi|transition|caption|footer|header)\b"
    r"|출처|자료|각주|페이지|문의|연락처",
    re.IGNORECASE,
)
_TITLE_IN_BRACKETS_RE = re.compile(r"(?<=\d)\s*\([^()?]*(?:\([^()]*\)[^()?]*)?\)")
"""A paragraph's title in brackets after its number ('section 3.1.2 (Website Information Form)'): a handle, not what is
asked."""
_TRIVIA_QUESTION_RE = re.compile(
    r"\b(?:source|citation|footnote|copyright|page number|slide number|url|website|isbn|issn|doi|catalog no|report no)\b",
    re.IGNORECASE,
)
_LEGAL_RE = re.compile(
    r"\btrademarks?\b|\bregistered trademark|\bwarrant(?:y|ies)\b|\bAS IS\b|all rights reserved|\bcopyright\b|©"
    r"|\bdisclaimer\b|\bliabilit(?:y|ies)\b",
    re.IGNORECASE,
)
_NOTATION_QUESTION_RE = re.compile(r"\bwhat (?:symbol|notation|letter|subscript|superscript)\b", re.IGNORECASE)
_NOTATION_RE = re.compile(
    r"\b(?:subscripts?|superscripts?|notation|denoted|denotes|the symbol)\b|\bis used (?:below|above|here) for\b", re.IGNORECASE
)
_URL_RE = re.compile(r"^(?:https?:)?//\S+$|^www\.\S+$|^\S+\.(?:com|org|net|gov|edu)(?:/\S*)?$", re.IGNORECASE)
_PICTURE_TEXT_RE = re.compile(
    r"\bwhat (?:text|words?|title|caption|label|heading|phrase) (?:is|are) (?:printed|written|shown)\b"
    r"|\b(?:text|title|caption|label) (?:printed|written) on\b|그림에 적힌"
    r"|\b(?:heading|title|caption|text|label|words?)\b[^?]{0,40}\b(?:picture|image|photo)\b[^?]*\b(?:say|read)s?\b",
    re.IGNORECASE,
)
_DESCRIBE_RE = re.compile(
    r"\bwhat (?:does|do) (?:the|this|that) (?:chart|figure|graph|diagram|picture|image|slide|table|photo)s? "
    r"(?:show|depict|illustrate|present|display)\b",
    re.IGNORECASE,
)
_BASELINE_RE = re.compile(
    r"\bbaseline (?:value|level|reading)s?\b|\bat t\s*=\s*0\b|\bat (?:time )?(?:zero|0\s*(?:ms|s))\b|\binitial value\b"
    r"|\bconstant value\b",
    re.IGNORECASE,
)


def _section_signals(ctx: PairContext) -> list[Signal]:
    title = ctx.chunk_title.strip(" #*")
    if _SKIPPED_SECTION_RE.match(title):
        return [Signal("useful", 1, f"from a contents, index or legal-notice section ('{title[:40]}')")]
    lines = [ln for ln in ctx.chunk_markdown.splitlines() if ln.strip() and not ln.lstrip().startswith("#")]
    if len(lines) >= 5:
        toc = sum(bool(_TOC_RE.search(ln)) for ln in lines)
        if toc / len(lines) >= 0.3 and _TOC_RE.search(ctx.answer):
            return [Signal("useful", 1, "from a table of contents")]
    return []


def _header_cells(markdown: str) -> set[str]:
    """The normalised cells of the first row of every Markdown table."""
    return {" ".join(_words(c)) for table in markdown_tables(markdown) for c in table[0] if _words(c)}


_FURNITURE_RE = re.compile(r"^(?P<page>\d{1,4})\s+(?P<text>[^\d]{5,})$|^(?P<text2>[^\d]{5,}?)\s+(?P<page2>\d{1,4})$")


def page_furniture(answer: str, chunk: str, title: str = "") -> bool:
    """True when the answer is a whole line of the chunk made of a page number and a title (a running header or
    footer such as "Signal Transformations 7" or "4 IBM Cloud Pak for Data on IBM zSystems")."""
    answer = answer.strip()
    if re.fullmatch(r"[-–—]\s*\d{1,4}\s*[-–—]|(?:page|p\.)\s*\d{1,4}(?:\s*(?:of|/)\s*\d{1,4})?", answer, re.IGNORECASE):
        return True  # "- 1 -", "Page 3 of 40"
    match = _FURNITURE_RE.match(answer)
    lines = [ln.strip().strip("#*> ").strip() for ln in chunk.splitlines()]
    whole_line = any(
        ln == answer or (ln.endswith(answer) and re.fullmatch(r"[\d.\s]*", ln[: -len(answer)])) for ln in lines if ln
    )
    if not match or not whole_line:
        return False
    text = match.group("text") or match.group("text2")
    words = [w for w in text.split() if w[:1].isalpha() and w.casefold() not in _STOP]
    titled = len(words) >= 2 and sum(w[:1].isupper() for w in words) >= 0.6 * len(words)
    return titled or bool(title and text.strip().casefold() in title.casefold())


def _answer_shape_signals(ctx: PairContext) -> list[Signal]:
    answer = ctx.answer.strip()
    out: list[Signal] = []
    if _URL_RE.match(answer):
        out.append(Signal("useful", 1, "the answer is a web address"))
    if _TOC_RE.search(answer):
        out += [Signal("useful", 1, "the answer is a table-of-contents line"),
                Signal("grounded", 2, "a table-of-contents line is no answer to the question")]
    if _LEGAL_RE.search(answer):
        out.append(Signal("useful", 1, "legal boilerplate (trademarks, warranties, copyright)"))
    if _NOTATION_RE.search(answer) or _NOTATION_QUESTION_RE.search(ctx.question):
        out.append(Signal("useful", 2, "notation, not a fact"))
    if page_furniture(answer, ctx.chunk_markdown, ctx.chunk_title):
        out += [Signal("grounded", 2, "the answer is a page header or footer (a title and a page number)"),
                Signal("well_formed", 2, "a page header or footer is no answer to the question")]
    tokens = answer.split()
    if len(tokens) >= 2 and all(parse_number(t.strip(",;")) is not None for t in tokens):
        out += [Signal("useful", 2, "bare numbers without a label or unit (axis ticks or a garbled table row)"),
                Signal("well_formed", 2, "the answer is a row of bare numbers, not a sensible answer")]
    value = parse_number(tokens[0].rstrip("%")) if len(tokens) <= 2 and tokens else None
    if value == 0:
        out.append(Signal("useful", 2, "a zero/baseline value"))
    if ctx.question_type != "comparative" and " ".join(_words(answer)) in _header_cells(ctx.chunk_markdown) and value is None:
        out += [Signal("useful", 1, "the answer is a table's header cell, not a value (a garbled or merged table)"),
                Signal("grounded", 2, "the answer is a header cell, not the asked value")]
    return out


_CITED_RE = re.compile(r"\b(?:paragraph|section|item)\s+[A-Z]?\d|[\"“](?:S|§\s?)?\d+(?:\.\d+)*\.?\s+\w", re.IGNORECASE)
"""A numbered paragraph the question cites: 'paragraph S7.3(b)(2)', 'section 2.1', 'the "S9.2 Requirements" section'."""


def useful_signals(ctx: PairContext) -> list[Signal]:
    """Would a real user ask this, and is the answer a meaningful fact?"""
    out = _section_signals(ctx) + _answer_shape_signals(ctx)
    key = _asked_key(ctx.question) if ctx.language != "ko" else None
    asked = _TITLE_IN_BRACKETS_RE.sub(" ", _QUOTED_RE.sub(" ", key or ctx.question))
    if (_TRIVIA_KEY_RE if key or ctx.language == "ko" else _TRIVIA_QUESTION_RE).search(asked):
        out.append(Signal("useful", 2, "asks for a source, citation, page or other document metadata"))
    if _DESCRIBE_RE.search(ctx.question):
        out.append(Signal("useful", 2, "asks what a figure or slide shows: a description, not a fact"))
    if _PICTURE_TEXT_RE.search(ctx.question):
        out.append(Signal("useful", 2, "asks for the literal text on a picture, not for a fact"))
    if _BASELINE_RE.search(ctx.question):
        out.append(Signal("useful", 2, "asks for a baseline or constant value"))
    repeats = ctx.answer_also_in
    numeric = bool(numbers_in(ctx.answer)) and len(_words(ctx.answer)) <= 6
    cited = _CITED_RE.search(ctx.question)
    # a standard repeats a requirement on purpose under another paragraph (FMVSS 214's MDB and pole tests, UN R16's ALR
    # and ELR twins): the cited paragraph tells the copies apart, so only an uncited repeat is boilerplate or ambiguous
    if not cited and ((repeats >= 2) or (repeats >= 1 and not numeric and len(_words(ctx.answer)) >= 2)):
        out.append(Signal("useful", 2, f"the same answer is given in {repeats} other chunk(s): boilerplate or ambiguous"))
    return out


def signals(ctx: PairContext) -> list[Signal]:
    """Every finding of the offline rules on one pair."""
    return grounded_signals(ctx) + well_formed_signals(ctx) + standalone_signals(ctx) + useful_signals(ctx)
