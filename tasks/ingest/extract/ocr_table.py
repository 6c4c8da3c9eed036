"""Reading a picture of a table as a table: OCR word boxes grouped into rows and columns, kept only when the grid is real.

Result tables in crash-test decks are often screenshots (a spreadsheet, a test system's output). Their plain OCR
text loses the grid: a value no longer says which row and column it belongs to. Here the word boxes Tesseract
reports (``OcrResult.words``) are grouped

- into **rows** by their vertical centre (a word joins a row when its centre lies within half a line height of it);
- within a row into **cells** by horizontal gaps wider than ``CELL_GAP`` line heights;
- into **columns** by the overlap of the cells' horizontal extents across rows (overlapping extents are one column).

The rows kept are the longest run of consecutive rows with two or more cells and no gap of more than ``MAX_PITCH``
times the run's usual row pitch; a one-cell row directly above it whose cells fall in the run's columns is its
header. The grid counts as real (``grid_verdict``) only when it holds ``MIN_COVERAGE`` of the words, has at least
``MIN_ROWS`` rows and ``MIN_COLS`` columns, at least ``MIN_FILL`` of its cells are filled and every column in at
least ``MIN_COLUMN_FILL`` of its rows, each column's cells line up (left, centre or right edges within
``ALIGN_TOLERANCE`` line heights for ``MIN_ALIGNED`` of them), at least one column holds values
(``MIN_VALUE_SHARE`` of its body cells numbers, ``nan`` or a dash), and something labels them (a header row or a
first column with words). Charts (tick labels in one column, or grids of numbers with no label), screenshots of
code and prose fail these tests and keep their cleaned OCR text. When the whole picture fails, the words on either
side of each empty vertical band are tried on their own (a chart with a small results table beside it), unless
the other side has words level with most of its rows (then the band is a column gap of one larger table).
"""

from __future__ import annotations

import re
import statistics
from dataclasses import dataclass

MIN_ROWS = 3
MIN_COLS = 2
MIN_FILL = 0.7
MIN_COLUMN_FILL = 0.5
CELL_GAP = 1.2
"""A horizontal gap wider than this many line heights separates two cells of a row."""
MAX_PITCH = 2.5
"""A vertical step over this many times the usual row pitch ends the table."""
ALIGN_TOLERANCE = 1.0
MIN_ALIGNED = 0.8
MIN_VALUE_SHARE = 0.5
MIN_WORD_CONFIDENCE = 20.0
MIN_COVERAGE = 0.6
MAX_SHARED_ROWS = 0.4
"""A table on one side of an empty band is its own only when fewer than this share of its rows have words level
with them on the other side (else the band is a column gap of a larger table)."""
LEVEL_CONFIDENCE = 60.0
"""Only words read at this confidence or more (and with two or more letters or digits: curves read as text give
single marks) count as level with a row on the other side."""
"""The grid must hold at least this share of the picture's (or picture side's) words: a run of rows cut out of a
larger table whose multi-line cells break the rows, or out of a page of text, is no table of its own."""
NUMBER_RE = re.compile(r"^[-+−–(]?\d[\d.,:/]*%?\)?$|^[-+−–]?[.,]\d+$")
VALUE_WORDS = {"nan", "n/a", "na", "-", "–", "—", "x", "o", "ok", "pass", "fail", "yes", "no"}
RULE_RESIDUE_RE = re.compile(r"^[|¦_~=—–\-]{2,}$|^[|¦]$")
"""Tokens that are what is left of a ruling line (``|``, ``——``), not text."""


@dataclass(frozen=True)
class _Box:
    text: str
    x0: float
    y0: float
    x1: float
    y1: float
    conf: float = 100.0

    @property
    def cy(self) -> float:
        return (self.y0 + self.y1) / 2

    @property
    def h(self) -> float:
        return self.y1 - self.y0


@dataclass
class _Row:
    words: list[_Box]

    @property
    def cy(self) -> float:
        return statistics.fmean(w.cy for w in self.words)

    @property
    def h(self) -> float:
        return statistics.median(w.h for w in self.words)


def _boxes(words) -> list[_Box]:
    """The usable word boxes: confident enough, with text that is not a ruling line's residue."""
    boxes = []
    for text, conf, left, top, width, height in words:
        text = str(text).strip()
        if not text or float(conf) < MIN_WORD_CONFIDENCE or RULE_RESIDUE_RE.match(text) or height <= 0:
            continue
        boxes.append(_Box(text, float(left), float(top), float(left + width), float(top + height), float(conf)))
    return boxes


def _rows(boxes: list[_Box]) -> list[_Row]:
    """Words grouped into rows by vertical centre, top to bottom."""
    rows: list[_Row] = []
    for box in sorted(boxes, key=lambda b: b.cy):
        if rows and abs(box.cy - rows[-1].cy) <= 0.5 * max(rows[-1].h, box.h):
            rows[-1].words.append(box)
        else:
            rows.append(_Row([box]))
    return rows


def _cells(row: _Row) -> list[_Box]:
    """A row's words joined into cells, split where the horizontal gap is wider than ``CELL_GAP`` line heights."""
    words = sorted(row.words, key=lambda b: b.x0)
    gap = CELL_GAP * row.h
    cells = [[words[0]]]
    for word in words[1:]:
        if word.x0 - cells[-1][-1].x1 > gap:
            cells.append([word])
        else:
            cells[-1].append(word)
    return [_Box(" ".join(w.text for w in cell), cell[0].x0, min(w.y0 for w in cell), max(w.x1 for w in cell),
                 max(w.y1 for w in cell)) for cell in cells]


def _run(rows: list[list[_Box]], centres: list[float]) -> tuple[int, int]:
    """[start, end) of the longest run of consecutive rows with two or more cells and a regular row pitch."""
    best, start = (0, 0), None
    pitches = [b - a for a, b in zip(centres, centres[1:], strict=False)]
    usual = statistics.median(pitches) if pitches else 0.0
    for i, cells in enumerate([*rows, []]):
        broken = len(cells) < 2 or (start is not None and i > start and pitches[i - 1] > MAX_PITCH * usual)
        if broken and start is not None:
            if i - start > best[1] - best[0]:
                best = (start, i)
            start = None
        if len(cells) >= 2 and start is None:
            start = i
    return best


def _columns(rows: list[list[_Box]]) -> list[tuple[float, float]]:
    """Column extents: the cells' horizontal extents merged where they overlap, left to right."""
    spans = sorted((c.x0, c.x1) for cells in rows for c in cells)
    columns: list[list[float]] = []
    for x0, x1 in spans:
        if columns and x0 < columns[-1][1]:
            columns[-1][1] = max(columns[-1][1], x1)
        else:
            columns.append([x0, x1])
    return [(a, b) for a, b in columns]


def _placed(rows: list[list[_Box]], columns: list[tuple[float, float]]) -> list[list[_Box | None]]:
    """Each row's cells put in their column (cells falling in the same column joined)."""
    grid: list[list[_Box | None]] = []
    for cells in rows:
        line: list[_Box | None] = [None] * len(columns)
        for cell in cells:
            k = next(i for i, (a, b) in enumerate(columns) if cell.x0 < b and cell.x1 > a)
            old = line[k]
            line[k] = cell if old is None else _Box(old.text + " " + cell.text, old.x0, old.y0, cell.x1, cell.y1)
        grid.append(line)
    return grid


def is_value(text: str) -> bool:
    """A cell that holds a value: a number (first token), ``nan``, a dash or a pass/fail mark."""
    first = text.split()[0] if text.split() else ""
    return bool(NUMBER_RE.match(first)) or text.strip().lower() in VALUE_WORDS


def _aligned(cells: list[_Box], height: float) -> bool:
    """Whether a column's cells line up on their left, centre or right edges."""
    if len(cells) < 2:
        return True
    tolerance = ALIGN_TOLERANCE * height
    for edge in (lambda c: c.x0, lambda c: (c.x0 + c.x1) / 2, lambda c: c.x1):
        values = [edge(c) for c in cells]
        middle = statistics.median(values)
        if sum(abs(v - middle) <= tolerance for v in values) >= MIN_ALIGNED * len(values):
            return True
    return False


def _checks(grid: list[list[_Box | None]], height: float) -> str | None:
    """Why the grid is not a real table, or None when it is."""
    n_rows, n_cols = len(grid), len(grid[0]) if grid else 0
    if n_rows < MIN_ROWS or n_cols < MIN_COLS:
        return f"{n_rows}x{n_cols} grid is smaller than {MIN_ROWS}x{MIN_COLS}"
    filled = sum(cell is not None for line in grid for cell in line)
    if filled < MIN_FILL * n_rows * n_cols:
        return f"only {filled} of {n_rows * n_cols} cells filled"
    columns = [[line[k] for line in grid if line[k] is not None] for k in range(n_cols)]
    if any(len(cells) < MIN_COLUMN_FILL * n_rows for cells in columns):
        return "a column is mostly empty"
    if not all(_aligned(cells, height) for cells in columns):
        return "column edges do not line up"
    body = grid[1:]
    value_columns = [k for k in range(n_cols)
                     if sum(1 for line in body if line[k] is not None and is_value(line[k].text))
                     >= MIN_VALUE_SHARE * len(body)]
    if not value_columns:
        return "no column of values"
    header_words = any(cell is not None and not is_value(cell.text) for cell in grid[0])
    stub_words = sum(1 for line in body if line[0] is not None and not is_value(line[0].text)) >= MIN_VALUE_SHARE * len(body)
    if not (header_words or stub_words):
        return "nothing labels the values (no header row or first column of words)"
    return None


def _gutters(boxes: list[_Box]) -> list[tuple[float, float]]:
    """Vertical bands no word box crosses, wider than ``CELL_GAP`` line heights (between side-by-side parts of a
    picture, and between the columns of a table)."""
    height = statistics.median(b.h for b in boxes)
    bands, right = [], None
    for box in sorted(boxes, key=lambda b: b.x0):
        if right is not None and box.x0 - right > CELL_GAP * height:
            bands.append((right, box.x0))
        right = box.x1 if right is None else max(right, box.x1)
    return bands


def _verdict(boxes: list[_Box]) -> tuple[list[list[str]] | None, str, list[_Row]]:
    """The grid in these word boxes, or None, why not, and the rows the grid was read from."""
    rows = _rows(boxes)
    if len(rows) < MIN_ROWS:
        return None, "fewer than 3 lines of words", []
    cells = [_cells(row) for row in rows]
    start, end = _run(cells, [row.cy for row in rows])
    if end - start < 2:
        return None, "no run of lines with two or more cells", []
    kept = cells[start:end]
    columns = _columns(kept)
    above = cells[start - 1] if start > 0 else []
    if above and all(any(c.x0 < b and c.x1 > a for a, b in columns) for c in above):
        kept = [above, *kept]  # a header row with fewer cells (e.g. one label over the value column)
    grid = _placed(kept, columns)
    height = statistics.median(row.h for row in rows[start:end])
    used = rows[start - (len(kept) - (end - start)):end]
    in_grid = sum(len(row.words) for row in used)
    if in_grid < MIN_COVERAGE * len(boxes):
        return None, f"the grid holds only {in_grid} of {len(boxes)} words (a fragment of a larger layout)", used
    reason = _checks(grid, height)
    if reason:
        return None, reason, used
    texts = [[cell.text if cell is not None else "" for cell in line] for line in grid]
    return texts, f"table {len(grid)}x{len(columns)}", used


def _beside(rows: list[_Row], other: list[_Box]) -> bool:
    """Whether confidently read words (two or more letters or digits) on the other side of a band line up with most
    of these rows (then the band is a gap between columns of one table, not between a table and something else,
    such as a chart whose curves Tesseract reads as scattered low-confidence marks)."""
    other = [b for b in other if b.conf >= LEVEL_CONFIDENCE and sum(ch.isalnum() for ch in b.text) >= 2]
    level = sum(any(abs(b.cy - row.cy) <= 0.5 * row.h for b in other) for row in rows)
    return level >= MAX_SHARED_ROWS * len(rows)


def grid_verdict(words) -> tuple[list[list[str]] | None, str]:
    """The table in OCR word boxes ``(text, confidence, left, top, width, height)`` as rows of cell texts, or None,
    with the reason (``"table RxC"`` or why the words are not a grid).

    When the whole picture is no table, each side of every empty vertical band is tried on its own: a screenshot
    often puts a chart and a small table side by side. The largest table found wins."""
    boxes = _boxes(words)
    if not boxes:
        return None, "no words"
    grid, reason, _ = _verdict(boxes)
    if grid:
        return grid, reason
    found = []
    for left, right in _gutters(boxes):
        west = [b for b in boxes if b.x1 <= left]
        east = [b for b in boxes if b.x0 >= right]
        for part, other in ((west, east), (east, west)):
            part_grid, part_reason, rows = _verdict(part)
            if part_grid and not _beside(rows, other):
                found.append((len(part_grid) * len(part_grid[0]), part_grid, part_reason + " (one side of the picture)"))
    if found:
        _, grid, reason = max(found, key=lambda f: f[0])
        return grid, reason
    return None, reason


def read_table(words) -> list[list[str]] | None:
    """The table in OCR word boxes as rows of cell texts (first row the header), or None when they are not a grid."""
    return grid_verdict(words)[0]
