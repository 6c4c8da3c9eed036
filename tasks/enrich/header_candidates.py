"""Where real test reports put their header fields, read as candidates with a source and a confidence.

The offline header rule takes the most trusted candidate per field; the LLM prompt is shown the same
candidates, so a model sees what the rules see. Sources, most trusted first:

- ``table`` (0.95): a table on the first slides with the labels in its first column (values to the
  right, merged label cells skipped) or in its first row (values in the row below; only for a table
  of exactly two rows with at least two labels, so a results table whose header has "Stage" is no
  header); 2 x N and N x 2 grids of label, value, label, value;
- ``key-value`` (0.9): ``Test Name: ...`` / ``시험명 : ...`` lines (full-width colons too);
- ``boxes`` (0.85): a text box holding only labels and a box on the same row to its right holding
  as many lines (or one label box beside one value box);
- ``title`` (0.6): a stage or region token in the title line ("Frontal ODB — Project KX7, P2"), and
  the test name before the dash when the rest names a project or stage;
- ``file name`` (0.5): region and stage tokens of the file name (``..._EU_P2.pptx``).

Values are normalised (NFKC: full-width characters; whitespace) and never invented: each is text of
the document or its file name.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from ragprep.markdown import KEY_VALUE_RE, markdown_tables

CONFIDENCE = {"expert": 1.0, "table": 0.95, "key-value": 0.9, "boxes": 0.85, "model": 0.7, "title": 0.6, "file name": 0.5}
"""How much each source is trusted."""

REGION_TOKENS = {
    "eu": "EU", "europe": "EU", "us": "US", "usa": "US", "na": "NA", "kr": "KR", "korea": "KR", "cn": "CN",
    "china": "CN", "jp": "JP", "japan": "JP", "in": "IN", "india": "IN", "global": "Global",
}
STAGE_TOKENS = {"p1": "P1", "p2": "P2", "p3": "P3", "proto": "Prototype", "dv": "DV", "pv": "PV", "sop": "SOP", "pilot": "Pilot"}
_TITLE_SPLIT_RE = re.compile(r"\s+[—–-]\s+|\s*[|:]\s+")
_PROJECT_RE = re.compile(r"\b(?:project|프로젝트)\s+\w+", re.IGNORECASE)


@dataclass(frozen=True)
class Candidate:
    """One reading of one header field."""

    field: str
    value: str
    source: str
    """Where it was read: ``slide 1 table r2c2``, ``slide 1 key-value``, ``slide 2 boxes``, ``slide 1 title``, ``file name``."""
    confidence: float


@dataclass(frozen=True)
class SlideText:
    """What the header rules read of one slide: its Markdown and its text boxes (text, bbox in points)."""

    number: int
    markdown: str
    title: str = ""
    boxes: tuple[tuple[str, tuple[float, float, float, float]], ...] = ()


def normalise_value(text: str) -> str:
    """Full-width characters folded (NFKC), Markdown emphasis and surrounding punctuation dropped, spaces collapsed."""
    text = unicodedata.normalize("NFKC", text).replace("**", "")
    return " ".join(text.split()).strip(" :;,-|")


def _label_key(text: str) -> str:
    return " ".join(normalise_value(text).lower().rstrip(":").split())


class Labels:
    """Which configured field a label names (aliases from settings, each field also by its own name)."""

    def __init__(self, fields: Sequence[str], aliases: dict[str, list[str]]) -> None:
        self.fields = list(fields)
        self._lookup: dict[str, str] = {}
        for name in fields:
            for alias in [name, *aliases.get(name, [])]:
                self._lookup.setdefault(_label_key(alias), name)

    def field_of(self, text: str) -> str | None:
        """The field a cell, line or box names, or None."""
        return self._lookup.get(_label_key(text)) if text and len(text) <= 40 else None


def _cell_value(row: Sequence[str], start: int, label: str, labels: Labels) -> tuple[int, str] | None:
    """The first cell right of ``start`` that is neither the label repeated (a merged cell) nor another label."""
    for index in range(start + 1, len(row)):
        cell = normalise_value(row[index])
        if not cell or _label_key(cell) == _label_key(label):
            continue
        return (index, cell) if labels.field_of(cell) is None else None
    return None


def _column_candidates(table: list[list[str]], labels: Labels, where: str) -> Iterable[Candidate]:
    """Labels with their value to the right, in a table that is a label/value table: labels in the first
    cell of two or more rows, two or more label/value pairs in one row, or a single label/value row.
    (A results table whose header row starts with "Stage" is none of these.)"""
    first_cells = sum(1 for row in table if row and labels.field_of(row[0]))
    for r, row in enumerate(table, start=1):
        pairs = [(c, labels.field_of(cell), _cell_value(row, c, cell, labels)) for c, cell in enumerate(row)]
        pairs = [(c, field, found) for c, field, found in pairs if field and found]
        if not (first_cells >= 2 or len(pairs) >= 2 or (len(table) == 1 and pairs)):
            continue
        for _, field, found in pairs:
            yield Candidate(field, found[1], f"{where} table r{r}c{found[0] + 1}", CONFIDENCE["table"])


def _row_candidates(table: list[list[str]], labels: Labels, where: str) -> Iterable[Candidate]:
    """A two-row table whose first row holds the labels (two or more) and whose second row holds only values."""
    if len(table) != 2:
        return
    head, values = table
    named = [(c, labels.field_of(cell)) for c, cell in enumerate(head)]
    if sum(1 for _, f in named if f) < 2 or any(labels.field_of(cell) for cell in values):
        return  # fewer than two labels, or a label/value grid (labels in the second row too)
    seen: set[str] = set()
    for c, field in named:
        if field and field not in seen and c < len(values) and normalise_value(values[c]):
            seen.add(field)
            yield Candidate(field, normalise_value(values[c]), f"{where} table r2c{c + 1}", CONFIDENCE["table"])


def table_candidates(slide: SlideText, labels: Labels) -> list[Candidate]:
    """Header fields from the slide's tables, in either orientation."""
    out: list[Candidate] = []
    where = f"slide {slide.number}"
    for table in markdown_tables(slide.markdown):
        row_wise = list(_row_candidates(table, labels, where))
        out += row_wise or list(_column_candidates(table, labels, where))
    return out


def key_value_candidates(slide: SlideText, labels: Labels) -> list[Candidate]:
    """``Label: value`` lines outside tables."""
    out: list[Candidate] = []
    for line in slide.markdown.splitlines():
        if line.strip().startswith("|"):
            continue
        match = KEY_VALUE_RE.match(line)
        field = labels.field_of(match.group("key")) if match else None
        if field and normalise_value(match.group("value")):
            out.append(Candidate(field, normalise_value(match.group("value")), f"slide {slide.number} key-value",
                                 CONFIDENCE["key-value"]))
    return out


def _same_row(a: Sequence[float], b: Sequence[float]) -> bool:
    overlap = min(a[3], b[3]) - max(a[1], b[1])
    return overlap > 0.5 * min(a[3] - a[1], b[3] - b[1])


def box_candidates(slide: SlideText, labels: Labels) -> list[Candidate]:
    """A box of labels and the nearest box to its right on the same row, paired line by line."""
    out: list[Candidate] = []
    lines_of = [([normalise_value(x) for x in text.splitlines() if normalise_value(x)], bbox) for text, bbox in slide.boxes]
    for lines, bbox in lines_of:
        fields = [labels.field_of(line) for line in lines]
        if not lines or not all(fields):
            continue
        right = [(other_bbox[0], other) for other, other_bbox in lines_of
                 if other_bbox[0] >= bbox[2] - 2 and _same_row(bbox, other_bbox) and other is not lines]
        if not right:
            continue
        values = min(right, key=lambda item: item[0])[1]
        if len(values) != len(lines) or any(labels.field_of(v) for v in values):
            continue
        out += [Candidate(f, v, f"slide {slide.number} boxes", CONFIDENCE["boxes"]) for f, v in zip(fields, values)]
    return out


def title_candidates(slide: SlideText, labels: Labels) -> list[Candidate]:
    """Stage/region tokens of the title line, and the test name before its dash when the rest names a project or stage."""
    title = normalise_value(slide.title)
    if not title:
        return []
    out: list[Candidate] = []
    where = f"slide {slide.number} title"
    out += token_candidates(title, labels, where, CONFIDENCE["title"])
    parts = _TITLE_SPLIT_RE.split(title, maxsplit=1)
    rest = parts[1] if len(parts) == 2 else ""
    if rest and (_PROJECT_RE.search(rest) or out) and "Test Name" in labels.fields:
        out.append(Candidate("Test Name", normalise_value(parts[0]), where, CONFIDENCE["title"]))
    return out


def token_candidates(text: str, labels: Labels, where: str, confidence: float) -> list[Candidate]:
    """Region and stage tokens (``EU``, ``P2``, ``Pilot``) of a title or file name."""
    tokens = [t.lower() for t in re.split(r"[^0-9A-Za-z]+", text) if t]
    out: list[Candidate] = []
    for field, table in (("Region", REGION_TOKENS), ("Stage", STAGE_TOKENS)):
        hit = next((table[t] for t in tokens if t in table), None)
        if hit and field in labels.fields:
            out.append(Candidate(field, hit, where, confidence))
    return out


def header_candidates(slides: Sequence[SlideText], file_name: str, labels: Labels) -> list[Candidate]:
    """Every candidate of every field, most trusted first (then slide order)."""
    found: list[Candidate] = []
    for slide in slides:
        found += table_candidates(slide, labels) + key_value_candidates(slide, labels) + box_candidates(slide, labels)
        found += title_candidates(slide, labels)
    found += token_candidates(Path(file_name).stem, labels, "file name", CONFIDENCE["file name"])
    return sorted(found, key=lambda c: -c.confidence)


def best_per_field(candidates: Iterable[Candidate], fields: Sequence[str]) -> dict[str, Candidate | None]:
    """The most trusted candidate of each field (the first slide wins a tie), or None."""
    best: dict[str, Candidate | None] = {f: None for f in fields}
    for candidate in candidates:
        if candidate.field in best and best[candidate.field] is None:
            best[candidate.field] = candidate
    return best
