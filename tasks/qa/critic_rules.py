"""The judge's offline rules: a deterministic critic built from the known failure patterns of generated QA pairs.

Each rule looks at one ``PairContext`` and returns ``Signal`` objects: a criterion (grounded, standalone,
well_formed, useful), the highest score it may keep (1-5) and a one-line reason. ``score_offline``
in ``tasks.qa.judge`` caps every criterion at its lowest signal. The rules follow the QA rubric
(``shared/QA_RUBRIC.md``) and were calibrated on the tune part of ``tests/data/qa_calibration.jsonl``.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ragprep.markdown import parse_number, table_rows
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


# --- grounded ----------------------------------------------------------------------------------

_TERMINAL = (".", "!", "?", "。", "…", ")", "]", '"', "'", "”", "’", "»", "」", "』", "다")
_DANGLING = frozenset(
    "the a an of to for with by and or but in on at from as than that which who whose whom is are was were be been being "
    "has have had can could will would shall should may might must not if when while because since so then this these "
    "those its their our your his her into onto over under between per via whether where how what why such".split()
)
_OPEN_CLOSE = (("(", ")"), ("[", "]"), ("“", "”"), ("「", "」"), ("{", "}"))
_LIST_MARKER_RE = re.compile(r"(?:^|\s)[a-z0-9ivx]{1,3}\)")
_STRAY_TOKEN_RE = re.compile(r"[|\\{}~^`\x00-\x1f\x7f\ufffd]|<(?!=?\s?\d)|(?<![\d\s])>|^>(?!=?\s?\d)")
_GLUED_RE = re.compile(r"^\d+[A-Za-z]{4,}\w*$")
_DECIMAL_RE = re.compile(r"^\d+[.,]\d+$")
_RULE_RE = re.compile(r"^[—–\-_=~|·•.]{2,}$")
_LOOKALIKE_RE = re.compile(r"\d[lIO](?=[\d.,]|[가-힣]|$)|(?<![A-Za-z])[lIO]\d|\d[lIO]\d")
_UNIT_RE = re.compile(r"^(?:mm|cm|ms|m|s|g|kN|N|Nm|km/h|m/s|kg|%|°|deg)$")
_CITATION_RE = re.compile(r"\[\d{1,3}\]|\((?:19|20)\d{2}[a-z]?\)|\bet al\.|\bpp\.\s*\d|\bVol\.\s*\d", re.IGNORECASE)
_NUMBERED_LABEL_RE = re.compile(r"^\d{1,2}\.\s+[A-Z][\w’']")


def truncation(answer: str, located: tuple[str, int, int] | None) -> str | None:
    """Why the answer looks cut off mid-sentence or mid-formula, or None."""
    stripped = answer.rstrip()
    words = stripped.split()
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
    cleaned = _LIST_MARKER_RE.sub(" ", text)
    return any(cleaned.count(a) != cleaned.count(b) for a, b in _OPEN_CLOSE)


def _debris(token: str) -> bool:
    """Layout debris: stray symbols, a leading '=', a rule of dashes, digits glued to a run of letters."""
    core = token.strip(".,;:!?\"'“”‘’()[]")
    return bool(_STRAY_TOKEN_RE.search(token) or token.startswith("=") or _RULE_RE.match(token) or (core and _GLUED_RE.match(core)))


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
    """Tokens that are not word-like: layout debris (``_debris``) and misread values (``_misread``)."""
    tokens = text.split()
    return [t for i, t in enumerate(tokens) if _debris(t) or _misread(tokens, i)]


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


def _tables(markdown: str) -> list[list[list[str]]]:
    """The rows of each Markdown table of the chunk, table by table."""
    tables, block = [], []
    for line in [*markdown.splitlines(), ""]:
        if line.strip().startswith("|"):
            block.append(line)
        elif block:
            tables.append(table_rows("\n".join(block)))
            block = []
    return [t for t in tables if t]


def _norm(cell: str) -> str:
    return " ".join(_words(cell))


def repeated_row_label(answer: str, markdown: str) -> str | None:
    """The label of the table row holding the answer when another row has the same label but other values (two
    blocks with the same label: which one the question means is ambiguous), else None."""
    wanted = _norm(answer)
    rows = [row for table in _tables(markdown) for row in table[1:] if len(row) >= 2 and _norm(row[0])]
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
    for table in _tables(markdown):
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
        return [Signal("grounded", 1, "the answer has no words or numbers"), Signal("well_formed", 1, "an empty answer ('-', '·')"),
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


# --- well_formed ---------------------------------------------------------------------------------

_WHAT_IS_RE = re.compile(r"\bwhat\s+(?P<verb>is|are|was|were)\s+(?P<subject>[^?？]+?)\s*[?？]?\s*$", re.IGNORECASE)
_SENTENCE_STARTS = frozenset(
    "The A An This That These Those It They There Here Both All Some Any Most One Each We You He She Our Its Their If When "
    "Since Because Although Though Despite Thus Also But However In As While Whatever Whenever So Then For How Why Where "
    "What Which Who Such Many Several Only Even Therefore Hence Moreover Furthermore Unlike".split()
)
_DEICTIC_STARTS = frozenset("This That These Those It They There Here Both All We You He She Its Their Our Such".split())
_FRAGMENT_STARTS = frozenset(
    "If When Since Because Although Though Despite Thus Also But However In As While Whatever Whenever So Then For How "
    "Why Where What Which Who Even Therefore Hence Moreover Furthermore Unlike".split()
)
_FINITE_RE = re.compile(
    r"\b(?:is|are|was|were|can|could|must|should|would|will|may|might|does|do|did|has|have|had)\b"
    r"|\b[a-z]{3,}s\s+(?:on|upon)\s+(?:how|whether|what|which)\b"
)
_RELATIVE_RE = re.compile(r"\b(?:that|which|who|whom|whose)\b", re.IGNORECASE)
_KO_ARTEFACT_RE = re.compile(r"은\(는\)|는\(은\)|이\(가\)|가\(이\)|을\(를\)|를\(을\)|와\(과\)|과\(와\)|\(으\)로|으로\(로\)|\(이\)")
_REPEAT_RE = re.compile(r"\b([^\W\d_]{2,})\s+\1\b", re.IGNORECASE)
_REPEAT_PAIR_RE = re.compile(r"\b([^\W\d_]+\s+[^\W\d_]+)\s+\1\b", re.IGNORECASE)
_PREPOSITIONS = frozenset("of in on for with by from at to under over above below between during per via that which".split())
_SINGULAR_S = frozenset("series species news means lens chassis canvas atlas alias bias thermos corpus status basis analysis".split())
_DEFINING = frozenset("a an the one any another some something defined called known termed referred what how".split())
_TABLE_KEY_RE = re.compile(r"\bwhat is the (?P<column>.+?) value for (?P<row>.+?)\s*\?\s*$", re.IGNORECASE)
_KO_TABLE_KEY_RE = re.compile(r"표에서 (?P<row>.+?)의 (?P<column>.+?) 값은")
_ONE_OF_RE = re.compile(
    r"\bone of the (?:\w+\s+){0,2}(?:steps|items|points|things|examples|phrases|texts|lines|reasons|options|entries|words)\b"
    r"|중 하나는", re.IGNORECASE,
)
_BULLET_GLYPH_RE = re.compile(r"[\x00-\x1f\x7f\ufffd•▪●◦‣➢➤►▸■□]|\bthe\s+[–—-]\s", re.IGNORECASE)


def _asked_key(question: str) -> str | None:
    """The subject of a "what is/are X?" question (English), or None."""
    match = _WHAT_IS_RE.search(question)
    return match.group("subject").strip() if match else None


def _subject_core(subject: str) -> str:
    """The subject without its quoted titles, file names and a leading lower-case article."""
    core = _QUOTED_RE.sub(" TITLE ", _FILE_RE.sub(" ", subject))
    core = re.sub(r"\s+(?:in|of|according to)\s*,?\s*$", "", " ".join(core.split()))
    return re.sub(r"^(?:the|a|an)\s+", "", core)


def _has_finite_verb(words: list[str]) -> bool:
    """A finite verb after the first word, not inside a relative clause ("the value that was recorded" is fine,
    "Institutions must ensure that ..." is a sentence), or a clause after a preposition ("for why", "on how")."""
    rest = " ".join(words[1:])
    verb, relative = _FINITE_RE.search(rest), _RELATIVE_RE.search(rest)
    clause = re.search(r"\b(?:for|on|of|about)\s+(?:why|how|whether)\b", rest, re.IGNORECASE)
    return bool(clause) or bool(verb and not (relative and relative.start() < verb.start()))


def _is_plural(word: str) -> bool:
    lower = word.casefold()
    return (word.isalpha() and len(word) >= 4 and not word.isupper() and lower.endswith("s")
            and not lower.endswith(("ss", "us", "is", "ics", "ous", "xis")) and lower not in _SINGULAR_S)


def _head_phrase(core: str) -> str:
    """The subject up to its first preposition or relative pronoun: "peak chest deflection" of "... in the test"."""
    head: list[str] = []
    for word in core.split():
        if word.casefold() in _PREPOSITIONS:
            break
        head.append(word)
    return " ".join(head)


def _head_noun(core: str) -> str:
    words = _head_phrase(core).split()
    return words[-1] if words else ""


def _subject_signals(ctx: PairContext, verb: str, subject: str) -> list[Signal]:
    """Template artefacts in the subject of "what is X?": sentence starts, fragments, agreement."""
    core = _subject_core(subject)
    words = core.split()
    if not words:
        return []
    out: list[Signal] = []
    first = words[0].strip("\"'“”")
    if first in _SENTENCE_STARTS:
        out.append(Signal("well_formed", 1, f"template artefact: a sentence start pasted after 'what {verb}' ('{first} ...')"))
        if first in _DEICTIC_STARTS and len(words) <= 2:
            out.append(Signal("standalone", 1, f"deictic subject '{core}': what it refers to is only in the chunk"))
    key_template = len(words) >= 2 and words[-1].casefold() in ("is", "are")  # "what is the Refactoring is?"
    fragment = first in _FRAGMENT_STARTS or words[-1].casefold() in _DANGLING or _has_finite_verb(words)
    if key_template:
        out.append(Signal("well_formed", 1, f"template artefact: a 'Key is:' label pasted as the subject ('{core[:60]}')"))
    elif fragment:
        out += [Signal("well_formed", 1, f"the subject is a sentence fragment ('{core[:60]}')"),
                Signal("standalone", 1, "the subject is a sentence fragment")]
    answer = ctx.answer.strip().casefold()
    says_are = answer.startswith((core.casefold() + " are ", core.casefold() + " were "))
    says_is = answer.startswith((core.casefold() + " is ", core.casefold() + " was "))
    plural = says_are or (_is_plural(_head_noun(core)) and not says_is)
    if verb.casefold() in ("is", "was") and not fragment and plural and not re.search(r"https?|www", core):
        out.append(Signal("well_formed", 2, f"agreement error: 'what {verb}' with the plural '{core[:50]}'"))
    head_words = len(_head_phrase(core).split())
    if head_words > 8:
        out.append(Signal("well_formed", 2, f"the subject runs to {head_words} words (merged cells or pasted text)"))
    if re.search(r"\bhttps?\b|\bwww\b", core, re.IGNORECASE):
        out += [Signal("well_formed", 1, "a URL fragment pasted into the question"),
                Signal("grounded", 2, "a web address split at ':' into a key and a value"),
                Signal("standalone", 2, "the subject is a fragment of a web address")]
    elif re.fullmatch(r"(?:figure|fig\.|table|chart|slide|page|exhibit)\s*[\d.]+", core, re.IGNORECASE):
        out += [Signal("well_formed", 2, f"asks what the label '{core}' is"), Signal("useful", 2, f"asks for the caption of '{core}'")]
    elif not re.search(r"[^\W\d_]{2,}", re.sub(r"\b(?:jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)\b\.?", "", core, flags=re.I)):
        out += [Signal("well_formed", 2, f"the key '{core}' is a date or a number, not a named quantity"),
                Signal("grounded", 2, "a time stamp or number split at ':' into a key and a value"),
                Signal("standalone", 2, "a bare date or number is no subject a user could ask about"),
                Signal("useful", 2, "the key is a date or a number")]
    out += _definition_signals(ctx, core)
    return out


def _definition_signals(ctx: PairContext, core: str) -> list[Signal]:
    """"what is X?" answered by "X is/are <not a definition>" (X is used ..., X is fixed ...)."""
    answer = ctx.answer.strip()
    match = re.match(rf"{re.escape(core)}\s+(?:is|are)\s+(?P<next>[^\W_]+)", answer, re.IGNORECASE)
    if not match or match.group("next").casefold() in _DEFINING:
        return []
    if match.group("next").casefold() == "not":
        return [Signal("well_formed", 2, f"the answer says what '{core}' is not, not what it is")]
    return [Signal("well_formed", 2, f"the answer says something about '{core}' ('{answer[:50]} ...'), not what it is")]


def _korean_form_signals(question: str) -> list[Signal]:
    out = []
    if _KO_ARTEFACT_RE.search(question):
        out.append(Signal("well_formed", 1, "template artefact: an unresolved Korean particle ('은(는)')"))
    singles = [t for t in question.split() if len(t) == 1 and _has_hangul(t)]
    if len(singles) >= 3:
        out.append(Signal("well_formed", 2, f"spaced-out syllables from the page layout ('{' '.join(singles[:4])}')"))
    key = _KO_KEY_RE.search(question)
    if key and len(singles) < 3:
        parts = key.group("key").split()
        if 2 <= len(parts) <= 3 and any(len(p) == 1 and _has_hangul(p) and p not in _KO_ONE_SYLLABLE_WORDS for p in parts):
            out.append(Signal("well_formed", 2, f"a header split by spaces ('{key.group('key')}')"))
    return out


_KO_KEY_RE = re.compile(r"의 (?P<key>[가-힣]+(?: [가-힣]+){1,2}?)(?: 값)?(?:은|는|이|가)? (?:무엇|얼마|몇)")
_KO_ONE_SYLLABLE_WORDS = frozenset("및 등 중 값 수 것 때 총 각 안 더 약 전 후 내 외 간 별 당 즉 또".split())


def _table_key_signals(question: str) -> list[Signal]:
    match = _TABLE_KEY_RE.search(question) or _KO_TABLE_KEY_RE.search(question)
    if not match:
        return []
    column, row = (_QUOTED_RE.sub(" TITLE ", match.group(g)) for g in ("column", "row"))
    out = []
    if len(column.split()) >= 5:
        out += [Signal("grounded", 2, f"a merged-header table cell: the column is '{column[:60]}'"),
                Signal("well_formed", 2, "the column name is several header cells run together")]
    if len(row.split()) >= 10:
        out.append(Signal("well_formed", 2, "the row label is a whole sentence"))
    return out


_QUANTITY_RE = re.compile(
    r"\bwhat\b[^?]{1,80}?\b(?:was|were|is|are)\s+(?:measured|recorded)\b|\bhow (?:much|many|long|far|fast|high|heavy)\b"
    r"|\bat what (?:time|speed)\b|\bby how much\b|얼마|몇\s?(?:명|개|건|회|%)",
    re.IGNORECASE,
)


def _echo_signals(ctx: PairContext) -> list[Signal]:
    """A question that quotes the opening words of its own answer ("what explains the statement beginning ...")."""
    answer = _words(ctx.answer)
    for quoted in _quoted(ctx.question):
        opening = _words(quoted)
        if len(opening) >= 4 and answer[: len(opening)] == opening:
            return [Signal("well_formed", 2, "the answer only restates the statement whose opening words the question quotes"),
                    Signal("standalone", 2, "the only handle is a quoted sentence fragment of the answer")]
    return []


_DOUBLE_VERB_RE = re.compile(
    r"^\W*(?:why|how|when|where|what)\s+(?:does|do|did)\b(?:(?!\b(?:that|which|who|whose|whom|where|when)\b)[^?])*?"
    r"\b(?:are|is|was|were)\b",
    re.IGNORECASE,
)
_DOES_PLURAL_RE = re.compile(r"\b(?:does|is|was|has)\s+(?:many|several|these|those|both|all)\b", re.IGNORECASE)
_DOC_ATTRIBUTE_RE = re.compile(
    r"\bwhat (?:is|are|was|were) the (?P<attribute>[^\"“?]{2,60}?) of the [\"“][^\"”]+[\"”]\s+"
    r"(?:document|presentation|report|deck|book|textbook|paper|manual|guide)\b",
    re.IGNORECASE,
)
DOCUMENT_ATTRIBUTES = frozenset(
    """purpose objective objectives goal goals aim scope title author authors date version summary conclusion conclusions
    result results recommendation recommendations topic subject audience status abstract focus approach method methodology
    outcome outcomes finding findings decision decisions owner deadline agenda location venue publisher edition""".split()
)
_PERSON_ROLE_RE = re.compile(
    r"\b(?:manager|architect|engineer|leader|lead|director|professor|researcher|scientist|specialist|consultant|developer|"
    r"analyst|officer|president|student|author|chair|head of)\b",
    re.IGNORECASE,
)


def _grammar_signals(ctx: PairContext) -> list[Signal]:
    """English grammar slips of templated questions: two finite verbs, "does many", a document's odd attribute,
    a mis-cased name, "what is" about a person."""
    question, out = ctx.question, []
    plain = _QUOTED_RE.sub(" TITLE ", question)
    if _DOUBLE_VERB_RE.search(plain) or _DOES_PLURAL_RE.search(plain):
        out.append(Signal("well_formed", 2, "ungrammatical question (agreement or a second finite verb)"))
    attribute = _DOC_ATTRIBUTE_RE.search(question)
    if attribute and _head_noun(attribute.group("attribute")).casefold() not in DOCUMENT_ATTRIBUTES:
        name = attribute.group("attribute")
        if not set(_words(name)) & set(_words(ctx.answer)):
            out.append(Signal("well_formed", 2, f"asks for 'the {name}' of a document: a label turned into a question that makes no sense"))
    for token in re.findall(r"\b[a-z]+[A-Z]\w*", _QUOTED_RE.sub(" ", question)):
        if token[:1].upper() + token[1:] in ctx.chunk_markdown:
            out.append(Signal("well_formed", 2, f"a mis-cased name ('{token}')"))
            break
    person = re.match(r"(?P<name>(?:[A-Z][a-z]+\s){1,3}[A-Z][a-z]+)\s+is\s+(?:an?|the)\s", ctx.answer.strip())
    if person and re.search(rf"\bwhat is {re.escape(person.group('name'))}\b", question, re.IGNORECASE) and _PERSON_ROLE_RE.search(ctx.answer):
        out += [Signal("well_formed", 2, f"asks 'what is' about a person ({person.group('name')})"),
                Signal("useful", 2, "a contributor's biography, not a fact of the document's subject")]
    return out


def well_formed_signals(ctx: PairContext) -> list[Signal]:
    """Is it a grammatical, real question with a complete, sensible answer?"""
    question = ctx.question.strip()
    out: list[Signal] = []
    if ctx.language == "ko" or _has_hangul(question):
        if not _KO_QUESTION_END_RE.search(question):
            out.append(Signal("well_formed", 2, "does not end as a question"))
        out += _korean_form_signals(question)
    elif not question.endswith(("?", "？")):
        out.append(Signal("well_formed", 2, "does not end with a question mark"))
    repeat = _REPEAT_RE.search(_QUOTED_RE.sub(" ", question))
    if repeat:
        out.append(Signal("well_formed", 1, f"template artefact: repeated word ('{repeat.group(0)}')"))
    elif _REPEAT_PAIR_RE.search(question):
        out.append(Signal("well_formed", 2, f"repeated phrase ('{_REPEAT_PAIR_RE.search(question).group(0)}')"))
    if _BULLET_GLYPH_RE.search(question) or garbage_tokens(_QUOTED_RE.sub(" ", _without_files(question, ctx.file_name))):
        out.append(Signal("well_formed", 2, "bullet glyphs, control characters or layout debris in the question"))
    out += _table_key_signals(question)
    match = _WHAT_IS_RE.search(question)
    if match and ctx.language != "ko":
        out += _subject_signals(ctx, match.group("verb"), match.group("subject"))
    if ctx.language != "ko":
        out += _grammar_signals(ctx)
    out += _echo_signals(ctx)
    if _QUANTITY_RE.search(question) and not re.search(r"\d", ctx.answer):
        out.append(Signal("well_formed", 2, "asks for a measured quantity, but the answer has no number"))
    if _ONE_OF_RE.search(question):
        out.append(Signal("useful", 2, "asks for an arbitrary one of several items: any of them would be right"))
    return out


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
_DOC_NOUN_RE = re.compile(
    r"\b(?:report|study|paper|guide|guideline|manual|handbook|standard|regulation|directive|act|law|bill|"
    r"specification|proposal|protocol|policy|textbook|book|white paper|redpaper|redbook)s?\b"
    r"|보고서|법률안|법안|기본법|규정|지침|기준|약관|규칙|시행령|설명서|매뉴얼",
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
    요약 개요 결과 회의 안건 검토 목차 참고 일정 결정 사항 표 그림 자료 현황 비고 기타 내용 소개 서론 결론 부록 주요 보고 발표""".split()
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
    r"(?!\s+(?:[\"“']|(?:titled|named|called|showing|about)\b|(?:in|of|on|from)\s+(?:the\s+)?[\"“']))",
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
_KO_STOP = frozenset("무엇 무엇인가요 인가요 언제 언제인가요 얼마 얼마인가요 어디 누구 어느 쪽 더 이후 열렸나요 되었나요 나요 및 등 중 각".split())


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
    if len(_tables(ctx.chunk_markdown)) < 2:
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
    r"\b(?:source|sources|reference|references|citation|footnote|copyright|page number|slide number|author|authors|contact|"
    r"e-?mail|phone|fax|url|website|web site|link|version|revision|file name|catalog no|report no|work unit no|"
    r"contract(?: or grant)? no|grant no|isbn|issn|doi|transition|caption|footer|header)\b"
    r"|출처|자료|각주|페이지|문의|연락처",
    re.IGNORECASE,
)
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
    cells: set[str] = set()
    block: list[str] = []
    for line in [*markdown.splitlines(), ""]:
        if line.strip().startswith("|"):
            block.append(line)
            continue
        if block:
            rows = table_rows("\n".join(block))
            cells |= {" ".join(_words(c)) for c in (rows[0] if rows else []) if _words(c)}
            block = []
    return cells


_FURNITURE_RE = re.compile(r"^(?P<page>\d{1,4})\s+(?P<text>[^\d]{5,})$|^(?P<text2>[^\d]{5,}?)\s+(?P<page2>\d{1,4})$")


def page_furniture(answer: str, chunk: str, title: str = "") -> bool:
    """True when the answer is a whole line of the chunk made of a page number and a title (a running header or
    footer such as "Signal Transformations 7" or "4 IBM Cloud Pak for Data on IBM zSystems")."""
    answer = answer.strip()
    if re.fullmatch(r"[-–—]\s*\d{1,4}\s*[-–—]|(?:page|p\.)\s*\d{1,4}(?:\s*(?:of|/)\s*\d{1,4})?", answer, re.IGNORECASE):
        return True  # "- 1 -", "Page 3 of 40"
    match = _FURNITURE_RE.match(answer)
    lines = [ln.strip().strip("#*> ").strip() for ln in chunk.splitlines()]
    whole_line = any(ln == answer or (ln.endswith(answer) and re.fullmatch(r"[\d.\s]*", ln[: -len(answer)])) for ln in lines if ln)
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


def useful_signals(ctx: PairContext) -> list[Signal]:
    """Would a real user ask this, and is the answer a meaningful fact?"""
    out = _section_signals(ctx) + _answer_shape_signals(ctx)
    key = _asked_key(ctx.question) if ctx.language != "ko" else None
    asked = _QUOTED_RE.sub(" ", key or ctx.question)
    if (_TRIVIA_KEY_RE if key or ctx.language == "ko" else _TRIVIA_QUESTION_RE).search(asked):
        out.append(Signal("useful", 2, "asks for a source, citation, page or other document metadata"))
    if _DESCRIBE_RE.search(ctx.question):
        out.append(Signal("useful", 2, "asks what a figure or slide shows: a description, not a fact"))
    if _PICTURE_TEXT_RE.search(ctx.question):
        out.append(Signal("useful", 2, "asks for the literal text on a picture, not for a fact"))
    if _BASELINE_RE.search(ctx.question):
        out.append(Signal("useful", 2, "asks for a baseline or constant value"))
    repeats = ctx.answer_also_in
    numeric = bool(numbers_in(ctx.answer)) and len(_words(ctx.answer)) <= 2
    if repeats >= 2 or (repeats >= 1 and not numeric and len(_words(ctx.answer)) >= 2):
        out.append(Signal("useful", 2, f"the same answer is given in {repeats} other chunk(s): boilerplate or ambiguous"))
    return out


def signals(ctx: PairContext) -> list[Signal]:
    """Every finding of the offline rules on one pair."""
    return grounded_signals(ctx) + well_formed_signals(ctx) + standalone_signals(ctx) + useful_signals(ctx)
