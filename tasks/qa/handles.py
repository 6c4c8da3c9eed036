"""Validating the names a question gives a document or a section, and finding a better one.

A handle is what users know a document by. The titles a PDF offers are often not one: a page running head
("Nat'l Highway Traffic Safety Admin., DOT § 571.201" on every page), a cover placeholder ("Agreement",
"책갈피"), a document symbol ("E/ECE/324/Add"), a heading the PDF repeats ("X X"), or a name with mis-decoded
glyphs (a middle dot read as the jamo 'ᆞ', ligatures). Each check is a registered generator rule; a title that
fails them is not used, and a regulation or standard is named by the identifier its own text uses most
("Regulation No. 16", "Standard No. 201") instead. A question that would need a handle no check passes is
not generated (``rules.where`` returns '').
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from collections.abc import Sequence

from tasks.qa.registry import rule

_JAMO_DOTS = str.maketrans({"\u119e": "·", "\u318d": "·", "\u2027": "·"})


def clean_name(text: str) -> str:
    """A name with its glyphs repaired: NFKC (ligatures ﬁ -> fi), a mis-decoded middle dot (ᆞ) made '·', spaces squeezed."""
    text = unicodedata.normalize("NFKC", text or "").translate(_JAMO_DOTS)
    return re.sub(r"\s+", " ", text).strip()


def _norm(text: str) -> str:
    return " ".join(re.findall(r"[^\W_]+", clean_name(text).casefold()))


@rule("generate.handle.doubled", "generate", "a candidate document title", "its words repeat twice ('X X'): use one half")
def undouble(title: str) -> str:
    """The title without a repetition of itself ("Roof Strength Roof Strength" -> "Roof Strength")."""
    words = title.split()
    half = len(words) // 2
    if len(words) >= 2 and len(words) % 2 == 0 and _norm(" ".join(words[:half])) == _norm(" ".join(words[half:])):
        return " ".join(words[:half])
    return title


_PLACEHOLDER_WORDS = frozenset("agreement document report presentation untitled title slide slides contents draft "
                               "template annex appendix 책갈피 제목 목차 문서".split())


_LISTED_RE = re.compile(r"\d(?:[.,]\d+)?\s?%|(?:[^·]+·){3,}")
"""A percentage, or four or more items separated by "·": a table's header row read as a title."""


def table_header(title: str) -> bool:
    """True when a title or heading is a table's header row (``_LISTED_RE``), not a name."""
    return bool(_LISTED_RE.search(title))


@rule("generate.handle.placeholder", "generate", "a candidate document title",
      "one word without digits, a known placeholder, a document symbol without lower-case words (E/ECE/324/Add), or "
      "a table header row (a percentage, four or more items listed with '·': '할인점·주유·온라인쇼핑몰 1.5% 빅포인트 적립 ...')")
def placeholder(title: str) -> bool:
    """True when the title names no document: a placeholder word, one bare word, a filing symbol or a table's header."""
    words = re.findall(r"[^\W_]+", title)
    if not words or _norm(title) in _PLACEHOLDER_WORDS or table_header(title):
        return True
    if len(words) == 1 and not re.search(r"\d", title) and not title.isupper():
        return True
    return "/" in title and not re.search(r"[a-z]{3,}\s+[a-z]{3,}", title)


_SECTION_HEADING_RE = re.compile(
    r"^\s*(?:S\d+(?:\.\d+)*[a-z]?\b|§|(?:Figure|Fig\.|Table|Annex|Appendix)\s+(?:\d+[a-z]?|[A-Z])\b|\d+(?:\.\d+)+\.?\s)"
)


@rule("generate.handle.section_heading", "generate", "a candidate document title",
      "it is a paragraph, section, figure or table heading ('S9.2 Hybrid and Electric Vehicles ...', '§ 571.227 ...', "
      "'Figure 14a to § 571.213b ...'): an extract's first page often ends the standard before it")
def section_heading(title: str) -> bool:
    """True when the title is the heading of a numbered paragraph, a section symbol, a figure, a table or an annex."""
    return bool(_SECTION_HEADING_RE.match(title))


@rule("generate.handle.running_head", "generate", "a candidate title and the document's chunks",
      "it heads two or more chunks that are not parts of one split section (a page running head)")
def running_heads(titles_with_parts: Sequence[tuple[str, int]]) -> set[str]:
    """The titles (normalised, digits masked) that head two or more chunks starting a section (``part_index`` 0):
    running heads, which differ from page to page only in their numbers."""
    counts = Counter(digitless(t) for t, part in titles_with_parts if part == 0 and t)
    return {t for t, n in counts.items() if n >= 2}


def is_running_head(title: str, heads: set[str]) -> bool:
    """True when ``title`` (or one level of it, "A / B") is among the running ``heads``."""
    return digitless(title) in heads or any(digitless(p) in heads for p in title.split(" / "))


_IDENTIFIER_RES = (
    (re.compile(r"§\s?571\.(\d{3}[a-z]?)\b"), "FMVSS No. {0}"),  # 49 CFR 571: the Federal Motor Vehicle Safety Standards
    (re.compile(r"\bFMVSS\s+(?:No\.\s?)?(\d{3}[a-z]?)\b"), "FMVSS No. {0}"),
    (re.compile(r"\b(?:UN\s+)?Regulation\s+No\.\s?(\d{1,3})\b"), "UN Regulation No. {0}"),
    (re.compile(r"\bStandard\s+No\.\s?(\d{3}[a-z]?)\b"), "Standard No. {0}"),
)


def _found(text: str) -> list[tuple[int, str]]:
    return sorted((m.start(), form.format(*m.groups())) for pattern, form in _IDENTIFIER_RES for m in pattern.finditer(text))


@rule("generate.handle.identifier", "generate", "the chunk titles and first pages of a document whose title failed the checks",
      "the standard or regulation number its running heads repeat, else the first one its first pages name, becomes its name")
def identifier(titles: Sequence[str], first_pages: Sequence[str]) -> str:
    """The identifier a regulation or standard goes by ("FMVSS No. 201", "UN Regulation No. 16"), or ''.

    Its running heads name it on every page (two titles at least); otherwise its cover names it before any
    other regulation it cites."""
    in_titles = Counter(name for title in titles for _, name in _found(title))
    if in_titles and in_titles.most_common(1)[0][1] >= 2:
        return in_titles.most_common(1)[0][0]
    for text in first_pages:
        found = _found(text)
        if found:
            return found[0][1]
    return ""


def digitless(text: str) -> str:
    """The normalised text without its digits: running heads of one family differ only in numbers."""
    return re.sub(r"\d+", "#", _norm(text))


_LOAD_CASE_WORDS = frozenset(
    "odb mdb fwrb fwdb awmdb ae-mdb pdb ncap frontal front full width wide rigid deformable offset moderate small overlap "
    "side pole oblique lateral rear whiplash sled roof crush rollover barrier impact crash test tests kph km/h kmh mph "
    "deg degree degrees ° % percent and with the at vs".split())
_LOAD_CASE_TOKEN_RE = re.compile(r"[\w/°%\-]+")


@rule("generate.handle.load_case", "generate", "a test report's test name from its header fields",
      "a name made only of a standard load case ('ODB 64 kph', '64 km/h frontal offset test': configuration words and "
      "numbers with units) names no test: every programme runs it, so it is not used as the handle on its own")
def load_case_only(test_name: str) -> bool:
    """True when the test name is a standard load case and nothing else: no test number, vehicle or programme."""
    tokens = _LOAD_CASE_TOKEN_RE.findall(test_name.lower())
    if not tokens:
        return False
    units = re.compile(r"\d+(?:[.,]\d+)?(?:kph|km/h|kmh|mph|deg|°|%)?")
    return all(t in _LOAD_CASE_WORDS or units.fullmatch(t) for t in tokens)


_SUBTITLE_SKIP_RE = re.compile(r"^\s*(?:#|!\[|>|\||[-*]\s*\w+\s*[:：])")
"""Lines of a title slide that are no subtitle: its heading, a picture, a description, a table, a "Key: value" field."""


@rule("generate.handle.title_slide_subtitle", "generate", "a deck whose stored title and title-slide heading both fail "
      "the checks ('Report')",
      "the first text line of the title slide that reads as a name (three or more words, mostly letters, at most 16 "
      "words, its text boxes joined: 'Euro NCAP | Frontal-Impact against Rigid Wall ...') names the deck")
def title_slide_subtitle(markdown: str) -> str:
    """The title slide's first line that reads as a name (text boxes joined by ' | ' read as one phrase), or ''."""
    for line in markdown.splitlines():
        if not line.strip() or _SUBTITLE_SKIP_RE.match(line):
            continue
        name = clean_name(" ".join(part.strip() for part in line.split(" | ") if part.strip()))
        words = re.findall(r"[^\W\d_]{2,}", name)
        letters = sum(ch.isalpha() for ch in name)
        if len(words) >= 3 and len(name.split()) <= 16 and letters >= 0.6 * len(name.replace(" ", "")):
            return "" if section_heading(name) else name
        return ""  # only the first text line of the slide is its subtitle
    return ""
