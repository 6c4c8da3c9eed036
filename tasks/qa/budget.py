"""Pairs per chunk by information content: how many facts worth asking a chunk holds.

A chunk's budget is the number of its facts, counted the way the generator's sources read them: each value
with its unit in its prose (a limit, a test condition, a measured result), each requirement, definition or
cause sentence, each table row a lookup can ask (at most ``MAX_CELLS_PER_TABLE`` per table) and each chart
series (its peak and its value). A chunk with none of these (prose without numbers) falls back to one pair per
``qa.tokens_per_pair`` tokens. Either way the budget lies between 1 and ``qa.max_per_chunk``.
"""

from __future__ import annotations

import re

from ragprep.markdown import table_rows
from tasks.qa.registry import rule
from tasks.qa.rules import MAX_CELLS_PER_TABLE, ChunkView, sentences, skipped_chunk
from tasks.qa.rules.provisions import prose_values

_STATEMENT_RE = re.compile(r"\b(?:shall|must|means|is defined as|is called|are called|refers to|because|due to|decided)\b"
                           r"|이하|이상|미만|초과|이란|말한다|때문|결정", re.IGNORECASE)


@rule("generate.budget.information", "generate", "a chunk (its prose, tables and charts)",
      "its facts: values with units, requirement/definition/cause sentences, askable table rows, chart series")
def information_units(view: ChunkView) -> int:
    """The number of facts worth asking that a chunk holds (0 for prose without any, and for skipped chunks)."""
    if skipped_chunk(view):
        return 0
    values = len(set(prose_values(view.markdown)))
    statements = sum(bool(_STATEMENT_RE.search(s)) and not re.search(r"\d", s) for s in sentences(view.markdown))
    rows = sum(min(MAX_CELLS_PER_TABLE, max(0, len(table_rows(md)) - 1)) for _, md in view.tables)
    series = sum(2 * max(0, len(table_rows(md)[0]) - 1) for _, _, md in view.charts if table_rows(md))
    return values + statements + rows + series


def pairs_for(units: int, token_count: int, tokens_per_pair: int, max_per_chunk: int) -> int:
    """The budget: ``units`` when the chunk holds facts, else one per ``tokens_per_pair`` tokens; 1..``max_per_chunk``."""
    wanted = units if units else round(token_count / tokens_per_pair)
    return max(1, min(max_per_chunk, wanted))
