"""A summary formatted once: the same rows render as a rich table on the terminal and as
Markdown for a Prefect artifact (the core never imports Prefect; flows publish the Markdown)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from rich.table import Table


def _cell(value: object) -> str:
    return "" if value is None else str(value)


@dataclass(frozen=True)
class Report:
    """A titled table with optional lines before (``lead``) and after (``notes``) it."""

    title: str
    columns: list[str]
    rows: list[list[object]] = field(default_factory=list)
    lead: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    shared_in_caption: bool = False
    """The rich table names a text column whose cells are all the same once, in its caption (the Markdown keeps it)."""

    def markdown(self) -> str:
        """GitHub-flavoured Markdown: lead lines, the table, the notes."""
        lines = list(self.lead)
        if lines:
            lines.append("")
        if self.columns and self.rows:
            lines.append("| " + " | ".join(self.columns) + " |")
            lines.append("|" + "---|" * len(self.columns))
            lines += ["| " + " | ".join(_cell(v).replace("|", "\\|") for v in row) + " |" for row in self.rows]
        if self.notes:
            lines += [""] + list(self.notes)
        return "\n".join(lines)

    def records(self) -> list[dict[str, object]]:
        """The rows as dicts (for a Prefect table artifact)."""
        return [dict(zip(self.columns, row)) for row in self.rows]

    def rich_table(self, width: int | None = None) -> Table:
        """The table part for a rich console (lead and notes are printed by the caller).

        A narrow console squeezes the columns, never inside a word: each column is at least as wide as its longest
        word (header and cells; numbers right-aligned, unwrapped). Only a token longer than ``WORD_MAX`` (a prompt id,
        a path, a flag code with its reason) may be folded, inside a column at least ``WORD_MAX`` wide. When those
        widths do not fit ``width`` (the console's), a ``shared_in_caption`` report says a text value every row
        repeats once, under the table, instead of in a column."""
        cells = [[_cell(v) for v in row] for row in self.rows]
        shown = list(range(len(self.columns)))
        caption = None
        if self.shared_in_caption and len(cells) > 1 and width is not None and self._least_width(cells) > width:
            shared = [i for i in shown if len({row[i] for row in cells}) == 1 and cells[0][i]
                      and not _NUMBER.fullmatch(cells[0][i])]
            caption = ", ".join(f"{self.columns[i]}: {cells[0][i]}" for i in shared) or None
            shown = [i for i in shown if i not in shared]
        table = Table(title=self.title, caption=caption)
        for index in shown:
            column = self.columns[index]
            values = [row[index] for row in cells if index < len(row)]
            longest = max((len(word) for text in [column, *values] for word in text.split()), default=1)
            numeric = any(v not in ("", "-") for v in values) and all(_NUMBER.fullmatch(v) for v in values if v)
            table.add_column(column, overflow="fold", min_width=min(longest, WORD_MAX), no_wrap=numeric,
                             justify="right" if numeric else "left")
        for row in cells:
            table.add_row(*(row[i] for i in shown))
        return table

    def _least_width(self, cells: list[list[str]]) -> int:
        """The narrowest the table can be without splitting a word: each column its longest word (capped at
        ``WORD_MAX``) plus padding and a rule."""
        widths = [min(WORD_MAX, max((len(w) for text in [c, *(r[i] for r in cells if i < len(r))] for w in text.split()),
                                    default=1)) for i, c in enumerate(self.columns)]
        return sum(widths) + 3 * len(widths) + 1


WORD_MAX = 12
"""Longest word a rich table keeps whole when the console is narrow; longer tokens (ids, paths) may fold."""
_NUMBER = re.compile(r"[-+]?\d[\d,]*(\.\d+)?%?|-")
