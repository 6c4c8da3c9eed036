"""The generator's data types (Candidate, Handle, ChunkView), Korean particles, text helpers and document handles."""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from functools import lru_cache


@dataclass(frozen=True)
class Candidate:
    """One question-answer pair read off a chunk, before it becomes a row."""

    question: str
    answer: str
    question_type: str
    target_modality: str
    evidence_element_id: str | None = None
    """The table, chart or picture a modality question is about."""
    rule: str = ""
    """The generator rule (source) that made it (``tasks.qa.rules.source_rule``), set by ``generate``."""


@dataclass(frozen=True)
class Handle:
    """What users know a chunk's document and section by (empty strings when unknown).

    ``test_name``/``stage`` come from a test report's header fields; ``title`` is the
    document's real title (never a file name); ``kind`` names the document in questions
    (report, meeting, presentation, document); ``section`` is the chunk's real heading and
    ``section_kind`` says whether it is a slide or a section.
    """

    test_name: str = ""
    stage: str = ""
    title: str = ""
    kind: str = "document"
    section: str = ""
    section_kind: str = "section"
    date: str = ""
    """A meeting's date: a recurring meeting is named by its title and date."""
    running_heads: frozenset[str] = frozenset()
    """The document's page running heads (normalised): never a section's name."""
    doc_kind: str = ""
    """The document's kind read off all its chunks (``tasks.qa.doc_kind``: regulation, protocol, report, ...): some
    rules do not emit in some kinds (``generate.value.kind_gate``); '' when unknown."""


@dataclass(frozen=True)
class ChunkView:
    """What the generator needs of a chunk and its elements."""

    title: str
    language: str
    markdown: str
    tables: Sequence[tuple[str, str]] = ()  # (element_id, markdown table)
    charts: Sequence[tuple[str, str, str]] = ()  # (element_id, chart title, markdown table)
    pictures: Sequence[tuple[str, str]] = ()  # (element_id, OCR text)
    handle: Handle = field(default_factory=Handle)
    heading_path: Sequence[str] = ()


# --- Korean particles ----------------------------------------------------------------

_DIGIT_FINAL = {"0": True, "1": True, "2": False, "3": True, "4": False, "5": False, "6": True, "7": True, "8": True, "9": False}
_LETTER_FINAL = set("LMNRlmnr")  # 엘, 엠, 엔, 알
_RIEUL = 8  # index of ㄹ among the final consonants


def _last_sound(word: str) -> tuple[bool, bool] | None:
    """(has a final consonant, that consonant is ㄹ) of the last pronounced character, or None."""
    for ch in reversed(word.strip()):
        if "\uac00" <= ch <= "\ud7a3":
            final = (ord(ch) - 0xAC00) % 28
            return final != 0, final == _RIEUL
        if ch in _DIGIT_FINAL:
            return _DIGIT_FINAL[ch], ch in "178"
        if ch.isascii() and ch.isalpha():
            return ch in _LETTER_FINAL, ch in "LlRr"
    return None


def has_final_consonant(word: str) -> bool:
    """True when ``word`` ends in a syllable with a final consonant (받침): ``(code - 0xAC00) % 28 != 0``.

    Digits and Latin letters are read the Korean way (1 일, 3 삼; L 엘, M 엠); punctuation is skipped.
    """
    sound = _last_sound(word)
    return bool(sound and sound[0])


PARTICLES = {
    "은/는": ("은", "는"), "이/가": ("이", "가"), "을/를": ("을", "를"), "과/와": ("과", "와"), "으로/로": ("으로", "로")
}


def particle(word: str, pair: str) -> str:
    """The particle of ``pair`` ("은/는", "이/가", "을/를", "과/와", "으로/로") that follows ``word``."""
    with_final, without = PARTICLES[pair]
    sound = _last_sound(word)
    if pair == "으로/로" and sound and sound[1]:
        return without  # ㄹ takes 로: 서울로
    return with_final if sound and sound[0] else without


def josa(word: str, pair: str) -> str:
    """``word`` followed by its particle: ``josa("일시", "은/는") == "일시는"``."""
    return word + particle(word, pair)


# --- text helpers ----------------------------------------------------------------------

_TERMINAL_RE = re.compile(r"[.!?。]['\"”’)]*$|다\.?$")
_REFERENCE_LINE_RE = re.compile(r"^\s*(?:\[\d{1,3}\]|\d{1,3}\.\s+[A-Z][\w'’\-]+,\s+[A-Z]\.)\s*\S")
_TOC_LINE_RE = re.compile(r"(?:\.\s?){4,}\s*\d+\s*$|[·•․‥…]{4,}\s*\d+\s*$|^\s*\d+(?:\.\d+)*\s+[A-Z][^.]{2,80}\s\d{1,3}\s*$")
_NOISE_LINE_RE = re.compile(r"https?://|www\.|^\s*-\s*\d+\s*-\s*$|©|copyright", re.IGNORECASE)
SKIP_HEADINGS_RE = re.compile(
    r"^(?:references?|bibliography|works cited|literature cited|sources|contents|table of contents|index|notices?|"
    r"trademarks?|front cover|back cover|front matter|copyright|acknowledge?ments?|about the authors?|"
    r"참고\s*문헌|목\s*차|차\s*례|색\s*인)$",
    re.IGNORECASE,
)
"""Headings of sections that give no questions (reference lists, tables of contents, boilerplate)."""
_NUMBERING_RE = re.compile(r"^\s*(?:chapter\s+)?\d+(?:\.\d+)*\.?\s+", re.IGNORECASE)


_OCR_PAGE_RE = re.compile(r"(?m)^> \*\*OCR text of page \d+\*\*\n((?:>.*(?:\n|$))+)")
_OCR_HEADING_RE = re.compile(r"^(?:\d+(?:\.\d+)*\.?\s+)?[A-Z][^.:;]{2,60}$")
_OCR_BULLET_RE = re.compile(r"^(?:[-•▪o]\s|\(?[a-z0-9]{1,2}[.)]\s)")


def ocr_pages_as_prose(markdown: str) -> str:
    """The chunk's OCR text of whole pages (``> **OCR text of page N**`` blocks: a scan, or a page whose text layer was
    unreadable) as Markdown prose the rules can read: wrapped lines joined into paragraphs, a short capitalised line
    without end punctuation ("1.1.2 Acceptance criteria") a heading, list items kept apart. OCR of pictures (labels,
    chart debris) stays quoted."""
    def prose(match: re.Match) -> str:
        blocks: list[str] = []
        paragraph: list[str] = []
        for raw in match.group(1).splitlines():
            line = raw[1:].strip()
            ended = not paragraph or paragraph[-1][-1:] in ".:;"  # a heading stands after a finished sentence
            heading = _OCR_HEADING_RE.match(line) and len(line.split()) <= 8 and ended
            if not line or heading or _OCR_BULLET_RE.match(line):
                if paragraph:
                    blocks.append(" ".join(paragraph))
                paragraph = []
                if heading:
                    blocks.append(f"#### {line}")
                    continue
            if line:
                paragraph.append(line)
        if paragraph:
            blocks.append(" ".join(paragraph))
        return "\n\n".join(blocks) + "\n"
    return _OCR_PAGE_RE.sub(prose, markdown)


def strip_numbering(heading: str) -> str:
    """A heading without its chapter/section number: "1.2 Ride-Down" -> "Ride-Down"."""
    return _NUMBERING_RE.sub("", heading).strip()


def is_skipped_heading(heading: str) -> bool:
    """True for reference, table-of-contents and boilerplate headings (References, Contents, 참고문헌, 목차, ...)."""
    return bool(SKIP_HEADINGS_RE.match(strip_numbering(heading).strip(" :#*")))


def is_reference_or_toc_line(line: str) -> bool:
    """A bibliography entry ("[12] Author, ..."), a contents line ("1.2 Title ....... 12") or page furniture."""
    return bool(_REFERENCE_LINE_RE.match(line) or _TOC_LINE_RE.search(line) or _NOISE_LINE_RE.search(line))


def skipped_chunk(view: ChunkView) -> bool:
    """Chunks that give no questions: a skipped heading, or a body made mostly of reference or contents lines."""
    own = view.heading_path[-1] if view.heading_path else view.title.split(" / ")[-1]
    if own and is_skipped_heading(own):
        return True  # the chunk's own heading: a contents page that heads the whole outline must not hide it
    lines = [ln for ln in view.markdown.splitlines()[1:] if ln.strip() and not ln.lstrip().startswith(("|", ">", "!["))]
    if len(lines) < 3:
        return False
    return sum(is_reference_or_toc_line(ln) for ln in lines) >= 0.3 * len(lines)


def _content_blocks(markdown: str) -> Iterator[str]:
    """Prose blocks of a chunk: headings, tables, quotes, images and skipped sections left out."""
    skipping = False
    for block in re.split(r"\n\s*\n", markdown):
        block = block.strip()
        if not block:
            continue
        if block.startswith("#"):
            skipping = is_skipped_heading(block.lstrip("#").strip())
            continue
        if skipping or block.startswith(("|", ">", "![", "**Chart")) or block == "**Speaker notes**":
            continue
        yield block


_BULLET_RE = re.compile(r"^\s*(?:[-*•▪◦]|\d{1,2}[.)])\s+")


def text_lines(markdown: str) -> list[str]:
    """Single lines of prose and list items (bullet markers kept), without reference/contents lines."""
    return [ln.strip() for block in _content_blocks(markdown) for ln in block.splitlines()
            if ln.strip() and not is_reference_or_toc_line(ln)]


def paragraphs(markdown: str) -> list[str]:
    """Prose paragraphs (list items one each); a paragraph cut by a page break is joined to its continuation (cached
    per text: several rules read the same chunk's paragraphs and sentences)."""
    return list(_paragraphs(markdown))


@lru_cache(maxsize=1024)
def _paragraphs(markdown: str) -> tuple[str, ...]:
    out: list[str] = []
    for block in _content_blocks(markdown):
        lines = [ln.strip() for ln in block.splitlines() if ln.strip() and not is_reference_or_toc_line(ln)]
        if not lines:
            continue
        items = [_BULLET_RE.sub("", ln) for ln in lines] if all(_BULLET_RE.match(ln) for ln in lines) else [" ".join(lines)]
        for item in items:
            if out and not _TERMINAL_RE.search(out[-1]) and item[:1].islower():
                out[-1] = f"{out[-1]} {item}"
            else:
                out.append(item)
    return tuple(out)


_SENTENCE_SPLIT_RE = re.compile(r"(?<=[.!?])\s+(?=[\"“(]?[A-Z0-9])|(?<=다\.)\s+")
_ABBREVIATION_END_RE = re.compile(r"\b(?:e\.g|i\.e|etc|Fig|No|Eq|vs|Dr|Mr|Ms|St|U\.S|approx|cf|al)\.$")


def sentences(markdown: str) -> list[str]:
    """Complete sentences of the chunk's prose (ending in . ! ? and starting with a capital, digit or Hangul; cached
    per text, as :func:`paragraphs`)."""
    return list(_sentences(markdown))


@lru_cache(maxsize=1024)
def _sentences(markdown: str) -> tuple[str, ...]:
    out: list[str] = []
    for paragraph in _paragraphs(markdown):
        pieces: list[str] = []
        for piece in _SENTENCE_SPLIT_RE.split(paragraph):
            if pieces and _ABBREVIATION_END_RE.search(pieces[-1]):
                pieces[-1] = f"{pieces[-1]} {piece}"
            else:
                pieces.append(piece)
        out.extend(p.strip() for p in pieces if _complete(p.strip()))
    return tuple(out)


def _complete(sentence: str) -> bool:
    if not (20 <= len(sentence) <= 400) or not _TERMINAL_RE.search(sentence):
        return False
    if not (sentence[0].isupper() or sentence[0].isdigit() or "\uac00" <= sentence[0] <= "\ud7a3"):
        return False
    return sentence.count("(") == sentence.count(")") and sentence.count("“") == sentence.count("”")


def _lower_first(phrase: str, context: str) -> str:
    """Lower-case the first word when it is capitalised only because it opened a sentence: an article,
    a word the chunk also writes in lower case, or the head of a phrase whose other words are lower case."""
    first, _, rest = phrase.partition(" ")
    if first in ("A", "An", "The"):
        return f"{first.lower()} {rest}".strip()
    if not first[:1].isupper() or not first[1:].islower() or not first.replace("-", "").isalpha():
        return phrase
    lowered = first.lower()
    rest_plain = bool(rest) and all(w.islower() or not any(c.isalpha() for c in w) for w in rest.split())
    singular = lowered[:-1] if lowered.endswith("s") and not lowered.endswith("ss") else ""
    common = not rest and (lowered.endswith(_COMMON_NOUN_SUFFIXES) or singular.endswith(_COMMON_NOUN_SUFFIXES + ("er", "or")))
    if lowered in _ARTICLES or rest_plain or common or re.search(rf"\b{re.escape(lowered)}\b", context):
        return f"{lowered} {rest}".strip()
    return phrase


_COMMON_NOUN_SUFFIXES = ("ment", "tion", "sion", "ness", "ity", "ance", "ence", "ism", "ure", "age", "ing", "ics", "ery")
_COMMON_LABELS = {"driver", "passenger", "threshold", "action", "owner", "result", "results", "limit", "value", "total",
                  "average", "mean", "rear", "front", "left", "right", "status", "date", "time", "target", "measured"}


def label_phrase(label: str, context: str) -> str:
    """A table or chart label as it reads inside a question: "Chest deflection (mm)" -> "chest deflection (mm)",
    "Driver" -> "driver"; names and acronyms ("Priya Raman", "HIC15", "Less than HS") keep their case."""
    first, _, rest = label.partition(" ")
    if not first[:1].isupper() or not first[1:].islower() or not first.replace("-", "").isalpha():
        return label
    if not rest:
        return (
            label.lower()
            if label.lower() in _COMMON_LABELS or re.search(rf"\b{re.escape(label.lower())}\b", context)
            else label
        )
    plain = all(w.islower() or w.isupper() or not any(c.isalpha() for c in w) or w.startswith("(") for w in rest.split())
    return f"{first.lower()} {rest}" if plain else label


# --- handles ---------------------------------------------------------------------------

_ARTICLES = {"a", "an", "the"}
_GENERIC_TITLE_RE = re.compile(
    r"^(?:slide|page|pages|series|chapter|part|section|appendix|figure|table)\s*[\dIVXLC\-–]*$|^(?:untitled|title|report|"
    r"document|presentation|powerpoint presentation|slides?|agenda|introduction|overview|summary|conclusions?|"
    r"front matter|front cover|back cover|contents|notes|draft|test|results?|[^\w]*)$",
    re.IGNORECASE,
)
_DANGLING_END_RE = re.compile(
    r"(?:\s(?:of|for|and|or|the|a|an|to|in|on|with|by|from)|위한|대한|관한|따른|통한|및|:|,|-)$", re.IGNORECASE
)


def real_title(text: str | None, file_name: str = "") -> bool:
    """True for a title users know a document or section by: not a file name, not "Slide N"/"Pages 1-10"/
    "Report", not OCR noise, not a fragment that stops mid-phrase, at most 16 words."""
    title = (text or "").strip()
    if not title or len(title) > 120 or len(title.split()) > 16 or _GENERIC_TITLE_RE.match(strip_numbering(title)):
        return False
    if re.search(r"\.(?:pptx?|pdf|docx?|xlsx?)\b|[|\\{}<>]|https?:", title, re.IGNORECASE):
        return False
    stem = re.sub(r"\.[A-Za-z0-9]+$", "", file_name).lower()
    normalised = re.sub(r"[\W_]+", " ", title.lower()).strip()
    if stem and normalised in {stem, re.sub(r"[\W_]+", " ", stem).strip()}:
        return False
    letters = sum(ch.isalpha() for ch in title)
    if letters < 3 or letters < 0.6 * len(title.replace(" ", "")):
        return False
    return not _DANGLING_END_RE.search(title)


def _doc_phrase_en(h: Handle) -> str:
    if h.test_name:
        name = h.test_name if re.search(r"\btest$", h.test_name, re.IGNORECASE) else f"{h.test_name} test"
        return f"the {name}" + (f" ({h.stage})" if h.stage and h.stage.lower() not in h.test_name.lower() else "")
    if not h.title:
        return ""
    if h.kind == "standard":
        return h.title  # an identifier ("FMVSS No. 201") is a name, not a quoted title
    if h.kind == "meeting":
        name = f"the {h.title}" if re.search(r"\bmeeting\b", h.title, re.IGNORECASE) else f'the "{h.title}" meeting'
        return f"{name} of {h.date}" if h.date else name
    article = "" if re.match(r"(?:the|a|an)\s", h.title, re.IGNORECASE) else "the "
    return f'{article}"{h.title}" {h.kind}'


def _doc_phrase_ko(h: Handle) -> str:
    if h.test_name:
        name = h.test_name if h.test_name.endswith("시험") else f"{h.test_name} 시험"
        return name + (f"({h.stage})" if h.stage and h.stage not in h.test_name else "")
    if not h.title:
        return ""
    if h.kind == "standard":
        return h.title
    noun = {"meeting": "회의", "report": "보고서", "presentation": "발표 자료"}.get(h.kind, "문서")
    name = f"'{h.title}'" if h.title.endswith(noun) else f"'{h.title}' {noun}"
    return f"{h.date} {name}" if h.date and h.kind == "meeting" else name


def doc_phrase(view: ChunkView) -> str:
    """How a question names the chunk's document ("the FO-2024-017 ODB 64 km/h test (Prototype P2)"), or ''."""
    return (_doc_phrase_ko if view.language == "ko" else _doc_phrase_en)(view.handle)


def _section_ok(view: ChunkView) -> bool:
    section, doc = view.handle.section, view.handle.title
    return bool(section) and section.lower() != doc.lower() and len(section.split()) <= 16


def where(view: ChunkView, with_section: bool = True) -> str:
    """The document phrase, with the chunk's heading when asked for and known; '' when nothing names the chunk."""
    doc, h = doc_phrase(view), view.handle
    if not (with_section and _section_ok(view)):
        return doc if doc else (where(view, True) if _section_ok(view) else "")
    if view.language == "ko":
        return f"{doc}의 '{h.section}'" if doc else f"'{h.section}'"
    kind = "slide" if h.section_kind == "slide" else "section"
    return f'the "{h.section}" {kind} of {doc}' if doc else f'the "{h.section}" {kind}'


def _capitalise(question: str) -> str:
    return question[:1].upper() + question[1:]


# --- extraction artefacts ------------------------------------------------------------------------

_GARBLED_RE = re.compile(r"\d\s?°?C?\s\+\s?\d|\b[a-z]{2,}-\s(?!(?:and|or|to|nor|as|through)\b)[a-z]{2,}"
                         r"|(?<=[a-z\d])P\d+P?\b|\b[A-Za-z]?[a-z]{3,}\d{1,2}\b|\d\s?(?:g|mm|kN|N|ms)\d\b"
                         r"|\d\s?°\s{2,}\d")
"""An extraction artefact in an answer: "20 + 5 °C", "-10° + 1 °C", "-10 °C + 1 °C" (± read as +), "al- cohol" (a
line-break hyphen left in a word; "front- and rear-facing" is none), "15°  10°" (the ± lost), "kN/mP2P" (a
superscript), "vehicles10", "Regulation11" (a footnote mark glued to a word)."""


def garbled(answer: str) -> bool:
    """True when the answer carries an extraction artefact (``_GARBLED_RE``), or words whose letters the PDF font lost
    ("behind the d ive ’s se t" for "driver's seat": two or more stray single letters): not grounded as written."""
    stray = re.findall(r"(?:^|(?<=\s))(?<!\d\s)[b-w](?=\s|’|$)", answer)  # not "a", the axes x-z, nor a unit "100 g"
    return bool(_GARBLED_RE.search(answer)) or len(stray) >= 2
