"""Passages: the search index's units, cut from a chunk's Markdown on its structure, each knowing where it sits.

A chunk (one slide, one chapter or a window of pages) stays the unit of QA generation and provenance;
retrieval needs smaller units. ``cut_passages`` splits a chunk's text into blocks — paragraphs, list
items, Markdown tables (with up to two short lines before them: a caption, a title, a source line), the heading
lines with (almost) nothing under them (a cover page made of headings; the others are in the section path of what
follows them; a heading opens a passage and never closes one), a slide's speaker notes, a table of contents (its
entries end in a dot leader and a page number; no entry is taken for the numbered clause of what follows, and the
contents list is no passage unless the chunk holds nothing else: its titles point at sections whose passages carry
them in their section path or body, and as a passage it outranked the sections it names) —
and packs consecutive blocks into passages of about ``min_words``..``max_words`` words (a Korean word
without spaces counts one per ``KO_CHARS_PER_WORD`` syllables). A block longer than ``max_words`` is
split: a table into groups of rows with its header row repeated (and a second header row under it, one that repeats the
header's first cell: a merged header cell read into both rows), a paragraph into sentence groups.

Each passage carries its **section path**: the chunk's heading path, the Markdown headings above it
inside the chunk and the numbered clause it falls under (``S7.2.5 Dynamic performance ...``,
``6.2.5.1.1.``, ``1.1.2 Supplied test data``, ``Ⅲ. 검토의견``), and its **context line**: the document's
name with the standard it states (``FMVSS 214`` from ``§ 571.214`` or the file name, ``UN R95`` from
``Regulation No. 95``) and, for a report, its header block. The context is put before the passage text
for the encoder and BM25 (the seed's Ver.1 idea, per passage); what a reader sees is the passage body.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

from ragprep.retrieval import continues_header
from ragprep.text import HANGUL_RE

MIN_WORDS = 100
MAX_WORDS = 300
KO_CHARS_PER_WORD = 3
"""A run of Hangul counts one word per this many syllables (Korean PDFs often lose their spaces)."""
BARE_HEADING_WORDS = 5
"""A heading with fewer words than this under it is kept in the passage body (see ``_bare_headings_only``)."""

_HEADING_RE = re.compile(r"^(#{1,6})\s+(.*)$")
_TABLE_LINE_RE = re.compile(r"^\s*\|")
_TABLE_RULE_RE = re.compile(r"^\s*\|?\s*:?-{3,}")
_LIST_RE = re.compile(r"^\s*(?:[-*•▪◦]\s+|\(?[0-9a-z]{1,3}[.)]\s+|[①-⑳]\s*)")
_NOTES_RE = re.compile(r"^\*\*(?:Speaker notes|Notes)\*\*\s*$", re.IGNORECASE)
_CLAUSE_RE = re.compile(
    r"^(?P<num>S\d+(?:\.\d+)*\.?|\d+(?:\.\d+)+\.?|\d+\.|[ⅠⅡⅢⅣⅤⅥⅦⅧⅨⅩIVX]+\.|제\d+조(?:의\d+)?)\s*(?P<title>[^\n]{0,90})"
)
_CAPTION_RE = re.compile(r"^(?:\*\*)?(?:table|tab\.|figure|fig\.|표|그림)\s*[\dA-Z]", re.IGNORECASE)
_SENTENCE_END_RE = re.compile(r"(?<=[.!?다])\s+")
_PAGE_MARK_RE = re.compile(r"^-\s*\d+\s*-$")
_TOC_LINE_RE = re.compile(r"(?:[.·‧・…]\s?){4,}\s*\d{1,4}\s*$")
"""A table-of-contents entry: a title, a leader of dots or middle dots, a page number."""
_TOC_TITLE_RE = re.compile(r"^(?:table of )?contents$|^목\s*차$|^차\s*례$", re.IGNORECASE)

_STANDARD_RULES: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"fmvss[\s_-]*(\d{3})", re.IGNORECASE), "FMVSS {0}"),
    (re.compile(r"§\s*571\.(\d{3})"), "FMVSS {0}"),
    (re.compile(r"\b49\s*CFR\s*(?:§\s*)?571\.(\d{3})"), "FMVSS {0}"),
    (re.compile(r"(?:UN(?:ECE)?[\s_-]*R|Regulation\s+No\.?\s*)(\d{1,3})\b", re.IGNORECASE), "UN R{0}"),
    (re.compile(r"\bR(\d{2,3})\b(?=.*\b(?:unece|ece)\b)", re.IGNORECASE), "UN R{0}"),
)
"""Standards a document states (its file name, title or first text): the US CFR part 571 section is the FMVSS
number; a UN/ECE regulation number is ``UN R<n>``."""

_FAMILY_WORDS = (("euroncap", "Euro NCAP"), ("iihs", "IIHS"), ("nhtsa", "NHTSA"), ("unece", "UNECE"))


@dataclass(frozen=True)
class Passage:
    """One index unit: its body, where it sits (section path), the context put before it, and its chunk."""

    passage_id: str
    chunk_id: str
    position: int
    section: str
    context: str
    body: str
    page: int | None = None

    @property
    def indexed(self) -> str:
        """The text the encoder and BM25 see: the context line(s), then the body."""
        return f"{self.context}\n\n{self.body}" if self.context else self.body


@dataclass
class _Block:
    kind: str  # heading | table | list | notes | text
    text: str
    section: tuple[str, ...] = field(default_factory=tuple)


def words(text: str) -> int:
    """Word count for passage sizes: spaced words, with a Hangul run counted per ``KO_CHARS_PER_WORD`` syllables."""
    count = 0
    for token in text.split():
        hangul = len(HANGUL_RE.findall(token))
        count += max(1, -(-hangul // KO_CHARS_PER_WORD)) if hangul else 1
    return count


def standard_names(*texts: str) -> list[str]:
    """The standards named in ``texts`` (``FMVSS 214``, ``UN R95``), first seen first."""
    found: list[str] = []
    for text in texts:
        flat = text.replace("_", " ")
        for pattern, template in _STANDARD_RULES:
            for match in pattern.finditer(flat):
                name = template.format(str(int(match.group(1))))
                if name not in found:
                    found.append(name)
    return found


def document_label(file_name: str, title: str | None, first_text: str = "") -> str:
    """The document's name for the context line: its standards, its organisation word and its title."""
    stem = re.sub(r"\.[A-Za-z0-9]+$", "", file_name)
    names = standard_names(stem, title or "") or standard_names(first_text[:3000])[:1]
    lowered = stem.lower()
    names += [label for word, label in _FAMILY_WORDS if word in lowered and not any(label in n for n in names)]
    parts = [*names[:3]]
    if title and title.strip() and title.strip() not in parts:
        parts.append(" ".join(title.split())[:120])
    parts.append(re.sub(r"[_\W]+", " ", stem).strip())  # file name words: "fmvss216 roof crush"
    return " | ".join(dict.fromkeys(parts))


def _clause(text: str) -> str | None:
    first = text.strip().split("\n", 1)[0]
    match = _CLAUSE_RE.match(first)
    if not match:
        return None
    title = match.group("title").strip()
    title = re.split(r"(?<=[.:])\s", title, maxsplit=1)[0] if title else ""
    return f"{match.group('num')} {title}".strip()[:100]


def _kind(text: str) -> str:
    first = text.lstrip().split("\n", 1)[0]
    if _HEADING_RE.match(first):
        return "heading"
    lines = [line.strip() for line in text.split("\n") if line.strip()]
    if all(_TOC_LINE_RE.search(line) for line in lines) or _TOC_TITLE_RE.match(text.strip()):
        return "toc"
    if _TABLE_LINE_RE.match(first):
        return "table"
    if _LIST_RE.match(first):
        return "list"
    return "text"


def split_blocks(markdown: str, base: Sequence[str] = ()) -> list[_Block]:
    """The chunk's blocks in order, each with its section path (``base`` + headings + numbered clause)."""
    blocks: list[_Block] = []
    headings: list[tuple[int, str]] = []
    clause: str | None = None
    in_notes = False
    for raw in re.split(r"\n\s*\n", markdown):
        text = raw.strip()
        if not text or _PAGE_MARK_RE.match(text):
            continue
        if _NOTES_RE.match(text):
            in_notes = True
            continue
        heading = _HEADING_RE.match(text.split("\n", 1)[0])
        if heading and "\n" not in text:
            level, title = len(heading.group(1)), heading.group(2).strip()
            headings = [h for h in headings if h[0] < level] + [(level, title)]
            clause = None
            if title not in base:  # the chunk's own title is in every passage's context already
                blocks.append(_Block("heading", text, tuple(_path(base, headings))))
            continue
        kind = "notes" if in_notes else _kind(text)
        if kind == "text":
            clause = _clause(text) or clause
        path = _path(base, headings)
        if clause and kind != "notes":
            path.append(clause)
        blocks.append(_Block(kind, text, tuple(path)))
    return _bare_headings_only(blocks)


def _heading_level(block: _Block) -> int:
    return len(block.text) - len(block.text.lstrip("#"))


def _bare_headings_only(blocks: list[_Block]) -> list[_Block]:
    """Blocks without the heading lines that head real content (their text is in the section path of what follows);
    a heading with fewer than ``BARE_HEADING_WORDS`` words under it before the next heading of its level or above (a
    cover page of headings, a title over a date) stays in the body, since no passage's section path would show it."""
    out = []
    for i, block in enumerate(blocks):
        if block.kind == "heading":
            level, under = _heading_level(block), 0
            for later in blocks[i + 1:]:
                if later.kind == "heading" and _heading_level(later) <= level:
                    break
                under += words(later.text) if later.kind != "heading" else 0
            if under >= BARE_HEADING_WORDS:
                continue
        out.append(block)
    return out


def _path(base: Sequence[str], headings: Sequence[tuple[int, str]]) -> list[str]:
    path = list(base)
    for _, title in headings:
        if not all(part.strip() in path for part in title.split(" / ")):
            path.append(title)
    return path


def _table_groups(text: str, max_words: int) -> Iterator[str]:
    """Groups of a table's rows, each under the caption and header row."""
    lines = text.split("\n")
    start = next((i for i, line in enumerate(lines) if _TABLE_LINE_RE.match(line)), 0)  # a caption comes first
    caption, lines = lines[:start], lines[start:]
    head = caption + (lines[:2] if len(lines) > 1 and _TABLE_RULE_RE.match(lines[1]) else lines[:1])
    while len(head) - len(caption) < len(lines) and continues_header(lines[len(head) - len(caption)], lines[0]):
        head.append(lines[len(head) - len(caption)])  # a second header row (a merged header cell read into both)
    rows = lines[len(head) - len(caption):]
    group: list[str] = []
    for row in rows:
        if group and words("\n".join(head + group + [row])) > max_words:
            yield "\n".join(head + group)
            group = []
        group.append(row)
    if group or not rows:
        yield "\n".join(head + group)


def _sentence_groups(text: str, max_words: int) -> Iterator[str]:
    group: list[str] = []
    for sentence in _SENTENCE_END_RE.split(text):
        if group and words(" ".join(group + [sentence])) > max_words:
            yield " ".join(group)
            group = []
        group.append(sentence)
    if group:
        yield " ".join(group)


def _pieces(blocks: list[_Block], max_words: int) -> list[_Block]:
    out: list[_Block] = []
    for block in blocks:
        if words(block.text) <= max_words:
            out.append(block)
            continue
        parts = _table_groups(block.text, max_words) if block.kind == "table" else _sentence_groups(block.text, max_words)
        out += [_Block(block.kind, part, block.section) for part in parts]
    return out


def _attach_captions(blocks: list[_Block]) -> list[_Block]:
    """The short lines just before a table travel with it: at most two (its title and a source line, say), each
    a ``Table N`` caption or at most 12 words."""
    out: list[_Block] = []
    for block in blocks:
        lead: list[_Block] = []
        while block.kind == "table" and out and len(lead) < 2 and out[-1].kind in ("text", "list", "heading") and (
            _CAPTION_RE.match(out[-1].text) or words(out[-1].text) <= 12
        ):
            lead.insert(0, out.pop())
        if lead:
            block = _Block("table", "\n\n".join([*(b.text for b in lead), block.text]), lead[0].section or block.section)
        out.append(block)
    return out


def _pack(blocks: list[_Block], min_words: int, max_words: int) -> list[list[_Block]]:
    groups: list[list[_Block]] = []
    current: list[_Block] = []
    size = 0
    for block in blocks:
        n = words(block.text)
        notes_boundary = current and (block.kind == "notes") != (current[-1].kind == "notes") and size >= min_words // 2
        section_boundary = current and block.section != current[-1].section and size >= min_words
        toc_boundary = current and (block.kind == "toc") != (current[-1].kind == "toc")
        if current and (size + n > max_words or notes_boundary or section_boundary or toc_boundary):
            carried = _trailing_headings(current)  # a heading opens the next passage, never closes one
            if len(carried) < len(current):
                groups.append(current[:len(current) - len(carried)])
                current, size = carried, sum(words(b.text) for b in carried)
        current.append(block)
        size += n
    if current:
        same_kind = groups and (current[0].kind == "toc") == (groups[-1][-1].kind == "toc")
        if same_kind and size < min_words // 3 and sum(words(b.text) for b in groups[-1]) + size <= max_words:
            groups[-1] += current
        else:
            groups.append(current)
    return groups


def _trailing_headings(group: list[_Block]) -> list[_Block]:
    end = len(group)
    while end and group[end - 1].kind == "heading":
        end -= 1
    return group[end:]


def _section_of(group: list[_Block]) -> str:
    """The first block's section path, plus the leaves of the further sections the passage runs into (at most 3)."""
    first = group[0].section
    more = [b.section[-1] for b in group[1:] if b.section and b.section != first and b.section[:-1] == first[:len(b.section) - 1]]
    leaves = list(dict.fromkeys(m for m in more if m not in first))[:3]
    return " > ".join(first) + "".join(f" + {leaf}" for leaf in leaves)


def neighbour_span(lengths: Sequence[int], at: int, budget: int) -> tuple[int, int]:
    """Small-to-big: the first and last position of the run of passages around ``at`` (one chunk's passage lengths in
    order) that a hit at ``at`` shows. The next passage, then the previous one, are added in turn while the run stays
    within ``budget`` characters; a passage already over the budget stays alone (``budget`` 0: no expansion)."""
    lo = hi = at
    size = lengths[at]
    grew = True
    while grew:
        grew = False
        for j in (hi + 1, lo - 1):
            if 0 <= j < len(lengths) and size + lengths[j] <= budget:
                size += lengths[j]
                lo, hi, grew = min(lo, j), max(hi, j), True
    return lo, hi


def passage_id(chunk_id: str, position: int, body: str) -> str:
    """Content-derived id: the chunk, the position and the body."""
    digest = hashlib.sha1(f"{chunk_id}\n{position}\n{body}".encode()).hexdigest()[:16]
    return f"{chunk_id}#p{position}-{digest[:8]}"


def strip_header(markdown_v1: str) -> tuple[str, str]:
    """(report header block, body) of a Ver.1 text whose header ends with a ``---`` line; ("", text) otherwise."""
    if "\n---\n" in markdown_v1:
        header, body = markdown_v1.split("\n---\n", 1)
        if len(header) <= 1500:
            return header.strip(), body.strip()
    return "", markdown_v1


def cut_passages(chunk_id: str, text: str, heading_path: Sequence[str], label: str,
                 min_words: int = MIN_WORDS, max_words: int = MAX_WORDS) -> list[Passage]:
    """The passages of one chunk's text (Ver.1 or Ver.0 Markdown) with their section paths and context lines."""
    header, body = strip_header(text)
    blocks = _pieces(_attach_captions(split_blocks(body, heading_path)), max_words)
    groups = _pack(blocks, min_words, max_words)
    content = [g for g in groups if any(b.kind != "toc" for b in g)]
    passages = []
    for position, group in enumerate(content or groups):  # a contents list points at sections; it is no passage
        section = _section_of(group)
        passage_body = "\n\n".join(b.text for b in group)
        context = "\n".join(part for part in (label, section and f"Section: {section}", header) if part)
        passages.append(Passage(passage_id(chunk_id, position, passage_body), chunk_id, position, section, context,
                                passage_body))
    return passages


def normalised(text: str) -> str:
    """NFKC, lower case, no whitespace: how answer keys and page texts are compared."""
    return re.sub(r"\s+", "", unicodedata.normalize("NFKC", text)).lower()


def comparable(text: str) -> str:
    """``normalised`` text without Markdown marks (``#``, ``|``, ``*``, ``>``, ``-``), to find a passage in a page."""
    return normalised(re.sub(r"[#|*>\-]", " ", text))


def locate_page(body: str, pages: Sequence[tuple[int, str]], default: int | None) -> int | None:
    """The page whose ``comparable`` text holds the start of ``body``; ``default`` when none does."""
    probe = comparable(body)[:40]
    if len(probe) < 8:
        return default
    for size in (40, 20):
        for page, text in pages:
            if probe[:size] in text:
                return page
    return default
