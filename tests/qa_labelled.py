"""The labelled QA pairs of ``tests/data`` as the rule tests read them: a rule is tested on the real chunk (stored
Markdown and title) of a labelled pair, or on the critic's view of that pair."""

from __future__ import annotations

import functools

from tasks.qa import calibrate
from tasks.qa.judge import PairContext
from tasks.qa.registry import RULES
from tasks.qa.rules import ChunkView, Handle


@functools.cache
def labelled_rows() -> list[dict]:
    """Every labelled pair of ``calibrate.LABEL_FILES``, once each (``calibrate.unique_pairs``)."""
    return calibrate.unique_pairs(calibrate.load_rows(calibrate.LABEL_FILES))


def real_view(text: str, handle: Handle) -> ChunkView:
    """The generator's view of the labelled chunk that contains ``text`` (its stored Markdown and title)."""
    row = next(r for r in labelled_rows() if text in r["chunk_markdown"])
    return ChunkView(title=row["chunk_title"], language="en", markdown=row["chunk_markdown"], handle=handle)


def labelled(question: str, answer_start: str = "", usable: bool | None = None) -> PairContext:
    """The critic's view of the labelled pair whose question and answer start so (and, given, with that label)."""
    found = [r for r in labelled_rows() if r["question"].startswith(question) and r["answer"].startswith(answer_start)
             and (usable is None or bool(r["usable"]) == usable)]
    assert found, question
    return calibrate.context(found[0])


def fires(name: str, pair: PairContext) -> bool:
    """Whether the registered rule ``name`` gives the pair any signal."""
    return bool(RULES[name].check(pair))
