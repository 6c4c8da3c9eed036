"""A summary formatted once: the same rows render as a rich table on the terminal and as
Markdown for a Prefect artifact (the core never imports Prefect; flows publish the Markdown)."""

from __future__ import annotations

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

    def rich_table(self) -> Table:
        """The table part for a rich console (lead and notes are printed by the caller)."""
        table = Table(title=self.title)
        for column in self.columns:
            table.add_column(column, overflow="fold")
        for row in self.rows:
            table.add_row(*(_cell(v) for v in row))
        return table
