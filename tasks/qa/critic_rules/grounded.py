"""The template critic's text helpers and its grounded rules."""


from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ragprep.markdown import markdown_tables
from ragprep.text import numbers_in
from tasks.qa.flags import support_share

if TYPE_CHECKING:
    from tasks.qa.pair_context import PairContext



@dataclass(frozen=True)
class Signal:
    """One finding: it caps ``criterion`` at ``score``, for ``reason``."""

    criterion: str
    score: int
    reason: str


# --- text helpers ----------------------------------------------------------------------------

_TOKEN_RE = re.compile(r"[^\W_]+(?:[.,'’\-][^\W_]+)*", re.UNICODE)
_FILE_RE = re.compile(r"[\w\-.()\[\]가-힣]+\.(?:pptx?|pdf|docx?|xlsx?|hwpx?|txt|md)\b", re.IGNORECASE)
_QUOTED_RE = re.compile(
    r"\"([^\"]{2,200})\"|“([^”]{2,200})”|(?<![A-Za-z0-9])'([^']{2,200})'(?![A-Za-z0-9])|「([^」]{2,200})」|‘([^’]{2,200})’"
)
_KO_QUESTION_END_RE = re.compile(r"(\?|？|까요|나요|인가|니까|습니까|는가|을까|ㄹ까|죠|지요|가요)\s*$")


_MIDDLE_DOTS = str.maketrans({"ᆞ": " ", "ㆍ": " ", "‧": " ", "·": " ", "・": " "})


def _nfkc(text: str) -> str:
    """NFKC, with the middle dots that join Korean words ("탄소중립ㆍ녹색성장") made spaces."""
    return unicodedata.normalize("NFKC", text).translate(_MIDDLE_DOTS)


def _tokens(text: str) -> list[re.Match]:
    return list(_TOKEN_RE.finditer(_nfkc(text)))


def _words(text: str) -> list[str]:
    return [m.group().casefold() for m in _TOKEN_RE.finditer(_nfkc(text))]


def _has_hangul(text: str) -> bool:
    return any("\uac00" <= ch <= "\ud7a3" for ch in text)


def _quoted(text: str) -> list[str]:
    return [next(g for g in m.groups() if g) for m in _QUOTED_RE.finditer(text)]


def _without_files(text: str, file_name: str) -> str:
    """The text without the document's file name (and any other file name)."""
    if file_name:
        text = re.sub(re.escape(file_name), " ", text, flags=re.IGNORECASE)
    return _FILE_RE.sub(" ", text)


def normalised_answer(answer: str) -> str:
    """The answer as compared across chunks: words only, case-folded."""
    return " ".join(_words(answer))


def names_file(ctx: PairContext) -> bool:
    """True when the question contains the document's file name (or its stem)."""
    name = ctx.file_name.casefold()
    question = ctx.question.casefold()
    stem = Path(name).stem
    return bool(name) and (name in question or (len(stem) >= 6 and stem in question))


def locate(answer: str, chunk: str) -> tuple[str, int, int] | None:
    """Where the answer stands in the chunk: verbatim, else as the same word sequence (case, spacing,
    punctuation and Markdown ignored). Returns (text searched, start, end) or None."""
    answer = answer.strip()
    if not answer:
        return None
    at = chunk.find(answer)
    if at >= 0:
        return chunk, at, at + len(answer)
    text = _nfkc(chunk)
    wanted = _words(answer)
    found = _tokens(text)
    words = [m.group().casefold() for m in found]
    n = len(wanted)
    if not n:
        return None
    for i in range(len(words) - n + 1):
        if words[i] == wanted[0] and words[i : i + n] == wanted:
            return text, found[i].start(), found[i + n - 1].end()
    return None


# --- shared with the other criteria -----------------------------------------------------------

_WHAT_IS_RE = re.compile(r"\bwhat\s+(?P<verb>is|are|was|were)\s+(?P<subject>[^?？]+?)\s*[?？]?\s*$", re.IGNORECASE)

_TABLE_KEY_RE = re.compile(r"\bwhat is the (?P<column>.+?) value for (?P<row>.+?)\s*\?\s*$", re.IGNORECASE)

_KO_TABLE_KEY_RE = re.compile(r"표에서 (?P<row>.+?)의 (?P<column>.+?) 값은")

def _asked_key(question: str) -> str | None:
    """The subject of a "what is/are X?" question (English), or None."""
    match = _WHAT_IS_RE.search(question)
    return match.group("subject").strip() if match else None

_DOC_NOUN_RE = re.compile(
    r"\b(?:report|study|paper|guide|guideline|manual|handbook|standard|regulation|directive|act|law|bill|"
    r"specification|proposal|protocol|policy|textbook|book|white paper|redpaper|redbook)s?\b"
    r"|보고서|법률안|법안|기본법|규정|지침|기준|약관|규칙|시행령|설명서|매뉴얼",
    re.IGNORECASE,
)


# --- grounded ----------------------------------------------------------------------------------

_TERMINAL = (".", "!", "?", "。", "…", ")", "]", '"', "'", "”", "’", "»", "」", "』", "다")
_DANGLING = frozenset(
    "the a an of to for with by and or but in on at from as than that which who whose whom is are was were be been being "
    "has have had can could will would shall should may might must not if when while because since so then this these "
    "those its their our your his her into onto over under between per via whether where how what why such".split()
)
_OPEN_CLOSE = (("(", ")"), ("[", "]"), ("“", "”"), ("「", "」"), ("{", "}"))
_LIST_MARKER_RE = re.compile(r"(?:^|(?<=[;:.,])\s|\n)\s*[a-z0-9ivx]{1,3}\)")
"""A list marker ('a)', 'ii)') at the start of the text, a line or a clause; not a unit closing a bracket ('(2,250 lb)')."""
_STRAY_TOKEN_RE = re.compile(r"[|\\{}~^`\x00-\x1f\x7f\ufffd]|<(?!=?\s?\d)|(?<![\d\s])>|^>(?!=?\s?\d)")
_GLUED_RE = re.compile(r"^\d+[A-Za-z]{4,}\w*$")
_DECIMAL_RE = re.compile(r"^\d+[.,]\d+$")
_RULE_RE = re.compile(r"^[—–\-_=~|·•.]{2,}$")
_LOOKALIKE_RE = re.compile(r"\d[lIO](?=[\d.,]|[가-힣]|$)|(?<![A-Za-z])[lIO]\d|\d[lIO]\d")
_UNIT_RE = re.compile(r"^(?:mm|cm|ms|m|s|g|kN|N|Nm|km/h|m/s|kg|%|°|deg)$")
_CITATION_RE = re.compile(r"\[\d{1,3}\]|\((?:19|20)\d{2}[a-z]?\)|\bet al\.|\bpp\.\s*\d|\bVol\.\s*\d", re.IGNORECASE)
_NUMBERED_LABEL_RE = re.compile(r"^\d{1,2}\.\s+[A-Z][\w’']")


_VALUE_ANSWER_RE = re.compile(r"^(?:(?:not\s+)?(?:more|less)\s+than|at\s+(?:least|most)|up\s+to|within|between|about|"
                              r"approximately)?\s*[-+±]?\d[\d.,]*(?:\s*(?:±|\+/-)\s*\d[\d.,]*)?\s*[^\W\d]*(?:/\w+|\s+per\s+\w+)?"
                              r"(?:\s+(?:and|to)\s+[-+]?\d[\d.,]*\s*[^\W\d]*)?$", re.IGNORECASE)
"""A quantity on its own ('150 mm', 'not more than 13 millimeters per second', 'between 5 seconds and 60 seconds')."""


_BOUND_WORDS = frozenset(
    "not no exceed exceeds more less than or equal to at least most up within between about approximately and greater "
    "lower higher smaller larger a maximum minimum of per cent percent ± +/- +".split())
_UNIT_WORD_RE = re.compile(r"^(?:[%°º]|°C|mm|cm|m|km|kg|g|lb|lbf|N|kN|daN|J|kJ|V|A|Hz|kPa|MPa|Pa|bar|psi|s|ms|h|min|km/h|"
                           r"kph|mph|m/s|m/s2|mm/s|kg/m2|degrees?|seconds?|minutes?|hours?|millimet(?:er|re)s?|inch(?:es)?)$",
                           re.IGNORECASE)
MAX_BOUND_VALUE_WORDS = 14


def _bound_value(answer: str) -> bool:
    """A bound or a range with its unit and nothing else ('not exceed 10 per cent', '50 km/h ± 1 km/h', 'less than or
    equal to 2.5 kN', 'not less than 92 percent and not more than 94 percent'): a value taken out of its sentence."""
    tokens = answer.rstrip(".").replace("±", " ± ").split()
    if not tokens or len(tokens) > MAX_BOUND_VALUE_WORDS or not any(_NUMBER_TOKEN_RE.match(t) for t in tokens):
        return False
    return all(t.casefold() in _BOUND_WORDS or _NUMBER_TOKEN_RE.match(t) or _UNIT_WORD_RE.match(t) for t in tokens)


_NUMBER_TOKEN_RE = re.compile(r"^[-+±]?\d[\d.,]*(?:[%°]|[A-Za-z]{1,3})?$")


def truncation(answer: str, located: tuple[str, int, int] | None) -> str | None:
    """Why the answer looks cut off mid-sentence or mid-formula, or None."""
    stripped = answer.rstrip()
    words = stripped.split()
    if stripped.endswith(";") and located is not None and re.match(r"[ \t]*(?:\n|$|(?:and|or)\s*\n)", located[0][located[2]:]):
        return None  # an item of a list ending its line with ';' ('(c) For seats ... position;'): complete
    if _VALUE_ANSWER_RE.match(stripped) or _bound_value(stripped):
        return None  # a value taken out of its sentence ('not more than 13 millimeters per second') is meant to be
    if len(words) >= 2 and stripped.endswith((",", ";", "(", "[", "{", "=", "+", "-", "–", "—", "/", "&", "및", "·", "ㆍ")):
        return f"ends with {stripped[-1]!r}: cut off mid-sentence or mid-formula"
    if len(words) >= 4 and stripped.endswith((":", "：")):
        return "ends with a colon: the list or formula it introduces is missing"
    last = words[-1].casefold().strip("\"'“”‘’*") if words else ""
    if len(words) >= 4 and last in _DANGLING:
        return f"ends with {words[-1]!r}: cut off mid-sentence"
    if located is None or len(words) < 5 or stripped.endswith(_TERMINAL):
        return None
    text, _, end = located
    follow = re.match(r"[ \t]*(\n\s*)?(\S)", text[end : end + 40])
    if follow is None:
        return None
    char, new_line = follow.group(2), bool(follow.group(1))
    if char.islower() or char in "=+×−" or (not new_line and (char.isdigit() or char in "(")):
        return "stops where the chunk's sentence or formula goes on"
    return None


def _unbalanced(text: str) -> bool:
    cleaned = _LIST_MARKER_RE.sub(" ", re.sub(r"\b(No|Nos|no)\.\s", r"\1 ", text))  # '(part No. 8f)' is no list marker
    return any(cleaned.count(a) != cleaned.count(b) for a, b in _OPEN_CLOSE)


def _debris(token: str) -> bool:
    """Layout debris: stray symbols, a leading '=', a rule of dashes, digits glued to a run of letters."""
    core = token.strip(".,;:!?\"'“”‘’()[]")
    return bool(
        _STRAY_TOKEN_RE.search(token) or token.startswith("=") or _RULE_RE.match(token) or (core and _GLUED_RE.match(core))
    )


def _misread(tokens: list[str], i: int) -> bool:
    """A misread value: a lone digit after a decimal number (an OCR'd unit, "38.2 9" for "38.2 g"), letters read
    for digits ("4l2.6", "4O만원"), a digit and a letter before a unit ("3B mm")."""
    core = tokens[i].strip(".,;:!?\"'“”‘’()[]")
    previous = tokens[i - 1].strip(",;:") if i else ""
    following = tokens[i + 1].strip(".,;") if i + 1 < len(tokens) else ""
    return bool(
        (core.isdigit() and len(core) == 1 and _DECIMAL_RE.match(previous))
        or (core and _LOOKALIKE_RE.search(core))
        or (re.fullmatch(r"\d+[A-Za-z]", core) and _UNIT_RE.match(following))
    )


def garbage_tokens(text: str) -> list[str]:
    """Tokens that are not word-like: layout debris (``_debris``) and misread values (``_misread``); an arrow between
    two words ('subframe -> tunnel -> sill', a load path on a slide) is notation, not debris."""
    tokens = re.sub(r"(?<=\w)\s+-+>\s+(?=\w)", " ", text).split()
    return [t for i, t in enumerate(tokens) if (_debris(t) and not _comparison(tokens, i)) or _misread(tokens, i)]


def _comparison(tokens: list[str], i: int) -> bool:
    """A comparison sign standing before a number ('> 60 V', '< 0.5 mm'): part of a bound, not layout debris."""
    following = tokens[i + 1] if i + 1 < len(tokens) else ""
    return tokens[i] in ("<", ">", "<=", ">=", "=<", "=>") and bool(re.match(r"[-+]?\d", following))


def _garbage_signals(answer: str) -> list[Signal]:
    tokens = answer.split()
    bad = garbage_tokens(answer)
    if not bad:
        return []
    shown = " ".join(bad[:4])
    debris = [t for t in bad if _debris(t)]
    out = [Signal("grounded", 2, f"OCR-garbled answer ({shown})")]
    if len(bad) / max(1, len(tokens)) >= 0.3 or (len(tokens) <= 3 and bad):
        out = [Signal("grounded", 1, f"OCR or layout garbage in the answer ({shown})")]
    if debris and len(debris) / max(1, len(tokens)) >= 0.3:
        out.append(Signal("well_formed", 2, "the answer is layout debris, not a sensible answer"))
    return out


_SUPPORT_TOKEN_RE = re.compile(r"\d+(?:[.,]\d+)*|[^\W\d_]+")
_KO_ENDING_RE = re.compile(
    r"(?:입니다|습니다|합니다|됩니다|이며|이고|이다|으로|에서|에게|하는|하고|하여|했다|한다|되었|된다|이란|란|은|는|이|가|을|를|의|에|와|과|로|도|만|다)$"
)
_FUNCTION_WORDS = frozenset(
    "a an the of in on at to for from by with and or but is are was were be been being it its this that these those as "
    "than then so because since which who whom whose what when where why how there their they them he she his her we our "
    "you your not no yes do does did has have had can could will would should may might must also".split()
)


def content_support(answer: str, chunk: str) -> float:
    """Share of the answer's content words found in the chunk: exactly, by a shared stem (English), or as a
    substring of the chunk with its spaces removed (Korean, whose PDF text often loses its spaces)."""
    words = [w for w in (t.casefold() for t in _SUPPORT_TOKEN_RE.findall(_nfkc(answer)))
             if w not in _FUNCTION_WORDS and (w.isdigit() or len(w) >= 2 or _has_hangul(w))]
    if not words:
        return support_share(answer, chunk)
    text = _nfkc(chunk).casefold()
    squeezed = re.sub(r"\s+", "", text)
    vocabulary = set(_SUPPORT_TOKEN_RE.findall(text))
    stems = {w[:5] for w in vocabulary if len(w) >= 5}
    hits = 0
    for word in words:
        stem = _KO_ENDING_RE.sub("", word) if _has_hangul(word) else word
        hits += bool(word in vocabulary or (len(word) >= 6 and word[:5] in stems)
                     or (_has_hangul(word) and stem and stem in squeezed) or (word[0].isdigit() and word in squeezed))
    return hits / len(words)


def _span_signals(ctx: PairContext, located: tuple[str, int, int] | None) -> list[Signal]:
    answer = ctx.answer.strip()
    if located is not None:
        return []
    share = content_support(answer, ctx.chunk_markdown)
    if share < 0.5:
        return [Signal("grounded", 1, f"the answer is not in the chunk (only {share:.0%} of its content words occur there)")]
    if share < 0.75:
        return [Signal("grounded", 2, f"the answer is only partly supported by the chunk ({share:.0%} of its content words)")]
    return [Signal("grounded", 4, "the answer's words are in the chunk, but not as one passage")]


def _norm(cell: str) -> str:
    return " ".join(_words(cell))


def repeated_row_label(answer: str, markdown: str) -> str | None:
    """The label of the table row holding the answer when another row has the same label but other values (two
    blocks with the same label: which one the question means is ambiguous), else None."""
    wanted = _norm(answer)
    rows = [row for table in markdown_tables(markdown) for row in table[1:] if len(row) >= 2 and _norm(row[0])]
    for row in rows:
        if wanted and any(_norm(c) == wanted for c in row[1:]):
            twins = [r for r in rows if r is not row and _norm(r[0]) == _norm(row[0]) and r[1:] != row[1:]]
            if twins:
                return row[0]
    return None


def merged_header_cells(markdown: str) -> set[str]:
    """Header cells spanning several columns (followed by empty or identical header cells): a value "of" such a
    column is ambiguous."""
    merged = set()
    for table in markdown_tables(markdown):
        header = table[0]
        for i, cell in enumerate(header[:-1]):
            if _norm(cell) and (not _norm(header[i + 1]) or _norm(header[i + 1]) == _norm(cell)):
                merged.add(_norm(cell))
    return merged


_KO_COMPARE_RE = re.compile(r"(?P<a>[^\s'’]+(?: [^\s'’]+)?)[와과] (?P<b>[^\s'’]+(?: [^\s'’]+)?) 중 어느")
_EN_COMPARE_RE = re.compile(r"which is higher for .+?: (?P<a>.+?) or (?P<b>.+?)\?", re.IGNORECASE)


def _named_block(ctx: PairContext) -> str | None:
    """A quoted title in the question, other than a document's, that occurs in the chunk: the question says which
    table or block of the chunk it means ("'1기 탄중위' 표에서 ...")."""
    squeezed = re.sub(r"\s+", "", _nfkc(ctx.chunk_markdown)).casefold()
    for title in _quoted(ctx.question):
        if not _DOC_NOUN_RE.search(title) and len(title) >= 2 and re.sub(r"\s+", "", _nfkc(title)).casefold() in squeezed:
            return title
    return None


def _ambiguity_signals(ctx: PairContext) -> list[Signal]:
    out = []
    label = repeated_row_label(ctx.answer, ctx.chunk_markdown)
    if label and not _named_block(ctx):
        out.append(Signal("grounded", 2, f"ambiguous: the chunk has several rows labelled '{label[:40]}' with other values"))
    merged = merged_header_cells(ctx.chunk_markdown)
    asked = [m.group("column") for m in (_TABLE_KEY_RE.search(ctx.question), _KO_TABLE_KEY_RE.search(ctx.question)) if m]
    asked += [g for m in (_KO_COMPARE_RE.search(ctx.question), _EN_COMPARE_RE.search(ctx.question)) if m for g in m.groups()]
    spanning = [a for a in asked if _norm(a) in merged]
    if spanning:
        out += [Signal("grounded", 2, f"asks for a merged header cell ('{spanning[0]}') that spans several columns"),
                Signal("well_formed", 2, "names a merged header cell as if it were one column")]
    return out


def grounded_signals(ctx: PairContext) -> list[Signal]:
    """Is the answer correct and fully supported by the chunk?"""
    answer = ctx.answer.strip()
    if not _words(answer) and not any(unicodedata.category(ch) in ("Sm", "So") or "\u0370" <= ch <= "\u03ff" for ch in answer):
        return [Signal("grounded", 1, "the answer has no words or numbers"),
                Signal("well_formed", 1, "an empty answer ('-', '·')"),
                Signal("useful", 1, "empty answer")]
    located = locate(answer, ctx.chunk_markdown)
    out = _span_signals(ctx, located)
    missing = sorted(numbers_in(_nfkc(answer)) - numbers_in(_nfkc(ctx.chunk_markdown)))
    if missing:
        out.append(Signal("grounded", 1, f"numbers absent from the chunk: {', '.join(missing[:5])}"))
    cut = truncation(answer, located)
    if cut:
        out.append(Signal("grounded", 2, f"truncated: {cut}"))
    if len(_CITATION_RE.findall(answer)) >= 2 or re.search(r"\.\s+\d{1,2}\.\s+[A-Z][\w’']+,\s+[A-Z]\.", answer):
        out.append(Signal("grounded", 2, "spliced across several reference entries"))
    if _unbalanced(answer):
        out.append(Signal("grounded", 2, "unbalanced brackets or quotes: a fragment cut out of a longer passage"))
    if _NUMBERED_LABEL_RE.match(answer) and _NUMBERED_LABEL_RE.search(re.sub(r"^the\s+", "", _asked_key(ctx.question) or "")):
        out.append(Signal("grounded", 2, "the answer is the next numbered field of a form, not the asked field's value"))
    if answer.endswith(("?", "？")):
        out += [Signal("grounded", 1, "the answer is itself a question (an echo of a question in the chunk)"),
                Signal("useful", 1, "the answer is a question, not a fact")]
    out += _garbage_signals(answer) + _ambiguity_signals(ctx)
    if "ambiguous_gold" in ctx.flags:
        out.append(Signal("grounded", 2, "ambiguous gold: the question fits more than one answer in the collection"))
    return out


