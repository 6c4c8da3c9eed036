"""PDF page text: text blocks with their dominant font size and weight, headings, and the garbage ratio.

Blocks come from PyMuPDF's rawdict, with word spaces also read from glyph positions (``spaced_line_text``: PDFs
made from HWP place Korean words by offsets, with no space character); headings are recognised by font size and
weight relative to the document's body text.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from dataclasses import dataclass, field

import pymupdf

from ragprep.engines.hyphens import Hyphenation
from ragprep.engines.pdf import join_lines, spaced_line_text
from tasks.ingest.extract.pdf_sections import LABEL_RE, parse_label

BOLD_FONT_RE = re.compile(r"bold|black|heavy|semibold|demi|[-,]b\b|bx", re.IGNORECASE)
CID_RE = re.compile(r"\(cid:\d+\)")


def garbage_ratio(text: str) -> float:
    """Share of visible characters that cannot be real text.

    Counted as unreadable: the replacement character, private-use code points (what
    broken ToUnicode maps usually yield), control characters, unassigned code points,
    and ``(cid:N)`` escapes (each counts as its length).
    """
    visible = [ch for ch in text if not ch.isspace()]
    if not visible:
        return 0.0
    bad = sum(len(m.group()) for m in CID_RE.finditer(text))
    for ch in CID_RE.sub("", text):
        if ch.isspace():
            continue
        category = unicodedata.category(ch)
        if ch == "\ufffd" or category in ("Co", "Cn") or (category == "Cc"):
            bad += 1
    return bad / len(visible)


BBox = tuple[float, float, float, float]
"""(x0, y0, x1, y1) in points from the page's top-left corner, rounded to 2 decimals."""


@dataclass
class Block:
    """A text block of one page, with its dominant font size and weight."""

    page: int
    bbox: BBox
    text: str
    """The block's lines joined, words hyphenated at a line end mended."""
    size: float
    """The font size (pt) of most of the block's characters."""
    bold: bool
    n_lines: int
    heading_level: int | None = None
    """1 for a chapter-size heading, 2 for a section heading, None for body text."""
    text_source: str = "text"
    """text (the text layer as is), repaired (word spaces added from glyph positions)."""
    source_reason: str | None = None
    lines: list[str] = field(default_factory=list, repr=False)
    """The block's text lines, joined again once the document's words are known (``mend_hyphens``)."""


def _span_text(span: dict) -> str:
    return span["text"] if "text" in span else "".join(c["c"] for c in span.get("chars", []))


PARAGRAPH_END_RE = re.compile(r"(?:[.;:][)\]\"”’]*|\[reserved\])\s*$", re.IGNORECASE)
"""A line that ends a sentence ("... (49 CFR 571.214).", "S7.2.3 [Reserved]"); not "(10-1-24 Edition)"."""


HEADING_KINDS = ("roman", "chapter", "ga")
"""Label kinds that open a section only as a heading (in running text "I." or "가." is a list item)."""


def _opens_section(text: str) -> bool:
    """Whether a line opens a numbered section (S7.2.2, 5.2.1, § 571.214, Annex 3) followed by words; not a bare
    "5." list item or "I." (labels only on a heading line), nor numbers of a figure or table ("1.3  0.1")."""
    label, opening = parse_label(text), LABEL_RE.match(text)
    if label is None or opening is None or label.kind in HEADING_KINDS or (label.kind == "num" and len(label.parts) == 1):
        return False
    return label.kind == "§" or bool(re.search(r"[^\W\d_]{2}", text[opening.end():]))  # "1.3 0.1": a table's numbers


def _ends_paragraph(text: str) -> bool:
    """A line ending a sentence, and more than a label on a line of its own ("4.9." / "Annex 2 to this ...")."""
    bare = LABEL_RE.match(text + " X")  # a label must be followed by something to match
    return bool(PARAGRAPH_END_RE.search(text)) and not (bare and not re.search(r"\w", text[bare.end():]))


def split_at_sections(block: dict) -> list[tuple[dict, list[str]]]:
    """A ``rawdict`` text block cut before each line that opens a numbered section with a first-line indent right
    after a finished sentence; each part with its lines' text (``spaced_line_text``, read once per line).

    MuPDF makes one block of paragraphs set with no extra space between them (the CFR's two-column text:
    "... (49 CFR 571.214). / S7.2.2 Vehicles manufactured on or after ..."), so a section opening inside a
    block would be read as the previous section's text and its own text filed under that section."""
    lines = block.get("lines", [])
    texts = [spaced_line_text(line) for line in lines]
    stripped = [text.strip() for text in texts]
    left = min((line["bbox"][0] for line in lines), default=0.0)
    groups: list[list[int]] = [[]]
    for i, line in enumerate(lines):
        indented = line["bbox"][0] > left + 1.0  # a paragraph's first-line indent, not a quoted article at the margin
        if groups[-1] and indented and _ends_paragraph(stripped[i - 1]) and _opens_section(" ".join(stripped[i : i + 2])):
            groups.append([])
        groups[-1].append(i)
    if len(groups) == 1:
        return [(block, texts)]
    parts = []
    for group in groups:
        x0s, y0s, x1s, y1s = zip(*(lines[i]["bbox"] for i in group))
        parts.append(({**block, "lines": [lines[i] for i in group], "bbox": (min(x0s), min(y0s), max(x1s), max(y1s))},
                      [texts[i] for i in group]))
    return parts


def read_blocks(page_number: int, text_dict: dict) -> list[Block]:
    """The page's text blocks from a ``rawdict`` (cut where a numbered section opens: ``split_at_sections``); word
    spaces missing from the text layer are read from glyph gaps."""
    blocks: list[Block] = []
    raw_blocks = [raw for raw in text_dict.get("blocks", []) if raw.get("type", 0) == 0]
    for block, lines in (part for raw in raw_blocks for part in split_at_sections(raw)):
        sizes, bold_chars, n_chars = Counter(), 0, 0
        for line in block.get("lines", []):
            for span in line.get("spans", []):
                count = len(_span_text(span).strip())
                if not count:
                    continue
                sizes[round(span["size"] * 2) / 2] += count
                n_chars += count
                if span["flags"] & 16 or BOLD_FONT_RE.search(span.get("font", "")):
                    bold_chars += count
        text = join_lines(lines)
        if not text:
            continue
        size = sizes.most_common(1)[0][0] if sizes else 0.0
        item = Block(page_number, tuple(round(v, 2) for v in block["bbox"]), text, size, bold_chars > 0.6 * n_chars, len(lines))
        item.lines = lines
        added = sum(line.count(" ") for line in lines) - sum(
            _span_text(span).count(" ") for line in block.get("lines", []) for span in line.get("spans", [])
        )
        if added > 0:
            item.text_source, item.source_reason = "repaired", f"missing word spaces ({added} read from glyph gaps)"
        blocks.append(item)
    return blocks


def _inside(inner: tuple[float, ...], outer: tuple[float, ...], slack: float = 2.0) -> bool:
    cx, cy = (inner[0] + inner[2]) / 2, (inner[1] + inner[3]) / 2
    return outer[0] - slack <= cx <= outer[2] + slack and outer[1] - slack <= cy <= outer[3] + slack


def assign_headings(blocks: list[Block]) -> float:
    """Mark heading blocks (level 1 = largest) and return the body font size."""
    weights: Counter = Counter()
    for block in blocks:
        weights[block.size] += len(block.text)
    if not weights:
        return 0.0
    body = weights.most_common(1)[0][0]
    candidates = []
    for block in blocks:
        short = len(block.text) <= 120 and block.n_lines <= 3 and not block.text.endswith((".", ",", ";"))
        if not short or not re.search(r"[^\W\d_]{2}", block.text) or block.text[:1].islower():
            continue  # a line starting in lower case continues a sentence: bold words, not a heading
        if block.size >= body * 1.2 or (block.bold and block.size >= body * 1.05):
            candidates.append(block)
    sizes = sorted({b.size for b in candidates}, reverse=True)[:3]
    for block in candidates:
        block.heading_level = sizes.index(block.size) + 1 if block.size in sizes else 3
    return body


def text_blocks(page: pymupdf.Page, textpage: pymupdf.TextPage, number: int, covered: list[BBox]) -> list[Block]:
    """Text blocks, less those inside a ``covered`` box (a table's); word spaces also read from glyph positions."""
    text_dict = page.get_text("rawdict", textpage=textpage, sort=True)
    return [b for b in read_blocks(number, text_dict) if not any(_inside(b.bbox, box) for box in covered)]


def block_lines(blocks: list[Block]) -> list[str]:
    """The text lines of ``blocks`` in order (what ``Hyphenation.of_lines`` learns a document's words from)."""
    return [line for block in blocks for line in (block.lines or [block.text])]


def mend_hyphens(blocks: list[Block], hyphens: Hyphenation) -> None:
    """Join each block's lines again with the document's own words deciding its line-end hyphens."""
    for block in blocks:
        if block.lines:
            block.text = join_lines(block.lines, hyphens)
