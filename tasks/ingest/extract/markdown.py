"""Rendering extracted structures (tables, charts, bullets) as Markdown."""

from __future__ import annotations

import re
from collections.abc import Sequence

_WS_RE = re.compile(r"\s+")


def clean_cell(text: str | None) -> str:
    """One table cell on one line: whitespace collapsed, pipes escaped."""
    if text is None:
        return ""
    return _WS_RE.sub(" ", text).strip().replace("|", "\\|")


def markdown_table(rows: Sequence[Sequence[str | None]], header_rows: int = 1) -> str:
    """A GitHub-flavoured Markdown table; the first row is the header.

    Ragged rows are padded; a table with a single row still gets a header separator so
    every renderer shows it as a table.
    """
    grid = [[clean_cell(cell) for cell in row] for row in rows if row is not None]
    grid = [row for row in grid if any(row)]
    if not grid:
        return ""
    width = max(len(row) for row in grid)
    grid = [row + [""] * (width - len(row)) for row in grid]
    header, body = grid[0], grid[1:]
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(["---"] * width) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in body]
    return "\n".join(lines)


def format_number(value: float | int | None) -> str:
    """A number for a table cell: empty for None, whole floats without decimals, other floats in ``g`` format."""
    if value is None:
        return ""
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e15:
        return str(int(value))
    return f"{value:g}" if isinstance(value, float) else str(value)


def chart_markdown(
    title: str | None,
    chart_type: str,
    categories: Sequence[str],
    series: Sequence[tuple[str, Sequence[float | None]]],
) -> str:
    """A chart as a data table: one row per category, one column per named series."""
    heading = f"**Chart: {title}** ({chart_type})" if title else f"**Chart** ({chart_type})"
    n_rows = max([len(categories)] + [len(values) for _, values in series]) if series else len(categories)
    cats = list(categories) + [str(i + 1) for i in range(len(categories), n_rows)]
    rows: list[list[str]] = [["Category"] + [name for name, _ in series]]
    for i in range(n_rows):
        rows.append([cats[i]] + [format_number(values[i]) if i < len(values) else "" for _, values in series])
    return heading + "\n\n" + markdown_table(rows)


def bullet(text: str, level: int) -> str:
    """A Markdown list item, indented two spaces per level."""
    return "  " * max(level, 0) + "- " + text


def quote_block(label: str, text: str) -> str:
    """A clearly marked block, used for OCR text joined into a chunk."""
    lines = [f"> **{label}**"] + [f"> {line}" if line else ">" for line in text.splitlines()]
    return "\n".join(lines)
