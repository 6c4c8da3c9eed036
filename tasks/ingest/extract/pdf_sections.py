"""Numbered-section labels and the section tree they make.

A label opens a paragraph: "§ 571.209", "Annex 3", "Appendix B", "Chapter 2", "S5.1.2", "5.2.1",
"제3조", "제2장", Roman numerals ("Ⅲ", "IV."). Labels of one kind nest by their numbers (S5.1 is under
S5, 5.2.1 under 5.2); kinds nest by rank (a § holds annexes, which hold chapters, which hold numbered
paragraphs). A bare "5." or "가." is a label only on a heading-like line (short, no sentence), since in
running text it is a list item; "3 ASSESSMENTS" (no period) only on a heading; a number followed by a
lower-case word ("5.2.1 and a force ...", "S10.3.2, use only ...") is a cross-reference that a line break
put first, never a label.

``SectionTree`` walks a document's elements in reading order and gives each one its heading path.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

ROMAN = "ⅠⅡⅢⅣⅤⅥⅦⅧⅨⅩ"
LABEL_RE = re.compile(
    r"^\s*(?:"
    r"(?P<para>§)\s*(?P<pnum>\d+\.\d+[a-z]?)"
    r"|(?P<annex>annex|appendix|attachment|부록|별지|별표)\s*(?P<anum>\d+|(?-i:[A-Z]))\b"
    r"|(?P<chapter>chapter|part|section)\s+(?P<cnum>\d+|[IVX]+)\b"
    r"|제\s*(?P<jang>\d+)\s*[장편]"
    r"|제\s*(?P<jo>\d+)\s*조(?:의\s*\d+)?"
    r"|(?P<roman>[" + ROMAN + r"]|[IVX]{1,4}\.)(?=\s)"
    r"|(?P<s>S)(?P<snum>\d+(?:\.\d+)*)(?=[.\s(]|$)"
    r"|(?P<num>\d+(?:\.\d+)+)\.?(?=\s+\S)"
    r"|(?P<top>\d{1,2})\.(?=\s+\S)"
    r"|(?P<tops>\d{1,2})(?=\s{1,3}[A-Z])"
    r"|(?P<ga>[가나다라마바사아자차카타파하])\.(?=\s+\S)"
    r")",
    re.IGNORECASE,
)
CAPTION_RE = re.compile(
    r"^\s*[\[<(【]?\s*(?:figure|fig\.|table|photo|chart|diagram|exhibit|graph|그림|표|사진|도표)\s*"
    r"(?:\d+|(?-i:[A-Z]))(?:[.\-]\d+)*(?-i:[a-z])?(?=$|[\s.:—–\-)\]>】])",
    re.IGNORECASE,
)
"""A figure or table caption ("Figure 4 Vehicle Position ...", "Table 1 ...", "Fig. 2.3", "[그림 1]", "<표 2>"):
it names a picture or table, not a section of the document."""
RANK = {"§": 0, "annex": 1, "chapter": 2, "jang": 2, "roman": 3, "S": 5, "num": 5, "jo": 5, "ga": 7}
"""Lower ranks hold higher ones; labels of one kind nest by their numbers."""
HEADING_ONLY = {"roman", "top", "ga", "chapter"}
"""Kinds that are a label only on a heading-like line."""
MAX_TITLE_CHARS = 90
SENTENCE_RE = re.compile(r"^(.{3,%d}?(?<!\bNo)(?<!\bno)[.:—])(?=\s+[^\d\s]|$)" % MAX_TITLE_CHARS)


@dataclass(frozen=True)
class Label:
    """A numbered-section label: its kind and number parts."""

    kind: str
    parts: tuple[str, ...]

    def holds(self, other: Label) -> bool:
        """Whether ``other`` lies inside the section this label opens."""
        if self.kind == other.kind:
            return len(other.parts) > len(self.parts) and other.parts[: len(self.parts)] == self.parts
        return RANK[self.kind] < RANK[other.kind]


def _heading_like(text: str) -> bool:
    return len(text) <= 120 and not re.search(r"[.;:,]\s+\S.*[.;]$", text)


def parse_label(text: str, heading: bool = False) -> Label | None:
    """The label opening ``text``; kinds in ``HEADING_ONLY`` only when ``heading`` or the text is heading-like."""
    m = LABEL_RE.match(text)
    if not m:
        return None
    kind = next(k for k in ("para", "annex", "chapter", "jang", "jo", "roman", "s", "num", "top", "tops", "ga") if m.group(k))
    if kind in HEADING_ONLY and not (heading or _heading_like(text)) or kind == "tops" and not heading:
        return None
    if kind in ("s", "num", "top", "tops") and re.match(r"\s*[,;]?\s*[a-z]", re.sub(r"^[\d.]*", "", text[m.end() :])):
        return None  # "5.2.1 and a force of ...", "S10.3.2, use only ..." continue a sentence: a cross-reference
    if kind == "para":
        return Label("§", (m.group("pnum"),))
    if kind == "annex":
        return Label("annex", (m.group("anum").upper(),))
    if kind == "chapter":
        return Label("chapter", (m.group("cnum").upper(),))
    if kind == "s":
        return Label("S", tuple(m.group("snum").split(".")))
    if kind in ("num", "top", "tops"):
        return Label("num", tuple(m.group(kind).split(".")))
    if kind == "roman":
        return Label("roman", (m.group("roman").rstrip("."),))
    return Label(kind, (m.group(kind),))


def section_key(title: str) -> str:
    """What identifies a section across documents: its numbered label ("§ 571.216", "Annex 3") when its title opens
    with one, else its title's words (case folded): two extracts that both print § 571.216 hold the same section."""
    label = parse_label(title, heading=True)
    if label is not None:
        return f"{label.kind} {'.'.join(label.parts)}"
    return " ".join(re.findall(r"[^\W_]+", title.casefold()))


def is_caption(text: str) -> bool:
    """Whether a line is a figure or table caption (``CAPTION_RE``), which opens no section."""
    return bool(CAPTION_RE.match(text))


def section_title(text: str) -> str:
    """A short title for a paragraph that opens a section: its first sentence or phrase, cut at a word."""
    flat = " ".join(text.split())
    m = SENTENCE_RE.match(flat)
    head = m.group(1) if m else flat
    # "S5.1. Test weight. The vehicle..." -> keep the label's own period and the phrase after it
    label = LABEL_RE.match(flat)
    if m and label and len(head) <= label.end() + 1:
        rest = SENTENCE_RE.match(flat[label.end() :].lstrip(". "))
        head = flat[: label.end()].rstrip(".") + " " + (rest.group(1) if rest else flat[label.end() :].strip())
    if len(head) > MAX_TITLE_CHARS:
        head = head[:MAX_TITLE_CHARS].rsplit(" ", 1)[0] + "…"
    return head.rstrip(".:— ").strip()


@dataclass
class _Open:
    label: Label | None
    rank: float
    title: str
    key: int
    size: float | None
    """Font size of the heading that opened it; None for a numbered paragraph of body text."""


class SectionTree:
    """The open sections while reading a document: push a heading, read the current path."""

    def __init__(self) -> None:
        self._stack: list[_Open] = []

    def push(self, title: str, label: Label | None, size: float | None = None, key: int = 0) -> None:
        """Open a section (``size``: the font size of its heading, None for a body paragraph): close the
        open ones it does not lie in, then add it. Unnumbered headings rank by size, the larger outside."""
        rank = RANK[label.kind] if label else 3.5 + 1 / (1 + (size or 0))
        while self._stack and not self._holds(self._stack[-1], label, rank, size):
            self._stack.pop()
        self._stack.append(_Open(label, rank, title, key, size))

    def close(self, key: int) -> None:
        """Close the open section with caller key ``key`` and every section inside it."""
        keys = self.keys()
        if key in keys:
            del self._stack[keys.index(key) :]

    def retitle(self, title: str) -> None:
        """Change the innermost open section's title (a heading continued on the next line)."""
        if self._stack:
            self._stack[-1].title = title

    @staticmethod
    def _holds(top: _Open, label: Label | None, rank: float, size: float | None) -> bool:
        """Whether the open section ``top`` holds a new one: numbered ones of a kind by their numbers, other
        kinds by rank; between a numbered and an unnumbered heading the larger type holds the smaller
        ("2 ASSESSMENT PROCEDURE" holds "Vehicle provisions assessment", "PREFACE" does not hold "1 SCORING");
        an unnumbered heading holds the numbered paragraphs of body text after it."""
        if top.label and label and top.label.kind == label.kind:
            return top.label.holds(label)
        if (label is None and top.label is not None) or (label is not None and top.label is None and size is not None):
            return top.size is not None and top.size > (size or 0) + 0.5
        return top.rank < rank

    def path(self) -> list[str]:
        """Titles of the open sections, outermost first."""
        return [s.title for s in self._stack]

    def keys(self) -> list[int]:
        """Caller keys of the open sections, outermost first."""
        return [s.key for s in self._stack]
