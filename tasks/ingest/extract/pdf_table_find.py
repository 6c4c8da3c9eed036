"""PDF tables found on a page: ruled regions that gate ``find_tables``, cell texts from the page's words.

``find_tables`` (line strategy, without the layout model) finds the grids; their cells are filled from the
page's words and their structure (row spans, header and total rows) comes from ``pdf_tables``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pymupdf

from ragprep.engines.hyphens import Hyphenation
from ragprep.engines.pdf import join_lines, page_words
from tasks.ingest.extract.markdown import markdown_table
from tasks.ingest.extract.pdf_tables import fill_row_spans, header_rows, mark_totals, total_rows
from tasks.ingest.extract.pdf_text import BBox


@dataclass
class Table:
    """A detected table: its cell texts (row spans filled), rendered as Markdown."""

    bbox: BBox
    cells: list[list[str | None]]
    cols: int
    caption: str | None = None
    continued_pages: list[int] = field(default_factory=list)
    """Pages the table continues on (joined into this one)."""

    @property
    def rows(self) -> int:
        """Number of rows."""
        return len(self.cells)

    @property
    def markdown(self) -> str:
        """The caption (bold), the table as Markdown (header row detected, totals in bold), a continuation note."""
        totals = total_rows(self.cells)
        grid = mark_totals(self.cells, totals)
        if not header_rows(self.cells):
            grid = [[""] * self.cols] + grid  # no header row in the table: an empty Markdown header
        text = markdown_table(grid)
        if text and self.caption:
            text = f"**{self.caption}**\n\n{text}"
        if text and self.continued_pages:
            pages = ", ".join(str(p) for p in self.continued_pages)
            text += f"\n\n(Table continued on page {pages}; joined here.)"
        return text

    def facts(self) -> dict:
        """The element meta of the table."""
        return {
            "rows": self.rows,
            "cols": self.cols,
            "header_rows": header_rows(self.cells),
            "total_rows": total_rows(self.cells) or None,
            "caption": self.caption,
            "continued_pages": self.continued_pages or None,
        }


def _table_rows(table, words: list[tuple]) -> list[list[str | None]]:
    """Cell texts assembled from the page's words (read once per page).

    ``Table.extract()`` in PyMuPDF 2.0 reorders punctuation inside cells ("1.0" comes
    back as "1 0\\n."), and ``get_textbox`` per cell rescans every character of the page
    in Python; words placed by their centre into cell boxes are exact and cheap.
    """
    rows: list[list[str | None]] = []
    for row in table.rows:
        cells: list[str | None] = []
        for cell in row.cells:
            if cell is None:
                cells.append(None)
                continue
            x0, y0, x1, y1 = cell
            inside = [
                w for w in words
                if x0 <= (w[0] + w[2]) / 2 <= x1 and y0 <= (w[1] + w[3]) / 2 <= y1
            ]
            inside.sort(key=lambda w: (w[5], w[6], w[7]))  # block, line, word order
            lines: dict[tuple[int, int], list[str]] = {}
            for w in inside:
                lines.setdefault((w[5], w[6]), []).append(w[4])
            cells.append("\n".join(" ".join(line) for line in lines.values()))  # lines joined by ``mend_cells``
        rows.append(cells)
    return rows


def ruled_regions(page: pymupdf.Page, min_lines: int = 3, slack: float = 2.0) -> list[pymupdf.Rect]:
    """Areas of the page where drawn rules form a grid: candidates for ruled tables.

    Horizontal and vertical rules (from lines and rectangle edges) that touch are grouped;
    a group with rules at ``min_lines`` distinct heights and ``min_lines`` distinct x
    positions (a 2x2 table has three of each) is a candidate. ``find_tables`` with the
    line strategy can only find such tables, so pages without one skip its costly
    per-character analysis.
    """
    segments: list[tuple[float, float, float, float, bool]] = []  # x0, y0, x1, y1, horizontal
    for path in page.get_cdrawings():
        for item in path.get("items", ()):
            if item[0] == "re":
                x0, y0, x1, y1 = item[1]
                x0, x1, y0, y1 = min(x0, x1), max(x0, x1), min(y0, y1), max(y0, y1)
                if x1 - x0 > 3:
                    segments += [(x0, y0, x1, y0, True), (x0, y1, x1, y1, True)]
                if y1 - y0 > 3:
                    segments += [(x0, y0, x0, y1, False), (x1, y0, x1, y1, False)]
            elif item[0] == "l":
                (ax, ay), (bx, by) = item[1], item[2]
                if abs(ay - by) < 1 and abs(ax - bx) > 3:
                    segments.append((min(ax, bx), ay, max(ax, bx), ay, True))
                elif abs(ax - bx) < 1 and abs(ay - by) > 3:
                    segments.append((ax, min(ay, by), ax, max(ay, by), False))
    groups: list[list] = []  # [x0, y0, x1, y1, rows, columns]
    for x0, y0, x1, y1, horizontal in segments:
        merged = [x0 - slack, y0 - slack, x1 + slack, y1 + slack, set(), set()]
        (merged[4] if horizontal else merged[5]).add(round(y0 if horizontal else x0))
        keep = []
        for group in groups:
            if group[0] <= merged[2] and merged[0] <= group[2] and group[1] <= merged[3] and merged[1] <= group[3]:
                merged = [min(group[0], merged[0]), min(group[1], merged[1]), max(group[2], merged[2]),
                          max(group[3], merged[3]), group[4] | merged[4], group[5] | merged[5]]
            else:
                keep.append(group)
        groups = keep + [merged]
    return [
        pymupdf.Rect(g[0], g[1], g[2], g[3]) for g in groups if len(g[4]) >= min_lines and len(g[5]) >= min_lines
    ]


def find_tables(page: pymupdf.Page, textpage: pymupdf.TextPage, number: int, warnings: list[str]) -> list[Table]:
    """Ruled tables of page ``number`` as Markdown; a detection failure becomes one of its ``warnings``."""
    # find_tables(clip=...) finds nothing in PyMuPDF 2.0, so the regions only gate
    # whether the whole page is searched.
    found_tables = []
    if ruled_regions(page):
        try:
            found_tables = page.find_tables(use_layout=False).tables
        except Exception as exc:  # table detection is best effort per page
            warnings.append(f"page {number}: table detection failed: {type(exc).__name__}: {exc}")
    tables: list[Table] = []
    words: list[tuple] | None = None
    for table in found_tables:
        if words is None:
            words = page_words(page, textpage)
        rows = fill_row_spans([row.cells for row in table.rows], [row.bbox for row in table.rows], _table_rows(table, words))
        if not markdown_table(rows):
            continue
        box = tuple(round(v, 2) for v in table.bbox)
        tables.append(Table(bbox=box, cells=rows, cols=table.col_count))
    return tables


def mend_cells(tables: list[Table], hyphens: Hyphenation) -> None:
    """Each cell's lines joined with spaces, a line-end hyphen resolved by the document's words (``hyphens``)."""
    for table in tables:
        table.cells = [[join_lines(cell.split("\n"), hyphens) if cell else cell for cell in row] for row in table.cells]


def cell_lines(tables: list[Table]) -> list[str]:
    """The text lines of the tables' cells (before ``mend_cells`` joins them)."""
    return [line for table in tables for row in table.cells for cell in row if cell for line in cell.split("\n")]
