"""The heuristic provider's QA generator: well-formed, standalone pairs read straight off a chunk.

Every question names what users know the document by (the test of a report, the title of a
meeting or book, the chapter or slide heading), never the file name or "Slide N". Every answer
is a complete span of the chunk: a measured value, a decision, a definition sentence, a reason.

Sources, in the order they are mixed: table results (a named row's value for a named column,
the highest row of a numeric column, measured values against a limit column), chart results (a
named series' peak and its value), key-value facts (question frames per key), measurements and
changes stated in text, definitions of real terms, real "why" questions, the first step of a
named procedure, and the title printed on a picture whose OCR text reads as words. Reference
lists, tables of contents and boilerplate sections give no questions; when no well-formed
question can be made from a fact, the fact is skipped.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

from ragprep.markdown import KEY_VALUE_RE, parse_number, table_rows


@dataclass(frozen=True)
class Candidate:
    """One question-answer pair read off a chunk, before it becomes a row."""

    question: str
    answer: str
    question_type: str
    target_modality: str
    evidence_element_id: str | None = None
    """The table, chart or picture a modality question is about."""


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


PARTICLES = {"은/는": ("은", "는"), "이/가": ("이", "가"), "을/를": ("을", "를"), "과/와": ("과", "와"), "으로/로": ("으로", "로")}


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
    """Prose paragraphs (list items one each); a paragraph cut by a page break is joined to its continuation."""
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
    return out


_SENTENCE_SPLIT_RE = re.compile(r"(?<=[.!?])\s+(?=[\"“(]?[A-Z0-9])|(?<=다\.)\s+")
_ABBREVIATION_END_RE = re.compile(r"\b(?:e\.g|i\.e|etc|Fig|No|Eq|vs|Dr|Mr|Ms|St|U\.S|approx|cf|al)\.$")


def sentences(markdown: str) -> list[str]:
    """Complete sentences of the chunk's prose (ending in . ! ? and starting with a capital, digit or Hangul)."""
    out: list[str] = []
    for paragraph in paragraphs(markdown):
        pieces: list[str] = []
        for piece in _SENTENCE_SPLIT_RE.split(paragraph):
            if pieces and _ABBREVIATION_END_RE.search(pieces[-1]):
                pieces[-1] = f"{pieces[-1]} {piece}"
            else:
                pieces.append(piece)
        out.extend(p.strip() for p in pieces if _complete(p.strip()))
    return out


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
        return label.lower() if label.lower() in _COMMON_LABELS or re.search(rf"\b{re.escape(label.lower())}\b", context) else label
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
_DANGLING_END_RE = re.compile(r"(?:\s(?:of|for|and|or|the|a|an|to|in|on|with|by|from)|위한|대한|관한|따른|통한|및|:|,|-)$", re.IGNORECASE)


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


# --- key-value facts -------------------------------------------------------------------

KEY_FRAMES_EN: dict[str, str] = {
    "date": "On what date was {doc} held?",
    "meeting date": "On what date was {doc} held?",
    "test date": "On what date was {doc} run?",
    "time": "At what time was {doc} held?",
    "location": "Where was {doc} held?",
    "place": "Where was {doc} held?",
    "venue": "Where was {doc} held?",
    "site": "At which site was {doc} run?",
    "attendees": "Who attended {doc}?",
    "participants": "Who took part in {doc}?",
    "chair": "Who chaired {doc}?",
    "organizer": "Who organised {doc}?",
    "decision": "What was decided in {doc}?",
    "decisions": "What was decided in {doc}?",
    "owner": "Who is the owner named in {doc}?",
    "due": "What is the due date given in {doc}?",
    "due date": "What is the due date given in {doc}?",
    "deadline": "What is the deadline given in {doc}?",
    "next meeting": "When is the next meeting after {doc}?",
    "dummy": "Which dummy was used in {doc}?",
    "dummies": "Which dummies were used in {doc}?",
    "barrier": "What barrier was used in {doc}?",
    "restraints": "Which restraints were fitted in {doc}?",
    "restraint": "Which restraint was fitted in {doc}?",
    "seat": "Which seat was tested in {doc}?",
    "vehicle": "Which vehicle was tested in {doc}?",
    "speed": "What was the speed in {doc}?",
    "impact speed": "What was the impact speed in {doc}?",
    "test speed": "What was the test speed in {doc}?",
    "region": "For which region was {doc} run?",
    "purpose": "What was the purpose of {doc}?",
    "objective": "What was the objective of {doc}?",
    "result": "What was the result of {doc}?",
    "conclusion": "What was the conclusion of {doc}?",
    "department": "Which department held {doc}?",
}
"""Question frames per (lower-cased) key; other keys get the generic, plural-aware frame."""

KEY_FRAMES_KO: dict[str, str] = {
    "일시": "{doc_josa_topic} 언제 열렸나요?",
    "날짜": "{doc_josa_topic} 언제 열렸나요?",
    "장소": "{doc_josa_topic} 어디에서 열렸나요?",
    "참석자": "{doc}에 참석한 사람은 누구인가요?",
    "참석": "{doc}에 참석한 사람은 누구인가요?",
    "부서": "{doc_josa_object} 주관한 부서는 어디인가요?",
    "다음 회의": "{doc} 이후 다음 회의는 언제인가요?",
    "결정": "{doc}에서 무엇이 결정되었나요?",
    "결정 사항": "{doc}에서 무엇이 결정되었나요?",
    "목적": "{doc}의 목적은 무엇인가요?",
}

SKIPPED_KEYS = {"test name", "stage", "source", "sources", "note", "notes", "page", "slide", "figure", "table",
                "시험명", "단계", "자료", "출처", "비고", "주"}
"""Keys that name the handle itself or are trivia (citations, figure numbers, footnotes)."""

_KEY_RE = re.compile(r"^[A-Za-z가-힣][A-Za-z가-힣 /&'\-]{0,38}[A-Za-z가-힣]$|^[A-Za-z가-힣]$")
_KEY_STOPWORDS = {"is", "are", "was", "were", "the", "this", "that", "what", "how", "why", "use", "case", "step", "note", "here"}


def _clean_key(raw: str) -> str | None:
    key = re.sub(r"^[\W_]+", "", raw).strip()
    if not _KEY_RE.match(key) or len(key.split()) > 4:
        return None
    if key.lower() in SKIPPED_KEYS or any(w.lower() in _KEY_STOPWORDS for w in key.split()):
        return None
    return key


def _plural(noun: str) -> bool:
    last = noun.split()[-1].lower()
    return last.endswith("s") and not last.endswith(("ss", "us", "is", "ics"))


def key_value_question(key: str, doc: str, language: str, generic: bool = True) -> str | None:
    """A natural question for a ``Key: value`` fact of ``doc``: a frame for common keys, else (when ``generic``)
    a grammatical "What is the <key> of <doc>?" with the key lower-cased and the verb agreeing with it."""
    if language == "ko":
        frame = KEY_FRAMES_KO.get(key)
        if frame:
            return frame.format(doc=doc, doc_josa_topic=josa(doc, "은/는"), doc_josa_object=josa(doc, "을/를"))
        return f"{doc}의 {josa(key, '은/는')} 무엇인가요?" if generic else None
    frame = KEY_FRAMES_EN.get(key.lower())
    if frame:
        return _capitalise(frame.format(doc=doc))
    if not generic:
        return None
    noun = key if key.isupper() and len(key) <= 6 else key[:1].lower() + key[1:]
    verb = "are" if _plural(noun) else "is"
    return f"What {verb} the {noun} of {doc}?"


_KEY_PRIORITY = ("purpose", "objective", "decision", "decisions", "result", "conclusion", "목적", "결정", "결정 사항")
"""Keys whose facts are asked first: what a test was for and what a meeting decided."""


def _key_value_candidates(view: ChunkView) -> Iterator[Candidate]:
    doc = doc_phrase(view) or where(view)
    if not doc or view.handle.kind == "standard":
        return  # a regulation's "Key: value" lines are form fields and spec cells, not facts "of" the regulation
    found: list[tuple[int, Candidate]] = []
    for line in text_lines(view.markdown):
        match = KEY_VALUE_RE.match(line)
        if not match:
            continue
        key, value = _clean_key(match.group("key")), match.group("value").strip()
        if not key or len(value) < 2 or value.startswith("//") or _handle_echo(value, view) or _clause_value(value):
            continue
        question = key_value_question(key, doc, view.language, generic=view.handle.kind != "document")
        if question:
            first = value.split()[0]
            qtype = "numeric" if parse_number(first.rstrip("%")) is not None else "factual"
            rank = 0 if key.lower() in _KEY_PRIORITY else 1
            found.append((rank, Candidate(question, value, qtype, "text")))
    yield from (candidate for _, candidate in sorted(found, key=lambda item: item[0]))


_CLAUSE_VALUE_OPENERS = {"but", "and", "or", "so", "because", "which", "that", "this", "it", "they", "there", "if", "when",
                         "while", "although", "let's", "lets", "let", "then", "also", "we", "you", "i"}


def _clause_value(value: str) -> bool:
    """A value that is a clause fragment ("but let's step back ..."), not a fact."""
    words = value.split()
    return words[0].lower().strip(",;") in _CLAUSE_VALUE_OPENERS or (
        len(words) >= 6 and words[0][:1].islower() and not _TERMINAL_RE.search(value)
    )


def _handle_echo(value: str, view: ChunkView) -> bool:
    h = view.handle
    return any(v and value.strip().lower() == v.lower() for v in (h.test_name, h.stage, h.title, h.date))


# --- measurements and changes stated in text ---------------------------------------------

UNITS = r"(?:km/h|m/s2|m/s|mm|cm|ms|kNm|kN|Nm|kg|kHz|Hz|g|N|s|m|%|percent|degrees?|deg|litres?|liters?|bar|kPa|MPa|V|A|W|kW)"
_MEASURE_EN_RE = re.compile(
    rf"^(?P<metric>[A-Z][A-Za-z][A-Za-z\- ]{{1,58}}?)\s+(?:(?:measured\s+)?(?:at|of)\s+)?(?P<value>\d[\d.,]*\s?{UNITS})$"
)
_MEASURE_KO_RE = re.compile(r"^(?P<metric>[가-힣][가-힣A-Za-z0-9 ]{1,38}?)\s+(?P<value>\d[\d.,]*\s?(?:ms|mm|km/h|kN|g|%|도|초|명|개|건))$")
_CHANGE_RE = re.compile(
    r"^(?P<subj>[A-Z][\w\- ]{1,50}?) (?P<verb>improved|dropped|decreased|increased|fell|rose|grew|declined|was reduced)"
    rf" by (?P<value>\d[\d.,]*\s?{UNITS})(?P<rest>[^.;]*)\.$"
)
_SHARE_RE = re.compile(
    r"^(?P<value>(?:(?:About|Around|Roughly|Nearly|Almost|Over|Under|Some)\s)?\d+(?:\.\d+)?\s?(?:%|percent)) of "
    r"(?P<rest>(?:all |the )?[a-z][\w\-]*(?: [\w\-]+){0,4} (?:are|is|were|was|do|does|did|have|has|will|can|occur|occurs|"
    r"use|uses|used|require|requires|hold|holds|report|reported|say|said)\b[^.;:]{3,120})\.?$"
)
_CHANGE_BASE = {"improved": "improve", "dropped": "drop", "decreased": "decrease", "increased": "increase", "fell": "fall",
                "rose": "rise", "grew": "grow", "declined": "decline", "was reduced": "reduce"}


def _measurement_candidates(view: ChunkView) -> Iterator[Candidate]:
    doc = doc_phrase(view) or where(view)
    if not doc:
        return
    context = view.markdown
    for line in text_lines(view.markdown):
        line = _BULLET_RE.sub("", line).strip()
        if view.language == "ko":
            match = _MEASURE_KO_RE.match(line)
            if match:
                metric = match.group("metric").strip()
                yield Candidate(f"{doc}에서 {josa(metric, '은/는')} 얼마였나요?", match.group("value"), "numeric", "text")
            continue
        match = _MEASURE_EN_RE.match(line)
        if match and not has_clause_word(match.group("metric")):
            metric = _lower_first(match.group("metric").strip(), context)
            yield Candidate(f"What was the {metric} in {doc}?", match.group("value"), "numeric", "text")
            continue
        share = _SHARE_RE.match(line)
        if share and view.language == "en":
            place = where(view)
            yield Candidate(f"What share of {share.group('rest')}, according to {place}?", share.group("value"), "numeric", "text")
            continue
        change = _CHANGE_RE.match(line)
        if change and not has_clause_word(change.group("subj")):
            subj, rest = _lower_first(change.group("subj"), context), change.group("rest").split(",")[0].rstrip()
            question = f"By how much did {subj} {_CHANGE_BASE[change.group('verb')]}{rest} in {doc}?"
            yield Candidate(question, change.group("value"), "numeric", "text")


# --- definitions -------------------------------------------------------------------------

_CLAUSE_WORDS = {
    "this", "that", "these", "those", "it", "its", "they", "them", "their", "there", "here", "we", "our", "you", "your",
    "i", "he", "she", "his", "her", "both", "all", "each", "every", "some", "many", "most", "such", "other", "another",
    "any", "no", "none", "one", "several", "few", "whatever", "whichever", "whoever", "if", "when", "while", "although",
    "though", "because", "since", "as", "so", "but", "or", "nor", "however", "therefore", "thus", "then", "also",
    "despite", "after", "before", "how", "what", "why", "where", "who", "which", "whose", "whom", "more", "less", "only",
    "just", "even", "finally", "first", "similarly", "must", "can", "could", "should", "would", "will", "may", "might",
    "shall", "do", "does", "did", "is", "are", "was", "were", "be", "been", "has", "have", "had", "not", "to", "than",
    "not", "yet", "still", "further", "instead", "otherwise", "once", "unless", "until", "whether", "again",
}
"""Words that never occur in a term: pronouns, determiners, clause openers, auxiliaries and modals."""
_LEADING_ONLY = {"in", "on", "at", "for", "with", "by", "from", "of", "and", "about", "into", "over", "under"}
_GENERIC_HEADS = {"data", "result", "results", "model", "models", "value", "values", "system", "approach", "goal", "key",
                  "way", "thing", "process", "method", "purpose", "problem", "solution", "figure", "table", "section",
                  "chapter", "task", "point", "case", "example", "sample", "choice", "option", "part", "reason", "idea",
                  "following", "answer", "question", "number", "rest", "remainder", "output", "input", "list", "step"}


def has_clause_word(phrase: str) -> bool:
    """True when a phrase holds a pronoun, determiner, clause opener, auxiliary or modal (it is no noun phrase)."""
    return any(w.lower().strip(",;:") in _CLAUSE_WORDS for w in phrase.split())


def real_term(term: str) -> bool:
    """True for a noun phrase that can be asked about: no pronouns, determiners or clause openers,
    at most six words, not a generic head noun on its own, not a repeated phrase."""
    words = term.split()
    if not words or len(words) > 7 or any(not re.fullmatch(r"[\w\-/().']+", w) for w in words):
        return False
    body = words[1:] if words[0].lower() in _ARTICLES else words
    if not body or len(body) > 6 or has_clause_word(" ".join(body)):
        return False
    if body[0].lower() in _LEADING_ONLY or body[-1].lower() in _LEADING_ONLY or body[-1].isdigit():
        return False
    half = len(body) // 2
    if len(body) >= 2 and len(body) % 2 == 0 and [w.lower() for w in body[:half]] == [w.lower() for w in body[half:]]:
        return False
    return not (len(body) <= 2 and body[-1].lower() in _GENERIC_HEADS)


_DEFINITION_RE = re.compile(
    r"^(?P<term>[A-Z][\w\-/' ]{0,60}?)(?:,\s(?P<alias>[A-Z][\w\-]{1,12}),)?\s"
    r"(?P<verb>is|are|refers to|refer to|means|mean|denotes|stands for|is defined as|are defined as|is called|are called)\s"
    r"(?P<pred>.+)$"
)
_PROCESS_RE = re.compile(
    r"^(?P<term>[A-Z][\w\-/' ]{0,60}?)(?:,\s(?P<alias>[A-Z][\w\-]{1,12}),)?\s(?P<aux>is|are)\s"
    r"(?:[a-z]+ly\s)?"
    r"(?P<verb>calculated|computed|measured|assessed|evaluated|recorded|determined|derived|estimated|decided|verified|"
    r"implemented|performed)"
    r"\s(?:from|by|with|through|using|as|in|on|at)\b"
)
_DESIGNED_RE = re.compile(r"^(?P<term>[A-Z][\w\-/' ]{0,60}?)(?:,\s(?P<alias>[A-Z][\w\-]{1,12}),)?\s(?P<aux>is|are)\s"
                          r"(?:[a-z]+ly\s)?(?P<verb>designed|intended|used)\sto\s\w+")
_DEFINING_PRED_RE = re.compile(r"^(?:a|an|the|one of)\s", re.IGNORECASE)
_RANKING_PRED_RE = re.compile(
    r"^(?:a|an|the|one of the)\s(?:\w+\s)?(?:most|least|main|only|single|best|worst|largest|smallest|first|last|"
    r"primary|key|biggest|greatest|same|following|number of)\b", re.IGNORECASE)
_CALLED_RE = re.compile(r"^(?P<definiens>[A-Z].{10,}?)\s(?:is|are)\s(?:called|known as|termed|referred to as)\s"
                        r"(?P<term>(?:(?:a|an|the)\s)?[\w\-]+(?:\s[\w\-]+){0,3})\.$")


def _term_phrase(match: re.Match, context: str) -> str | None:
    term = match.group("term").strip()
    if not real_term(term):
        return None
    phrase = _lower_first(term, context)
    return f"{phrase} ({match.group('alias')})" if match.group("alias") else phrase


_ROLE_RE = re.compile(r"\b(?:manager|leader|lead|architect|engineer|director|professor|researcher|scientist|specialist|"
                      r"consultant|author|head|member|president|student|chair|officer|analyst|developer|designer)\b", re.IGNORECASE)


def _person(term: str, predicate: str) -> bool:
    """A person's name ("Jasmeet Bhatia is an AI Product Manager ..."): biography, not a term to define."""
    words = term.split()
    named = 2 <= len(words) <= 5 and all(w[:1].isupper() and w[1:].islower() and w.isalpha() for w in words)
    return named and bool(_ROLE_RE.search(" ".join(predicate.split()[:8])))


def definition_question(sentence: str, context: str, where_phrase: str) -> tuple[str, str] | None:
    """(question, question type) for a sentence that defines a real term ("An airbag is a fabric cushion ...")
    or says how a quantity is obtained ("Chest injury risk is assessed mainly through ..."); None otherwise."""
    called = _CALLED_RE.match(sentence) or re.match(r"^(?P<definiens>.+?),?\sand\s.+?\s(?:is|are)\scalled\s"
                                                     r"(?P<term>(?:the\s)?[\w\-]+(?:\s[\w\-]+){0,3})\.$", sentence)
    if called and real_term(called.group("term")):
        term = called.group("term")
        verb = "are" if _plural(term) else "is"
        return f"According to {where_phrase}, what {verb} {term}?", "definitional"
    designed = _DESIGNED_RE.match(sentence)
    if designed and (term := _term_phrase(designed, context)):
        return f"According to {where_phrase}, what is the purpose of {term}?", "factual"
    process = _PROCESS_RE.match(sentence)
    if process and (term := _term_phrase(process, context)):
        return f"How {process.group('aux')} {term} {process.group('verb')}, according to {where_phrase}?", "procedural"
    match = _DEFINITION_RE.match(sentence)
    if not match or not (term := _term_phrase(match, context)) or _person(match.group("term"), match.group("pred")):
        return None
    verb = match.group("verb")
    if verb in ("is", "are"):
        if not _DEFINING_PRED_RE.match(match.group("pred")) or _RANKING_PRED_RE.match(match.group("pred")):
            return None
        return f"According to {where_phrase}, what {verb} {term}?", "definitional"
    if verb.startswith(("is ", "are ")):
        return f"According to {where_phrase}, what {verb.split()[0]} {term}?", "definitional"
    auxiliary = "do" if verb in ("mean", "refer to") else "does"
    return f"According to {where_phrase}, what {auxiliary} {term} mean?", "definitional"


_KO_DEFINITION_RE = re.compile(r"^(?P<term>[가-힣A-Za-z0-9][가-힣A-Za-z0-9 \-]{0,20}?)(?:이란|란)\s.+(?:말한다|뜻한다|의미한다|이다)\.$")


def _definition_candidates(view: ChunkView) -> Iterator[Candidate]:
    place = where(view)
    if not place:
        return
    for sentence in sentences(view.markdown):
        if view.language == "ko":
            match = _KO_DEFINITION_RE.match(sentence)
            if match:
                term = match.group("term").strip()
                yield Candidate(f"{place}에서 {term}{'이란' if has_final_consonant(term) else '란'} 무엇인가요?",
                                sentence, "definitional", "text")
            continue
        made = definition_question(sentence, view.markdown, place)
        if made:
            yield Candidate(made[0], sentence, made[1], "text")


# --- causal "why" questions -------------------------------------------------------------------

_AUXILIARIES = {"is", "are", "was", "were", "can", "could", "must", "should", "will", "would", "may", "might", "has", "have",
                "had", "does", "do", "did", "cannot"}
_NEGATED = {"cannot": "can't"}
_PRONOUN_SUBJECTS = {"it", "this", "that", "these", "those", "they", "there", "we", "he", "she", "i", "you", "which", "who", "one"}
_DETERMINER_NEEDED = {"next", "last", "first", "second", "previous", "new", "current", "final"}
_NOT_IN_SUBJECT = {"because", "if", "when", "since", "although", "though", "while", "as", "once", "unless", "until", "whereas",
                   "after", "before", "our", "we", "us", "your", "my", "you", "i"}
_QUANTIFIERS = {"more", "many", "most", "some", "several", "few", "all", "both", "each", "other", "such", "no", "any", "less",
                "fewer", "much", "the", "a", "an", "its", "their"}
_NOT_VERBS = {"with", "of", "in", "on", "at", "for", "from", "by", "and", "or", "to", "as", "than", "such", "that", "which"}
_APPOSITIVE_RE = re.compile(r",\s(?:which|who|mounted|packaged|stored|placed|located|fired|used|with)\b[^,]{1,80},\s")


def _verb_base(word: str) -> str | None:
    """The base form of a present (-s) verb, or of a regular past (-ed) verb whose stem is unambiguous."""
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    if word.endswith(("ches", "shes", "sses", "xes", "zes")):
        return word[:-2]
    if word.endswith("s") and not word.endswith(("ss", "us", "is", "'s")):
        return word[:-1]
    if word.endswith("ed") and len(word) > 4:
        stem = word[:-2]
        consonants = "bcdfghjklmnpqrstvwxz"
        if stem[-1] in consonants and stem[-2] in consonants and stem[-1] != stem[-2]:
            return stem
    return None


_DEICTIC_IN_SUBJECT = {"this", "these", "that", "those", "purpose", "scope", "aim", "objective"}


def _subject_ok(subject: list[str]) -> bool:
    if not 1 <= len(subject) <= 7 or subject[0].lower() in _PRONOUN_SUBJECTS or subject[-1].lower() in _QUANTIFIERS:
        return False
    if any(w.lower() in _DEICTIC_IN_SUBJECT for w in subject):
        return False  # "the purpose of this standard": a definition, not a cause, and "this" needs the chunk
    return all(re.fullmatch(r"[\w\-/']+", w) for w in subject) and not any(w.lower() in _NOT_IN_SUBJECT for w in subject)


def _subject_phrase(subject: list[str], context: str) -> str:
    phrase = _lower_first(" ".join(subject), context)
    return f"the {phrase}" if subject[0].lower() in _DETERMINER_NEEDED else phrase


def why_question(clause: str, context: str) -> str | None:
    """A "Why ...?" question (without its final '?') from a declarative effect clause, by subject-auxiliary
    inversion or do-support; None when the clause is not simple enough to invert well."""
    clause = _APPOSITIVE_RE.sub(" ", clause.strip().rstrip(".,;"))
    clause = re.sub(r"\b(?:therefore|also|thus|then|however)\s", "", clause)
    words = clause.split()
    for i, word in enumerate(words[:9]):
        if i == 0:
            continue
        lower, subject, rest = word.lower(), words[:i], " ".join(words[i + 1 :]).split(",")[0].strip()
        if not rest:
            return None
        if lower in _AUXILIARIES:
            if not _subject_ok(subject):
                return None
            return f"Why {_NEGATED.get(lower, lower)} {_subject_phrase(subject, context)} {rest}"
        base = _main_verb_base(words, i, clause)
        if base is None:
            continue  # still inside the subject
        if not _subject_ok(subject) or (lower.endswith("s") and _plural(subject[-1])):
            return None
        auxiliary = "did" if lower.endswith("ed") else "does"
        return f"Why {auxiliary} {_subject_phrase(subject, context)} {base} {rest}"
    return None


_AFTER_VERB = {"the", "a", "an", "on", "in", "at", "between", "to", "from", "with", "for", "into", "over", "under", "its",
               "their", "this", "that", "these", "those", "more", "less", "up", "down", "out", "off", "about", "by",
               "through", "all", "most", "some", "no", "his", "her", "our", "only", "well", "much", "early", "late"}


def _main_verb_base(words: list[str], i: int, clause: str) -> str | None:
    """The base form when ``words[i]`` reads as the clause's main verb (present -s or regular past -ed, followed by
    an article, preposition, adverb or number, and no auxiliary later in the clause), else None."""
    word = words[i]
    lower = word.lower()
    if not word.isalpha() or not word.islower() or lower in _NOT_VERBS or lower.endswith(("ing", "ly")):
        return None
    if any(w.lower() in _AUXILIARIES for w in clause.split(",")[0].split()[i + 1 :]):
        return None  # an auxiliary follows: this word is still part of the subject
    following = words[i + 1].lower().strip(",;") if i + 1 < len(words) else ""
    if not (following in _AFTER_VERB or following.endswith("ly") or following[:1].isdigit() or lower.endswith("ed")):
        return None
    return _verb_base(lower)


_BECAUSE_AFTER_RE = re.compile(r"^(?P<effect>.+?),?\s(?:because|due to)\s(?P<cause>.+)$", re.IGNORECASE)
_BECAUSE_BEFORE_RE = re.compile(r"^(?:Because|Due to)\s(?P<cause>[^,]+),\s(?P<effect>.+)$")
_SO_THAT_RE = re.compile(r"^(?P<effect>.+?)\sso that\s(?P<purpose>.+\b(?:can|could|will|would|may)\b.+)$")
_EXPLAINS_WHY_RE = re.compile(r"^(?P<cause>[A-Z][\w\- ]{1,40}?) explains why (?P<effect>.+)$")


def causal_effect(sentence: str) -> str | None:
    """The effect clause of a sentence that states a reason (because / due to / so that / explains why)."""
    for pattern in (_BECAUSE_BEFORE_RE, _EXPLAINS_WHY_RE, _SO_THAT_RE, _BECAUSE_AFTER_RE):
        match = pattern.match(sentence)
        if match:
            if pattern is _EXPLAINS_WHY_RE and match.group("cause").split()[0].lower() in _PRONOUN_SUBJECTS:
                return None
            effect = match.group("effect")
            if pattern in (_BECAUSE_AFTER_RE, _SO_THAT_RE):
                effect = re.split(r";|,\s(?:and|but|while|whereas)\s", effect)[-1].strip()
            return effect
    return None


def _causal_candidates(view: ChunkView) -> Iterator[Candidate]:
    place = where(view)
    if not place or view.language != "en":
        return
    for sentence in sentences(view.markdown):
        effect = causal_effect(sentence)
        question = why_question(effect, view.markdown) if effect else None
        if question and len(question.split()) >= 4:
            yield Candidate(f"{question}, according to {place}?", sentence, "causal", "text")


# --- procedures --------------------------------------------------------------------------------

_PROCEDURE_RE = re.compile(
    r"(?:steps?|stages?)\s(?:of|for|in)\s(?P<a>[^:.]{3,80})[:.]?$|^(?P<b>[A-Z][^:.]{3,80}?)\s(?:is|are)\s(?:summari[sz]ed|listed|described)\s(?:below|as follows)[:.]?$"
)
_STEP_RE = re.compile(r"^\s*(?P<n>\d{1,2})[.)]\s+(?P<text>.{8,300})$")


def _procedure_candidates(view: ChunkView) -> Iterator[Candidate]:
    doc = where(view)
    if not doc or view.language != "en":
        return
    lines = text_lines(view.markdown)
    for i, line in enumerate(lines[:-1]):
        intro = _PROCEDURE_RE.search(_BULLET_RE.sub("", line))
        step = _STEP_RE.match(lines[i + 1])
        if not intro or not step or step.group("n") != "1" or not _complete_item(step.group("text")):
            continue
        what = _lower_first((intro.group("a") or intro.group("b")).strip(), view.markdown)
        if has_clause_word(what.replace("the ", "", 1)) and not what.startswith("the "):
            continue
        yield Candidate(f"What is the first step of {what}, according to {doc}?", step.group("text").strip(), "procedural", "text")


def _complete_item(text: str) -> bool:
    return bool(_TERMINAL_RE.search(text.strip())) and text[:1].isupper()


# --- tables ------------------------------------------------------------------------------------

_METRIC_HEADERS = {"metric", "metrics", "parameter", "parameters", "measurement", "measurements", "criterion", "criteria",
                   "item", "items", "channel", "quantity", "injury criterion", "property", "항목", "구분", "지표", "측정 항목"}
_LIMIT_RE = re.compile(r"\b(?:limit|threshold|max(?:imum)?|allowable|target|requirement)\b|기준|한계|목표", re.IGNORECASE)
_SKIPPED_COLUMNS = {"how", "why", "what", "when", "who", "note", "notes", "remark", "remarks", "comment", "comments", "비고",
                    "no", "no.", "#", "id", "page", "ref", "reference", "source"}
_COLUMN_NOUNS = {"due": "due date", "owner": "owner", "when": "date"}


@dataclass(frozen=True)
class Table:
    """A parsed table: one header row (a two-row header merged into labels), labelled body rows."""

    header0: str
    columns: list[str]
    groups: list[str]
    rows: list[tuple[str, list[str]]]


def parse_table(markdown: str) -> Table | None:
    """The table's column labels and unambiguous rows, or None when its columns cannot be named.

    A first row whose cells are all equal is a caption merged across the columns and is dropped;
    a second header row (its first cell repeating the first header cell, e.g. "Measured" over
    "Driver") becomes the column labels with the first row as their group. Rows whose label
    repeats, is empty or is a footnote are left out.
    """
    rows = [r for r in table_rows(markdown) if any(c.strip() for c in r)]
    if len(rows) >= 2 and len(rows[0]) > 1 and len({c.strip() for c in rows[0]}) == 1:
        rows = rows[1:]  # one merged caption cell repeated across the columns
        if any(parse_number(c) is not None for c in rows[0][1:]):
            return None  # no header row under the caption: the columns cannot be named
    if len(rows) < 2:
        return None
    header, body = rows[0], rows[1:]
    groups = [""] * len(header)
    if body[0][:1] == header[:1] and len(body[0]) == len(header):
        groups, header, body = header, body[0], body[1:]
    elif _sub_header(header, body[0]):
        # a header cell merged over several columns ("구성" over "정부 | 민간") above a row of sub-labels
        filled = [cell or (header[i - 1] if i else "") for i, cell in enumerate(header)]
        for i in range(1, len(filled)):
            filled[i] = header[i] or filled[i - 1]
        labels = [sub or top for top, sub in zip(filled, body[0])]
        groups = [top if sub and sub != top else "" for top, sub in zip(filled, body[0])]
        header, body = [header[0]] + labels[1:], body[1:]
    columns = [c.strip() for c in header]
    if len({c for c in columns[1:] if c}) < len([c for c in columns[1:] if c]) or not any(columns[1:]):
        duplicated = {c for c in columns[1:] if columns[1:].count(c) > 1}
        columns = [c if c not in duplicated else "" for c in columns]
    labels = [r[0].strip() if r else "" for r in body]
    merged = {i for i in range(len(body) - 1) if labels[i] and not labels[i + 1] and any(c.strip() for c in body[i + 1][1:])}
    kept = [(label, [c.strip() for c in r[1:]]) for i, (label, r) in enumerate(zip(labels, body))
            if _row_label_ok(label) and labels.count(label) == 1 and label not in columns and i not in merged]
    if not kept or not any(columns[1:]):
        return None
    return Table(columns[0], columns[1:], [g.strip() for g in groups[1:]], kept)


def _sub_header(header: list[str], row: list[str]) -> bool:
    """A second header row under horizontally merged header cells: no row label, only non-numeric labels,
    and at least one of them under an empty (merged) header cell."""
    if len(row) != len(header) or row[0].strip() or not any(c.strip() for c in row[1:]):
        return False
    if any(parse_number(c) is not None for c in row[1:] if c.strip()):
        return False
    return any(not top.strip() and sub.strip() for top, sub in zip(header[1:], row[1:]))


def _row_label_ok(label: str) -> bool:
    if not label or label.startswith(("*", "※", "<", "-", "·")) or len(label) > 80 or len(label.split()) > 12:
        return False
    return bool(re.search(r"[A-Za-z가-힣]", label))


_MARK_CELL_RE = re.compile(r"^(?:\(?\d{1,2}\)|[A-Za-z*✓✔×xX]|\d+(?:[.,]\d+)?\s*\+\s*\d+(?:[.,]\d+)?.*)$")
"""A footnote mark "(1)", a tick or single letter, or a tolerance whose '±' was read as '+' ("40.3 + 1.0")."""


def _cell_ok(value: str, label: str) -> bool:
    if _MARK_CELL_RE.match(value.strip()) and not value.strip().isdigit():
        return False
    return bool(value) and value not in ("-", "–", "—", "·", "n/a", "N/A") and value != label and len(value) <= 200


def is_metric_table(table: Table) -> bool:
    """True when the rows are metrics (first header "Metric", "Criterion", "항목", ...) and the columns who or what was measured."""
    return table.header0.strip().lower() in _METRIC_HEADERS


def _column_phrase(name: str, context: str) -> str:
    noun = _COLUMN_NOUNS.get(name.lower(), name)
    if noun.isalpha() and noun[:1].isupper() and noun[1:].islower():
        return noun.lower()  # a one-word header ("Members", "Threshold") is capitalised as a header, not as a name
    return label_phrase(noun, context)


def _row_phrase(label: str, context: str) -> str:
    return label_phrase(label.rstrip("."), context)


@dataclass(frozen=True)
class _TableContext:
    element_id: str
    doc: str
    context: str
    language: str


def _numeric_column(table: Table, col: int) -> bool:
    values = [cells[col] for _, cells in table.rows if col < len(cells) and cells[col] not in ("", "-")]
    return bool(values) and sum(parse_number(v) is not None for v in values) >= 0.8 * len(values)


def _cell_question(table: Table, col: int, label: str, ctx: _TableContext) -> str | None:
    name, group = table.columns[col], table.groups[col] if col < len(table.groups) else ""
    if ctx.language == "ko":
        return _cell_question_ko(table, col, label, ctx)
    row, column = _row_phrase(label, ctx.context), _column_phrase(name, ctx.context)
    if is_metric_table(table) and _numeric_column(table, col) and not _LIMIT_RE.search(name):
        verb = group.lower() if group.lower().endswith("ed") else "recorded"
        subject = column if column[:1].isdigit() else f"the {column}"
        return f"In {ctx.doc}, what {row} was {verb} for {subject}?"
    quoted = f'"{label.rstrip(".")}"' if len(label.split()) > 4 else row
    return f"In {ctx.doc}, what is the {column} for {quoted}?"


_KO_COUNTERS = {"명": "몇 명", "개": "몇 개", "건": "몇 건", "곳": "몇 곳", "회": "몇 회", "대": "몇 대", "개소": "몇 곳"}


def ko_label(text: str) -> str:
    """A Korean label set with letter spacing by the PDF ("총인 원", "비 고") joined back ("총인원", "비고")."""
    tokens = text.split()
    if len(tokens) > 1 and all(re.fullmatch(r"[가-힣]{1,3}", t) for t in tokens) and any(len(t) == 1 for t in tokens):
        return "".join(tokens)
    return text


def _cell_question_ko(table: Table, col: int, label: str, ctx: _TableContext) -> str:
    name, group = ko_label(table.columns[col]), ko_label(table.groups[col]) if col < len(table.groups) else ""
    column = f"{group} {name}".strip() if group and group != name else name
    value = next((cells[col] for row, cells in table.rows if row == label and col < len(cells)), "")
    label = ko_label(label)
    counter = re.fullmatch(r"\d[\d,.]*\s*(?P<unit>명|개소|개|건|곳|회|대)", value.strip())
    if counter:
        return f"{ctx.doc}에서 {column}의 {josa(label, '은/는')} {_KO_COUNTERS[counter.group('unit')]}인가요?"
    ending = "얼마인가요" if parse_number(value) is not None else "무엇인가요"
    return f"{ctx.doc}에서 {label}의 {josa(column, '은/는')} {ending}?"


def data_columns(table: Table) -> list[int]:
    """Named columns to ask about: measured columns (not limits), numeric ones first; a reference table
    without measured columns ("Threshold", "Body region") asks about its limit column too."""
    named = [i for i, name in enumerate(table.columns) if name and ko_label(name.strip()).lower() not in _SKIPPED_COLUMNS]
    measured = [i for i in named if not _LIMIT_RE.search(table.columns[i])]
    if not any(_numeric_column(table, i) for i in measured):
        measured = named
    return sorted(measured, key=lambda i: not _numeric_column(table, i))


def limit_column(table: Table) -> int | None:
    """The one limit/threshold/target column of a table, or None."""
    limits = [i for i, name in enumerate(table.columns) if name and _LIMIT_RE.search(name)]
    return limits[0] if len(limits) == 1 else None


def _table_cells(table: Table, ctx: _TableContext) -> Iterator[Candidate]:
    for col in data_columns(table):
        for label, cells in table.rows:
            value = cells[col] if col < len(cells) else ""
            if not _cell_ok(value, label):
                continue
            question = _cell_question(table, col, label, ctx)
            qtype = "numeric" if parse_number(value) is not None else "factual"
            if question:
                yield Candidate(question, value, qtype, "table", ctx.element_id)


def _limit_checks(table: Table, ctx: _TableContext) -> Iterator[Candidate]:
    """Measured against limit: per measured column, the row closest to its limit, and one yes/no check."""
    limit = limit_column(table)
    if limit is None or not is_metric_table(table) or ctx.language != "en":
        return
    for col in [c for c in data_columns(table) if c != limit and _numeric_column(table, c)][:1]:
        ratios = []
        for label, cells in table.rows:
            measured = parse_number(cells[col]) if col < len(cells) else None
            bound = parse_number(cells[limit]) if limit < len(cells) else None
            if measured is not None and bound:
                ratios.append((measured / bound, label, cells[col], cells[limit]))
        if len(ratios) < 2:
            continue
        ratios.sort(reverse=True)
        column = _column_phrase(table.columns[col], ctx.context)
        subject = column if column[:1].isdigit() else f"the {column}"
        ratio, label, measured, bound = ratios[0]
        question = f"Did the {column} {_row_phrase(label, ctx.context)} of {measured} stay within the limit of {bound} in {ctx.doc}?"
        answer = f"{'Yes' if ratio <= 1 else 'No'}: {measured} vs. limit {bound}"
        yield Candidate(question, answer, "comparative", "table", ctx.element_id)
        if ratios[0][0] != ratios[1][0]:
            question = f"In {ctx.doc}, which metric came closest to its limit for {subject}?"
            yield Candidate(question, ratios[0][1], "comparative", "table", ctx.element_id)


_TOTAL_LABEL_RE = re.compile(r"^(?:total|sum|overall|all|합계|총계|소계|계|전체)\b", re.IGNORECASE)


def _table_highest(table: Table, ctx: _TableContext) -> Iterator[Candidate]:
    """For tables whose rows are comparable categories: the row with the highest value of a named numeric column."""
    if is_metric_table(table) or len(table.rows) < 3:
        return
    for col in data_columns(table):
        values = [(parse_number(re.sub(r"[^\d.,-]", "", cells[col])), label) for label, cells in table.rows
                  if col < len(cells) and re.fullmatch(r"-?[\d.,]+\s?(?:%|명|개|건|원|[A-Za-z/]{0,4})", cells[col].strip())]
        values = [(v, label) for v, label in values if v is not None and not _TOTAL_LABEL_RE.match(label)]
        if len(values) < 3 or len(values) < len(table.rows) - 1:
            continue
        values.sort(reverse=True)
        if values[0][0] == values[1][0]:
            continue
        name = table.columns[col]
        if ctx.language == "ko":
            question = f"{ctx.doc}에서 {name} 값이 가장 큰 항목은 무엇인가요?"
        else:
            kind = table.header0.lower() if table.header0 and len(table.header0.split()) <= 3 else "row"
            question = f"In {ctx.doc}, which {kind} has the highest {_column_phrase(name, ctx.context)}?"
        yield Candidate(question, values[0][1], "comparative", "table", ctx.element_id)


MAX_CELLS_PER_TABLE = 6
"""Cell lookups asked of one table (its results questions come on top): a big table gives a few, not one per cell."""

_CAPTION_RE = re.compile(r"^(?:Table|Tab\.|표)\s*\d+(?:[.\-]\d+)*", re.IGNORECASE)


_KO_CAPTION_RE = re.compile(r"^[\[<〈【□■○●▣※]?\s*(?:\d+\.\s*)?(?P<name>[가-힣A-Za-z0-9][^.:：]{1,58}?)\s*[\]>〉】]?\s*(?:[:：].*)?$")


def table_caption(markdown: str, table_markdown: str, language: str = "en") -> str:
    """How a question names a table: its "Table 3.1" label when a caption precedes it in the chunk; in Korean
    also the short title line above it ("[ 제1기및제2기 위원 비교 ]", "2. 광역위원회 위원 구성현황", "□ 1기 탄중위 : ...")."""
    whole = table_markdown.strip()
    position = markdown.find(whole) if whole else -1
    if position < 0 and whole:
        position = markdown.find(whole.splitlines()[0])
    before = [ln.strip() for ln in markdown[:position].splitlines() if ln.strip()] if position > 0 else []
    before = [ln for ln in before if not re.match(r"^※|^-\s*\d+\s*-$|^\||^\*", ln)][-2:]
    for line in reversed(before):
        match = _CAPTION_RE.match(line)
        if match:
            return match.group(0)
    if language == "ko" and before:
        match = _KO_CAPTION_RE.match(before[-1])
        if match and not _TERMINAL_RE.search(match.group("name")) and "다" != match.group("name")[-1:]:
            return ko_label(match.group("name").strip())
    return ""


def _table_candidates(view: ChunkView) -> Iterator[Candidate]:
    doc = doc_phrase(view) or where(view)
    if not doc:
        return
    parsed = [(element_id, markdown, parse_table(markdown)) for element_id, markdown in view.tables]
    parsed = [(e, m, t, table_caption(view.markdown, m, view.language)) for e, m, t in parsed if t is not None]
    for element_id, _, table, caption in parsed:
        others = [(t, c) for e, _, t, c in parsed if e != element_id]
        shared = {label for label, _ in table.rows for t, c in others if c == caption and any(label == r for r, _ in t.rows)}
        if others and not caption and shared:
            continue  # several tables share row labels and nothing names this one: its cells are ambiguous
        table = Table(table.header0, table.columns, table.groups, [r for r in table.rows if r[0] not in shared])
        if not table.rows:
            continue
        if view.language == "ko":
            doc_with_table = f"{doc}의 '{caption}' 표" if caption else doc
        else:
            doc_with_table = f"{caption} of {doc}" if caption else doc
        ctx = _TableContext(element_id, doc_with_table, view.markdown, view.language)
        cells = list(_table_cells(table, ctx))[:MAX_CELLS_PER_TABLE]
        extra = list(_limit_checks(table, ctx)) + list(_table_highest(table, ctx))
        yield from _interleave([cells[:1], extra, cells[1:]])


def _interleave(groups: Sequence[Sequence[Candidate]]) -> Iterator[Candidate]:
    for group in groups:
        yield from group


# --- charts ------------------------------------------------------------------------------------

_GENERIC_SERIES_RE = re.compile(r"^(?:series|계열)\s*\d+$", re.IGNORECASE)
_TIME_RE = re.compile(r"^\d+(?:\.\d+)?\s?(?:ms|s|sec|min|h)$")
_YEAR_RE = re.compile(r"^(?:19|20)\d\d$")


def _chart_series(header: list[str], chart_name: str) -> list[tuple[int, str]]:
    named = [(i, h) for i, h in enumerate(header) if i > 0 and h and not _GENERIC_SERIES_RE.match(h)]
    if not named and len(header) == 2 and chart_name:
        return [(1, chart_name)]  # one anonymous series: the chart's title names it
    return named


def _peak_question(series: str, chart: str, doc: str, categories: list[str], language: str) -> str:
    if language == "ko":
        return f"{doc}의 '{chart}' 차트에서 {series} 값이 가장 큰 지점은 어디인가요?"
    if all(_TIME_RE.match(c) for c in categories):
        return f'In {doc}, at what time does "{series}" peak in the "{chart}" chart?'
    if all(_YEAR_RE.match(c) for c in categories):
        return f'In {doc}, in which year is "{series}" highest in the "{chart}" chart?'
    return f'In {doc}, which category has the highest "{series}" value in the "{chart}" chart?'


def _value_question(series: str, chart: str, doc: str, category: str, language: str) -> str:
    if language == "ko":
        return f"{doc}의 '{chart}' 차트에서 {category}의 {josa(series, '은/는')} 얼마인가요?"
    preposition = "at" if _TIME_RE.match(category) else "in" if _YEAR_RE.match(category) else "for"
    return f'In {doc}, what is the "{series}" value {preposition} {category} in the "{chart}" chart?'


def _chart_candidates(view: ChunkView) -> Iterator[Candidate]:
    doc = doc_phrase(view) or where(view, with_section=False)
    if not doc:
        return
    for element_id, chart_title, markdown in view.charts:
        rows = table_rows(markdown)
        chart = chart_title or (view.handle.section if _section_ok(view) else "")
        if len(rows) < 3 or not chart:
            continue
        header, body = rows[0], rows[1:]
        categories = [r[0] for r in body if r]
        for col, name in _chart_series(header, chart):
            points = [(r[0], r[col]) for r in body if col < len(r) and parse_number(r[col]) is not None]
            if len(points) < 2:
                continue
            ranked = sorted(points, key=lambda p: parse_number(p[1]), reverse=True)
            if parse_number(ranked[0][1]) == parse_number(ranked[1][1]) or parse_number(ranked[0][1]) == 0:
                continue
            category, value = ranked[0]
            yield Candidate(_peak_question(name, chart, doc, categories, view.language), category, "comparative", "chart", element_id)
            yield Candidate(_value_question(name, chart, doc, category, view.language), value, "numeric", "chart", element_id)


# --- pictures -----------------------------------------------------------------------------------

_GARBLED_NUMBER_RE = re.compile(r"\d(?:[.,]\d+)?\s+(?:\d|[A-Za-z])\b(?!/)")
_KNOWN_UNIT_RE = re.compile(rf"^{UNITS}$")
_WORD_RE = re.compile(r"^[A-Za-z][a-z]+$|^[A-Z]{2,}$|^[A-Z][a-z]*(?:-[A-Za-z]+)+$|^[가-힣]+$")


def _garbled_numbers(text: str) -> bool:
    """A number followed by a lone digit or letter that is no unit ("38.2 9" for "38.2 g")."""
    for match in _GARBLED_NUMBER_RE.finditer(text):
        tail = match.group(0).split()[-1]
        if not _KNOWN_UNIT_RE.match(tail):
            return True
    return bool(re.search(r"\d[A-Za-z]{4,}|[A-Za-z]{2,}\d{3,}", text))


def word_like(line: str, min_words: int = 3) -> bool:
    """True when a line reads as words: at least ``min_words`` words, each a word-shaped token with a vowel
    (or an acronym or Hangul), and no stray symbols."""
    tokens = [t.strip(",.:;!?'\"()") for t in line.split()]
    words = [t for t in tokens if _WORD_RE.match(t) and (re.search(r"[aeiouyAEIOUY]", t) or t.isupper() or "\uac00" <= t[:1] <= "\ud7a3")]
    return len(words) >= min_words and len(words) == len(tokens) and not re.search(r"[|\\{}\[\]<>=~_]", line)


def picture_text(ocr_text: str) -> str | None:
    """The confident text of a picture worth asking about: its first line when that line reads as words and
    the OCR shows no garbled numbers; None for noisy OCR."""
    lines = [ln.strip() for ln in ocr_text.splitlines() if ln.strip()]
    if not lines or _garbled_numbers(ocr_text):
        return None
    return lines[0] if word_like(lines[0]) and len(lines[0]) <= 120 else None


def _picture_candidates(view: ChunkView) -> Iterator[Candidate]:
    doc, h = doc_phrase(view), view.handle
    if not _section_ok(view):
        return  # "the picture" alone is ambiguous: a picture is named by its slide or section heading
    for element_id, ocr_text in view.pictures:
        text = picture_text(ocr_text)
        if not text:
            continue
        if view.language == "ko":
            place = f"{doc}의 '{h.section}' 그림" if doc else f"'{h.section}' 그림"
            question = f"{place}의 제목은 무엇인가요?"
        else:
            kind = "slide" if h.section_kind == "slide" else "section"
            place = f'the picture on the "{h.section}" {kind}'
            question = f"What does the heading of {place}" + (f" of {doc} say?" if doc else " say?")
        yield Candidate(question, text, "factual", "image", element_id)


# --- the generator -------------------------------------------------------------------------------

SOURCES = (
    _table_candidates,
    _chart_candidates,
    _key_value_candidates,
    _measurement_candidates,
    _definition_candidates,
    _causal_candidates,
    _procedure_candidates,
    _picture_candidates,
)
"""Question sources, in the order a chunk's pairs are mixed (results first)."""


def _well_formed(candidate: Candidate) -> bool:
    question, answer = candidate.question, candidate.answer.strip()
    if not answer or "(는)" in question or "은(는)" in question or re.search(r"\b(\w+) \1\b", question, re.IGNORECASE):
        return False
    if re.search(r"\.(?:pptx|pdf|docx|xlsx)\b|\bSlide \d+\b|\bSeries \d+\b", question, re.IGNORECASE):
        return False
    return not re.search(rf"(?<!\w){re.escape(answer.lower())}(?!\w)", question.lower())  # no answer leak


def generate(view: ChunkView, n: int) -> list[Candidate]:
    """Up to ``n`` well-formed pairs, round-robin over question sources so types stay mixed; none for
    reference lists, tables of contents and boilerplate sections."""
    if n <= 0 or skipped_chunk(view):
        return []
    from tasks.qa.gen_requirements import REQUIREMENT_SOURCES  # they build on this module's helpers
    from tasks.qa.sections import section_views

    queues = [list(_round_robin([[c for c in source(part) if _well_formed(c)] for source in (*REQUIREMENT_SOURCES, *SOURCES)]))
              for part in section_views(view)]
    out: list[Candidate] = []
    seen: set[str] = set()
    for candidate in _round_robin(queues):  # every section of the chunk gets its first question before any its second
        if len(out) >= n:
            break
        if candidate.question not in seen:
            seen.add(candidate.question)
            out.append(candidate)
    return out


def _round_robin(groups: Sequence[Sequence[Candidate]]) -> Iterator[Candidate]:
    index = 0
    while any(index < len(g) for g in groups):
        for group in groups:
            if index < len(group):
                yield group[index]
        index += 1
