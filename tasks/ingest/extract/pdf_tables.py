"""Table structure beyond the grid: row spans, header and total rows, captions, tables continued on the next page.

* A cell merged over several rows is one cell in the PDF; PyMuPDF gives the rows below it no cell there
  (``None``). Its text is repeated into each row it spans, so "Frontal impact | 19" and the sub-item rows
  under it keep their label. A cell merged across columns is left once (repeating a note in every column
  would duplicate it).
* The header row is the first row when every cell is filled and none is a number.
* Rows whose first filled cell reads "Total", "Sum", "합계", "총계", "계" are total rows; they are marked
  in bold and listed in the element's ``total_rows``.
* A caption ("Table 3 ...", "표 2 ...") right above or below a table is attached to it.
* A table ending at the bottom of a page and one starting at the top of the next with as many columns
  are one table: the second's rows (less a repeated header) are appended to the first, with a note.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

Cell = tuple[float, float, float, float] | None
TOTAL_RE = re.compile(r"^\s*(\*\*)?\s*(total|sum|overall|grand total|합\s*계|총\s*계|계|소\s*계)\b", re.IGNORECASE)
NUMBER_RE = re.compile(r"^[-+−±.,%\d\s()/]+$")
CAPTION_RE = re.compile(
    r"^\s*(?i:table|tab\.|표)\s*(?:\d+(?:\.\d+)*|[A-Z])\s*(?:[:)—–-]|\.(?!\d)\s*(?:$|[A-Z가-힣(])|$|(?=[A-Z가-힣(]))"
)
"""A caption: "Table 3", "Table 3.1: ...", "Table 2 Injury criteria", "표 2 ..."; not "Table 3.1 summarises ..."."""
CAPTION_GAP_PT = 30.0


def fill_row_spans(
    cells: Sequence[Sequence[Cell]], row_boxes: Sequence[tuple], texts: list[list[str | None]]
) -> list[list[str | None]]:
    """``texts`` with the text of a cell merged over several rows repeated in each row it covers."""
    out = [list(row) for row in texts]
    for r in range(1, len(cells)):
        middle = (row_boxes[r][1] + row_boxes[r][3]) / 2
        for c, cell in enumerate(cells[r]):
            if cell is not None or c >= len(out[r]):
                continue
            for up in range(r - 1, -1, -1):
                owner = cells[up][c] if c < len(cells[up]) else None
                if owner is None:
                    continue
                if owner[3] > middle:  # the cell above reaches down into this row: a row span
                    out[r][c] = out[up][c]
                break
    return out


def header_rows(rows: Sequence[Sequence[str | None]]) -> int:
    """1 when the first row reads as a header (every cell filled, none a number), else 0."""
    if len(rows) < 2 or not rows[0]:
        return 0
    first = [(c or "").strip() for c in rows[0]]
    return int(all(first) and not any(NUMBER_RE.match(c) for c in first))


def total_rows(rows: Sequence[Sequence[str | None]]) -> list[int]:
    """Indices of the rows whose first filled cell says they are totals."""
    found = []
    for i, row in enumerate(rows):
        first = next((c for c in row if c and c.strip()), "")
        if i and TOTAL_RE.match(first):
            found.append(i)
    return found


def mark_totals(rows: list[list[str | None]], totals: Sequence[int]) -> list[list[str | None]]:
    """Total rows with their label cell in bold."""
    out = [list(r) for r in rows]
    for i in totals:
        for c, cell in enumerate(out[i]):
            if cell and cell.strip():
                out[i][c] = f"**{cell.strip()}**"
                break
    return out


def continues(first_rows: Sequence[Sequence[str | None]], next_rows: Sequence[Sequence[str | None]]) -> list[list[str | None]]:
    """The rows of a continuation to append: without its first row when that repeats the first table's header."""
    rows = [list(r) for r in next_rows]
    if rows and first_rows and [(c or "").strip() for c in rows[0]] == [(c or "").strip() for c in first_rows[0]]:
        rows = rows[1:]
    return rows


def is_caption(text: str) -> bool:
    """Whether a text block is a table caption ("Table 3 ...", "표 2 ...")."""
    return bool(CAPTION_RE.match(text)) and len(text) <= 200
