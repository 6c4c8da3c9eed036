"""Reading the Markdown that ragprep writes: table rows, numbers in cells, ``Key: value`` lines.

Shared by the offline rules of several stages (headers, describe, qa).
"""

from __future__ import annotations

import re

KEY_VALUE_RE = re.compile(r"^\s*(?:[-*]\s*)?(?:\*\*)?(?P<key>[^:：|#>]{1,40}?)(?:\*\*)?\s*[:：]\s*(?P<value>\S.*?)\s*$")
"""A ``Key: value`` line (bullet and bold markers allowed around the key; full-width colon too)."""


def row_cells(line: str) -> list[str]:
    """The cells of one Markdown table row, stripped (outer pipes dropped; an empty cell is ``""``)."""
    return [c.strip() for c in line.strip().strip("|").split("|")]


def table_rows(markdown: str) -> list[list[str]]:
    """The cells of every Markdown table row in the text (separator rows skipped)."""
    rows = []
    for line in markdown.splitlines():
        if line.strip().startswith("|"):
            cells = row_cells(line)
            if not all(set(c) <= set("-: ") for c in cells):
                rows.append(cells)
    return rows


def markdown_tables(markdown: str, min_rows: int = 1) -> list[list[list[str]]]:
    """Each Markdown table of the text (a run of lines starting with '|') as its rows of cells, separator rows
    dropped; tables with fewer than ``min_rows`` such rows are left out."""
    tables, block = [], []
    for line in [*markdown.splitlines(), ""]:
        if line.strip().startswith("|"):
            block.append(line)
        elif block:
            tables.append(table_rows("\n".join(block)))
            block = []
    return [t for t in tables if t and len(t) >= min_rows]


def parse_number(text: str) -> float | None:
    """The number a cell holds (thousands commas allowed), or None."""
    try:
        return float(text.replace(",", ""))
    except ValueError:
        return None
