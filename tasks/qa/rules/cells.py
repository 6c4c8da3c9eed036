"""Table-cell checks of the generator: which rows of a merged label span, what of a cell is its answer, units in labels.

A PDF table loses its merged cells: a label spanning three rows is written in one of them and the others are left
empty, so that row's values are sub-items of the label, not its total. A cell may start with a list bullet, a Korean
row label may carry its unit in brackets ("전개 시간 (ms)"), and a column of head counts ("28명") ranks nothing.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from tasks.qa.registry import rule
from tasks.qa.rules.text import josa


@rule("generate.table.merged_label", "generate", "a table's body rows (label cell and value cells)",
      "a labelled row followed by rows with an empty label but values of their own, or preceded by such rows at the top "
      "of the body, is one row of a merged label cell spanning several rows: its values are sub-items, not the label's "
      "total, so its cells are not asked")
def merged_label_rows(labels: Sequence[str], body: Sequence[Sequence[str]]) -> set[int]:
    """Indexes of labelled rows whose label cell spans further rows (the extraction left those rows' labels empty).
    An empty-labelled row continues the labelled row above it; only empty-labelled rows at the top of the body (no
    labelled row above them) belong to the first labelled row below, whose label then sits in the span's middle."""
    spanned = [not labels[i] and any(c.strip() for c in body[i][1:]) for i in range(len(body))]
    merged = {i for i in range(len(body) - 1) if labels[i] and spanned[i + 1]}
    first = next((i for i, label in enumerate(labels) if label), None)
    if first and any(spanned[:first]):
        merged.add(first)
    return merged


_BULLET_START_RE = re.compile(r"^[·•∙‧ㆍ▪◦○●■□※*\-–]\s*(?=\S)")


@rule("generate.table.cell_bullet", "generate", "a table cell's text used as an answer",
      "a list bullet the PDF put at the start of the cell ('· 여성(28명, 35%) ...') is not part of the answer")
def cell_answer(value: str) -> str:
    """The cell's text without a leading list bullet (the bullet is layout, not the value)."""
    value = value.strip()
    return value if re.fullmatch(r"[-–]\s*\d[\d.,]*\s*\S*", value) else _BULLET_START_RE.sub("", value)


_LABEL_UNIT_RE = re.compile(r"\s*\((?P<unit>mm|cm|m|ms|s|kg|g|kN|N|km/h|%|°|deg|daN|bar|kPa|Nm|J|kJ)\)")


@rule("generate.table.label_unit", "generate", "a Korean table row label that carries its unit in brackets ('전개 시간 (ms)')",
      "the unit moves from the question's subject into the question's ending: '전개 시간의 결과는 몇 ms인가요?' -> '32.5' "
      "(the answer stays the cell as written)")
def unit_from_label(question: str, value: str, label: str) -> tuple[str, str]:
    """(question, answer) with the row label's bracketed unit asked for ("몇 ms인가요?") when the answer is a bare
    number; unchanged otherwise."""
    found = _LABEL_UNIT_RE.search(label)
    if not found or not re.fullmatch(r"-?\d[\d.,]*", value.strip()) or not question.endswith("얼마인가요?"):
        return question, value
    bare = _LABEL_UNIT_RE.sub("", label).strip()
    fixed = re.sub(re.escape(label) + r"(?:은|는)", josa(bare, "은/는"), question)  # the particle follows the bare label
    fixed = fixed.replace(label, bare)
    return f"{fixed[:-len('얼마인가요?')]}몇 {found.group('unit')}인가요?", value


@rule("generate.table.head_count", "generate", "a table column whose cells count people ('28명', '7명')",
      "no 'which row is highest' question: head counts by group (women, youth, industry) overlap and are no ranking "
      "(labelled 'which item is largest over a head-count table': not useful); the cells are still asked one by one")
def head_counts(table: Any, col: int) -> bool:
    """True when most cells of the column are counts of people (a number with the counter 명); ``table``: a parsed
    ``tasks.qa.rules.tables.Table``."""
    cells = [cells[col].strip() for _, cells in table.rows if col < len(cells) and cells[col].strip() not in ("", "-")]
    return bool(cells) and sum(bool(re.fullmatch(r"[\d,]+\s?명", c)) for c in cells) >= 0.8 * len(cells)
